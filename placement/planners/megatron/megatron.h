#pragma once
// The Megatron-style manual plan (Shoeybi et al. 2019; Narayanan et al. 2021), NEST's manual
// baseline: the degrees are given (tp, pp, dp, ep, zero, micro-batches, schedule), tensor-parallel
// groups on consecutive GPUs (inside a server when tp divides its GPUs), and then by `order`:
// tp-pp-dp (the default: pipeline stages next, replicas outermost, as NEST's manual
// plans lay them out; ParallelPlan's default GPU order) or tp-dp-pp (Megatron-LM's own default,
// tp-cp-ep-dp-pp without context parallelism: replicas next, pipeline stages outermost). The
// model's blocks are split evenly over the stages, the layers before the first block
// (embedding) in the first stage and those after the last (output head) in the last (`split`:
// also NEST's manual baseline's rules). The plan is priced under the assumptions of its options
// (PlanAssumptions: the optimizer, NEST's memory model, ...), and, for reproducing NEST's
// reference ratios, as NEST's code prices its manual baseline (nest_baseline_pricing).
// Nothing is searched; the plan is what a person writes in Megatron-LM's launch script.
#include <vector>

#include "placement/framework/planner.h"
#include "sim/config/plan_options.h"
#include "sim/plans/frameworks.h"

namespace placesim {


// How the manual plan splits the model's B blocks over its stages: even (Megatron-LM's: B / pp
// each, the first B mod pp stages one more), ceil (NEST's manual baseline as its README states
// it: ceil(B / pp) each, the last stage what remains), or nest (NEST's manual baseline as its code
// runs it: ceil(B / pp) layers per stage counted over every layer, NEST's renumbered ids, so the
// layers before the first block take places of the first stage's and the last stage also gets
// every layer after them: on NEST's workloads the first stage holds one block fewer and the last
// one more). Before the first block goes to the first stage and after the last to the last.
enum class MegatronSplit { Even, Ceil, Nest };
inline constexpr EnumName<MegatronSplit> kMegatronSplitNames[] = {
    {MegatronSplit::Even, "even"}, {MegatronSplit::Ceil, "ceil"}, {MegatronSplit::Nest, "nest"}};

struct MegatronConfig : PlanAssumptions {
  int tp = 1, pp = 1;
  int dp = 0;  // 0: as many replicas as the cluster holds, floor(GPUs / (tp x pp))
  int ep = 1;
  int cp = 1;  // context-parallel width: the plan runs dp x cp copies (ParallelPlan::cp)
  int zero = 0;
  int zero3_prefetch = 0;  // ParallelPlan::zero3_prefetch
  bool overlap_param_gather = false;  // ParallelPlan::overlap_param_gather
  int micro_batches = 1;  // per replica
  int global_micro_batches = 0;   // micro-batches per iteration over all replicas (0: micro_batches each)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int virtual_stages = 1;  // interleaved 1F1B: stages per pipeline rank (ParallelPlan::virtual_stages)
  CollectiveAlgorithm gradient_algorithm = CollectiveAlgorithm::Ring;
  bool scatter_gather = true;  // ParallelPlan::scatter_gather
  bool sequence_parallel = false;  // ParallelPlan::sequence_parallel
  bool tp_comm_overlap = false;    // ParallelPlan::tp_comm_overlap
  GpuOrder order = GpuOrder::TpPpDp;  // GPU order, innermost first
  // Per stage, its own tensor-parallel width (ParallelPlan::stage_tp; pp entries, the first tp);
  // empty: tp for every stage, as Megatron-LM has it.
  std::vector<int> stage_tp;
  MegatronSplit split = MegatronSplit::Even;
  bool nest_baseline_pricing = false;  // ParallelPlan::nest_baseline_pricing
  // Whose defaults the options not given take (sim/plans/frameworks.h; applied as the options
  // are read): `framework: deepspeed` runs ZeRO 1 with the reductions after the backward.
  Framework framework = Framework::MegatronLm;
  bool operator==(const MegatronConfig&) const = default;
};

// The first layer of each of pp stages: the blocks (Layer::block) split as `split` says (even:
// the first (blocks mod pp) stages taking one more); the layers before the first block go to
// stage 0 and those after the last to the last stage. A model without blocks splits its layers
// so. Throws std::invalid_argument when pp exceeds the blocks or a stage would be left empty.
std::vector<int> megatron_stages(const LayerModel& model, int pp, MegatronSplit split = MegatronSplit::Even);

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
