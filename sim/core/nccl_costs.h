#pragma once
// What NCCL spends on a collective beyond moving its bytes over the links, per protocol: the
// parameters of placesim's NCCL model (sim/collectives/nccl.h). A cluster that carries them
// (Cluster::nccl: the presets of topologies/presets.cpp, or `collectives: nccl` on any fabric)
// runs every collective as NCCL runs it; one without them runs collectives at line rate with no
// latency floor (placesim's ideal model, the papers' assumption). Where each figure comes from:
// docs/collectives.md. Units: seconds; fractions in (0, 1].
#include <array>

namespace placesim {

// NCCL's protocols, in NCCL's order (NCCL_PROTO).
enum class NcclProtocol { LL, LL128, Simple };
inline constexpr int kNcclProtocols = 3;

// The two kinds of hop NCCL's tuning model tells apart: NVLink inside a server, the network
// between servers.
enum class HopKind { NvLink, Network };

struct NcclCosts {
  // Base latency of a collective (kernel launch and the protocol's set-up), per protocol; NVLS's
  // own (its multicast set-up and pipeline fill) in nvls_base_s.
  std::array<double, kNcclProtocols> base_s{};
  double nvls_base_s = 0;
  // Software latency of one message (a step of a ring, a hop of a tree), per hop kind and
  // protocol, on top of the path's own latency.
  std::array<std::array<double, kNcclProtocols>, 2> hop_s{};
  // The share of a link's bandwidth a protocol's data reaches: LL sends a flag with every 4
  // bytes of data, LL128 with every 120 of 128, and neither reaches the copy rate of Simple.
  std::array<double, kNcclProtocols> protocol_fraction{1, 1, 1};
  // The share of a link's nominal bandwidth any transfer's data reaches (packet headers, flow
  // control), per hop kind.
  std::array<double, 2> link_efficiency{1, 1};
  // NVLS (NVLink SHARP all-reduce inside a server): the share of the link bandwidth its
  // in-switch reduction reaches, relative to a copy.
  double nvls_fraction = 1;
  // Tree algorithms pipeline their share in chunks of this many bytes (NCCL's step size:
  // NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8).
  double tree_chunk_bytes = 512 * 1024;
  bool operator==(const NcclCosts&) const = default;
};

}  // namespace placesim

namespace placesim {
// NCCL 2.18's costs as placesim models them, fitted once to nccl-tests on one 8 x H100 server
// (../shared/validation/nccl-tests_nd-h100-v5_1x8.csv; tools/fit_nccl.py) except where
// docs/collectives.md says a figure comes from elsewhere (the network's hops). The same costs for
// every GPU generation and preset.
NcclCosts nccl_calibrated_costs();
}  // namespace placesim
