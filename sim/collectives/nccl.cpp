// The NCCL model of sim/collectives/nccl.h.
#include "sim/collectives/nccl.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

MessageCost nccl_message_cost(const CollectiveSpec& spec, const Cluster& cluster, DeviceId a, DeviceId b) {
  if (!cluster.nccl) return {};
  const NcclCosts& costs = *cluster.nccl;
  const HopKind kind = cluster.device(a).server == cluster.device(b).server ? HopKind::NvLink : HopKind::Network;
  const auto k = static_cast<std::size_t>(kind);
  const bool nvls = collective_algorithm(spec.algorithm).nvls;
  const auto p = static_cast<std::size_t>(nvls ? NcclProtocol::Simple : spec.protocol);
  // NVLS's share is of what the switch moves; NVLS-tree's network hops are Simple's.
  const bool through_switch = nvls && kind == HopKind::NvLink;
  const double fraction = costs.link_efficiency[k] * (through_switch ? costs.nvls_fraction : costs.protocol_fraction[p]);
  return {1.0 / fraction, costs.hop_s[k][p]};
}

double nccl_ring_overhead(const CollectiveSpec& spec, const Cluster& cluster, const RingPhase& ring) {
  if (!cluster.nccl) return 0;
  double sum = 0;
  std::int64_t hops = 0;
  for (const auto& order : ring.rings)
    if (order.size() > 1)
      for (std::size_t j = 0; j < order.size(); ++j, ++hops)
        sum += nccl_message_cost(spec, cluster, spec.group[static_cast<std::size_t>(order[j])],
                                 spec.group[static_cast<std::size_t>(order[(j + 1) % order.size()])])
                   .overhead_s;
  return hops > 0 ? sum / static_cast<double>(hops) : 0.0;
}

MessageCost nccl_send_cost(const Cluster& cluster, DeviceId a, DeviceId b) {
  if (!cluster.nccl || a == b) return {};
  const NcclCosts& costs = *cluster.nccl;
  const auto k = static_cast<std::size_t>(cluster.device(a).server == cluster.device(b).server ? HopKind::NvLink : HopKind::Network);
  const auto simple = static_cast<std::size_t>(NcclProtocol::Simple);
  return {1.0 / costs.link_efficiency[k], costs.base_s[simple] + costs.hop_s[k][simple]};
}

double nccl_base_latency(const CollectiveSpec& spec, const Cluster& cluster) {
  if (!cluster.nccl) return 0;
  if (collective_algorithm(spec.algorithm).nvls) return cluster.nccl->nvls_base_s;
  return cluster.nccl->base_s[static_cast<std::size_t>(spec.protocol)];
}

int tree_chunks(const CollectiveSpec& spec, const Cluster& cluster, double share) {
  if (!cluster.nccl || !(share > 0)) return spec.chunks;
  const double needed = std::ceil(share / cluster.nccl->tree_chunk_bytes);
  return static_cast<int>(std::clamp(needed, static_cast<double>(spec.chunks), 1e6));
}

int nccl_channels(const CollectiveSpec& spec, const Cluster& cluster) {
  if (!cluster.nccl) return 1;  // channels are NCCL's: the ideal model runs one ring or tree
  const std::vector<std::vector<int>> servers = ranks_by_server(spec, cluster);
  if (servers.size() < 2) return 1;
  std::size_t fewest = servers.front().size();
  for (const auto& s : servers) fewest = std::min(fewest, s.size());
  return static_cast<int>(std::clamp<std::size_t>(fewest, 1, 64));
}

namespace {

// What the tuner predicts for a candidate: its closed form, except that a tree is never predicted
// faster in bandwidth than NCCL's tuning model has it, 0.9 of a ring's (tuning.cc: a tree's bus
// bandwidth is the channels' times 0.9, and its algorithm bandwidth half of that, where a ring's
// is n / (2 (n - 1)) of it). On two servers a double binary tree moves half a ring's bytes across
// the network, which NCCL's tree does not turn into twice the bandwidth (its per-channel reduce
// and copy bound it), so NCCL runs rings there. NVLS-tree is priced by its closed form alone: the
// switch reduces inside the server, so on few servers it goes beyond the network's bound, as
// NCCL's maintainers describe it and nccl-tests show (NVIDIA/nccl-tests#153, #196).
double tuning_time(const CollectiveSpec& candidate, const Cluster& cluster) {
  const double t = collective_closed_form(candidate, cluster);
  if (!cluster.nccl || candidate.algorithm != CollectiveAlgorithm::Tree || candidate.op != CollectiveOp::AllReduce) return t;
  CollectiveSpec ring = candidate;
  ring.algorithm = CollectiveAlgorithm::Ring;
  CollectiveSpec tiny = candidate;
  tiny.bytes = 1;
  ring.bytes = 1;
  const double ring_bandwidth = collective_closed_form(ring, cluster);  // at 1 byte: the ring's latency
  ring.bytes = candidate.bytes;
  return std::max(t, collective_closed_form(tiny, cluster) + (collective_closed_form(ring, cluster) - ring_bandwidth) / 0.9);
}

}  // namespace

CollectiveSpec nccl_tuned(const CollectiveSpec& spec, const Cluster& cluster) {
  if (!spec.tuned) return spec;
  CollectiveSpec best = spec;
  best.tuned = false;
  double best_time = std::numeric_limits<double>::infinity();
  const int channels = spec.pin_channels ? spec.channels : nccl_channels(spec, cluster);
  std::vector<NcclProtocol> protocols{NcclProtocol::Simple};
  if (cluster.nccl) protocols = {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple};
  if (spec.pin_protocol) protocols = {spec.protocol};
  // NCCL's algorithms: ring, tree, NVLS and NVLS-tree for reductions and gathers; all-to-all point
  // to point.
  for (const CollectiveAlgorithm algorithm : {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree, CollectiveAlgorithm::Nvls,
                                              CollectiveAlgorithm::NvlsTree, CollectiveAlgorithm::Direct}) {
    if (!collective_supports(spec.op, algorithm)) continue;
    if (algorithm == CollectiveAlgorithm::Direct && spec.op != CollectiveOp::AllToAll) continue;
    for (const NcclProtocol protocol : protocols) {
      // NVLS runs no channels of NCCL's rings; NVLS-tree's are its slices (collective_problem checks a pinned count).
      if (collective_algorithm(algorithm).nvls && (protocol != NcclProtocol::Simple || (algorithm == CollectiveAlgorithm::Nvls && spec.pin_channels)))
        continue;
      CollectiveSpec candidate = best;
      candidate.algorithm = algorithm;
      candidate.protocol = protocol;
      candidate.pin_protocol = candidate.pin_channels = true;
      candidate.channels = algorithm == CollectiveAlgorithm::Nvls || algorithm == CollectiveAlgorithm::Direct ? 1 : channels;
      if (!collective_problem(candidate, cluster).empty()) continue;
      const double t = tuning_time(candidate, cluster);
      if (t < best_time) best_time = t, best = candidate;
    }
  }
  if (!std::isfinite(best_time))
    throw std::invalid_argument(fmt::format("no algorithm runs {} on this group (algorithms that run it: {})",
                                            enum_name<CollectiveOp>(kCollectiveOpNames, spec.op), collective_algorithms_of(spec.op)));
  return best;
}

CollectiveSpec nccl_resolved(const CollectiveSpec& spec, const Cluster& cluster) {
  if (spec.tuned) return nccl_tuned(spec, cluster);
  if (!cluster.nccl || (spec.pin_protocol && spec.pin_channels)) return spec;
  CollectiveSpec out = spec;
  // NVLS-tree's slices, one per GPU of a server, are its channels (shown as such).
  if (!spec.pin_channels &&
      (spec.algorithm == CollectiveAlgorithm::Ring || spec.algorithm == CollectiveAlgorithm::Tree ||
       spec.algorithm == CollectiveAlgorithm::NvlsTree) &&
      !(spec.op == CollectiveOp::Broadcast || spec.op == CollectiveOp::Reduce))
    out.channels = nccl_channels(spec, cluster);
  out.pin_channels = true;
  if (spec.pin_protocol || collective_algorithm(spec.algorithm).nvls) return out;
  double best_time = std::numeric_limits<double>::infinity();
  CollectiveSpec best = out;
  for (const auto& p : kNcclProtocolNames) {
    CollectiveSpec candidate = out;
    candidate.protocol = p.value;
    candidate.pin_protocol = true;
    const double t = collective_closed_form(candidate, cluster);
    if (t < best_time) best_time = t, best = candidate;
  }
  return best;
}

std::string collective_choice_text(const CollectiveSpec& spec, const Cluster& cluster) {
  std::string out(enum_name<CollectiveAlgorithm>(collective_algorithm_names(), spec.algorithm));
  if (cluster.nccl && !collective_algorithm(spec.algorithm).nvls)
    out += fmt::format(" {}", enum_name<NcclProtocol>(kNcclProtocolNames, spec.protocol));
  if (spec.channels > 1) out += fmt::format(" x{}", spec.channels);
  return out;
}

}  // namespace placesim
