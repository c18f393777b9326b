// Direct: every rank sends its share (S / n) to every other rank at once; all-reduce twice (a
// direct reduce-scatter, then a direct all-gather). The only all-to-all.
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape direct_shape(const CollectiveSpec& spec, const ShapeContext&) {
  const int n = static_cast<int>(spec.group.size());
  ExchangePhase all{{}, static_cast<double>(n)};
  all.messages.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      if (q != r) all.messages.emplace_back(r, q);
  if (spec.op != CollectiveOp::AllReduce) return {{"direct.p1", std::move(all)}};
  return {{"direct.p1", all}, {"direct.p2", all}};
}
}  // namespace

CollectiveAlgorithmInfo direct_algorithm() {
  using Op = CollectiveOp;
  return {{"direct", {}, "every rank sends its share to every other rank at once (one step per phase)", {}},
          {Op::AllReduce, Op::ReduceScatter, Op::AllGather, Op::AllToAll},
          false,
          false,
          direct_shape};
}

}  // namespace placesim
