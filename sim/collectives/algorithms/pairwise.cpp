// Pairwise: all-to-all in n - 1 exchange phases; in phase k rank r sends S / n to rank (r + k) mod n.
#include <fmt/format.h>

#include "sim/collectives/algorithms.h"

namespace placesim {
namespace {
CollectiveShape pairwise_shape(const CollectiveSpec& spec, const ShapeContext&) {
  const int n = static_cast<int>(spec.group.size());
  CollectiveShape shape;
  for (int k = 1; k < n; ++k) {
    ExchangePhase phase{{}, static_cast<double>(n)};  // each message: bytes / n
    for (int r = 0; r < n; ++r) phase.messages.emplace_back(r, (r + k) % n);
    shape.push_back({fmt::format("pairwise.s{}", k), std::move(phase)});
  }
  return shape;
}
}  // namespace

CollectiveAlgorithmInfo pairwise_algorithm() {
  return {{"pairwise", {}, "all-to-all in n - 1 phases: in phase k rank r sends to rank r + k (mod n)", {}},
          {CollectiveOp::AllToAll}, /*power_of_two=*/false, /*levels=*/false, pairwise_shape};
}
}  // namespace placesim
