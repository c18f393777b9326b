#pragma once
#include "placement/strategy.h"

namespace placesim {

// Every operator on one GPU: the baseline every placement must beat (and, for a chain, the
// optimum, QuickP Theorem 1).
struct SingleDeviceConfig {
  DeviceId device = 0;
};

class SingleDevice : public Strategy {
 public:
  explicit SingleDevice(SingleDeviceConfig config) : config_(config) {}
  PlacementResult place(const Graph& graph, const Cluster& cluster) override;

 private:
  SingleDeviceConfig config_;
};

StrategyInfo single_device_strategy_info();

}  // namespace placesim
