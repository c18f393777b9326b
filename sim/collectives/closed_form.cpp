// The closed forms of sim/collectives/collectives.h, from a collective's phases: each phase at the
// slowest of the pairs it sends between (sim/collectives/shape.h's for_each_pair), not the slowest
// pair of the group, which a ring over a multi-NIC server's per-destination allocation, say,
// never uses.
#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collectives.h"

namespace placesim {

namespace {

// alpha (largest latency, s) and 1/B (largest inverse bandwidth, s per byte) of a phase's pairs.
struct PairPrice {
  double alpha = 0, inv_b = 0;
};

// The phase's time at `bytes` (the collective's buffer) in `chunks` pieces per message, its pairs at `price`:
//   ring      steps x (c alpha + piece / B): each connection carries the steps' pieces in order
//   tree      (hops + c - 1) x (alpha + share / c / B), hops the depth up and again down (a binary
//             tree's floor(log2 n), a chain's n - 1): chunk k reaches the root at (depth + k)
//             piece times, the deepest leaf depth piece times later
//   exchange  c alpha + message / B: every message at once, its chunks one after the other
double phase_time(const CollectivePhase& phase, double bytes, int chunks, PairPrice price) {
  const double c = chunks;
  if (const auto* ring = std::get_if<RingPhase>(&phase.shape))
    return ring->steps * (c * price.alpha + bytes / ring->divisor * price.inv_b);
  if (const auto* tree = std::get_if<TreePhase>(&phase.shape)) {
    const auto n = tree->trees.front().size();
    const double depth = static_cast<double>(tree->chain ? n - 1 : std::bit_width(n) - 1);
    const double hops = (tree->up ? depth : 0) + (tree->down ? depth : 0);
    return (hops + c - 1) * (price.alpha + bytes / tree->divisor / c * price.inv_b);
  }
  return c * price.alpha + bytes / std::get<ExchangePhase>(phase.shape).divisor * price.inv_b;
}

// A checked spec's phases with their pairs priced once; at(bytes) is the time at any size.
class PricedCollective {
 public:
  PricedCollective(const CollectiveSpec& spec, const Cluster& cluster)
      : chunks_(spec.chunks), shape_(collective_shape(spec, cluster)) {
    for (const CollectivePhase& phase : shape_) {
      PairPrice& price = prices_.emplace_back();
      for_each_pair(phase, [&](int from, int to) {
        const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
        price.alpha = std::max(price.alpha, cluster.latency(a, b));
        price.inv_b = std::max(price.inv_b, 1.0 / cluster.bandwidth(a, b));
      });
    }
  }

  double at(double bytes) const {
    if (bytes == 0) return 0;  // zero-byte pieces are free in every engine
    double t = 0;
    for (std::size_t i = 0; i < shape_.size(); ++i) t += phase_time(shape_[i], bytes, chunks_, prices_[i]);
    return t;
  }

 private:
  int chunks_;
  CollectiveShape shape_;
  std::vector<PairPrice> prices_;  // per phase
};

}  // namespace

double uniform_collective_time(CollectiveOp op, CollectiveAlgorithm algorithm, int ranks, double bytes, double alpha,
                               double bandwidth, int chunks) {
  if (!collective_supports(op, algorithm))
    throw std::invalid_argument(fmt::format("{} does not run {} (algorithms that do: {})",
                                            collective_algorithm(algorithm).name, enum_name<CollectiveOp>(kCollectiveOpNames, op),
                                            collective_algorithms_of(op)));
  if (bytes == 0 || ranks < 2) return 0;
  // One level of links: hierarchical and multi-level run the same rings as ring.
  if (collective_algorithm(algorithm).levels) algorithm = CollectiveAlgorithm::Ring;
  CollectiveSpec spec{op, algorithm, std::vector<DeviceId>(static_cast<std::size_t>(ranks), 0), bytes, chunks};
  const CollectiveAlgorithmInfo& info = collective_algorithm(algorithm);
  double t = 0;
  for (const CollectivePhase& phase : info.shape(spec, {})) t += phase_time(phase, bytes, chunks, {alpha, 1.0 / bandwidth});
  return t;
}

double collective_closed_form(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  return PricedCollective(spec, cluster).at(spec.bytes);
}

AffineTime collective_affine_form(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  const PricedCollective priced(spec, cluster);
  return affine_in_bytes([&](double bytes) { return priced.at(bytes); });
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::AllReduce: return 2 * (n - 1) / n;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll: return (n - 1) / n;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return 1;
  }
  return 1;
}

}  // namespace placesim
