#pragma once
#include <cstdint>

#include "placement/framework/strategy.h"

namespace placesim {

// Random placement (Placeto's Random baseline, section 4.2): each colocation class, and each
// operator without one, goes to a uniformly drawn GPU. With samples > 1, the best of that many
// draws by the evaluator's latency (random search); the shared time_limit may end it earlier.
struct RandomConfig {
  std::uint64_t seed = 1;
  long samples = 1;
  bool operator==(const RandomConfig&) const = default;
};

class RandomPlacement : public Strategy {
 public:
  explicit RandomPlacement(RandomConfig config = {}) : Strategy("random"), config_(config) {}
  const RandomConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  RandomConfig config_;
};

OptionSchema<RandomConfig> random_schema();
StrategyInfo random_strategy_info();

}  // namespace placesim
