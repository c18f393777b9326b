#pragma once
#include "placement/strategy.h"

namespace placesim {

// Every operator on one GPU: the baseline every placement must beat (and, for a chain, the
// optimum, QuickP Theorem 1).
struct SingleDeviceConfig {
  DeviceId device = 0;
  bool operator==(const SingleDeviceConfig&) const = default;
};

class SingleDevice : public Strategy {
 public:
  explicit SingleDevice(SingleDeviceConfig config = {}) : Strategy("single-device"), config_(config) {}
  const SingleDeviceConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  SingleDeviceConfig config_;
};

OptionSchema<SingleDeviceConfig> single_device_schema();
StrategyInfo single_device_strategy_info();

}  // namespace placesim
