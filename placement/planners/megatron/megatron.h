#pragma once
// The Megatron-style manual plan (Shoeybi et al. 2019; Narayanan et al. 2021), NEST's manual
// baseline: the degrees are given (tp, pp, dp, ep, zero, micro-batches, schedule), tensor-parallel
// groups on consecutive GPUs (inside a server when tp divides its GPUs), and then by `order`:
// tp-pp-dp (the default: pipeline stages next, replicas outermost, as NEST's manual
// plans lay them out; ParallelPlan's default GPU order) or tp-dp-pp (Megatron-LM's own default,
// tp-cp-ep-dp-pp without context parallelism: replicas next, pipeline stages outermost). The
// model's blocks are split evenly over the stages, the layers before the first block
// (embedding) in the first stage and those after the last (output head) in the last.
// Nothing is searched; the plan is what a person writes in Megatron-LM's launch script.
#include <vector>

#include "placement/framework/planner.h"

namespace placesim {


struct MegatronConfig {
  int tp = 1, pp = 1;
  int dp = 0;  // 0: as many replicas as the cluster holds, floor(GPUs / (tp x pp))
  int ep = 1;
  int zero = 0;
  int micro_batches = 1;  // per replica
  int global_micro_batches = 0;   // micro-batches per iteration over all replicas (0: micro_batches each)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int virtual_stages = 1;  // interleaved 1F1B: stages per pipeline rank (ParallelPlan::virtual_stages)
  CollectiveAlgorithm gradient_algorithm = CollectiveAlgorithm::Ring;
  bool scatter_gather = true;  // ParallelPlan::scatter_gather
  bool sequence_parallel = false;  // ParallelPlan::sequence_parallel
  GpuOrder order = GpuOrder::TpPpDp;  // GPU order, innermost first
  // Per stage, its own tensor-parallel width (ParallelPlan::stage_tp; pp entries, the first tp);
  // empty: tp for every stage, as Megatron-LM has it.
  std::vector<int> stage_tp;
  bool operator==(const MegatronConfig&) const = default;
};

// The first layer of each of pp stages: the blocks (Layer::block) split evenly, the first
// (blocks mod pp) stages taking one more; the layers before the first block go to stage 0 and
// those after the last to the last stage. A model without blocks splits its layers evenly.
// Throws std::invalid_argument when pp exceeds the blocks.
std::vector<int> megatron_stages(const LayerModel& model, int pp);

class Megatron : public Planner {
 public:
  explicit Megatron(MegatronConfig config = {}) : Planner("megatron"), config_(config) {}
  const MegatronConfig& config() const { return config_; }
  std::string estimate_problem() const override;
  // The plan is the options' own, so its every problem shows without planning.
  std::string options_problem(const LayerWorkload& workload, const Cluster& cluster) const override;

 private:
  // report: stage_layers (layers per stage), gpus_used, gpus_idle.
  PlanResult plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) override;
  MegatronConfig config_;
};

OptionSchema<MegatronConfig> megatron_schema();
PlannerInfo megatron_planner_info();

}  // namespace placesim
