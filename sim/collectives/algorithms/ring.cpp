// Ring: all-reduce as n - 1 steps of reduce-scatter then n - 1 of all-gather, each rank sending
// S / n to the next rank per step; reduce-scatter and all-gather one of the two. Broadcast and
// reduce: a pipelined chain from (to) the root.
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape ring_shape(const CollectiveSpec& spec, const CollectiveLevels&) {
  using Op = CollectiveOp;
  const int n = static_cast<int>(spec.group.size());
  if (spec.op == Op::Broadcast || spec.op == Op::Reduce)
    return {{"chain", TreePhase{{ranks_in_order(n, spec.root)}, true, spec.op == Op::Reduce, spec.op == Op::Broadcast, 1}, "done"}};
  return {{"ring", RingPhase{{ranks_in_order(n)}, spec.op == Op::AllReduce ? 2 * (n - 1) : n - 1, static_cast<double>(n)}, "done"}};
}
}  // namespace

CollectiveAlgorithmInfo ring_algorithm() {
  using Op = CollectiveOp;
  return {{"ring", {}, "n - 1 steps to the next rank per phase (all-reduce: reduce-scatter then all-gather); broadcast and reduce: a pipelined chain", {}},
          {Op::AllReduce, Op::ReduceScatter, Op::AllGather, Op::Broadcast, Op::Reduce},
          false,
          false,
          ring_shape};
}

}  // namespace placesim
