// Parallel plans and collectives from Python: placesim.plan (`placesim plan`: one plan of a
// layer-level workload, or the plan a registered planner chooses, compiled and run on the engines)
// and placesim.collective (`placesim collective`, run by the CLI's own code: the same rows).
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>
#include <sstream>
#include <type_traits>
#include <vector>

#include "collective_cli.h"
#include "common.h"
#include "placement/framework/planner.h"
#include "plan_cli.h"
#include "search_cli.h"
#include "scenarios/runner/scenario.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/collectives.h"
#include "sim/core/errors.h"
#include "sim/engines/engine.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"

namespace placesim::python {

namespace {

// The workload `placesim plan` reads: a NEST workload file, or a zoo model at the plan's widths.
LayerWorkload plan_workload(const PlanArgs& a) {
  if (static_cast<int>(!a.workload.empty()) + !a.model.empty() + !a.model_file.empty() != 1)
    throw InputError("python", "workload/model/model_file", "expected one of workload=FILE, model=NAME or model_file=FILE");
  if (!a.workload.empty()) return load_nest_workload(a.workload);
  return model_from_args(a, "python");
}

ParallelPlan plan_of(const PlanArgs& a) { return plan_from_args(a, "python", "schedule", "gradient_algorithm"); }

py::list memory_rows(const ParallelPlan& plan, const CompiledPlan& layout, const Cluster& cluster) {
  py::list rows;
  for (int p = 0; p < plan.pp; ++p) {
    const std::size_t i = plan_gpu_index(plan, 0, p, 0);
    const GpuMemory& m = layout.memory[i];
    py::dict row;
    row[plan.virtual_stages > 1 ? "pipeline_rank" : "stage"] = p;
    row["parameters"] = m.parameters;
    row["gradients"] = m.gradients;
    row["optimizer_states"] = m.optimizer_states;
    row["activations"] = m.activations;
    row["workspace"] = m.workspace;
    row["total"] = m.total();
    row["capacity"] = cluster.device(layout.gpus[i]).memory_bytes;
    row["micro_batches_in_flight"] = layout.in_flight[p];
    rows.append(row);
  }
  return rows;
}

// The plan checked, laid out, compiled and run as `placesim plan` runs it; a plan that does not
// fit is reported with feasible False and run on no engine.
py::dict run_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster, const PlanArgs& a) {
  if (const std::string why = plan_problem(workload, plan, cluster); !why.empty()) throw InputError("python", "plan", why);
  const PlanRunOptions options = plan_run_options(a, "python");
  const CompiledPlan layout = plan_layout(workload, plan, cluster);
  py::dict out;
  out["workload"] = workload.source;
  out["plan"] = to_python(plan_to_json(plan));
  out["gpus"] = layout.gpus;
  out["stage_starts"] = layout.stage_starts;
  out["memory_per_stage"] = memory_rows(plan, layout, cluster);
  out["feasible"] = layout.infeasible.empty();
  out["reason"] = layout.infeasible;
  py::dict latencies, walls;
  out["latencies"] = latencies;
  out["wall_times"] = walls;
  if (!layout.infeasible.empty()) return out;
  PlanRun simulated;
  {
    py::gil_scoped_release released;
    try {
      simulated = simulate_plan(workload, plan, cluster, options);
    } catch (const GraphTooLarge& e) {
      throw InputError("python", "plan", fmt::format("too large for this machine: {}", e.what()));
    }
  }
  const CompiledPlan& c = simulated.compiled;
  const EngineRuns& ran = simulated.runs;
  out["compile_seconds"] = simulated.compile_s;
  out["operators"] = c.graph.graph.num_operators();
  out["tensors"] = c.graph.graph.num_tensors();
  out["collectives"] = std::string(enum_name<CollectiveDetail>(kCollectiveDetailNames, simulated.detail));
  py::dict folding;
  folding["replicas_simulated"] = simulated.fold.replicas;
  folding["copies"] = simulated.fold.copies;
  folding["exact"] = simulated.fold.exact;
  folding["reason"] = simulated.fold.reason;
  out["folding"] = folding;
  out["notes"] = simulated.notes;
  // Megatron's measures per engine, as `placesim plan` prints them.
  py::dict tokens, tflops, mfu;
  const LayerModel& model = workload.at(plan.tp, "python", "tp");
  for (const EngineRun& r : ran.runs) {
    latencies[py::str(r.engine)] = r.latency;
    walls[py::str(r.engine)] = r.wall_s;
    const PlanThroughput t = plan_throughput(a, plan, model, static_cast<double>(layout.gpus.size()), r.latency);
    tokens[py::str(r.engine)] = t.tokens_per_s_per_gpu;
    tflops[py::str(r.engine)] = t.model_flops_per_gpu / 1e12;
    if (t.peak_flops > 0) mfu[py::str(r.engine)] = t.mfu;
  }
  out["tokens_per_s_per_gpu"] = tokens;
  out["model_tflops_per_gpu"] = tflops;
  out["mfu"] = mfu;  // {} for a measured workload (its GPU's peak is not known)
  // Where each engine's iteration went (seconds; the parts sum to its latency).
  py::dict breakdown;
  for (const auto& [engine, b] : simulated.breakdown) breakdown[py::str(engine)] = to_python(breakdown_json(b));
  out["breakdown"] = breakdown;
  // With variability: per engine, each seed's iteration time (latencies are the first seed's).
  py::dict seeds;
  for (const auto& [engine, samples] : simulated.seed_latencies) seeds[py::str(engine)] = samples;
  out["seed_latencies"] = seeds;
  return out;
}

// A keyword of placesim.plan: its name and how it sets the CLI's arguments. The table below is
// the one list of the keywords: an unknown one is said, not dropped, and a new one is one row.
struct PlanKeyword {
  const char* name;
  void (*set)(PlanArgs&, const py::handle&);
};

template <auto Field>
void set_field(PlanArgs& a, const py::handle& value) {
  using T = std::remove_reference_t<decltype(a.*Field)>;
  if constexpr (std::is_same_v<T, std::string>) a.*Field = py::str(value).cast<std::string>();
  else a.*Field = value.cast<T>();
}

// A keyword that says yes where the CLI's flag says no (overlap_grad_reduce=False: --no-overlap-grad-reduce).
template <auto Field>
void set_negated(PlanArgs& a, const py::handle& value) {
  a.*Field = !value.cast<bool>();
}

void set_recompute(PlanArgs& a, const py::handle& value) {
  // True/False as before (full/none), or none, selective, full.
  if (py::isinstance<py::bool_>(value)) a.recompute = value.cast<bool>() ? "full" : "none";
  else a.recompute = value.cast<std::string>();
}

constexpr PlanKeyword kPlanKeywords[] = {
    {"workload", set_field<&PlanArgs::workload>},
    {"model", set_field<&PlanArgs::model>},
    {"model_file", set_field<&PlanArgs::model_file>},
    {"schedule", set_field<&PlanArgs::schedule>},
    {"engine", set_field<&PlanArgs::engine>},
    {"order", set_field<&PlanArgs::order>},
    {"gradient_algorithm", set_field<&PlanArgs::gradient_algorithm>},
    {"collectives", set_field<&PlanArgs::collectives>},
    {"gpu", set_field<&PlanArgs::gpu>},
    {"tp", set_field<&PlanArgs::tp>},
    {"pp", set_field<&PlanArgs::pp>},
    {"dp", set_field<&PlanArgs::dp>},
    {"cp", set_field<&PlanArgs::cp>},
    {"micro_batches", set_field<&PlanArgs::micro_batches>},
    {"zero", set_field<&PlanArgs::zero>},
    {"ep", set_field<&PlanArgs::ep>},
    {"virtual_stages", set_field<&PlanArgs::virtual_stages>},
    {"stage_split", set_field<&PlanArgs::stage_split>},
    {"gpu_order", set_field<&PlanArgs::gpu_order>},
    {"zero3_prefetch", set_field<&PlanArgs::zero3_prefetch>},
    {"stage_starts", set_field<&PlanArgs::stage_starts>},
    {"micro_batch_size", set_field<&PlanArgs::micro_batch_size>},
    {"sequence", set_field<&PlanArgs::sequence>},
    {"stage_tp", set_field<&PlanArgs::stage_tp>},
    {"mfu", set_field<&PlanArgs::mfu>},
    {"recompute", set_recompute},
    {"precision", set_field<&PlanArgs::precision>},
    {"main_gradients", set_field<&PlanArgs::main_gradients>},
    {"gpu_speed_cv", set_field<&PlanArgs::gpu_speed_cv>},
    {"kernel_jitter_cv", set_field<&PlanArgs::kernel_jitter_cv>},
    {"seeds", set_field<&PlanArgs::seeds>},
    {"slow_gpu", set_field<&PlanArgs::slow_gpu>},
    {"seed", set_field<&PlanArgs::seed>},
    {"attention", set_field<&PlanArgs::attention>},
    {"global_batch", set_field<&PlanArgs::global_batch>},
    {"distributed_optimizer", set_field<&PlanArgs::distributed_optimizer>},
    {"overlap_param_gather", set_negated<&PlanArgs::no_overlap_param_gather>},
    {"overlap_grad_reduce", set_negated<&PlanArgs::no_overlap_grad_reduce>},
    {"tp_comm_overlap", set_field<&PlanArgs::tp_comm_overlap>},
    {"overlap_p2p_comm", set_field<&PlanArgs::overlap_p2p_comm>},
    {"scatter_gather", set_negated<&PlanArgs::no_scatter_gather>},
    {"sequence_parallel", set_field<&PlanArgs::sequence_parallel>},
    {"full_graph", set_field<&PlanArgs::full_graph>},
    {"fold", set_field<&PlanArgs::fold>},
    {"framework", set_field<&PlanArgs::framework>},
};

PlanArgs plan_args(const py::dict& kw) {
  for (const auto& [key, value] : kw) {
    const std::string name = py::str(key).cast<std::string>();
    if (std::none_of(std::begin(kPlanKeywords), std::end(kPlanKeywords), [&](const PlanKeyword& k) { return name == k.name; })) {
      std::vector<std::string> known;
      for (const PlanKeyword& k : kPlanKeywords) known.emplace_back(k.name);
      throw InputError("python", name, fmt::format("unknown keyword of plan; expected one of {}", fmt::join(known, ", ")));
    }
  }
  PlanArgs a;
  for (const PlanKeyword& k : kPlanKeywords)
    if (kw.contains(k.name) && !kw[k.name].is_none()) {
      k.set(a, kw[k.name]);
      a.given.emplace_back(k.name);
    }
  if (kw.contains("overlap_param_gather") && !kw["overlap_param_gather"].is_none() && !a.no_overlap_param_gather &&
      !a.distributed_optimizer)
    throw InputError("python", "overlap_param_gather", "Megatron's distributed optimizer overlaps its gathers: give distributed_optimizer=True too");
  apply_framework(a, "python");
  return a;
}

// A registered planner chooses the plan of a scenario-style `workload:` mapping; then it is run
// as above, with the planner's search time and details.
py::dict plan_with(const std::string& planner, const py::dict& workload_spec, const ClusterPtr& cluster,
                   const py::dict& options, const py::dict& run) {
  const WorkloadSource source = workload_source_from_yaml(to_yaml(workload_spec), "python", "workload");
  const LayerWorkload workload = load_workload_source(source, "python");
  std::unique_ptr<Planner> p = make_planner(planner, to_yaml(options), "python", "planner");
  if (const std::string why = p->options_problem(workload, *cluster); !why.empty()) throw InputError("python", "planner", why);
  const PlanResult planned = p->plan(workload, *cluster);
  PlanArgs a = plan_args(run);
  py::dict out = run_plan(workload, planned.plan, *cluster, a);
  out["planner"] = planner;
  out["search_seconds"] = planned.search_seconds;
  out["details"] = to_python(planned.details);
  return out;
}

// `placesim search --json`: the keywords as its flags (lists for the space's knobs).
std::string search_json_of(const py::dict& kw) {
  SearchRequest r;
  std::vector<std::string> known;
  auto text = [&](const char* key, std::string& field) {
    known.emplace_back(key);
    if (kw.contains(key) && !kw[key].is_none()) field = py::str(kw[key]).cast<std::string>();
  };
  auto number = [&](const char* key, auto& field) {
    known.emplace_back(key);
    if (kw.contains(key) && !kw[key].is_none()) field = kw[key].cast<std::remove_reference_t<decltype(field)>>();
  };
  text("model", r.base.model);
  text("model_file", r.base.model_file);
  text("cluster", r.base.cluster);
  text("gpu", r.base.gpu);
  text("precision", r.base.precision);
  text("attention", r.base.attention);
  text("main_gradients", r.base.main_gradients);
  text("framework", r.base.framework);
  text("engine", r.engine);
  number("sequence", r.base.sequence);
  number("gpus", r.gpus);
  number("global_batch", r.global_batch);
  number("top", r.top);
  number("exhaustive", r.exhaustive);
  number("threads", r.threads);
  number("tp", r.space.tp);
  number("pp", r.space.pp);
  number("cp", r.space.cp);
  number("ep", r.space.ep);
  number("virtual_stages", r.space.virtual_stages);
  number("micro_batch_size", r.space.micro_batch_size);
  number("recompute", r.space.recompute);
  number("sequence_parallel", r.space.sequence_parallel);
  number("optimizer", r.space.optimizer);
  number("tp_comm_overlap", r.space.tp_comm_overlap);
  number("gpu_order", r.space.gpu_order);
  for (const auto& [key, value] : kw) {
    const std::string name = py::str(key).cast<std::string>();
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw InputError("python", name, fmt::format("unknown keyword of search; expected one of {}", fmt::join(known, ", ")));
  }
  SearchResult result;
  {
    py::gil_scoped_release released;
    result = search_plans(r, [](const std::string& line) { std::cerr << line << "\n"; });
  }
  return search_json(result, r.engine);
}

// `placesim collective ... --json`, its lines returned as text.
std::string collective_json(const py::dict& kw) {
  CollectiveArgs a;
  a.json = true;
  auto text = [&](const char* key, std::string& field) {
    if (kw.contains(key) && !kw[key].is_none()) field = py::str(kw[key]).cast<std::string>();
  };
  text("cluster", a.cluster);
  text("op", a.op);
  text("algorithm", a.algorithm);
  text("bytes", a.bytes);
  text("engine", a.engine);
  text("group", a.group);
  text("model", a.model);
  if (kw.contains("factor") && !kw["factor"].is_none()) a.factor = kw["factor"].cast<double>();
  if (kw.contains("gpus") && !kw["gpus"].is_none()) a.gpus = kw["gpus"].cast<int>();
  if (kw.contains("chunks") && !kw["chunks"].is_none()) a.chunks = kw["chunks"].cast<int>();
  if (kw.contains("root") && !kw["root"].is_none()) a.root = kw["root"].cast<int>();
  std::ostringstream captured;
  std::streambuf* const was = std::cout.rdbuf(captured.rdbuf());
  try {
    py::gil_scoped_release released;
    cmd_collective(a);
  } catch (...) {
    std::cout.rdbuf(was);
    throw;
  }
  std::cout.rdbuf(was);
  return captured.str();
}

}  // namespace

void bind_plans(py::module_& m) {
  m.def(
      "_plan",
      [](const ClusterPtr& cluster, const py::dict& kw) {
        const PlanArgs a = plan_args(kw);
        const LayerWorkload workload = plan_workload(a);
        ParallelPlan plan = plan_of(a);
        apply_stage_split(plan, a, workload.at(a.tp, "python", "tp"), "python", "stage_split");
        return run_plan(workload, plan, *cluster, a);
      },
      py::arg("cluster"), py::arg("kw"));
  m.def("_plan_with", &plan_with, py::arg("planner"), py::arg("workload"), py::arg("cluster"), py::arg("options"),
        py::arg("run"));
  m.def("_collective_json", &collective_json, py::arg("kw"));
  m.def("_search_json", &search_json_of, py::arg("kw"));
}

}  // namespace placesim::python
