#pragma once
// The results of one point of a run (scenarios/runner/sweep.h): who ran it (identity), whether it ran
// (status, error) and what it measured. Values are SI inside (seconds, bytes, bytes per second);
// units appear only when a record is printed. This one type is what the runner produces, what
// results.jsonl, results.json and results.csv hold (scenarios/runner/results_store.h) and what
// `placesim report` reads (scenarios/runner/report.h).
//
// The JSON form (one line of results.jsonl) is, in this order: key, index, scenario, graph, gpus,
// cluster, sweep (path -> value as written), label, strategy, seed, repetition, engine, order,
// operators and tensors (when the worker loaded the graph), status (ok, oom, infeasible or failed),
// then either error (infeasible, failed) or the measurement (search_time, then per engine that ran
// <engine>_latency and <engine>_wall_time (evaluator, flow, simgrid, estimate), estimate_note when a
// plan has no estimate, lower_bound_critical_path, lower_bound_work_per_gpu, lower_bound (the larger
// of the two), lower_bound_memory_per_gpu, memory_per_gpu, peak_memory, oom, busy_per_gpu, links,
// the search's facts when set (time_limit, over_time_limit, cost_model, portfolio_winner,
// memory_fallback), strategy_report, placement_file, trace_file), and last warnings (with
// operators and tensors).
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "scenarios/runner/scenario.h"
#include "placement/framework/strategy.h"
#include "sim/engines/engine.h"
#include "sim/engines/evaluator.h"
#include "sim/core/units.h"

namespace placesim {

// One swept value of a point.
struct SweepValue {
  std::string path;  // "cluster.ethernet_bandwidth", "graph", or "strategy"
  std::string text;  // as written in the scenario: "16GiB", "4", "{model: bert-base}"
  // The text's value in SI units where it is a number or a quantity with a unit ("16GiB": bytes);
  // its unit says what it is (sim/core/units.h), never the path's name.
  std::optional<Quantity> quantity;

  SweepValue() = default;
  SweepValue(std::string path, std::string text);
  // For tables: the quantity in its unit ("16 GiB", "20 GB/s", "4"), else the text.
  std::string printed() const;
  bool operator==(const SweepValue&) const = default;
};

struct LinkUse {
  std::string name;
  double bytes = 0;
  double busy_s = 0;
  double busy_fraction = 0;    // busy_s / iteration latency
  double mean_utilisation = 0; // bytes / (bandwidth * iteration latency)
  bool operator==(const LinkUse&) const = default;
};

// One engine's latency of a point (sim/engines/engine.h), with the host time the engine took.
struct EngineLatency {
  std::string engine;  // registered name: written as "<engine>_latency" and "<engine>_wall_time"
  double latency = 0;  // seconds
  double wall_s = 0;
  bool operator==(const EngineLatency&) const = default;
};

// What a placement or a plan measured, as recorded.
struct PointMeasurement {
  double search_time = 0;  // the strategy's, including coarsening and `refine:`
  // Per engine that ran, in the engines' registry order. A plan is priced by the estimate too,
  // beside the engines that ran it (estimate_note says why not when it cannot be); with
  // `simulation.engine: estimate` the estimate is the only one.
  std::vector<EngineLatency> engines;
  std::string estimate_note;
  LowerBounds bounds;
  // The graph alone on its best single GPU (single-device's placement), contention-free, where it
  // fits there: what the robustness report compares every strategy with. Unset for plans and
  // replicated placements.
  std::optional<double> single_device_latency;
  std::vector<double> memory_per_gpu;  // bytes
  double peak_memory = 0;              // the largest of memory_per_gpu
  bool oom = false;                    // some GPU holds more than its capacity
  std::vector<double> busy_per_gpu;    // seconds of compute per GPU
  std::vector<LinkUse> links;          // links that carried traffic (SimGrid only), most bytes first
  SearchFacts facts;                   // the time limit, cost model, portfolio winner, memory fallback
  // The strategy's or planner's own details (placement/framework/strategy.h), free-form.
  nlohmann::ordered_json strategy_report = nlohmann::ordered_json::object();
  std::string placement_file, trace_file;  // relative to the results folder; trace_file may be empty

  // The engine's latency, when it ran.
  // (A const value: assigning to it would change nothing; set_latency does.)
  const std::optional<double> latency(std::string_view engine) const;
  // Records the engine's latency (replacing an earlier one), in the engines' registry order.
  void set_latency(std::string_view engine, double latency, double wall_s = 0);
  const EngineLatency* engine(std::string_view name) const;
};

// ok: measured; oom: measured, some GPU over its memory; infeasible: no placement or plan fits (not
// run); failed: the strategy, an engine or placesim failed. Each but ok and oom has a reason.
// TimedOut: the point ran longer than `simulation.time_limit` and was stopped (a failure of its own
// kind: the reason says how long it was given).
enum class PointStatus { Ok, Oom, Infeasible, Failed, TimedOut };
inline constexpr EnumName<PointStatus> kPointStatusNames[] = {{PointStatus::Ok, "ok"},
                                                              {PointStatus::Oom, "oom"},
                                                              {PointStatus::Infeasible, "infeasible"},
                                                              {PointStatus::Failed, "failed"},
                                                              {PointStatus::TimedOut, "timed out"}};
std::string_view point_status_name(PointStatus status);

struct PointRecord {
  // Identity.
  std::string key;  // stable across runs: sweep values, strategy label, seed, repetition
  std::size_t index = 0;
  std::string scenario, graph;  // the scenario's name; the graph's model, builtin or file stem
  int gpus = 0;
  std::string cluster;  // the cluster's description
  std::vector<SweepValue> sweep;
  std::string label, strategy;  // the strategy's label and registered name
  std::optional<long> seed;
  int repetition = 0;
  EngineSet engines = EngineSet::of({kEvaluator, kSimGrid});  // simulation.engine
  RunOrder order = RunOrder::Scheduler;
  CollectiveDetail collectives = CollectiveDetail::Messages;  // simulation.collectives
  // The graph as the worker loaded it (or the execution graph a plan compiled into); absent when
  // the point failed before (its graph did not load, or its worker died).
  struct GraphSize {
    std::size_t operators = 0, tensors = 0;
    std::vector<std::string> warnings;  // the graph loader's
  };
  std::optional<GraphSize> graph_size;
  PointStatus status = PointStatus::Ok;  // ok and oom have a measurement, the others a reason
  std::string reason;  // infeasible, failed: why
  std::optional<PointMeasurement> measurement;  // ok, oom

  bool failed() const { return !measurement; }
  // SimGrid's latency where it ran, else the flow engine's, else the evaluator's, else the
  // estimate's; nullopt for a point without a measurement.
  std::optional<double> latency() const;
  const SweepValue* sweep_value(std::string_view path) const;
};

// Whose answer a point's placement is when it is not its strategy's own search from its own
// start: "portfolio: heft on server 0" (the warm-start portfolio's candidate won), "memory
// fallback: metis" (the strategy's answer did not fit), "from: heft on server 0" (the search
// started there); "" for the strategy's own answer.
std::string answer_note(const PointRecord& record);
// The label as tables show it: "celeritas [portfolio: heft on server 0]", or the label alone.
std::string shown_label(const PointRecord& record);

// The JSON form described at the top; to_json of from_json gives back the same text (except for a
// line an older runner wrote with status ok and a null latency, which reads as failed).
nlohmann::ordered_json to_json(const PointRecord& record);
// JSON text of `j` (indented by `indent`, -1: one line) that never throws: a string that is not
// UTF-8 is written with U+FFFD in place of its bad bytes. The loaders refuse such text, but a
// finished run must not be lost at the last step to a stray byte.
std::string dump_json(const nlohmann::ordered_json& j, int indent = -1);
// Throws InputError naming `file` and `where` (such as "line 3") and the field when `j` is not a
// record of that form.
PointRecord record_from_json(const nlohmann::ordered_json& j, const std::string& file, const std::string& where);

// The swept paths of the records, in first-seen order.
std::vector<std::string> sweep_paths(std::span<const PointRecord> records);

// results.json: {scenario, cluster, operators, tensors (of the first record), units, warnings and
// swept paths (of all), strategies: the records}, records in the order given.
nlohmann::ordered_json results_document(std::span<const PointRecord> records);
// results.csv: one row per record, a column per swept path.
std::string records_to_csv(std::span<const PointRecord> records);
// The table `placesim run` prints: one row per record, its sweep values, seed and repetition first;
// each column in one unit, named in its header.
std::string format_point_table(std::span<const PointRecord> records);
// Jobs on one cluster (scenarios/runner/jobs.h): per allocation (and other swept values) and job,
// its GPUs, iterations, iteration alone and shared on the engine that counted them, and the
// slowdown; "" when no record is a job's. format_point_table ends with it.
std::string format_jobs_table(std::span<const PointRecord> records);

}  // namespace placesim
