#pragma once
// Runs the points of a sweep (scenarios/sweep.h) in forked worker processes (scenarios/pool.h).
// Each finished point is one line of JSON appended to results.jsonl with a single write() under
// O_APPEND, so the file never holds a partial line; `resume` skips the points whose key already
// has a line. results.json and results.csv aggregate the lines (ordered by point index), and each
// point writes its placement and trace files as a plain run does.
//
// A point's record: key, index, scenario, graph, gpus, cluster, operators, tensors, sweep (path ->
// value as written), label, strategy, seed, repetition, engine, order, status (ok, oom or failed),
// error (when failed: the strategy's error, or how the worker died), then the measurement fields
// of results.json (evaluator_latency, simgrid_latency, search_time, memory, links, ...).
//
// With MPI, rank r of R runs the points with index % R == r into results.rank<r>.jsonl, and
// merge_result_shards joins the shards into results.jsonl (sorted by key).
#include <cstddef>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/sweep.h"

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
};

struct SweepSummary {
  std::size_t points = 0;   // this rank's share of the plan
  std::size_t skipped = 0;  // already in the results (resume)
  std::size_t ok = 0, oom = 0, failed = 0;  // of the points run now
  std::string results_file;  // the JSON Lines file written
};

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& log);

// results.jsonl for one process, results.rank<r>.jsonl for MPI rank r of several.
std::string results_file_name(int rank, int ranks);

// Appends `line` and a newline with one write() under O_APPEND; throws std::runtime_error if the
// write is short (then nothing else is appended after it).
void append_line(const std::string& path, const std::string& line);

// The records of a JSON Lines file, in file order; a missing file has none. A line that is not a
// JSON object with a "key" is an InputError naming the file and line.
std::vector<nlohmann::ordered_json> read_result_lines(const std::string& path);

// Joins results.jsonl and the shards results.rank<r>.jsonl (r < ranks, or every shard present when
// `ranks` is empty) into results.jsonl, one line per key (a shard's line replaces an older one),
// sorted by key, written to a temporary file and renamed; then removes the shards and rewrites
// results.json and results.csv. Returns the number of records.
std::size_t merge_result_shards(const std::string& dir, std::optional<int> ranks);

// results.json ({scenario, ..., "strategies": records}) and results.csv from records, ordered by
// their index; written atomically into `dir`.
void write_aggregates(const std::string& dir, std::vector<nlohmann::ordered_json> records);

// The comparison table `placesim run` prints: one row per point.
std::string format_point_table(const std::vector<nlohmann::ordered_json>& records);

}  // namespace placesim
