// The closed forms of sim/collectives/collectives.h, from a collective's phases: each phase at the
// slowest of the pairs it sends between (sim/collectives/shape.h's for_each_pair), not the slowest
// pair of the group, which a ring over a multi-NIC server's per-destination allocation, say,
// never uses.
#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collectives.h"
#include "sim/collectives/nccl.h"

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
    const double depth = tree_depth(*tree);
    const double hops = (tree->up ? depth : 0) + (tree->down ? depth : 0);
    return (hops + c - 1) * (price.alpha + bytes / tree->divisor / c * price.inv_b);
  }
  return c * price.alpha + bytes / std::get<ExchangePhase>(phase.shape).divisor * price.inv_b;
}

// With NCCL costs, a phase's pairs are priced by the load they put on each link together: all of
// a phase's messages run at once (a ring's step over every channel, a tree's edges up and down
// with their chunks pipelined, an exchange), so 1/B is the largest link load (bytes on the wire
// per byte of piece) over the link's bandwidth. This is what NCCL's tuning model prices (a
// channel's rate times the channels, capped by the links) and what the flow engine finds for a
// collective alone where every flow of a step runs at one rate. A ring's messages pay its mean
// per-hop latency (nccl_ring_overhead), their path latencies their own.
PairPrice link_load_price(const CollectivePhase& phase, const CollectiveSpec& spec, const Cluster& cluster) {
  PairPrice price;
  std::vector<double> load(cluster.links().size(), 0.0);
  const auto* tree = std::get_if<TreePhase>(&phase.shape);
  const auto* ring = std::get_if<RingPhase>(&phase.shape);
  const double ring_overhead = ring ? nccl_ring_overhead(spec, cluster, *ring) : 0.0;
  for_each_pair(phase, [&](int from, int to) {
    const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
    const MessageCost cost = nccl_message_cost(spec, cluster, a, b);
    const double wire = cost.wire_factor * (tree ? in_server_scale(*tree, cluster, a, b) : 1.0);
    price.alpha = std::max(price.alpha, cluster.latency(a, b) + (ring ? ring_overhead : cost.overhead_s));
    for (const RoutePath& path : cluster.paths(a, b))
      for (int l : path.links) load[static_cast<std::size_t>(l)] += path.share * wire;
  });
  for (std::size_t l = 0; l < load.size(); ++l)
    if (load[l] > 0) price.inv_b = std::max(price.inv_b, load[l] / cluster.link(static_cast<int>(l)).bandwidth);
  return price;
}

// A pipelined tree under NCCL: NCCL keeps NCCL_STEPS (8) chunks in flight per connection, so once
// the pipeline is full a chunk's latency hides behind the bytes before it. The phase takes its
// fill, one chunk along the deepest path (each hop at its own latency, overhead and rate), then
// c - 1 chunks at the busiest link's load.
struct TreeFill {
  std::vector<PairPrice> hops;  // per hop of the fill path: alpha (with overhead) and 1/B (with wire bytes)
  double at(double chunk) const {
    double t = 0;
    for (const PairPrice& h : hops) t += h.alpha + chunk * h.inv_b;
    return t;
  }
};

// A checked spec's phases with their pairs priced once; at(bytes) is the time at any size.
class PricedCollective {
 public:
  PricedCollective(const CollectiveSpec& spec, const Cluster& cluster)
      : spec_(spec), cluster_(cluster), shape_(collective_shape(spec, cluster)), base_(nccl_base_latency(spec, cluster)) {
    fills_.resize(shape_.size());
    for (std::size_t i = 0; i < shape_.size(); ++i) {
      const CollectivePhase& phase = shape_[i];
      if (cluster.nccl) {
        prices_.push_back(link_load_price(phase, spec, cluster));
        if (const auto* tree = std::get_if<TreePhase>(&phase.shape))
          for (const auto& [from, to] : tree_fill_path(*tree)) {
            const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
            const MessageCost cost = nccl_message_cost(spec, cluster, a, b);
            const double wire = cost.wire_factor * in_server_scale(*tree, cluster, a, b);
            fills_[i].hops.push_back({cluster.latency(a, b) + cost.overhead_s, wire / cluster.bandwidth(a, b)});
          }
        continue;
      }
      PairPrice& price = prices_.emplace_back();
      const auto* tree = std::get_if<TreePhase>(&phase.shape);
      // Each pair alone, with all a ring step gives it: a pair that several channels' rings share
      // (GPU g to g + 1 of a server, in every channel that does not leave the server there) carries
      // each channel's piece on its route, as the evaluator prices a step by its busiest link. A
      // tree's edges stay each alone: their chunks pipeline (the evaluator's too).
      std::map<std::pair<DeviceId, DeviceId>, int> uses;
      for_each_pair(phase, [&](int from, int to) {
        int& count = uses[{spec.group[static_cast<std::size_t>(from)], spec.group[static_cast<std::size_t>(to)]}];
        count = tree ? 1 : count + 1;
      });
      for (const auto& [pair, count] : uses) {
        const auto [a, b] = pair;
        price.alpha = std::max(price.alpha, cluster.latency(a, b));
        price.inv_b = std::max(price.inv_b, count * (tree ? in_server_scale(*tree, cluster, a, b) : 1.0) / cluster.bandwidth(a, b));
      }
    }
  }

  double at(double bytes) const {
    if (bytes == 0) return 0;  // zero-byte pieces are free in every engine
    double t = base_;
    for (std::size_t i = 0; i < shape_.size(); ++i) {
      int chunks = spec_.chunks;
      if (const auto* tree = std::get_if<TreePhase>(&shape_[i].shape)) {
        chunks = tree_chunks(spec_, cluster_, bytes / tree->divisor);
        if (cluster_.nccl) {
          const double chunk = bytes / tree->divisor / chunks;
          t += fills_[i].at(chunk) + (chunks - 1) * chunk * prices_[i].inv_b;
          continue;
        }
      }
      t += phase_time(shape_[i], bytes, chunks, prices_[i]);
    }
    return t;
  }

 private:
  CollectiveSpec spec_;
  const Cluster& cluster_;
  CollectiveShape shape_;
  double base_;
  std::vector<PairPrice> prices_;  // per phase
  std::vector<TreeFill> fills_;    // per phase: NCCL's tree pipelines
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

double collective_closed_form(const CollectiveSpec& tuned, const Cluster& cluster) {
  if (const std::string why = collective_problem(tuned, cluster); !why.empty()) throw std::invalid_argument(why);
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
  return PricedCollective(spec, cluster).at(spec.bytes);
}

AffineTime collective_affine_form(const CollectiveSpec& tuned, const Cluster& cluster) {
  if (const std::string why = collective_problem(tuned, cluster); !why.empty()) throw std::invalid_argument(why);
  // Tuned: the choice at the spec's size (a line through the chosen algorithm's times).
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
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
