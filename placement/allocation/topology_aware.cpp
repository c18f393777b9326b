// topology-aware: the fewest uplinks shared with the other jobs. A job that fits in one group
// takes the group that holds it with the fewest servers to spare (best fit: it loads no uplink
// there, and the large free groups stay whole for the jobs after it), one no other job uses
// first among equals; a larger job takes whole free groups, largest first, then the groups other
// jobs use. Its traffic then leaves as few groups as it can, through uplinks no other job loads.
#include <algorithm>

#include "placement/allocation/allocation.h"

namespace placesim {

namespace {

std::vector<int> pick_topology_aware(const AllocationContext& context, int servers) {
  const std::vector<std::vector<int>> by_group = free_servers_by_group(context);
  std::vector<bool> shared(by_group.size(), false);  // another job holds a server of the group
  for (std::size_t s = 0; s < context.owner.size(); ++s)
    if (context.owner[s] >= 0) shared[static_cast<std::size_t>(context.groups.group_of_server[s])] = true;
  std::vector<std::size_t> order;
  for (std::size_t g = 0; g < by_group.size(); ++g)
    if (!by_group[g].empty()) order.push_back(g);
  // Best fit among the groups that hold the job whole (a job inside one group loads no uplink,
  // whoever else is there): the fewest servers to spare, so the large free groups stay whole for
  // the jobs after it; unshared first among equals.
  std::size_t best = by_group.size();
  for (std::size_t g : order) {
    if (static_cast<int>(by_group[g].size()) < servers) continue;
    if (best == by_group.size() || std::pair(by_group[g].size(), shared[g]) < std::pair(by_group[best].size(), shared[best]))
      best = g;
  }
  if (best < by_group.size()) return {by_group[best].begin(), by_group[best].begin() + servers};
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(shared[a], -static_cast<long>(by_group[a].size())) < std::pair(shared[b], -static_cast<long>(by_group[b].size()));
  });
  std::vector<int> out;
  for (std::size_t g : order)
    for (int s : by_group[g])
      if (static_cast<int>(out.size()) < servers) out.push_back(s);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

AllocationPolicyInfo topology_aware_allocation() {
  AllocationPolicyInfo info;
  info.name = "topology-aware";
  info.description = "fewest uplinks shared with the other jobs: the leaf that holds the job with the fewest servers to spare, else whole free leaves";
  info.pick = [](const AllocationContext& context, int servers, int) { return pick_topology_aware(context, servers); };
  return info;
}

}  // namespace placesim
