#pragma once
// Chrome trace JSON (opens in Perfetto or chrome://tracing) of one simulated iteration: a process
// "GPUs" with one track per GPU holding its operators, and a process "links" with one track per
// link that carried a flow, holding one async slice per flow crossing it (overlapping flows stack).
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"
#include "sim/engines/simgrid_engine.h"

namespace placesim {

// A GPU's memory over the iteration: (time s, bytes held from then on), as memory_over_time
// (sim/plans/parallel_plan.h) gives it.
struct GpuMemoryTrack {
  DeviceId gpu = 0;
  std::vector<std::pair<double, double>> points;
};

// `start` and `finish` are per operator, in seconds; `flows` may be empty (an evaluator schedule).
// A flow occupies each link of each path of its route from start + route latency (when its bytes
// begin to move) until the last of its sub-flows crossing that link has arrived (given
// `subflows`, as SimulationResult has them; without them, until the flow's end): one slice per
// flow and link, whose args give the flow's bytes on that link. Timestamps are written in
// microseconds; a path ending in .gz is written gzip'd (Perfetto opens it as it is), else plain
// JSON, either streamed event by event. `memory`, when given, becomes a process "GPU memory" with a counter per GPU (in
// GiB). Throws InputError if `path` cannot be written, std::invalid_argument if the spans do not
// match the graph.
void write_chrome_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                        std::span<const DeviceId> placement, std::span<const double> start,
                        std::span<const double> finish, std::span<const FlowRecord> flows,
                        std::span<const SubflowRecord> subflows = {}, std::span<const GpuMemoryTrack> memory = {});

// The transfers of a schedule that has no flow records (the evaluator's, the flow engine's), for
// the trace's link tracks: each tensor with bytes between two GPUs, requested when its producer
// finished and arrived by when its consumer used it (a collective step's finish, another
// operator's start), and never sooner than a lone transfer would take. Where the consumer waited
// for its GPU too, the slice runs until it started.
std::vector<FlowRecord> flows_of_schedule(const Graph& graph, std::span<const DeviceId> placement, const Cluster& cluster,
                                          std::span<const double> start, std::span<const double> finish);

}  // namespace placesim
