#pragma once
// First-come-first-served per-GPU order: each GPU, whenever it is idle, runs the operator whose
// inputs arrived first (ties: the lower operator id), instead of the evaluator's highest-rank
// ready operator. Transfers follow the evaluator's model (latency + bytes / bandwidth of the pair,
// no contention, overlapping computation), so replay_order(order) gives the FCFS schedule.
// SimGrid applies the same rule to its own, contended, arrival times (GpuQueue::Fcfs).
#include <span>
#include <vector>

#include "sim/cluster.h"
#include "sim/evaluator.h"
#include "sim/graph.h"

namespace placesim {

// Per GPU, the operators in the order FCFS runs them.
std::vector<std::vector<OpId>> fcfs_device_order(const Graph& graph, const Cluster& cluster,
                                                 std::span<const DeviceId> placement);

// The FCFS schedule: replay_order of fcfs_device_order.
Schedule fcfs_schedule(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement);

}  // namespace placesim
