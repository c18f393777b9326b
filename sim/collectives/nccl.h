#pragma once
// NCCL as it runs: what a collective costs beyond its bytes on a cluster that carries NCCL's
// costs (Cluster::nccl, sim/core/nccl_costs.h), and NCCL's choice of algorithm, protocol and
// channels per size (`algorithm: auto`).
//
// What is modelled, in every engine and in the closed forms:
//  - every collective pays its protocol's base latency once (NVLS its own), at each rank's
//    first messages;
//  - every message (a ring step, a tree hop, an exchange) pays its protocol's per-hop latency,
//    by hop kind (NVLink inside a server, the network across), on top of its path's latency;
//  - its bytes cross the links at the protocol's fraction of the links' data rate (the link
//    efficiency of the hop kind times the protocol's fraction): the transfer carries
//    bytes / fraction, so contention with other traffic is priced on what the wire carries;
//  - channels: rings and trees run once per channel, each entering a server at a different
//    local rank, so that across servers channel c uses NIC c (one ring per NIC);
//  - NVLS (sim/collectives/algorithms/nvls.cpp) on servers with NVLink SHARP, and NVLS-tree
//    (sim/collectives/algorithms/nvls_tree.cpp) across them.
//  - a ring's messages each pay the mean of its hops' per-hop latencies (nccl_ring_overhead), as
//    NCCL's tuning model counts a ring's latency: its network hops once each per step and the
//    rest at the NVLink latency, since a rank forwards a piece as soon as it has arrived (NCCL's
//    slots in flight per connection, NCCL_STEPS), so no step waits for its slowest hop's software
//    latency. The fabric's own path latency stays each hop's (the slowest per step: a bound).
// What is not: per-channel bandwidth caps of the GPU's SMs (a protocol's fraction stands for
// them), the slots' overlap of a message's path latency and bytes with the previous one's, PCIe
// between GPU and NIC, CollNet, and the copy engines.
//
// `algorithm: auto` (CollectiveSpec::tuned) picks as NCCL's tuning model does: the algorithm,
// protocol and channel count with the least predicted time, predicted by the closed form of this
// model (NCCL predicts with base and per-hop latencies and per-channel bandwidths of the same
// kind; docs/collectives.md compares the two).
#include <string>

#include "sim/collectives/collectives.h"
#include "sim/collectives/shape.h"

namespace placesim {

inline constexpr EnumName<NcclProtocol> kNcclProtocolNames[] = {
    {NcclProtocol::LL, "LL"}, {NcclProtocol::LL128, "LL128"}, {NcclProtocol::Simple, "Simple"}};

// What one message of the collective from GPU a to GPU b costs beyond its path: bytes on the
// wire per byte of data, and seconds of software latency. {1, 0} without NCCL costs.
struct MessageCost {
  double wire_factor = 1;
  double overhead_s = 0;
};
MessageCost nccl_message_cost(const CollectiveSpec& spec, const Cluster& cluster, DeviceId a, DeviceId b);

// The per-hop latency every message of a ring phase pays with NCCL costs: the mean over the
// phase's hops of nccl_message_cost's overhead (0 without NCCL costs). On two DGX servers a
// ring of 16 ranks has 2 network hops of 16: a step costs 2/16 of a network hop's latency and
// 14/16 of an NVLink hop's, where NCCL's tuning.cc counts nNodes - 1 network steps of an
// all-gather's nRanks - 1 (the same count, but for the ring's one hop the steps never use).
double nccl_ring_overhead(const CollectiveSpec& spec, const Cluster& cluster, const RingPhase& ring);

// What a point-to-point send (ncclSend/ncclRecv: a pipeline stage's activations, say) from GPU a
// to GPU b costs beyond its path: Simple's base and per-hop latency and the hop kind's link
// efficiency. {1, 0} without NCCL costs or on one GPU.
MessageCost nccl_send_cost(const Cluster& cluster, DeviceId a, DeviceId b);

// The collective's base latency (0 without NCCL costs).
double nccl_base_latency(const CollectiveSpec& spec, const Cluster& cluster);

// Chunks a tree phase pipelines `share` bytes in: spec.chunks, or with NCCL costs as many
// chunks of NcclCosts::tree_chunk_bytes as the share needs (at least spec.chunks).
int tree_chunks(const CollectiveSpec& spec, const Cluster& cluster, double share);

// The channels NCCL gives a group: one per rank of a server (one per NIC on DGX-like servers)
// when the group spans servers; one inside a server, and one on a cluster without NCCL costs.
int nccl_channels(const CollectiveSpec& spec, const Cluster& cluster);

// The spec with `tuned` resolved: algorithm, protocol and channels chosen for spec.bytes (the
// spec itself when not tuned). Throws std::invalid_argument when no algorithm runs the
// operation on this group.
CollectiveSpec nccl_tuned(const CollectiveSpec& spec, const Cluster& cluster);

// The spec as NCCL runs it: tuned (nccl_tuned) when `tuned`; otherwise, on a cluster with NCCL
// costs, its algorithm with NCCL's channels (ring, tree) and its fastest protocol, unless pinned.
// Every view of a collective (message graph, steps, closed form) runs this spec, so that every
// plan's collectives on an NCCL cluster run as NCCL does.
CollectiveSpec nccl_resolved(const CollectiveSpec& spec, const Cluster& cluster);

// "ring LL128 x8" (algorithm, protocol where NCCL runs, channels).
std::string collective_choice_text(const CollectiveSpec& spec, const Cluster& cluster);

}  // namespace placesim
