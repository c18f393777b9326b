#pragma once
#include "placement/strategy.h"

namespace placesim {

// Operators dealt out to the GPUs in turn, in topological order: a placement that ignores
// communication, to show what a careless split costs. Members of a colocation class follow the
// first member dealt.
struct RoundRobinConfig {
  bool skip_zero_compute = false;  // zero-time operators stay with the previous operator's GPU
};

class RoundRobin : public Strategy {
 public:
  explicit RoundRobin(RoundRobinConfig config) : config_(config) {}
  PlacementResult place(const Graph& graph, const Cluster& cluster) override;

 private:
  RoundRobinConfig config_;
};

StrategyInfo round_robin_strategy_info();

}  // namespace placesim
