#pragma once
// The analytical engine: NEST's estimate of a compiled plan's time per iteration (the NEST thesis,
// ../shared/papers/nest-thesis.txt, ch. 3), priced on the cluster's pairwise view with the
// collectives' closed forms. It schedules nothing: the time per batch is the slowest pipeline
// rank's load (its layers' forward and backward, tensor-parallel all-reduces, expert all-to-alls,
// the activations sent to the neighbouring stages) times (micro-batches + (pp - 1) / v), plus the
// first stage's gradient reduction. The plan's assumptions (ParallelPlan::assumptions) say the
// units of the layers' times (compute_units), whether a stage is charged a recomputed forward
// (recompute) and how its memory is counted; nest_baseline_pricing prices it as NEST's code
// prices its manual baseline. The nest planners (placement/planners/nest) minimise it; as
// the `estimate` engine it prices any plan beside the engines that run it.
#include <cstdint>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/collectives/collectives.h"
#include "sim/core/cluster.h"
#include "sim/core/names.h"
#include "sim/engines/engine.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

// How the estimate prices the data-parallel gradient reduction. stage: NEST's, one collective of
// the first stage's gradients (it ends its backward last). per-layer: one collective per layer of
// the first stage (its dense and its spread experts' gradients apart), as the engines compile
// them (sim/plans/parallel_plan.h), so that each pays the collective's latency: on hundreds of replicas
// a ring's 2(n - 1) steps of path latency per layer, which `stage` counts once
// (docs/reproduction.md, nest-experiment1-contention).
// overlapped: per layer as the engines queue them, each starting when the last micro-batch's
// backward of its layer is done (the backward runs from the stage's last layer down, so the
// layers' collectives run top layer first), so only what outlasts the stage's backward counts:
// max over layers l of (the collectives of layers 0 .. l, which run from l's readiness on) less
// (the backward of the layers below l). With ZeRO the reduce-scatters (half an all-reduce) queue
// so and one all-gather per layer follows (ZeRO 1 and 2's, after the last reduce-scatter); ZeRO
// 3's gathers before the next forward and the backward, which the engines prefetch, are not
// charged (an approximation: NEST's stage pricing charges them as half again).
enum class NestReduction { Stage, PerLayer, Overlapped };
inline constexpr EnumName<NestReduction> kNestReductionNames[] = {
    {NestReduction::Stage, "stage"}, {NestReduction::PerLayer, "per-layer"}, {NestReduction::Overlapped, "overlapped"}};

// NEST's estimate of one plan's time per iteration, with its parts (seconds).
struct NestEstimate {
  double time_per_batch = 0;
  double max_stage_load = 0;
  double gradient_reduction = 0;
  int micro_batches_per_replica = 0;
  bool fits = true;
  double memory_ratio = 0;  // the largest of the plan's GPUs' memory needed / memory held (fits: <= 1)
};

// Reductions already priced (NestNetwork::reduction is a pure function of its arguments): a
// search pricing thousands of plans prices each group and size once. Shared by threads.
struct NestReductionMemo {
  using Key = std::tuple<std::vector<DeviceId>, double, CollectiveAlgorithm, int>;
  struct Hash {
    static std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
      return x ^ (x >> 31);
    }
    std::size_t operator()(const Key& k) const {
      std::uint64_t h = mix(std::hash<double>{}(std::get<1>(k)) + (static_cast<std::uint64_t>(std::get<2>(k)) << 40) +
                            (static_cast<std::uint64_t>(std::get<3>(k)) << 56));
      for (DeviceId d : std::get<0>(k)) h = mix(h + static_cast<std::uint64_t>(d) + 0x9e3779b97f4a7c15ULL);
      return h;
    }
  };
  std::mutex mutex;
  std::unordered_map<Key, double, Hash> priced;
};

// How the planner prices the network.
struct NestNetwork {
  const Cluster* cluster = nullptr;
  bool flat = false;                 // every pair priced as the fastest (nest-unaware)
  double flat_bandwidth = 0, flat_latency = 0;
  std::shared_ptr<NestReductionMemo> memo;  // null: every reduction priced afresh
  static NestNetwork aware(const Cluster& c);
  static NestNetwork unaware(const Cluster& c);
  // Latency (s) and inverse bandwidth (s per byte) between two GPUs as priced.
  std::pair<double, double> link(DeviceId a, DeviceId b) const;
  double send(DeviceId a, DeviceId b, double bytes) const;
  double reduction(std::span<const DeviceId> group, double bytes, CollectiveAlgorithm algorithm, int zero) const;
  // reduction() as a function of the bytes, the group checked once (intercept kInf: no such plan).
  AffineTime reduction_affine(std::span<const DeviceId> group, CollectiveAlgorithm algorithm, int zero) const;
  // all_to_all() as a function of the bytes.
  AffineTime all_to_all_affine(std::span<const DeviceId> group) const;
  // One all-to-all (direct) of `bytes` per GPU among the group: an expert layer's dispatch or combine.
  double all_to_all(std::span<const DeviceId> group, double bytes) const;
};

// NEST's estimate of `plan` (at the model's width) on `network`, its gradient reduction priced as
// `reduction` says: what the DP minimises.
NestEstimate nest_estimate(const LayerModel& model, const ParallelPlan& plan, const NestNetwork& network,
                           NestReduction reduction = NestReduction::Stage);

// The `estimate` engine (registry entry): prices ExecutionGraph::plan.
EngineInfo estimate_engine();

// The GPU of replica d, stage p, tensor rank r of a plan of one width, in ParallelPlan's order.
DeviceId nest_plan_gpu(const ParallelPlan& plan, int d, int p, int r);
// The GPUs at pipeline rank p and tensor rank r of every `step`-th replica from the first: all of
// them (step 1: the dense gradients' group) or those holding the first expert shard (step ep: the
// spread experts' gradients' group).
std::vector<DeviceId> nest_replica_group(const ParallelPlan& plan, int p, int r, int step);
// The expert-parallel group of replica d at pipeline rank p, on tensor rank 0: the ep replicas
// whose all-to-alls it joins.
std::vector<DeviceId> nest_expert_group(const ParallelPlan& plan, int d, int p);
// The bytes sent between two stages per tensor rank (Megatron's scatter-gather and sequence
// parallelism send 1/t each).
double nest_per_rank_bytes(const ParallelPlan& plan, double bytes);

}  // namespace placesim
