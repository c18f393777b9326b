#pragma once
// rail-only: the rail-optimized network of LLM training clusters, without a spine (Wang et al.,
// "How to Build Low-cost Networks for Large Language Models (without Sacrificing Performance)",
// 2023). Each server has one NIC per GPU, and NIC j of every server is wired to rail switch j. A
// transfer to the GPU of rank j on another server leaves through the sender's NIC j and arrives
// through the receiver's NIC j: NCCL's PXN first moves the data over NVLink to the GPU on the
// destination's rail (that hop, like every GPU-to-NIC hop in placesim, is not modelled). So all
// traffic to rank j of a server shares rail j, whichever GPU sends it.
#include "topologies/registry.h"

namespace placesim {

struct RailOnlyConfig : GpuServersConfig {
  double nic_bandwidth = 25e9;  // per NIC (one per GPU), each direction
  double nic_latency = 0;
  bool operator==(const RailOnlyConfig&) const = default;
};
Cluster make_rail_only(const RailOnlyConfig& config, const ConfigSource& source = {});
TopologyType rail_only_topology();

}  // namespace placesim
