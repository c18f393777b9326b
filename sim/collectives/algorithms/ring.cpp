// Ring: all-reduce as n - 1 steps of reduce-scatter then n - 1 of all-gather, each rank sending
// S / n to the next rank per step; reduce-scatter and all-gather one of the two. Broadcast and
// reduce: a pipelined chain from (to) the root. With channels (NCCL's), one ring per channel on
// 1/channels of the buffer, channel c's ring entering every server at its local rank c and
// leaving from the rank before it: one ring per NIC across servers (NCCL's rings on DGX).
#include "sim/collectives/algorithms.h"

namespace placesim {

// The ring of channel c: each server's ranks from its local rank c on, servers in order.
std::vector<int> channel_ring(const std::vector<std::vector<int>>& servers, int c) {
  std::vector<int> ring;
  for (const auto& ranks : servers) {
    const int m = static_cast<int>(ranks.size());
    for (int j = 0; j < m; ++j) ring.push_back(ranks[static_cast<std::size_t>((c + j) % m)]);
  }
  return ring;
}

namespace {
CollectiveShape ring_shape(const CollectiveSpec& spec, const ShapeContext& context) {
  using Op = CollectiveOp;
  const int n = static_cast<int>(spec.group.size());
  if (spec.op == Op::Broadcast || spec.op == Op::Reduce)
    return {{"chain", TreePhase{{ranks_in_order(n, spec.root)}, true, spec.op == Op::Reduce, spec.op == Op::Broadcast, 1}, "done"}};
  const int steps = spec.op == Op::AllReduce ? 2 * (n - 1) : n - 1;
  if (spec.channels <= 1) return {{"ring", RingPhase{{ranks_in_order(n)}, steps, static_cast<double>(n)}, "done"}};
  RingPhase rings{{}, steps, static_cast<double>(n) * spec.channels};
  for (int c = 0; c < spec.channels; ++c) rings.rings.push_back(channel_ring(context.servers, c));
  return {{"ring", std::move(rings), "done"}};
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
