#pragma once
// Runs the points of a sweep (scenarios/runner/sweep.h) in forked worker processes (scenarios/runner/pool.h),
// with progress on the log stream. Each worker places and measures one point and sends back its
// record (scenarios/runner/record.h); the runner appends it to the results store
// (scenarios/runner/results_store.h) as it arrives, so a crash loses no finished point, and `resume`
// skips the points whose key is already stored. Each point writes its placement and trace files
// into the results folder.
//
// With MPI, rank r of R runs the points with index % R == r into results.rank<r>.jsonl (see
// merge_result_shards).
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>

#include "scenarios/runner/record.h"
#include "scenarios/runner/sweep.h"

namespace placesim {

struct SweepOptions {
  std::string output;          // results folder
  int jobs = 1;                // worker processes at a time
  bool resume = false;         // skip points whose key is in results.jsonl (or this rank's shard)
  int rank = 0, ranks = 1;     // this process runs the points with index % ranks == rank
  bool progress = true;        // progress on the log stream (a bar on a terminal, else lines)
  // Test hooks (hidden `placesim run` flags): the worker of this point index calls abort(); the
  // runner kills itself with SIGKILL once this many points have been appended.
  long debug_abort_point = -1;
  long debug_stop_after = -1;
  // Called first in each worker process, right after the fork: the Python module resets the
  // interpreter it forked (PyOS_AfterFork_Child) and lets go of its lock there.
  std::function<void()> in_worker;
};

struct SweepSummary {
  std::size_t points = 0;   // this rank's share of the plan
  std::size_t skipped = 0;  // already in the results (resume)
  std::size_t ok = 0, oom = 0, infeasible = 0, failed = 0;  // of the points run now
  std::string results_file;  // the JSON Lines file written
};

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& log);

// What every record of a point starts with, whether it ran or not: its key, index, scenario,
// graph, GPUs, cluster, swept values, label, seed, repetition and engines.
PointRecord point_header(const SweepPlan& plan, const SweepPoint& point);

}  // namespace placesim
