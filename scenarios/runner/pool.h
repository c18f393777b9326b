#pragma once
// A fork-based process pool: every task runs in a child process of its own, so a task that
// crashes (a signal, an abort in a solver, the kernel's OOM killer) takes only itself down and is
// reported with its reason while the others go on. SimGrid also needs this: one engine per process.
//
// Children are put in their own process group (a Ctrl-C at the terminal reaches only the parent)
// and die with the parent (PR_SET_PDEATHSIG), so killing the parent stops the whole pool and no
// half-finished task is ever reported.
#include <cstddef>
#include <functional>
#include <span>
#include <string>

namespace placesim {

struct WorkerExit {
  std::size_t task = 0;
  std::string output;   // everything the child returned (sent through a pipe)
  bool completed = false;  // the child returned normally and exited with status 0
  std::string failure;  // otherwise why: "killed by signal SIGABRT (Aborted)", "exited with status 3"
  double wall_seconds = 0;
  bool timed_out = false;  // killed by the pool after its time limit (ProcessPoolHooks::time_limit)
};

struct ProcessPoolHooks {
  std::function<void(std::size_t task)> started;      // in the parent, after the fork
  std::function<void(const WorkerExit&)> finished;    // in the parent, once the child is reaped
  std::function<void()> tick;                         // in the parent, about every 200 ms
  // In the parent, before each task would start: true starts no more tasks (those running finish).
  std::function<bool()> stop;
  // Wall-clock seconds a task may run (infinity: unbounded); a task over it is killed and reported
  // with WorkerExit::timed_out.
  std::function<double(std::size_t task)> time_limit;
};

// Runs `work(task)` for each task in a forked child, at most `jobs` at a time, in the order given;
// the string `work` returns comes back in WorkerExit::output. Blocks until every task finished
// (or, once `stop` says so, every started one). If a hook throws, the running children are killed
// and reaped before the exception goes on.
void run_process_pool(std::span<const std::size_t> tasks, int jobs, const std::function<std::string(std::size_t)>& work,
                      const ProcessPoolHooks& hooks);

// "SIGSEGV (Segmentation fault)".
std::string signal_description(int signal);

}  // namespace placesim
