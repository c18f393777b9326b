#include "scenarios/runner/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "placement/planners/nest/nest.h"
#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "sim/plans/data_parallel.h"
#include "sim/plans/parallel_plan.h"
#include "sim/core/errors.h"
#include "sim/engines/flow_engine.h"
#include "sim/io/placement_io.h"
#include "sim/io/trace.h"
#include "sim/core/units.h"
#include "topologies/registry.h"

namespace placesim {

namespace fs = std::filesystem;

namespace {
// The evaluator's priority for a scenario's `simulation.order`.
Priority priority_of(OpOrder order) { return order == OpOrder::Fcfs ? Priority::Fcfs : Priority::Rank; }
}  // namespace

Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              Engine engine, OpOrder order) {
  Measurement m;
  Evaluator evaluator(graph, cluster);
  m.schedule = evaluator.schedule(placement, priority_of(order));
  m.evaluator_latency = m.schedule.latency;
  m.bounds = evaluator.lower_bounds();
  m.memory = m.schedule.memory;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    m.peak_memory = std::max(m.peak_memory, m.memory[d]);
    if (m.memory[d] > cluster.device(d).memory_bytes) m.oom = true;
  }
  if (runs_flow(engine)) {
    const auto t0 = std::chrono::steady_clock::now();
    FlowEngine flow(graph, cluster);
    m.flow_latency = order == OpOrder::Fcfs ? flow.schedule(placement, Priority::Fcfs).latency
                                            : flow.replay(placement, m.schedule.device_order).latency;
    m.flow_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (runs_simgrid(engine)) {
    // FCFS: SimGrid picks by the arrival times it simulates, under contention (the evaluator's
    // FCFS order is only the starting point it is checked against).
    m.simulation = simulate(graph, cluster, placement, m.schedule.device_order,
                            order == OpOrder::Fcfs ? GpuQueue::Fcfs : GpuQueue::Fixed);
    m.simgrid_latency = m.simulation->latency;
    m.simgrid_wall_s = m.simulation->wall_seconds;
    const double span = m.simulation->latency;
    for (std::size_t l = 0; l < m.simulation->links.size(); ++l) {
      const LinkStats& s = m.simulation->links[l];
      if (s.bytes <= 0) continue;
      const Link& link = cluster.link(static_cast<int>(l));
      m.links.push_back({link.name, s.bytes, s.busy_s, span > 0 ? s.busy_s / span : 0.0,
                         span > 0 ? s.bytes / (link.bandwidth * span) : 0.0});
    }
    std::sort(m.links.begin(), m.links.end(), [](const LinkUse& a, const LinkUse& b) { return a.bytes > b.bytes; });
  }
  return m;
}

void write_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                 const std::vector<DeviceId>& placement, const Measurement& m, const CompiledPlan* plan) {
  const std::vector<double>& start = m.simulation ? m.simulation->start : m.schedule.start;
  const std::vector<double>& finish = m.simulation ? m.simulation->finish : m.schedule.finish;
  // A plan's GPUs' memory over the iteration as this engine ran it.
  std::vector<GpuMemoryTrack> memory;
  if (plan) {
    const std::vector<MemoryCurve> curves = memory_over_time(*plan, start, finish);
    for (std::size_t i = 0; i < curves.size(); ++i) memory.push_back({plan->gpus[i], curves[i]});
  }
  if (m.simulation)
    write_chrome_trace(path, graph, cluster, placement, start, finish, m.simulation->flows, m.simulation->subflows, memory);
  else
    write_chrome_trace(path, graph, cluster, placement, start, finish, {}, {}, memory);
}

ChakraRun chakra_run_of(const Measurement& m, const std::string& source) {
  if (m.simulation) return {source, "simgrid", m.simulation->latency};
  return {source, "evaluator", m.evaluator_latency};
}

std::span<const double> chakra_start_of(const Measurement& m) {
  return m.simulation ? std::span<const double>(m.simulation->start) : std::span<const double>(m.schedule.start);
}

namespace {

std::string file_safe(const std::string& label) {
  std::string out;
  for (char c : label) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

// A point's Chakra traces (`output: {chakra: true}`): chakra-<point>/<point>.<rank>.et.
// A plan's collectives are Chakra's collective nodes. Returns the writer's warnings.
std::vector<std::string> write_point_chakra(const fs::path& folder, const std::string& file_stem, const Graph& graph, const Cluster& cluster,
                        const std::vector<DeviceId>& placement, const Measurement& m, const Scenario& scenario,
                        const StrategySpec& spec, std::span<const AppendedCollective> collectives = {}) {
  const std::string name = file_safe(file_stem);
  return write_chakra_traces((folder / ("chakra-" + name)).string(), name, graph, placement, cluster.num_devices(),
                             chakra_start_of(m), chakra_run_of(m, scenario.name + " / " + spec.label), collectives)
      .warnings;
}

// Why a measurement holds a value that is not a finite number, or "" when every value is finite.
// JSON has no infinity or NaN (they would be written as null, as if absent), and such a point
// cannot be compared with others, so the runner records it as a failed point with this reason.
std::string non_finite_reason(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              const Measurement& m) {
  std::string what;
  auto check = [&](double v, const char* name) {
    if (what.empty() && !std::isfinite(v)) what = fmt::format("{} is {}", name, v);
  };
  check(m.evaluator_latency, "the evaluator's latency");
  if (m.simgrid_latency) check(*m.simgrid_latency, "SimGrid's latency");
  if (m.flow_latency) check(*m.flow_latency, "the flow engine's latency");
  check(m.bounds.critical_path, "the critical-path lower bound");
  check(m.bounds.work_per_device, "the work-per-GPU lower bound");
  check(m.peak_memory, "the peak memory");
  for (double busy : m.schedule.busy) check(busy, "a GPU's busy time");
  if (what.empty()) return "";
  for (const Tensor& t : graph.tensors())
    if (t.bytes > 0 && !cluster.reachable(placement[t.src], placement[t.dst]))
      return fmt::format("{}, not a finite number: tensor '{}' -> '{}' goes from GPU {} to GPU {}, which the cluster "
                         "cannot reach (no bandwidth between them)",
                         what, graph.op(t.src).name, graph.op(t.dst).name, placement[t.src], placement[t.dst]);
  return what + ", not a finite number: the graph's times and sizes add up beyond what the engines can represent";
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
  placed.report["coarsening"] = std::move(info);
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
  placed.report["refine"] = refine_report(refined);
}

}  // namespace

StrategyOutcome run_strategy_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                   const std::string& dir, const std::string& file_stem) {
  StrategyOutcome out;
  out.label = spec.label;
  out.name = spec.name;
  const fs::path folder = dir;
  try {
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
    out.search_seconds = placed.search_seconds;
    out.strategy_report = placed.report;
    out.placement_file = "placement-" + file_safe(file_stem) + ".json";
    save_placement(graph, placed.placement, (folder / out.placement_file).string());
    // What the engines run: the placed graph, or its replicas with the gradients' all-reduces.
    std::optional<DataParallelGraph> replicated;
    if (spec.data_parallel) {
      replicated = replicate_data_parallel(graph, placed.placement, run_on, *spec.data_parallel, scenario.simulation.collectives);
      out.compiled_operators = replicated->graph.graph.num_operators();
      out.compiled_tensors = replicated->graph.graph.num_tensors();
      out.strategy_report["data_parallel"] = {
          {"replicas", spec.data_parallel->replicas},
          {"gpus_per_replica", replicated->gpus_per_replica},
          {"algorithm", std::string(enum_name<CollectiveAlgorithm>(kCollectiveAlgorithmNames, spec.data_parallel->algorithm))},
          {"bucket_bytes", spec.data_parallel->bucket_bytes},
          {"gradients", replicated->gradients},
          {"gradient_bytes", replicated->gradient_bytes},
          {"all_reduces", replicated->all_reduces},
          // The placement alone on its replica, contention-free, in the scenario's order: what
          // replication adds is the rest.
          {"one_replica_evaluator_latency",
           Evaluator(graph, *replica)
               .schedule(placed.placement, priority_of(scenario.simulation.order))
               .latency}};
      if (const std::string note = data_parallel_layout_note(run_on, spec.data_parallel->replicas); !note.empty())
        out.strategy_report["data_parallel"]["layout_warning"] = note;
    }
    const Graph& ran = replicated ? replicated->graph.graph : graph;
    const std::vector<DeviceId>& ran_on = replicated ? replicated->graph.placement : placed.placement;
    out.measurement = measure_placement(ran, run_on, ran_on, scenario.simulation.engine, scenario.simulation.order);
    if (const std::string reason = non_finite_reason(ran, run_on, ran_on, out.measurement); !reason.empty()) {
      out.error = reason;
      return out;
    }
    if (scenario.simulation.trace) {
      out.trace_file = "trace-" + file_safe(file_stem) + ".json";
      write_trace((folder / out.trace_file).string(), ran, run_on, ran_on, out.measurement);
    }
    if (scenario.chakra)
      if (const auto warnings = write_point_chakra(folder, file_stem, ran, run_on, ran_on, out.measurement, scenario, spec,
                                                   replicated ? std::span<const AppendedCollective>(replicated->graph.collectives)
                                                              : std::span<const AppendedCollective>());
          !warnings.empty())
        out.strategy_report["chakra_warnings"] = warnings;
  } catch (const OutputError&) {
    throw;  // the results folder, not the strategy: the caller stops the run
  } catch (const InfeasibleProblem& e) {
    out.infeasible = true;  // nothing to measure, and no strategy could have done better
    out.error = e.what();
  } catch (const std::exception& e) {
    // A failing strategy is recorded and the others still run: nothing asked for is dropped.
    out.error = e.what();
  }
  return out;
}

StrategyOutcome run_plan_point(const Scenario& scenario, const StrategySpec& spec, const LayerWorkload& workload,
                               const std::string& dir, const std::string& file_stem) {
  StrategyOutcome out;
  out.label = spec.label;
  out.name = spec.name;
  const fs::path folder = dir;
  const Cluster& cluster = scenario.cluster;
  try {
    auto planner = make_planner(spec.name, spec.options, scenario.file, spec.field);
    const PlanResult planned = planner->plan(workload, cluster);
    const ParallelPlan& plan = planned.plan;
    // engine estimate: the layout and memory alone, no execution graph.
    const bool estimate_only = scenario.simulation.engine == Engine::Estimate;
    if (estimate_only && plan.mixed_widths())
      throw std::invalid_argument(fmt::format(
          "engine estimate: NEST's estimate prices one tensor-parallel width, this plan's stages have {}; run it on an engine",
          fmt::join(plan.stage_tp, ", ")));
    const CompiledPlan compiled = estimate_only ? plan_layout(workload, plan, cluster)
                                                : compile_plan(workload, plan, cluster, scenario.simulation.collectives);
    out.search_seconds = planned.search_seconds;
    out.strategy_report = planned.report;
    nlohmann::ordered_json as_json = plan_to_json(plan);
    as_json["stage_starts"] = compiled.stage_starts;
    as_json["gpus"] = compiled.gpus;
    out.strategy_report["plan"] = nlohmann::json(as_json);
    // Every plan priced by NEST's analytical model too, so planners compare on it beside the
    // engines (the reproduction of NEST's experiment).
    ParallelPlan as_used = plan;
    as_used.stage_starts = compiled.stage_starts;
    as_used.gpus = compiled.gpus;
    // JSON has no infinity: a plan whose GPUs cannot reach each other has no estimate, said so;
    // nor has a plan whose stages differ in width (NEST prices one).
    if (plan.mixed_widths()) {
      out.strategy_report["nest_estimate_note"] = "no estimate: NEST's estimate prices one tensor-parallel width";
    } else if (const double estimate =
                   nest_estimate(workload.by_tensor_parallel.at(plan.tp), as_used, NestNetwork::aware(cluster)).time_per_batch;
               std::isfinite(estimate)) {
      out.strategy_report["nest_estimate_s"] = estimate;
    } else {
      out.strategy_report["nest_estimate_note"] = "no estimate: some of the plan's GPUs cannot reach each other";
    }
    // The plan file: the plan as used and its memory per stage (tensor rank 0 of replica 0).
    nlohmann::ordered_json file = as_json;
    file["workload"] = workload.source;
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
                        {"micro_batches_in_flight", compiled.in_flight[p]},
                        {"total", m.total()}});
    }
    file["memory_per_stage_bytes"] = std::move(memory);
    out.placement_file = "plan-" + file_safe(file_stem) + ".json";
    write_file_atomically((folder / out.placement_file).string(), dump_json(file, 2) + "\n");
    if (!compiled.infeasible.empty()) {
      out.infeasible = true;  // reported, never run
      out.error = "does not fit: " + compiled.infeasible;
      return out;
    }
    // Memory is the plan's: the execution graph's operators hold none.
    auto hold_plan_memory = [&](Measurement& m) {
      m.memory.assign(static_cast<std::size_t>(cluster.num_devices()), 0.0);
      m.peak_memory = 0;
      for (std::size_t i = 0; i < compiled.gpus.size(); ++i) {
        m.memory[compiled.gpus[i]] = compiled.memory[i].total();
        m.peak_memory = std::max(m.peak_memory, compiled.memory[i].total());
      }
    };
    if (estimate_only) {
      // No engine ran: the record holds the plan's memory and, in its report, NEST's estimate.
      out.estimate_only = true;
      hold_plan_memory(out.measurement);
      return out;
    }
    const Graph& graph = compiled.graph.graph;
    out.compiled_operators = graph.num_operators();
    out.compiled_tensors = graph.num_tensors();
    out.measurement = measure_placement(graph, cluster, compiled.graph.placement, scenario.simulation.engine,
                                        scenario.simulation.order);
    Measurement& m = out.measurement;
    hold_plan_memory(m);
    m.oom = false;  // infeasible plans were not run
    if (const std::string reason = non_finite_reason(graph, cluster, compiled.graph.placement, m); !reason.empty()) {
      out.error = reason;
      return out;
    }
    if (scenario.simulation.trace) {
      out.trace_file = "trace-" + file_safe(file_stem) + ".json";
      write_trace((folder / out.trace_file).string(), graph, cluster, compiled.graph.placement, m, &compiled);
    }
    if (scenario.chakra)
      if (const auto warnings = write_point_chakra(folder, file_stem, graph, cluster, compiled.graph.placement, m, scenario, spec,
                                                   compiled.graph.collectives);
          !warnings.empty())
        out.strategy_report["chakra_warnings"] = warnings;
  } catch (const OutputError&) {
    throw;
  } catch (const InfeasibleProblem& e) {
    // No plan fits (nest's why_none): the problem's answer, as on the operator-graph path, not
    // a planner that broke.
    out.infeasible = true;
    out.error = e.what();
  } catch (const std::exception& e) {
    out.error = e.what();  // recorded; the other planners still run
  }
  return out;
}

}  // namespace placesim
