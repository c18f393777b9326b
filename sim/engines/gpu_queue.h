#pragma once
// How a GPU picks the next of its operators: one enum for every engine (sim/engines/engine.h says
// which engine takes which).
#include "sim/core/names.h"

namespace placesim {

enum class GpuQueue {
  // The ready operator of highest computation rank (own time plus the largest rank among its
  // successors; ties: earlier in topological order): the list schedule of QuickP and HeteroG.
  Rank,
  // First come, first served: the operator whose last input arrived first (ties: the lower id),
  // on the engine's own arrival times (under contention in the flow engine and SimGrid).
  Fcfs,
  // A given per-GPU order (another engine's schedule, replayed).
  Fixed,
};
inline constexpr EnumName<GpuQueue> kGpuQueueNames[] = {
    {GpuQueue::Rank, "rank"}, {GpuQueue::Fcfs, "fcfs"}, {GpuQueue::Fixed, "fixed"}};

}  // namespace placesim
