// Hierarchical and multi-level all-reduce, over the levels of collective_levels: a ring
// reduce-scatter at each level from the server up (each on the buffer over the ranks of its level
// and those below), a ring all-reduce at the top, ring all-gathers back down. Hierarchical has two
// levels (inside each server; across servers among the GPUs of equal local rank), multi-level one
// per tier of the fabric (BlueConnect, Cho et al. 2019).
#include <fmt/format.h>

#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape over_levels_shape(const CollectiveSpec&, const ShapeContext& context) {
  const CollectiveLevels& levels = context.levels;
  const std::size_t top = levels.size() - 1;
  std::vector<double> divisor(levels.size());
  double below = 1;
  for (std::size_t i = 0; i < levels.size(); ++i) divisor[i] = below *= static_cast<double>(levels[i].front().size());
  auto ring_steps = [&](std::size_t i) { return static_cast<int>(levels[i].front().size()) - 1; };
  CollectiveShape shape;
  // A level of one-rank rings (servers of one GPU of the group) sends nothing: no phase.
  auto add = [&](std::size_t i, const char* what, int steps) {
    if (steps > 0) shape.push_back({fmt::format("l{}-{}", i, what), RingPhase{levels[i], steps, divisor[i]}});
  };
  for (std::size_t i = 0; i < top; ++i) add(i, "rs", ring_steps(i));
  add(top, "ar", 2 * ring_steps(top));
  for (std::size_t i = top; i-- > 0;) add(i, "ag", ring_steps(i));
  return shape;
}
}  // namespace

CollectiveAlgorithmInfo hierarchical_algorithm() {
  return {{"hierarchical", {}, "ring reduce-scatter inside each server, ring all-reduce across servers, ring all-gather inside", {}},
          {CollectiveOp::AllReduce},
          false,
          true,
          over_levels_shape};
}

CollectiveAlgorithmInfo multi_level_algorithm() {
  return {{"multi-level", {}, "hierarchical over every tier of the fabric (BlueConnect): rings per tier, servers up to the top", {}},
          {CollectiveOp::AllReduce},
          false,
          true,
          over_levels_shape};
}

}  // namespace placesim
