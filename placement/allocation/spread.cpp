// spread: one server of each group in turn (round-robin over leaves), as a scheduler that
// balances load over the switches would: a job's traffic crosses every group's uplinks.
#include "placement/allocation/allocation.h"

namespace placesim {

AllocationPolicyInfo spread_allocation() {
  AllocationPolicyInfo info;
  info.name = "spread";
  info.description = "round-robin over leaves: one free server of each leaf (server group) in turn";
  info.pick = [](const AllocationContext& context, int servers, int) {
    const std::vector<std::vector<int>> by_group = free_servers_by_group(context);
    std::vector<int> out;
    for (std::size_t round = 0; static_cast<int>(out.size()) < servers; ++round)
      for (const std::vector<int>& group : by_group)
        if (round < group.size() && static_cast<int>(out.size()) < servers) out.push_back(group[round]);
    return out;
  };
  return info;
}

}  // namespace placesim
