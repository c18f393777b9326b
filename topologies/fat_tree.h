#pragma once
// fat-tree: the k-ary three-tier fat-tree (k pods, k^3/4 server slots, full bisection when every
// tier has the NIC's bandwidth), servers filling pods in order.
//
// Pods p = 0..k-1 hold k/2 edge and k/2 aggregation switches; edge switch e of pod p serves k/2
// servers and links to every aggregation switch of the pod; aggregation switch i of each pod links
// to core switches (i, 0..k/2-1). Server s sits on edge switch s / (k/2): servers fill the tree
// in order, and switches of empty pods are left out. A server's slot is a bundle of
// `nics_per_server` NIC cables (each GPU's traffic through its own NIC, as on a DGX); the tiers
// above default to the bundle's bandwidth, so that the tree keeps its full bisection.
//
// Routing: with ECMP each transfer is split equally over all shortest paths (k/2 between edge
// switches of one pod, (k/2)^2 between pods), one sub-flow per path, as if the transfer opened one
// connection per path and hashing spread them perfectly (no hash collisions; SimGrid shares each
// link max-min fairly among the sub-flows crossing it). Without ECMP each pair takes the one
// static path of SimGrid's FatTreeZone (d-mod-k on the destination: aggregation switch t mod k/2,
// core column (t / (k/2)) mod k/2 for destination slot t), so some permutations collide on uplinks.
#include "topologies/registry.h"

namespace placesim {

struct FatTreeConfig : GpuServersConfig {  // servers <= k^3/4; 0 means a full tree
  int k = 4;                     // switch radix, even
  double nic_bandwidth = 12.5e9;  // server <-> edge switch, each NIC
  int nics_per_server = 1;        // divides gpus_per_server
  double nic_latency = 0;
  double aggregation_bandwidth = 0;  // edge <-> aggregation; 0: a server's NICs together
  double aggregation_latency = 0;
  double core_bandwidth = 0;         // aggregation <-> core; 0: the aggregation tier's
  double core_latency = 0;
  bool ecmp = true;
  bool operator==(const FatTreeConfig&) const = default;
};
Cluster make_fat_tree(const FatTreeConfig& config, const ConfigSource& source = {});
TopologyType fat_tree_topology();

}  // namespace placesim
