#pragma once
// Cluster shapes built from plain config structs, and the `cluster:` block of scenario files.
//
//   cluster:
//     type: nvlink-servers      # the QuickP setup (alias: quickp)
//     gpus: 4                   # total GPUs; the last server may be partly filled
//     gpus_per_server: 2
//     nvlink_bandwidth: 50GB/s  # per GPU, each direction
//     ethernet_bandwidth: 20GB/s  # per server NIC, each direction, into one non-blocking switch
//     gpu_memory: 16GiB
//
//   cluster:
//     type: full-mesh           # a dedicated one-way link for every ordered GPU pair
//     gpus: 4
//     bandwidth: 20GB/s
//
// Latencies (`nvlink_latency`, `ethernet_latency`, `latency`) default to 0, as in the papers.
#include <string>
#include <yaml-cpp/yaml.h>

#include "sim/cluster.h"

namespace placesim {

constexpr double kDefaultGpuMemory = 16.0 * 1024 * 1024 * 1024;

// GPUs in servers joined by NVLink (per-GPU up and down links); servers joined through one
// non-blocking switch, each by one NIC (up and down links). Inter-server traffic does not use
// NVLink: it goes GPU -> NIC -> switch -> NIC -> GPU, so GPUs of one server share their NIC.
struct NvlinkServersConfig {
  int gpus = 4;
  int gpus_per_server = 2;
  double nvlink_bandwidth = 50e9;
  double nvlink_latency = 0;
  double ethernet_bandwidth = 20e9;
  double ethernet_latency = 0;
  double gpu_memory = kDefaultGpuMemory;
};
Cluster make_nvlink_servers(const NvlinkServersConfig& config);

struct FullMeshConfig {
  int gpus = 4;
  double bandwidth = 20e9;
  double latency = 0;
  double gpu_memory = kDefaultGpuMemory;
};
Cluster make_full_mesh(const FullMeshConfig& config);

// Builds a cluster from a `cluster:` mapping; errors name `file` and the field.
Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path = "cluster");
// A YAML file holding either a `cluster:` mapping at top level or the mapping itself.
Cluster load_cluster_file(const std::string& path);

}  // namespace placesim
