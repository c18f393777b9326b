// `placesim report`: the comparison table, pivots and plots from hand-written results files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "scenarios/record.h"
#include "scenarios/report.h"
#include "scenarios/results_store.h"
#include "sim/errors.h"
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
  r.measurement->evaluator_latency = evaluator;
  r.measurement->simgrid_latency = simgrid;
  return r;
}

PointRecord failed(const std::string& label, const Sweep& sweep, const std::string& error) {
  PointRecord r = measured(label, sweep, 0);
  r.measurement.reset();
  r.error = error;
  return r;
}

std::string lines(std::initializer_list<PointRecord> records) {
  std::string out;
  for (const PointRecord& r : records) out += to_json(r).dump() + "\n";
  return out;
}

// Two groups (bandwidth 10 and 20 GB/s). In the first, a = 10 ms and b = 8 ms: b's speed-up over
// the best other is 10/8 = 1.250x, a's is 8/10 = 0.800x. c is faster (4 ms) but OOM, so it does not
// count as a competitor, and its own speed-up is 8/4 = 2.000x. In the second group a failed.
std::string sample_lines() {
  const Sweep bw10 = {{"cluster.bandwidth", "10GB/s"}}, bw20 = {{"cluster.bandwidth", "20GB/s"}};
  PointRecord a = measured("a", bw10, 0.010), b = measured("b", bw10, 0.009, 0.008), c = measured("c", bw10, 0.004),
              b20 = measured("b", bw20, 0.006);
  a.measurement->search_time = 0.5;
  a.measurement->peak_memory = 1024;
  b.measurement->search_time = b20.measurement->search_time = 1.5;
  c.measurement->oom = true;
  return lines({a, b, c}) + "\n" + lines({failed("a", bw20, "worker killed by SIGSEGV"), b20});
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
  EXPECT_EQ(records[2].status(), PointStatus::Oom);
  EXPECT_TRUE(records[3].failed());
  EXPECT_EQ(records[3].error, "worker killed by SIGSEGV");
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
  EXPECT_NE(table.find("2.000x"), std::string::npos) << table;
  EXPECT_NE(table.find("1 failed: worker killed by SIGSEGV"), std::string::npos) << table;
}

TEST(Report, PivotTakesTheMedianOverRepetitions) {
  const fs::path dir = fresh_dir("pivot");
  PointRecord on4 = measured("a", {}, 0.005);
  on4.gpus = 4;
  on4.measurement->oom = true;
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
  single.measurement->evaluator_latency = single.measurement->simgrid_latency.emplace(0.02);
  single.measurement->trace_file = "trace-single-device.json";
  metf.measurement.emplace();
  metf.measurement->evaluator_latency = 0.015;
  metf.measurement->simgrid_latency = 0.016;
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
  r.measurement->evaluator_latency = 0.02;
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
  r.infeasible = true;
  r.error = "no placement fits in GPU memory: the graph needs 18 GB of memory, the 2 GPUs hold 16 GB in all";
  EXPECT_EQ(r.status(), PointStatus::Infeasible);
  const nlohmann::ordered_json j = to_json(r);
  EXPECT_EQ(j["status"], "infeasible");
  const PointRecord back = record_from_json(j, "results.jsonl", "line 1");
  EXPECT_EQ(back.status(), PointStatus::Infeasible);
  EXPECT_EQ(back.error, r.error);
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
