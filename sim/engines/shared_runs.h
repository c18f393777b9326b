#pragma once
// Several jobs on one cluster (a scenario's `jobs:`, scenarios/runner/jobs.h): every job's
// execution graph runs at once on the shared fabric, each flow competing with every other job's,
// and the same graph alone on its GPUs with the fabric to itself. What a job loses to the others
// is the ratio, its slowdown.
//
// Jobs of different lengths: a job repeats its iteration until the longest job's (alone) iteration
// has ended, as a shorter job on a real cluster keeps training while the long one runs. The
// iterations are chained per GPU: a GPU starts iteration i+1 once its own share of iteration i is
// done (as training does: no global barrier, the gradient reduction already synchronizes the
// replicas). A job's latency, alone and shared, is the mean over the iterations simulated.
//
// The jobs' GPUs are disjoint: they share links, not GPUs. Units: seconds, bytes.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"
#include "sim/engines/engine.h"

namespace placesim {

// One job: its execution graph, every operator on a GPU of the whole cluster.
struct JobGraph {
  std::string name;
  const Graph* graph = nullptr;
  std::span<const DeviceId> placement;
};

// What one engine measured of a job.
struct JobTimes {
  std::string engine;
  double alone = 0;   // mean iteration, the job alone on the cluster
  double shared = 0;  // mean iteration, every job running at once
  double slowdown() const { return alone > 0 ? shared / alone : 1.0; }
};

struct SharedJob {
  int iterations = 1;          // chained iterations simulated
  // iterations x one iteration alone over the window: under 1 when max_iterations cut them short.
  double covers_window = 1;
  double alone_total = 0;      // the headline engine's time for them alone
  std::vector<JobTimes> times;  // per engine that scheduled, in registry order
  // Bytes one iteration sends over each link it loads (static routing: the same on every engine),
  // by link id, most bytes first.
  std::vector<std::pair<int, double>> link_bytes;
  const JobTimes* find(std::string_view engine) const;
};

// A link two or more jobs load, with each job's share of its bytes (one iteration each).
struct SharedLink {
  int link = -1;
  double bytes = 0;                              // all jobs' bytes of one iteration
  std::vector<std::pair<std::size_t, double>> share;  // (job index, fraction of `bytes`)
};

struct SharedRun {
  std::vector<SharedJob> jobs;
  std::string headline;  // the engine iterations are counted on: simgrid, else flow, else evaluator
  double window = 0;     // the longest job's one iteration alone, on the headline engine
  // The jobs' graphs merged (operator names prefixed "job/", iterations "i2/"), their GPUs, each
  // job's operators [first, end), and the engines' run of it.
  Graph graph;
  std::vector<DeviceId> placement;
  std::vector<std::pair<OpId, OpId>> ranges;
  EngineRuns runs;
  std::vector<SharedLink> links_met;  // most bytes first
};

// The graph repeated `iterations` times, iteration i+1's operators on each GPU after iteration i's
// there (a zero-time `iteration` operator per GPU and iteration joins them); names prefixed "i<k>/"
// from the second iteration on. `placement` is the graph's; the result's is `placement_out`.
Graph chain_iterations(const Graph& graph, std::span<const DeviceId> placement, int iterations,
                       std::vector<DeviceId>& placement_out);

// Bytes per link of one run of the graph: every tensor between distinct GPUs, split over its
// route's paths by their shares. By link id, most bytes first.
std::vector<std::pair<int, double>> link_bytes(const Graph& graph, std::span<const DeviceId> placement,
                                               const Cluster& cluster);

// Runs every job alone, then all together, on the engines of `engines` (an event engine brings
// the evaluator, as run_engines does). A job runs ceil(window / its alone iteration) iterations,
// at most `max_iterations`. Throws std::invalid_argument when two jobs share a GPU or a job has no
// operator.
SharedRun run_jobs_together(std::span<const JobGraph> jobs, const Cluster& cluster, EngineSet engines, RunOrder order,
                            int max_iterations = 64);

}  // namespace placesim
