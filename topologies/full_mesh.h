#pragma once
// full-mesh: a dedicated one-way link for every ordered GPU pair (no sharing between pairs).
#include "topologies/registry.h"

namespace placesim {

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
