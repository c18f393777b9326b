#include "placement/single_device/single_device.h"

#include <fmt/format.h>
#include <limits>

#include "sim/errors.h"

namespace placesim {

PlacementResult SingleDevice::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  if (config_.device >= cluster.num_devices())
    throw InputError("single-device", "options.device",
                     fmt::format("GPU {} does not exist (cluster has {} GPUs)", config_.device, cluster.num_devices()));
  PlacementResult r;
  r.placement.assign(graph.num_operators(), config_.device);
  return r;
}

OptionSchema<SingleDeviceConfig> single_device_schema() {
  OptionSchema<SingleDeviceConfig> s;
  s.count("device", &SingleDeviceConfig::device, "the GPU to use", 0, std::numeric_limits<DeviceId>::max(), "1");
  return s;
}

StrategyInfo single_device_strategy_info() {
  return strategy_info<SingleDevice>("single-device", "every operator on one GPU", single_device_schema());
}

}  // namespace placesim
