// packed: the free servers in index order, so a job fills its servers' leaf (or scalable unit)
// before the next: the fewest groups, and the other jobs' next to it.
#include "placement/allocation/allocation.h"

namespace placesim {

AllocationPolicyInfo packed_allocation() {
  AllocationPolicyInfo info;
  info.name = "packed";
  info.description = "fill servers and leaves in order: the first free servers";
  info.pick = [](const AllocationContext& context, int servers, int) {
    std::vector<int> free = free_servers(context);
    free.resize(static_cast<std::size_t>(servers));
    return free;
  };
  return info;
}

}  // namespace placesim
