// Tree: all-reduce by NCCL's double binary tree, two binary trees each reducing half of the
// buffer to its root and broadcasting it back, chunk by chunk; broadcast and reduce: one binary
// tree rooted at the root.
//
// On a cluster that runs NCCL (Cluster::nccl) the all-reduce's trees are NCCL's: the double
// binary tree spans the servers (tree 0 over the servers in order, tree 1 over them reversed, so
// a server inner in one is a leaf in the other), and inside each server the ranks hang as a chain
// below the one on the tree; per channel c, both trees on 1/(2 channels) of the buffer, each
// server's chain starting at its local rank c (the rank on NIC c). Without NCCL, and on servers
// of one rank, the trees are binary trees over the ranks.
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {

CollectiveShape tree_shape(const CollectiveSpec& spec, const ShapeContext& context) {
  using Op = CollectiveOp;
  const int n = static_cast<int>(spec.group.size());
  if (spec.op != Op::AllReduce)
    return {{"tree", TreePhase{{ranks_in_order(n, spec.root)}, false, spec.op == Op::Reduce, spec.op == Op::Broadcast, 1}, "done"}};
  const bool per_server = context.nccl && context.servers.size() < spec.group.size();
  if (!per_server && spec.channels <= 1) {
    std::vector<int> order = ranks_in_order(n);
    std::vector<int> reversed(order.rbegin(), order.rend());
    return {{"tree", TreePhase{{std::move(order), std::move(reversed)}, false, true, true, 2}, "done"}};
  }
  const int num_servers = static_cast<int>(context.servers.size());
  const std::vector<int> forward = ranks_in_order(num_servers);
  const std::vector<int> backward(forward.rbegin(), forward.rend());
  // One server: both "trees" would be the same chain; NCCL runs one.
  const int trees_per_channel = num_servers > 1 ? 2 : 1;
  TreePhase phase{{}, false, true, true, static_cast<double>(trees_per_channel * std::max(1, spec.channels))};
  for (int c = 0; c < std::max(1, spec.channels); ++c)
    for (int t = 0; t < trees_per_channel; ++t) {
      auto [order, parent] = servers_tree(context.servers, t == 0 ? forward : backward, c, /*star=*/false);
      phase.trees.push_back(std::move(order));
      phase.parents.push_back(std::move(parent));
    }
  return {{"tree", std::move(phase), "done"}};
}

}  // namespace

CollectiveAlgorithmInfo tree_algorithm() {
  using Op = CollectiveOp;
  return {{"tree", {}, "all-reduce by NCCL's double binary tree (across servers, chains inside, where NCCL runs); broadcast and reduce: one binary tree from the root", {}},
          {Op::AllReduce, Op::Broadcast, Op::Reduce},
          false,
          false,
          tree_shape};
}

}  // namespace placesim
