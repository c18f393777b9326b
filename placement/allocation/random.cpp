// random: free servers drawn uniformly (seeded), as a busy cluster's scheduler hands out whatever
// is free.
#include <algorithm>
#include <random>

#include "placement/allocation/allocation.h"

namespace placesim {

AllocationPolicyInfo random_allocation() {
  AllocationPolicyInfo info;
  info.name = "random";
  info.description = "free servers drawn at random (seed: the allocation's `seed`, default 1)";
  info.options = {{"seed", "count", "the random draw's seed", "1", {}, "7"}};
  info.pick = [](const AllocationContext& context, int servers, int job) {
    std::vector<int> free = free_servers(context);
    // Each job its own stream, so adding a job after it changes no earlier job's servers.
    std::mt19937_64 rng(context.seed * 1'000'003ULL + static_cast<std::uint64_t>(job));
    std::shuffle(free.begin(), free.end(), rng);
    free.resize(static_cast<std::size_t>(servers));
    std::sort(free.begin(), free.end());
    return free;
  };
  return info;
}

}  // namespace placesim
