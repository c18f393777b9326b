#pragma once
// Runs one point of a scenario: a strategy places the graph, the evaluator schedules the placement,
// and SimGrid runs it under contention in the evaluator's per-GPU order. scenarios/runner/sweep_runner.h
// runs every point and records each (scenarios/runner/record.h).
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "scenarios/runner/record.h"
#include "scenarios/runner/scenario.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/simgrid_engine.h"

namespace placesim {

// What one placement measured.
struct Measurement {
  double evaluator_latency = 0;
  std::optional<double> simgrid_latency;
  double simgrid_wall_s = 0;
  std::optional<double> flow_latency;  // the flow engine's (sim/engines/flow_engine.h), in the order SimGrid gets
  double flow_wall_s = 0;
  LowerBounds bounds;
  std::vector<double> memory;  // per GPU, bytes
  double peak_memory = 0;      // the largest of `memory`
  bool oom = false;            // some GPU holds more than its capacity
  std::vector<LinkUse> links;  // links that carried traffic (SimGrid only)
  Schedule schedule;
  std::optional<SimulationResult> simulation;
};

// Schedules the placement with the evaluator (in the evaluator's order, or first come first
// served) and, as `engine` says, runs that per-GPU order in SimGrid and in the flow engine (with
// FCFS both apply it to their own arrival times under contention).
Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              Engine engine, OpOrder order = OpOrder::Scheduler);

// The Chrome trace of a measured point; for a compiled plan also each GPU's memory over time.
void write_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                 const std::vector<DeviceId>& placement, const Measurement& m, const CompiledPlan* plan = nullptr);

// The timeline Chakra traces (sim/io/chakra/chakra_trace.h) hold: SimGrid's when it ran, else the
// evaluator's; `source` names what was simulated.
ChakraRun chakra_run_of(const Measurement& m, const std::string& source);
std::span<const double> chakra_start_of(const Measurement& m);

struct StrategyOutcome {
  std::string label, name;
  std::string error;  // empty when the strategy ran
  bool infeasible = false;  // no placement fits (InfeasibleProblem): `error` says why
  double search_seconds = 0;
  Measurement measurement;
  nlohmann::json strategy_report;
  std::string placement_file, trace_file;
  // A plan's execution graph (run_plan_point); 0 for a placement, whose graph is the scenario's.
  std::size_t compiled_operators = 0, compiled_tensors = 0;
  // simulation.engine estimate: no engine ran (a plan priced by NEST's estimate); `measurement`
  // holds the memory per GPU alone.
  bool estimate_only = false;
};

// Places the graph with one strategy (coarsening first if asked), measures the placement and
// writes placement-<file_stem>.json (and trace-<file_stem>.json) into `dir`. A strategy that
// throws, or a measurement that is not finite, is recorded in `error`; an OutputError (a file in
// `dir` cannot be written) is thrown on.
StrategyOutcome run_strategy_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                   const std::string& dir, const std::string& file_stem);

// Plans the workload with one planner (placement/framework/planner.h), compiles the plan into the
// execution graph and measures it on the scenario's engines, and writes plan-<file_stem>.json
// (the plan, its stages and its memory per GPU) and trace-<file_stem>.json into `dir`. The
// memory per GPU is the plan's (parameters, gradients, optimizer states, activations at the
// peak); a plan that does not fit is `infeasible`, with the GPU and the bytes, and not run.
StrategyOutcome run_plan_point(const Scenario& scenario, const StrategySpec& spec, const LayerWorkload& workload,
                               const std::string& dir, const std::string& file_stem);

}  // namespace placesim
