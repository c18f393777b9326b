#pragma once
// QuickP thesis P3 (sections 3.5 and 4.3): joint placement and per-destination bandwidth
// allocation on the multi-NIC cluster (topologies/multi_nic.h). The multi-NIC configuration comes
// from the cluster's recipe (multi_nic_config_of), and the runner measures a result on the cluster
// rebuilt with its allocation (with_bandwidth_allocation, topologies/registry.h).
//
// The thesis's P3 has the transfer time t_ij / b(s,t) with b a decision variable; with the
// placement binaries that is not linear. We solve it exactly by alternation instead:
//  1. place with P2 on the current cluster (first: the cluster as given);
//  2. fix that placement and the evaluator's per-GPU order and choose the allocation minimising
//     the makespan: with u_st = B / b(s,t) every transfer time is linear in u, and the NIC budget
//     sum_t b(s,t) <= B becomes sum_t 1 / u_st <= 1, a convex constraint, enforced by tangent cuts
//     (Kelley's cutting planes) on CLP until it holds within 1e-6; the result is then scaled into
//     the budget exactly (any slack left is handed out in proportion);
//  3. rebuild the cluster with make_multi_nic(config, allocation) and re-place;
// keeping a candidate only when the evaluator's latency drops, so the result is never worse than
// the cluster as given (with the uniform allocation: never worse than uniform). The alternation
// runs from two starts: the cluster as given, and (3+ servers) servers in pairs, each giving its
// partner all its egress but the floors -- a placement that avoids Ethernet altogether leaves
// the allocation nothing to improve, and this start shows P2 one fast server pair.
// Server pairs without traffic keep a floor rate (a fraction of the uniform share), so every pair
// stays reachable and later placements may still use it.
#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/engines/cost_model.h"
#include "sim/core/graph.h"
#include "topologies/multi_nic.h"

namespace placesim {

// b(s,t) of a multi-NIC cluster as its pairwise view sees it (the bandwidth of the first GPU pair).
BandwidthAllocation allocation_of(const Cluster& cluster);

struct AllocationOptions {
  double floor_fraction = 0.05;  // rate kept by a pair without traffic: this times B / (servers - 1)
  int max_cuts_rounds = 200;
  // The latency a new allocation (or re-placement) must lower to be accepted: QuickP's
  // `cost_model` (list: the evaluator, the thesis's; flow: under contention, as SimGrid measures).
  CostModelKind acceptance = CostModelKind::List;
  // The allocation LP stops here (the strategy's deadline); P3 then proposes no new allocation.
  std::chrono::steady_clock::time_point stop = std::chrono::steady_clock::time_point::max();
};

struct AllocationResult {
  BandwidthAllocation allocation;
  double lp_makespan = 0;  // seconds: the LP's makespan of the fixed order (before scaling)
  int cut_rounds = 0;
  bool stopped_at_deadline = false;  // the LP did not finish: `allocation` is the uniform one
};

// Step 2: the best allocation for a fixed placement and per-GPU order on `config`'s cluster.
AllocationResult allocate_bandwidth(const Graph& g, const Cluster& cluster, const MultiNicConfig& config,
                                    const std::vector<DeviceId>& placement,
                                    const std::vector<std::vector<OpId>>& device_order,
                                    const AllocationOptions& options = {});

struct P3Result {
  std::vector<DeviceId> placement;
  BandwidthAllocation allocation;
  double latency = 0;          // evaluator latency on make_multi_nic(config, allocation)
  double initial_latency = 0;  // evaluator latency of the first placement on the cluster as given
  int rounds = 0;              // alternations tried (both starts)
  int accepted = 0;            // of which improved the latency
};

// Steps 1-3, at most max_rounds alternations. `place` places the graph on a cluster (P2). When
// `out_of_time` says so, no further placement or allocation is started: the best so far returns.
P3Result solve_p3(const Graph& g, const Cluster& cluster, const MultiNicConfig& config,
                  const std::function<std::vector<DeviceId>(const Cluster&)>& place, int max_rounds = 4,
                  const AllocationOptions& options = {}, const std::function<bool()>& out_of_time = {});

}  // namespace placesim
