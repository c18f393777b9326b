#include "scenarios/runner/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>

#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "placement/strategies/single_device/single_device.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/io/placement_io.h"
#include "sim/io/trace.h"
#include "sim/plans/data_parallel.h"
#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_breakdown.h"
#include "sim/plans/plan_folding.h"
#include "topologies/registry.h"

namespace placesim {

namespace fs = std::filesystem;

const Schedule* Measurement::evaluator_schedule() const {
  const EngineRun* r = runs.find(kEvaluator);
  return r && r->schedule ? &*r->schedule : nullptr;
}

const EngineRun* Measurement::timeline() const {
  for (std::string_view engine : {kSimGrid, kEvaluator})
    if (const EngineRun* r = runs.find(engine); r && r->schedule) return r;
  return nullptr;
}

Measurement measure(const PlacedGraph& graph, const Cluster& cluster, EngineSet engines, RunOrder order,
                    std::optional<std::vector<double>> memory) {
  Measurement m;
  // Any engine that schedules brings the evaluator: its bounds and busy times are every record's.
  if (!engines.estimate_only()) engines = engines.with(kEvaluator);
  m.runs = run_engines(graph, cluster, engines, order);
  m.bounds = Evaluator(graph.graph, cluster).lower_bounds();
  m.memory = memory ? std::move(*memory) : device_memory(graph.graph, graph.placement, cluster.num_devices());
  for (int d = 0; d < cluster.num_devices(); ++d) {
    m.peak_memory = std::max(m.peak_memory, m.memory[d]);
    if (m.memory[d] > cluster.device(d).memory_bytes) m.oom = true;
  }
  if (const EngineRun* simgrid = m.runs.find(kSimGrid); simgrid && simgrid->network) {
    const double span = simgrid->latency;
    for (std::size_t l = 0; l < simgrid->network->links.size(); ++l) {
      const LinkStats& s = simgrid->network->links[l];
      if (s.bytes <= 0) continue;
      const Link& link = cluster.link(static_cast<int>(l));
      m.links.push_back({link.name, s.bytes, s.busy_s, span > 0 ? s.busy_s / span : 0.0,
                         span > 0 ? s.bytes / (link.bandwidth * span) : 0.0});
    }
    std::sort(m.links.begin(), m.links.end(), [](const LinkUse& a, const LinkUse& b) { return a.bytes > b.bytes; });
  }
  return m;
}

Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              EngineSet engines, RunOrder order) {
  return measure(PlacedGraph(graph, placement), cluster, engines, order);
}

void write_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                 const std::vector<DeviceId>& placement, const Measurement& m, const CompiledPlan* plan) {
  const EngineRun* run = m.timeline();
  if (!run) return;  // nothing was scheduled
  const Schedule& s = *run->schedule;
  // A plan's GPUs' memory over the iteration as this engine ran it.
  std::vector<GpuMemoryTrack> memory;
  if (plan) {
    const std::vector<MemoryCurve> curves = memory_over_time(*plan, s.start, s.finish);
    for (std::size_t i = 0; i < curves.size(); ++i) memory.push_back({plan->gpus[i], curves[i]});
  }
  if (run->network)
    write_chrome_trace(path, graph, cluster, placement, s.start, s.finish, run->network->flows, run->network->subflows, memory);
  else
    write_chrome_trace(path, graph, cluster, placement, s.start, s.finish, {}, {}, memory);
}

ChakraRun chakra_run_of(const Measurement& m, const std::string& source) {
  const EngineRun* run = m.timeline();
  return {source, run ? run->engine : std::string(kEstimate), run ? run->latency : 0.0};
}

std::span<const double> chakra_start_of(const Measurement& m) {
  const EngineRun* run = m.timeline();
  return run ? std::span<const double>(run->schedule->start) : std::span<const double>();
}

// A point's file stem as a file name: a sweep's stems are made safe already (`mcmc_gpus=4`,
// scenarios/runner/sweep.cpp); a label alone keeps letters, digits, '-', '_', '.' and '='.
std::string file_safe(const std::string& label) {
  std::string out;
  for (char c : label)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '=') ? c : '_';
  return out;
}


namespace {

// Why a measurement holds a value that is not a finite number, or "" when every value is finite.
// JSON has no infinity or NaN (they would be written as null, as if absent), and such a point
// cannot be compared with others, so the runner records it as a failed point with this reason.
std::string non_finite_reason(const PlacedGraph& g, const Cluster& cluster, const Measurement& m) {
  std::string what;
  auto check = [&](double v, const std::string& name) {
    if (what.empty() && !std::isfinite(v)) what = fmt::format("{} is {}", name, v);
  };
  for (const EngineRun& r : m.runs.runs)
    if (r.engine != kEstimate)
      check(r.latency, r.engine == kEvaluator ? std::string("the evaluator's latency") : fmt::format("the {} engine's latency", r.engine));
  check(m.bounds.critical_path, "the critical-path lower bound");
  check(m.bounds.work_per_device, "the work-per-GPU lower bound");
  check(m.peak_memory, "the peak memory");
  if (const Schedule* s = m.evaluator_schedule())
    for (double busy : s->busy) check(busy, "a GPU's busy time");
  if (what.empty()) return "";
  for (const Tensor& t : g.graph.tensors())
    if (t.bytes > 0 && !cluster.reachable(g.placement[t.src], g.placement[t.dst]))
      return fmt::format("{}, not a finite number: tensor '{}' -> '{}' goes from GPU {} to GPU {}, which the cluster "
                         "cannot reach (no bandwidth between them)",
                         what, g.graph.op(t.src).name, g.graph.op(t.dst).name, g.placement[t.src], g.placement[t.dst]);
  return what + ", not a finite number: the graph's times and sizes add up beyond what the engines can represent";
}

// What every point measures and records, however it was placed or planned: the engines' run, the
// finiteness check, the trace and the Chakra traces.
struct Measured {
  PlacedGraph graph;
  std::span<const AppendedCollective> collectives;  // named as collectives in the Chakra traces
  const Cluster& cluster;
  EngineSet engines;
  std::optional<std::vector<double>> memory;  // a plan's memory per GPU (else the operators')
  const CompiledPlan* plan = nullptr;
};

PointOutcome measure_and_record(const Scenario& scenario, const StrategySpec& spec, const Measured& what,
                                PointMeasurement recorded, const fs::path& folder, const std::string& file_stem) {
  PointOutcome out;
  const PlacedGraph& g = what.graph;
  Measurement m = measure(g, what.cluster, what.engines, scenario.simulation.order, what.memory);
  if (what.plan) m.oom = false;  // a plan that does not fit is infeasible and never run
  if (const std::string reason = non_finite_reason(g, what.cluster, m); !reason.empty()) {
    out.reason = reason;
    return out;
  }
  for (const EngineRun& r : m.runs.runs)
    if (r.engine != kEstimate || std::isfinite(r.latency)) recorded.engines.push_back({r.engine, r.latency, r.wall_s});
  recorded.bounds = m.bounds;
  recorded.memory_per_gpu = m.memory;
  recorded.peak_memory = m.peak_memory;
  recorded.oom = m.oom;
  if (const Schedule* s = m.evaluator_schedule()) recorded.busy_per_gpu = s->busy;
  // A plan's iteration, where it went per engine that scheduled (sim/plans/plan_breakdown.h).
  if (what.plan)
    for (const EngineRun& r : m.runs.runs)
      if (r.schedule)
        recorded.strategy_report["breakdown"][r.engine] = breakdown_json(time_breakdown(g.graph, g.placement, *r.schedule, r.latency));
  recorded.links = m.links;
  if (scenario.simulation.trace && m.timeline()) {
    recorded.trace_file = "trace-" + file_safe(file_stem) + (scenario.simulation.trace_gzip ? ".json.gz" : ".json");
    write_trace((folder / recorded.trace_file).string(), g.graph, what.cluster, {g.placement.begin(), g.placement.end()}, m,
                what.plan);
  }
  if (scenario.chakra) {
    const std::string name = file_safe(file_stem);
    const auto warnings = write_chakra_traces((folder / ("chakra-" + name)).string(), name, g.graph, g.placement,
                                              what.cluster.num_devices(), chakra_start_of(m),
                                              chakra_run_of(m, scenario.name + " / " + spec.label), what.collectives)
                              .warnings;
    if (!warnings.empty()) recorded.strategy_report["chakra_warnings"] = warnings;
  }
  out.status = m.oom ? PointStatus::Oom : PointStatus::Ok;
  out.measurement = std::move(recorded);
  return out;
}

// Runs `point` and turns what it throws into the point's status: an infeasible problem, or a
// failure that is recorded while the other points still run. An OutputError (the results folder,
// not the strategy) is thrown on: the caller stops the run.
PointOutcome guarded(const std::function<PointOutcome()>& point) {
  PointOutcome out;
  try {
    return point();
  } catch (const OutputError&) {
    throw;
  } catch (const InfeasibleProblem& e) {
    out.status = PointStatus::Infeasible;  // nothing to measure, and no strategy could have done better
    out.reason = e.what();
  } catch (const std::exception& e) {
    out.reason = e.what();
  }
  return out;
}

// Places the graph; with `coarsen:`, places the coarse graph and gives every operator its coarse
// operator's GPU. Coarsening time counts as search time (it is part of finding the placement) and
// is also reported on its own, with the coarse graph's size, under strategy_report.coarsening.
PlacementResult place(const StrategySpec& spec, Strategy& strategy, const Graph& graph, const Cluster& cluster) {
  if (!spec.coarsen) return strategy.place(graph, cluster);
  const auto t0 = std::chrono::steady_clock::now();
  const Coarsening coarse = coarsen(graph, *spec.coarsen);
  const double coarsen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  PlacementResult placed = strategy.place(coarse.coarse, cluster);
  placed.placement = expand_placement(coarse, placed.placement);
  validate_placement(graph, cluster, placed.placement, "strategy '" + spec.label + "' (expanded from the coarse graph)");
  placed.search_seconds += coarsen_s;
  nlohmann::json info = {{"scheme", std::string(coarsening_scheme_name(spec.coarsen->scheme))},
                         {"coarse_operators", coarse.coarse.num_operators()},
                         {"coarse_tensors", coarse.coarse.num_tensors()},
                         {"coarsening_time", coarsen_s}};
  if (spec.coarsen->scheme == CoarseningScheme::PlaceTo) info["target"] = spec.coarsen->target;
  placed.details["coarsening"] = std::move(info);
  return placed;
}

// `refine:` on what the strategy returned (expanded, when coarsened), on the cluster it is measured
// on, under the strategy's own cost model unless `refine` names one. Its time counts as search
// time, as coarsening's does; strategy_report.refine says what it did.
void refine_placed(const StrategySpec& spec, const Strategy& strategy, const Graph& graph, const Cluster& cluster,
                   PlacementResult& placed) {
  RefineResult refined = refine_placement(graph, cluster, std::move(placed.placement), *spec.refine,
                                          strategy.common_options().cost_model);
  validate_placement(graph, cluster, refined.placement, "strategy '" + spec.label + "' (refined)");
  placed.placement = std::move(refined.placement);
  placed.search_seconds += refined.seconds;
  placed.details["refine"] = refine_report(refined);
}

// The scenario's GPU queue order for the evaluator alone (a replica's placement, say).
GpuQueue evaluator_queue(RunOrder order) { return order == RunOrder::Fcfs ? GpuQueue::Fcfs : GpuQueue::Rank; }

// With data_parallel, the placement's replicas with the gradients' all-reduces, as the engines run it.
DataParallelGraph replicated_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                   const Cluster& replica, const Cluster& run_on, const PlacementResult& placed,
                                   nlohmann::json& details) {
  DataParallelGraph replicated =
      replicate_data_parallel(graph, placed.placement, run_on, *spec.data_parallel, scenario.simulation.collectives);
  details["data_parallel"] = {
      {"replicas", spec.data_parallel->replicas},
      {"gpus_per_replica", replicated.gpus_per_replica},
      {"algorithm", std::string(enum_name<CollectiveAlgorithm>(collective_algorithm_names(), spec.data_parallel->algorithm))},
      {"bucket_bytes", spec.data_parallel->bucket_bytes},
      {"gradients", replicated.gradients},
      {"gradient_bytes", replicated.gradient_bytes},
      {"all_reduces", replicated.all_reduces},
      // The placement alone on its replica, contention-free, in the scenario's order: what
      // replication adds is the rest.
      {"one_replica_evaluator_latency",
       Evaluator(graph, replica).schedule(placed.placement, evaluator_queue(scenario.simulation.order)).latency}};
  if (const std::string note = data_parallel_layout_note(run_on, spec.data_parallel->replicas); !note.empty())
    details["data_parallel"]["layout_warning"] = note;
  return replicated;
}

// The graph alone on single-device's GPU, contention-free, when it fits there.
std::optional<double> single_device_latency(const Graph& graph, const Cluster& cluster) {
  const DeviceId gpu = best_single_device(graph, cluster);
  if (graph.total_memory() > cluster.device(gpu).memory_bytes) return std::nullopt;
  return Evaluator(graph, cluster).latency(std::vector<DeviceId>(graph.num_operators(), gpu));
}

PointMeasurement searched(double search_seconds, const SearchFacts& facts, const nlohmann::json& details) {
  PointMeasurement p;
  p.search_time = search_seconds;
  p.facts = facts;
  p.strategy_report = details;
  return p;
}

}  // namespace

PointOutcome run_strategy_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                const std::string& dir, const std::string& file_stem) {
  return guarded([&]() -> PointOutcome {
    const fs::path folder = dir;
    auto strategy = make_strategy(spec.name, spec.options, scenario.file, spec.field);
    // With data_parallel, the strategy places one replica, on the first GPUs / replicas GPUs.
    if (spec.data_parallel)
      if (const std::string why = data_parallel_problem(graph, scenario.cluster, *spec.data_parallel); !why.empty())
        throw InputError(scenario.file, spec.field + ".data_parallel", why);
    const std::optional<Cluster> replica =
        spec.data_parallel ? std::optional<Cluster>(scenario.cluster.restricted_to(
                                 first_replica_gpus(scenario.cluster, spec.data_parallel->replicas)))
                           : std::nullopt;
    PlacementResult placed = place(spec, *strategy, graph, replica ? *replica : scenario.cluster);
    if (spec.data_parallel && placed.bandwidth_allocation)
      throw InputError(scenario.file, spec.field + ".data_parallel",
                       "a strategy that chooses the multi-NIC bandwidth allocation cannot be replicated yet (its "
                       "allocation is for one replica's GPUs); turn the allocation off or drop data_parallel");
    // A strategy that also chose the multi-NIC bandwidth allocation (QuickP P3) is measured on
    // the cluster with that allocation, so SimGrid enforces it.
    const std::optional<Cluster> allocated =
        placed.bandwidth_allocation
            ? std::optional<Cluster>(with_bandwidth_allocation(scenario.cluster, *placed.bandwidth_allocation,
                                                               "strategy '" + spec.label + "'"))
            : std::nullopt;
    const Cluster& run_on = allocated ? *allocated : scenario.cluster;
    if (spec.refine) refine_placed(spec, *strategy, graph, replica ? *replica : run_on, placed);
    PointMeasurement recorded = searched(placed.search_seconds, placed.facts, placed.details);
    recorded.placement_file = "placement-" + file_safe(file_stem) + ".json";
    save_placement(graph, placed.placement, (folder / recorded.placement_file).string());
    // What the engines run: the placed graph, or its replicas with the gradients' all-reduces.
    nlohmann::json details = recorded.strategy_report;
    std::optional<DataParallelGraph> replicated;
    if (spec.data_parallel) replicated = replicated_point(scenario, spec, graph, *replica, run_on, placed, details);
    recorded.strategy_report = details;
    const Measured what{replicated ? PlacedGraph(replicated->graph) : PlacedGraph(graph, placed.placement),
                        replicated ? std::span<const AppendedCollective>(replicated->graph.collectives)
                                   : std::span<const AppendedCollective>(),
                        run_on, scenario.simulation.engines, std::nullopt, nullptr};
    if (!replicated) recorded.single_device_latency = single_device_latency(graph, scenario.cluster);
    PointOutcome out = measure_and_record(scenario, spec, what, std::move(recorded), folder, file_stem);
    if (replicated) out.compiled = std::pair{replicated->graph.graph.num_operators(), replicated->graph.graph.num_tensors()};
    return out;
  });
}

namespace {

// The plan file: the plan as used and its memory per stage (tensor rank 0 of replica 0).
void write_plan_file(const fs::path& file, const LayerWorkload& workload, const ParallelPlan& plan,
                     const CompiledPlan& compiled, const nlohmann::ordered_json& as_json) {
  nlohmann::ordered_json out = as_json;
  out["workload"] = workload.source;
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (int p = 0; p < plan.pp; ++p) {
    const GpuMemory& m = compiled.memory[plan_gpu_index(plan, 0, p, 0)];
    // Interleaved, entry p is pipeline rank p (stages p, p + pp, ...), its in-flight count in
    // (stage, micro-batch) units.
    memory.push_back({{plan.virtual_stages > 1 ? "pipeline_rank" : "stage", p},
                      {"parameters", m.parameters},
                      {"gradients", m.gradients},
                      {"optimizer_states", m.optimizer_states},
                      {"activations", m.activations},
                      {"workspace", m.workspace},
                      {"micro_batches_in_flight", compiled.in_flight[p]},
                      {"total", m.total()}});
  }
  out["memory_per_stage_bytes"] = std::move(memory);
  write_file_atomically(file.string(), dump_json(out, 2) + "\n");
}

// Why a plan has no estimate: the estimate engine's problem, or an estimate that is not finite.
std::string estimate_note(const CompiledPlan& compiled) {
  const std::string why = engine_registry().get(kEstimate, "", "engine").make()->problem(compiled.graph);
  return why.empty() ? "" : "no estimate: " + why;
}

}  // namespace

PointOutcome run_plan_point(const Scenario& scenario, const StrategySpec& spec, const LayerWorkload& given,
                            const std::string& dir, const std::string& file_stem) {
  return guarded([&]() -> PointOutcome {
    const fs::path folder = dir;
    const Cluster& cluster = scenario.cluster;
    auto planner = make_planner(spec.name, spec.options, scenario.file, spec.field);
    if (scenario.workload) planner->set_model_source(model_source_of(*scenario.workload, scenario.file));
    const PlanResult planned = planner->plan(given, cluster);
    const ParallelPlan& plan = planned.plan;
    // The planner's own build of the model when it chose its options (the search), else the scenario's.
    const LayerWorkload& workload = planned.workload ? *planned.workload : given;
    // engine estimate: the layout and memory alone, no execution graph.
    const bool estimate_only = scenario.simulation.engines.estimate_only();
    if (estimate_only && plan.mixed_widths())
      throw std::invalid_argument(fmt::format(
          "engine estimate: NEST's estimate prices one tensor-parallel width, this plan's stages have {}; run it on an engine",
          fmt::join(plan.stage_tp, ", ")));
    // Its replicas folded (sim/plans/plan_folding.h) when there is an execution graph to build.
    std::optional<FoldChoice> fold;
    if (!estimate_only && plan_layout(workload, plan, cluster).infeasible.empty())
      // Chakra traces are one per GPU: every replica's.
      fold = choose_fold(workload, plan, cluster, scenario.simulation.collectives,
                         scenario.simulation.full_graph || scenario.chakra ? FoldMode::Full : FoldMode::Auto);
    const CompiledPlan compiled = estimate_only || !fold ? plan_layout(workload, plan, cluster)
                                                         : compile_plan(workload, plan, cluster, scenario.simulation.collectives,
                                                                        fold->replicas);
    PointMeasurement recorded = searched(planned.search_seconds, planned.facts, planned.details);
    if (fold)
      recorded.strategy_report["folding"] = {{"replicas_simulated", fold->replicas}, {"copies", fold->copies},
                                             {"exact", fold->exact}, {"reason", fold->reason}};
    nlohmann::ordered_json as_json = plan_to_json(plan);
    as_json["stage_starts"] = compiled.stage_starts;
    as_json["gpus"] = compiled.gpus;
    recorded.strategy_report["plan"] = nlohmann::json(as_json);
    recorded.placement_file = "plan-" + file_safe(file_stem) + ".json";
    write_plan_file(folder / recorded.placement_file, workload, plan, compiled, as_json);
    if (!compiled.infeasible.empty()) {
      PointOutcome out;  // reported, never run
      out.status = PointStatus::Infeasible;
      out.reason = "does not fit: " + compiled.infeasible;
      return out;
    }
    // Memory is the plan's: the execution graph's operators hold none.
    std::vector<double> memory(static_cast<std::size_t>(cluster.num_devices()), 0.0);
    for (std::size_t i = 0; i < compiled.gpus.size(); ++i) memory[compiled.gpus[i]] = compiled.memory[i].total();
    // Every plan is priced by NEST's analytical estimate too, beside the engines, so planners
    // compare on it (the reproduction of NEST's experiment); a plan it cannot price says why.
    recorded.estimate_note = estimate_note(compiled);
    const EngineSet engines =
        recorded.estimate_note.empty() ? scenario.simulation.engines.with(kEstimate) : scenario.simulation.engines;
    PointOutcome out = measure_and_record(scenario, spec, {compiled.graph, compiled.graph.collectives, cluster, engines,
                                                           std::move(memory), &compiled},
                                          std::move(recorded), folder, file_stem);
    if (out.measurement && !out.measurement->latency(kEstimate) && out.measurement->estimate_note.empty())
      out.measurement->estimate_note = "no estimate: some of the plan's GPUs cannot reach each other";
    if (!estimate_only) out.compiled = std::pair{compiled.graph.graph.num_operators(), compiled.graph.graph.num_tensors()};
    return out;
  });
}

}  // namespace placesim
