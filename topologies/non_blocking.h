#pragma once
// non-blocking: one big switch; every server has one NIC at full rate (thesis Fig. 5.2 baseline).
#include "topologies/registry.h"

namespace placesim {

struct NonBlockingConfig : GpuServersConfig {
  double nic_bandwidth = 20e9;  // per server, each direction
  double nic_latency = 0;       // per NIC link: a transfer crosses two
  bool operator==(const NonBlockingConfig&) const = default;
};
Cluster make_non_blocking(const NonBlockingConfig& config, const ConfigSource& source = {});
TopologyType non_blocking_topology();

}  // namespace placesim
