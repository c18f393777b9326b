#include "plan_cli.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_conventions.h"
#include "sim/engines/engine.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/shared_runs.h"
#include "sim/core/execution_graph.h"
#include "sim/plans/layer_model.h"
#include "sim/models/gpu.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_run.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/io/trace.h"
#include "sim/core/units.h"
#include "topologies/registry.h"

namespace placesim {

namespace {

// Variability's options (sim/engines/variability.h).
void add_variability_options(CLI::App* c, PlanArgs& a) {
  c->add_option("--gpu-speed-cv", a.gpu_speed_cv,
                 "variability: each GPU's compute takes 1 + cv Z times as long (Z standard normal, per GPU, seeded; Sinha et "
                 "al. measured 8% average variation among GPUs of one SKU: about cv 0.03 over 1,000 GPUs); every replica is "
                 "then built")
      ->check(number_in(Range{0, 0.5}))
      ->capture_default_str();
  c->add_option("--kernel-jitter-cv", a.kernel_jitter_cv,
                "variability: each operator run takes 1 + cv Z times as long, independently (seeded)")
      ->check(number_in(Range{0, 0.5}))
      ->capture_default_str();
  c->add_option("--slow-gpu", a.slow_gpu,
                "a straggler: GPU:SLOWDOWN, its compute taking SLOWDOWN times as long (e.g. 3:1.25; repeat for more); every "
                "replica is then built, and the breakdown names the slowest GPU")
      ->check(CLI::Validator(
          [](std::string& text) {
            return text.find(':') == std::string::npos ? std::string("expected GPU:SLOWDOWN, e.g. 3:1.25") : std::string();
          },
          "GPU:SLOWDOWN"));
  c->add_option("--seeds", a.seeds, "with variability: run this many seeds (from --seed) and report the mean and spread")
      ->check(whole_number(1, 10000))
      ->capture_default_str();
  c->add_option("--seed", a.seed, "with variability: the first seed")->check(whole_number(0))->capture_default_str();
}

// How the layers are split into stages: --stage-split, --stage-starts, --virtual-stages.
void add_stage_options(CLI::App* c, PlanArgs& a) {
  c->add_option("--stage-split", a.stage_split,
                "how the layers are split over the pp x v stages: balanced (their compute, the default) or even (Megatron-LM's: "
                "the blocks evenly, the first blocks mod pp x v stages one more, the embedding with the first, the head with the "
                "last; what a Megatron or NeMo run was split into)")
      ->check(one_of({"balanced", "even"}))
      ->capture_default_str();
  c->add_option("--stage-starts", a.stage_starts,
                "each of the pp x v stages' first layer, comma-separated, from 0 (e.g. 0,19,40,61: what a planner chose, "
                "as `nest` and `search` print it); default: by --stage-split")
      ->delimiter(',')
      ->check(whole_number(0, 1 << 20));
  c->add_option("--gpu-order", a.gpu_order,
                "how the plan's GPUs are ordered, innermost first: tp-pp-dp (each replica's stages on neighbouring GPUs, "
                "replicas outermost) or tp-dp-pp (Megatron-LM's: the replicas next, pipeline stages outermost)")
      ->check(one_of({"tp-pp-dp", "tp-dp-pp"}))
      ->capture_default_str();
  c->add_option("--virtual-stages", a.virtual_stages,
                "interleaved 1F1B: stages per pipeline rank (Megatron-LM's virtual pipeline; micro-batches a multiple of pp)")
      ->check(whole_number(1, 1024))
      ->capture_default_str();
}

// --framework, and what the user gave by keyword (PlanArgs::given) for its defaults.
void add_framework_option(CLI::App* c, PlanArgs& a) {
  c->add_option("--framework", a.framework, [] {
       std::string help = "whose defaults the plan runs with (a setting you give keeps your value; docs/parallelism.md):";
       for (const FrameworkProfile& p : framework_profiles())
         help += fmt::format(" {}: {};", enum_name<Framework>(kFrameworkNames, p.framework), p.summary);
       help.back() = '.';
       return help;
     }())
      ->check(one_of(framework_names()))
      ->capture_default_str();
  // What the user gave, by keyword (`given`), for the framework's defaults.
  c->parse_complete_callback([c, &a] {
    for (const CLI::Option* o : c->get_options()) {
      if (o->count() == 0 || o->get_name().rfind("--", 0) != 0) continue;
      std::string key = o->get_name().substr(2);
      if (key.rfind("no-", 0) == 0) key = key.substr(3);
      std::replace(key.begin(), key.end(), '-', '_');
      a.given.push_back(key);
    }
  });
}

}  // namespace

CLI::App* add_plan_command(CLI::App& app, PlanArgs& a) {
  auto* c = app.add_subcommand("plan", "simulate one data/tensor/pipeline-parallel plan of a layer-level workload (docs/parallelism.md)");
  auto* workload = c->add_option("--workload", a.workload, "per-layer workload (NEST's JSON, ../shared/workloads/nest)")
                       ->check(CLI::ExistingFile);
  auto* zoo_model = c->add_option("--model", a.model, "a layer-level model of the zoo instead: " + models::layer_zoo_names())
                        ->check(one_of([] {
                          std::vector<std::string> names;
                          for (const auto& shape : models::layer_zoo()) names.push_back(shape.name);
                          return names;
                        }()));
  auto* model_file = c->add_option("--model-file", a.model_file,
                                   "a model by its dimensions instead (YAML: family gpt|llama|mixtral, layers, hidden, heads, "
                                   "kv_heads, ffn_hidden, vocab, sequence, ...; docs/parallelism.md)")
                         ->check(CLI::ExistingFile);
  workload->excludes(zoo_model);
  workload->excludes(model_file);
  zoo_model->excludes(model_file);
  // The zoo's options mean nothing to a measured workload: cmd_plan refuses them without a model.
  c->add_option("--micro-batch-size", a.micro_batch_size, "--model: sequences per micro-batch")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--sequence", a.sequence, "--model: tokens per sequence (default and most: the model's)")
      ->check(whole_number(1, 1 << 24));
  c->add_option("--gpu", a.gpu,
                "--model: the GPU the kernel model times the layers on: a preset (`placesim gpus`) or a YAML file ({preset: a100, "
                "gemm_efficiency: 0.8, ...}: docs/validation.md)")
      ->check(one_of(models::kernel_model_gpu_names()) | CLI::ExistingFile)
      ->capture_default_str();
  c->add_option("--precision", a.precision,
                "--model: the matrix products' precision, fp32, tf32, fp16, bf16 or fp8 (default: the GPU's, bf16 from A100 on)")
      ->check(one_of({"fp32", "tf32", "fp16", "bf16", "fp8"}));
  c->add_option("--mfu", a.mfu,
                "--model: override the kernel model: every FLOP at this fraction of the GPU's peak at the precision (an fp8 run's "
                "16-bit peak, which MFU is reported against; an assumption; 0: the kernel model)")
      ->check(number_in(Range{0, 1, false, false}))
      ->capture_default_str();
  c->add_option("--recompute", a.recompute,
                "--model: what the backward recomputes: none, selective (the attention core) or full (every layer's forward)")
      ->check(one_of({"none", "selective", "full"}))
      ->capture_default_str();
  c->add_option("--main-gradients", a.main_gradients,
                 "--model: where the gradients are kept and reduced: fp32 (fp32 main gradients, reduced in fp32), fp32_copy "
                 "(16-bit with an fp32 copy in the optimizer) or as_parameters (16-bit, no copy; the ZeRO paper's count) "
                 "(default: Megatron-LM's at the precision: bf16 and fp8 fp32, fp16 fp32_copy)")
      ->check(one_of({"fp32", "fp32_copy", "as_parameters"}));
  c->add_option("--attention", a.attention, "--model: fused (FlashAttention-style) or unfused (scores, softmax, dropout apart)")
      ->check(one_of({"fused", "unfused"}))
      ->capture_default_str();
  auto* global_batch =
      c->add_option("--global-batch", a.global_batch,
                    "sequences per iteration (sets --micro-batches to it / (micro-batch size x dp), as Megatron-LM's --global-batch-size)")
          ->check(whole_number(1, 1L << 40));
  c->add_flag("--distributed-optimizer", a.distributed_optimizer,
              "Megatron's distributed optimizer: optimizer states and their update sharded over the replicas (ZeRO 1), gradients "
              "reduce-scattered as the backward runs, the updated parameters all-gathered as the next forward runs "
              "(--overlap-grad-reduce --overlap-param-gather)");
  c->add_flag("--no-overlap-param-gather", a.no_overlap_param_gather,
              "with --distributed-optimizer: all-gather the updated parameters after the update, before the next forward "
              "(Megatron without --overlap-param-gather)");
  c->add_flag("--no-overlap-grad-reduce", a.no_overlap_grad_reduce,
              "reduce the gradients after the backward, all buckets at once (Megatron without --overlap-grad-reduce, its "
              "default; its local DDP of 2021); default: each layer's bucket as soon as its backward has run");
  c->add_flag("--json", a.json, "one JSON object (iteration time, tokens/s, TFLOP/s and MFU per engine, memory) instead of the text");
  add_framework_option(c, a);
  c->add_option("--cluster", a.cluster, "cluster YAML file (a `cluster:` block)")->required()->check(CLI::ExistingFile);
  c->add_option("--tp", a.tp, "tensor-parallel width (the workload must have it)")->check(whole_number(1, 1 << 16))->capture_default_str();
  c->add_option("--stage-tp", a.stage_tp,
                "per stage, its own tensor-parallel width, comma-separated, pp of them, the first --tp (e.g. 8,4): each stage "
                "runs the layers at its width")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--pp", a.pp, "pipeline stages (balanced by compute)")->check(whole_number(1, 1 << 16))->capture_default_str();
  c->add_option("--dp", a.dp, "data-parallel replicas")->check(whole_number(1, 1 << 20))->capture_default_str();
  c->add_option("--micro-batches", a.micro_batches, "micro-batches per iteration")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str()
      ->excludes(global_batch);
  c->add_option("--schedule", a.schedule, "gpipe or 1f1b")->check(one_of({"gpipe", "1f1b"}))->capture_default_str();
  add_stage_options(c, a);
  c->add_option("--zero", a.zero, "ZeRO stage over the replicas")->check(whole_number(0, 3))->capture_default_str();
  c->add_option("--zero3-prefetch", a.zero3_prefetch,
                "ZeRO 3: how many layers ahead each layer's parameters are gathered (0: as far as the links allow; FSDP's: 1)")
      ->check(whole_number(0, 1 << 16))
      ->capture_default_str();
  c->add_option("--cp", a.cp,
                "--model: context-parallel width (ring attention): each sequence split over cp GPUs, which pass their keys and "
                "values around; the plan runs tp x pp x dp x cp GPUs")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--ep", a.ep, "expert-parallel width, carved out of the replicas (divides --dp)")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_flag("--no-scatter-gather", a.no_scatter_gather,
              "between stages each tensor rank sends the whole activation (default: 1/tp, all-gathered by the next stage)");
  c->add_flag("--sequence-parallel", a.sequence_parallel,
              "Megatron's sequence parallelism (--tp >= 2): reduce-scatters and all-gathers, activations split along the sequence");
  c->add_flag("--tp-comm-overlap", a.tp_comm_overlap,
              "Megatron's --tp-comm-overlap (with --sequence-parallel): each layer's tensor-parallel reduce-scatters and all-gathers "
              "beside its compute rather than after it (a bound: docs/parallelism.md)");
  c->add_flag("--overlap-p2p-comm", a.overlap_p2p_comm,
              "pipeline sends beside the sender's next operator (Megatron's --overlap-p2p-comm); default: the sender waits until "
              "its activation (gradient) has arrived, as Megatron's batch_isend_irecv and wait");
  std::vector<std::string> all_reduces;
  for (const auto& n : collective_algorithm_names(CollectiveOp::AllReduce)) all_reduces.emplace_back(n.name);
  c->add_option("--gradient-algorithm", a.gradient_algorithm, "collective algorithm of the gradient reduction")
      ->check(one_of(std::move(all_reduces)))
      ->capture_default_str();
  c->add_option("--collectives", a.collectives,
                "ring phases message by message, or condensed to a flow per ring neighbour; auto: messages, condensed when the "
                "graph would hold more than 5 million operators (said when it does)")
      ->check(one_of({"auto", "messages", "condensed"}))
      ->capture_default_str();
  c->add_option("--engine", a.engine,
                "evaluator, flow, simgrid, estimate (NEST's analytical estimate) or all; auto: evaluator, flow and simgrid, "
                "simgrid left out above 2 million operators (said when it is)")
      ->check(one_of({"auto", std::string(kEvaluator), std::string(kFlow), std::string(kSimGrid), std::string(kEstimate), "all"}))
      ->capture_default_str();
  auto* full_graph = c->add_flag("--full-graph", a.full_graph,
                                 "build and simulate every data-parallel replica (default: one block of replicas standing for "
                                 "all that run alike, exact where the fabric is symmetric: docs/parallelism.md)");
  c->add_flag("--fold", a.fold,
              "fold the replicas even where the fabric treats them differently (approximate: each transfer at its slowest "
              "copy's time); default: exact folds, else the full graph when it is small")
      ->excludes(full_graph);
  add_variability_options(c, a);
  c->add_option("--order", a.order,
                "fcfs: every engine runs each GPU's operators first come, first served on its own arrival times; scheduler: "
                "the evaluator's list schedule, which the flow engine and SimGrid replay under contention")
      ->check(one_of({"fcfs", "scheduler"}))
      ->capture_default_str();
  c->add_option("--trace", a.trace,
                "write the evaluator's timeline of the iteration to FILE (Chrome trace JSON, for Perfetto; gzip'd when FILE ends "
                "in .gz, about a tenth of the size), with each GPU's memory over time");
  c->add_option("--chakra", a.chakra,
                "write the plan's execution graph as Chakra execution traces into this directory, one per GPU "
                "(<workload>.<rank>.et, its collectives as collective nodes), from the timeline of SimGrid when it ran, else "
                "the evaluator's, else the flow engine's; `simulate --replay DIR` runs them again, in the scheduler's order (with "
                "--order scheduler, at the plan's latencies)");
  return c;
}

namespace {

// The run whose timeline the Chakra traces hold: SimGrid's when it ran, else the evaluator's, else
// the flow engine's (the estimate times no operator).
const EngineRun* chakra_timeline(const EngineRuns& ran) {
  for (std::string_view engine : {kSimGrid, kEvaluator, kFlow})
    if (const EngineRun* run = ran.find(engine); run && run->schedule) return run;
  return nullptr;
}

// `--chakra DIR`, checked before anything runs: a plan of a thousand GPUs takes minutes.
void check_chakra_option(const PlanArgs& a) {
  if (a.chakra.empty()) return;
  std::error_code error;
  if (std::filesystem::exists(a.chakra, error) && !std::filesystem::is_directory(a.chakra, error))
    throw InputError("command line", "--chakra", fmt::format("'{}' is a file; expected a directory to write the traces into", a.chakra));
  if (a.engine == kEstimate)
    throw InputError("command line", "--chakra",
                     "the estimate times no operator, so there is no timeline to write; choose an engine that simulates "
                     "(evaluator, flow, simgrid or all)");
}

// The plan's execution graph as Chakra traces, one per GPU of the cluster, named after the
// workload file (or the zoo model).
void write_plan_chakra(const PlanArgs& a, const CompiledPlan& c, const Cluster& cluster, const EngineRuns& ran,
                       const std::string& plan_label) {
  const EngineRun* run = chakra_timeline(ran);
  if (!run) throw InputError("command line", "--chakra", "no engine that ran timed the operators");
  const std::string prefix = !a.model.empty() ? a.model : std::filesystem::path(a.workload.empty() ? a.model_file : a.workload).stem().string();
  const ChakraWritten written =
      write_chakra_traces(a.chakra, prefix, c.graph.graph, c.graph.placement, cluster.num_devices(), run->schedule->start,
                          {fmt::format("{} ({})", prefix, plan_label), run->engine, run->latency}, c.graph.collectives);
  for (const auto& w : written.warnings) std::cerr << "warning: " << a.chakra << ": " << w << "\n";
  std::cout << fmt::format("chakra          {} ({} rank{}, the {} timeline)\n", a.chakra, cluster.num_devices(),
                           cluster.num_devices() == 1 ? "" : "s", run->engine);
}

// `--trace`: the evaluator's run, when each stage reaches its memory peak, and the whole timeline.
void write_plan_trace(const PlanArgs& a, const ParallelPlan& plan, const CompiledPlan& c, const Cluster& cluster,
                      const EngineRuns& ran, std::ostream& out) {
  // The timeline of the engine that modelled contention best, with its transfers on the links:
  // SimGrid's flows, else the flow engine's or the evaluator's schedule's (flows_of_schedule).
  const EngineRun* shown = ran.contended();
  std::optional<FoldedNetwork> network;
  if (!shown && c.graph.fold) network = fold_network(c.graph.graph, c.graph.placement, *c.graph.fold, cluster);
  const Schedule run = shown ? *shown->schedule
                     : network ? Evaluator(c.graph.graph, cluster, *network).schedule(c.graph.placement)
                               : Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
  const std::string engine = shown ? shown->engine : std::string(kEvaluator);
  const std::vector<MemoryCurve> curves = memory_over_time(c, run.start, run.finish);
  std::vector<GpuMemoryTrack> tracks;
  // Folded, the block of replicas simulated: the others run the same.
  for (std::size_t i = 0; i < curves.size(); ++i)
    if (!c.graph.fold || i < c.graph.fold->representatives.size()) tracks.push_back({c.gpus[i], curves[i]});
  std::vector<std::string> peaks;
  for (int p = 0; p < a.pp; ++p) {
    const MemoryCurve& curve = curves[plan_gpu_index(plan, 0, p, 0)];
    auto peak = curve.begin();
    for (auto it = curve.begin(); it != curve.end(); ++it)
      if (it->second > peak->second) peak = it;
    peaks.push_back(fmt::format("{} {} at {}", a.virtual_stages > 1 ? "rank" : "stage", p, format_duration(peak->first)));
  }
  out << fmt::format("memory peaks    {} ({})\n", fmt::join(peaks, ", "), engine);
  const bool simulated_flows = shown && shown->network;
  const std::vector<FlowRecord> derived =
      simulated_flows ? std::vector<FlowRecord>() : flows_of_schedule(c.graph.graph, c.graph.placement, cluster, run.start, run.finish);
  write_chrome_trace(a.trace, c.graph.graph, cluster, c.graph.placement, run.start, run.finish,
                     simulated_flows ? std::span<const FlowRecord>(shown->network->flows) : std::span<const FlowRecord>(derived),
                     simulated_flows ? std::span<const SubflowRecord>(shown->network->subflows) : std::span<const SubflowRecord>(),
                     tracks);
  out << fmt::format("trace           {} ({}{}, transfers on link tracks{}; open in Perfetto)\n", a.trace, engine,
                     c.graph.fold ? fmt::format(", the {} GPUs simulated", c.graph.fold->representatives.size()) : "",
                     simulated_flows ? "" : ": from each producer's end to its consumer's use");
}

}  // namespace

namespace {

// The zoo's options need a model: with --workload they would be ignored.
void check_model_options(const PlanArgs& a) {
  if (a.workload.empty()) return;
  const PlanArgs d;
  const std::vector<std::pair<bool, const char*>> given = {
      {a.micro_batch_size != d.micro_batch_size, "--micro-batch-size"}, {a.sequence != d.sequence, "--sequence"},
      {a.gpu != d.gpu, "--gpu"}, {!a.precision.empty(), "--precision"}, {a.mfu != d.mfu, "--mfu"},
      {a.recompute != d.recompute, "--recompute"}, {a.attention != d.attention, "--attention"}, {!a.main_gradients.empty(), "--main-gradients"}, {a.cp != d.cp, "--cp"}};
  for (const auto& [set, flag] : given)
    if (set)
      throw InputError("command line", flag,
                       "describes a model built by placesim; a --workload file brings its own times: give --model or --model-file");
}

// The workload: a NEST file, a zoo model or a model file, at the plan's widths.
LayerWorkload plan_workload(const PlanArgs& a) {
  if (!a.workload.empty()) return load_nest_workload(a.workload);
  try {
    return model_from_args(a, "command line");
  } catch (const InputError& e) {
    // The zoo names its fields as a scenario would; here they are the flags.
    const std::map<std::string, std::string> flags = {{"tp", a.stage_tp.empty() ? "--tp" : "--tp/--stage-tp"},
                                                      {"mfu", "--mfu"}, {"sequence", "--sequence"},
                                                      {"gpu", "--gpu"}, {"model", "--model"}, {"precision", "--precision"},
                                                      {"micro_batch_size", "--micro-batch-size"}, {"context_parallel", "--cp"}};
    const auto flag = flags.find(e.field());
    if (e.file() != "command line") throw;
    throw InputError(e.file(), flag == flags.end() ? e.field() : flag->second, e.reason());
  }
}

// What an iteration of the plan achieves, per engine (Megatron's measures): tokens per second
// per GPU, model FLOP/s per GPU (Layer-level model FLOPs, no recomputation) and MFU against the
// GPU's dense peak at the precision; the pipeline bubble (pp - 1) / (v m) of the ideal time.
struct PlanReport {
  long gpus = 0, sequences = 0;
  double tokens = 0, model_flops = 0, peak = 0, bubble = 0, memory_peak = 0, capacity = 0;
  double causal_model_flops = 0;  // with causal attention counted half (0: not known, or no less than model_flops)
  GpuMemory memory;  // of the GPU holding the most
  std::vector<std::pair<std::string, double>> iteration_s;
  // The link whose bytes take longest at its bandwidth (static routes: every engine's), the least
  // time it is busy; unset for a folded graph, whose bytes stand for copies on other links.
  struct Link {
    std::string name;
    double bytes = 0, bandwidth = 0;
  };
  std::optional<Link> busiest;
};

// The link of the most bytes / bandwidth in one iteration of the graph (unset when folded or
// when nothing crosses a link).
std::optional<PlanReport::Link> busiest_link(const ExecutionGraph& g, const Cluster& cluster) {
  if (g.fold) return std::nullopt;
  std::optional<PlanReport::Link> best;
  for (const auto& [id, bytes] : link_bytes(g.graph, g.placement, cluster)) {
    const Link& l = cluster.link(id);
    if (!best || bytes / l.bandwidth > best->bytes / best->bandwidth) best = PlanReport::Link{l.name, bytes, l.bandwidth};
  }
  return best;
}


PlanReport plan_report(const PlanArgs& a, const ParallelPlan& plan, const LayerModel& model, const CompiledPlan& layout,
                       const Cluster& cluster, const EngineRuns& ran) {
  PlanReport r;
  r.gpus = static_cast<long>(layout.gpus.size());
  const PlanWork work = plan_work(plan, model);
  r.sequences = static_cast<long>(work.sequences);
  r.tokens = work.tokens;
  r.model_flops = work.model_flops;
  if (model.causal_model_flops > 0 && model.causal_model_flops < model.model_flops)
    r.causal_model_flops = model.causal_model_flops * plan.micro_batches * plan.dp;
  r.peak = plan_peak_flops(a);
  r.bubble = static_cast<double>(plan.pp - 1) / (plan.virtual_stages * plan.micro_batches);
  for (std::size_t i = 0; i < layout.memory.size(); ++i) {
    if (layout.memory[i].total() > r.memory_peak) r.capacity = cluster.device(layout.gpus[i]).memory_bytes, r.memory = layout.memory[i];
    r.memory_peak = std::max(r.memory_peak, layout.memory[i].total());
  }
  for (const EngineRun& run : ran.runs) r.iteration_s.emplace_back(run.engine, run.latency);
  return r;
}

// A bubble above this share of the ideal time is the plan's problem, not the cluster's: said with
// the knobs that shrink it (Llama 3 405B on 16,384 H100s at one virtual stage ran 46% slow).
constexpr double kBubbleWarning = 0.2;

std::string bubble_warning(const PlanReport& r, const ParallelPlan& plan) {
  if (r.bubble <= kBubbleWarning) return "";
  return fmt::format("the pipeline's ideal bubble is {:.0f}% of the ideal time: more virtual stages (--virtual-stages, now {}) "
                     "or more micro-batches per replica (now {}: a larger --global-batch, a smaller --micro-batch-size, "
                     "or a smaller dp) shrink it, as does a smaller --pp (now {})",
                     100 * r.bubble, plan.virtual_stages, plan.micro_batches, plan.pp);
}

// "compute 4.12 s (66%), bubble 0.61 s (10%), ...": the parts that are not zero.
std::string breakdown_text(const TimeBreakdown& b, double iteration) {
  std::vector<std::string> parts;
  for (const auto& [name, seconds] : b.parts())
    if (seconds > 1e-9 * iteration) {
      std::string label = name;
      std::replace(label.begin(), label.end(), '_', '-');
      parts.push_back(fmt::format("{} {} ({:.1f}%)", label, format_duration(seconds), 100 * seconds / iteration));
    }
  return fmt::format("{} on GPU {}, the slowest", fmt::join(parts, ", "), b.gpu);
}

// (The busiest link is left out of a folded graph's report: --full-graph counts every link.)
void print_report_text(const PlanReport& r, const ParallelPlan& plan, const PlanRun& run) {
  for (const auto& [engine, t] : r.iteration_s) {
    std::string line = fmt::format("{:<16}", engine);
    if (r.tokens > 0) line += fmt::format("{:.0f} tokens/s per GPU", r.tokens / t / r.gpus);
    if (r.model_flops > 0) line += fmt::format(", {:.1f} model TFLOP/s per GPU", r.model_flops / t / r.gpus / 1e12);
    if (r.model_flops > 0 && r.peak > 0) line += fmt::format(", MFU {:.1f}% of {:g} TFLOP/s", 100 * r.model_flops / t / r.gpus / r.peak, r.peak / 1e12);
    // Megatron's formula counts causal attention whole; beside it, what the masked attention computes.
    if (r.causal_model_flops > 0 && r.peak > 0)
      line += fmt::format(" ({:.1f}% counting causal attention half)", 100 * r.causal_model_flops / t / r.gpus / r.peak);
    if (r.tokens > 0) std::cout << line << "\n";
  }
  std::cout << fmt::format("bubble          {:.1f}% of the ideal time ((pp - 1) / (virtual stages x micro-batches))\n", 100 * r.bubble);
  for (const auto& [engine, b] : run.breakdown)
    for (const auto& [name, t] : r.iteration_s)
      if (name == engine) std::cout << fmt::format("{:<16}{}\n", engine + " time", breakdown_text(b, t));
  if (r.busiest) {
    const double busy = r.busiest->bytes / r.busiest->bandwidth;
    const EngineRun* it = run.runs.contended();  // the iteration it is set beside
    std::cout << fmt::format("busiest link    {}: {} at {} per iteration, busy at least {}{}\n", r.busiest->name,
                             format_bytes(r.busiest->bytes), format_bandwidth(r.busiest->bandwidth), format_duration(busy),
                             it ? fmt::format(" ({:.0f}% of the {} iteration)", 100 * busy / it->latency, it->engine) : std::string());
  }
  if (const std::string warning = bubble_warning(r, plan); !warning.empty()) std::cout << "warning         " << warning << "\n";
  for (const auto& [engine, samples] : run.seed_latencies) {
    if (samples.size() < 2) continue;  // one seed (or only fixed stragglers): the line above
    const Spread s = spread_of(samples);
    std::cout << fmt::format("{:<16}{} seeds: mean {}, standard deviation {}, {} to {}\n", engine + " seeds", samples.size(),
                             format_duration(s.mean), format_duration(s.stddev), format_duration(s.min), format_duration(s.max));
  }
}

void print_report_json(const PlanArgs& a, const ParallelPlan& plan, const PlanReport& r, const PlanRun& run) {
  nlohmann::json j, per_engine = nlohmann::json::object(), tokens = nlohmann::json::object(), tflops = nlohmann::json::object(),
                    mfu = nlohmann::json::object(), mfu_causal = nlohmann::json::object();
  for (const auto& [engine, t] : r.iteration_s) {
    per_engine[engine] = t;
    if (r.tokens > 0) tokens[engine] = r.tokens / t / r.gpus;
    if (r.model_flops > 0) tflops[engine] = r.model_flops / t / r.gpus / 1e12;
    if (r.model_flops > 0 && r.peak > 0) mfu[engine] = r.model_flops / t / r.gpus / r.peak;
    if (r.causal_model_flops > 0 && r.peak > 0) mfu_causal[engine] = r.causal_model_flops / t / r.gpus / r.peak;
  }
  j["iteration_s"] = per_engine;
  j["tokens_per_s_per_gpu"] = tokens;
  j["model_tflops_per_gpu"] = tflops;
  j["mfu"] = mfu;
  j["mfu_causal"] = mfu_causal;  // causal attention counted half ({} where the model is bidirectional or not known)
  j["peak_flops"] = r.peak;
  j["pipeline_bubble"] = r.bubble;
  // Where the time went, per engine that scheduled: the parts sum to iteration_s.
  if (r.busiest)
    j["busiest_link"] = {{"link", r.busiest->name}, {"bytes", r.busiest->bytes}, {"bandwidth", r.busiest->bandwidth},
                         {"busy_at_least", r.busiest->bytes / r.busiest->bandwidth}};
  nlohmann::json breakdown = nlohmann::json::object();
  for (const auto& [engine, b] : run.breakdown) breakdown[engine] = breakdown_json(b);
  j["breakdown"] = breakdown;
  // With variability: each engine's iteration over the seeds (iteration_s is the first seed's).
  nlohmann::json seeds = nlohmann::json::object();
  for (const auto& [engine, samples] : run.seed_latencies) {
    const Spread s = spread_of(samples);
    seeds[engine] = {{"mean_s", s.mean}, {"stddev_s", s.stddev}, {"min_s", s.min}, {"max_s", s.max}, {"iteration_s", samples}};
  }
  j["variability"] = {{"gpu_speed_cv", a.gpu_speed_cv}, {"slow_gpus", a.slow_gpu}, {"kernel_jitter_cv", a.kernel_jitter_cv}, {"first_seed", a.seed},
                      {"seeds", a.seeds}, {"per_engine", seeds}};
  j["memory_per_component_bytes"] = {{"parameters", r.memory.parameters}, {"gradients", r.memory.gradients},
                                     {"optimizer_states", r.memory.optimizer_states}, {"activations", r.memory.activations},
                                     {"workspace", r.memory.workspace}};
  const std::string warning = bubble_warning(r, plan);
  j["warnings"] = warning.empty() ? nlohmann::json::array() : nlohmann::json::array({warning});
  if (!warning.empty()) std::cerr << "warning         " << warning << "\n";
  j["memory_per_gpu_bytes"] = r.memory_peak;
  j["memory_capacity_bytes"] = r.capacity;
  j["gpus"] = r.gpus;
  j["global_batch"] = r.sequences;
  // What was simulated: the folded graph stands for `copies` copies of its block of replicas.
  j["folding"] = {{"replicas_simulated", run.fold.replicas}, {"copies", run.fold.copies}, {"exact", run.fold.exact},
                  {"reason", run.fold.reason}};
  j["graph"] = {{"operators", run.compiled.graph.graph.num_operators()}, {"tensors", run.compiled.graph.graph.num_tensors()},
                {"collectives", enum_name<CollectiveDetail>(kCollectiveDetailNames, run.detail)},
                {"compile_s", run.compile_s}, {"notes", run.notes}};
  j["plan"] = {{"tp", plan.tp}, {"pp", plan.pp}, {"dp", plan.dp / plan.cp}, {"cp", plan.cp}, {"micro_batches", plan.micro_batches},
               {"virtual_stages", plan.virtual_stages}, {"zero", plan.zero}, {"sequence_parallel", plan.sequence_parallel},
               {"overlap_param_gather", plan.overlap_param_gather}, {"overlap_grad_reduce", plan.overlap_grad_reduce},
               {"tp_comm_overlap", plan.tp_comm_overlap}, {"zero3_prefetch", plan.zero3_prefetch}, {"framework", a.framework},
               {"recompute", a.workload.empty() ? a.recompute : "workload's"}};
  std::cout << j.dump() << "\n";
}

}  // namespace

int cmd_plan(const PlanArgs& args) {
  PlanArgs a = args;
  apply_framework(a, "command line");
  if (static_cast<int>(!a.workload.empty()) + !a.model.empty() + !a.model_file.empty() != 1)
    throw InputError("command line", "--workload/--model/--model-file", "expected one of --workload FILE, --model NAME or --model-file FILE");
  check_model_options(a);
  // The trace's folder is checked before anything runs: a plan of a thousand GPUs takes minutes.
  if (!a.trace.empty()) {
    const std::filesystem::path folder = std::filesystem::path(a.trace).parent_path();
    std::error_code error;
    if (std::filesystem::is_directory(a.trace, error))
      throw InputError("command line", "--trace", fmt::format("'{}' is a folder; expected a file to write", a.trace));
    if (!folder.empty() && !std::filesystem::is_directory(folder, error))
      throw InputError("command line", "--trace", fmt::format("the folder '{}' does not exist", folder.string()));
  }
  check_chakra_option(a);
  const LayerWorkload workload = plan_workload(a);
  const Cluster cluster = load_cluster_file(a.cluster);
  const LayerModel& model = workload.at(a.tp, "command line", "--tp");
  ParallelPlan plan = plan_from_args(a, "command line", "--schedule", "--gradient-algorithm");
  apply_stage_split(plan, a, model, "command line", "--stage-split");
  if (const std::string why = plan_problem(workload, plan, cluster); !why.empty())
    throw InputError("command line",
                     !a.stage_starts.empty() ? "--stage-starts/--pp/--virtual-stages"
                     : !a.stage_tp.empty()   ? "--tp/--stage-tp/--pp/--dp/--cp/--ep/--virtual-stages/--sequence-parallel"
                     : a.virtual_stages > 1  ? "--tp/--pp/--dp/--cp/--ep/--micro-batches/--virtual-stages/--schedule"
                     : a.sequence_parallel ? "--tp/--pp/--dp/--cp/--ep/--sequence-parallel"
                                           : "--tp/--pp/--dp/--cp/--ep",
                     why);
  // The layout (stages, GPUs, memory at the peak) first: a plan that does not fit is said before
  // seconds go into building its execution graph.
  const CompiledPlan layout = plan_layout(workload, plan, cluster);
  // With --json the text goes to stderr, the object alone to stdout.
  std::ostream& out = a.json ? std::cerr : std::cout;
  out << fmt::format("workload        {} ({} layers at tp {})\n", workload.source, model.layers.size(),
                     a.stage_tp.empty() ? fmt::format("{}", a.tp) : fmt::format("{}", fmt::join(a.stage_tp, ", ")));
  out << fmt::format("cluster         {}\n", cluster.description);
  const std::string widths = a.stage_tp.empty() ? fmt::format("tp {} x pp {}", a.tp, a.pp)
                                                : fmt::format("stage widths {} (pp {})", fmt::join(a.stage_tp, " + "), a.pp);
  out << fmt::format("plan            {} x dp {}{} = {} GPUs{}{}, {} micro-batches, {}{}, ZeRO {}\n", widths, a.dp,
                     a.cp > 1 ? fmt::format(" x cp {}", a.cp) : "",
                     layout.gpus.size(), a.ep > 1 ? fmt::format(" (ep {})", a.ep) : "",
                     a.sequence_parallel ? ", sequence-parallel" : "", plan.micro_batches,
                     a.virtual_stages > 1 ? "interleaved " : "", a.schedule, plan.zero);
  out << fmt::format("framework       {}: {}{}{}\n", a.framework,
                     framework_of(a).summary,
                     a.kept.empty() ? "" : fmt::format("; kept as you gave them: {}", fmt::join(a.kept, ", ")),
                     a.overlap_p2p_comm ? "; pipeline sends beside the next operator" : "");
  if (static_cast<int>(layout.gpus.size()) < cluster.num_devices())
    out << fmt::format("note            the plan runs {} of the cluster's {} GPUs (tp x pp x dp{}); the rest stay idle\n",
                       layout.gpus.size(), cluster.num_devices(), a.cp > 1 ? " x cp" : "");
  out << fmt::format("stages          first layers {}\n", fmt::join(layout.stage_starts, ", "));
  for (int p = 0; p < a.pp; ++p) {
    const std::size_t i = plan_gpu_index(plan, 0, p, 0);
    const GpuMemory& m = layout.memory[i];
    out << fmt::format("memory {} {:<3}{} of {} per GPU: parameters {}, gradients {}, optimizer states {}, "
                       "activations {} ({} in flight)\n",
                       a.virtual_stages > 1 ? "rank" : "stage", p, format_bytes(m.total()),
                       format_bytes(cluster.device(layout.gpus[i]).memory_bytes), format_bytes(m.parameters),
                       format_bytes(m.gradients), format_bytes(m.optimizer_states), format_bytes(m.activations),
                       layout.in_flight[p]);
  }
  if (!layout.infeasible.empty()) {
    std::cerr << "plan: infeasible: " << layout.infeasible << "\n";
    return kExitFailed;
  }
  PlanRunOptions options = plan_run_options(a, "command line");
  for (const SlowGpu& slow : options.variability.slow_gpus)
    if (slow.gpu >= cluster.num_devices())
      throw InputError("command line", "--slow-gpu",
                       fmt::format("GPU {} is not in the cluster (GPUs 0 to {})", slow.gpu, cluster.num_devices() - 1));
  // Chakra traces are one per GPU of the cluster: every replica's.
  if (!a.chakra.empty() && options.fold != FoldMode::Full) {
    options.fold = FoldMode::Full;
    out << "folding         the full graph: --chakra writes every GPU's trace\n";
  }
  PlanRun simulated;
  try {
    simulated = simulate_plan(workload, plan, cluster, options);
  } catch (const GraphTooLarge& e) {
    std::cerr << "plan: too large for this machine: " << e.what() << "\n";
    return kExitFailed;
  }
  const CompiledPlan& c = simulated.compiled;
  const EngineRuns& ran = simulated.runs;
  if (a.chakra.empty()) out << fmt::format("folding         {}\n", simulated.fold.reason);
  for (const SlowGpu& slow : options.variability.slow_gpus) {
    const auto at = std::find(layout.gpus.begin(), layout.gpus.end(), slow.gpu);
    out << fmt::format("slow GPU        {}: compute x {:g}{}\n", slow.gpu, slow.slowdown,
                       at == layout.gpus.end()  ? " (the plan does not use it)"
                       : !a.stage_tp.empty()    ? ""
                                                : fmt::format(" (replica {}, pipeline rank {})", (at - layout.gpus.begin()) / (a.tp * a.pp),
                                                             (at - layout.gpus.begin()) / a.tp % a.pp));
  }
  for (const std::string& note : simulated.notes) out << fmt::format("                {}\n", note);
  out << fmt::format("graph           {} operators, {} tensors (compiled in {}){}\n", c.graph.graph.num_operators(),
                     c.graph.graph.num_tensors(), format_duration(simulated.compile_s),
                     simulated.detail == CollectiveDetail::Condensed ? ", ring phases condensed" : "");
  for (const EngineRun& run : ran.runs)
    out << fmt::format("{:<16}{} per iteration ({} in {})\n", run.engine, format_duration(run.latency),
                       run.schedule ? "simulated" : "priced", format_duration(run.wall_s));
  PlanReport report = plan_report(a, plan, model, layout, cluster, ran);
  report.busiest = busiest_link(c.graph, cluster);
  if (a.json) print_report_json(a, plan, report, simulated);
  else print_report_text(report, plan, simulated);
  if (!a.chakra.empty()) write_plan_chakra(a, c, cluster, ran, widths + fmt::format(" x dp {}", a.dp));
  if (!a.trace.empty()) write_plan_trace(a, plan, c, cluster, ran, out);
  return kExitOk;
}

}  // namespace placesim
