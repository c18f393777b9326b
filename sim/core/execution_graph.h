#pragma once
// The execution graph every engine runs (sim/engines/engine.h): a Graph with its placement, to
// which collectives (sim/collectives/collectives.h) and parallel plans (sim/plans/parallel_plan.h)
// append operators.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/folding.h"
#include "sim/core/graph.h"

namespace placesim {

enum class CollectiveOp;  // sim/collectives/collectives.h
struct PlanOrigin;        // sim/plans/parallel_plan.h

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
  // The parallel plan the graph was compiled from (compile_plan, plan_layout), which the estimate
  // engine prices; null for a placed graph.
  std::shared_ptr<const PlanOrigin> plan;
  // Set when the graph is one copy standing for many (sim/core/folding.h); null: the whole work.
  std::shared_ptr<const Folding> fold;
  OpId add(Operator op, DeviceId gpu);
  // A step of a collective on `gpu` (Operator::communication: no GPU time, in no GPU's order).
  OpId add_communication_step(std::string name, DeviceId gpu) {
    return add({std::move(name), "collective", 0.0, 0.0, -1, /*communication=*/true}, gpu);
  }
  // A zero-byte tensor: `to` starts after `from` finished, at no transfer cost.
  void depend(OpId from, OpId to) { graph.add_tensor(from, to, 0); }
};

}  // namespace placesim
