// Tree: all-reduce by NCCL's double binary tree, two heap-ordered binary trees over the ranks in
// order and in reverse, each reducing half of the buffer to its root and broadcasting it back,
// chunk by chunk. Broadcast and reduce: one binary tree rooted at the root.
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape tree_shape(const CollectiveSpec& spec, const CollectiveLevels&) {
  using Op = CollectiveOp;
  const int n = static_cast<int>(spec.group.size());
  if (spec.op != Op::AllReduce)
    return {{"tree", TreePhase{{ranks_in_order(n, spec.root)}, false, spec.op == Op::Reduce, spec.op == Op::Broadcast, 1}, "done"}};
  std::vector<int> order = ranks_in_order(n);
  std::vector<int> reversed(order.rbegin(), order.rend());
  return {{"tree", TreePhase{{std::move(order), std::move(reversed)}, false, true, true, 2}, "done"}};
}
}  // namespace

CollectiveAlgorithmInfo tree_algorithm() {
  using Op = CollectiveOp;
  return {{"tree", {}, "all-reduce by NCCL's double binary tree; broadcast and reduce: one binary tree from the root", {}},
          {Op::AllReduce, Op::Broadcast, Op::Reduce},
          false,
          false,
          tree_shape};
}

}  // namespace placesim
