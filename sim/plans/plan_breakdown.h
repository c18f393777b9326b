#pragma once
// Where an iteration's time goes: the timeline of the slowest GPU (the last to finish), each
// moment of it given to one component, so that the components sum to the iteration time.
//
// - compute: the GPU runs a forward or backward operator (recomputation included);
// - optimizer: it runs its optimizer step;
// - exposed communication, by kind: the GPU is idle, waiting for an input whose last stretch is
//   communication in flight. An idle gap before operator X is followed back from X's latest input
//   through communication steps (collective steps, sends) to the compute operator Q they started
//   from; the part of the gap after Q finished is communication of the first kind met on the way
//   (the collective's: tensor-parallel "tp", context-parallel "cp", expert "ep", data-parallel
//   "grad"; a send between stages: pipeline);
// - bubble: the part of a gap before Q finished, when Q is another GPU's (the GPU waits for
//   another stage's compute: the pipeline's bubble, or a slower peer).
// Time after the slowest GPU's last operator until the iteration ends (a reduction nobody on it
// waits for) goes to the kind of the communication that ends last.
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <vector>

#include "sim/core/graph.h"
#include "sim/engines/evaluator.h"

namespace placesim {

struct TimeBreakdown {
  DeviceId gpu = -1;  // the slowest GPU: the one whose last operator finishes last
  double compute = 0, optimizer = 0, bubble = 0;
  double tensor_parallel = 0, pipeline = 0, context_parallel = 0, expert = 0, data_parallel = 0;
  double other_communication = 0;  // communication of no known kind (a graph not compiled from a plan)
  double total() const {
    return compute + optimizer + bubble + tensor_parallel + pipeline + context_parallel + expert + data_parallel + other_communication;
  }
  // (name, seconds) in a fixed order: the names of --json's `breakdown`.
  std::vector<std::pair<std::string, double>> parts() const;
};

// {"slowest_gpu": g, "compute": s, ...}: the parts by name, as plan --json, Python and scenario
// records write them.
nlohmann::json breakdown_json(const TimeBreakdown& b);

// The breakdown of one engine's schedule of the placed graph, whose makespan is `latency`.
TimeBreakdown time_breakdown(const Graph& graph, std::span<const DeviceId> placement, const Schedule& schedule, double latency);

}  // namespace placesim
