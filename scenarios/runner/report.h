#pragma once
// `placesim report`: reads the records `placesim run` wrote (results.jsonl, or results.json;
// scenarios/runner/record.h), prints the comparison table and hands the records' values to
// tools/plot_results.py for the plots. Latency is SimGrid's when it ran, else the evaluator's; all
// times in seconds.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/config/options.h"

namespace placesim {

// scenarios/runner/record.h (which includes scenario.h, which includes this header for ReportSpec).
struct PointRecord;

// One number a paper published, and the point of placesim's run it stands beside: the record whose
// fields (graph, gpus, strategy) and swept values (a swept path, as written) are those of `match`.
struct PublishedPoint {
  std::vector<std::pair<std::string, std::string>> match;  // field or swept path -> value as written
  std::optional<double> value;  // in SI units (seconds); none when the paper reports out of memory
  std::string written;          // as the scenario writes it, with the unit: "1.56 s", "OOM"
  std::string field;            // where it is written, for messages
  bool operator==(const PublishedPoint&) const = default;
};

// A table or figure of a paper (`report.published`): whose numbers they are, which of placesim's
// values they stand beside (latency or search_time) and in which unit the paper gives them.
struct PublishedSeries {
  std::string source;  // the paper: "Celeritas (Table 3)"
  std::string table;   // what the numbers are: "single-step time on 4 V100s, batch 512"
  std::string value = "latency";
  std::string unit;    // as written: "s", "ms", "min"
  std::string note;    // what else a reader must know to compare them (may be empty)
  std::vector<PublishedPoint> points;
  bool operator==(const PublishedSeries&) const = default;
};

// The values `published` series may stand beside: the plots draw these.
inline constexpr const char* kPublishedValues[] = {"latency", "search_time"};

// `path` is a results folder (results.jsonl is preferred over results.json) or one of those files.
// Throws InputError naming the file, and the line for JSON Lines, when it cannot be read.
std::vector<PointRecord> load_report_records(const std::string& path);

// One table per group of points that differ only in strategy (graph, GPU count, other swept
// values), groups and strategies in the scenario's order (point index, not the order the points
// finished): per strategy the median latency over repetitions, its speed-up vs the best other
// strategy (the fastest other latency that fits in memory over this one; > 1: this one is
// fastest; "OOM" for a strategy whose placement does not fit), median search time, peak memory and
// OOM or failure. Each column has one unit, named
// in its header; notes under the tables say what the latency and the speed-up are.
std::string format_comparison_table(std::span<const PointRecord> records);

// records.json for the plot script, in the scenario's order (point index): per record index,
// scenario, graph, cluster (its description), strategy (label), gpus, seed (or null), params (swept values in the
// sweep's order, in SI units where they are quantities, else as written), params_text (as
// written), latency, latency_source ("simgrid", "flow", "evaluator" or "estimate": whose latency `latency` is),
// evaluator_latency, simgrid_latency, search_time, peak_memory, gpus_used (GPUs with compute), status
// (ok, oom, infeasible, failed), oom, failed, error, trace_file (absolute: relative paths are resolved
// against `dir`, the results folder), strategy_report and published: the papers' numbers that match
// the record (PublishedSeries), each {source, table, note, value (latency or search_time), number
// (seconds, null for out of memory), text (as written), oom}.
nlohmann::ordered_json records_to_json(std::span<const PointRecord> records, const std::string& dir,
                                       std::span<const PublishedSeries> published = {});

// A pivot of one value (latency, search_time, evaluator_latency, simgrid_latency, peak_memory or a
// key of strategy_report) with `rows` and `columns` naming record fields (graph, strategy, gpus) or
// swept parameters; cells hold the median. Markdown, so it pastes into docs/reproduction.md.
struct PivotSpec {
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::string value = "latency";
  std::string title;
  std::vector<std::string> strategies;  // only these labels (empty: every record)
  // A strategy label: each cell becomes that strategy's median in the same row divided by the
  // cell's (a speed-up, > 1 faster; for times such as latency); a cell whose placement does not
  // fit says OOM instead. Needs `columns: strategy`.
  std::string relative_to;
  // Where the spec was written, for errors: the command line's flags, or a scenario's fields.
  std::string file = "command line";
  std::string rows_field = "--rows", columns_field = "--columns", value_field = "--value",
              strategies_field = "strategies", relative_to_field = "relative_to";
};

// Throws InputError naming the spec's file and field when a row or column field is none of graph,
// strategy, gpus and the records' swept paths, the value is none of latency, search_time,
// evaluator_latency, simgrid_latency, peak_memory and the numbers the records' strategies report,
// or a strategy label is in no record; the message lists the valid ones (and the nearest).
void check_pivot_fields(std::span<const PointRecord> records, const PivotSpec& spec);

// A per-strategy summary a report can add (`summary:`), written to report/<name>.md.
enum class ReportSummary { None, Robustness };
inline constexpr EnumName<ReportSummary> kReportSummaryNames[] = {{ReportSummary::None, "none"},
                                                                  {ReportSummary::Robustness, "robustness"}};

// A scenario's `report:` block: the tables its reproduction prints (scenarios/README.md) and the
// papers' numbers its plots draw beside placesim's.
struct ReportSpec {
  std::vector<PivotSpec> tables;
  std::string gantt_strategy;
  ReportSummary summary = ReportSummary::None;
  std::vector<PublishedSeries> published;
};

// Parses a `report:` block: {tables: [{title, rows, columns, value, strategies, relative_to}], gantt_strategy,
// summary, published: [{source, table, value, unit, note, points: [{graph, gpus, strategy, <swept path>,
// published}]}]}. A published number is converted to seconds by its series' unit; `OOM` is a value too.
// Errors name the file and field.
ReportSpec report_spec_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);

// published.json, which `placesim run` writes into the results folder of a scenario that has
// published numbers, so that `placesim report` draws them; and back.
nlohmann::ordered_json published_to_json(std::span<const PublishedSeries> series);
std::vector<PublishedSeries> published_from_json(const nlohmann::ordered_json& j, const std::string& file);
// Reads DIR/published.json ({} when there is none).
std::vector<PublishedSeries> load_published(const std::string& results_dir);
// Writes it (nothing, and an earlier one removed, when `series` is empty).
void write_published(const std::string& results_dir, std::span<const PublishedSeries> series);

// The published points that match no record, as "source, table: graph=alexnet gpus=2 strategy=quickp".
std::vector<std::string> unmatched_published(std::span<const PointRecord> records, std::span<const PublishedSeries> series);
std::string format_pivot_table(std::span<const PointRecord> records, const PivotSpec& spec);

// The robustness benchmark's summary, one row per strategy label. A case is the points
// of one scenario with the same swept values, the strategy aside; a point "fits" when its status
// is ok. Ratios compare a point that fits with the best latency of its case among the points that
// fit (so they are >= 1).
struct RobustnessRow {
  std::string strategy;  // the label
  std::size_t points = 0, failed = 0, infeasible = 0;
  std::size_t oom_where_another_fits = 0;  // status oom while some point of the case fits
  // The search took longer than the strategy's time_limit by more than 10% and more than 0.5 s.
  std::size_t over_time_limit = 0;
  // Evaluator latency above single-device's (relative 1e-9), in cases where single-device fits;
  // out-of-memory answers count too.
  std::size_t slower_than_single_device = 0;
  std::size_t compared = 0;           // points that fit: the ratios' count
  std::size_t within_5_percent = 0;   // of those, evaluator latency <= 1.05 x the case's best
  std::optional<double> median_ratio, worst_ratio;                  // evaluator latency / best
  std::optional<double> median_simgrid_ratio, worst_simgrid_ratio;  // SimGrid's, where it ran
  std::optional<double> median_lower_bound_ratio;                   // evaluator latency / lower bound
  bool operator==(const RobustnessRow&) const = default;
};

std::vector<RobustnessRow> robustness_summary(std::span<const PointRecord> records);
// Markdown: a title with the counts of strategies, cases and points, the table, and what the
// columns mean.
std::string format_robustness_summary(std::span<const RobustnessRow> rows, std::size_t cases);
// The number of cases of `records` (see RobustnessRow).
std::size_t count_cases(std::span<const PointRecord> records);

struct ReportOptions {
  std::string results;      // results folder or file
  std::string output;       // where table.txt, records.json and the plots go (default: <folder>/report)
  bool plots = true;
  // Whose timeline the Gantt chart draws (default: every strategy's points; the script's rule picks
  // one, tools/plot_results.py).
  std::string gantt_strategy;
  std::vector<PivotSpec> pivots;         // extra Markdown tables (pivot.md)
  ReportSummary summary = ReportSummary::None;  // a per-strategy summary (report/robustness.md)
  std::string plot_script;               // default: $PLACESIM_PLOT_SCRIPT, else tools/plot_results.py
  // The papers' numbers the plots draw beside placesim's; when empty, those of the results
  // folder's published.json (what `placesim run` wrote from the scenario's `report.published`).
  std::vector<PublishedSeries> published;
};

// Prints the comparison table (and pivots, and the summary) to `out`, writes table.txt, pivot.md,
// robustness.md, records.json and, with `plots`, runs python3 on the plot script. A published
// number that matches no record is said on `err` (and not drawn). Returns 0, or 1 when the plots
// could not be made (the reason goes to `err`; the tables are written regardless).
int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err);

// The Python that draws the plots: $PLACESIM_PYTHON, else Debian's /usr/bin/python3 (where
// python3-matplotlib installs), else python3 on the PATH.
std::string plot_python();

// plot_python() SCRIPT ARGS..., without a shell (paths may hold spaces). Returns the exit status,
// or -1 when it cannot be started.
int run_python(const std::vector<std::string>& args);

}  // namespace placesim
