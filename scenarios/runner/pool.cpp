#include "scenarios/runner/pool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <fmt/format.h>
#include <iostream>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace placesim {

std::string signal_description(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  const char* text = strsignal(signal);
  return fmt::format("SIG{} ({})", abbrev ? abbrev : std::to_string(signal).c_str(), text ? text : "unknown signal");
}

namespace {

struct Running {
  pid_t pid = -1;
  int fd = -1;
  std::size_t task = 0;
  std::string output;
  std::chrono::steady_clock::time_point started;
};

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(5);  // the parent is gone
    done += static_cast<std::size_t>(n);
  }
}

[[noreturn]] void run_child(int fd, pid_t parent, std::size_t task, const std::function<std::string(std::size_t)>& work) {
  ::setpgid(0, 0);
  // The parent's handlers (`run` prints how to resume on Ctrl-C) are not the child's to run.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(6);  // the parent died before prctl
  std::string out;
  int status = 0;
  try {
    out = work(task);
  } catch (const std::exception& e) {
    out = e.what();
    status = 4;
  } catch (...) {
    out = "unknown exception";
    status = 4;
  }
  write_all(fd, out);
  ::close(fd);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(status);  // no atexit handlers or static destructors of the parent's state
}

Running spawn(std::size_t task, const std::function<std::string(std::size_t)>& work) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);  // or the child would inherit and print the parent's buffered output again
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], parent, task, work);
  }
  ::close(fds[1]);
  return {pid, fds[0], task, {}, std::chrono::steady_clock::now()};
}

WorkerExit reap(Running& r) {
  ::close(r.fd);
  int status = 0;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  WorkerExit exit;
  exit.task = r.task;
  exit.output = std::move(r.output);
  exit.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.started).count();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    exit.completed = true;
  } else if (WIFSIGNALED(status)) {
    exit.failure = "killed by signal " + signal_description(WTERMSIG(status));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 4) {
    exit.failure = "uncaught exception: " + exit.output;
  } else {
    exit.failure = fmt::format("exited with status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return exit;
}

}  // namespace

void run_process_pool(std::span<const std::size_t> tasks, int jobs, const std::function<std::string(std::size_t)>& work,
                      const ProcessPoolHooks& hooks) {
  if (jobs < 1) jobs = 1;
  std::vector<Running> running;
  std::vector<pollfd> fds;
  std::size_t next = 0;
  char buffer[1 << 16];
  // No child outlives a failing parent loop: it would go on writing into the results folder.
  struct KillOnThrow {
    std::vector<Running>& running;
    ~KillOnThrow() {
      if (std::uncaught_exceptions() == 0) return;
      for (Running& r : running) {
        ::kill(r.pid, SIGKILL);
        reap(r);
      }
    }
  } guard{running};
  auto stopped = [&] { return hooks.stop && hooks.stop(); };
  while ((next < tasks.size() && !stopped()) || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < tasks.size() && !stopped()) {
      running.push_back(spawn(tasks[next++], work));
      if (hooks.started) hooks.started(running.back().task);
    }
    fds.clear();
    for (const Running& r : running) fds.push_back({r.fd, POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), 200);
    if (ready < 0 && errno != EINTR) throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    std::vector<std::size_t> ended;
    for (std::size_t k = 0; ready > 0 && k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buffer, sizeof buffer);
      if (n > 0) running[k].output.append(buffer, static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR) ended.push_back(k);
    }
    // A task over its time limit is killed (SIGKILL reaches the whole computation: the engines
    // cannot be interrupted from inside) and reaped below.
    std::vector<bool> timed_out(running.size(), false);
    if (hooks.time_limit) {
      const auto now = std::chrono::steady_clock::now();
      for (std::size_t k = 0; k < running.size(); ++k) {
        if (std::find(ended.begin(), ended.end(), k) != ended.end()) continue;
        if (std::chrono::duration<double>(now - running[k].started).count() <= hooks.time_limit(running[k].task)) continue;
        ::kill(running[k].pid, SIGKILL);
        timed_out[k] = true;
        ended.push_back(k);
      }
      std::sort(ended.begin(), ended.end());
    }
    // Reap in reverse index order so that erasing keeps the remaining indices valid.
    for (auto it = ended.rbegin(); it != ended.rend(); ++it) {
      WorkerExit exit = reap(running[*it]);
      exit.timed_out = timed_out[*it];
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(*it));
      if (hooks.finished) hooks.finished(exit);
    }
    if (hooks.tick) hooks.tick();
  }
}

}  // namespace placesim
