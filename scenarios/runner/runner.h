#pragma once
// Runs one point of a scenario: a strategy places the graph (or a planner plans the workload), and
// one measure-and-record path runs the execution graph on the scenario's engines, checks that
// every value is finite, writes the trace and the Chakra traces, and returns the point's status
// and measurement. scenarios/runner/sweep_runner.h runs every point and records each
// (scenarios/runner/record.h).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "scenarios/runner/record.h"
#include "scenarios/runner/scenario.h"
#include "sim/engines/engine.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

// What the engines measured of one execution graph, with what follows from it.
struct Measurement {
  EngineRuns runs;  // per engine asked (the evaluator always runs when an event engine does)
  LowerBounds bounds;
  std::vector<double> memory;  // per GPU, bytes
  double peak_memory = 0;      // the largest of `memory`
  bool oom = false;            // some GPU holds more than its capacity
  std::vector<LinkUse> links;  // links that carried traffic (SimGrid only), most bytes first

  const std::optional<double> latency(std::string_view engine) const { return runs.latency(engine); }
  // The evaluator's schedule (per-GPU order, busy time), when it ran.
  const Schedule* evaluator_schedule() const;
  // The run the timelines show (traces, Chakra): SimGrid's when it ran, else the evaluator's;
  // nullptr when no engine scheduled anything (the estimate alone).
  const EngineRun* timeline() const;
};

// Runs the engines of `engines` on the placed graph, in `order` (the evaluator always runs with an
// event engine: its bounds and memory are every measurement's), with the operators' memory per GPU
// (the papers' model) unless `memory` gives it per GPU.
Measurement measure(const PlacedGraph& graph, const Cluster& cluster, EngineSet engines,
                    RunOrder order = RunOrder::Scheduler, std::optional<std::vector<double>> memory = std::nullopt);
// The same for a bare placed graph.
Measurement measure_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement,
                              EngineSet engines, RunOrder order = RunOrder::Scheduler);

// The Chrome trace of a measured point; for a compiled plan also each GPU's memory over time.
void write_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                 const std::vector<DeviceId>& placement, const Measurement& m, const CompiledPlan* plan = nullptr);

// The timeline Chakra traces (sim/io/chakra/chakra_trace.h) hold: the timeline run's, and its start times.
ChakraRun chakra_run_of(const Measurement& m, const std::string& source);
std::span<const double> chakra_start_of(const Measurement& m);

// A point's file stem as a file name: a sweep's stems are made safe already (`mcmc_gpus=4`,
// scenarios/runner/sweep.cpp); a label alone keeps letters, digits, '-', '_', '.' and '='.
std::string file_safe(const std::string& label);

// One point's outcome: its status (with the reason when not ok), its measurement when it ran, and
// the size of the execution graph a plan or replication compiled into.
struct PointOutcome {
  PointStatus status = PointStatus::Failed;
  std::string reason;
  std::optional<PointMeasurement> measurement;
  std::optional<std::pair<std::size_t, std::size_t>> compiled;  // operators, tensors
};

// Places the graph with one strategy (coarsening first, `refine:` after, replicated with
// `data_parallel:` when asked), measures the placement and writes placement-<file_stem>.json (and
// trace-<file_stem>.json) into `dir`. A strategy that throws, or a measurement that is not finite,
// is a failed point; an OutputError (a file in `dir` cannot be written) is thrown on.
PointOutcome run_strategy_point(const Scenario& scenario, const StrategySpec& spec, const Graph& graph,
                                const std::string& dir, const std::string& file_stem);

// Plans the workload with one planner (placement/framework/planner.h), compiles the plan into the
// execution graph and measures it on the scenario's engines (and prices it by the estimate), and
// writes plan-<file_stem>.json (the plan, its stages and its memory per GPU) and
// trace-<file_stem>.json into `dir`. The memory per GPU is the plan's (parameters, gradients,
// optimizer states, activations at the peak); a plan that does not fit is `infeasible`, with the
// GPU and the bytes, and not run.
PointOutcome run_plan_point(const Scenario& scenario, const StrategySpec& spec, const LayerWorkload& workload,
                            const std::string& dir, const std::string& file_stem);

}  // namespace placesim
