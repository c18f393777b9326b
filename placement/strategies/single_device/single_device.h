#pragma once
#include <optional>

#include "placement/framework/strategy.h"

namespace placesim {

// Every operator on one GPU: the baseline every placement must beat (and, for a chain, the
// optimum, QuickP Theorem 1).
struct SingleDeviceConfig {
  // The GPU to use; unset: best_single_device's choice.
  std::optional<DeviceId> device;
  bool operator==(const SingleDeviceConfig&) const = default;
};

// The GPU single-device uses by default: the fastest (largest compute_speed) that holds the whole
// graph in memory, ties to the lowest index; if none holds it, the fastest GPU (its placement is
// then out of memory and measured as such).
DeviceId best_single_device(const Graph& graph, const Cluster& cluster);

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
