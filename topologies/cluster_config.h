#pragma once
// Cluster shapes built from plain config structs, and the `cluster:` block of scenario files.
// The data-centre fabrics (non-blocking, fat-tree, spine-leaf, multi-nic) are in fabrics.h; the
// keys of each `type` are documented in scenarios/README.md. For example:
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
//     type: fat-tree            # k-ary fat-tree, ECMP by default
//     k: 4
//     servers: 16               # at most k^3/4; default: a full tree
//     gpus_per_server: 4
//     nic_bandwidth: 100Gbps
//     server_overrides: [{server: 3, gpu_memory: 80GiB, gpu_speed: 2}]
//
//   cluster:
//     type: full-mesh           # a dedicated one-way link for every ordered GPU pair
//     gpus: 4
//     bandwidth: 20GB/s
//
// Latencies default to 0, as in the papers.
#include <string>
#include <yaml-cpp/yaml.h>

#include "sim/cluster.h"
#include "topologies/fabrics.h"

namespace placesim {

// GPUs in servers joined by NVLink (per-GPU up and down links); servers joined through one
// non-blocking switch, each by one NIC (up and down links). Inter-server traffic does not use
// NVLink: it goes GPU -> NIC -> switch -> NIC -> GPU, so GPUs of one server share their NIC.
// The same fabric as make_non_blocking, counted in GPUs (the last server may be partly filled).
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
// A YAML file holding either a `cluster:` mapping at top level (a scenario file, say) or the
// mapping itself.
Cluster load_cluster_file(const std::string& path);

// The `allocation:` of a multi-nic cluster: `uniform`, or one row per server of b(s,t) with units
// (`0` or `-` for none). Validated against `servers` and the egress d*b.
BandwidthAllocation allocation_from_yaml(const YAML::Node& node, int servers, double egress, const std::string& file,
                                         const std::string& field);

}  // namespace placesim
