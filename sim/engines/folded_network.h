#pragma once
// The network a folded graph's flows share (sim/core/folding.h), as the flow engine solves it.
//
// A folded transfer from GPU a to GPU b stands for one flow per copy j, member(a, j) ->
// member(b, j), each on its own route of the cluster. The copies of every transfer run at the
// same times, so the max-min fair rates the flow engine would give the full set of flows can be
// computed on classes: links fall in classes and copies of a route in sub-orbits such that
//   - every link of a class has the same bandwidth and carries, of each sub-orbit's path k, the
//     same number of copies' flows (its weight there);
//   - every copy of a sub-orbit crosses the same classes, with the same route latency and hop kind.
// (The coarsest such partition, found by refining both until neither splits: an equitable
// partition.) Progressive filling then fixes every link of a class at once and every copy of a
// sub-orbit at the same rate, so one constraint per class, with each sub-orbit's path a variable
// weighted by its copies crossing one link of the class, gives every flow its exact rate
// (tests/test_folding.cpp derives one by hand). k equivalent flows crossing a shared link each
// get their share of it: the link class's constraint counts all k.
//
// A route whose copies fall in more than one sub-orbit (some stay under their leaf, others cross
// the spine) is folded approximately: its transfer arrives when its slowest sub-orbit's flow
// has, for every copy, where the copies would really drift apart. `split_routes` counts them;
// a graph folded without any is exact (on a symmetric fabric it has none).
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/collectives/collectives.h"
#include "sim/core/cluster.h"
#include "sim/core/folding.h"
#include "sim/core/graph.h"

namespace placesim {

struct FoldedNetwork {
  struct WeightedLink {
    std::int32_t link_class = 0;
    double weight = 1;  // the sub-orbit's flows on this path crossing one link of the class
  };
  struct Path {
    double share = 1;  // of the transfer's bytes, as the cluster's route splits them
    std::vector<WeightedLink> links;
  };
  // Copies of one route that see the network alike; `src` -> `dst` is the first of them.
  struct SubOrbit {
    DeviceId src = 0, dst = 0;
    std::int32_t copies = 0;
    std::vector<Path> paths;
  };
  struct RouteSpan {
    std::int32_t first = 0, count = 0;  // into sub_orbits
  };

  std::vector<double> class_bandwidth;      // bytes/s, per link class
  std::vector<std::int32_t> class_links;    // how many of the cluster's links the class holds
  std::vector<std::int32_t> class_example;  // one of them (a link id of the cluster)
  std::vector<SubOrbit> sub_orbits;
  std::int64_t routes = 0, split_routes = 0;
  std::string first_split;  // the first split route, for messages ("" when none)
  int refinements = 0;      // rounds of the partition refinement
  // The refinement stopped before every copy of a sub-orbit crossed the same classes (a fabric
  // without symmetry): each path holds every class its copies cross, and they share one rate.
  bool capped = false;

  bool exact() const { return split_routes == 0; }
  // The route of copy 0's src -> dst (null when the graph has no such transfer).
  const RouteSpan* find(DeviceId src, DeviceId dst) const {
    const auto it = by_pair.find(key(src, dst));
    return it == by_pair.end() ? nullptr : &it->second;
  }
  std::span<const SubOrbit> route(const RouteSpan& span) const {
    return {sub_orbits.data() + span.first, static_cast<std::size_t>(span.count)};
  }

  static std::uint64_t key(DeviceId src, DeviceId dst) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32 | static_cast<std::uint32_t>(dst);
  }
  std::unordered_map<std::uint64_t, RouteSpan> by_pair;
};

// Where a tensor of a placed graph sends its bytes: Tensor::route_to, or its consumer's GPU.
inline DeviceId route_destination(const Tensor& t, std::span<const DeviceId> placement) {
  return t.route_to >= 0 ? t.route_to : placement[static_cast<std::size_t>(t.dst)];
}

// The classes of the folded graph's transfers (those with bytes between two GPUs). Throws
// std::invalid_argument when a copy's GPUs cannot reach each other.
FoldedNetwork fold_network(const Graph& graph, std::span<const DeviceId> placement, const Folding& fold, const Cluster& cluster);

// Whether folding into blocks `group` times the folding's would be exact: the folded graph's routes
// regrouped as that fold would have them (copy j of a route in its (j mod group)-th transfer), so
// that one graph answers for every larger block (choose_fold). `why`, when not exact: a route whose
// copies differ.
bool fold_exact_in_blocks(const Graph& graph, std::span<const DeviceId> placement, const Folding& fold, const Cluster& cluster,
                          int group, std::string* why = nullptr);

// The ranks a collective's message graph is built for (collective_graph's `represented`): the
// fewest whole servers' ranks (each server holding as many consecutive ranks) whose blocks the
// algorithm treats alike and whose copies see the network alike; 0 when none do (a tree, an
// uneven group, a fabric without that symmetry): the whole group. `why` says which.
int collective_fold_block(const CollectiveSpec& spec, const Cluster& cluster, std::string* why = nullptr);

// A lone transfer's time on its slowest sub-orbit (the evaluator's, contention-free), and whether
// the sub-orbits' times differ.
struct FoldedTransferTime {
  double seconds = 0;
  bool uniform = true;
};
FoldedTransferTime folded_transfer_time(const FoldedNetwork& network, const Cluster& cluster, DeviceId src, DeviceId dst,
                                        const Tensor& t);

}  // namespace placesim
