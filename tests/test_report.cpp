// `placesim report`: the comparison table, pivots and plots from hand-written results files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scenarios/report.h"
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

// Two groups (bandwidth 10 and 20 GB/s). In the first, a = 10 ms and b = 8 ms: b's speed-up over
// the best other is 10/8 = 1.250x, a's is 8/10 = 0.800x. c is faster (4 ms) but OOM, so it does not
// count as a competitor, and its own speed-up is 8/4 = 2.000x. In the second group a failed.
const char* kLines =
    R"({"label":"a","graph":"g","gpus":2,"params":{"bandwidth":"10GB/s"},"evaluator_latency":0.010,"search_time":0.5,"peak_memory":1024})"
    "\n"
    R"({"label":"b","graph":"g","gpus":2,"params":{"bandwidth":"10GB/s"},"evaluator_latency":0.009,"simgrid_latency":0.008,"search_time":1.5})"
    "\n"
    R"({"label":"c","graph":"g","gpus":2,"params":{"bandwidth":"10GB/s"},"evaluator_latency":0.004,"oom":true})"
    "\n\n"
    R"({"label":"a","graph":"g","gpus":2,"params":{"bandwidth":"20GB/s"},"error":"worker killed by SIGSEGV"})"
    "\n"
    R"({"label":"b","graph":"g","gpus":2,"params":{"bandwidth":"20GB/s"},"evaluator_latency":0.006})"
    "\n";

TEST(Report, ReadsJsonLinesAndNormalises) {
  const fs::path dir = fresh_dir("jsonl");
  write(dir / "results.jsonl", kLines);
  const auto records = load_report_records(dir.string());
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[1].strategy, "b");
  EXPECT_DOUBLE_EQ(*records[1].latency, 0.008);  // SimGrid's latency wins over the evaluator's
  EXPECT_DOUBLE_EQ(*records[0].latency, 0.010);
  EXPECT_DOUBLE_EQ(records[0].params["bandwidth"].get<double>(), 10e9);  // "10GB/s" -> bytes/s
  EXPECT_TRUE(records[2].oom);
  EXPECT_TRUE(records[3].failed);
  EXPECT_EQ(records[3].error, "worker killed by SIGSEGV");
}

TEST(Report, ComparisonTableSpeedUpsOverTheBestOther) {
  const fs::path dir = fresh_dir("table");
  write(dir / "results.jsonl", kLines);
  const auto records = load_report_records((dir / "results.jsonl").string());
  const std::string table = format_comparison_table(records);
  EXPECT_NE(table.find("g on 2 GPUs, bandwidth=10 GB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("0.800x"), std::string::npos) << table;
  EXPECT_NE(table.find("1.250x"), std::string::npos) << table;
  EXPECT_NE(table.find("2.000x"), std::string::npos) << table;
  EXPECT_NE(table.find("1 failed: worker killed by SIGSEGV"), std::string::npos) << table;
}

TEST(Report, PivotTakesTheMedianOverRepetitions) {
  const fs::path dir = fresh_dir("pivot");
  write(dir / "results.jsonl",
        R"({"label":"a","graph":"g","gpus":2,"params":{"repetition":0},"evaluator_latency":0.001})"
        "\n"
        R"({"label":"a","graph":"g","gpus":2,"params":{"repetition":1},"evaluator_latency":0.003})"
        "\n"
        R"({"label":"a","graph":"g","gpus":4,"params":{"repetition":0},"evaluator_latency":0.005,"oom":true})"
        "\n");
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

TEST(Report, BadInputsNameTheFileAndLine) {
  const fs::path dir = fresh_dir("bad");
  write(dir / "results.jsonl", "{\"label\":\"a\"}\n{not json\n");
  EXPECT_INPUT_ERROR(load_report_records(dir.string()), "", "line 2");
  const fs::path empty = fresh_dir("empty");
  EXPECT_THROW(load_report_records(empty.string()), InputError);
  write(empty / "results.json", "{\"scenario\": \"x\"}");
  EXPECT_THROW(load_report_records(empty.string()), InputError);
}

TEST(Report, ReadsResultsJsonOfAPlainRun) {
  const fs::path dir = fresh_dir("json");
  write(dir / "results.json",
        R"({"scenario":"quick","strategies":[
            {"label":"single-device","evaluator_latency":0.02,"simgrid_latency":0.02,"memory_per_gpu":[5,0],
             "trace_file":"trace-single-device.json","search_time":0.0001},
            {"label":"m-etf","evaluator_latency":0.015,"simgrid_latency":0.016,"memory_per_gpu":[3,2]}]})");
  const auto records = load_report_records(dir.string());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].graph, "quick");
  EXPECT_EQ(records[0].gpus, 2);
  EXPECT_EQ(fs::path(records[0].trace_file), dir / "trace-single-device.json");
  EXPECT_NE(format_comparison_table(records).find("1.250x"), std::string::npos);  // 0.02 / 0.016
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
  std::string lines;
  for (int gpus : {2, 4})
    for (const char* bw : {"10GB/s", "20GB/s"})
      for (const char* s : {"a", "b"})
        lines += "{\"label\":\"" + std::string(s) + "\",\"graph\":\"g\",\"gpus\":" + std::to_string(gpus) +
                 ",\"params\":{\"cluster.gpus\":" + std::to_string(gpus) + ",\"ethernet_bandwidth\":\"" + bw +
                 "\"},\"evaluator_latency\":" + (s[0] == 'a' ? "0.01" : "0.008") + ",\"search_time\":" +
                 std::to_string(0.1 * gpus) + ",\"trace_file\":\"trace-a.json\"}\n";
  write(dir / "results.jsonl", lines);
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
  write(dir / "results.jsonl", kLines);
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
