#include "sim/core/folding.h"

#include <fmt/format.h>
#include <stdexcept>

namespace placesim {

Folding make_folding(int copies, std::vector<DeviceId> representatives, const std::function<DeviceId(int, int)>& member,
                     int num_devices, std::string description) {
  if (copies < 2) throw std::invalid_argument(fmt::format("a folding needs at least 2 copies, got {}", copies));
  Folding f;
  f.copies = copies;
  f.representatives = std::move(representatives);
  f.description = std::move(description);
  const auto reps = static_cast<int>(f.representatives.size());
  f.members.resize(static_cast<std::size_t>(reps) * copies);
  f.slot.assign(static_cast<std::size_t>(num_devices), -1);
  for (int i = 0; i < reps; ++i)
    for (int j = 0; j < copies; ++j) {
      const DeviceId g = member(i, j);
      if (j == 0 && g != f.representatives[i])
        throw std::invalid_argument(fmt::format("folding: copy 0 of representative {} is GPU {}, not itself", i, g));
      if (g < 0 || g >= num_devices)
        throw std::invalid_argument(fmt::format("folding: GPU {} is not in the cluster of {} GPUs", g, num_devices));
      if (f.slot[g] >= 0) throw std::invalid_argument(fmt::format("folding: GPU {} stands in two copies", g));
      f.slot[g] = i * copies + j;
      f.members[static_cast<std::size_t>(i) * copies + j] = g;
    }
  return f;
}

}  // namespace placesim
