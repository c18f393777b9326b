#pragma once
// mcmc-plan: Metropolis search over parallel plans, a baseline for nest: TopoOpt's
// and FlexFlow's MCMC (the NEST thesis, 2.4: no optimality guarantee, dependent on its start and
// budget) carried over to NEST's space. The chain walks the space nest searches exactly,
// plus what nest fixes: which GPUs a plan runs on.
//
// State: tensor width t (one the workload has, <= max_tp), replicas d (NEST's pipelines; dp =
// d x the workload's expert width as built), for a model whose experts the plan spreads (the
// zoo's Mixtral, built for ep 1) the expert width ep, out of the d replicas (one of nest's
// spread_expert_widths up to max_ep, dividing d), stages S with their first layers, ZeRO stage z, and a
// permutation of the cluster's GPUs whose first t x S x dp entries are the plan's GPUs (in
// ParallelPlan's order). Micro-batches per replica: ceil(m / d), m as nest's (4,096 / EP by
// default), 1F1B.
// Cost: NEST's estimate of the plan on the real network (placement/planners/nest: nest_estimate, the
// function nest's DP minimises, so the two are compared on one objective). A plan that does not
// fit its GPUs' memory costs more, by memory_penalty per unit of overflow of its fullest GPU, so
// that the chain can cross it between plans that fit (the plans that fit are scattered: fewer
// replicas need more ZeRO or more stages); only plans that fit are returned. A plan whose gradient
// reduction cannot run is never entered.
// Moves, one drawn uniformly per step:
//  * boundary: a stage boundary one layer earlier or later;
//  * stages: split a stage in two at its compute midpoint, or merge two neighbours;
//  * replicas: d one expert group (ep replicas) more or less (what fits the cluster);
//  * width: the next narrower or wider tensor width (same stage boundaries);
//  * experts: the next narrower or wider expert width dividing d (experts spread or gathered);
//  * zero: another ZeRO stage (with d x EP > 1 and zero: true);
//  * swap: exchange a GPU of the plan with another GPU of the cluster;
//  * transpose: the plan's GPUs re-dealt from replica-major to stage-major order or back (what
//    turns ParallelPlan's default order into NEST's; many swaps otherwise).
// Accepted with probability min(1, exp(-beta x (cost' - cost) / cost)) (relative, as mcmc's).
// The start: experts as built (ep 1), the widest tensor width with the fewest balanced stages (balanced_stages) that fit
// when the cluster is filled with replicas, on GPUs 0, 1, ... (the cheapest of those when none
// fits); the best plan seen that fits is returned.
// Nothing here is exact: the report says so, with the start's and the best's estimates.
#include <cstdint>

#include "placement/planners/nest/nest.h"
#include "placement/framework/planner.h"

namespace placesim {

struct McmcPlanConfig : NestSpace {
  long steps = 20000;
  // On the relative change: a move 33% worse is accepted with probability 1/e. A step changes a
  // plan's estimate by tens of percent (a stage more, a replica less); on 12 random 6-layer
  // models on 8 GPUs, 20,000 steps reach nest's optimum 12 times at beta 3, 11 at 10 and 1 at
  // 30 (where the chain freezes in the first basin), with memory_penalty 2 (11 and 9 at 10).
  double beta = 3;
  std::uint64_t seed = 1;
  double memory_penalty = 2;  // cost x (1 + memory_penalty x (memory needed / held - 1)) when over
  bool operator==(const McmcPlanConfig&) const = default;
};

struct McmcPlanSearch {
  ParallelPlan plan;  // the best seen
  NestEstimate estimate, start_estimate;
  long steps = 0, accepted = 0, improvements = 0;
  // Per move (mcmc_plan_move_names order): proposals that made a plan, and those accepted.
  std::vector<long> proposed, taken;
  bool stopped_by_time = false;
};

std::span<const char* const> mcmc_plan_move_names();

// Throws InfeasibleProblem when the chain saw no plan that fits.
McmcPlanSearch mcmc_plan_search(const LayerWorkload& workload, const Cluster& cluster, const McmcPlanConfig& config,
                                const Deadline& deadline = Deadline());

class McmcPlan : public Planner {
 public:
  explicit McmcPlan(McmcPlanConfig config = {}) : Planner("mcmc-plan"), config_(config) {}
  // Assumptions the workload cannot take (nest_assumptions_problem), said when the scenario is read.
  std::string options_problem(const LayerWorkload& workload, const Cluster&) const override {
    return nest_assumptions_problem(workload, config_);
  }

 private:
  PlanResult plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) override;
  McmcPlanConfig config_;
};

OptionSchema<McmcPlanConfig> mcmc_plan_schema();
PlannerInfo mcmc_plan_planner_info();

}  // namespace placesim
