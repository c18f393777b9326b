#pragma once
// A folded execution graph: the operators of one representative copy of work that many copies
// run alike, on GPUs in equivalent places -- a plan's data-parallel replicas (a block of them:
// whole context and expert groups, whole servers), a collective's servers. The graph stands for
// all `copies` of itself: copy j runs each operator of GPU g on member(g, j) at the same times,
// and each transfer from GPU a to GPU b stands for the transfers from member(a, j) to
// member(b, j), every one of which shares its links with the others (sim/engines/folded_network.h
// gives them their share). A transfer into another copy goes to its representative's operator
// with Tensor::route_to naming the GPU its bytes really go to (copy 0's).
//
// The copies are the powers of one shift of the GPUs (member(member(g, 1), 1) = member(g, 2)):
// copy j of the GPU standing at copy k of representative i is member i's copy (k + j) mod copies.
// Cost grows with the representative: a plan of 16,384 GPUs in 128 replicas folds to one replica.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

struct Folding {
  int copies = 1;                          // how many copies the graph stands for, >= 2
  std::vector<DeviceId> representatives;   // the GPUs the graph's operators run on
  // members[i * copies + j]: the GPU of copy j of representatives[i] (copy 0: itself).
  std::vector<DeviceId> members;
  // Per GPU of the cluster: i * copies + k where the GPU is copy k of representative i; -1 in none.
  std::vector<std::int32_t> slot;
  // What was folded, for reports: "128 data-parallel replicas as 8 copies of a block of 16".
  std::string description;

  // The GPU standing j copies on from `gpu` (gpu must be in some copy).
  DeviceId copy_of(DeviceId gpu, int j) const {
    const std::int32_t s = slot[static_cast<std::size_t>(gpu)];
    const int i = s / copies, k = s % copies;
    return members[static_cast<std::size_t>(i) * copies + (k + j) % copies];
  }
  bool covers(DeviceId gpu) const { return gpu >= 0 && gpu < static_cast<DeviceId>(slot.size()) && slot[gpu] >= 0; }
};

// The folding of `representatives` into `copies` copies, copy j of representative i on
// member(i, j) (member(i, 0) must be representatives[i]), on a cluster of `num_devices` GPUs.
// Throws std::invalid_argument when a GPU stands in two places or is out of range.
Folding make_folding(int copies, std::vector<DeviceId> representatives, const std::function<DeviceId(int, int)>& member,
                     int num_devices, std::string description);

}  // namespace placesim
