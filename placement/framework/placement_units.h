#pragma once
// What a local search moves: a whole colocation class (its members must share a GPU), or a lone
// operator. MCMC (placement/strategies/mcmc) proposes them one at a time; `refine:` (placement/stages/refine) moves
// and swaps them.
//
// A unit with no compute and no tensor to or from another unit cannot change the latency (its
// operators run in zero time at the lowest priority, and nothing waits on them across GPUs), so it
// is left out of both proposable lists.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

struct PlacementUnits {
  // Unit k's operators are members[member_offsets[k] .. member_offsets[k + 1]): the colocation
  // classes first (unit k is class k), then the lone operators in id order.
  std::vector<std::int32_t> member_offsets{0};
  std::vector<OpId> members;
  // The operators at the other end of unit k's tensors that belong to another unit, one entry per
  // such tensor (the GPUs a move towards a neighbour chooses from).
  std::vector<std::int32_t> neighbour_offsets{0};
  std::vector<OpId> neighbours;
  std::vector<double> memory;  // bytes of each unit's operators
  // The proposable units: those that compute, and those that only pass tensors between units.
  std::vector<std::int32_t> computing, zero_compute;

  std::int32_t count() const { return static_cast<std::int32_t>(memory.size()); }
  std::span<const OpId> members_of(std::int32_t unit) const {
    return {members.data() + member_offsets[unit], members.data() + member_offsets[unit + 1]};
  }
  std::span<const OpId> neighbours_of(std::int32_t unit) const {
    return {neighbours.data() + neighbour_offsets[unit], neighbours.data() + neighbour_offsets[unit + 1]};
  }
};

PlacementUnits build_placement_units(const Graph& graph);

}  // namespace placesim
