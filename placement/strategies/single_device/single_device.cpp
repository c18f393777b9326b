#include "placement/strategies/single_device/single_device.h"

#include <fmt/format.h>
#include <limits>

#include "sim/core/errors.h"

namespace placesim {

DeviceId best_single_device(const Graph& graph, const Cluster& cluster) {
  const double memory = graph.total_memory();
  DeviceId fastest = 0, fastest_fitting = -1;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const Device& dev = cluster.device(d);
    if (dev.compute_speed > cluster.device(fastest).compute_speed) fastest = d;
    if (memory <= dev.memory_bytes &&
        (fastest_fitting < 0 || dev.compute_speed > cluster.device(fastest_fitting).compute_speed))
      fastest_fitting = d;
  }
  return fastest_fitting >= 0 ? fastest_fitting : fastest;
}

PlacementResult SingleDevice::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  if (config_.device && *config_.device >= cluster.num_devices())
    throw InputError("single-device", "options.device",
                     fmt::format("GPU {} does not exist (cluster has {} GPUs)", *config_.device, cluster.num_devices()));
  const DeviceId device = config_.device ? *config_.device : best_single_device(graph, cluster);
  PlacementResult r;
  r.placement.assign(graph.num_operators(), device);
  r.details["device"] = device;
  return r;
}

OptionSchema<SingleDeviceConfig> single_device_schema() {
  OptionSchema<SingleDeviceConfig> s;
  s.add({"device", "count", "the GPU to use",
         "the fastest GPU that holds the graph (ties: lowest index; none: the fastest)", {}, "1"},
        [](const YamlFields& f, std::string_view key, SingleDeviceConfig& c) {
          c.device = static_cast<DeviceId>(parse_count_option(f, key, 0, std::numeric_limits<DeviceId>::max()));
        });
  return s;
}

StrategyInfo single_device_strategy_info() {
  return strategy_info<SingleDevice>("single-device", "every operator on the fastest GPU that holds the graph",
                                     single_device_schema());
}

}  // namespace placesim
