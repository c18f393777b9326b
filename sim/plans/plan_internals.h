#pragma once
// What the parts of the plan compiler share (sim/plans/*.cpp): where a plan's GPUs are, the
// checks, the pipeline schedules, the memory sums and the layout. Not for use outside sim/plans.
#include <span>
#include <string>
#include <vector>

#include "sim/plans/parallel_plan.h"

namespace placesim::plans {

// Where each pipeline rank's tensor ranks start in a replica's block of the plan's GPUs (replica
// d's block starting at d x gpus_per_replica): plan_gpu_index, computed once per plan.
struct RankOffsets {
  explicit RankOffsets(const ParallelPlan& plan) : per_replica(plan.gpus_per_replica()) {
    for (int p = 0, sum = 0; p < plan.pp; sum += plan.width(p), ++p) offset.push_back(sum);
  }
  std::size_t index(int d, int p, int t) const { return static_cast<std::size_t>(d * per_replica + offset[p] + t); }
  long per_replica;
  std::vector<int> offset;
};

// balanced_stages with stage s's layers priced by `models[s]` (its width's times): stages of
// their own widths (ParallelPlan::stage_tp) take the layers their widths can carry.
std::vector<int> balanced_stages_of(std::span<const LayerModel* const> models);

// The model each pipeline rank runs: the workload at its stage's width.
using RankModels = std::vector<const LayerModel*>;

// The plan's GPU of replica d, pipeline rank p, tensor rank t (ParallelPlan::gpus', or its index
// when the plan lists none).
struct PlanGpus {
  explicit PlanGpus(const ParallelPlan& of) : plan(of), offsets(of) {}
  DeviceId operator()(int d, int p, int t) const {
    const std::size_t index = offsets.index(d, p, t);
    return plan.gpus.empty() ? static_cast<DeviceId>(index) : plan.gpus[index];
  }
  const ParallelPlan& plan;
  RankOffsets offsets;
};

// The checked plan's rank models, or std::invalid_argument with plan_problem's reason.
RankModels checked_models(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster);
RankModels checked_models(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster);

// A unit of a pipeline rank's schedule: one pass of one micro-batch through one of its stages.
struct Unit {
  bool forward;
  int micro_batch;
  int chunk = 0;  // interleaved 1F1B: which of the rank's stages (stage chunk * pp + p)
  // Interleaved 1F1B's steady state: a backward paired with the forward before it, as Megatron
  // runs them: both, then one exchange of both's sends and the next pair's receives.
  bool paired = false;
};

// The order of forward and backward units on pipeline rank p of pp, m micro-batches, v stages
// per rank (v > 1: interleaved 1F1B, plan_schedule.cpp).
std::vector<Unit> schedule_of(PipelineSchedule schedule, int p, int pp, int m, int v);

// What one GPU of a stage holding layers [first, end) keeps, per GPU: the dense part and its share
// of the experts (before ZeRO), the stash per micro-batch, ZeRO 3's gather buffer (its largest
// layer's parameters less its own shard).
// `stash` and `workspace` by the plan's memory model (StageActivations).
struct StageSums {
  double dense = 0, experts = 0, stash = 0, buffer = 0, workspace = 0;
};
StageSums stage_sums(const LayerModel& model, int first, int end, const ParallelPlan& plan);

// Where a compiled plan's pieces are: the index in CompiledPlan::gpus of replica d, stage s (on
// pipeline rank s % pp) and tensor rank t, the stage's width, and the end of stage s.
struct PlanIndex {
  PlanIndex(const ParallelPlan& of, int num_stages, int num_layers, const std::vector<int>& stage_starts)
      : plan(of), pp(of.pp), stages(num_stages), layers(num_layers), starts(stage_starts), offsets(of) {}
  const ParallelPlan& plan;
  int pp, stages, layers;
  const std::vector<int>& starts;
  RankOffsets offsets;
  int width(int s) const { return plan.width(s); }
  int gpu_index(int d, int s, int t) const { return static_cast<int>(offsets.index(d, s % pp, t)); }
  int stage_end(int s) const { return s + 1 < stages ? starts[s + 1] : layers; }
};

// plan_layout of a checked plan, each pipeline rank at its model (plan_memory.cpp).
CompiledPlan rank_plan_layout(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster);
// compile_plan of a checked plan (plan_compiler.cpp).
CompiledPlan rank_compile_plan(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster,
                               CollectiveDetail detail, int replicas = 0);

}  // namespace placesim::plans
