#pragma once
// nvlink-servers (alias quickp): the QuickP setup. GPUs in servers joined by NVLink (per-GPU up
// and down links); servers joined through one non-blocking switch, each by one NIC (up and down
// links). Inter-server traffic does not use NVLink: it goes GPU -> NIC -> switch -> NIC -> GPU,
// so GPUs of one server share their NIC. The same fabric as non-blocking, counted in GPUs (the
// last server may be partly filled).
#include "topologies/registry.h"

namespace placesim {

struct NvlinkServersConfig {
  int gpus = 4;
  int gpus_per_server = 2;
  double nvlink_bandwidth = 50e9;
  double nvlink_latency = 0;
  double ethernet_bandwidth = 20e9;
  double ethernet_latency = 0;
  double gpu_memory = kDefaultGpuMemory;
  bool operator==(const NvlinkServersConfig&) const = default;
};
Cluster make_nvlink_servers(const NvlinkServersConfig& config, const ConfigSource& source = {});
TopologyType nvlink_servers_topology();

}  // namespace placesim
