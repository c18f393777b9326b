#pragma once
// A Megatron-style plan of a layer-level model as `placesim plan` takes it (PlanArgs: every flag,
// by its name), and what turns it into a model and a ParallelPlan: the framework's defaults, the
// stage split, the zoo's options, Megatron's throughput measures. `placesim plan` (tools/plan_cli.h),
// Python's placesim.plan and the search (plan_search.h) share it, so that each candidate the
// search prints re-runs with its printed command.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <string>
#include <tuple>
#include <vector>

#include "placement/planners/megatron/megatron.h"
#include "sim/collectives/collectives.h"
#include "sim/core/errors.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/frameworks.h"
#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_run.h"

namespace placesim {

struct PlanArgs {
  std::string workload, model, cluster, schedule = "1f1b", engine = "auto", order = "fcfs", gradient_algorithm = "ring",
      collectives = "auto";
  bool full_graph = false;  // every replica built and simulated (FoldMode::Full)
  bool fold = false;        // the replicas folded even where the fold approximates (FoldMode::Folded)
  double gpu_speed_cv = 0, kernel_jitter_cv = 0;  // variability (sim/engines/variability.h); 0: none
  std::vector<std::string> slow_gpu;  // stragglers, "GPU:SLOWDOWN" each (Variability::slow_gpus)
  int seeds = 1;
  std::uint64_t seed = 1;
  int tp = 1, pp = 1, dp = 1, micro_batches = 1, zero = 0, ep = 1;
  int zero3_prefetch = 0;  // ParallelPlan::zero3_prefetch
  int cp = 1;  // context parallelism: the plan runs dp x cp copies of the weights (ParallelPlan::cp)
  std::vector<int> stage_tp;  // per stage, its own tensor-parallel width (ParallelPlan::stage_tp)
  std::vector<int> stage_starts;  // each stage's first layer (ParallelPlan::stage_starts); empty: by stage_split
  int virtual_stages = 1;  // interleaved 1F1B
  std::string gpu_order = "tp-pp-dp";  // innermost first (GpuOrder): stages inside replicas, or tp-dp-pp
  std::string stage_split = "balanced";  // balanced (the stages' compute, by DP) or even (Megatron-LM's)
  bool no_scatter_gather = false;
  bool sequence_parallel = false;
  bool tp_comm_overlap = false;  // ParallelPlan::tp_comm_overlap
  bool overlap_p2p_comm = false;  // !ParallelPlan::blocking_sends
  // The model zoo's layer-level models (sim/models/layer_zoo.h), or a model by its dimensions
  // (model_file), instead of --workload.
  std::string model_file;
  std::string gpu = "h100";
  std::string precision;              // "": the GPU's default
  std::string main_gradients;         // "": Megatron-LM's at the precision
  int micro_batch_size = 1, sequence = 0;
  long global_batch = 0;              // sequences per iteration; 0: micro_batches x micro_batch_size x dp
  double mfu = 0;                     // 0: the kernel model
  std::string recompute = "full";     // none, selective, full
  std::string attention = "fused";    // fused, unfused
  bool distributed_optimizer = false;  // Megatron's: ZeRO 1, its parameter gathers overlapping the next forward
  bool no_overlap_param_gather = false;  // ZeRO 1 and 2: the gathers after the optimizer step
  bool no_overlap_grad_reduce = false;   // the gradient reductions after the backward
  std::string framework = "megatron-lm";  // whose defaults (sim/plans/frameworks.h)
  // The settings the user gave, by their keyword names (Python's; a flag's name without its
  // dashes or `no-`, dashes as underscores): the framework's defaults leave them alone.
  std::vector<std::string> given;
  // What the framework's profile would have set and the user gave otherwise (said by `plan`).
  std::vector<std::string> kept;
  bool json = false;
  std::string trace;  // Chrome trace of the evaluator's run, with each GPU's memory over time
  std::string chakra;  // a directory for the plan's Chakra execution traces, one per GPU
};

// How the arguments ask the plan to be simulated (sim/plans/plan_run.h): `auto` collectives and
// engines left unset, for simulate_plan to choose by the graph's size.
inline PlanRunOptions plan_run_options(const PlanArgs& a, const std::string& source) {
  const bool cli = source == "command line";
  PlanRunOptions o;
  if (a.collectives != "auto")
    o.detail = enum_parse<CollectiveDetail>(kCollectiveDetailNames, a.collectives, source, cli ? "--collectives" : "collectives");
  if (a.engine != "auto") o.engines = EngineSet::parse(a.engine, source, cli ? "--engine" : "engine");
  o.order = enum_parse<RunOrder>(kRunOrderNames, a.order, source, cli ? "--order" : "order");
  o.fold = a.full_graph ? FoldMode::Full : a.fold ? FoldMode::Folded : FoldMode::Auto;
  o.variability = {a.gpu_speed_cv, a.kernel_jitter_cv, a.seed, {}};
  for (const std::string& text : a.slow_gpu) {
    const std::size_t colon = text.find(':');
    SlowGpu slow;
    char* end = nullptr;
    const std::string gpu = text.substr(0, colon);
    slow.gpu = static_cast<DeviceId>(std::strtol(gpu.c_str(), &end, 10));
    const bool gpu_ok = !gpu.empty() && *end == '\0' && slow.gpu >= 0;
    const std::string factor = colon == std::string::npos ? "" : text.substr(colon + 1);
    slow.slowdown = std::strtod(factor.c_str(), &end);
    if (!gpu_ok || factor.empty() || *end != '\0' || !(slow.slowdown > 0) || slow.slowdown > 1e6)
      throw InputError(source, cli ? "--slow-gpu" : "slow_gpu",
                       fmt::format("expected GPU:SLOWDOWN, a GPU number and how many times as long its compute takes (e.g. 3:1.25), got '{}'", text));
    o.variability.slow_gpus.push_back(slow);
  }
  o.seeds = a.seeds;
  if (a.seeds > 1 && !o.variability.random())
    throw InputError(source, cli ? "--seeds" : "seeds", "more than one seed needs variability: give --gpu-speed-cv or --kernel-jitter-cv");
  return o;
}

// The profile of the arguments' framework, and the frameworks' names (for the flags' checks).
inline const FrameworkProfile& framework_of(const PlanArgs& a) {
  return framework_profile(enum_parse<Framework>(kFrameworkNames, a.framework, "command line", "--framework"));
}
inline std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const auto& n : kFrameworkNames) names.emplace_back(n.name);
  return names;
}

// The framework's defaults (sim/plans/frameworks.h) on what the user did not give, then what it
// cannot run refused, naming the setting as `source` spells it.
inline void apply_framework(PlanArgs& a, const std::string& source) {
  const bool cli = source == "command line";
  auto field = [&](const std::string& key) { return cli ? "--" + key : key; };
  const Framework f = enum_parse<Framework>(kFrameworkNames, a.framework, source, field("framework"));
  // The profile's keys as the flags name them (`split` is --stage-split).
  auto flag_key = [](std::string_view key) { return key == "split" ? std::string("stage_split") : std::string(key); };
  FrameworkSettings s{.tp = a.tp,
                      .pp = a.pp,
                      .virtual_stages = a.virtual_stages,
                      .zero = a.zero,
                      .zero3_prefetch = a.zero3_prefetch,
                      .distributed_optimizer = a.distributed_optimizer,
                      .overlap_grad_reduce = !a.no_overlap_grad_reduce,
                      .even_split = a.stage_split == "even",
                      .sequence_parallel = a.sequence_parallel,
                      .tp_comm_overlap = a.tp_comm_overlap,
                      .gpipe = a.schedule == "gpipe",
                      .stage_starts = !a.stage_starts.empty()};
  const bool was_even = s.even_split;
  const FrameworkApplication applied = apply_framework_profile(f, s, [&](std::string_view key) {
    return std::find(a.given.begin(), a.given.end(), flag_key(key)) != a.given.end();
  });
  if (!applied.refusal.key.empty()) {
    std::string flag = "--" + applied.refusal.key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw InputError(source, cli ? flag : applied.refusal.key, applied.refusal.reason);
  }
  a.kept.clear();
  for (const std::string& k : applied.kept) a.kept.push_back(flag_key(k));
  a.zero = s.zero;
  a.zero3_prefetch = s.zero3_prefetch;
  a.distributed_optimizer = s.distributed_optimizer;
  a.no_overlap_grad_reduce = !s.overlap_grad_reduce;
  if (s.even_split && !was_even) a.stage_split = "even";
  a.sequence_parallel = s.sequence_parallel;
  a.tp_comm_overlap = s.tp_comm_overlap;
  // What the flags need of each other, once the profile has set its part.
  if (a.tp_comm_overlap && !a.sequence_parallel)
    throw InputError(source, cli ? "--tp-comm-overlap" : "tp_comm_overlap",
                     "Megatron's tensor-parallel overlap runs sequence parallelism's collectives beside the GEMMs: it needs "
                     "--sequence-parallel (or a framework that sets it: nemo)");
  if (a.no_overlap_param_gather && !a.distributed_optimizer)
    throw InputError(source, cli ? "--no-overlap-param-gather" : "overlap_param_gather",
                     "only Megatron's distributed optimizer overlaps its parameter gathers: it needs --distributed-optimizer (or a "
                     "framework that sets it: megatron-core, nemo)");
}


// The plan the arguments describe; `source` and the two field names name what a bad schedule or
// gradient algorithm came from ("command line", "--schedule"; Python's keywords).
inline ParallelPlan plan_from_args(const PlanArgs& a, const std::string& source, const std::string& schedule_field,
                                   const std::string& algorithm_field) {
  ParallelPlan plan;
  plan.tp = a.tp;
  plan.stage_tp = a.stage_tp;
  plan.pp = a.pp;
  plan.dp = a.dp * a.cp;  // the plan's replicas count the context ranks (ParallelPlan::cp)
  plan.cp = a.cp;
  // The GPU order; Megatron-core's with context parallelism: each context group beside its tensor ranks.
  const GpuOrder order = enum_parse<GpuOrder>(kGpuOrderNames, a.gpu_order, source, source == "command line" ? "--gpu-order" : "gpu_order");
  if (!a.stage_tp.empty()) {
    if (order != GpuOrder::TpPpDp) plan.gpus = gpus_in_order(a.stage_tp, plan.dp, order);
  } else if (a.cp > 1 || order != GpuOrder::TpPpDp) {
    plan.gpus = gpus_in_order(a.tp, a.pp, plan.dp, order, a.cp);
  }
  plan.micro_batches = a.micro_batches;
  if (a.global_batch > 0) {
    // Megatron's: global batch = micro-batch size x micro-batches x data-parallel replicas.
    const long per_step = static_cast<long>(a.micro_batch_size) * a.dp;
    if (a.global_batch % per_step != 0)
      throw InputError(source, "--global-batch",
                       fmt::format("expected a multiple of micro-batch size x dp = {} x {} = {}, got {}", a.micro_batch_size, a.dp,
                                   per_step, a.global_batch));
    plan.micro_batches = static_cast<int>(a.global_batch / per_step);
  }
  plan.zero = a.distributed_optimizer ? std::max(a.zero, 1) : a.zero;
  plan.overlap_param_gather = a.distributed_optimizer && !a.no_overlap_param_gather;
  plan.overlap_grad_reduce = !a.no_overlap_grad_reduce;
  plan.zero3_prefetch = a.zero3_prefetch;
  if (plan.overlap_param_gather && !plan.overlap_grad_reduce)
    throw InputError(source, "--no-overlap-grad-reduce",
                     "Megatron overlaps the distributed optimizer's parameter gathers only with the gradients' reductions "
                     "(--overlap-param-gather needs --overlap-grad-reduce): add --no-overlap-param-gather");
  plan.virtual_stages = a.virtual_stages;
  plan.stage_starts = a.stage_starts;
  plan.ep = a.ep;
  plan.scatter_gather = !a.no_scatter_gather;
  plan.sequence_parallel = a.sequence_parallel;
  plan.tp_comm_overlap = a.tp_comm_overlap;
  plan.blocking_sends = !a.overlap_p2p_comm;
  plan.schedule = enum_parse<PipelineSchedule>(kPipelineScheduleNames, a.schedule, source, schedule_field);
  plan.gradient_algorithm =
      enum_parse<CollectiveAlgorithm>(collective_algorithm_names(CollectiveOp::AllReduce), a.gradient_algorithm, source, algorithm_field);
  return plan;
}

// The stages' first layers the arguments ask for: `even`, Megatron-LM's layout (the blocks
// evenly over the pp x v stages, the first blocks mod pp x v stages one more; the embedding with
// the first, the head with the last: what a Megatron or NeMo run was split into); `balanced`
// (the default), none: plan_layout balances the stages' compute (balanced_stages).
inline void apply_stage_split(ParallelPlan& plan, const PlanArgs& a, const LayerModel& model, const std::string& source,
                              const std::string& field) {
  if (a.stage_split == "balanced") return;
  if (!a.stage_starts.empty())
    throw InputError(source, field, "the stage starts are given: a split of the layers would replace them (leave out one of the two)");
  if (a.stage_split != "even") throw InputError(source, field, fmt::format("expected balanced or even, got '{}'", a.stage_split));
  try {
    plan.stage_starts = megatron_stages(model, plan.pp * plan.virtual_stages, MegatronSplit::Even);
  } catch (const std::invalid_argument& e) {
    throw InputError(source, field, e.what());
  }
}

// The zoo's options the arguments give (their fields named as the flags, for errors).
inline models::LayerZooOptions zoo_options(const PlanArgs& a, const std::string& source) {
  models::LayerZooOptions zoo;
  zoo.micro_batch = a.micro_batch_size;
  zoo.sequence = a.sequence;
  zoo.gpu = a.gpu;
  if (!a.precision.empty()) zoo.precision = enum_parse<models::Precision>(models::kPrecisionNames, a.precision, source, "--precision");
  zoo.mfu = a.mfu;
  zoo.recompute = enum_parse<models::Recompute>(models::kRecomputeNames, a.recompute, source, "--recompute");
  zoo.sequence_parallel = a.sequence_parallel;
  zoo.context_parallel = a.cp;
  if (a.attention != "fused" && a.attention != "unfused")
    throw InputError(source, "--attention", fmt::format("expected fused or unfused, got '{}'", a.attention));
  zoo.fused_attention = a.attention == "fused";
  if (!a.main_gradients.empty())
    zoo.main_gradients = enum_parse<MainGradients>(kMainGradientsNames, a.main_gradients, source, "--main-gradients");
  return zoo;
}

// Megatron's measures of an iteration of `latency` seconds on `gpus` GPUs: tokens per second per
// GPU, model FLOP/s per GPU (the layer model's FLOPs, no recomputation) and MFU against the GPU's
// dense peak at the precision (an fp8 run's 16-bit peak, as Megatron-LM and NeMo report it; 0 for
// a measured workload, whose GPU placesim does not know).
struct PlanThroughput {
  double tokens_per_s_per_gpu = 0, model_flops_per_gpu = 0, mfu = 0, peak_flops = 0;
};
// What one iteration processes: sequences (a context group shares them), their tokens, and the
// model's FLOPs (no recomputation).
struct PlanWork {
  double sequences = 0, tokens = 0, model_flops = 0;
};
inline PlanWork plan_work(const ParallelPlan& plan, const LayerModel& model) {
  PlanWork w;
  w.sequences = static_cast<double>(model.micro_batch) * plan.micro_batches * (plan.dp / plan.cp);
  w.tokens = w.sequences * model.sequence;
  w.model_flops = model.model_flops * plan.micro_batches * plan.dp;
  return w;
}
// The GPU's dense peak at the run's precision (an fp8 run's 16-bit peak); 0 for a workload file.
inline double plan_peak_flops(const PlanArgs& a) {
  if (!a.workload.empty()) return 0;
  const models::LayerZooOptions zoo = zoo_options(a, "command line");
  const models::GpuSpec gpu = models::kernel_model_gpu(a.gpu, "command line");
  return gpu.dense(gpu.outside_fp8(zoo.precision.value_or(gpu.default_precision())));
}
inline PlanThroughput plan_throughput(const PlanArgs& a, const ParallelPlan& plan, const LayerModel& model, double gpus,
                                      double latency) {
  const PlanWork w = plan_work(plan, model);
  PlanThroughput t;
  t.tokens_per_s_per_gpu = w.tokens / latency / gpus;
  t.model_flops_per_gpu = w.model_flops / latency / gpus;
  t.peak_flops = plan_peak_flops(a);
  if (t.peak_flops > 0) t.mfu = t.model_flops_per_gpu / t.peak_flops;
  return t;
}

// The layer-level model the arguments name (a zoo model or a model file; not a measured
// workload), at every width the plan runs it: tp, then each other stage width.
inline LayerWorkload model_from_args(const PlanArgs& a, const std::string& source) {
  std::vector<int> widths{a.tp};
  for (int w : a.stage_tp)
    if (std::find(widths.begin(), widths.end(), w) == widths.end()) widths.push_back(w);
  models::TransformerShape shape;
  if (a.model.empty()) {
    shape = models::load_model_file(a.model_file);
  } else if (const models::TransformerShape* zoo = models::find_layer_zoo(a.model)) {
    shape = *zoo;
  } else {
    throw InputError(source, "model", fmt::format("expected one of {}, got '{}'", models::layer_zoo_names(), a.model));
  }
  return models::build_layer_model(shape, zoo_options(a, source), widths, source);
}

}  // namespace placesim
