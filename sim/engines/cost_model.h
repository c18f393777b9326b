#pragma once
// The latency a search strategy minimises (`cost_model: list | flow`).
//
//  - list: the evaluator's contention-free list schedule (sim/engines/evaluator.h), what the papers search
//    with.
//  - flow: the same per-GPU order (the evaluator's) run under contention by the flow engine
//    (sim/engines/flow_engine.h) -- what the SimGrid engine measures at `simulation.order: scheduler`, to
//    1e-6. A search with it optimises the latency it is measured by.
//
// Contention only delays a transfer (a flow alone on its route gets the bandwidth the evaluator
// charges; tests/test_cost_model.cpp checks this on every fabric of the registry), and a fixed
// per-GPU order only runs later when its inputs arrive later, so flow >= list for the same
// placement. latency_with_cutoff uses it: the list schedule (cheap, and itself cut off early)
// settles most proposals a Metropolis search rejects before the flow engine runs.
//
// One CostModel per thread: it holds the engines' reusable buffers. After warm-up a call
// allocates nothing.
#include <span>
#include <string_view>
#include <optional>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/core/graph.h"
#include "sim/core/names.h"

namespace placesim {

enum class CostModelKind { List, Flow };
inline constexpr EnumName<CostModelKind> kCostModelNames[] = {
    {CostModelKind::List, "list"},
    {CostModelKind::Flow, "flow"},
};
inline std::string_view cost_model_name(CostModelKind k) { return enum_name<CostModelKind>(kCostModelNames, k); }

class CostModel {
 public:
  CostModel(const Graph& graph, const Cluster& cluster, CostModelKind kind);

  CostModelKind kind() const { return kind_; }
  // Iteration latency of the placement under this model (+infinity if a tensor cannot arrive).
  double latency(std::span<const DeviceId> placement);
  // latency(placement) if it is <= cutoff, else +infinity, often found without a full run.
  double latency_with_cutoff(std::span<const DeviceId> placement, double cutoff);

  LowerBounds lower_bounds() const { return evaluator_.lower_bounds(); }
  // The contention-free evaluator (every model has one: flow replays its order).
  Evaluator& evaluator() { return evaluator_; }

  // Runs the flow engine did, and runs the list schedule settled alone (flow only).
  long flow_runs() const { return flow_runs_; }
  long settled_by_list() const { return settled_by_list_; }

 private:
  CostModelKind kind_;
  Evaluator evaluator_;
  std::optional<FlowEngine> flow_;
  std::vector<std::vector<OpId>> order_;
  long flow_runs_ = 0, settled_by_list_ = 0;
};

}  // namespace placesim
