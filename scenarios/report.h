#pragma once
// `placesim report`: reads the records `placesim run` wrote (results.jsonl, or results.json;
// scenarios/record.h), prints the comparison table and hands the records' values to
// tools/plot_results.py for the plots. Latency is SimGrid's when it ran, else the evaluator's; all
// times in seconds.
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace placesim {

// scenarios/record.h (which includes scenario.h, which includes this header for ReportSpec).
struct PointRecord;

// `path` is a results folder (results.jsonl is preferred over results.json) or one of those files.
// Throws InputError naming the file, and the line for JSON Lines, when it cannot be read.
std::vector<PointRecord> load_report_records(const std::string& path);

// One table per group of points that differ only in strategy (graph, GPU count, other swept
// values), groups and strategies in the scenario's order (point index, not the order the points
// finished): per strategy the median latency over repetitions, its speed-up vs the best other
// strategy (the fastest other latency that fits in memory over this one; > 1: this one is
// fastest), median search time, peak memory and OOM or failure. Each column has one unit, named
// in its header; notes under the tables say what the latency and the speed-up are.
std::string format_comparison_table(std::span<const PointRecord> records);

// records.json for the plot script, in the scenario's order (point index): per record index,
// scenario, graph, cluster (its description), strategy (label), gpus, params (swept values in the
// sweep's order, in SI units where they are quantities, else as written), params_text (as
// written), latency, latency_source ("simgrid" or "evaluator": whose latency `latency` is),
// evaluator_latency, simgrid_latency, search_time, peak_memory, oom, failed, error, trace_file
// (absolute: relative paths are resolved against `dir`, the results folder) and strategy_report.
nlohmann::ordered_json records_to_json(std::span<const PointRecord> records, const std::string& dir);

// A pivot of one value (latency, search_time, evaluator_latency, simgrid_latency, peak_memory or a
// key of strategy_report) with `rows` and `columns` naming record fields (graph, strategy, gpus) or
// swept parameters; cells hold the median. Markdown, so it pastes into docs/reproduction.md.
struct PivotSpec {
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::string value = "latency";
  std::string title;
  std::vector<std::string> strategies;  // only these labels (empty: every record)
  // Where the spec was written, for errors: the command line's flags, or a scenario's fields.
  std::string file = "command line";
  std::string rows_field = "--rows", columns_field = "--columns", value_field = "--value",
              strategies_field = "strategies";
};

// Throws InputError naming the spec's file and field when a row or column field is none of graph,
// strategy, gpus and the records' swept paths, the value is none of latency, search_time,
// evaluator_latency, simgrid_latency, peak_memory and the numbers the records' strategies report,
// or a strategy label is in no record; the message lists the valid ones (and the nearest).
void check_pivot_fields(std::span<const PointRecord> records, const PivotSpec& spec);

// A scenario's `report:` block: the tables its reproduction prints (scenarios/README.md).
struct ReportSpec {
  std::vector<PivotSpec> tables;
  std::string gantt_strategy;
};

// Parses a `report:` block: {tables: [{title, rows, columns, value, strategies}], gantt_strategy}.
// Errors name the file and field.
ReportSpec report_spec_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);
std::string format_pivot_table(std::span<const PointRecord> records, const PivotSpec& spec);

struct ReportOptions {
  std::string results;      // results folder or file
  std::string output;       // where table.txt, records.json and the plots go (default: <folder>/report)
  bool plots = true;
  std::string gantt_strategy;            // whose timeline the Gantt chart draws (default: the fastest)
  std::vector<PivotSpec> pivots;         // extra Markdown tables (pivot.md)
  std::string plot_script;               // default: $PLACESIM_PLOT_SCRIPT, else tools/plot_results.py
};

// Prints the comparison table (and pivots) to `out`, writes table.txt, pivot.md, records.json and,
// with `plots`, runs python3 on the plot script. Returns 0, or 1 when the plots could not be made
// (the reason goes to `err`; the tables are written regardless).
int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

// The Python that draws the plots: $PLACESIM_PYTHON, else Debian's /usr/bin/python3 (where
// python3-matplotlib installs), else python3 on the PATH.
std::string plot_python();

}  // namespace placesim
