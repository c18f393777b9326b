// Halving-doubling: reduce-scatter by recursive halving (step i: the partner at distance n / 2^i,
// S / 2^i each way), all-gather by recursive doubling, all-reduce both (Rabenseifner); n a power
// of two.
#include <bit>
#include <cmath>
#include <fmt/format.h>

#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape halving_doubling_shape(const CollectiveSpec& spec, const ShapeContext&) {
  const int n = static_cast<int>(spec.group.size());
  const int log_n = static_cast<int>(std::bit_width(static_cast<unsigned>(n))) - 1;
  CollectiveShape shape;
  auto exchange = [&](int distance, double divisor) {
    ExchangePhase step{{}, divisor};
    for (int r = 0; r < n; ++r) step.messages.emplace_back(r, r ^ distance);
    shape.push_back({fmt::format("hd.s{}", shape.size() + 1), std::move(step)});
  };
  if (spec.op != CollectiveOp::AllGather)
    for (int i = 1; i <= log_n; ++i) exchange(n >> i, std::ldexp(1.0, i));
  if (spec.op != CollectiveOp::ReduceScatter)  // S 2^(i-1) / n
    for (int i = 1; i <= log_n; ++i) exchange(1 << (i - 1), n / std::ldexp(1.0, i - 1));
  return shape;
}
}  // namespace

CollectiveAlgorithmInfo halving_doubling_algorithm() {
  using Op = CollectiveOp;
  return {{"halving-doubling", {}, "recursive halving (reduce-scatter) and doubling (all-gather); a power-of-two group", {}},
          {Op::AllReduce, Op::ReduceScatter, Op::AllGather},
          true,
          false,
          halving_doubling_shape};
}

}  // namespace placesim
