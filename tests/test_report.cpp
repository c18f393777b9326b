// `placesim report`: the comparison table, pivots and plots from hand-written results files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <sstream>

#include "scenarios/runner/record.h"
#include "scenarios/runner/report.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"
#include "tests/test_util.h"

namespace placesim {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) { return testutil::fresh_temp_dir("report-" + name); }

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

using Sweep = std::vector<std::pair<std::string, std::string>>;

// A record as `placesim run` writes it for graph g on 2 GPUs: measured by the evaluator (and by
// SimGrid when given), or failed.
PointRecord measured(const std::string& label, const Sweep& sweep, double evaluator,
                     std::optional<double> simgrid = std::nullopt) {
  PointRecord r;
  r.key = label;
  r.scenario = "s";
  r.graph = "g";
  r.gpus = 2;
  r.label = r.strategy = label;
  for (const auto& [path, text] : sweep) r.sweep.emplace_back(path, text);
  r.measurement.emplace();
  r.measurement->set_latency(kEvaluator, evaluator);
  if (simgrid) r.measurement->set_latency(kSimGrid, *simgrid);
  return r;
}

PointRecord failed(const std::string& label, const Sweep& sweep, const std::string& error) {
  PointRecord r = measured(label, sweep, 0);
  r.measurement.reset();
  r.status = PointStatus::Failed;
  r.reason = error;
  return r;
}

std::string lines(std::initializer_list<PointRecord> records) {
  std::string out;
  for (const PointRecord& r : records) out += to_json(r).dump() + "\n";
  return out;
}

// Two groups (bandwidth 10 and 20 GB/s). In the first, a = 10 ms and b = 8 ms: b's speed-up over
// the best other is 10/8 = 1.250x, a's is 8/10 = 0.800x. c is faster (4 ms) but OOM, so it does not
// count as a competitor, and has no speed-up of its own (8/4 would be 2.000x). In the second group a
// failed.
std::string sample_lines() {
  const Sweep bw10 = {{"cluster.bandwidth", "10GB/s"}}, bw20 = {{"cluster.bandwidth", "20GB/s"}};
  PointRecord a = measured("a", bw10, 0.010), b = measured("b", bw10, 0.009, 0.008), c = measured("c", bw10, 0.004),
              b20 = measured("b", bw20, 0.006);
  a.measurement->search_time = 0.5;
  a.measurement->peak_memory = 1024;
  b.measurement->search_time = b20.measurement->search_time = 1.5;
  c.measurement->oom = true;
  c.status = PointStatus::Oom;
  return lines({a, b, c}) + "\n" + lines({failed("a", bw20, "worker killed by SIGSEGV"), b20});
}

// A row is its strategy's own answer, or says whose it is: the portfolio's winner, a memory
// fallback or the chain's start, in the point table, the "fastest" lines, the comparison table
// and the CSV, and through results.jsonl.
TEST(Report, RowsNameTheCandidateWhoseAnswerTheyAre) {
  PointRecord own = measured("celeritas", {}, 2.0), won = measured("celeritas-flow", {}, 1.0),
              chain = measured("mcmc", {}, 1.5), fallback = measured("quickp", {}, 3.0);
  own.strategy = won.strategy = "celeritas";
  own.measurement->facts.portfolio_winner = "celeritas";
  won.measurement->facts.portfolio_winner = "heft on server 0";
  chain.measurement->facts.warm_start = "metis";
  fallback.measurement->facts.memory_fallback = "m-topo";
  EXPECT_EQ(shown_label(own), "celeritas");
  EXPECT_EQ(shown_label(won), "celeritas-flow [portfolio: heft on server 0]");
  EXPECT_EQ(shown_label(chain), "mcmc [from: metis]");
  EXPECT_EQ(shown_label(fallback), "quickp [memory fallback: m-topo]");
  const std::vector<PointRecord> records{own, won, chain, fallback};
  const std::string points = format_point_table(records), comparison = format_comparison_table(records),
                    csv = records_to_csv(records);
  for (const PointRecord& r : {won, chain, fallback}) {
    EXPECT_NE(points.find(shown_label(r)), std::string::npos) << points;
    EXPECT_NE(comparison.find(shown_label(r)), std::string::npos) << comparison;
    EXPECT_NE(csv.find(answer_note(r)), std::string::npos) << csv;
    EXPECT_EQ(shown_label(record_from_json(to_json(r), "results.jsonl", "line 1")), shown_label(r));
  }
  EXPECT_EQ(comparison.find("celeritas ["), std::string::npos) << comparison;
  // A row whose runs differ says how many were another's answer.
  PointRecord again = won;
  again.measurement->facts.portfolio_winner = "celeritas";
  const std::string mixed = format_comparison_table(std::vector<PointRecord>{won, again});
  EXPECT_NE(mixed.find("celeritas-flow [1 of 2 runs: portfolio: heft on server 0]"), std::string::npos) << mixed;
}

// Plans priced by NEST's estimate alone (simulation.engine estimate): no engine latency; the
// tables show the estimate, and a record without one shows "-", never "infeasible".
TEST(Report, EstimateOnlyRecordsShowTheEstimate) {
  PointRecord manual = measured("manual", {}, 0), nest = measured("nest", {}, 0), none = measured("none", {}, 0);
  for (PointRecord* r : {&manual, &nest, &none}) {
    r->engines = EngineSet::of({kEstimate});
    r->measurement->engines.clear();
  }
  manual.measurement->set_latency(kEstimate, 2.0);
  nest.measurement->set_latency(kEstimate, 1.6);
  const std::vector<PointRecord> records{manual, nest, none};
  const std::string points = format_point_table(records);
  EXPECT_NE(points.find("estimate (s)"), std::string::npos) << points;
  EXPECT_NE(points.find("1.6"), std::string::npos) << points;
  const std::string comparison = format_comparison_table(records);
  EXPECT_NE(comparison.find("NEST estimate (s)"), std::string::npos) << comparison;
  EXPECT_NE(comparison.find("1.250x"), std::string::npos) << comparison;  // nest: 2.0 / 1.6
  EXPECT_EQ(comparison.find("infeasible"), std::string::npos) << comparison;
  // Written without "evaluator_latency", read back as ok; the same line from an engine's run is refused.
  const nlohmann::ordered_json written = to_json(nest);
  EXPECT_FALSE(written.contains("evaluator_latency"));
  const PointRecord back = record_from_json(written, "results.jsonl", "line 1");
  EXPECT_EQ(back.status, PointStatus::Ok);
  EXPECT_FALSE(back.measurement->latency(kEvaluator));
  nlohmann::ordered_json engine_run = written;
  engine_run["engine"] = "evaluator";
  EXPECT_INPUT_ERROR(record_from_json(engine_run, "results.jsonl", "line 2"), "line 2", "\"evaluator_latency\": missing");
}

TEST(Report, ReadsJsonLinesOfTypedRecords) {
  const fs::path dir = fresh_dir("jsonl");
  write(dir / "results.jsonl", sample_lines());
  const auto records = load_report_records(dir.string());
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[1].label, "b");
  EXPECT_DOUBLE_EQ(*records[1].latency(), 0.008);  // SimGrid's latency wins over the evaluator's
  EXPECT_DOUBLE_EQ(*records[0].latency(), 0.010);
  const SweepValue* bandwidth = records[0].sweep_value("cluster.bandwidth");
  ASSERT_TRUE(bandwidth && bandwidth->quantity);
  EXPECT_DOUBLE_EQ(bandwidth->quantity->value, 10e9);  // "10GB/s" -> bytes/s
  EXPECT_EQ(bandwidth->text, "10GB/s");
  EXPECT_EQ(records[2].status, PointStatus::Oom);
  EXPECT_TRUE(records[3].failed());
  EXPECT_EQ(records[3].reason, "worker killed by SIGSEGV");
}

// A swept value's unit says what it is, whatever the path is called: "16GiB" is bytes, "5us" a
// duration, "4" a number; text that is no quantity (a graph) stays text.
TEST(Report, SweptValuesAreQuantitiesByTheirUnit) {
  const SweepValue memory("cluster.gpu_memory", "16GiB"), alpha("cluster.hop", "5us"), count("x", "4"),
      graph("graph", "{model: bert-base}");
  ASSERT_TRUE(memory.quantity && alpha.quantity && count.quantity);
  EXPECT_EQ(memory.quantity->dimension, Dimension::Bytes);
  EXPECT_DOUBLE_EQ(memory.quantity->value, 16.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(memory.printed(), "16 GiB");
  EXPECT_EQ(alpha.quantity->dimension, Dimension::Duration);
  EXPECT_DOUBLE_EQ(alpha.quantity->value, 5e-6);
  EXPECT_EQ(alpha.printed(), "5 us");
  EXPECT_EQ(count.quantity->dimension, Dimension::Number);
  EXPECT_EQ(count.printed(), "4");
  EXPECT_FALSE(graph.quantity);
  EXPECT_EQ(graph.printed(), "{model: bert-base}");

  const fs::path dir = fresh_dir("units");
  write(dir / "results.jsonl", lines({measured("a", {{"cluster.gpu_memory", "16GiB"}}, 0.01)}));
  const auto records = load_report_records(dir.string());
  EXPECT_NE(format_comparison_table(records).find("g on 2 GPUs, cluster.gpu_memory=16 GiB"), std::string::npos);
  const nlohmann::json j = records_to_json(records, dir.string());
  EXPECT_DOUBLE_EQ(j[0]["params"]["cluster.gpu_memory"].get<double>(), 16.0 * 1024 * 1024 * 1024);
}

TEST(Report, ComparisonTableSpeedUpsOverTheBestOther) {
  const fs::path dir = fresh_dir("table");
  write(dir / "results.jsonl", sample_lines());
  const auto records = load_report_records((dir / "results.jsonl").string());
  const std::string table = format_comparison_table(records);
  EXPECT_NE(table.find("g on 2 GPUs, cluster.bandwidth=10 GB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("0.800x"), std::string::npos) << table;
  EXPECT_NE(table.find("1.250x"), std::string::npos) << table;
  // c does not fit: its speed-up column says OOM, never a number.
  EXPECT_EQ(table.find("2.000x"), std::string::npos) << table;
  const std::size_t c_row = table.find("\n  c ");
  ASSERT_NE(c_row, std::string::npos) << table;
  const std::string c_line = table.substr(c_row + 1, table.find('\n', c_row + 1) - c_row - 1);
  EXPECT_NE(c_line.find(" OOM "), std::string::npos) << c_line;
  EXPECT_EQ(c_line.find('x'), std::string::npos) << c_line;
  EXPECT_NE(table.find("1 failed: worker killed by SIGSEGV"), std::string::npos) << table;
}

TEST(Report, PivotTakesTheMedianOverRepetitions) {
  const fs::path dir = fresh_dir("pivot");
  PointRecord on4 = measured("a", {}, 0.005);
  on4.gpus = 4;
  on4.measurement->oom = true;
  on4.status = PointStatus::Oom;
  write(dir / "results.jsonl", lines({measured("a", {}, 0.001), measured("a", {}, 0.003), on4}));
  const auto records = load_report_records(dir.string());
  PivotSpec spec;
  spec.rows = {"graph"};
  spec.columns = {"gpus"};
  spec.value = "latency";
  const std::string md = format_pivot_table(records, spec);
  // Median of 1 and 3 ms is 2 ms; the 4-GPU cell is flagged OOM.
  EXPECT_NE(md.find("| graph | 2 | 4 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| g | 2 ms | 5 ms (OOM) |"), std::string::npos) << md;
}

// relative_to: each cell is the reference strategy's value in its row over the cell's, the
// reference's own cell included (1.00x), whatever order the labels sort in.
TEST(Report, PivotRelativeToAStrategyGivesSpeedUps) {
  const std::vector<PointRecord> records = {measured("megatron", {}, 0.004), measured("nest", {}, 0.002),
                                            measured("aaa", {}, 0.008)};
  PivotSpec spec;
  spec.rows = {"graph"};
  spec.columns = {"strategy"};
  spec.value = "latency";
  spec.relative_to = "megatron";
  const std::string md = format_pivot_table(records, spec);
  EXPECT_NE(md.find("| g | 1.00x | 2.00x | 0.50x |"), std::string::npos) << md;
  // Only along a row of strategies.
  const std::string bad = testutil::input_error_message([] {
    report_spec_from_yaml(YAML::Load("{tables: [{rows: graph, columns: gpus, relative_to: megatron}]}"), "s.yaml", "report");
  });
  EXPECT_NE(bad.find("report.tables[0].relative_to"), std::string::npos) << bad;
}

// A placement that does not fit has no speed-up: its relative_to cell says OOM, not 4.00x.
TEST(Report, PivotSpeedUpOfAnOomCellSaysOom) {
  PointRecord oom = measured("tiny", {}, 0.001);
  oom.measurement->oom = true;
  oom.status = PointStatus::Oom;
  PivotSpec spec;
  spec.rows = {"graph"};
  spec.columns = {"strategy"};
  spec.relative_to = "megatron";
  const std::string md = format_pivot_table(std::vector<PointRecord>{measured("megatron", {}, 0.004), oom}, spec);
  EXPECT_NE(md.find("| g | 1.00x | OOM |"), std::string::npos) << md;
}

// A point that did not run says why in its cell: failed, or infeasible (no placement fits).
TEST(Report, PivotCellsSayFailedOrInfeasible) {
  PointRecord ran = measured("a", {}, 0.002), crashed = failed("b", {}, "worker killed"),
              too_big = failed("c", {}, "no placement fits in GPU memory: ...");
  too_big.status = PointStatus::Infeasible;
  PivotSpec spec;
  spec.rows = {"graph"};
  spec.columns = {"strategy"};
  spec.value = "latency";
  const std::string md = format_pivot_table(std::vector<PointRecord>{ran, crashed, too_big}, spec);
  EXPECT_NE(md.find("| g | 2 ms | failed | infeasible |"), std::string::npos) << md;
}

TEST(Report, BadInputsNameTheFileLineAndField) {
  const fs::path dir = fresh_dir("bad");
  write(dir / "results.jsonl", lines({measured("a", {}, 0.001)}) + "{not json\n");
  EXPECT_INPUT_ERROR(load_report_records(dir.string()), "", "line 2");
  // A record without its measurement is no record (no aliases, no guesses).
  write(dir / "results.jsonl", R"({"label":"a","graph":"g","gpus":2,"evaluator_latency":0.01})" "\n");
  EXPECT_INPUT_ERROR(load_report_records(dir.string()), "", "line 1: \"key\": missing");
  const fs::path empty = fresh_dir("empty");
  EXPECT_THROW(load_report_records(empty.string()), InputError);
  write(empty / "results.json", "{\"scenario\": \"x\"}");
  EXPECT_THROW(load_report_records(empty.string()), InputError);
}

TEST(Report, ReadsResultsJsonOfARun) {
  const fs::path dir = fresh_dir("json");
  PointRecord single, metf;
  single.key = "single";
  single.graph = metf.graph = "quick";
  single.gpus = metf.gpus = 2;
  single.label = "single-device";
  metf.key = "metf";
  metf.label = "m-etf";
  single.measurement.emplace();
  single.measurement->search_time = 0.0001;
  single.measurement->set_latency(kEvaluator, 0.02);
  single.measurement->set_latency(kSimGrid, 0.02);
  single.measurement->trace_file = "trace-single-device.json";
  metf.measurement.emplace();
  metf.measurement->set_latency(kEvaluator, 0.015);
  metf.measurement->set_latency(kSimGrid, 0.016);
  const std::vector<PointRecord> written = {single, metf};
  write(dir / "results.json", results_document(written).dump(2));
  const auto records = load_report_records(dir.string());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].graph, "quick");
  EXPECT_EQ(records[0].gpus, 2);
  const nlohmann::json j = records_to_json(records, dir.string());
  EXPECT_EQ(fs::path(j[0]["trace_file"].get<std::string>()), dir / "trace-single-device.json");
  EXPECT_NE(format_comparison_table(records).find("1.250x"), std::string::npos);  // 0.02 / 0.016
}

TEST(Report, RecordsCarryTheWholeProblemsLowerBound) {
  PointRecord r;
  r.key = "k";
  r.label = r.strategy = "quickp";
  r.measurement.emplace();
  r.measurement->set_latency(kEvaluator, 0.02);
  r.measurement->bounds = {0.012, 0.015, 3e9};
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["lower_bound"], 0.015);  // max(critical path, work per GPU)
  EXPECT_EQ(j["lower_bound_memory_per_gpu"], 3e9);
  const PointRecord back = record_from_json(j, "results.jsonl", "line 1");
  EXPECT_EQ(back.measurement->bounds.memory_per_device, 3e9);
  EXPECT_EQ(to_json(back).dump(), j.dump());
}

TEST(Report, AnInfeasiblePointIsNoFailure) {
  PointRecord r;
  r.key = "k";
  r.label = r.strategy = "quickp";
  r.status = PointStatus::Infeasible;
  r.reason = "no placement fits in GPU memory: the graph needs 18 GB of memory, the 2 GPUs hold 16 GB in all";
  EXPECT_EQ(r.status, PointStatus::Infeasible);
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["status"], "infeasible");
  const PointRecord back = record_from_json(j, "results.jsonl", "line 1");
  EXPECT_EQ(back.status, PointStatus::Infeasible);
  EXPECT_EQ(back.reason, r.reason);
}

bool matplotlib_available() {
  return std::system((plot_python() + " -c 'import matplotlib' >/dev/null 2>&1").c_str()) == 0;
}

TEST(Report, WritesPlotsAsPngAndSvg) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const fs::path dir = fresh_dir("plots");
  // A two-GPU trace with one operator per GPU, as write_chrome_trace writes it (microseconds).
  write(dir / "trace-a.json",
        R"({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"GPUs"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"gpu0"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"gpu1"}},
            {"name":"x","ph":"X","pid":1,"tid":0,"ts":0,"dur":5000},
            {"name":"y","ph":"X","pid":1,"tid":1,"ts":5000,"dur":3000}]})");
  std::string text;
  for (int gpus : {2, 4})
    for (const char* bw : {"10GB/s", "20GB/s"})
      for (const char* s : {"a", "b"}) {
        PointRecord r = measured(s, {{"cluster.gpus", std::to_string(gpus)}, {"cluster.ethernet_bandwidth", bw}},
                                 s[0] == 'a' ? 0.01 : 0.008);
        r.gpus = gpus;
        r.measurement->search_time = 0.1 * gpus;
        r.measurement->trace_file = "trace-a.json";
        text += lines({r});
      }
  write(dir / "results.jsonl", text);
  std::ostringstream out, err;
  ReportOptions options;
  options.results = dir.string();
  ASSERT_EQ(run_report(options, out, err), 0) << err.str() << out.str();
  for (const char* name : {"latency_by_model", "latency_vs_bandwidth", "search_time_vs_gpus", "gantt"})
    for (const char* ext : {".png", ".svg"}) {
      const fs::path p = dir / "report" / (std::string(name) + ext);
      EXPECT_TRUE(fs::exists(p) && fs::file_size(p) > 1000) << p;
    }
  EXPECT_TRUE(fs::exists(dir / "report" / "table.txt"));
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

TEST(Report, ReportBlockParsesAndFiltersStrategies) {
  const YAML::Node node = YAML::Load(
      "tables:\n"
      "  - {title: T, rows: graph, columns: [gpus], value: search_time, strategies: b}\n"
      "gantt_strategy: b\n");
  const ReportSpec spec = report_spec_from_yaml(node, "s.yaml", "report");
  ASSERT_EQ(spec.tables.size(), 1u);
  EXPECT_EQ(spec.tables[0].rows, std::vector<std::string>{"graph"});
  EXPECT_EQ(spec.tables[0].strategies, std::vector<std::string>{"b"});
  EXPECT_EQ(spec.gantt_strategy, "b");
  // Only b's search time (1.5 s) reaches the table; a's 0.5 s is filtered out.
  const fs::path dir = fresh_dir("filter");
  write(dir / "results.jsonl", sample_lines());
  const std::string md = format_pivot_table(load_report_records(dir.string()), spec.tables[0]);
  EXPECT_NE(md.find("| g | 1.5 s |"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.5 s"), std::string::npos) << md;
}

TEST(Report, ReportBlockErrorsNameTheField) {
  auto error_of = [](const char* yaml) {
    return testutil::input_error_message([&] { report_spec_from_yaml(YAML::Load(yaml), "s.yaml", "report"); });
  };
  EXPECT_NE(error_of("tables: [{rows: graph, colums: gpus}]").find("report.tables[0]"), std::string::npos);
  EXPECT_NE(error_of("tables: [{rows: graph, colums: gpus}]").find("columns"), std::string::npos);  // suggested
  EXPECT_NE(error_of("tables: [{columns: gpus}]").find("rows"), std::string::npos);
  EXPECT_NE(error_of("tabels: []").find("tables"), std::string::npos);
  EXPECT_NE(error_of("tables: {rows: graph}").find("list of tables"), std::string::npos);
}

}  // namespace
}  // namespace placesim

// The report's flags, tables and plots.
namespace placesim {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// results.jsonl holds the points in the order they finished; the tables follow the scenario (point
// index): groups in sweep order, strategies in the order listed.
TEST(Report, TablesFollowTheScenarioNotTheOrderPointsFinished) {
  const Sweep bw10 = {{"cluster.bandwidth", "10GB/s"}}, bw20 = {{"cluster.bandwidth", "20GB/s"}};
  std::vector<PointRecord> in_order = {measured("zeta", bw10, 0.01), measured("alpha", bw10, 0.02),
                                       measured("zeta", bw20, 0.03), measured("alpha", bw20, 0.04)};
  for (std::size_t i = 0; i < in_order.size(); ++i) in_order[i].index = i;
  const fs::path dir = fresh_dir("order");
  write(dir / "results.jsonl", lines({in_order[3], in_order[1], in_order[2], in_order[0]}));  // finished last to first
  const auto records = load_report_records(dir.string());
  const std::string table = format_comparison_table(records);
  EXPECT_LT(table.find("cluster.bandwidth=10 GB/s"), table.find("cluster.bandwidth=20 GB/s")) << table;
  EXPECT_LT(table.find("zeta"), table.find("alpha")) << table;
  PivotSpec spec;
  spec.rows = {"strategy"};
  spec.columns = {"cluster.bandwidth"};
  const std::string md = format_pivot_table(records, spec);
  EXPECT_NE(md.find("| strategy | 10 GB/s | 20 GB/s |"), std::string::npos) << md;
  EXPECT_LT(md.find("| zeta |"), md.find("| alpha |")) << md;
  const auto j = records_to_json(records, dir.string());
  ASSERT_EQ(j.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(j[i]["index"].get<std::size_t>(), i);
}

// The column says what it computes: the fastest other strategy's latency over this one's.
TEST(Report, SpeedUpColumnIsNamedForWhatItComputes) {
  const fs::path dir = fresh_dir("speedup");
  write(dir / "results.jsonl", sample_lines());
  const std::string table = format_comparison_table(load_report_records(dir.string()));
  EXPECT_NE(table.find("speed-up vs best other"), std::string::npos) << table;
  EXPECT_NE(table.find("speed-up vs best other: the latency of the fastest other strategy"), std::string::npos) << table;
  // Latency is SimGrid's for b and the evaluator's for a and c: the table says whose it is.
  EXPECT_NE(table.find("SimGrid's where SimGrid ran, else the evaluator's"), std::string::npos) << table;
}

// One unit per column, chosen from its values and named once: no "1.037e+04 ms" beside "10.37 s".
TEST(Report, EachColumnHasOneUnit) {
  PointRecord slow = measured("slow", {}, 10.37), a = measured("a", {}, 0.02), b = measured("b", {}, 0.03);
  slow.index = 0, a.index = 1, b.index = 2;
  slow.measurement->search_time = 2.0;
  a.measurement->search_time = 50e-6;
  b.measurement->search_time = 0.004;
  slow.measurement->peak_memory = 3.0 * (1 << 30);
  a.measurement->peak_memory = b.measurement->peak_memory = 512.0 * (1 << 20);
  const fs::path dir = fresh_dir("units-column");
  write(dir / "results.jsonl", lines({slow, a, b}));
  const auto records = load_report_records(dir.string());
  const std::string table = format_comparison_table(records);
  EXPECT_EQ(table.find("e+"), std::string::npos) << table;
  EXPECT_NE(table.find("evaluator latency (ms)"), std::string::npos) << table;  // median 30 ms
  EXPECT_NE(table.find("search (ms)"), std::string::npos) << table;
  EXPECT_NE(table.find("peak mem (MiB)"), std::string::npos) << table;
  EXPECT_NE(table.find(" 10370 "), std::string::npos) << table;
  EXPECT_NE(table.find(" 0.05 "), std::string::npos) << table;  // 50 us in ms
  EXPECT_NE(table.find(" 3072 "), std::string::npos) << table;
  for (const char* mixed : {" s ", " us ", " GiB ", " ms "}) EXPECT_EQ(table.find(mixed), std::string::npos) << mixed << table;
  PivotSpec spec;
  spec.rows = {"strategy"};
  const std::string md = format_pivot_table(records, spec);
  EXPECT_NE(md.find("| slow | 10370 ms |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a | 20 ms |"), std::string::npos) << md;
  // A unit from the typical value, and a larger one when the largest would need six digits: the
  // searches of 60 us, 468 us and 2.084 s are in ms, not "2084156 us".
  {
    PointRecord x = measured("x", {}, 0.1), y = measured("y", {}, 0.1), z = measured("z", {}, 0.1);
    x.measurement->search_time = 60e-6;
    y.measurement->search_time = 468e-6;
    z.measurement->search_time = 2.084156;
    const fs::path other = fresh_dir("units-largest");
    write(other / "results.jsonl", lines({x, y, z}));
    const std::string t = format_comparison_table(load_report_records(other.string()));
    EXPECT_NE(t.find("search (ms)"), std::string::npos) << t;
    EXPECT_NE(t.find(" 2084 "), std::string::npos) << t;
    EXPECT_NE(t.find(" 0.468 "), std::string::npos) << t;
  }
  // Numbers of a strategy's report print whole, not as 1.037e+04.
  slow.measurement->strategy_report["fused_operators"] = 10370;
  write(dir / "results.jsonl", lines({slow}));
  spec.value = "fused_operators";
  EXPECT_NE(format_pivot_table(load_report_records(dir.string()), spec).find("| slow | 10370 |"), std::string::npos);
}

// A swept path written in one unit keeps it in the tables (the paper's 10 Gbps, not 1.25 GB/s);
// written in several, each value is shown in placesim's units.
TEST(Report, SweptValuesKeepTheUnitTheyWereWrittenIn) {
  const fs::path dir = fresh_dir("written");
  write(dir / "results.jsonl", lines({measured("a", {{"cluster.link_bandwidth", "10Gbps"}}, 0.01),
                                      measured("a", {{"cluster.link_bandwidth", "40Gbps"}}, 0.01)}));
  PivotSpec spec;
  spec.rows = {"cluster.link_bandwidth"};
  std::string md = format_pivot_table(load_report_records(dir.string()), spec);
  EXPECT_NE(md.find("| 10 Gbps |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 40 Gbps |"), std::string::npos) << md;
  write(dir / "results.jsonl", lines({measured("a", {{"cluster.link_bandwidth", "10Gbps"}}, 0.01),
                                      measured("a", {{"cluster.link_bandwidth", "5GB/s"}}, 0.01)}));
  md = format_pivot_table(load_report_records(dir.string()), spec);
  EXPECT_NE(md.find("| 1.25 GB/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 5 GB/s |"), std::string::npos) << md;
}

// The table `placesim run` prints has one unit per column too.
TEST(Report, PointTableHasOneUnitPerColumn) {
  PointRecord slow = measured("slow", {}, 10.37, 10.5), a = measured("a", {}, 0.02), b = measured("b", {}, 0.03);
  a.measurement->search_time = 50e-6;
  b.measurement->search_time = 0.004;
  const std::vector<PointRecord> records = {slow, a, b};
  const std::string table = format_point_table(records);
  EXPECT_NE(table.find("evaluator (ms)"), std::string::npos) << table;
  EXPECT_NE(table.find("simgrid (ms)"), std::string::npos) << table;
  EXPECT_NE(table.find(" 10370 "), std::string::npos) << table;
  EXPECT_NE(table.find(" 10500 "), std::string::npos) << table;
  EXPECT_EQ(table.find(" s "), std::string::npos) << table;
  EXPECT_EQ(table.find(" us "), std::string::npos) << table;
}

// Without a sweep the table ends with the fastest placement under contention (among those that
// fit) and, when the evaluator ranks another first, that one with its contended latency.
TEST(Report, PointTableNamesTheFastestUnderContention) {
  PointRecord list = measured("mcmc", {}, 0.040, 0.200), flow = measured("mcmc-flow", {}, 0.046, 0.049),
              oom = measured("tiny", {}, 0.010, 0.030);
  oom.measurement->oom = true;
  oom.status = PointStatus::Oom;
  std::string table = format_point_table(std::vector<PointRecord>{list, flow, oom});
  EXPECT_NE(table.find("fastest under contention (SimGrid): mcmc-flow, 49 ms\n"), std::string::npos) << table;
  EXPECT_NE(table.find("fastest without contention (evaluator): mcmc, 40 ms, but 200 ms under contention"),
            std::string::npos)
      << table;
  // One fastest in both views: one line. No contended latency at all: none.
  table = format_point_table(std::vector<PointRecord>{flow, measured("slow", {}, 0.1, 0.2)});
  EXPECT_NE(table.find("fastest under contention (SimGrid): mcmc-flow"), std::string::npos) << table;
  EXPECT_EQ(table.find("fastest without contention"), std::string::npos) << table;
  EXPECT_EQ(format_point_table(std::vector<PointRecord>{measured("a", {}, 0.1)}).find("fastest"), std::string::npos);
  // A sweep's table has a point column and leaves the comparison to `placesim report`.
  EXPECT_EQ(format_point_table(std::vector<PointRecord>{measured("a", {{"gpus", "2"}}, 0.1, 0.2)}).find("fastest"),
            std::string::npos);
}

TEST(Report, CountsAreSingularOrPlural) {
  PointRecord one = measured("a", {}, 0.01);
  one.gpus = 1;
  const fs::path dir = fresh_dir("plural");
  write(dir / "results.jsonl", lines({one}));
  const std::string table = format_comparison_table(load_report_records(dir.string()));
  EXPECT_NE(table.find("g on 1 GPU\n"), std::string::npos) << table;
  EXPECT_EQ(table.find("1 GPUs"), std::string::npos) << table;
}

// Item 13: a pivot field or value that is in no record is an error naming the flag and the valid
// ones, before anything is printed or written.
TEST(Report, UnknownPivotFieldsAreErrorsNamingTheValidOnes) {
  const fs::path dir = fresh_dir("pivot-fields");
  PointRecord r = measured("a", {{"cluster.bandwidth", "10GB/s"}}, 0.01);
  r.measurement->strategy_report["fused_operators"] = 12;
  write(dir / "results.jsonl", lines({r}));
  const auto records = load_report_records(dir.string());
  PivotSpec spec;
  spec.rows = {"grpah"};
  EXPECT_INPUT_ERROR(check_pivot_fields(records, spec), "--rows", "unknown field 'grpah'", "did you mean 'graph'",
                     "valid: graph, strategy, gpus, cluster.bandwidth");
  spec.rows = {"graph"};
  spec.columns = {"gpus", "bandwidth"};
  EXPECT_INPUT_ERROR(check_pivot_fields(records, spec), "--columns", "unknown field 'bandwidth'");
  spec.columns = {"cluster.bandwidth"};
  spec.value = "latncy";
  EXPECT_INPUT_ERROR(check_pivot_fields(records, spec), "--value", "did you mean 'latency'",
                     "latency, search_time, evaluator_latency, simgrid_latency, flow_latency, estimate_latency, peak_memory, lower_bound, fused_operators");
  spec.value = "fused_operators";
  EXPECT_NO_THROW(check_pivot_fields(records, spec));
  // From a scenario's report block the error names its file and field.
  const ReportSpec block = report_spec_from_yaml(YAML::Load("tables: [{rows: graph, columns: gpu}]"), "s.yaml", "report");
  EXPECT_INPUT_ERROR(check_pivot_fields(records, block.tables[0]), "report.tables[0].columns", "did you mean 'gpus'");
  // run_report refuses before it prints or writes anything.
  ReportOptions options;
  options.results = dir.string();
  options.plots = false;
  options.pivots = {block.tables[0]};
  std::ostringstream out, err;
  EXPECT_THROW(run_report(options, out, err), InputError);
  EXPECT_EQ(out.str(), "");
  EXPECT_FALSE(fs::exists(dir / "report"));
}

TEST(Report, CliRejectsUnknownPivotFieldsWithExitCode2) {
  const fs::path dir = fresh_dir("pivot-cli");
  write(dir / "results.jsonl", lines({measured("a", {}, 0.01)}));
  std::string output;
  EXPECT_EQ(testutil::run_cli("report " + dir.string() + " --no-plots --rows graph --columns gpu", output), 2) << output;
  EXPECT_NE(output.find("--columns: unknown field 'gpu'; did you mean 'gpus'? (valid: graph, strategy, gpus)"),
            std::string::npos)
      << output;
  EXPECT_EQ(testutil::run_cli("report " + dir.string() + " --no-plots --rows graph --value latncy", output), 2) << output;
  EXPECT_NE(output.find("--value: unknown value 'latncy'"), std::string::npos) << output;
  EXPECT_EQ(testutil::run_cli("report " + dir.string() + " --no-plots --value search_time", output), 2) << output;
  EXPECT_NE(output.find("--rows"), std::string::npos) << output;
  EXPECT_EQ(testutil::run_cli("report " + dir.string() + " --no-plots --rows graph --columns gpus", output), 0) << output;
}

// The records of a small sweep as `placesim run` would write them: two models, two GPU counts,
// NIC bandwidth 10 and 40 Gbps (multi-nic's link_bandwidth), strategies single-device and a
// scenario label "ours"; SimGrid's latency; "ours" has a trace with an idle GPU and a link track.
fs::path plot_fixture(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  write(dir / "trace-ours.json",
        R"({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"GPUs"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"gpu0"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"gpu1"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"gpu2"}},
            {"name":"x","ph":"X","pid":1,"tid":0,"ts":0,"dur":5000},
            {"name":"y","ph":"X","pid":1,"tid":1,"ts":6000,"dur":3000},
            {"name":"process_name","ph":"M","pid":2,"args":{"name":"links"}},
            {"name":"thread_name","ph":"M","pid":2,"tid":7,"args":{"name":"server0-nic0-up"}},
            {"name":"server0-nic0-up","ph":"b","id":1,"pid":2,"tid":7,"ts":5000},
            {"name":"server0-nic0-up","ph":"e","id":1,"pid":2,"tid":7,"ts":6000}]})");
  std::string text;
  std::size_t index = 0;
  for (const char* graph : {"alexnet", "vgg"})
    for (int gpus : {2, 4})
      for (const char* bw : {"10Gbps", "40Gbps"})
        for (const char* s : {"single-device", "ours"}) {
          PointRecord r = measured(s, {{"graph", graph}, {"cluster.gpus", std::to_string(gpus)}, {"cluster.link_bandwidth", bw}},
                                   0.02, s[0] == 'o' ? 0.008 * (bw[0] == '1' ? 2 : 1) : 0.02);
          r.graph = graph;
          r.gpus = gpus;
          r.cluster = fmt::format("{} servers x 1 GPU, 2 NICs of {} each", gpus, bw);
          r.index = index++;
          r.measurement->search_time = 0.1 * gpus;
          if (s[0] == 'o') r.measurement->trace_file = "trace-ours.json";
          text += lines({r});
        }
  write(dir / "results.jsonl", text);
  return dir;
}

// Status lines (the report's and the plot script's) go to stderr; stdout holds the tables only.
TEST(Report, StatusGoesToStderrAndTablesToStdout) {
  const fs::path dir = plot_fixture("streams");
  const std::string cmd = fmt::format("{} report {} --rows graph,gpus --columns strategy >{} 2>{}", PLACESIM_CLI_PATH,
                                      dir.string(), (dir / "out.txt").string(), (dir / "err.txt").string());
  const int rc = std::system(cmd.c_str());
  const std::string out = slurp(dir / "out.txt"), err = slurp(dir / "err.txt");
  EXPECT_EQ(out.find("plot:"), std::string::npos) << out;
  EXPECT_EQ(out.find("report:"), std::string::npos) << out;
  EXPECT_NE(out.find("| alexnet / 2 |"), std::string::npos) << out;
  EXPECT_NE(err.find("report: wrote"), std::string::npos) << err;
  if (matplotlib_available()) {
    EXPECT_EQ(rc, 0) << err;
    EXPECT_NE(err.find("plot: wrote"), std::string::npos) << err;
  }
}

// Runs the report (tables) on `dir`, then the plot script with --describe into dir/report:
// what each figure shows, read back from matplotlib's objects; empty (with a test failure) if a
// step fails.
// `extra`: more of the script's flags (--gantt-strategy S, --formats "" to draw without writing files).
nlohmann::json describe_plots(const fs::path& dir, const std::string& extra = "") {
  ReportOptions options;
  options.results = dir.string();
  options.plots = false;
  std::ostringstream out, err;
  if (run_report(options, out, err) != 0) {
    ADD_FAILURE() << err.str();
    return {};
  }
  const fs::path script = data_dir() / "tools" / "plot_results.py", report = dir / "report";
  const std::string cmd = fmt::format("{} {} {} --out {} --describe {} {} >{} 2>&1", plot_python(), script.string(),
                                      (report / "records.json").string(), report.string(), (report / "describe.json").string(),
                                      extra, (report / "plot.log").string());
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << slurp(report / "plot.log");
    return {};
  }
  return nlohmann::json::parse(slurp(report / "describe.json"));
}

// Item 15, read back from matplotlib's objects (the script's --describe).
TEST(Report, PlotsNameTheirAxesAndKeepOneStylePerStrategy) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const fs::path dir = plot_fixture("describe");
  const fs::path report = dir / "report";
  const nlohmann::json d = describe_plots(dir);
  ASSERT_FALSE(d.empty());
  const nlohmann::json& figures = d["figures"];
  for (const char* name : {"latency_by_model", "latency_vs_bandwidth", "search_time_vs_gpus", "gantt"})
    ASSERT_TRUE(figures.contains(name)) << name;

  // Bandwidth: log axis, ticks at the swept values in the unit they were written in, named in words.
  const nlohmann::json& bw = figures["latency_vs_bandwidth"];
  ASSERT_EQ(bw["axes"].size(), 4u);  // alexnet and vgg, on 2 and 4 GPUs
  for (const auto& ax : bw["axes"]) {
    EXPECT_EQ(ax["xscale"], "log");
    EXPECT_EQ(ax["xticks"], nlohmann::json::parse("[10.0, 40.0]"));
    EXPECT_EQ(ax["xticklabels"], nlohmann::json::parse(R"(["10", "40"])"));
    EXPECT_EQ(ax["minor_xticks"], nlohmann::json::array());
    EXPECT_EQ(ax["xlabel"], "NIC bandwidth (Gb/s)");
    EXPECT_NE(ax["ylabel"].get<std::string>().find("SimGrid"), std::string::npos) << ax["ylabel"];
  }
  EXPECT_EQ(bw["axes"][0]["title"], "alexnet, 2 GPUs");
  // The title names the models and the cluster, with the values that differ.
  std::string title = bw["suptitle"];
  std::replace(title.begin(), title.end(), '\n', ' ');
  EXPECT_NE(title.find("alexnet, vgg"), std::string::npos) << title;
  EXPECT_NE(title.find("2/4 servers x 1 GPU, 2 NICs of 10/40Gbps each"), std::string::npos) << title;

  // GPU counts: whole-number ticks at the counts swept.
  for (const auto& ax : figures["search_time_vs_gpus"]["axes"]) {
    EXPECT_EQ(ax["xticks"], nlohmann::json::parse("[2.0, 4.0]"));
    EXPECT_EQ(ax["xticklabels"], nlohmann::json::parse(R"(["2", "4"])"));
  }

  // Bars over a sweep say they show medians over it.
  const nlohmann::json& bars = figures["latency_by_model"];
  EXPECT_NE(bars["axes"][0]["title"].get<std::string>().find("Medians over the sweep of cluster.link_bandwidth (2 values)"),
            std::string::npos)
      << bars["axes"][0]["title"];
  EXPECT_NE(bars["axes"][0]["ylabel"].get<std::string>().find("median per-iteration latency, SimGrid"), std::string::npos);

  // One colour and marker per strategy in every plot; legends outside the data.
  const std::string single = d["styles"]["single-device"]["color"], ours = d["styles"]["ours"]["color"];
  EXPECT_NE(single, ours);
  for (const auto& ax : bars["axes"])
    for (const auto& b : ax["bars"]) EXPECT_EQ(b["color"], d["styles"][b["label"].get<std::string>()]["color"]) << b;
  for (const char* name : {"latency_vs_bandwidth", "search_time_vs_gpus"})
    for (const auto& ax : figures[name]["axes"])
      for (const auto& line : ax["lines"]) {
        EXPECT_EQ(line["color"], d["styles"][line["label"].get<std::string>()]["color"]) << name << line;
        EXPECT_EQ(line["marker"], d["styles"][line["label"].get<std::string>()]["marker"]) << name << line;
      }
  for (const char* name : {"latency_by_model", "latency_vs_bandwidth", "search_time_vs_gpus"}) {
    ASSERT_EQ(figures[name]["legends"].size(), 1u) << name;
    EXPECT_TRUE(figures[name]["legends"][0]["outside_axes"].get<bool>()) << name;
  }

  // The Gantt chart: the point it shows (the slowest on the most GPUs: 10 Gbps on 4, the first
  // model of equals), GPU tracks without the idle one, then the link tracks.
  const nlohmann::json& gantt = figures["gantt"]["axes"][0];
  EXPECT_EQ(gantt["yticklabels"], nlohmann::json::parse(R"(["gpu0", "gpu1", "server0-nic0-up"])"));
  const std::string point = gantt["title"];
  EXPECT_NE(point.find("ours at the point alexnet, 4 GPUs, cluster.link_bandwidth=10Gbps"), std::string::npos) << point;
  EXPECT_NE(point.find("1 idle GPU"), std::string::npos) << point;
  // Nothing but status lines, and those on stderr (checked above through the CLI).
  EXPECT_EQ(slurp(report / "plot.log").find("Traceback"), std::string::npos);
}

// Strategies in <name>-list / <name>-flow pairs over clusters named by a label: the bars group by
// the named cluster (no medians across clusters), and cost_models draws one panel per case with
// each pair's latency over the case's best (by hand: best 10 ms; a-list 30 ms -> 3, a-flow 10 ms
// -> 1, b-list 20 ms -> 2, b-flow 15 ms -> 1.5; on c2 every latency is doubled: the same ratios).
TEST(Report, CostModelPairsPlotOnePanelPerCase) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const fs::path dir = fresh_dir("cost-models");
  std::string text;
  std::size_t index = 0;
  for (const char* cluster : {"c1", "c2"}) {
    const double scale = cluster[1] == '1' ? 1 : 2;
    for (const auto& [label, ms] : std::vector<std::pair<std::string, double>>{
             {"a-list", 30}, {"a-flow", 10}, {"b-list", 20}, {"b-flow", 15}}) {
      PointRecord r = measured(label, {{"cluster", cluster}}, 0.001, ms * scale * 1e-3);
      r.index = index++;
      text += lines({r});
    }
  }
  write(dir / "results.jsonl", text);
  const nlohmann::json d = describe_plots(dir);
  ASSERT_FALSE(d.empty());
  const nlohmann::json figures = d["figures"];
  ASSERT_TRUE(figures.contains("cost_models")) << figures.dump();
  const nlohmann::json& axes = figures["cost_models"]["axes"];
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0]["title"], "g / c1");
  EXPECT_EQ(axes[1]["title"], "g / c2");
  for (const auto& ax : axes) {
    EXPECT_EQ(ax["xticklabels"], nlohmann::json::parse(R"(["a", "b"])"));
    ASSERT_EQ(ax["bars"].size(), 2u);
    EXPECT_EQ(ax["bars"][0]["label"], "cost_model: list");
    EXPECT_EQ(ax["bars"][0]["heights"], nlohmann::json::parse("[3.0, 2.0]"));
    EXPECT_EQ(ax["bars"][1]["heights"], nlohmann::json::parse("[1.0, 1.5]"));
  }
  // latency_by_model: one group per named cluster, not a median across them.
  EXPECT_EQ(figures["latency_by_model"]["axes"][0]["xticklabels"], nlohmann::json::parse(R"(["g / c1", "g / c2"])"));
}

// --- What a reader can trust in every plot: each rule below has a test on a small case worked out
// by hand, and a test over the plots of every reproduction (records made by hand for each point of
// scenarios/papers/*.yaml; nothing is run).

// A title or label as one line (the script wraps long ones).
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// A figure's legends, every label on one line.
std::string legend_text(const nlohmann::json& figure) {
  std::string out;
  for (const auto& legend : figure["legends"])
    for (const auto& label : legend["labels"]) out += one_line(label.get<std::string>()) + "\n";
  return out;
}

// Every text of a figure a reader reads: titles, axis labels, tick labels, legends, labels.
std::vector<std::string> figure_texts(const nlohmann::json& figure) {
  std::vector<std::string> out = {figure["suptitle"].get<std::string>()};
  for (const auto& legend : figure["legends"]) {
    out.push_back(legend["title"].get<std::string>());
    for (const auto& label : legend["labels"]) out.push_back(label.get<std::string>());
  }
  for (const auto& ax : figure["axes"]) {
    for (const char* key : {"title", "xlabel", "ylabel"}) out.push_back(ax[key].get<std::string>());
    for (const auto& t : ax["xticklabels"]) out.push_back(t.get<std::string>());
    for (const auto& t : ax["texts"]) out.push_back(t["text"].get<std::string>());
  }
  return out;
}

// A speed-up as the tables print it: "1.023x".
bool has_speed_up(const std::string& text) {
  static const std::regex ratio(R"([0-9]\.[0-9]+x\b)");
  return std::regex_search(text, ratio) || text.find("speed-up") != std::string::npos;
}

// The Okabe-Ito palette (colour-blind safe), as matplotlib writes its colours.
const std::set<std::string> kOkabeIto = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                         "#cc79a7", "#56b4e9", "#000000", "#f0e442"};

// The styles of a describe: label -> (colour, marker).
std::map<std::string, std::pair<std::string, std::string>> styles_of(const nlohmann::json& d) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& [label, style] : d["styles"].items())
    out[label] = {style["color"].get<std::string>(), style["marker"].get<std::string>()};
  return out;
}

// Every bar and line of every figure is drawn in its strategy's colour and marker; the markers on
// bars are the strategy's too.
void expect_one_style_everywhere(const nlohmann::json& d, const std::string& where) {
  const auto styles = styles_of(d);
  for (const auto& [name, figure] : d["figures"].items()) {
    if (name == "cost_models" || name == "gantt") continue;  // list / flow; one strategy
    for (const auto& ax : figure["axes"]) {
      for (const auto& b : ax["bars"]) {
        const std::string label = b["label"];
        ASSERT_TRUE(styles.count(label)) << where << " " << name << b;
        EXPECT_EQ(b["color"], styles.at(label).first) << where << " " << name << b;
      }
      for (const auto& line : ax["lines"]) {
        const std::string label = line["label"];
        ASSERT_TRUE(styles.count(label)) << where << " " << name << line;
        EXPECT_EQ(line["color"], styles.at(label).first) << where << " " << name << line;
        EXPECT_EQ(line["marker"], styles.at(label).second) << where << " " << name << line;
      }
    }
  }
}

// A point of a hand-made case, `gpus` GPUs, `latency` seconds (SimGrid's), in status `status`.
PointRecord point_of(const std::string& label, const std::string& graph, int gpus, double latency,
                     PointStatus status = PointStatus::Ok, int gpus_used = 0) {
  PointRecord r = measured(label, {{"graph", graph}, {"cluster.gpus", std::to_string(gpus)}}, latency, latency);
  r.graph = graph;
  r.gpus = gpus;
  r.cluster = fmt::format("{} GPUs, full mesh of dedicated 12 GB/s links", gpus);
  r.measurement->search_time = 0.01 * gpus;
  r.measurement->busy_per_gpu.assign(static_cast<std::size_t>(gpus), 0.0);
  for (int g = 0; g < gpus_used; ++g) r.measurement->busy_per_gpu[static_cast<std::size_t>(g)] = latency / 2;
  r.status = status;
  if (status == PointStatus::Oom) r.measurement->oom = true;
  if (status == PointStatus::Infeasible || status == PointStatus::Failed) {
    r.measurement.reset();
    r.reason = status == PointStatus::Infeasible ? "no placement fits in GPU memory" : "worker crashed";
  }
  return r;
}

std::string indexed_lines(std::vector<PointRecord> records) {
  std::string text;
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i].index = i;
    text += to_json(records[i]).dump() + "\n";
  }
  return text;
}

// Titles are filled in: where the clusters differ, the values that differ ("2/4/6 GPUs"), or, when
// no description covers them, how many clusters; never "...".
TEST(Report, TitlesAreFilledInWhereTheClustersDiffer) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  std::vector<PointRecord> records;
  for (int gpus : {2, 4, 6})
    for (const char* s : {"single-device", "quickp"}) {
      PointRecord r = point_of(s, "alexnet", gpus, 0.1);
      r.cluster = fmt::format("{} GPUs in {} server{} of 2 (NVLink 50 GB/s), servers on a non-blocking switch (20 GB/s)",
                              gpus, gpus / 2, gpus == 2 ? "" : "s");
      records.push_back(r);
    }
  const fs::path dir = fresh_dir("titles");
  write(dir / "results.jsonl", indexed_lines(records));
  nlohmann::json d = describe_plots(dir, "--formats ''");
  ASSERT_FALSE(d.empty());
  const std::string title = one_line(d["figures"]["search_time_vs_gpus"]["suptitle"].get<std::string>());
  EXPECT_NE(title.find("alexnet on 2/4/6 GPUs in 1/2/3 servers of 2 (NVLink 50 GB/s)"), std::string::npos) << title;
  // Two fabrics that no one description covers: "on 2 clusters".
  records[1].cluster = records[3].cluster = records[5].cluster = "fat-tree k=4: 16 GPUs";
  write(dir / "results.jsonl", indexed_lines(records));
  d = describe_plots(dir, "--formats ''");
  ASSERT_FALSE(d.empty());
  for (const auto& [name, figure] : d["figures"].items())
    for (const std::string& text : figure_texts(figure)) EXPECT_EQ(text.find("..."), std::string::npos) << name << ": " << text;
  const std::string two = one_line(d["figures"]["latency_by_model"]["axes"][0]["title"].get<std::string>());
  EXPECT_NE(two.find("alexnet on 4 clusters"), std::string::npos) << two;
}

// A placement over GPU memory is drawn hatched and labelled OOM, a point without one is labelled
// infeasible or failed where its bar or marker would be, and none of them gets a speed-up: not in
// the plots, not in the table. By hand: on 2 GPUs single-device is OOM (and the fastest), quickp
// fits, metis is infeasible, mcmc failed; on 4 GPUs all but metis fit, quickp with m-topo's answer
// (a memory fallback), which its bar says.
TEST(Report, OomAndInfeasiblePointsAreLabelledAndHaveNoSpeedUp) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  std::vector<PointRecord> records = {
      point_of("single-device", "gnmt", 2, 0.50, PointStatus::Oom), point_of("quickp", "gnmt", 2, 0.52),
      point_of("metis", "gnmt", 2, 0, PointStatus::Infeasible),    point_of("mcmc", "gnmt", 2, 0, PointStatus::Failed),
      point_of("single-device", "gnmt", 4, 0.50),                  point_of("quickp", "gnmt", 4, 0.40),
      point_of("metis", "gnmt", 4, 0, PointStatus::Infeasible),    point_of("mcmc", "gnmt", 4, 0.45)};
  records[5].measurement->facts.memory_fallback = "m-topo";  // quickp's answer did not fit: m-topo's stands
  const fs::path dir = fresh_dir("oom-labels");
  write(dir / "results.jsonl", indexed_lines(records));
  const nlohmann::json d = describe_plots(dir, "--formats ''");
  ASSERT_FALSE(d.empty());
  // The bars: group 0 is 2 GPUs; strategies at 0, 0.2, 0.4, 0.6 (width 0.8 / 4).
  const nlohmann::json& ax = d["figures"]["latency_by_model"]["axes"][0];
  std::map<std::pair<std::string, double>, std::string> marks;
  for (const auto& m : ax["marks"]) marks[{m["strategy"].get<std::string>(), m["x"].get<double>()}] = m["kind"].get<std::string>();
  auto mark = [&](const std::string& strategy, double x) { return marks[std::pair(strategy, x)]; };
  EXPECT_EQ(mark("single-device", 0.0), "oom");
  EXPECT_EQ(mark("metis", 0.4), "infeasible");
  EXPECT_EQ(mark("metis", 1.4), "infeasible");
  EXPECT_EQ(mark("mcmc", 0.6), "failed");
  EXPECT_EQ(mark("quickp", 1.2), "note");  // whose answer the bar is
  EXPECT_EQ(marks.size(), 5u) << ax["marks"];
  for (const auto& b : ax["bars"]) {
    for (std::size_t i = 0; i < b["x"].size(); ++i) {
      const double x = b["x"][i];
      const bool hatched = !b["hatches"][i].get<std::string>().empty();
      EXPECT_EQ(hatched, b["label"] == "single-device" && x < 0.5) << b;  // only the OOM bar
      EXPECT_NE(b["label"], "metis") << "no bar for a point that did not run: " << b;
    }
  }
  bool oom_text = false, infeasible_text = false, note_text = false;
  for (const auto& t : ax["texts"]) {
    oom_text = oom_text || (t["text"] == "OOM" && t["x"] == 0.0);
    infeasible_text = infeasible_text || (t["text"] == "infeasible" && t["x"] == 0.4);
    note_text = note_text || (t["text"] == "memory fallback: m-topo" && t["x"] == 1.2);
  }
  EXPECT_TRUE(oom_text && infeasible_text && note_text) << ax["texts"];
  EXPECT_NE(d["figures"]["latency_by_model"]["legends"][0].dump().find("hatched: OOM"), std::string::npos);
  // The lines of search time against GPUs: the OOM point and the infeasible ones labelled there too.
  std::set<std::pair<std::string, double>> line_marks;
  for (const auto& panel : d["figures"]["search_time_vs_gpus"]["axes"])
    for (const auto& m : panel["marks"])
      line_marks.insert({m["strategy"].get<std::string>() + ":" + m["kind"].get<std::string>(), m["x"].get<double>()});
  EXPECT_EQ(line_marks, (std::set<std::pair<std::string, double>>{{"single-device:oom", 2},
                                                                   {"metis:infeasible", 2},
                                                                   {"metis:infeasible", 4},
                                                                   {"mcmc:failed", 2},
                                                                   {"quickp:note", 4}}));
  // No speed-up anywhere in the plots.
  for (const auto& [name, figure] : d["figures"].items())
    for (const std::string& text : figure_texts(figure)) EXPECT_FALSE(has_speed_up(text)) << name << ": " << text;
  // Nor in the table for the OOM row: it says OOM where a speed-up would be.
  const std::string table = format_comparison_table(load_report_records(dir.string()));
  const std::size_t row = table.find("  single-device ");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string line = table.substr(row, table.find('\n', row) - row);
  EXPECT_NE(line.find("OOM"), std::string::npos) << line;
  EXPECT_FALSE(has_speed_up(line)) << line;
}

// Each strategy has its own colour and marker, from its position in the scenario (not the order
// the points finished, nor which strategies a plot shows), in a colour-blind-safe palette; the
// first eight differ in colour alone, and placeto and placeto-greedy are far apart.
TEST(Report, StrategiesKeepTheirOwnColourAndMarkerInEveryPlot) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const std::vector<std::string> labels = {"single-device", "expert", "metis", "placeto", "placeto-greedy", "m-topo",
                                           "m-etf", "m-sct", "order-place", "celeritas"};
  std::vector<PointRecord> records;
  for (int gpus : {2, 4})
    for (std::size_t k = 0; k < labels.size(); ++k)
      // metis is infeasible everywhere: absent from every line, it must not shift the others' styles.
      records.push_back(point_of(labels[k], "inception", gpus, 0.1 + 0.01 * static_cast<double>(k),
                                 labels[k] == "metis" ? PointStatus::Infeasible : PointStatus::Ok));
  std::string text;
  for (std::size_t i = 0; i < records.size(); ++i) records[i].index = i;
  for (std::size_t i = records.size(); i-- > 0;) text += to_json(records[i]).dump() + "\n";  // finished last to first
  const fs::path dir = fresh_dir("styles");
  write(dir / "results.jsonl", text);
  const nlohmann::json d = describe_plots(dir, "--formats ''");
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d["strategy_order"].get<std::vector<std::string>>(), labels);
  const auto styles = styles_of(d);
  std::set<std::string> first_colours;
  std::set<std::pair<std::string, std::string>> pairs;
  for (std::size_t k = 0; k < labels.size(); ++k) {
    const auto& [colour, marker] = styles.at(labels[k]);
    EXPECT_TRUE(kOkabeIto.count(colour)) << labels[k] << " " << colour;
    if (k < 8) {
      EXPECT_TRUE(first_colours.insert(colour).second) << labels[k] << " shares " << colour;
    }
    EXPECT_TRUE(pairs.insert({colour, marker}).second) << labels[k];
  }
  EXPECT_NE(styles.at("placeto").first, styles.at("placeto-greedy").first);
  EXPECT_NE(styles.at("placeto").second, styles.at("placeto-greedy").second);
  for (const char* name : {"latency_by_model", "search_time_vs_gpus"}) ASSERT_TRUE(d["figures"].contains(name)) << name;
  expect_one_style_everywhere(d, "styles");
}

// The timeline is of the most telling point: among those with a trace (of --gantt-strategy's only,
// when given) that fit, on the most GPUs, using the most of them, the slowest. By hand, placeto:
// gnmt on 2 and 4 GPUs runs on one GPU (the fastest, 0.40 s, said nothing); inception on 4 GPUs uses
// all 4 (0.70 s); resnet on 4 uses 3 (0.90 s, slower but using fewer); on 4 GPUs expert's inception
// (4 used, 0.95 s) is OOM.
TEST(Report, GanttShowsTheSlowestPointOnTheMostGpus) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const fs::path dir = fresh_dir("gantt-rule");
  write(dir / "trace.json",
        R"({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"GPUs"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"gpu0"}},
            {"name":"x","ph":"X","pid":1,"tid":0,"ts":0,"dur":5000}]})");
  std::vector<PointRecord> records = {
      point_of("placeto", "gnmt", 2, 0.40, PointStatus::Ok, 1),       point_of("placeto", "gnmt", 4, 0.40, PointStatus::Ok, 1),
      point_of("placeto", "inception", 4, 0.70, PointStatus::Ok, 4),  point_of("placeto", "resnet", 4, 0.90, PointStatus::Ok, 3),
      point_of("expert", "inception", 4, 0.95, PointStatus::Oom, 4),  point_of("expert", "resnet", 4, 0.80, PointStatus::Ok, 4),
      point_of("expert", "gnmt", 2, 2.00, PointStatus::Ok, 2)};
  for (PointRecord& r : records) r.measurement->trace_file = "trace.json";
  write(dir / "results.jsonl", indexed_lines(records));
  auto chosen = [&](const std::string& strategy) {
    const nlohmann::json d = describe_plots(dir, "--formats '' " + (strategy.empty() ? "" : "--gantt-strategy " + strategy));
    return d.empty() ? std::string() : one_line(d["figures"]["gantt"]["axes"][0]["title"].get<std::string>());
  };
  const std::string placeto = chosen("placeto");
  EXPECT_NE(placeto.find("placeto at the point inception, 4 GPUs"), std::string::npos) << placeto;
  EXPECT_NE(placeto.find("Chosen as the slowest of placeto's points"), std::string::npos) << placeto;
  // Any strategy: expert's resnet (0.80 s, 4 of 4 GPUs) over its faster-but-OOM inception.
  const std::string any = chosen("");
  EXPECT_NE(any.find("expert at the point resnet, 4 GPUs"), std::string::npos) << any;
}

// A paper's numbers stand beside placesim's: a hollow marker at its strategy's bar, at the paper's
// value; "published: OOM" where the paper ran out of memory; the legend names the source; a number
// that matches no point is said and not drawn. By hand (seconds): inception on 2 GPUs, placeto
// 1.18 (written 1180 ms) beside placesim's 1.7, expert OOM; NASNet is in no point.
TEST(Report, PublishedNumbersAreDrawnBesideTheirPoints) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  const ReportSpec spec = report_spec_from_yaml(YAML::Load(R"(
published:
  - {source: "Placeto, Table 1", table: "placement run time", value: latency, unit: ms,
     points: [{graph: inception, gpus: 2, strategy: placeto, published: 1180},
              {graph: inception, gpus: 2, strategy: expert, published: OOM},
              {graph: nasnet, gpus: 2, strategy: placeto, published: 860}]}
  - {source: "Celeritas, Table 4", value: search_time, unit: s,
     points: [{graph: inception, strategy: placeto, published: 7.2}]}
)"),
                                                "s.yaml", "report");
  ASSERT_EQ(spec.published.size(), 2u);
  EXPECT_DOUBLE_EQ(*spec.published[0].points[0].value, 1.18);  // ms -> s at the edge
  EXPECT_EQ(spec.published[0].points[0].written, "1180 ms");
  EXPECT_FALSE(spec.published[0].points[1].value);
  const fs::path dir = fresh_dir("published");
  write(dir / "results.jsonl", indexed_lines({point_of("expert", "inception", 2, 1.9), point_of("placeto", "inception", 2, 1.7),
                                               point_of("expert", "inception", 4, 1.8), point_of("placeto", "inception", 4, 1.6)}));
  write_published(dir.string(), spec.published);  // as `placesim run` writes it
  EXPECT_EQ(load_published(dir.string()), spec.published);
  ReportOptions options;
  options.results = dir.string();
  options.plots = false;
  std::ostringstream out, err;
  ASSERT_EQ(run_report(options, out, err), 0) << err.str();
  EXPECT_NE(err.str().find("a published number matches no result and is not drawn: Placeto, Table 1, placement run time: "
                           "graph=nasnet gpus=2 strategy=placeto (860 ms"),
            std::string::npos)
      << err.str();
  const nlohmann::json records = nlohmann::json::parse(slurp(dir / "report" / "records.json"));
  EXPECT_DOUBLE_EQ(records[1]["published"][0]["number"].get<double>(), 1.18);
  EXPECT_EQ(records[1]["published"][1]["value"], "search_time");  // no gpus: on 2 and 4 GPUs
  EXPECT_EQ(records[3]["published"].size(), 1u);
  const nlohmann::json d = describe_plots(dir, "--formats ''");
  ASSERT_FALSE(d.empty());
  // Bars: 2 GPUs at 0 (expert) and 0.4 (placeto); the unit is s (latencies of 1.18 to 1.9 s).
  const nlohmann::json& ax = d["figures"]["latency_by_model"]["axes"][0];
  ASSERT_EQ(ax["published"].size(), 2u) << ax["published"];
  EXPECT_EQ(ax["published"][0]["strategy"], "expert");
  EXPECT_EQ(ax["published"][0]["x"], 0.0);
  EXPECT_TRUE(ax["published"][0]["y"].is_null());
  EXPECT_EQ(ax["published"][0]["text"], "OOM");
  EXPECT_EQ(ax["published"][1]["strategy"], "placeto");
  EXPECT_EQ(ax["published"][1]["x"], 0.4);
  EXPECT_DOUBLE_EQ(ax["published"][1]["y"].get<double>(), 1.18);
  bool oom_text = false;
  for (const auto& t : ax["texts"]) oom_text = oom_text || (t["text"] == "published: OOM" && t["x"] == 0.0);
  EXPECT_TRUE(oom_text) << ax["texts"];
  const std::string legend = legend_text(d["figures"]["latency_by_model"]);
  EXPECT_NE(legend.find("hollow: published, Placeto, Table 1, placement run time"), std::string::npos) << legend;
  // Search time against GPUs: placeto's 7.2 s at both GPU counts, in the strategy's marker.
  std::set<double> at;
  for (const auto& panel : d["figures"]["search_time_vs_gpus"]["axes"])
    for (const auto& p : panel["published"]) at.insert(p["x"].get<double>());
  EXPECT_EQ(at, (std::set<double>{2, 4}));
}

TEST(Report, PublishedBlockErrorsNameTheField) {
  auto error_of = [](const std::string& points, const std::string& series = "value: latency, unit: s") {
    return testutil::input_error_message([&] {
      report_spec_from_yaml(YAML::Load("published: [{source: P, " + series + ", points: [" + points + "]}]"), "s.yaml", "report");
    });
  };
  const std::string value = error_of("{strategy: a, published: 1}", "value: latency_s, unit: s");
  EXPECT_NE(value.find("report.published[0].value"), std::string::npos) << value;
  EXPECT_NE(value.find("did you mean 'latency'"), std::string::npos) << value;
  EXPECT_NE(error_of("{strategy: a, published: 1}", "value: latency, unit: hours").find("report.published[0].unit"),
            std::string::npos);
  EXPECT_NE(error_of("{graph: g, published: 1}").find("report.published[0].points[0].strategy"), std::string::npos);
  EXPECT_NE(error_of("{strategy: a}").find("report.published[0].points[0].published"), std::string::npos);
  const std::string number = error_of("{strategy: a, published: 1.5s}");
  EXPECT_NE(number.find("expected a number in s"), std::string::npos) << number;
  EXPECT_NE(error_of("{strategy: a, gpus: [2], published: 1}").find("points[0].gpus"), std::string::npos);
}

// Through the CLI: `placesim run` writes the scenario's published numbers beside its results and
// `placesim report` hands them to the plots.
TEST(Report, RunKeepsThePublishedNumbersForTheReport) {
  const fs::path dir = fresh_dir("published-cli");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\n"
                        "cluster: {type: full-mesh, gpus: 2, bandwidth: 20GB/s}\n"
                        "strategies: [single-device, round-robin]\n"
                        "simulation: {engine: evaluator, trace: false}\n"
                        "report:\n"
                        "  published:\n"
                        "    - {source: Paper, value: latency, unit: us, points: [{strategy: round-robin, published: 30}]}\n");
  std::string output;
  ASSERT_EQ(testutil::run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), output), 0) << output;
  ASSERT_TRUE(fs::exists(dir / "out" / "published.json")) << output;
  ASSERT_EQ(testutil::run_cli("report " + (dir / "out").string() + " --no-plots", output), 0) << output;
  const nlohmann::json records = nlohmann::json::parse(slurp(dir / "out" / "report" / "records.json"));
  EXPECT_EQ(records[0]["published"].size(), 0u);
  ASSERT_EQ(records[1]["published"].size(), 1u);
  EXPECT_DOUBLE_EQ(records[1]["published"][0]["number"].get<double>(), 30e-6);
}

// --- The same rules over every reproduction's plots, on records made by hand for each point of
// its plan: statuses cycle through ok, OOM, infeasible and failed, latencies and search times vary,
// every point that ran has a trace.

struct PaperPlots {
  std::string name;
  SweepPlan plan;
  std::vector<PointRecord> records;
  nlohmann::json described;
};

std::vector<PointRecord> hand_made_records(const SweepPlan& plan, const std::string& trace) {
  std::vector<PointRecord> out;
  for (const SweepPoint& point : plan.points) {
    PointRecord r = point_header(plan, point);
    const std::size_t i = point.index;
    if (i % 11 == 5 || i % 13 == 6) {
      r.status = i % 11 == 5 ? PointStatus::Infeasible : PointStatus::Failed;
      r.reason = "by hand";
      out.push_back(std::move(r));
      continue;
    }
    r.measurement.emplace();
    const double latency = 0.01 * (1 + static_cast<double>(i * 37 % 17) / 10);
    for (std::string_view engine : r.engines.engines()) r.measurement->set_latency(engine, latency);
    if (!r.engines.estimate_only()) r.measurement->set_latency(kEvaluator, latency);  // it runs with every event engine
    r.measurement->search_time = 1e-3 * static_cast<double>((1 + i % 5) * static_cast<std::size_t>(std::max(r.gpus, 1)));
    r.measurement->busy_per_gpu.assign(static_cast<std::size_t>(std::max(r.gpus, 1)), 0.0);
    for (std::size_t g = 0; g <= i % r.measurement->busy_per_gpu.size(); ++g) r.measurement->busy_per_gpu[g] = latency / 2;
    if (i % 7 == 3) {
      r.status = PointStatus::Oom;
      r.measurement->oom = true;
    }
    r.measurement->trace_file = trace;
    out.push_back(std::move(r));
  }
  return out;
}

const std::vector<PaperPlots>& paper_plots() {
  static const std::vector<PaperPlots> all = [] {
    std::vector<PaperPlots> papers;
    const fs::path source = fs::path(PLACESIM_TEST_SOURCE_DIR) / "scenarios" / "papers";
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(source))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
#ifndef PLACESIM_HAVE_TORCH
      if (file.stem() == "placeto-table1" || file.stem() == "robustness") continue;  // the placeto strategy
#endif
      PaperPlots p;
      p.name = file.stem().string();
      p.plan = load_sweep(file.string());
      const fs::path dir = fresh_dir("paper-" + p.name);
      write(dir / "trace.json",
            R"({"traceEvents":[{"name":"process_name","ph":"M","pid":1,"args":{"name":"GPUs"}},
                {"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"gpu0"}},
                {"name":"x","ph":"X","pid":1,"tid":0,"ts":0,"dur":5000}]})");
      p.records = hand_made_records(p.plan, "trace.json");
      std::string text;
      for (const PointRecord& r : p.records) text += to_json(r).dump() + "\n";
      write(dir / "results.jsonl", text);
      const ReportSpec& report = p.plan.variants.front().report;
      write_published(dir.string(), report.published);
      p.described = describe_plots(dir, "--formats ''" + (report.gantt_strategy.empty() ? "" : " --gantt-strategy " + report.gantt_strategy));
      fs::remove_all(dir);
      papers.push_back(std::move(p));
    }
    return papers;
  }();
  return all;
}

TEST(Report, NoTitleOfAnyReproductionsPlotsHasDots) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  ASSERT_GE(paper_plots().size(), 8u);
  for (const PaperPlots& p : paper_plots()) {
    ASSERT_FALSE(p.described.empty()) << p.name;
    EXPECT_TRUE(p.described["figures"].contains("latency_by_model")) << p.name;
    for (const auto& [name, figure] : p.described["figures"].items())
      for (const std::string& text : figure_texts(figure)) {
        EXPECT_EQ(text.find("..."), std::string::npos) << p.name << " " << name << ": " << text;
        EXPECT_EQ(text.find(": ?"), std::string::npos) << p.name << " " << name << ": " << text;
      }
  }
}

TEST(Report, EveryReproductionLabelsItsOomAndInfeasiblePoints) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  for (const PaperPlots& p : paper_plots()) {
    ASSERT_FALSE(p.described.empty()) << p.name;
    for (const auto& [name, figure] : p.described["figures"].items()) {
      for (const std::string& text : figure_texts(figure)) EXPECT_FALSE(has_speed_up(text)) << p.name << " " << name << ": " << text;
      // Each hatched bar has its OOM label at its x; every label and published number is in view.
      for (const auto& ax : figure["axes"]) {
        const double lo = ax["xlim"][0], hi = ax["xlim"][1];
        for (const char* kind : {"marks", "published"})
          for (const auto& m : ax[kind]) {
            const double x = m["x"];
            EXPECT_TRUE(lo <= x && x <= hi) << p.name << " " << name << " " << kind << m << " outside " << ax["xlim"];
          }
        std::set<double> oom_at;
        for (const auto& m : ax["marks"])
          if (m["kind"] == "oom") oom_at.insert(m["x"].get<double>());
        for (const auto& b : ax["bars"])
          for (std::size_t i = 0; i < b["x"].size(); ++i) {
            if (!b["hatches"][i].get<std::string>().empty()) {
              EXPECT_TRUE(oom_at.count(b["x"][i].get<double>())) << p.name << " " << name << " " << b["label"];
            }
          }
      }
    }
    // Hand-made statuses: every reproduction has OOM, infeasible and failed points (its first 14),
    // and its latency plot labels some of each (a cell whose every point did not run).
    std::set<std::string> kinds;
    ASSERT_TRUE(p.described["figures"].contains("latency_by_model")) << p.name;
    for (const auto& ax : p.described["figures"]["latency_by_model"]["axes"])
      for (const auto& m : ax["marks"]) kinds.insert(m["kind"].get<std::string>());
    EXPECT_TRUE(kinds.count("oom") || kinds.count("partial")) << p.name;
  }
}

TEST(Report, EveryReproductionKeepsOneStylePerStrategyAcrossItsPlots) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  for (const PaperPlots& p : paper_plots()) {
    ASSERT_FALSE(p.described.empty()) << p.name;
    // The styles follow the scenario's order of labels.
    std::vector<std::string> scenario_order;
    for (const SweepPoint& point : p.plan.points) {
      const std::string& label = p.plan.variants[point.variant].strategies[point.strategy].label;
      if (std::find(scenario_order.begin(), scenario_order.end(), label) == scenario_order.end()) scenario_order.push_back(label);
    }
    EXPECT_EQ(p.described["strategy_order"].get<std::vector<std::string>>(), scenario_order) << p.name;
    std::set<std::pair<std::string, std::string>> pairs;
    for (const auto& [label, style] : styles_of(p.described)) {
      EXPECT_TRUE(kOkabeIto.count(style.first)) << p.name << " " << label;
      EXPECT_TRUE(pairs.insert(style).second || scenario_order.size() > 24) << p.name << " " << label;
    }
    expect_one_style_everywhere(p.described, p.name);
  }
}

TEST(Report, EveryReproductionDrawsItsPublishedNumbers) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  std::set<std::string> with_published;
  for (const PaperPlots& p : paper_plots()) {
    ASSERT_FALSE(p.described.empty()) << p.name;
    const std::vector<PublishedSeries>& published = p.plan.variants.front().report.published;
    if (published.empty()) continue;
    with_published.insert(p.name);
    // Every number names a point of the plan (a typo in a graph or a label would leave it out).
    EXPECT_EQ(unmatched_published(p.records, published), std::vector<std::string>{}) << p.name;
    const nlohmann::json& figures = p.described["figures"];
    for (const PublishedSeries& series : published) {
      const std::string figure = series.value == "latency"                ? "latency_by_model"
                                 : figures.contains("search_time_vs_gpus") ? "search_time_vs_gpus"
                                                                          : "search_time_by_model";
      ASSERT_TRUE(figures.contains(figure)) << p.name << " " << figure;
      EXPECT_NE(legend_text(figures[figure]).find(series.source), std::string::npos) << p.name << " " << figure;
      for (const PublishedPoint& point : series.points) {
        const std::string strategy = std::find_if(point.match.begin(), point.match.end(),
                                                  [](const auto& m) { return m.first == "strategy"; })->second;
        bool drawn = false;
        for (const auto& ax : figures[figure]["axes"])
          for (const auto& m : ax["published"])
            drawn = drawn || (m["strategy"] == strategy && m["text"] == point.written &&
                              m["y"].is_null() == !point.value.has_value());
        EXPECT_TRUE(drawn) << p.name << " " << figure << ": " << point.field << " " << strategy << " " << point.written;
      }
    }
  }
  std::set<std::string> expected{"celeritas-tables", "placeto-table1", "quickp-icc2025", "thesis-table5.1", "thesis-table5.2"};
#ifndef PLACESIM_HAVE_TORCH
  expected.erase("placeto-table1");  // paper_plots leaves it out: the placeto strategy needs LibTorch
#endif
  EXPECT_EQ(with_published, expected);
}

// A reproduction's timeline is of its slowest point (of its gantt_strategy) on the most GPUs that
// fits and uses the most of them, never a one-GPU run where a spread one exists.
TEST(Report, EveryReproductionsTimelineIsOfItsMostTellingPoint) {
  if (!matplotlib_available()) GTEST_SKIP() << "python3-matplotlib is not installed (tools/install-deps.sh installs it)";
  int drawn = 0;
  for (const PaperPlots& p : paper_plots()) {
    ASSERT_FALSE(p.described.empty()) << p.name;
    const std::string wanted = p.plan.variants.front().report.gantt_strategy;
    const PointRecord* best = nullptr;
    auto rank = [](const PointRecord& r) {
      const auto used = std::count_if(r.measurement->busy_per_gpu.begin(), r.measurement->busy_per_gpu.end(),
                                      [](double b) { return b > 0; });
      return std::tuple(r.status == PointStatus::Ok, r.gpus, used, *r.latency());
    };
    for (const PointRecord& r : p.records)
      if (r.measurement && !r.measurement->trace_file.empty() && (wanted.empty() || r.label == wanted) &&
          (!best || rank(r) > rank(*best)))
        best = &r;
    if (!best) {
      EXPECT_FALSE(p.described["figures"].contains("gantt")) << p.name;
      continue;
    }
    ++drawn;
    const std::string title = one_line(p.described["figures"]["gantt"]["axes"][0]["title"].get<std::string>());
    EXPECT_NE(title.find(fmt::format("{} at the point {}, {} GPUs", best->label, best->graph, best->gpus)), std::string::npos)
        << p.name << ": " << title;
  }
  EXPECT_GE(drawn, 8);
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

// Counts in CLI output: "1 operator", "1 tensor".
TEST(Report, CliCountsAreSingularOrPlural) {
  const fs::path dir = fresh_dir("cli-plural");
  write(dir / "one.json",
        R"({"format": "placesim-graph", "version": 1, "units": {"time": "s", "memory": "B", "tensor": "B"},
            "operators": [{"name": "a", "compute_s": 0.001}, {"name": "b", "compute_s": 0.001}],
            "tensors": [{"src": "a", "dst": "b", "bytes": 8}]})");
  std::string output;
  ASSERT_EQ(testutil::run_cli("graph convert " + (dir / "one.json").string() + " " + (dir / "out.json").string(), output), 0)
      << output;
  EXPECT_NE(output.find("(2 operators, 1 tensor)"), std::string::npos) << output;
}

}  // namespace
}  // namespace placesim

// The robustness summary on hand-made records; every number below is worked out by hand.
namespace placesim {
namespace {

// A point of case `graph` (swept) that fits, by the evaluator (and SimGrid when given), in seconds.
PointRecord fits(const std::string& strategy, const std::string& graph, double evaluator,
                 std::optional<double> simgrid = std::nullopt) {
  PointRecord r = measured(strategy, {{"graph", graph}}, evaluator, simgrid);
  r.key = "graph=" + graph + " strategy=" + strategy;
  return r;
}

PointRecord oom(const std::string& strategy, const std::string& graph, double evaluator) {
  PointRecord r = fits(strategy, graph, evaluator);
  r.measurement->oom = true;
  r.status = PointStatus::Oom;
  return r;
}

PointRecord infeasible(const std::string& strategy, const std::string& graph) {
  PointRecord r = fits(strategy, graph, 0);
  r.measurement.reset();
  r.status = PointStatus::Infeasible;
  r.reason = "no placement fits";
  return r;
}

PointRecord searched(PointRecord r, double seconds, double time_limit) {
  r.measurement->search_time = seconds;
  r.measurement->facts.time_limit_s = time_limit;
  return r;
}

// Four cases:
//   a: single-device 10 ms (SimGrid 10), quickp 8 (SimGrid 12), mcmc 8.2 (SimGrid 9) searching 6 s
//      of a 5 s limit, m-topo 6 but OOM; lower bound 5 ms for all. Best: 8 ms, SimGrid 9 ms.
//   b: single-device OOM at 20 ms, quickp 30, mcmc failed, m-topo 25. Best: 25 ms.
//   c: single-device and quickp infeasible, mcmc OOM at 5 ms: nothing fits.
//   d: single-device 10 ms, quickp 12 searching 2.4 s of a 2 s limit, mcmc 10, m-topo 11. Best: 10 ms.
std::vector<PointRecord> robustness_records() {
  std::vector<PointRecord> records = {
      fits("single-device", "a", 0.010, 0.010), searched(fits("quickp", "a", 0.008, 0.012), 1.0, 5),
      searched(fits("mcmc", "a", 0.0082, 0.009), 6.0, 5), oom("m-topo", "a", 0.006),
      oom("single-device", "b", 0.020), fits("quickp", "b", 0.030), failed("mcmc", {{"graph", "b"}}, "crashed"),
      fits("m-topo", "b", 0.025),
      infeasible("single-device", "c"), infeasible("quickp", "c"), oom("mcmc", "c", 0.005),
      fits("single-device", "d", 0.010), searched(fits("quickp", "d", 0.012), 2.4, 2), fits("mcmc", "d", 0.010),
      fits("m-topo", "d", 0.011)};
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i].index = i;
    if (records[i].measurement && records[i].sweep[0].text == "a") records[i].measurement->bounds = {0.004, 0.005, 0};
    // Single-device fits in a and d (10 ms each): what the runner records on every point of those cases.
    const std::string& graph = records[i].sweep[0].text;
    if (records[i].measurement && (graph == "a" || graph == "d")) records[i].measurement->single_device_latency = 0.010;
  }
  return records;
}

TEST(RobustnessSummary, CountsAndRatiosPerStrategy) {
  const std::vector<PointRecord> records = robustness_records();
  const std::vector<RobustnessRow> rows = robustness_summary(records);
  EXPECT_EQ(count_cases(records), 4u);
  ASSERT_EQ(rows.size(), 4u);

  const RobustnessRow& single = rows[0];
  EXPECT_EQ(single.strategy, "single-device");
  EXPECT_EQ(single.points, 4u);
  EXPECT_EQ(single.infeasible, 1u);               // c
  EXPECT_EQ(single.oom_where_another_fits, 1u);   // b, where quickp and m-topo fit
  EXPECT_EQ(single.slower_than_single_device, 0u);
  EXPECT_EQ(single.compared, 2u);                 // a: 10/8 = 1.25, d: 10/10 = 1
  EXPECT_EQ(single.within_5_percent, 1u);
  EXPECT_DOUBLE_EQ(*single.median_ratio, 1.125);
  EXPECT_DOUBLE_EQ(*single.worst_ratio, 1.25);
  EXPECT_DOUBLE_EQ(*single.median_simgrid_ratio, 10.0 / 9);  // a only: d has no SimGrid latency
  EXPECT_DOUBLE_EQ(*single.median_lower_bound_ratio, 2.0);   // a: 10 / 5; d has no bound

  const RobustnessRow& quickp = rows[1];
  EXPECT_EQ(quickp.points, 4u);
  EXPECT_EQ(quickp.failed, 0u);
  EXPECT_EQ(quickp.over_time_limit, 0u);           // d: 2.4 s is within 0.5 s of 2 s
  EXPECT_EQ(quickp.slower_than_single_device, 1u); // d: 12 > 10; b does not count (single-device is OOM)
  EXPECT_EQ(quickp.compared, 3u);                  // a: 1, b: 30/25 = 1.2, d: 12/10 = 1.2
  EXPECT_EQ(quickp.within_5_percent, 1u);
  EXPECT_DOUBLE_EQ(*quickp.median_ratio, 1.2);
  EXPECT_DOUBLE_EQ(*quickp.worst_ratio, 1.2);
  EXPECT_DOUBLE_EQ(*quickp.worst_simgrid_ratio, 12.0 / 9);
  EXPECT_DOUBLE_EQ(*quickp.median_lower_bound_ratio, 1.6);

  const RobustnessRow& mcmc = rows[2];
  EXPECT_EQ(mcmc.failed, 1u);                  // b
  EXPECT_EQ(mcmc.oom_where_another_fits, 0u);  // c: nothing fits
  EXPECT_EQ(mcmc.over_time_limit, 1u);         // a: 6 s > 5.5 s and > 5.5 s
  EXPECT_EQ(mcmc.slower_than_single_device, 0u);  // d: as fast, not slower
  EXPECT_EQ(mcmc.within_5_percent, 2u);           // a: 8.2/8 = 1.025, d: 1
  EXPECT_DOUBLE_EQ(*mcmc.median_ratio, 1.0125);
  EXPECT_DOUBLE_EQ(*mcmc.median_simgrid_ratio, 1.0);

  const RobustnessRow& topo = rows[3];
  EXPECT_EQ(topo.points, 3u);
  EXPECT_EQ(topo.oom_where_another_fits, 1u);     // a
  EXPECT_EQ(topo.slower_than_single_device, 1u);  // d: 11 > 10 (a's OOM answer, 6 ms, is faster)
  EXPECT_EQ(topo.within_5_percent, 1u);           // b: 1; d: 1.1
  EXPECT_DOUBLE_EQ(*topo.median_ratio, 1.05);
  EXPECT_FALSE(topo.median_simgrid_ratio.has_value());
  EXPECT_FALSE(topo.median_lower_bound_ratio.has_value());
}

TEST(RobustnessSummary, MarkdownTableOneRowPerStrategy) {
  const std::vector<PointRecord> records = robustness_records();
  const std::string md = format_robustness_summary(robustness_summary(records), count_cases(records));
  EXPECT_NE(md.find("**Robustness: 4 strategies, 4 cases, 15 points**"), std::string::npos) << md;
  EXPECT_NE(md.find("| quickp | 4 | 0 | 1 | 0 | 0 | 1 | 1.200x | 1.200x | 1/3 (33%) | 1.333x | 1.333x | 1.600x |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| m-topo | 3 | 0 | 0 | 1 | 0 | 1 | 1.050x | 1.100x | 1/2 (50%) | - | - | - |"), std::string::npos) << md;
}

TEST(RobustnessSummary, ReportBlockAsksForItAndTheReportWritesIt) {
  EXPECT_EQ(report_spec_from_yaml(YAML::Load("summary: robustness"), "s.yaml", "report").summary, ReportSummary::Robustness);
  EXPECT_EQ(report_spec_from_yaml(YAML::Load("tables: []"), "s.yaml", "report").summary, ReportSummary::None);
  EXPECT_INPUT_ERROR(report_spec_from_yaml(YAML::Load("summary: robust"), "s.yaml", "report"), "report.summary", "s.yaml",
                     "robustness");

  const fs::path dir = fresh_dir("robustness");
  std::string text;
  for (const PointRecord& r : robustness_records()) text += to_json(r).dump() + "\n";
  write(dir / "results.jsonl", text);
  std::ostringstream out, err;
  ReportOptions options;
  options.results = dir.string();
  options.plots = false;
  options.summary = ReportSummary::Robustness;
  ASSERT_EQ(run_report(options, out, err), 0) << err.str();
  const std::string md = slurp(dir / "report" / "robustness.md");
  EXPECT_NE(md.find("| mcmc | 4 | 1 | 0 | 0 | 1 | 0 |"), std::string::npos) << md;
  EXPECT_NE(out.str().find(md), std::string::npos) << "printed as written";
  EXPECT_NE(err.str().find("robustness.md"), std::string::npos) << err.str();
}

}  // namespace
}  // namespace placesim
