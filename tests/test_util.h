#pragma once
// Small hand-made graphs and clusters whose answers can be derived by hand.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <gtest/gtest.h>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <zlib.h>

#include "placement/framework/strategy.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/core/cluster.h"
#include "sim/core/errors.h"
#include "sim/core/execution_graph.h"
#include "sim/core/graph.h"
#include "topologies/fabrics.h"

namespace placesim::testutil {

// The text of a gzip'd file (a timeline written to FILE.json.gz); nullopt when it cannot be opened.
inline std::optional<std::string> read_gzip_file(const std::filesystem::path& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (!in) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  gzclose(in);
  return text;
}

// Runs a shell command and returns its exit code, or 128 + the signal that killed it; stdout and
// stderr go to `output`.
inline int run_command(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  output.clear();
  if (!pipe) return -1;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = pclose(pipe);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs the placesim CLI (PLACESIM_CLI_PATH) with `args`, after `environment` ("NAME=value " pairs),
// as run_command does.
inline int run_cli(const std::string& args, std::string& output, const std::string& environment = "") {
  return run_command(environment + std::string(PLACESIM_CLI_PATH) + " " + args, output);
}

// A registered strategy built from its `options:` mapping written as YAML, as a scenario's first
// strategy would be.
inline std::unique_ptr<Strategy> make_strategy_from_yaml(const std::string& name, const std::string& options_yaml) {
  return make_strategy(name, YAML::Load(options_yaml), "scenario.yaml", "strategies[0]");
}

// The InputError `f` throws, or nothing when it throws none (other exceptions pass through).
inline std::optional<InputError> input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  return std::nullopt;
}

// Whether `statement` throws an InputError whose field() contains `field` and whose message
// contains each of `messages`; otherwise says what happened instead (with the error's message).
// Use it through EXPECT_INPUT_ERROR (below).
inline ::testing::AssertionResult input_error_matches(const std::function<void()>& statement, const char* text,
                                                      std::string_view field,
                                                      std::initializer_list<std::string_view> messages = {}) {
  std::optional<InputError> e;
  try {
    e = input_error_of(statement);
  } catch (const std::exception& other) {
    return ::testing::AssertionFailure() << text << " threw another error than an InputError: " << other.what();
  }
  if (!e) return ::testing::AssertionFailure() << text << " threw no InputError";
  if (e->field().find(field) == std::string::npos)
    return ::testing::AssertionFailure() << text << " threw an InputError whose field '" << e->field()
                                         << "' does not contain '" << field << "': " << e->what();
  for (std::string_view m : messages)
    if (std::string_view(e->what()).find(m) == std::string_view::npos)
      return ::testing::AssertionFailure() << text << " threw an InputError whose message lacks '" << m
                                           << "': " << e->what();
  return ::testing::AssertionSuccess();
}

// The message of the InputError `f` throws, or "" when it throws none.
inline std::string input_error_message(const std::function<void()>& f) {
  const std::optional<InputError> e = input_error_of(f);
  return e ? e->what() : "";
}

// The field an option error names ("strategies[0].options.x (line 1)"), or "no error".
inline std::string option_error_field(const std::string& name, const std::string& options_yaml) {
  const std::optional<InputError> e = input_error_of([&] { make_strategy_from_yaml(name, options_yaml); });
  return e ? e->field() : "no error";
}

// A fresh, empty folder "placesim-<name>-<pid>" under the system's temporary folder.
inline std::filesystem::path fresh_temp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("placesim-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Thesis Fig. 3.1: A feeds B and C; A 5 us, B 10 us, C 5 us.
inline Graph fig31_graph(double bytes = 1000.0) {
  Graph g;
  g.add_operator({"A", "op", 5e-6, 0});
  g.add_operator({"B", "op", 10e-6, 0});
  g.add_operator({"C", "op", 5e-6, 0});
  g.add_tensor(0, 1, bytes);
  g.add_tensor(0, 2, bytes);
  g.finalize("fig3.1");
  return g;
}

// n GPUs, each pair joined by its own dedicated one-way link: no two routes share a link.
inline Cluster dedicated_mesh(int n, double bandwidth, double latency = 0.0, double memory = 16e9) {
  Cluster c;
  for (int i = 0; i < n; ++i) c.add_device({"gpu" + std::to_string(i), i, memory});
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) c.set_route(a, b, {c.add_link({fmt::format("l{}_{}", a, b), bandwidth, latency})});
  c.finalize("test mesh");
  return c;
}

// Root of ../shared/graphs, or empty when it is absent (tests then skip and say why).
inline std::string shared_graphs() {
  if (const char* env = std::getenv("PLACESIM_SHARED_GRAPHS"); env && std::filesystem::exists(env)) return env;
  std::string fallback = std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared/graphs";
  return std::filesystem::exists(fallback) ? fallback : std::string();
}

}  // namespace placesim::testutil

// Expects `statement` to throw placesim::InputError whose field() contains `field_substring` (""
// for any field) and whose message contains each further argument, e.g.
//   EXPECT_INPUT_ERROR(parse_bandwidth("20 GB/h", "c.yaml", "cluster.bandwidth"), "cluster.bandwidth", "GB/h");
// Otherwise the failure shows the statement and the error's message. Stream more context with <<.
#define EXPECT_INPUT_ERROR(statement, field_substring, ...)                                  \
  EXPECT_TRUE(::placesim::testutil::input_error_matches([&] { statement; }, #statement, field_substring \
                                                        __VA_OPT__(, {__VA_ARGS__})))

#define PLACESIM_REQUIRE_SHARED_GRAPHS()                                                       \
  do {                                                                                          \
    if (placesim::testutil::shared_graphs().empty())                                            \
      GTEST_SKIP() << "../shared/graphs is absent: the profiled real graphs are not available"; \
  } while (0)

namespace placesim::testutil {

// The QuickP setup (servers of 2 GPUs, 50 GB/s NVLink, 20 GB/s Ethernet) with `gpus` GPUs.
inline Cluster nvlink_servers(int gpus, double memory = kDefaultGpuMemory) {
  NvlinkServersConfig cfg;
  cfg.gpus = gpus;
  cfg.gpu_memory = memory;
  return make_nvlink_servers(cfg);
}

// Runs every point of `plan` as `placesim run` does (one worker at a time, no progress) into
// `dir`, and returns the records of results.jsonl in plan order.
inline std::vector<PointRecord> run_plan(const SweepPlan& plan, const std::filesystem::path& dir) {
  SweepOptions options;
  options.output = dir.string();
  options.progress = false;
  std::ostringstream log;
  run_sweep(plan, options, log);
  std::vector<PointRecord> records = read_result_lines((dir / "results.jsonl").string());
  std::stable_sort(records.begin(), records.end(), [](const PointRecord& a, const PointRecord& b) { return a.index < b.index; });
  return records;
}

}  // namespace placesim::testutil

namespace placesim::testutil {

// dedicated_mesh with per-GPU compute speeds (Device::compute_speed): GPU i runs an operator in
// compute_s / speeds[i].
inline Cluster dedicated_mesh_with_speeds(const std::vector<double>& speeds, double bandwidth, double latency = 0.0,
                                          double memory = 16e9) {
  Cluster c;
  const int n = static_cast<int>(speeds.size());
  for (int i = 0; i < n; ++i) c.add_device({"gpu" + std::to_string(i), i, memory, speeds[i]});
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) c.set_route(a, b, {c.add_link({"l" + std::to_string(a) + "_" + std::to_string(b), bandwidth, latency})});
  c.finalize("test mesh with speeds");
  return c;
}

// n servers of one GPU on a non-blocking switch (every GPU has its own NIC): the collectives'
// and data parallelism's hand-derived tests.
inline Cluster one_gpu_servers(int n, double nic_bandwidth, double nic_latency) {
  NonBlockingConfig cfg;
  cfg.servers = n;
  cfg.gpus_per_server = 1;
  cfg.nic_bandwidth = nic_bandwidth;
  cfg.nic_latency = nic_latency;
  return make_non_blocking(cfg);
}

// Each engine's makespan of an execution graph.
struct EngineTimes {
  double evaluator, flow, simgrid;
};
inline EngineTimes run_all_engines(const ExecutionGraph& g, const Cluster& c) {
  const EngineRuns ran = run_engines(g, c, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
  return {*ran.latency(kEvaluator), *ran.latency(kFlow), *ran.latency(kSimGrid)};
}

}  // namespace placesim::testutil
