#pragma once
// What `placesim topology info` prints about a cluster, and its Graphviz drawing.
#include <string>
#include <vector>

#include "sim/core/cluster.h"

namespace placesim {

// GPU pairs whose view agrees (to 1e-9 relative): a lone transfer takes latency + bytes / bandwidth.
struct BandwidthLevel {
  double bandwidth = 0;  // bytes/s; 0 for unreachable pairs
  double latency = 0;    // seconds
  long pairs = 0;        // ordered GPU pairs
  DeviceId example_src = 0, example_dst = 0;
};

struct TopologyInfo {
  int gpus = 0, servers = 0;
  int physical_links = 0, logical_links = 0;  // one-way links; logical: per-destination queues
  int max_paths = 0;                          // most paths (sub-flows) of one pair's route
  std::vector<BandwidthLevel> levels;         // fastest first
  // Max flow from the first half of the servers (0 .. servers/2 - 1) to the rest over the
  // physical links (one direction; Boost push-relabel), for clusters whose builder recorded the
  // node graph; 0 otherwise. For the fat-tree and spine-leaf this cut splits pods or leaves, the
  // worst bisection.
  double bisection_bandwidth = 0;
  // The same cut over the logical links only: the bandwidth the multi-NIC allocation gives across
  // it; 0 without logical links.
  double allocated_bisection = 0;
};

TopologyInfo describe_topology(const Cluster& cluster);
std::string format_topology_info(const Cluster& cluster, const TopologyInfo& info);
// Graphviz: servers as boxes holding their GPUs, switches, and one edge per cable (a pair of
// one-way links of equal bandwidth is drawn once, both ways), labelled with its bandwidth; logical
// links (per-destination queues) dashed, one edge per queue and direction.
std::string topology_dot(const Cluster& cluster);

}  // namespace placesim
