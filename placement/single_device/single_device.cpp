#include "placement/single_device/single_device.h"

#include <fmt/format.h>

#include "sim/errors.h"

namespace placesim {

PlacementResult SingleDevice::place(const Graph& graph, const Cluster& cluster) {
  if (config_.device >= cluster.num_devices())
    throw InputError("single-device", "options.device",
                     fmt::format("GPU {} does not exist (cluster has {} GPUs)", config_.device, cluster.num_devices()));
  PlacementResult r;
  r.placement.assign(graph.num_operators(), config_.device);
  return r;
}

StrategyInfo single_device_strategy_info() {
  return {"single-device", "every operator on one GPU", "device (0): the GPU to use",
          [](const YamlFields& options) {
            options.allow_only({"device"});
            SingleDeviceConfig cfg;
            const long d = options.integer_or("device", 0);
            if (d < 0) throw InputError(options.file(), options.field("device"), "expected a GPU index >= 0");
            cfg.device = static_cast<DeviceId>(d);
            return std::make_unique<SingleDevice>(cfg);
          }};
}

}  // namespace placesim
