// The strategy registry: one line per strategy. A new strategy is a new folder under placement/
// plus one line here.
#include "placement/round_robin/round_robin.h"
#include "placement/single_device/single_device.h"
#include "placement/strategy.h"

namespace placesim {

std::span<const StrategyInfo> strategy_registry() {
  static const std::vector<StrategyInfo> registry = {
      single_device_strategy_info(),
      round_robin_strategy_info(),
  };
  return registry;
}

}  // namespace placesim
