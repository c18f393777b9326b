#include "placement/framework/placement_units.h"

namespace placesim {

PlacementUnits build_placement_units(const Graph& graph) {
  const auto n = static_cast<OpId>(graph.num_operators());
  const std::int32_t classes = graph.num_colocation_classes();
  std::vector<std::int32_t> unit_of(n);
  std::int32_t units = classes;
  for (OpId i = 0; i < n; ++i) {
    const int cls = graph.op(i).colocation_class;
    unit_of[i] = cls >= 0 ? cls : units++;
  }

  PlacementUnits u;
  u.member_offsets.assign(static_cast<std::size_t>(units) + 1, 0);
  for (OpId i = 0; i < n; ++i) ++u.member_offsets[unit_of[i] + 1];
  for (std::int32_t k = 0; k < units; ++k) u.member_offsets[k + 1] += u.member_offsets[k];
  u.members.resize(n);
  std::vector<std::int32_t> next_slot(u.member_offsets.begin(), u.member_offsets.end() - 1);
  for (OpId i = 0; i < n; ++i) u.members[next_slot[unit_of[i]]++] = i;

  u.memory.assign(units, 0.0);
  u.neighbour_offsets.reserve(static_cast<std::size_t>(units) + 1);
  for (std::int32_t k = 0; k < units; ++k) {
    bool computes = false;
    for (OpId i : u.members_of(k)) {
      u.memory[k] += graph.op(i).memory_bytes;
      computes = computes || graph.op(i).compute_s > 0;
      for (EdgeId e : graph.out_edges(i))
        if (const OpId other = graph.tensor(e).dst; unit_of[other] != k) u.neighbours.push_back(other);
      for (EdgeId e : graph.in_edges(i))
        if (const OpId other = graph.tensor(e).src; unit_of[other] != k) u.neighbours.push_back(other);
    }
    const bool talks = static_cast<std::int32_t>(u.neighbours.size()) > u.neighbour_offsets.back();
    u.neighbour_offsets.push_back(static_cast<std::int32_t>(u.neighbours.size()));
    if (computes) u.computing.push_back(k);
    else if (talks) u.zero_compute.push_back(k);
  }
  return u;
}

}  // namespace placesim
