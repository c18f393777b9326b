#pragma once
// spine-leaf: leaves of n servers, s spines, leaf uplinks sized by an oversubscription ratio.
//
// Leaf l serves servers l*n .. l*n+n-1 and has one uplink to each of the s spines. The uplinks
// are sized by the oversubscription ratio r = n * d * nic_bandwidth / (s * uplink_bandwidth) unless
// uplink_bandwidth is given (d = nics_per_server; each GPU's traffic through its own NIC). ECMP splits a transfer between leaves equally over the s spines;
// without it the spine is the destination server's index mod s.
#include "topologies/registry.h"

namespace placesim {

struct SpineLeafConfig : GpuServersConfig {  // servers <= leaves * servers_per_leaf
  int servers_per_leaf = 4;
  int spines = 2;
  int leaves = 0;                  // 0: as many as the servers need
  double nic_bandwidth = 12.5e9;   // server <-> leaf, each NIC
  int nics_per_server = 1;         // divides gpus_per_server
  double nic_latency = 0;
  double uplink_bandwidth = 0;     // leaf <-> spine, each; 0: from oversubscription
  double oversubscription = 1;     // used when uplink_bandwidth is 0
  double uplink_latency = 0;
  bool ecmp = true;
  bool operator==(const SpineLeafConfig&) const = default;
};
Cluster make_spine_leaf(const SpineLeafConfig& config, const ConfigSource& source = {});
TopologyType spine_leaf_topology();

}  // namespace placesim
