#include "scenarios/runner/jobs.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "placement/allocation/allocation.h"
#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "sim/config/yaml_fields.h"
#include "sim/core/errors.h"
#include "sim/engines/shared_runs.h"
#include "sim/io/placement_io.h"
#include "sim/io/trace.h"
#include "sim/plans/data_parallel.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

namespace fs = std::filesystem;

namespace {

// `gpus: 64` (a count), or a list of GPUs and ranges: [0, 1, 8-15].
void gpus_from_yaml(const YAML::Node& node, const std::string& file, const std::string& field, int cluster_gpus, JobSpec& job) {
  auto whole = [&](const std::string& text, long& out) {
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && ptr == text.data() + text.size() && out >= 0;
  };
  const std::string expected = "expected a GPU count (64) or a list of GPUs and ranges ([0, 1, 8-15])";
  const std::string at = fmt::format("{} (line {})", field, node.Mark().line + 1);
  if (node.IsScalar()) {
    long n = 0;
    if (!whole(node.Scalar(), n) || n < 1 || n > 100'000'000) throw InputError(file, at, fmt::format("{}, got '{}'", expected, node.Scalar()));
    job.gpus = static_cast<int>(n);
    return;
  }
  if (!node.IsSequence() || node.size() == 0) throw InputError(file, at, expected);
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string text = node[i].IsScalar() ? node[i].Scalar() : std::string();
    const std::size_t dash = text.find('-', 1);
    long a = 0, b = 0;
    const bool ok = dash == std::string::npos ? whole(text, a) && (b = a, true)
                                              : whole(text.substr(0, dash), a) && whole(text.substr(dash + 1), b) && a <= b;
    const std::string item = fmt::format("{}[{}] (line {})", field, i, node[i].Mark().line + 1);
    if (!ok) throw InputError(file, item, fmt::format("expected a GPU (7) or a range (8-15), got '{}'", text));
    if (b >= cluster_gpus)
      throw InputError(file, item,
                       fmt::format("GPU {} is not in the cluster (GPUs 0-{})", b, cluster_gpus - 1));
    for (long g = a; g <= b; ++g) job.gpu_list.push_back(static_cast<DeviceId>(g));
  }
}

JobSpec job_from_yaml(const YAML::Node& node, const std::string& file, std::size_t index, int cluster_gpus) {
  JobSpec job;
  job.field = fmt::format("jobs[{}]", index);
  YamlFields f(node, file, job.field);
  f.allow_only({"name", "graph", "workload", "strategy", "planner", "gpus", "against_others"});
  job.against_others = f.boolean_or("against_others", false);
  job.name = f.string_or("name", fmt::format("job{}", index));
  if (job.name.empty() || job.name.find_first_of("/ \t") != std::string::npos)
    throw InputError(file, f.field("name"), fmt::format("expected a name without spaces or '/', got '{}'", job.name));
  if (f.has("graph") == f.has("workload"))
    throw InputError(file, job.field, "expected exactly one of 'graph' (with a placement strategy) or 'workload' (with a planner)");
  if (f.has("workload")) job.workload = workload_source_from_yaml(f.node("workload"), file, job.field + ".workload");
  else job.graph = graph_source_from_yaml(f.node("graph"), file, job.field + ".graph");
  if (!job.graph.chakra.empty()) throw InputError(file, job.field + ".graph", "a job's graph cannot be Chakra traces yet");
  // `strategy:` for a graph, `planner:` (or `strategy:`) for a workload.
  const bool planner = job.workload.has_value();
  if (f.has("strategy") == f.has("planner"))
    throw InputError(file, job.field, planner ? "expected a 'planner' (megatron, nest, ...)" : "expected a 'strategy' (metis, quickp, ...)");
  if (f.has("planner") && !planner) throw InputError(file, f.field("planner"), "a graph is placed by a 'strategy'; planners plan workloads");
  const std::string key = f.has("planner") ? "planner" : "strategy";
  job.strategy = strategy_from_yaml(f.node(key), file, job.field + "." + key, nullptr, planner, false);
  if (job.strategy.coarsen || job.strategy.refine)
    throw InputError(file, job.field + "." + key, "coarsen and refine are not supported for a job yet; place the graph without them");
  if (!f.has("gpus")) throw InputError(file, job.field, "expected 'gpus': a count (64) or a list of GPUs ([0, 1, 8-15])");
  job.gpus_field = f.field("gpus");
  gpus_from_yaml(f.node("gpus"), file, job.field + ".gpus", cluster_gpus, job);
  return job;
}

std::vector<JobRequest> requests_of(std::span<const JobSpec> jobs) {
  std::vector<JobRequest> out;
  for (const JobSpec& j : jobs) out.push_back({j.name, j.gpus, j.gpu_list, j.gpus_field});
  return out;
}

}  // namespace

std::vector<JobSpec> jobs_from_yaml(const YAML::Node& node, const std::string& file, const Cluster& cluster) {
  if (!node.IsSequence() || node.size() == 0)
    throw InputError(file, "jobs", "expected a non-empty list of jobs, each {name, graph or workload, strategy or planner, gpus}");
  std::vector<JobSpec> jobs;
  std::set<std::string> names;
  for (std::size_t i = 0; i < node.size(); ++i) {
    jobs.push_back(job_from_yaml(node[i], file, i, cluster.num_devices()));
    if (!names.insert(jobs.back().name).second)
      throw InputError(file, jobs.back().field + ".name", fmt::format("job name '{}' is used twice", jobs.back().name));
  }
  std::string field;
  if (const std::string why = allocation_problem(cluster, requests_of(jobs), field); !why.empty())
    throw InputError(file, field, why);
  for (const JobSpec& job : jobs) {
    const int gpus = job.gpu_list.empty() ? job.gpus : static_cast<int>(job.gpu_list.size());
    if (job.strategy.data_parallel && gpus % job.strategy.data_parallel->replicas != 0)
      throw InputError(file, job.strategy.field + ".data_parallel",
                       fmt::format("{} replicas do not divide the job's {} GPUs", job.strategy.data_parallel->replicas, gpus));
  }
  return jobs;
}

std::vector<StrategySpec> allocations_from_yaml(const YAML::Node& node, const std::string& file) {
  std::vector<StrategySpec> out;
  std::vector<YAML::Node> entries;
  if (!node || node.IsNull()) entries.push_back(YAML::Node("packed"));
  else if (node.IsSequence() && node.size() > 0) for (const auto& e : node) entries.push_back(e);
  else if (node.IsScalar() || node.IsMap()) entries.push_back(node);
  else throw InputError(file, "allocation", "expected a policy (" + fmt::format("{}", fmt::join(allocation_registry().names(), ", ")) + "), a list of them, or {name, label, seed}");
  std::set<std::string> labels;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    StrategySpec spec;
    spec.field = (node && node.IsSequence() ? fmt::format("allocation[{}]", i) : std::string("allocation")) +
                 (entries[i].Mark().line >= 0 ? fmt::format(" (line {})", entries[i].Mark().line + 1) : std::string());
    if (entries[i].IsScalar()) {
      spec.name = entries[i].Scalar();
    } else {
      YamlFields f(entries[i], file, spec.field);
      f.allow_only({"name", "label", "seed"});
      spec.name = f.string("name");
      spec.label = f.string_or("label", "");
      if (f.has("seed")) {
        const long seed = f.integer("seed");
        if (seed < 0) throw InputError(file, f.field("seed"), "expected a whole number >= 0");
        spec.options["seed"] = seed;
      }
    }
    const AllocationPolicyInfo& policy = allocation_registry().get(spec.name, file, spec.field);
    const YAML::Node& options = spec.options;  // (a const view: a lookup adds no key)
    if (options.IsMap() && options["seed"] && !policy.takes("seed"))
      throw InputError(file, spec.field, fmt::format("policy {} draws nothing at random; only random takes a seed (remove it)", spec.name));
    spec.name = policy.name;
    if (spec.label.empty()) spec.label = spec.name;
    if (!labels.insert(spec.label).second)
      throw InputError(file, spec.field, fmt::format("label '{}' is used twice; give one a distinct 'label'", spec.label));
    out.push_back(std::move(spec));
  }
  return out;
}

namespace {

// One job placed or planned on its GPUs, its graph on the whole cluster's GPUs.
struct BuiltJob {
  std::vector<DeviceId> gpus;
  std::optional<Cluster> on;                 // the cluster restricted to `gpus`
  Graph own;                                 // a placed graph's copy (when not replicated)
  std::optional<DataParallelGraph> replicated;
  std::optional<CompiledPlan> compiled;
  std::optional<LayerWorkload> workload;     // a planner's own build of the model (PlanResult::workload)
  std::vector<DeviceId> placement;           // on the whole cluster
  const Graph* graph = nullptr;
  PointMeasurement recorded;                 // search time, facts, the strategy's details
  std::vector<double> memory;                // per GPU of the whole cluster
  PointOutcome outcome;                      // status infeasible or failed when it cannot run
  bool runs = false;
};

void place_graph_job(const Scenario& scenario, const JobSpec& job, const Graph& graph, const Cluster& on, BuiltJob& b,
                     const fs::path& file) {
  auto strategy = make_strategy(job.strategy.name, job.strategy.options, scenario.file, job.strategy.field);
  const auto& dp = job.strategy.data_parallel;
  if (dp)
    if (const std::string why = data_parallel_problem(graph, on, *dp); !why.empty())
      throw InputError(scenario.file, job.strategy.field + ".data_parallel", why);
  const std::optional<Cluster> replica = dp ? std::optional<Cluster>(on.restricted_to(first_replica_gpus(on, dp->replicas))) : std::nullopt;
  PlacementResult placed = strategy->place(graph, replica ? *replica : on);
  if (placed.bandwidth_allocation)
    throw InputError(scenario.file, job.strategy.field,
                     "a strategy that chooses the multi-NIC bandwidth allocation cannot share a cluster yet (its allocation "
                     "would be the whole fabric's); turn the allocation off");
  b.recorded.search_time = placed.search_seconds;
  b.recorded.facts = placed.facts;
  b.recorded.strategy_report = placed.details;
  // The placement file in the whole cluster's GPU numbers (a replicated job's: its first replica's).
  const std::vector<DeviceId> on_gpus = dp ? first_replica_gpus(on, dp->replicas) : std::vector<DeviceId>();
  std::vector<DeviceId> written;
  for (DeviceId d : placed.placement)
    written.push_back(b.gpus[static_cast<std::size_t>(dp ? on_gpus[static_cast<std::size_t>(d)] : d)]);
  save_placement(graph, written, file.string());
  if (dp) {
    b.replicated = replicate_data_parallel(graph, placed.placement, on, *dp, scenario.simulation.collectives);
    b.graph = &b.replicated->graph.graph;
  } else {
    b.own = graph;
    b.graph = &b.own;
  }
  // From the job's GPU numbers to the whole cluster's.
  for (DeviceId d : dp ? std::span<const DeviceId>(b.replicated->graph.placement) : std::span<const DeviceId>(placed.placement))
    b.placement.push_back(b.gpus[static_cast<std::size_t>(d)]);
  b.runs = true;
}

void plan_workload_job(const Scenario& scenario, const JobSpec& job, const LayerWorkload& given, const Cluster& on,
                       BuiltJob& b, const fs::path& file) {
  auto planner = make_planner(job.strategy.name, job.strategy.options, scenario.file, job.strategy.field);
  if (job.workload) planner->set_model_source(model_source_of(*job.workload, scenario.file));
  PlanResult planned = planner->plan(given, on);
  // The planner's own build of the model when it chose its options (the search), kept with the job.
  if (planned.workload) b.workload = std::move(planned.workload);
  const LayerWorkload& workload = b.workload ? *b.workload : given;
  b.recorded.search_time = planned.search_seconds;
  b.recorded.facts = planned.facts;
  b.recorded.strategy_report = planned.details;
  const CompiledPlan layout = plan_layout(workload, planned.plan, on);
  nlohmann::ordered_json as_json = plan_to_json(planned.plan);
  as_json["stage_starts"] = layout.stage_starts;
  b.recorded.strategy_report["plan"] = nlohmann::json(as_json);
  nlohmann::ordered_json written = as_json;
  written["workload"] = workload.source;
  written["job_gpus"] = b.gpus;
  write_file_atomically(file.string(), dump_json(written, 2) + "\n");
  if (!layout.infeasible.empty()) {
    b.outcome.status = PointStatus::Infeasible;
    b.outcome.reason = "does not fit: " + layout.infeasible;
    return;
  }
  // Every replica: the other jobs break the symmetry a fold would use.
  b.compiled = compile_plan(workload, planned.plan, on, scenario.simulation.collectives);
  b.graph = &b.compiled->graph.graph;
  for (DeviceId d : b.compiled->graph.placement) b.placement.push_back(b.gpus[static_cast<std::size_t>(d)]);
  b.memory.assign(static_cast<std::size_t>(scenario.cluster.num_devices()), 0.0);
  for (std::size_t i = 0; i < b.compiled->gpus.size(); ++i)
    b.memory[static_cast<std::size_t>(b.gpus[static_cast<std::size_t>(b.compiled->gpus[i])])] = b.compiled->memory[i].total();
  b.runs = true;
}

// The job's record: the shared latency per engine, alone and shared and their ratio, its GPUs
// and the links it met other jobs on.
void record_job(const Scenario& scenario, const SharedRun& run, std::size_t index, std::span<const JobSpec> jobs,
                std::span<const std::size_t> running, BuiltJob& b, const std::string& policy) {
  const SharedJob& s = run.jobs[index];
  PointMeasurement& m = b.recorded;
  for (const JobTimes& t : s.times) {
    const EngineRun* r = run.runs.find(t.engine);
    m.engines.push_back({t.engine, t.shared, r ? r->wall_s : 0.0});
  }
  m.bounds = Evaluator(*b.graph, *b.on).lower_bounds();  // over the job's GPUs, not the cluster's
  if (b.memory.empty()) b.memory = device_memory(*b.graph, b.placement, scenario.cluster.num_devices());
  m.memory_per_gpu = b.memory;
  for (DeviceId g : b.gpus) {
    m.peak_memory = std::max(m.peak_memory, b.memory[static_cast<std::size_t>(g)]);
    if (b.memory[static_cast<std::size_t>(g)] > scenario.cluster.device(g).memory_bytes) m.oom = true;
  }
  const JobTimes* head = s.find(run.headline);
  nlohmann::ordered_json per_engine = nlohmann::ordered_json::object();
  for (const JobTimes& t : s.times)
    per_engine[t.engine] = {{"alone_latency", t.alone}, {"shared_latency", t.shared}, {"slowdown", t.slowdown()}};
  nlohmann::ordered_json met = nlohmann::ordered_json::array();
  for (const SharedLink& l : run.links_met) {
    const auto mine = std::find_if(l.share.begin(), l.share.end(), [&](const auto& p) { return p.first == index; });
    if (mine == l.share.end()) continue;
    if (met.size() == 10) break;
    nlohmann::ordered_json shares = nlohmann::ordered_json::object();
    for (const auto& [j, part] : l.share) shares[jobs[running[j]].name] = part;
    met.push_back({{"link", scenario.cluster.link(l.link).name}, {"bytes", l.bytes}, {"share", shares}});
  }
  m.strategy_report["alone_latency"] = head->alone;
  m.strategy_report["shared_latency"] = head->shared;
  m.strategy_report["slowdown"] = head->slowdown();
  std::set<DeviceId> used(b.placement.begin(), b.placement.end());
  m.strategy_report["shared"] = {{"allocation", policy},
                                 {"engine", run.headline},
                                 {"iterations", s.iterations},
                                 {"window", run.window},
                                 // Its iterations alone over the window: under 1 when the cap cut them short.
                                 {"covers_window", s.covers_window},
                                 {"gpus", b.gpus},
                                 {"gpus_used", used.size()},
                                 {"per_engine", per_engine},
                                 {"links_met", met}};
  b.outcome.status = m.oom ? PointStatus::Oom : PointStatus::Ok;
  b.outcome.measurement = std::move(m);
  b.outcome.compiled = std::pair{b.graph->num_operators(), b.graph->num_tensors()};
}

// The shared run's timeline, on the headline engine (the evaluator's would show no contention).
std::string write_shared_trace(const Scenario& scenario, const SharedRun& run, const fs::path& dir, const std::string& stem) {
  const EngineRun* r = run.runs.find(run.headline);
  if (!scenario.simulation.trace || !r || !r->schedule) return "";
  const std::string name = "trace-" + file_safe(stem) + (scenario.simulation.trace_gzip ? ".json.gz" : ".json");
  const std::span<const FlowRecord> flows = r->network ? std::span<const FlowRecord>(r->network->flows) : std::span<const FlowRecord>();
  const std::span<const SubflowRecord> subflows =
      r->network ? std::span<const SubflowRecord>(r->network->subflows) : std::span<const SubflowRecord>();
  write_chrome_trace((dir / name).string(), run.graph, scenario.cluster, run.placement, r->schedule->start, r->schedule->finish,
                     flows, subflows);
  return name;
}

// What the other jobs leave of each link: its bandwidth less their mean rate over it (the bytes of
// an iteration over the iteration alone, on the headline engine), at least 5% of it. `degraded`
// counts the links that lost more than 0.1%.
Cluster residual_cluster(const Cluster& cluster, const SharedRun& run, std::size_t job, std::size_t& degraded) {
  std::vector<double> rate(cluster.links().size(), 0.0);
  for (std::size_t k = 0; k < run.jobs.size(); ++k) {
    const JobTimes* t = run.jobs[k].find(run.headline);
    if (k == job || !t || !(t->alone > 0)) continue;
    for (const auto& [l, bytes] : run.jobs[k].link_bytes) rate[static_cast<std::size_t>(l)] += bytes / t->alone;
  }
  std::vector<LinkFault> faults;
  for (std::size_t l = 0; l < rate.size(); ++l) {
    const double left = 1.0 - rate[l] / cluster.link(static_cast<int>(l)).bandwidth;
    if (left < 0.999) faults.push_back({static_cast<int>(l), std::max(0.05, left)});
  }
  degraded = faults.size();
  return faults.empty() ? cluster : cluster.with_link_faults(faults);
}

using BuildJob = std::function<void(std::size_t, const Cluster&, BuiltJob&, const std::string&)>;

// Job running[i] placed or planned again against the others' traffic as a fixed load (the
// cluster as they leave it), run with them again (they keep their choices), and recorded beside
// its choice alone: strategy_report.shared.against_others.
// `aware` keeps the choice (the caller runs every adapted choice together afterwards).
void choose_against_others(const Scenario& scenario, const SharedRun& blind, std::size_t i, std::span<const std::size_t> running,
                           std::vector<JobGraph> graphs, std::vector<DeviceId> gpus, const BuildJob& build, PointOutcome& outcome,
                           BuiltJob& aware) {
  if (!outcome.measurement) return;
  nlohmann::ordered_json& report = outcome.measurement->strategy_report;
  nlohmann::ordered_json against = nlohmann::ordered_json::object();
  std::size_t degraded = 0;
  const Cluster residual = residual_cluster(scenario.cluster, blind, i, degraded);
  aware.gpus = std::move(gpus);
  build(running[i], residual, aware, "-against-others");
  against["links_degraded"] = degraded;
  if (!aware.runs) {
    against["status"] = std::string(point_status_name(aware.outcome.status));
    against["reason"] = aware.outcome.reason;
    report["shared"]["against_others"] = against;
    return;
  }
  graphs[i] = {graphs[i].name, aware.graph, aware.placement};
  try {
    const SharedRun run = run_jobs_together(graphs, scenario.cluster, scenario.simulation.engines, scenario.simulation.order);
    const JobTimes* mine = run.jobs[i].find(run.headline);
    const JobTimes* before = blind.jobs[i].find(blind.headline);
    nlohmann::ordered_json others = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < run.jobs.size(); ++k)
      if (k != i) others[graphs[k].name] = run.jobs[k].find(run.headline)->shared;
    against["search_time"] = aware.recorded.search_time;
    against["placement_file"] = aware.recorded.placement_file;
    against["alone_latency"] = mine->alone;
    against["shared_latency"] = mine->shared;
    against["slowdown"] = mine->slowdown();
    against["beats_choosing_alone"] = mine->shared < before->shared * (1 - 1e-9);
    against["others_shared_latency"] = others;
    report["shared_latency_against_others"] = mine->shared;
  } catch (const std::exception& e) {
    against["status"] = "failed";
    against["reason"] = e.what();
  }
  report["shared"]["against_others"] = against;
}

// Each job chosen against the others' blind choices was run with them keeping those; with two
// or more adapted, every adapted choice runs together too (the others answer back once): each
// running job's record gets shared.all_adapted, its iteration and slowdown then.
void run_all_adapted(const Scenario& scenario, std::vector<JobGraph> graphs, const std::vector<BuiltJob>& aware,
                     std::span<const std::size_t> running, const std::vector<JobSpec>& jobs, std::vector<PointOutcome>& out) {
  nlohmann::ordered_json adapted = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < running.size(); ++i)
    if (aware[i].runs) {
      graphs[i] = {graphs[i].name, aware[i].graph, aware[i].placement};
      adapted.push_back(jobs[running[i]].name);
    }
  if (adapted.size() < 2) return;
  nlohmann::ordered_json failure;
  std::optional<SharedRun> together;
  try {
    together = run_jobs_together(graphs, scenario.cluster, scenario.simulation.engines, scenario.simulation.order);
  } catch (const std::exception& e) {
    failure = {{"status", "failed"}, {"reason", e.what()}};
  }
  for (std::size_t i = 0; i < running.size(); ++i) {
    if (!out[running[i]].measurement) continue;
    nlohmann::ordered_json all = {{"jobs_adapted", adapted}};
    if (together) {
      const JobTimes* t = together->jobs[i].find(together->headline);
      all["shared_latency"] = t->shared;
      all["slowdown"] = t->slowdown();
    } else {
      all.update(failure);
    }
    out[running[i]].measurement->strategy_report["shared"]["all_adapted"] = all;
  }
}

}  // namespace

std::vector<PointOutcome> run_jobs_point(const Scenario& scenario, const StrategySpec& allocation,
                                       std::span<const JobInput> inputs, const std::string& dir, const std::string& file_stem) {
  const fs::path folder = dir;
  const std::vector<JobSpec>& jobs = scenario.jobs;
  std::vector<BuiltJob> built(jobs.size());
  std::vector<PointOutcome> out(jobs.size());
  const AllocationPolicyInfo& policy = allocation_registry().get(allocation.name, scenario.file, allocation.field);
  const std::uint64_t seed =
      allocation.options.IsMap() && allocation.options["seed"] ? allocation.options["seed"].as<std::uint64_t>() : 1;
  std::vector<std::vector<DeviceId>> gpus;
  try {
    gpus = allocate_gpus(scenario.cluster, requests_of(jobs), policy, seed);
  } catch (const std::exception& e) {
    for (PointOutcome& o : out) o = {PointStatus::Failed, e.what(), std::nullopt, std::nullopt};
    return out;
  }
  // Places or plans job j on its GPUs of `whole` (the cluster, or what the other jobs leave of it).
  auto build = [&](std::size_t j, const Cluster& whole, BuiltJob& b, const std::string& suffix) {
    const std::string stem = file_safe(file_stem + "-" + jobs[j].name + suffix);
    try {
      b.on = whole.restricted_to(b.gpus);
      if (jobs[j].workload) plan_workload_job(scenario, jobs[j], *inputs[j].workload, *b.on, b, folder / ("plan-" + stem + ".json"));
      else place_graph_job(scenario, jobs[j], *inputs[j].graph, *b.on, b, folder / ("placement-" + stem + ".json"));
      b.recorded.placement_file = (jobs[j].workload ? "plan-" : "placement-") + stem + ".json";
    } catch (const OutputError&) {
      throw;
    } catch (const InfeasibleProblem& e) {
      b.outcome.status = PointStatus::Infeasible;
      b.outcome.reason = e.what();
    } catch (const std::exception& e) {
      b.outcome.status = PointStatus::Failed;
      b.outcome.reason = fmt::format("job '{}' (given {} GPUs, which the planner or strategy sees as its cluster): {}", jobs[j].name,
                                     b.gpus.size(), e.what());
    }
  };
  std::vector<std::size_t> running;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    built[j].gpus = gpus[j];
    build(j, scenario.cluster, built[j], "");
    if (built[j].runs) running.push_back(j);
    else out[j] = std::move(built[j].outcome);
  }
  if (running.empty()) return out;
  std::vector<JobGraph> graphs;
  for (std::size_t j : running) graphs.push_back({jobs[j].name, built[j].graph, built[j].placement});
  SharedRun run;
  try {
    run = run_jobs_together(graphs, scenario.cluster, scenario.simulation.engines, scenario.simulation.order);
  } catch (const std::exception& e) {
    for (std::size_t j : running) out[j].reason = e.what();
    for (std::size_t j : running) out[j].status = PointStatus::Failed;
    return out;
  }
  const std::string trace = write_shared_trace(scenario, run, folder, file_stem);
  // The jobs that could not run: the others shared the fabric without them, and say so.
  nlohmann::ordered_json without = nlohmann::ordered_json::array();
  for (std::size_t j = 0; j < jobs.size(); ++j)
    if (!built[j].runs)
      without.push_back({{"job", jobs[j].name}, {"status", std::string(point_status_name(out[j].status))},
                         {"reason", out[j].reason}});
  for (std::size_t i = 0; i < running.size(); ++i) {
    BuiltJob& b = built[running[i]];
    b.recorded.trace_file = trace;
    record_job(scenario, run, i, jobs, running, b, allocation.label);
    if (!without.empty()) b.outcome.measurement->strategy_report["shared"]["without"] = without;
    out[running[i]] = std::move(b.outcome);
  }
  std::vector<BuiltJob> aware(running.size());
  for (std::size_t i = 0; i < running.size(); ++i)
    if (jobs[running[i]].against_others)
      choose_against_others(scenario, run, i, running, graphs, built[running[i]].gpus, build, out[running[i]], aware[i]);
  run_all_adapted(scenario, graphs, aware, running, jobs, out);
  return out;
}

}  // namespace placesim
