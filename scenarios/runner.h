#pragma once
// Runs a scenario: every strategy places the graph, the evaluator schedules the placement, and
// SimGrid runs it under contention in the evaluator's per-GPU order. Results are rewritten after
// each strategy (results.json, results.csv, a placement and a trace per strategy), so a crash
// loses no finished work.
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "sim/evaluator.h"
#include "sim/simgrid_engine.h"

namespace placesim {

struct LinkUse {
  std::string name;
  double bytes = 0;
  double busy_s = 0;
  double busy_fraction = 0;    // busy_s / iteration latency
  double mean_utilisation = 0; // bytes / (bandwidth * iteration latency)
};

// What one placement measured.
struct Measurement {
  double evaluator_latency = 0;
  std::optional<double> simgrid_latency;
  double simgrid_wall_s = 0;
  LowerBounds bounds;
  std::vector<double> memory;  // per GPU, bytes
  double peak_memory = 0;      // the largest of `memory`
  bool oom = false;            // some GPU holds more than its capacity
  std::vector<LinkUse> links;  // links that carried traffic (SimGrid only)
  Schedule schedule;
  std::optional<SimulationResult> simulation;
};

// Schedules the placement with the evaluator (in the evaluator's order, or first come first
// served) and, unless the engine is the evaluator alone, runs that per-GPU order in SimGrid.
Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              Engine engine, OpOrder order = OpOrder::Scheduler);

void write_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                 const std::vector<DeviceId>& placement, const Measurement& m);

struct StrategyOutcome {
  std::string label, name;
  std::string error;  // empty when the strategy ran
  double search_seconds = 0;
  Measurement measurement;
  nlohmann::json strategy_report;
  std::string placement_file, trace_file;
};

struct ScenarioResults {
  std::string scenario, cluster;
  std::size_t operators = 0, tensors = 0;
  std::vector<std::string> warnings;
  std::vector<StrategyOutcome> outcomes;
};

ScenarioResults run_scenario(const Scenario& scenario, const std::string& output_dir, std::ostream& log);

// Places the graph with one strategy (coarsening first if asked), measures the placement and
// writes placement-<file_stem>.json (and trace-<file_stem>.json) into `dir`. A strategy that
// throws is recorded in `error`; nothing else is caught.
StrategyOutcome run_strategy_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                   const std::string& dir, const std::string& file_stem);

// One outcome as results.json lists it (label, strategy, latencies, memory, links, report, files).
nlohmann::ordered_json outcome_to_json(const StrategyOutcome& outcome);

nlohmann::json results_to_json(const ScenarioResults& r);
std::string results_to_csv(const ScenarioResults& r);
std::string format_results_table(const ScenarioResults& r);

}  // namespace placesim
