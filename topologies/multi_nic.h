#pragma once
// multi-nic: TopoOpt-style direct connect (thesis section 3.4, Fig. 3.2): d NICs per server, NIC i
// wired to switch i, so each server pair has d disjoint equal-cost paths; a bandwidth allocation
// b(s,t) is realised with per-NIC, per-destination queues (rate caps) and striping; optionally
// pods joined by a Clos core.
//
// Each server has d NICs of bandwidth b; NIC i of every server is wired to switch i (of its pod),
// so a server's egress is at most B = d*b. The allocation is realised as in the thesis (section
// 3.4): each NIC is capped at its link rate and holds one queue per destination with its own rate
// cap; the queues of server s are packed onto its NICs in turn (destinations s+1, s+2, ... wrapping
// around; a NIC full, the next one takes the rest), so a destination whose allocation exceeds one
// link -- or straddles two NICs -- is striped over several NICs, each stripe carrying bytes in
// proportion to its queue's rate. A queue is a logical link of its rate on that stripe's path:
// SimGrid shares it among every flow from s to t on that NIC, exactly an HTB rate cap. The lone
// transfer s -> t therefore runs at b(s,t) in total.
//
// Pods (servers_per_pod > 0): each pod has its own d switches; switch i of every pod has one
// uplink to each of `core_switches` core switches of plane i (a two-tier Clos per NIC plane),
// and a stripe between pods is split equally (ECMP) over those core switches.
#include <optional>

#include "topologies/registry.h"

namespace placesim {

// Each server pair has per-destination queues (logical links) of its own, so links grow with the
// square of the servers: multi-nic keeps the 4,096-GPU limit the other server fabrics had.
constexpr int kMaxMultiNicGpus = 4096;

struct MultiNicConfig : GpuServersConfig {
  int nics_per_server = 2;        // d
  double link_bandwidth = 20e9;   // b, per NIC, each direction
  double link_latency = 0;
  int servers_per_pod = 0;        // 0: one pod
  int core_switches = 1;          // per NIC plane
  double core_bandwidth = 0;      // pod switch <-> core switch, each; 0: the NIC link's
  double core_latency = 0;
  std::optional<BandwidthAllocation> allocation;  // b(s,t); unset: uniform, d*b / (servers - 1)
  bool operator==(const MultiNicConfig&) const = default;
};
Cluster make_multi_nic(const MultiNicConfig& config, const ConfigSource& source = {});
// The same with `allocation` in place of config.allocation.
Cluster make_multi_nic(const MultiNicConfig& config, const BandwidthAllocation& allocation, const ConfigSource& source = {});
TopologyType multi_nic_topology();

// The MultiNicConfig a multi-nic cluster was built from (its recipe); nullptr for other fabrics.
const MultiNicConfig* multi_nic_config_of(const Cluster& cluster);

// The `allocation:` of a multi-nic cluster: `uniform`, or one row per server of b(s,t) with units
// (`0` or `-` for none). Validated against `servers` and the egress d*b.
BandwidthAllocation allocation_from_yaml(const YAML::Node& node, int servers, double egress, const std::string& file,
                                         const std::string& field);

// One stripe of a destination's queue on a NIC: the thesis's per-interface queue.
struct NicQueue {
  int nic = 0;
  double rate = 0;  // bytes/s
};
// The queues of server s, per destination t (empty when b(s,t) = 0), packed as described above.
std::vector<std::vector<NicQueue>> pack_nic_queues(const BandwidthAllocation& allocation, int s, int nics,
                                                   double link_bandwidth);

}  // namespace placesim
