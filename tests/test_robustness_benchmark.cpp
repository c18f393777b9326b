// The short version of the robustness benchmark (scenarios/papers/robustness.yaml):
// every registered strategy with small budgets on a few small graphs and two small clusters, one
// of whose GPUs are too small for single-device, through the real runner (worker processes,
// results.jsonl) and the report's summary. It asserts the benchmark's must-holds that do not
// depend on timing: no failed point, no out-of-memory answer where another strategy's placement
// fits (single-device aside, and three defects pinned below), and QuickP, Celeritas and MCMC never
// slower than single-device in the evaluator.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <set>
#include <string>
#include <vector>

#include "placement/framework/strategy.h"
#include "scenarios/runner/record.h"
#include "scenarios/runner/report.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "tests/test_util.h"

namespace placesim {
namespace {

// Options that keep each strategy to a fraction of a second on these graphs; the rest run with
// their defaults (QuickP's node limit makes it deterministic here, far inside its time limit).
std::string small_budget(const std::string& name) {
  if (name == "mcmc") return "{steps: 300}";
  if (name == "random") return "{samples: 2}";
  if (name == "placeto") return "{episodes: 2}";
  return "{}";
}

// Every registered strategy, so that a new one is in the benchmark as soon as it is registered.
std::string every_strategy() {
  std::string out = "strategies:\n";
  for (const StrategyInfo& info : strategy_registry())
    if (info.name != "python")  // made only from Python (python/tests/test_python_strategy.py)
      out += fmt::format("  - {{name: {}, options: {}}}\n", info.name, small_budget(info.name));
  return out;
}

// 3 graphs x 2 clusters: a fork/join synthetic graph (68 operators), fused AlexNet (143 operators,
// 1.4 GiB) and fused FNet (684 operators, 2.0 GiB); 4 GPUs of 16 GiB, and 4 GPUs of 1 GiB that
// hold none of the zoo graphs alone.
std::string benchmark_scenario(const std::string& output) {
  return "name: robustness-short\n"
         "graph: {builtin: fig3.1}\n"
         "cluster: {type: nvlink-servers, gpus: 2}\n" +
         every_strategy() +
         "simulation: {engine: evaluator, trace: false}\n"
         "sweep:\n"
         "  graph:\n"
         "    - {label: synthetic-68, builtin: synthetic, layers: 3, branches: 3, ops_per_branch: 2}\n"
         "    - {label: alexnet-fused, model: alexnet, style: fused, batch: 512}\n"
         "    - {label: fnet-fused, model: fnet-base, style: fused, batch: 16}\n"
         "  cluster:\n"
         "    - {label: nvlink-4, type: nvlink-servers, gpus: 4}\n"
         "    - {label: small-gpus-4x1GiB, type: nvlink-servers, gpus: 4, gpu_memory: 1GiB}\n"
         "output: " + output + "\n";
}

// Out-of-memory answers where another strategy's placement fits: none, but for these baselines,
// pinned here so that a change (or a new case) shows. All are on four 1 GiB GPUs, where m-TOPO,
// METIS, MCMC, QuickP and others fit: single-device by definition (the whole graph on one GPU:
// synthetic-68, AlexNet and fused FNet). The search strategies (placeto-greedy, placeto) ended
// there out of memory too (1.004 and 1.75 GiB), and so did expert (1.43 GiB on one GPU, fused
// FNet), until the memory fallback returned the portfolio's best placement that fits. max-load
// splits only contiguously, one set per GPU in order: on two of the 1 GiB cases no such split
// fits, and it returns its split without memory, with the reason in its report.
std::size_t known_oom_where_another_fits(const std::string& strategy) {
  if (strategy == "single-device") return 3;
  if (strategy == "max-load") return 2;
  return 0;
}

const RobustnessRow& row_of(const std::vector<RobustnessRow>& rows, const std::string& strategy) {
  for (const RobustnessRow& row : rows)
    if (row.strategy == strategy) return row;
  ADD_FAILURE() << strategy << " has no row";
  return rows.front();
}

TEST(RobustnessBenchmark, ShortVersionHoldsTheDeterministicMustHolds) {
  const auto dir = testutil::fresh_temp_dir("robustness-benchmark");
  const SweepPlan plan = plan_sweep(YAML::Load(benchmark_scenario(dir.string())), "robustness-short.yaml");
  const std::vector<PointRecord> records = testutil::run_plan(plan, dir);
  ASSERT_EQ(records.size(), plan.points.size());
  const std::size_t strategies = strategy_registry().size() - 1;  // all but python
  ASSERT_EQ(records.size(), 6 * strategies);
  ASSERT_EQ(count_cases(records), 6u);

  const std::vector<RobustnessRow> rows = robustness_summary(records);
  ASSERT_EQ(rows.size(), strategies);
  const std::string table = format_robustness_summary(rows, count_cases(records));
  for (const RobustnessRow& row : rows) {
    EXPECT_EQ(row.failed, 0u) << row.strategy << "\n" << table;
    EXPECT_EQ(row.infeasible, 0u) << row.strategy << ": every case has a placement that fits\n" << table;
    EXPECT_EQ(row.oom_where_another_fits, known_oom_where_another_fits(row.strategy)) << row.strategy << "\n" << table;
  }
  for (const char* search : {"quickp", "celeritas", "mcmc"})
    EXPECT_EQ(row_of(rows, search).slower_than_single_device, 0u) << search << "\n" << table;
  // No graph fits one 1 GiB GPU (1.2, 1.4 and 2.0 GiB), so single-device is compared on 16 GiB only.
  EXPECT_EQ(row_of(rows, "single-device").compared, 3u) << table;
}

#ifdef PLACESIM_HAVE_TORCH
// The full benchmark (`placesim reproduce robustness`) keeps the full corpus: every registered
// strategy, at least 30 graphs, the 8 clusters, and every graph on some cluster.
TEST(RobustnessBenchmark, FullVersionCoversEveryStrategyThirtyGraphsAndEightClusters) {
  const SweepPlan plan = load_sweep(std::string(PLACESIM_TEST_SOURCE_DIR) + "/scenarios/papers/robustness.yaml");
  std::set<std::string> strategies, graphs, clusters;
  for (const SweepPoint& p : plan.points) strategies.insert(plan.variants[p.variant].strategies[p.strategy].name);
  for (const auto& values : plan.variant_values)
    for (const auto& [path, value] : values) {
      if (path == "graph") graphs.insert(value);
      if (path == "cluster") clusters.insert(value);
    }
  std::set<std::string> registered;
  for (const StrategyInfo& info : strategy_registry())
    if (info.name != "python") registered.insert(info.name);  // run from Python only
  EXPECT_EQ(strategies, registered);
  EXPECT_GE(graphs.size(), 30u);
  EXPECT_EQ(clusters.size(), 8u);
  EXPECT_EQ(plan.variants.front().report.summary, ReportSummary::Robustness);
}
#endif

}  // namespace
}  // namespace placesim
