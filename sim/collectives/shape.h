#pragma once
// A collective algorithm as data: the phases it runs over the ranks of its group, each of one of
// three shapes. Every algorithm is described once (sim/collectives/algorithms/), and every view
// of a collective is computed from that description by shape, never by algorithm:
//
//   the message graph   append_collective (sim/collectives/message_graph.cpp)
//   the lockstep steps  collective_steps (sim/collectives/collective_steps.cpp)
//   the closed form     collective_closed_form, collective_affine_form, uniform_collective_time
//                       (sim/collectives/closed_form.cpp)
//
// The shapes:
//   ring      each ring's ranks pass a piece to their successor, `steps` times; chunk k of a step
//             waits for chunk k of the step before only (pipelined). The phase ends per rank.
//   tree      trees (run at once, each on its own channel) reduce toward the root (`up`) and/or
//             broadcast from it (`down`), chunk by chunk: a chunk travels on before the next has
//             arrived. Binary heap-ordered trees, or chains (`chain`: the parent of position i is
//             i - 1).
//   exchange  every pair sends its message at once; the phase ends for a rank when every chunk of
//             every message to it has arrived.
//
// Sizes: a phase's pieces are a share of the collective's buffer `bytes`, kept as a divisor
// (bytes / divisor) so that the views compute S / n in one rounding, as the formulas write it.
#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace placesim {

struct RingPhase {
  std::vector<std::vector<int>> rings;  // ranks in ring order; rings of one rank send nothing
  int steps = 0;
  double divisor = 1;  // each step's piece: bytes / divisor
};

struct TreePhase {
  std::vector<std::vector<int>> trees;  // ranks in tree order, [0] the root; all of one size
  bool chain = false;                   // parent of position i: i - 1; else (i - 1) / 2
  bool up = true, down = true;          // reduce to the root, then broadcast from it
  double divisor = 1;                   // each tree's share: bytes / divisor
  // When not empty, per tree the parent of each position (parents[t][0] unused; a parent's
  // position is below its child's): NCCL's trees, chains inside servers under a double binary
  // tree across them. Overrides `chain`.
  std::vector<std::vector<int>> parents = {};
  // Bytes of a message between two GPUs of one server, per byte of the tree's share: NVLS-tree's
  // stars stand for the NVSwitch's reduction and multicast, which move fewer bytes than a copy
  // to each GPU (sim/collectives/algorithms/nvls_tree.cpp). 1 for every other tree.
  double in_server_scale = 1;
};

struct ExchangePhase {
  std::vector<std::pair<int, int>> messages;  // (from, to) ranks, all at once
  double divisor = 1;                         // each message: bytes / divisor
};

struct CollectivePhase {
  std::string name;  // in operator names and the step view, e.g. "ring", "hd.s2", "l1-ar"
  std::variant<RingPhase, TreePhase, ExchangePhase> shape;
  // Ring and tree phases: the name of each rank's operator at which the phase ends ("" for
  // name + ".done"); an algorithm of one phase names it "done".
  std::string end = "";
  std::string end_name() const { return end.empty() ? name + ".done" : end; }
};

using CollectiveShape = std::vector<CollectivePhase>;

// The parent of position i (i >= 1) of tree t.
inline int tree_parent(const TreePhase& tree, std::size_t t, int i) {
  if (!tree.parents.empty()) return tree.parents[t][static_cast<std::size_t>(i)];
  return tree.chain ? i - 1 : (i - 1) / 2;
}

// The most hops from the root to a position, over the phase's trees.
inline int tree_depth(const TreePhase& tree) {
  int deepest = 0;
  for (std::size_t t = 0; t < tree.trees.size(); ++t) {
    std::vector<int> depth(tree.trees[t].size(), 0);
    for (int i = 1; i < static_cast<int>(depth.size()); ++i)
      deepest = std::max(deepest, depth[static_cast<std::size_t>(i)] = depth[static_cast<std::size_t>(tree_parent(tree, t, i))] + 1);
  }
  return deepest;
}

// The pairs (from, to) a chunk crosses from the deepest leaf of the phase's deepest tree up to
// the root (when `up`) and back down to it (when `down`): a pipeline's fill.
inline std::vector<std::pair<int, int>> tree_fill_path(const TreePhase& tree) {
  std::size_t best_tree = 0;
  int best = 0, deepest = 0;
  for (std::size_t t = 0; t < tree.trees.size(); ++t) {
    std::vector<int> depth(tree.trees[t].size(), 0);
    for (int i = 1; i < static_cast<int>(depth.size()); ++i) {
      depth[static_cast<std::size_t>(i)] = depth[static_cast<std::size_t>(tree_parent(tree, t, i))] + 1;
      if (depth[static_cast<std::size_t>(i)] > deepest) deepest = depth[static_cast<std::size_t>(i)], best = i, best_tree = t;
    }
  }
  const auto& order = tree.trees[best_tree];
  std::vector<std::pair<int, int>> up;
  for (int i = best; i > 0; i = tree_parent(tree, best_tree, i))
    up.emplace_back(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(tree_parent(tree, best_tree, i))]);
  std::vector<std::pair<int, int>> out;
  if (tree.up) out = up;
  if (tree.down)
    for (auto it = up.rbegin(); it != up.rend(); ++it) out.emplace_back(it->second, it->first);
  return out;
}

// Calls visit(from, to) for every ordered pair of ranks the phase sends between: the pairs whose
// latency and bandwidth price it.
template <class Visit>
void for_each_pair(const CollectivePhase& phase, const Visit& visit) {
  if (const auto* ring = std::get_if<RingPhase>(&phase.shape)) {
    for (const auto& order : ring->rings)
      if (order.size() > 1)
        for (std::size_t j = 0; j < order.size(); ++j) visit(order[j], order[(j + 1) % order.size()]);
  } else if (const auto* tree = std::get_if<TreePhase>(&phase.shape)) {
    for (std::size_t t = 0; t < tree->trees.size(); ++t)
      for (int i = 1; i < static_cast<int>(tree->trees[t].size()); ++i) {
        const auto& order = tree->trees[t];
        const int child = order[static_cast<std::size_t>(i)];
        const int parent = order[static_cast<std::size_t>(tree_parent(*tree, t, i))];
        if (tree->up) visit(child, parent);
        if (tree->down) visit(parent, child);
      }
  } else {
    for (const auto& [from, to] : std::get<ExchangePhase>(phase.shape).messages) visit(from, to);
  }
}

}  // namespace placesim
