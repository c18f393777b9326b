#pragma once
// The execution graph every engine runs (issue #15): a Graph with its placement, to which
// collectives (sim/collectives/collectives.h) and parallel plans (sim/plans/parallel_plan.h) append operators, and
// the one way they are run on the engines.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"

namespace placesim {

enum class CollectiveOp;  // sim/collectives/collectives.h

// A collective appended to an execution graph (append_collective): what it is, and its steps,
// the operators [first, end). Kept so that what is written out of the graph (Chakra's collective
// nodes) names the collective instead of its messages.
struct AppendedCollective {
  std::string name;
  CollectiveOp op;
  std::vector<DeviceId> group;  // in rank order
  double bytes = 0;             // one rank's buffer, as CollectiveSpec::bytes
  OpId first = 0, end = 0;
};

// A graph under construction with its placement.
struct ExecutionGraph {
  Graph graph;
  std::vector<DeviceId> placement;  // GPU of each operator
  std::vector<AppendedCollective> collectives;  // in the order they were appended
  OpId add(Operator op, DeviceId gpu);
  // A step of a collective on `gpu` (Operator::communication: no GPU time, in no GPU's order).
  OpId add_communication_step(std::string name, DeviceId gpu) {
    return add({std::move(name), "collective", 0.0, 0.0, -1, /*communication=*/true}, gpu);
  }
  // A zero-byte tensor: `to` starts after `from` finished, at no transfer cost.
  void depend(OpId from, OpId to) { graph.add_tensor(from, to, 0); }
};

// Which engines run_engines runs.
struct EngineChoice {
  bool evaluator = true, flow = true, simgrid = true;
  // One engine by name ("evaluator", "flow" or "simgrid"), or "all": the commands' --engine.
  static EngineChoice named(std::string_view engine) {
    const bool all = engine == "all";
    return {all || engine == "evaluator", all || engine == "flow", all || engine == "simgrid"};
  }
};

// Each engine's makespan of the graph (unset: not run) and the host time it took.
struct EngineRuns {
  std::optional<double> evaluator, flow, simgrid;
  double evaluator_wall_s = 0, flow_wall_s = 0, simgrid_wall_s = 0;
};

// Runs a finalized execution graph: the evaluator by rank (sim/engines/evaluator.h); the flow engine and
// SimGrid first come, first served, each on its own arrival times (a collective's operators take
// no time, so a rank goes on as soon as a piece has arrived). SimGrid is given the evaluator's
// order, which it only checks; when the evaluator is not asked for, computing that order counts
// in SimGrid's time.
EngineRuns run_engines(const ExecutionGraph& g, const Cluster& cluster, EngineChoice which = {});

}  // namespace placesim
