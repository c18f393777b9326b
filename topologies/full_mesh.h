#pragma once
// full-mesh: a dedicated one-way link for every ordered GPU pair (no sharing between pairs).
#include "topologies/registry.h"

namespace placesim {

// A full mesh holds gpus x (gpus - 1) links, each with its own route: about 200 bytes and a
// microsecond to build per ordered pair, against 28 bytes for fabrics whose pairs share routes.
// 4,096 GPUs (16.8M links) took 107 s and 6.9 GB before a 60-operator graph ran; 1,024 GPUs (1M
// links) take about a second and 0.5 GB. Larger clusters use a switched fabric (non-blocking,
// nvlink-servers), whose GPU pairs share their routes.
constexpr int kMaxFullMeshGpus = 1024;

struct FullMeshConfig {
  int gpus = 4;
  double bandwidth = 20e9;
  double latency = 0;
  double gpu_memory = kDefaultGpuMemory;
  bool operator==(const FullMeshConfig&) const = default;
};
Cluster make_full_mesh(const FullMeshConfig& config, const ConfigSource& source = {});
TopologyType full_mesh_topology();

}  // namespace placesim
