#pragma once
// The data-centre fabrics of the papers, each built as a Cluster: links with bandwidths and
// latencies, and routes (with ECMP or NIC striping as several paths sharing the bytes) that the
// SimGrid engine simulates with contention and that give strategies the pairwise view.
//
// Every fabric connects GPU servers: `gpus_per_server` GPUs joined by NVLink (each GPU has an up
// and a down link of `nvlink_bandwidth` to the server's NVSwitch, so GPU a -> GPU b of one server
// crosses a's up link and b's down link), and the server's NIC(s) leading to the fabric.
// Inter-server traffic goes NIC to NIC; the GPU-to-NIC hop (PCIe) is not modelled, so the GPUs of
// a server share its NICs. Every cable is full duplex: two one-way links, one per direction.
//
//   non-blocking   one big switch; every server has one NIC at full rate (thesis Fig. 5.2 baseline)
//   fat-tree       the k-ary three-tier fat-tree (k pods, k^3/4 server slots, full bisection when
//                  every tier has the NIC's bandwidth), servers filling pods in order
//   spine-leaf     leaves of n servers, s spines, leaf uplinks sized by an oversubscription ratio
//   multi-nic      TopoOpt-style direct connect (thesis section 3.4, Fig. 3.2): d NICs per server,
//                  NIC i wired to switch i, so each server pair has d disjoint equal-cost paths;
//                  a bandwidth allocation b(s,t) is realised with per-NIC, per-destination queues
//                  (rate caps) and striping; optionally pods joined by a Clos core
//
// Link names: "gpu<g>-nvlink-up/down", "server<s>-nic-up/down" (multi-nic: "server<s>-nic<i>-up"),
// switch-to-switch links "<from>-to-<to>". Every builder throws InputError naming `cluster.<field>`
// on an impossible shape (odd k, zero bandwidth, more servers than the tree holds, ...).
#include <functional>
#include <string>
#include <vector>

#include "sim/cluster.h"

namespace placesim {

constexpr double kDefaultGpuMemory = 16.0 * 1024 * 1024 * 1024;
// The pairwise view is quadratic in GPUs (28 bytes per ordered pair).
constexpr int kMaxClusterGpus = 4096;

// A per-server change, so heterogeneous clusters can be described; 0 keeps the cluster's value.
struct ServerOverride {
  int server = 0;
  double gpu_memory = 0;  // bytes
  double gpu_speed = 0;   // relative compute speed (see Device::compute_speed)
};

// How a builder's errors name fields: "cluster.<key>" by default; the scenario reader passes its
// file and a function that adds the YAML line.
struct ConfigSource {
  std::string file;
  std::function<std::string(const std::string& key)> field;
  std::string name(const std::string& key) const { return field ? field(key) : "cluster." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
};

// The GPU servers every fabric connects (each fabric's config extends it).
struct GpuServersConfig {
  int servers = 4;
  int gpus_per_server = 2;
  double nvlink_bandwidth = 50e9;  // per GPU, each direction
  double nvlink_latency = 0;
  double gpu_memory = kDefaultGpuMemory;
  double gpu_speed = 1.0;
  std::vector<ServerOverride> overrides;
};

struct NonBlockingConfig : GpuServersConfig {
  double nic_bandwidth = 20e9;  // per server, each direction
  double nic_latency = 0;       // per NIC link: a transfer crosses two
};
Cluster make_non_blocking(const NonBlockingConfig& config, const ConfigSource& source = {});

// Pods p = 0..k-1 hold k/2 edge and k/2 aggregation switches; edge switch e of pod p serves k/2
// servers and links to every aggregation switch of the pod; aggregation switch i of each pod links
// to core switches (i, 0..k/2-1). Server s sits on edge switch s / (k/2): servers fill the tree
// in order, and switches of empty pods are left out.
//
// Routing: with ECMP each transfer is split equally over all shortest paths (k/2 between edge
// switches of one pod, (k/2)^2 between pods), one sub-flow per path, as if the transfer opened one
// connection per path and hashing spread them perfectly (no hash collisions; SimGrid shares each
// link max-min fairly among the sub-flows crossing it). Without ECMP each pair takes the one
// static path of SimGrid's FatTreeZone (d-mod-k on the destination: aggregation switch t mod k/2,
// core column (t / (k/2)) mod k/2 for destination slot t), so some permutations collide on uplinks.
struct FatTreeConfig : GpuServersConfig {  // servers <= k^3/4; 0 means a full tree
  int k = 4;                     // switch radix, even
  double nic_bandwidth = 12.5e9;  // server <-> edge switch
  double nic_latency = 0;
  double aggregation_bandwidth = 0;  // edge <-> aggregation; 0: the NIC's
  double aggregation_latency = 0;
  double core_bandwidth = 0;         // aggregation <-> core; 0: the aggregation tier's
  double core_latency = 0;
  bool ecmp = true;
};
Cluster make_fat_tree(const FatTreeConfig& config, const ConfigSource& source = {});

// Leaf l serves servers l*n .. l*n+n-1 and has one uplink to each of the s spines. The uplinks
// are sized by the oversubscription ratio r = n * nic_bandwidth / (s * uplink_bandwidth) unless
// uplink_bandwidth is given. ECMP splits a transfer between leaves equally over the s spines;
// without it the spine is the destination server's index mod s.
struct SpineLeafConfig : GpuServersConfig {  // servers <= leaves * servers_per_leaf
  int servers_per_leaf = 4;
  int spines = 2;
  int leaves = 0;                  // 0: as many as the servers need
  double nic_bandwidth = 12.5e9;   // server <-> leaf
  double nic_latency = 0;
  double uplink_bandwidth = 0;     // leaf <-> spine, each; 0: from oversubscription
  double oversubscription = 1;     // used when uplink_bandwidth is 0
  double uplink_latency = 0;
  bool ecmp = true;
};
Cluster make_spine_leaf(const SpineLeafConfig& config, const ConfigSource& source = {});

// b(s,t) in bytes/s for each ordered server pair (the diagonal is unused and must be 0); the
// thesis's decision variable b_{d,e} of P2 (section 3.5). A zero entry leaves the pair without
// bandwidth: a transfer between those servers never ends.
class BandwidthAllocation {
 public:
  BandwidthAllocation() = default;
  explicit BandwidthAllocation(int servers) : servers_(servers), rate_(static_cast<std::size_t>(servers) * servers, 0.0) {}
  // Every server gives each other server an equal share of its egress: egress / (servers - 1).
  static BandwidthAllocation uniform(int servers, double egress);

  int servers() const { return servers_; }
  double operator()(int s, int t) const { return rate_[static_cast<std::size_t>(s) * servers_ + t]; }
  void set(int s, int t, double bytes_per_second) { rate_[static_cast<std::size_t>(s) * servers_ + t] = bytes_per_second; }
  double row_sum(int s) const;
  // Throws InputError(source, "<field>[s]", ...) naming the first bad row: wrong size, a negative
  // or non-finite entry, a non-zero diagonal, or egress above `egress_limit` (thesis eq. 3.7).
  void validate(int servers, double egress_limit, const std::string& source = "",
                const std::string& field = "cluster.allocation") const;

 private:
  int servers_ = 0;
  std::vector<double> rate_;
};

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
struct MultiNicConfig : GpuServersConfig {
  int nics_per_server = 2;        // d
  double link_bandwidth = 20e9;   // b, per NIC, each direction
  double link_latency = 0;
  int servers_per_pod = 0;        // 0: one pod
  int core_switches = 1;          // per NIC plane
  double core_bandwidth = 0;      // pod switch <-> core switch, each; 0: the NIC link's
  double core_latency = 0;
};
Cluster make_multi_nic(const MultiNicConfig& config, const BandwidthAllocation& allocation,
                       const ConfigSource& source = {});
// The uniform allocation: b(s,t) = d*b / (servers - 1).
Cluster make_multi_nic(const MultiNicConfig& config, const ConfigSource& source = {});

// One stripe of a destination's queue on a NIC: the thesis's per-interface queue.
struct NicQueue {
  int nic = 0;
  double rate = 0;  // bytes/s
};
// The queues of server s, per destination t (empty when b(s,t) = 0), packed as described above.
std::vector<std::vector<NicQueue>> pack_nic_queues(const BandwidthAllocation& allocation, int s, int nics,
                                                   double link_bandwidth);

}  // namespace placesim
