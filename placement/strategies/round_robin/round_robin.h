#pragma once
#include "placement/framework/strategy.h"

namespace placesim {

// Operators dealt out to the GPUs in turn, in topological order: a placement that ignores
// communication, to show what a careless split costs. Members of a colocation class follow the
// first member dealt.
struct RoundRobinConfig {
  bool skip_zero_compute = false;  // zero-time operators stay with the previous operator's GPU
  bool operator==(const RoundRobinConfig&) const = default;
};

class RoundRobin : public Strategy {
 public:
  explicit RoundRobin(RoundRobinConfig config = {}) : Strategy("round-robin"), config_(config) {}
  const RoundRobinConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  RoundRobinConfig config_;
};

OptionSchema<RoundRobinConfig> round_robin_schema();
StrategyInfo round_robin_strategy_info();

}  // namespace placesim
