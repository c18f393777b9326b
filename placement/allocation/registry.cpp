// The allocation policies: one line each. A new policy is a file in this folder plus a line here.
#include "placement/allocation/allocation.h"

namespace placesim {

const Registry<AllocationPolicyInfo>& allocation_registry() {
  static const Registry<AllocationPolicyInfo> registry("allocation policy", {
      packed_allocation(),
      spread_allocation(),
      random_allocation(),
      topology_aware_allocation(),
  });
  return registry;
}

}  // namespace placesim
