// What every algorithm shares: lookups by value and by operation, and the shape of a spec.
#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

const CollectiveAlgorithmInfo& collective_algorithm(CollectiveAlgorithm algorithm) {
  const auto entries = collective_algorithm_registry().entries();
  const auto i = static_cast<std::size_t>(algorithm);
  if (i >= entries.size()) throw std::invalid_argument(fmt::format("no collective algorithm number {}", i));
  return entries[i];
}

std::span<const EnumName<CollectiveAlgorithm>> collective_algorithm_names() {
  static const std::vector<EnumName<CollectiveAlgorithm>> names = [] {
    std::vector<EnumName<CollectiveAlgorithm>> out;
    for (const CollectiveAlgorithmInfo& a : collective_algorithm_registry())
      out.push_back({static_cast<CollectiveAlgorithm>(out.size()), a.name});
    return out;
  }();
  return names;
}

std::span<const EnumName<CollectiveAlgorithm>> collective_algorithm_names(CollectiveOp op) {
  static const auto by_op = [] {
    std::vector<std::vector<EnumName<CollectiveAlgorithm>>> out(std::size(kCollectiveOpNames));
    for (const auto& o : kCollectiveOpNames)
      for (const auto& a : collective_algorithm_names())
        if (collective_supports(o.value, a.value)) out[static_cast<std::size_t>(o.value)].push_back(a);
    return out;
  }();
  return by_op.at(static_cast<std::size_t>(op));
}

bool collective_supports(CollectiveOp op, CollectiveAlgorithm algorithm) {
  const auto& ops = collective_algorithm(algorithm).ops;
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

std::string collective_algorithms_of(CollectiveOp op) {
  std::string out;
  for (const auto& a : collective_algorithm_names())
    if (collective_supports(op, a.value)) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

CollectiveShape collective_shape(const CollectiveSpec& spec, const Cluster& cluster) {
  const CollectiveAlgorithmInfo& info = collective_algorithm(spec.algorithm);
  ShapeContext context;
  if (info.levels) context.levels = collective_levels(spec, cluster);
  context.servers = ranks_by_server(spec, cluster);
  context.nccl = cluster.nccl.has_value();
  return info.shape(spec, context);
}

std::pair<std::vector<int>, std::vector<int>> servers_tree(const std::vector<std::vector<int>>& servers,
                                                           const std::vector<int>& server_order, int c, bool star) {
  std::vector<int> order, parent;
  std::vector<int> head(server_order.size());  // position of each heap slot's first rank
  for (std::size_t slot = 0; slot < server_order.size(); ++slot) {
    const auto& ranks = servers[static_cast<std::size_t>(server_order[slot])];
    const int m = static_cast<int>(ranks.size());
    head[slot] = static_cast<int>(order.size());
    for (int j = 0; j < m; ++j) {
      order.push_back(ranks[static_cast<std::size_t>((c + j) % m)]);
      if (j == 0) parent.push_back(slot == 0 ? 0 : head[(slot - 1) / 2]);
      else parent.push_back(star ? head[slot] : static_cast<int>(order.size()) - 2);
    }
  }
  return {std::move(order), std::move(parent)};
}

std::vector<int> ranks_in_order(int n, int first) {
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = (first + i) % n;
  return order;
}

}  // namespace placesim
