#include "plan_cli.h"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>

#include "cli_conventions.h"
#include "sim/engines/engine.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/core/execution_graph.h"
#include "sim/plans/layer_model.h"
#include "sim/models/gpu.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/parallel_plan.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/io/trace.h"
#include "sim/core/units.h"
#include "topologies/registry.h"

namespace placesim {

CLI::App* add_plan_command(CLI::App& app, PlanArgs& a) {
  auto* c = app.add_subcommand("plan", "simulate one data/tensor/pipeline-parallel plan of a layer-level workload (docs/parallelism.md)");
  auto* workload = c->add_option("--workload", a.workload, "per-layer workload (NEST's JSON, ../shared/workloads/nest)")
                       ->check(CLI::ExistingFile);
  auto* model = c->add_option("--model", a.model, "a layer-level model of the zoo instead: " + models::layer_zoo_names())
                    ->check(one_of([] {
                      std::vector<std::string> names;
                      for (const auto& shape : models::layer_zoo()) names.push_back(shape.name);
                      return names;
                    }()));
  workload->excludes(model);
  // The zoo's options mean nothing to a measured workload: each needs --model.
  c->add_option("--micro-batch-size", a.micro_batch_size, "--model: sequences per micro-batch")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str()
      ->needs(model);
  c->add_option("--sequence", a.sequence, "--model: tokens per sequence (default and most: the model's)")
      ->check(whole_number(1, 1 << 24))
      ->needs(model);
  c->add_option("--gpu", a.gpu, "--model: v100, a100 or h100, for its fp16 tensor-core peak")
      ->check(one_of([] {
        std::vector<std::string> names;  // the presets with a tensor-core peak
        for (const auto& gpu : models::gpu_presets())
          if (gpu.tensor_flops > 0) names.push_back(gpu.name);
        return names;
      }()))
      ->capture_default_str()
      ->needs(model);
  c->add_option("--mfu", a.mfu, "--model: achieved fraction of that peak")->check(number_in(Range{0, 1, true, false}))->capture_default_str()->needs(model);
  c->add_flag("--no-recompute", a.no_recompute, "--model: keep every activation instead of recomputing the layers in the backward")
      ->needs(model);
  c->add_option("--cluster", a.cluster, "cluster YAML file (a `cluster:` block)")->required()->check(CLI::ExistingFile);
  c->add_option("--tp", a.tp, "tensor-parallel width (the workload must have it)")->check(whole_number(1, 1 << 16))->capture_default_str();
  c->add_option("--stage-tp", a.stage_tp,
                "per stage, its own tensor-parallel width, comma-separated, pp of them, the first --tp (e.g. 8,4): each stage "
                "runs the layers at its width")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--pp", a.pp, "pipeline stages (balanced by compute)")->check(whole_number(1, 1 << 16))->capture_default_str();
  c->add_option("--dp", a.dp, "data-parallel replicas")->check(whole_number(1, 1 << 20))->capture_default_str();
  c->add_option("--micro-batches", a.micro_batches, "micro-batches per iteration")->check(whole_number(1, 1 << 16))->capture_default_str();
  c->add_option("--schedule", a.schedule, "gpipe or 1f1b")->check(one_of({"gpipe", "1f1b"}))->capture_default_str();
  c->add_option("--virtual-stages", a.virtual_stages,
                "interleaved 1F1B: stages per pipeline rank (Megatron-LM's virtual pipeline; micro-batches a multiple of pp)")
      ->check(whole_number(1, 1024))
      ->capture_default_str();
  c->add_option("--zero", a.zero, "ZeRO stage over the replicas")->check(whole_number(0, 3))->capture_default_str();
  c->add_option("--ep", a.ep, "expert-parallel width, carved out of the replicas (divides --dp)")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_flag("--no-scatter-gather", a.no_scatter_gather,
              "between stages each tensor rank sends the whole activation (default: 1/tp, all-gathered by the next stage)");
  c->add_flag("--sequence-parallel", a.sequence_parallel,
              "Megatron's sequence parallelism (--tp >= 2): reduce-scatters and all-gathers, activations split along the sequence");
  c->add_option("--gradient-algorithm", a.gradient_algorithm, "collective algorithm of the gradient reduction")
      ->check(one_of({"ring", "tree", "halving-doubling", "direct", "hierarchical", "multi-level"}))
      ->capture_default_str();
  c->add_option("--collectives", a.collectives,
                "ring phases message by message, or condensed to a flow per ring neighbour (plans of hundreds of replicas)")
      ->check(one_of({"messages", "condensed"}))
      ->capture_default_str();
  c->add_option("--engine", a.engine, "evaluator, flow, simgrid, estimate (NEST's analytical estimate) or all")
      ->check(one_of({std::string(kEvaluator), std::string(kFlow), std::string(kSimGrid), std::string(kEstimate), "all"}))
      ->capture_default_str();
  c->add_option("--order", a.order,
                "fcfs: every engine runs each GPU's operators first come, first served on its own arrival times; scheduler: "
                "the evaluator's list schedule, which the flow engine and SimGrid replay under contention")
      ->check(one_of({"fcfs", "scheduler"}))
      ->capture_default_str();
  c->add_option("--trace", a.trace,
                "write the evaluator's timeline of the iteration to FILE (Chrome trace JSON, for Perfetto), with each GPU's "
                "memory over time");
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
  const std::string prefix = a.model.empty() ? std::filesystem::path(a.workload).stem().string() : a.model;
  const ChakraWritten written =
      write_chakra_traces(a.chakra, prefix, c.graph.graph, c.graph.placement, cluster.num_devices(), run->schedule->start,
                          {fmt::format("{} ({})", prefix, plan_label), run->engine, run->latency}, c.graph.collectives);
  for (const auto& w : written.warnings) std::cerr << "warning: " << a.chakra << ": " << w << "\n";
  std::cout << fmt::format("chakra          {} ({} rank{}, the {} timeline)\n", a.chakra, cluster.num_devices(),
                           cluster.num_devices() == 1 ? "" : "s", run->engine);
}

}  // namespace

int cmd_plan(const PlanArgs& a) {
  if (a.workload.empty() == a.model.empty())
    throw InputError("command line", "--workload/--model", "expected one of --workload FILE or --model NAME");
  models::LayerZooOptions zoo;
  zoo.micro_batch = a.micro_batch_size;
  zoo.sequence = a.sequence;
  zoo.gpu = a.gpu;
  zoo.mfu = a.mfu;
  zoo.recompute = !a.no_recompute;
  // The zoo names its fields as a scenario would; here they are the flags.
  auto build_zoo_model = [&] {
    try {
      std::vector<int> widths{a.tp};
      for (int w : a.stage_tp)
        if (std::find(widths.begin(), widths.end(), w) == widths.end()) widths.push_back(w);
      return models::build_layer_model(a.model, zoo, widths, "command line");
    } catch (const InputError& e) {
      const std::map<std::string, std::string> flags = {{"tp", a.stage_tp.empty() ? "--tp" : "--tp/--stage-tp"},
                                                        {"mfu", "--mfu"}, {"sequence", "--sequence"},
                                                        {"gpu", "--gpu"}, {"model", "--model"},
                                                        {"micro_batch_size", "--micro-batch-size"}};
      const auto flag = flags.find(e.field());
      throw InputError(e.file(), flag == flags.end() ? e.field() : flag->second, e.reason());
    }
  };
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
  const LayerWorkload workload = a.model.empty() ? load_nest_workload(a.workload) : build_zoo_model();
  const Cluster cluster = load_cluster_file(a.cluster);
  const LayerModel& model = workload.at(a.tp, "command line", "--tp");
  const ParallelPlan plan = plan_from_args(a, "command line", "--schedule", "--gradient-algorithm");
  if (const std::string why = plan_problem(workload, plan, cluster); !why.empty())
    throw InputError("command line",
                     !a.stage_tp.empty()   ? "--tp/--stage-tp/--pp/--dp/--ep/--virtual-stages/--sequence-parallel"
                     : a.virtual_stages > 1  ? "--tp/--pp/--dp/--ep/--micro-batches/--virtual-stages/--schedule"
                     : a.sequence_parallel ? "--tp/--pp/--dp/--ep/--sequence-parallel"
                                           : "--tp/--pp/--dp/--ep",
                     why);
  // The layout (stages, GPUs, memory at the peak) first: a plan that does not fit is said before
  // seconds go into building its execution graph.
  const CollectiveDetail detail = enum_parse<CollectiveDetail>(kCollectiveDetailNames, a.collectives, "command line", "--collectives");
  const CompiledPlan layout = plan_layout(workload, plan, cluster);
  std::cout << fmt::format("workload        {} ({} layers at tp {})\n", workload.source, model.layers.size(),
                           a.stage_tp.empty() ? fmt::format("{}", a.tp) : fmt::format("{}", fmt::join(a.stage_tp, ", ")));
  std::cout << fmt::format("cluster         {}\n", cluster.description);
  const std::string widths = a.stage_tp.empty() ? fmt::format("tp {} x pp {}", a.tp, a.pp)
                                                : fmt::format("stage widths {} (pp {})", fmt::join(a.stage_tp, " + "), a.pp);
  std::cout << fmt::format("plan            {} x dp {} = {} GPUs{}{}, {} micro-batches, {}{}, ZeRO {}\n", widths,
                           a.dp, layout.gpus.size(), a.ep > 1 ? fmt::format(" (ep {})", a.ep) : "",
                           a.sequence_parallel ? ", sequence-parallel" : "", a.micro_batches,
                           a.virtual_stages > 1 ? "interleaved " : "", a.schedule, a.zero);
  std::cout << fmt::format("stages          first layers {}\n", fmt::join(layout.stage_starts, ", "));
  for (int p = 0; p < a.pp; ++p) {
    const std::size_t i = plan_gpu_index(plan, 0, p, 0);
    const GpuMemory& m = layout.memory[i];
    std::cout << fmt::format("memory {} {:<3}{} of {} per GPU: parameters {}, gradients {}, optimizer states {}, "
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
  const auto t0 = std::chrono::steady_clock::now();
  CompiledPlan c = compile_plan(workload, plan, cluster, detail);
  const double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("graph           {} operators, {} tensors (compiled in {}){}\n", c.graph.graph.num_operators(),
                           c.graph.graph.num_tensors(), format_duration(compile_s),
                           a.collectives == "condensed" ? ", ring phases condensed" : "");
  const EngineSet which = EngineSet::parse(a.engine, "command line", "--engine");
  const EngineRuns ran = run_engines(c.graph, cluster, which, enum_parse<RunOrder>(kRunOrderNames, a.order, "command line", "--order"));
  for (const EngineRun& run : ran.runs)
    std::cout << fmt::format("{:<16}{} per iteration ({} in {})\n", run.engine, format_duration(run.latency),
                             run.schedule ? "simulated" : "priced", format_duration(run.wall_s));
  if (!a.chakra.empty()) write_plan_chakra(a, c, cluster, ran, widths + fmt::format(" x dp {}", a.dp));
  if (!a.trace.empty()) {
    // The evaluator's run: when each stage reaches its memory peak, and the whole timeline.
    const Schedule run = Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
    const std::vector<MemoryCurve> curves = memory_over_time(c, run.start, run.finish);
    std::vector<GpuMemoryTrack> tracks;
    for (std::size_t i = 0; i < curves.size(); ++i) tracks.push_back({c.gpus[i], curves[i]});
    std::vector<std::string> peaks;
    for (int p = 0; p < a.pp; ++p) {
      const MemoryCurve& curve = curves[plan_gpu_index(plan, 0, p, 0)];
      auto peak = curve.begin();
      for (auto it = curve.begin(); it != curve.end(); ++it)
        if (it->second > peak->second) peak = it;
      peaks.push_back(fmt::format("{} {} at {}", a.virtual_stages > 1 ? "rank" : "stage", p, format_duration(peak->first)));
    }
    std::cout << fmt::format("memory peaks    {} (evaluator)\n", fmt::join(peaks, ", "));
    write_chrome_trace(a.trace, c.graph.graph, cluster, c.graph.placement, run.start, run.finish, {}, {}, tracks);
    std::cout << fmt::format("trace           {} (evaluator; open in Perfetto)\n", a.trace);
  }
  return kExitOk;
}

}  // namespace placesim
