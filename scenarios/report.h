#pragma once
// `placesim report`: reads what `placesim run` wrote (results.jsonl of a sweep, or results.json of
// a plain run), prints the comparison table and hands normalised records to tools/plot_results.py
// for the plots. Latency is SimGrid's when it ran, else the evaluator's; all times in seconds.
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace placesim {

struct ReportRecord {
  std::string graph;                 // the scenario's graph (model or file name)
  std::string strategy;              // the strategy's label
  int gpus = 0;
  nlohmann::json params = nlohmann::json::object();  // swept values, numbers where they parse
  std::optional<double> latency;     // SimGrid's if present, else the evaluator's
  std::optional<double> evaluator_latency, simgrid_latency;
  std::optional<double> search_time;
  double peak_memory = 0;
  bool oom = false;
  bool failed = false;
  std::string error;
  std::string trace_file;            // absolute, or empty
  nlohmann::json strategy_report = nlohmann::json::object();
};

// `path` is a results folder (results.jsonl is preferred over results.json) or one of those files.
// Throws InputError naming the file, and the line for JSON Lines, when it cannot be read.
std::vector<ReportRecord> load_report_records(const std::string& path);

// One table per group of points that differ only in strategy (graph, GPU count, other swept
// values): per strategy the median latency over repetitions, the speed-up of the best other
// strategy's latency over this one (> 1: this one is faster), median search time, peak memory and
// OOM or failure.
std::string format_comparison_table(std::span<const ReportRecord> records);

nlohmann::json records_to_json(std::span<const ReportRecord> records);

// A pivot of one value (latency, search_time, evaluator_latency, simgrid_latency, peak_memory or a
// key of strategy_report) with `rows` and `columns` naming record fields (graph, strategy, gpus) or
// swept parameters; cells hold the median. Markdown, so it pastes into docs/reproduction.md.
struct PivotSpec {
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::string value = "latency";
  std::string title;
  std::vector<std::string> strategies;  // only these labels (empty: every record)
};

// A scenario's `report:` block: the tables its reproduction prints (scenarios/README.md).
struct ReportSpec {
  std::vector<PivotSpec> tables;
  std::string gantt_strategy;
};

// Parses a `report:` block: {tables: [{title, rows, columns, value, strategies}], gantt_strategy}.
// Errors name the file and field.
ReportSpec report_spec_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);
std::string format_pivot_table(std::span<const ReportRecord> records, const PivotSpec& spec);

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
