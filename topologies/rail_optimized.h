#pragma once
// rail-optimized: the compute fabric of NVIDIA's DGX SuperPOD reference architectures. Each server
// has one NIC per GPU (or per `gpus_per_nic` GPUs); servers are grouped into scalable units (SUs)
// of `servers_per_unit`, and NIC r of every server of a unit is wired to that unit's rail-r leaf
// switch. Every leaf has one uplink to each spine of its pod (two tiers); with several pods
// (`units_per_pod`), spine i of every pod links to the `core_switches` core switches of plane i
// (three tiers). Leaf uplinks are sized by an oversubscription ratio as in spine-leaf, core links
// to carry what the spines take in (non-blocking) unless given.
//
// Routing between servers (NIC r serves GPUs r*gpus_per_nic ..; a GPU's rail is its NIC's):
//  - PXN (NCCL's PCI x NVLink, `pxn: true`): to a GPU on another rail, the data first crosses
//    NVLink to the sending server's GPU of the destination's local rank (the sender's NVLink up
//    link, that GPU's NVLink down link), then leaves through that GPU's NIC, so it stays on the
//    destination's rail. To a GPU on the sender's rail it leaves through the sender's own NIC.
//  - `pxn: false`: out of the sender's own NIC, in through the destination's.
//  - NIC to NIC through the rail leaf when both NICs are on one leaf (same unit and rail);
//    otherwise up to the spines (ECMP, as adaptive routing: spread evenly over every spine, and
//    every core of the plane between pods, so the tier is modelled as one aggregate link per leaf
//    and direction, and per pod and direction to the core: a transfer is one flow; static: spine
//    = destination server mod spines, core plane column = (destination / spines) mod
//    core_switches, each link of its own).
// The GPU-to-NIC PCIe hop is not modelled. Latencies: `nic_latency` on each NIC link (a transfer
// pays the sending and the receiving NIC's), `switch_latency` for every switch crossed (on the
// link entering it), plus each tier's cable latency. Node names: "su<u>-leaf<r>", "spine<i>"
// (pods: "pod<p>-spine<i>"), "core<i>.<j>"; with ECMP "spines" ("pod<p>-spines") and "core";
// links "server<s>-nic<r>-up/down" and "<from>-to-<to>".
#include "topologies/registry.h"

namespace placesim {

struct RailOptimizedConfig : GpuServersConfig {
  int gpus_per_nic = 1;          // GPUs sharing one NIC (and one rail): divides gpus_per_server
  int servers_per_unit = 32;     // servers of a scalable unit (DGX SuperPOD H100: 32; A100: 20)
  int units_per_pod = 0;         // 0: one pod of every unit, two tiers
  int spines = 2;                // per pod; each leaf has one uplink to each
  int core_switches = 1;         // per spine plane (three tiers only)
  double nic_bandwidth = 25e9;   // per NIC, each direction
  double nic_latency = 0;        // per NIC link
  double switch_latency = 0;     // per switch crossed
  double uplink_bandwidth = 0;   // leaf <-> spine, each; 0: from oversubscription
  double oversubscription = 1;   // used when uplink_bandwidth is 0
  double uplink_latency = 0;     // leaf <-> spine cable
  double core_bandwidth = 0;     // spine <-> core, each; 0: non-blocking
  double core_latency = 0;       // spine <-> core cable
  bool ecmp = true;
  bool pxn = true;
  bool operator==(const RailOptimizedConfig&) const = default;
};
Cluster make_rail_optimized(const RailOptimizedConfig& config, const ConfigSource& source = {});
TopologyType rail_optimized_topology();

}  // namespace placesim
