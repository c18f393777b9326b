#pragma once
// NEST: network-aware planning of pipeline, data and tensor parallelism and ZeRO (the NEST thesis,
// ../shared/papers/nest-thesis.txt, ch. 3; its artifact's device_placement.cpp for what the thesis
// leaves open), and the network-unaware baseline (Phaze's DP: the same recurrence, one bandwidth
// for every pair).
//
// Search, for every tensor-parallel width t of the workload (<= max_tp), ZeRO stage z (0 only
// with zero: false), replica count d, stage count S with t x EP x S x d <= GPUs and GPU order
// (and, for a model whose experts the plan spreads, each expert width ep <= max_ep dividing its
// experts and the d replicas: each expert layer's four all-to-alls among the ep replicas of a
// group join the stage's load, the experts' memory is 1/ep, their gradients are reduced among the
// d / ep replicas holding the same ones):
//  * the stages are contiguous layer ranges (NEST's layer graphs contain the chain of their layers,
//    so downsets are prefixes); by dynamic programming from the last stage to the first, as the
//    thesis does, f_s[i] = min over j of max(load_p(i, j), f_{s-1}[j]) for the stage [i, j) at
//    position p = S - s, subject to its memory (sim/plans/parallel_plan.h's stage_memory: parameters,
//    gradients, optimizer states under ZeRO z over d, and the activations of min(m/d, s)
//    micro-batches in flight under 1F1B, as the config's PlanAssumptions count them: Adam or
//    SGD, placesim's or NEST's memory model);
//  * load_p(i, j) = the layers' forward and backward times (in the config's compute_units, with a
//    recomputed forward on every stage but the last under recompute: nest) + their tensor-parallel all-reduces
//    when the workload gives them apart (ring, closed form among the stage's tensor ranks; NEST's
//    workloads have them inside the times) + the activation sent to the next stage and the
//    gradient sent back to the previous one, each bytes / t (Megatron's scatter-gather) over the
//    pair's bandwidth plus its latency;
//  * time per batch = max stage load x (ceil(m / d) + S - 1) + the data-parallel reduction of the
//    first stage's gradients among its d replicas (closed form of `gradient_algorithm`; ZeRO 3
//    adds the parameters' all-gather, half again), as NEST charges the first stage's; with
//    `reduction: per-layer`, one such collective per layer of the first stage, as the engines run
//    them (NestReduction);
//  * m = micro_batches, by default NEST's 4,096 / EP (its global batch of 4,096 sequences at
//    micro-batch 1).
// Network: the GPUs of a plan are laid out in NEST's order (thesis 3.9: tensor ranks innermost,
// then replicas, then stages) and in ParallelPlan's default (tensor ranks, then stages, then
// replicas: GPUs that send activations closest) -- both are searched by default, each exactly --
// and a pair's bandwidth and latency are the cluster's
// (Cluster::bandwidth, ::latency): the levels of the thesis (server, rack, pod) are what they are
// in the fabric. Every replica's copy of a stage is priced on its own GPUs and the slowest sets
// the stage's load (a replica straddling two servers is slower than one inside a server); the
// gradient reduction is the slowest of the first stage's tensor ranks' groups; a stage's memory
// is its smallest GPU's. nest-unaware prices every pair as the cluster's fastest (GPU 0 to its nearest
// neighbour), which is what the thesis calls flattening the network to one level.
// The (t, z, d, S) cases run in parallel (oneTBB). The answer is exact for this cost model: the
// tests compare it with brute force over every plan.
#include <algorithm>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "placement/framework/planner.h"
#include "sim/config/plan_options.h"
#include "sim/engines/estimate.h"

namespace placesim {

// The GPU orders nest searches: NEST's (tensor ranks, then replicas, then stages: thesis 3.9),
// ParallelPlan's default (tensor ranks, then stages, then replicas), or both.
enum class NestOrders { Both, TpDpPp, TpPpDp };
inline constexpr EnumName<NestOrders> kNestOrdersNames[] = {
    {NestOrders::Both, "both"}, {NestOrders::TpDpPp, "tp-dp-pp"}, {NestOrders::TpPpDp, "tp-pp-dp"}};

// NEST's space of plans, searched by nest and nest-unaware exactly and by mcmc-plan by sampling,
// and the assumptions its plans are priced under (PlanAssumptions: placesim's by default, NEST's
// DP's on request).
struct NestSpace : PlanAssumptions {
  int micro_batches = 0;  // per iteration over all replicas; 0: 4096 / the workload's expert-parallel width
  int max_tp = 8;         // widest tensor-parallel group explored (the workload must have it)
  bool zero = true;       // explore ZeRO stages 1-3 beside 0
  CollectiveAlgorithm gradient_algorithm = CollectiveAlgorithm::Ring;
  // Widest expert-parallel group explored for a model whose experts the plan spreads (the zoo's
  // Mixtral, built for ep 1): the widths dividing its experts, carved out of the replicas
  // (spread_expert_widths). NEST's workloads fix their own (Mixtral: 4).
  int max_ep = 8;
  NestReduction reduction = NestReduction::Stage;  // how the objective prices the gradient reduction
  bool operator==(const NestSpace&) const = default;
  // The micro-batches per iteration: micro_batches, or NEST's global batch of 4,096 sequences in
  // micro-batches of one sequence per GPU of an expert group.
  int total_micro_batches(int expert_parallel) const {
    return micro_batches > 0 ? micro_batches : std::max(1, 4096 / expert_parallel);
  }
};

// The options of NestSpace, declared once for every planner whose config derives from it.
template <class Config>
void add_nest_space_options(OptionSchema<Config>& s) {
  s.count("micro_batches", static_cast<int Config::*>(&NestSpace::micro_batches),
          "micro-batches per iteration over all replicas (0: NEST's 4096 / the workload's expert-parallel width)", 0,
          1 << 24, "64");
  s.count("max_tp", static_cast<int Config::*>(&NestSpace::max_tp), "widest tensor-parallel group explored", 1, 1 << 16,
          "1");
  s.flag("zero", static_cast<bool Config::*>(&NestSpace::zero), "explore ZeRO stages 1-3 beside 0");
  s.choice("gradient_algorithm", static_cast<CollectiveAlgorithm Config::*>(&NestSpace::gradient_algorithm),
           collective_algorithm_names(CollectiveOp::AllReduce),
           "the data-parallel reduction's algorithm, priced and simulated", "halving-doubling");
  s.count("max_ep", static_cast<int Config::*>(&NestSpace::max_ep),
          "widest expert-parallel group explored when the plan spreads the experts (a model built for ep 1)", 1, 1 << 16,
          "4");
  s.choice("reduction", static_cast<NestReduction Config::*>(&NestSpace::reduction),
           std::span<const EnumName<NestReduction>>(kNestReductionNames),
           "how the objective prices the gradient reduction: stage (NEST's: one collective of the first stage's gradients), "
           "per-layer (one per layer, as the engines run them, each paying the collective's latency) or overlapped (per "
           "layer, each from the end of its layer's last backward: only what outlasts the backward counts)",
           "per-layer");
  s.include(plan_assumptions_schema());
}

// 1, and the expert-parallel widths up to max_ep that divide every expert layer's experts when
// the model's experts are the plan's to spread (built for ep 1, with expert layers).
std::vector<int> spread_expert_widths(const LayerModel& model, int max_ep);

struct NestConfig : NestSpace {
  int threads = 0;        // oneTBB threads (0: all cores)
  NestOrders orders = NestOrders::Both;
  bool operator==(const NestConfig&) const = default;
};

// The plan of one point of NEST's space: tensor width tp, `replicas` pipelines (dp = replicas x
// the workload's expert width ep) of `stages` stages, ZeRO stage `zero`, ceil(m / replicas)
// micro-batches each for m = total_micro_batches, 1F1B, GPUs 0, 1, ... in `order`; the stage
// starts are left to the caller.
ParallelPlan nest_plan(int tp, int replicas, int stages, int zero, int expert_parallel, int total_micro_batches,
                       CollectiveAlgorithm gradient_algorithm, GpuOrder order, const PlanAssumptions& assumptions);

// Why some model of the workload the space searches (widths up to max_tp) cannot take its
// assumptions (assumptions_problem), or "".
std::string nest_assumptions_problem(const LayerWorkload& workload, const NestSpace& space);

// The estimate for reports: time_per_batch_s, max_stage_load_s, gradient_reduction_s,
// micro_batches_per_replica.
nlohmann::json estimate_json(const NestEstimate& e);

struct NestSearch {
  ParallelPlan plan;
  NestEstimate estimate;
  double dp_time_per_batch = 0;  // the DP's own value of the plan (equals estimate.time_per_batch)
  long cases = 0;     // (t, z, d, S, order) combinations searched
  std::string why_none;  // when no plan fits: the reason
};

// The best plan by NEST's estimate; why_none says why there is none. Throws std::runtime_error
// when the deadline passes.
NestSearch nest_search(const LayerWorkload& workload, const Cluster& cluster, const NestConfig& config, bool aware,
                       const Deadline& deadline = Deadline());

class Nest : public Planner {
 public:
  Nest(NestConfig config, bool aware): Planner(aware ? "nest" : "nest-unaware"), config_(config), aware_(aware) {}
  const NestConfig& config() const { return config_; }
  // Assumptions the workload cannot take (nest_assumptions_problem), said when the scenario is read.
  std::string options_problem(const LayerWorkload& workload, const Cluster&) const override {
    return nest_assumptions_problem(workload, config_);
  }

 private:
  // report: estimate (time_per_batch_s, max_stage_load_s, gradient_reduction_s), and for
  // nest-unaware the estimate of its plan on the real network too.
  PlanResult plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) override;
  NestConfig config_;
  bool aware_;
};

OptionSchema<NestConfig> nest_schema();
PlannerInfo nest_planner_info();
PlannerInfo nest_unaware_planner_info();

}  // namespace placesim
