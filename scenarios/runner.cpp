#include "scenarios/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <ostream>

#include "placement/quickp/bandwidth.h"
#include "placement/strategy.h"
#include "sim/errors.h"
#include "sim/placement_io.h"
#include "sim/trace.h"
#include "sim/units.h"

namespace placesim {

namespace fs = std::filesystem;

Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              Engine engine, OpOrder order) {
  Measurement m;
  Evaluator evaluator(graph, cluster);
  m.schedule = evaluator.schedule(placement, order == OpOrder::Fcfs ? Priority::Fcfs : Priority::Rank);
  m.evaluator_latency = m.schedule.latency;
  m.bounds = evaluator.lower_bounds();
  m.memory = m.schedule.memory;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    m.peak_memory = std::max(m.peak_memory, m.memory[d]);
    if (m.memory[d] > cluster.device(d).memory_bytes) m.oom = true;
  }
  if (engine != Engine::Evaluator) {
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
                 const std::vector<DeviceId>& placement, const Measurement& m) {
  if (m.simulation)
    write_chrome_trace(path, graph, cluster, placement, m.simulation->start, m.simulation->finish, m.simulation->flows,
                       m.simulation->subflows);
  else
    write_chrome_trace(path, graph, cluster, placement, m.schedule.start, m.schedule.finish, {});
}

namespace {

std::string file_safe(const std::string& label) {
  std::string out;
  for (char c : label) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

// Places the graph; with `coarsen:`, places the coarse graph and gives every operator its coarse
// operator's GPU. Coarsening time counts as search time (it is part of finding the placement) and
// is also reported on its own, with the coarse graph's size, under strategy_report.coarsening.
PlacementResult place(const StrategySpec& spec, Strategy& strategy, const Graph& graph, const Cluster& cluster) {
  if (!spec.coarsen) return run_strategy(strategy, spec.label, graph, cluster);
  const auto t0 = std::chrono::steady_clock::now();
  const Coarsening coarse = coarsen(graph, *spec.coarsen);
  const double coarsen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  PlacementResult placed = run_strategy(strategy, spec.label, coarse.coarse, cluster);
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

void write_outputs(const ScenarioResults& r, const fs::path& dir) {
  write_file_atomically((dir / "results.json").string(), results_to_json(r).dump(2) + "\n");
  write_file_atomically((dir / "results.csv").string(), results_to_csv(r));
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
    PlacementResult placed = place(spec, *strategy, graph, scenario.cluster);
    out.search_seconds = placed.search_seconds;
    out.strategy_report = placed.report;
    out.placement_file = "placement-" + file_safe(file_stem) + ".json";
    save_placement(graph, placed.placement, (folder / out.placement_file).string());
    // A strategy that also chose the multi-NIC bandwidth allocation (QuickP P3) is measured on
    // the cluster with that allocation, so SimGrid enforces it.
    const std::optional<Cluster> allocated = allocated_cluster(scenario.cluster, placed.bandwidth_allocation);
    const Cluster& run_on = allocated ? *allocated : scenario.cluster;
    out.measurement = measure_placement(graph, run_on, placed.placement, scenario.simulation.engine,
                                        scenario.simulation.order);
    if (scenario.simulation.trace) {
      out.trace_file = "trace-" + file_safe(file_stem) + ".json";
      write_trace((folder / out.trace_file).string(), graph, run_on, placed.placement, out.measurement);
    }
  } catch (const std::exception& e) {
    // A failing strategy is recorded and the others still run: nothing asked for is dropped.
    out.error = e.what();
  }
  return out;
}

ScenarioResults run_scenario(const Scenario& scenario, const std::string& output_dir, std::ostream& log) {
  ScenarioResults r;
  r.scenario = scenario.name;
  r.cluster = scenario.cluster.description;
  const Graph graph = load_graph_source(scenario.graph, scenario.file, r.warnings);
  for (const auto& w : r.warnings) log << "warning: " << w << "\n";
  r.operators = graph.num_operators();
  r.tensors = graph.num_tensors();
  const fs::path dir = output_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(output_dir, "output", "cannot create the output folder: " + ec.message());

  log << fmt::format("scenario {}: {} operators, {} tensors on {}\n", scenario.name, graph.num_operators(),
                     graph.num_tensors(), scenario.cluster.description);
  for (std::size_t i = 0; i < scenario.strategies.size(); ++i) {
    const StrategySpec& spec = scenario.strategies[i];
    log << fmt::format("[{}/{}] {} ...", i + 1, scenario.strategies.size(), spec.label) << std::flush;
    StrategyOutcome out = run_strategy_point(scenario, spec, graph, dir.string(), spec.label);
    if (out.error.empty())
      log << fmt::format(" {}{}\n", format_duration(out.measurement.simgrid_latency.value_or(out.measurement.evaluator_latency)),
                         out.measurement.oom ? " (OOM)" : "");
    else
      log << " failed: " << out.error << "\n";
    r.outcomes.push_back(std::move(out));
    write_outputs(r, dir);
  }
  return r;
}

nlohmann::ordered_json outcome_to_json(const StrategyOutcome& o) {
  nlohmann::ordered_json s;
  s["label"] = o.label;
  s["strategy"] = o.name;
  if (!o.error.empty()) {
    s["error"] = o.error;
    return s;
  }
  const Measurement& m = o.measurement;
  s["search_time"] = o.search_seconds;
  s["evaluator_latency"] = m.evaluator_latency;
  s["simgrid_latency"] = m.simgrid_latency ? nlohmann::ordered_json(*m.simgrid_latency) : nlohmann::ordered_json(nullptr);
  s["simgrid_wall_time"] = m.simgrid_latency ? nlohmann::ordered_json(m.simgrid_wall_s) : nlohmann::ordered_json(nullptr);
  s["lower_bound_critical_path"] = m.bounds.critical_path;
  s["lower_bound_work_per_gpu"] = m.bounds.work_per_device;
  s["memory_per_gpu"] = m.memory;
  s["peak_memory"] = m.peak_memory;
  s["oom"] = m.oom;
  s["busy_per_gpu"] = m.schedule.busy;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& l : m.links)
    links.push_back({{"link", l.name}, {"bytes", l.bytes}, {"busy_time", l.busy_s},
                     {"busy_fraction", l.busy_fraction}, {"mean_utilisation", l.mean_utilisation}});
  s["links"] = std::move(links);
  s["strategy_report"] = o.strategy_report;
  s["placement_file"] = o.placement_file;
  s["trace_file"] = o.trace_file;
  return s;
}

nlohmann::json results_to_json(const ScenarioResults& r) {
  nlohmann::ordered_json j;
  j["scenario"] = r.scenario;
  j["cluster"] = r.cluster;
  j["operators"] = r.operators;
  j["tensors"] = r.tensors;
  j["units"] = {{"time", "s"}, {"memory", "B"}, {"bandwidth", "B/s"}};
  j["warnings"] = r.warnings;
  j["strategies"] = nlohmann::ordered_json::array();
  for (const auto& o : r.outcomes) j["strategies"].push_back(outcome_to_json(o));
  return j;
}

std::string results_to_csv(const ScenarioResults& r) {
  std::string out =
      "scenario,strategy,label,evaluator_latency_s,simgrid_latency_s,search_time_s,peak_memory_bytes,oom,error\n";
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const auto& o : r.outcomes) {
    const Measurement& m = o.measurement;
    if (!o.error.empty()) {
      out += fmt::format("{},{},{},,,,,,{}\n", quote(r.scenario), quote(o.name), quote(o.label), quote(o.error));
      continue;
    }
    out += fmt::format("{},{},{},{:.9g},{},{:.6g},{:.0f},{},\n", quote(r.scenario), quote(o.name), quote(o.label),
                       m.evaluator_latency, m.simgrid_latency ? fmt::format("{:.9g}", *m.simgrid_latency) : "",
                       o.search_seconds, m.peak_memory, m.oom ? "true" : "false");
  }
  return out;
}

std::string format_results_table(const ScenarioResults& r) {
  std::string out = fmt::format("{:<20} {:>14} {:>14} {:>12} {:>14} {:>5}\n", "strategy", "evaluator", "simgrid",
                                "search", "peak mem/GPU", "OOM");
  for (const auto& o : r.outcomes) {
    if (!o.error.empty()) {
      out += fmt::format("{:<20} failed: {}\n", o.label, o.error);
      continue;
    }
    const Measurement& m = o.measurement;
    out += fmt::format("{:<20} {:>14} {:>14} {:>12} {:>14} {:>5}\n", o.label, format_duration(m.evaluator_latency),
                       m.simgrid_latency ? format_duration(*m.simgrid_latency) : std::string("-"),
                       format_duration(o.search_seconds), format_bytes(m.peak_memory), m.oom ? "yes" : "no");
  }
  return out;
}

}  // namespace placesim
