// NVLS-tree: all-reduce across servers whose NVSwitches reduce (NCCL's NVLS_TREE on H100
// clusters). The buffer is cut into one slice per GPU of a server; slice c is reduced inside each
// server by the switch onto the server's GPU c, all-reduced across the servers by a double binary
// tree of the GPUs c (through their own NICs), and multicast back by the switch, all pipelined in
// chunks. NCCL runs it with the Simple protocol only, and only on two servers or more.
//
// placesim's flows go GPU to GPU, so inside a server slice c is a star: every other GPU of the
// server sends its part up to GPU c and gets the result back down, on the tree's pipeline. A star
// moves 2 S (m - 1) / m through each GPU's NVLink each way (m GPUs per server), the switch
// S (1 + 1/m) (as NVLS, sim/collectives/algorithms/nvls.cpp): messages inside a server carry
// (m + 1) / (2 (m - 1)) of their share (TreePhase::in_server_scale), the switch's bytes on the
// same links. Across servers the trees are NCCL's: tree 0 over the servers in order, tree 1 over
// them reversed, both per slice on half of it.
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {

CollectiveShape nvls_tree_shape(const CollectiveSpec& spec, const ShapeContext& context) {
  std::vector<std::vector<int>> servers = context.servers;
  if (servers.empty())  // a uniform switch (uniform_collective_time): one rank per server
    for (int r = 0; r < static_cast<int>(spec.group.size()); ++r) servers.push_back({r});
  const int m = static_cast<int>(servers.front().size());  // collective_problem: the same in every server
  const std::vector<int> forward = ranks_in_order(static_cast<int>(servers.size()));
  const std::vector<int> backward(forward.rbegin(), forward.rend());
  TreePhase phase{{}, false, true, true, 2.0 * m};
  for (int c = 0; c < m; ++c)
    for (const auto* server_order : {&forward, &backward}) {
      auto [order, parent] = servers_tree(servers, *server_order, c, /*star=*/true);
      phase.trees.push_back(std::move(order));
      phase.parents.push_back(std::move(parent));
    }
  if (m > 1) phase.in_server_scale = (m + 1.0) / (2.0 * (m - 1));
  return {{"nvls-tree", std::move(phase), "done"}};
}

}  // namespace

CollectiveAlgorithmInfo nvls_tree_algorithm() {
  CollectiveAlgorithmInfo info{{"nvls-tree", {}, "NVLink SHARP inside each server, a double binary tree across them, one slice per GPU of a server (servers whose switches reduce: nvlink_sharp; two or more)", {}},
                               {CollectiveOp::AllReduce},
                               false,
                               false,
                               nvls_tree_shape};
  info.nvls = true;
  info.across_servers = true;
  return info;
}

}  // namespace placesim
