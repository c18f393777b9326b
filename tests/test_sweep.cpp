// Sweeps: the schema (paths, values, errors), the expansion into points, FCFS order, and the
// runner through the CLI (worker processes, crash, kill and resume, --jobs, MPI ranks, merge).
#include <gtest/gtest.h>

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include "scenarios/runner/record.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/runner.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/engines/simgrid_engine.h"
#include "tests/test_util.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

const char* kBase =
    "graph: {builtin: synthetic, layers: 2, branches: 2, ops_per_branch: 2}\n"
    "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
    "strategies:\n"
    "  - round-robin\n"
    "  - metis\n"
    "  - name: mcmc\n"
    "    options: {steps: 50}\n";

SweepPlan plan(const std::string& yaml) { return plan_sweep(YAML::Load(yaml), "s.yaml"); }

std::string plan_error(const std::string& yaml) {
  return testutil::input_error_message([&] { plan(yaml); });
}

using testutil::run_cli;

fs::path temp_dir(const std::string& name) { return testutil::fresh_temp_dir("sweep-" + name); }

// Runs a sweep in a forked child of the test process, as `placesim run` would (without paying for
// the CLI's start-up), and returns its exit status: 0, 1 (some point failed) or 128 + signal.
int run_sweep_in_child(const std::string& yaml, const SweepOptions& options) {
  const SweepPlan p = plan_sweep(YAML::Load(yaml), "s.yaml");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::ostringstream log;
    int rc = 3;
    try {
      const SweepSummary s = run_sweep(p, options, log);
      rc = s.failed ? 1 : 0;
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// The fields of a record that do not depend on timing, by point key.
std::map<std::string, nlohmann::json> deterministic(const fs::path& jsonl) {
  std::map<std::string, nlohmann::json> out;
  for (const PointRecord& record : read_result_lines(jsonl.string())) {
    const nlohmann::ordered_json r = to_json(record);
    nlohmann::json d;
    for (const char* k : {"index", "status", "error", "seed", "repetition", "evaluator_latency", "simgrid_latency",
                          "memory_per_gpu", "peak_memory", "oom", "placement_file", "sweep"})
      if (r.contains(k)) d[k] = r.at(k);
    EXPECT_TRUE(out.emplace(record.key, d).second) << "key twice: " << record.key;
  }
  return out;
}

// Every line of a results file reads as a record that writes back as the same line, byte for
// byte (what --resume and merge rely on).
void expect_lines_round_trip(const fs::path& jsonl) {
  std::ifstream in(jsonl);
  std::size_t n = 0;
  for (std::string text; std::getline(in, text); ++n)
    EXPECT_EQ(to_json(record_from_json(nlohmann::ordered_json::parse(text), jsonl.string(), "line")).dump(), text);
  EXPECT_GT(n, 0u);
}

std::size_t count_lines(const fs::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// 2 bandwidths x 2 GPU counts x (round-robin; mcmc, which takes a seed, twice) = 12 points.
const char* kSweepScenario =
    "name: sweep-test\n"
    "graph: {builtin: synthetic, layers: 3, branches: 2, ops_per_branch: 2}\n"
    "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
    "strategies:\n"
    "  - round-robin\n"
    "  - name: mcmc\n"
    "    options: {steps: 100}\n"
    "simulation: {engine: both, trace: false, seeds: [1, 2]}\n"
    "sweep:\n"
    "  cluster.bandwidth: [10GB/s, 20GB/s]\n"
    "  cluster.gpus: [2, 3]\n";

}  // namespace

TEST(SweepSchema, ErrorsNameTheSweepPathAndSuggest) {
  std::string m = plan_error(std::string(kBase) + "sweep: {cluster.gpu: [2, 4]}\n");
  EXPECT_NE(m.find("s.yaml: sweep.cluster.gpu (line 8)"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'gpus'"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {clustr.gpus: [2, 4]}\n");
  EXPECT_NE(m.find("sweep.clustr.gpus"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'cluster'"), std::string::npos) << m;

  // Bad value type: the parser's own check, reported with the sweep path and the value.
  m = plan_error(std::string(kBase) + "sweep: {cluster.gpus: [2, four]}\n");
  EXPECT_NE(m.find("sweep.cluster.gpus"), std::string::npos) << m;
  EXPECT_NE(m.find("value 'four'"), std::string::npos) << m;
  EXPECT_NE(m.find("expected a whole number"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {cluster.bandwidth: [10GB/s, 3 parsecs]}\n");
  EXPECT_NE(m.find("value '3 parsecs'"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {cluster.gpus: 4}\n");
  EXPECT_NE(m.find("non-empty list"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {cluster.gpus: [2, [3]]}\n");
  EXPECT_NE(m.find("sweep.cluster.gpus (line 8): value '[3]'"), std::string::npos) << m;
  EXPECT_NE(m.find("expected a single value"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep: {strategy: [metis, [heft]]}\n");
  EXPECT_NE(m.find("sweep.strategy[1]"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {cluster.gpus: [2, 2]}\n");
  EXPECT_NE(m.find("listed twice"), std::string::npos) << m;

  // A list selector: the nearest label is suggested.
  m = plan_error(std::string(kBase) + "sweep:\n  strategies[mcm].options.steps: [10]\n");
  EXPECT_NE(m.find("sweep.strategies[mcm].options.steps"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'mcmc'"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep:\n  strategies[7].options.steps: [10]\n");
  EXPECT_NE(m.find("the list has 3 items"), std::string::npos) << m;
  // An unknown strategy option, caught by the strategy's own allow_only.
  m = plan_error(std::string(kBase) + "sweep:\n  strategies[mcmc].options.stepz: [10]\n");
  EXPECT_NE(m.find("did you mean 'steps'"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {cluster: [1]}\n");
  EXPECT_NE(m.find("'cluster' is a mapping: sweep one of its fields"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep: {cluster..gpus: [1]}\n");
  EXPECT_NE(m.find("malformed path"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep: {output: [a, b]}\n");
  EXPECT_NE(m.find("cannot be swept"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep: {cluster.gpus.x: [1]}\n");
  EXPECT_NE(m.find("'cluster.gpus' is a value"), std::string::npos) << m;

  m = plan_error(std::string(kBase) + "sweep: {strategy: [metis, hetf]}\n");
  EXPECT_NE(m.find("sweep.strategy"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'heft'"), std::string::npos) << m;

  // The simulation block.
  m = plan_error(std::string(kBase) + "simulation: {ordr: fcfs}\n");
  EXPECT_NE(m.find("did you mean 'order'"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "simulation: {order: lifo}\n");
  EXPECT_NE(m.find("simulation.order"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "simulation: {collectives: steps}\n");
  EXPECT_NE(m.find("simulation.collectives"), std::string::npos) << m;
  EXPECT_NE(m.find("messages"), std::string::npos) << m;  // the choices
  m = plan_error(std::string(kBase) + "simulation: {collectives: condensed}\n");  // a graph, no data_parallel
  EXPECT_NE(m.find("so there is none"), std::string::npos) << m;
  // Judged on each combination: a sweep that gives a strategy data_parallel has rings to condense.
  EXPECT_EQ(plan(std::string(kBase) + "simulation: {collectives: condensed}\n"
                                      "sweep:\n  strategies[round-robin].data_parallel: [2]\n")
                .points.size(),
            plan(kBase).points.size());
  m = plan_error(std::string(kBase) + "simulation: {collectives: condensed}\nsweep: {strategy: [metis]}\n");
  EXPECT_NE(m.find("so there is none"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "simulation: {repetitions: 0}\n");
  EXPECT_NE(m.find("simulation.repetitions"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "simulation: {seeds: [1, x]}\n");
  EXPECT_NE(m.find("simulation.seeds[1]"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "simulation: {seeds: 3}\n");
  EXPECT_NE(m.find("non-empty list"), std::string::npos) << m;
}

TEST(SweepPlan, CrossProductOfValuesStrategiesSeedsAndRepetitions) {
  // 2 bandwidths x 2 GPU counts = 4 variants; per variant round-robin (no seed option) once and
  // mcmc once per seed; each twice (repetitions): 4 x (1 + 2) x 2 = 24 points. metis is left out
  // by the strategy axis.
  const SweepPlan p = plan(std::string(kBase) +
                           "simulation: {seeds: [7, 8], repetitions: 2}\n"
                           "sweep:\n"
                           "  cluster.bandwidth: [10GB/s, 20GB/s]\n"
                           "  cluster.gpus: [2, 4]\n"
                           "  strategy: [round-robin, mcmc]\n");
  ASSERT_EQ(p.variants.size(), 4u);
  ASSERT_EQ(p.points.size(), 24u);
  EXPECT_EQ(p.points[0].key, "cluster.bandwidth=10GB/s cluster.gpus=2 strategy=round-robin rep=0");
  EXPECT_EQ(p.points[1].key, "cluster.bandwidth=10GB/s cluster.gpus=2 strategy=round-robin rep=1");
  EXPECT_EQ(p.points[2].key, "cluster.bandwidth=10GB/s cluster.gpus=2 strategy=mcmc seed=7 rep=0");
  EXPECT_EQ(p.points[5].key, "cluster.bandwidth=10GB/s cluster.gpus=2 strategy=mcmc seed=8 rep=1");
  EXPECT_EQ(p.points[6].key, "cluster.bandwidth=10GB/s cluster.gpus=4 strategy=round-robin rep=0");
  EXPECT_EQ(p.points[23].key, "cluster.bandwidth=20GB/s cluster.gpus=4 strategy=mcmc seed=8 rep=1");
  for (std::size_t i = 0; i < p.points.size(); ++i) EXPECT_EQ(p.points[i].index, i);
  // The overrides reached the parsed clusters: the last axis varies fastest.
  EXPECT_EQ(p.variants[0].cluster.num_devices(), 2);
  EXPECT_EQ(p.variants[1].cluster.num_devices(), 4);
  EXPECT_DOUBLE_EQ(p.variants[1].cluster.bandwidth(0, 1), 10e9);
  EXPECT_DOUBLE_EQ(p.variants[2].cluster.bandwidth(0, 1), 20e9);
  // The seed goes into the strategy's options; the others keep theirs.
  const StrategySpec mcmc = point_strategy(p, p.points[3]);
  EXPECT_EQ(mcmc.name, "mcmc");
  EXPECT_EQ(mcmc.options["seed"].as<long>(), 7);
  EXPECT_EQ(mcmc.options["steps"].as<long>(), 50);
  const StrategySpec round_robin = point_strategy(p, p.points[0]);
  EXPECT_TRUE(!round_robin.options || round_robin.options.IsNull()) << round_robin.options;
  // Per-point file names, distinct for distinct keys, named by label, swept values, seed and repetition.
  EXPECT_NE(p.points[2].file_stem, p.points[3].file_stem);
  EXPECT_EQ(p.points[2].file_stem, "mcmc_bandwidth=10GBps_gpus=2_seed=7_rep=0");
  EXPECT_EQ(p.points[1].file_stem, "round-robin_bandwidth=10GBps_gpus=2_rep=1");
}

TEST(SweepPlan, OverridesStrategyOptionsByLabelIndexAndBareName) {
  // `- metis` is a bare name: the path gives it an options mapping.
  const SweepPlan p = plan(std::string(kBase) +
                           "sweep:\n"
                           "  strategies[metis].options.ncuts: [3]\n"
                           "  strategies[2].options.steps: [11, 12]\n");
  ASSERT_EQ(p.variants.size(), 2u);
  EXPECT_EQ(p.points.size(), 6u);  // 2 variants x 3 strategies
  EXPECT_EQ(p.variants[0].strategies[1].options["ncuts"].as<int>(), 3);
  EXPECT_EQ(p.variants[0].strategies[2].options["steps"].as<int>(), 11);
  EXPECT_EQ(p.variants[1].strategies[2].options["steps"].as<int>(), 12);
  EXPECT_EQ(p.points[5].key, "strategies[metis].options.ncuts=3 strategies[2].options.steps=12 strategy=mcmc rep=0");
  // A field left at its default is added (graph.seed of the synthetic generator).
  const SweepPlan q = plan(std::string(kBase) + "sweep: {graph.seed: [1, 2]}\n");
  EXPECT_EQ(q.variants[1].graph.synthetic.seed, 2u);
  EXPECT_NE(q.variant_graph[0], q.variant_graph[1]);
}

TEST(SweepPlan, AMappingValueReplacesAWholeField) {
  // Two graphs: the whole `graph:` mapping is replaced, and the parser checks each.
  const SweepPlan p = plan(std::string(kBase) +
                           "sweep:\n"
                           "  graph: [{builtin: fig3.1}, {builtin: synthetic, layers: 2}]\n"
                           "  strategy: [metis]\n");
  ASSERT_EQ(p.variants.size(), 2u);
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_EQ(p.variants[0].graph.builtin, "fig3.1");
  EXPECT_EQ(p.variants[1].graph.synthetic.layers, 2);
  EXPECT_EQ(p.points[0].key, "graph={builtin: fig3.1} strategy=metis rep=0");
  EXPECT_NE(p.variant_graph[0], p.variant_graph[1]);
  const std::string m = plan_error(std::string(kBase) + "sweep: {graph: [{builtin: fig3.2}]}\n");
  EXPECT_NE(m.find("value '{builtin: fig3.2}': graph.builtin: unknown built-in graph"), std::string::npos) << m;
}

TEST(SweepPlan, AMappingValueNamedByItsLabel) {
  // `label:` names the value in keys and is not passed to the field's parser (which would reject it).
  const SweepPlan p = plan(std::string(kBase) +
                           "sweep:\n"
                           "  graph: [{label: tiny, builtin: fig3.1}, {builtin: synthetic, layers: 2}]\n"
                           "  strategy: [metis]\n");
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_EQ(p.points[0].key, "graph=tiny strategy=metis rep=0");
  EXPECT_EQ(p.variants[0].graph.builtin, "fig3.1");
  EXPECT_EQ(p.points[1].key, "graph={builtin: synthetic, layers: 2} strategy=metis rep=0");
  // A strategy's options named by a label: the label is not an option.
  const SweepPlan o = plan(std::string(kBase) +
                           "sweep:\n"
                           "  strategies[mcmc].options: [{label: short, steps: 10}]\n"
                           "  strategy: [mcmc]\n");
  ASSERT_EQ(o.points.size(), 1u);
  EXPECT_EQ(o.points[0].key, "strategies[mcmc].options=short strategy=mcmc rep=0");
  // Two values with one label are listed twice; an empty label is an error naming it.
  const std::string twice = plan_error(std::string(kBase) +
                                       "sweep: {graph: [{label: g, builtin: fig3.1}, {label: g, builtin: fig3.2}]}\n");
  EXPECT_NE(twice.find("value 'g' is listed twice"), std::string::npos) << twice;
  const std::string empty = plan_error(std::string(kBase) + "sweep: {graph: [{label: '', builtin: fig3.1}]}\n");
  EXPECT_NE(empty.find("sweep.graph[0].label"), std::string::npos) << empty;
}

TEST(SweepPlan, AListOfBlocksRunsEachCrossProductInTurn) {
  // Two blocks: 2 graphs x 2 GPU counts, then one graph on 4 GPUs only, each with metis alone.
  std::optional<SweepCount> counted;
  PlanOptions options;
  options.counted = [&](const SweepCount& c) { counted = c; };
  const SweepPlan p = plan_sweep(YAML::Load(std::string(kBase) +
                                            "sweep:\n"
                                            "  - graph: [{label: a, builtin: fig3.1}, {label: b, builtin: synthetic}]\n"
                                            "    cluster.gpus: [2, 3]\n"
                                            "    strategy: [metis]\n"
                                            "  - graph: [{label: c, builtin: synthetic, layers: 2}]\n"
                                            "    cluster.gpus: [4]\n"
                                            "    strategy: [metis]\n"),
                                 "s.yaml", options);
  ASSERT_EQ(p.points.size(), 5u);
  ASSERT_EQ(p.variants.size(), 5u);
  EXPECT_EQ(p.points[0].key, "graph=a cluster.gpus=2 strategy=metis rep=0");
  EXPECT_EQ(p.points[3].key, "graph=b cluster.gpus=3 strategy=metis rep=0");
  EXPECT_EQ(p.points[4].key, "graph=c cluster.gpus=4 strategy=metis rep=0");
  EXPECT_EQ(p.points[4].index, 4u);
  EXPECT_EQ(p.variants[4].cluster.num_devices(), 4);
  EXPECT_EQ(p.variants[4].graph.synthetic.layers, 2);
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(counted->points, 5u);
  EXPECT_EQ(counted->breakdown,
            "sweep[0]: 2 values of graph x 2 values of cluster.gpus x 1 point each (1 strategy); "
            "sweep[1]: 1 value of graph x 1 value of cluster.gpus x 1 point each (1 strategy)");

  // Five blocks (a reproduction's one per case) are counted, not listed.
  std::string blocks = std::string(kBase) + "sweep:\n";
  for (int gpus = 2; gpus <= 6; ++gpus)
    blocks += fmt::format("  - cluster.gpus: [{}]\n    strategy: [{}]\n", gpus, gpus == 6 ? "metis, round-robin" : "metis");
  EXPECT_EQ(plan_sweep(YAML::Load(blocks), "s.yaml", options).points.size(), 6u);
  EXPECT_EQ(counted->breakdown,
            "5 sweep blocks of 1 to 2 points each; the largest, sweep[4]: 1 value of cluster.gpus x 2 points each (2 strategies)");
}

TEST(SweepPlan, AValueRepeatedAsAYamlAliasKeepsItsLabel) {
  const SweepPlan p = plan(std::string(kBase) +
                           "sweep:\n"
                           "  - graph: [&g {label: tiny, builtin: fig3.1}]\n"
                           "    cluster.gpus: [2]\n"
                           "    strategy: [metis]\n"
                           "  - graph: [*g]\n"
                           "    cluster.gpus: [3]\n"
                           "    strategy: [metis]\n");
  ASSERT_EQ(p.points.size(), 2u);
  EXPECT_EQ(p.points[0].key, "graph=tiny cluster.gpus=2 strategy=metis rep=0");
  EXPECT_EQ(p.points[1].key, "graph=tiny cluster.gpus=3 strategy=metis rep=0");
  EXPECT_EQ(p.variants[1].graph.builtin, "fig3.1");
}

TEST(SweepPlan, BlockErrorsNameTheBlock) {
  std::string m = plan_error(std::string(kBase) + "sweep:\n  - cluster.gpus: [2]\n  - cluster.gpu: [3]\n");
  EXPECT_NE(m.find("s.yaml: sweep[1].cluster.gpu (line 10)"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep:\n  - cluster.gpus: [2]\n  - [3]\n");
  EXPECT_NE(m.find("sweep[1] (line 10)"), std::string::npos) << m;
  EXPECT_NE(m.find("or a list of such mappings"), std::string::npos) << m;
  m = plan_error(std::string(kBase) + "sweep: []\n");
  EXPECT_NE(m.find("sweep (line 8)"), std::string::npos) << m;
  // A point in two blocks would run twice under one key.
  m = plan_error(std::string(kBase) + "sweep:\n  - cluster.gpus: [2, 3]\n  - cluster.gpus: [3, 4]\n");
  EXPECT_NE(m.find("s.yaml: sweep[1]: the point 'cluster.gpus=3 strategy=round-robin rep=0' is also in sweep[0]"),
            std::string::npos)
      << m;
}

TEST(SweepPlan, WithoutASweepOnePointPerStrategyNamedAsBefore) {
  const SweepPlan p = plan(kBase);
  ASSERT_EQ(p.points.size(), 3u);
  EXPECT_EQ(p.points[1].key, "strategy=metis rep=0");
  EXPECT_EQ(p.points[1].file_stem, "metis");  // placement-metis.json, as a plain run writes
}

// A point's files are named by what tells it apart (its label and swept values, readable in a
// listing), never by a hash, unless two points would share a name.
TEST(SweepPlan, PointFilesAreNamedByLabelAndSweptValuesNotHashes) {
  const SweepPlan p = plan(std::string(kBase) +
                           "sweep:\n"
                           "  graph: [{builtin: fig3.1}, {builtin: synthetic, layers: 2, branches: 2, ops_per_branch: 2}]\n"
                           "  cluster.bandwidth: [10GB/s, 2.5GB/s]\n"
                           "  strategies[mcmc].options.steps: [50, 60]\n");
  ASSERT_EQ(p.points.size(), 24u);
  EXPECT_EQ(p.points[0].file_stem, "round-robin_graph=fig3.1_bandwidth=10GBps_mcmc.steps=50");
  EXPECT_EQ(p.points[23].file_stem, "mcmc_graph=synthetic_bandwidth=2.5GBps_mcmc.steps=60");
  const std::regex hash("[0-9a-f]{8}");
  std::set<std::string> stems;
  for (const SweepPoint& point : p.points) {
    EXPECT_FALSE(std::regex_search(point.file_stem, hash)) << point.file_stem;
    EXPECT_EQ(point.file_stem.find_first_of("/\\:*?\"<>| {}[],"), std::string::npos) << point.file_stem;
    EXPECT_TRUE(stems.insert(point.file_stem).second) << "twice: " << point.file_stem;
  }
  // Labels that differ only in what a file name cannot hold, or in case (one file on a file system
  // that ignores case), get a hash of their keys, and only they.
  const SweepPlan clash = plan(
      "graph: {builtin: fig3.1}\n"
      "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
      "strategies: [{name: metis, label: a/b}, {name: metis, label: a:b}, {name: metis, label: Metis}, metis]\n"
      "sweep: {cluster.gpus: [2]}\n");
  ASSERT_EQ(clash.points.size(), 4u);
  const std::regex hashed(R"(^(a_b|Metis|metis)_gpus=2-[0-9a-f]{8}$)");
  for (const SweepPoint& point : clash.points) EXPECT_TRUE(std::regex_match(point.file_stem, hashed)) << point.file_stem;
  EXPECT_NE(clash.points[0].file_stem, clash.points[1].file_stem);
  EXPECT_NE(clash.points[2].file_stem, clash.points[3].file_stem);
}

// The runner writes the files under those names, and the records name them.
TEST(SweepRunner, WritesEachPointsFilesUnderItsName) {
  const fs::path dir = temp_dir("file-names");
  SweepOptions options;
  options.output = dir.string();
  ASSERT_EQ(run_sweep_in_child("graph: {builtin: fig3.1}\n"
                               "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
                               "strategies: [round-robin]\n"
                               "simulation: {engine: evaluator, trace: true}\n"
                               "sweep: {cluster.bandwidth: [10GB/s, 20Gbps]}\n",
                               options),
            0);
  for (const char* stem : {"round-robin_bandwidth=10GBps", "round-robin_bandwidth=20Gbps"}) {
    EXPECT_TRUE(fs::exists(dir / fmt::format("placement-{}.json", stem))) << stem;
    EXPECT_TRUE(fs::exists(dir / fmt::format("trace-{}.json", stem))) << stem;
  }
  for (const PointRecord& r : read_result_lines((dir / "results.jsonl").string()))
    EXPECT_TRUE(fs::exists(dir / r.measurement->placement_file)) << r.measurement->placement_file;
  fs::remove_all(dir);
}

// --- The point count: counted before any point is made, and capped. ---

namespace {

// A list of n distinct values with a unit: [1GB/s, 2GB/s, ...].
std::string values(int n, const char* unit) {
  std::string out = "[";
  for (int i = 1; i <= n; ++i) out += fmt::format("{}{}{}", i > 1 ? ", " : "", i, unit);
  return out + "]";
}

// 100 x 100 x 1000 values: ten million points, one strategy each.
std::string ten_million_points() {
  return "graph: {builtin: fig3.1}\n"
         "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n"
         "strategies: [round-robin]\n"
         "simulation: {engine: evaluator, trace: false}\n"
         "sweep:\n"
         "  cluster.bandwidth: " + values(100, "GB/s") + "\n"
         "  cluster.latency: " + values(100, "us") + "\n"
         "  cluster.gpu_memory: " + values(1000, "GiB") + "\n";
}

}  // namespace

TEST(SweepCount, CountsEveryShapeOfSweepExactly) {
  const std::vector<std::string> scenarios = {
      kBase,
      std::string(kBase) + "simulation: {seeds: [7, 8, 9], repetitions: 2}\n",
      std::string(kBase) + "simulation: {seeds: [7, 8], repetitions: 2}\n"
                           "sweep: {cluster.gpus: [2, 3, 4], cluster.bandwidth: [1GB/s, 2GB/s], strategy: [mcmc, round-robin]}\n",
      // The strategies themselves swept: combinations run different strategies.
      std::string(kBase) + "simulation: {seeds: [7, 8]}\n"
                           "sweep:\n"
                           "  strategies: [[round-robin], [round-robin, {name: mcmc, options: {steps: 5}}]]\n"
                           "  cluster.gpus: [2, 3]\n",
      std::string(kBase) + "simulation: {seeds: [7, 8]}\nsweep:\n  strategies[round-robin].name: [round-robin, random]\n",
  };
  for (const std::string& yaml : scenarios) {
    SCOPED_TRACE(yaml);
    std::optional<SweepCount> counted;
    PlanOptions options;
    options.counted = [&](const SweepCount& c) { counted = c; };
    const SweepPlan p = plan_sweep(YAML::Load(yaml), "s.yaml", options);
    ASSERT_TRUE(counted.has_value());
    EXPECT_TRUE(counted->exact);
    EXPECT_EQ(counted->points, p.points.size()) << counted->breakdown;
  }
  // Spot checks of the arithmetic: 3 x 2 combinations x (mcmc twice, round-robin once) x 2 repetitions.
  PlanOptions options;
  std::string breakdown;
  options.counted = [&](const SweepCount& c) { breakdown = c.breakdown; };
  EXPECT_EQ(plan_sweep(YAML::Load(scenarios[2]), "s.yaml", options).points.size(), 36u);
  EXPECT_EQ(breakdown, "3 values of cluster.gpus x 2 values of cluster.bandwidth x 6 points each (2 strategies, 2 seeds, 2 repetitions)");
}

TEST(SweepCount, MoreThanTheLimitIsRefusedBeforeThePointsAreMade) {
  std::optional<SweepCount> counted;
  PlanOptions options;
  options.counted = [&](const SweepCount& c) { counted = c; };
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(ten_million_points()), "big.yaml", options), "sweep", "big.yaml",
                     "10000000 points (100 values of cluster.bandwidth x 100 values of cluster.latency x 1000 values of "
                     "cluster.gpu_memory x 1 point each (1 strategy)) is more than --max-points 100000");
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(counted->points, 10'000'000u);

  // The limit is the caller's; exactly at it is fine.
  const std::string yaml = std::string(kBase) + "sweep: {cluster.gpus: [2, 3, 4]}\n";  // 9 points
  options.max_points = 9;
  EXPECT_EQ(plan_sweep(YAML::Load(yaml), "s.yaml", options).points.size(), 9u);
  options.max_points = 8;
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(yaml), "s.yaml", options), "sweep", "9 points", "--max-points 8");
  // Without a sweep, seeds and repetitions count too: (round-robin once, metis and mcmc per seed)
  // x 1000 repetitions.
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(std::string(kBase) + "simulation: {seeds: [1, 2, 3], repetitions: 1000}\n"), "s.yaml",
                                options),
                     "simulation", "7000 points (3 strategies, 3 seeds, 1000 repetitions)", "--max-points 8");
  // Strategies swept over more combinations than the limit: a lower bound (one point each).
  options.max_points = 3;
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(std::string(kBase) + "sweep:\n  strategies[mcmc].options.steps: [1, 2, 3, 4]\n"),
                                "s.yaml", options),
                     "sweep", "at least 4 points", "--max-points 3");
}

TEST(SweepCount, CliSaysTheCountAndRefusesWithExitTwo) {
  const fs::path dir = temp_dir("max-points");
  std::ofstream(dir / "big.yaml") << ten_million_points() << "output: " << (dir / "out").string() << "\n";
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "big.yaml").string(), out), 2) << out;
  EXPECT_NE(out.find("planning 10000000 points"), std::string::npos) << out;
  EXPECT_NE(out.find("10000000 points (100 values of cluster.bandwidth"), std::string::npos) << out;
  EXPECT_NE(out.find("is more than --max-points 100000"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "out")) << "nothing is run";

  EXPECT_NE(run_cli("run --max-points 0 " + (dir / "big.yaml").string(), out), 0);
  EXPECT_NE(out.find("expected a whole number >= 1, got '0'"), std::string::npos) << out;

  std::ofstream(dir / "small.yaml") << kBase << "simulation: {engine: evaluator, trace: false}\n"
                                    << "sweep: {cluster.gpus: [2, 3]}\noutput: " << (dir / "small").string() << "\n";
  EXPECT_EQ(run_cli("run --max-points 5 " + (dir / "small.yaml").string(), out), 2) << out;
  EXPECT_NE(out.find("6 points"), std::string::npos) << out;
  EXPECT_EQ(run_cli("run --max-points 6 " + (dir / "small.yaml").string(), out), 0) << out;
  EXPECT_NE(out.find("planning 6 points (2 values of cluster.gpus x 3 points each (3 strategies))"), std::string::npos) << out;
}

// Two GPUs joined by 1 GB/s links; every tensor is 1000 bytes, so each transfer takes 1 us.
// GPU0: P (1 us, id 0), R (1 us, id 1), Q2 (10 us, id 5). GPU1: W (5 us, id 2), Y (1 us, id 3),
// Q (1 us, id 4). Tensors P->Y, R->Q, Q->Q2.
// Scheduler (highest rank first; ranks: R 12, P 2, W 5, Q 11, Y 1, Q2 10): GPU0 runs R 0-1, P 1-2;
// Q's input arrives at 2, Y's at 3; GPU1 runs W 0-5, then Q (rank 11) 5-6, Y 6-7; Q2's input
// arrives at 7, Q2 runs 7-17: 17 us.
// FCFS: at 0, P and R are ready together, P has the lower id: P 0-1, R 1-2; Y's input arrives at
// 2, Q's at 3; at 5 Y came first: Y 5-6, Q 6-7; Q2's input arrives at 8: Q2 8-18: 18 us.
TEST(FcfsOrder, RunsOperatorsInTheOrderTheyBecameReady) {
  Graph g;
  for (auto [name, us] : {std::pair{"P", 1.0}, {"R", 1.0}, {"W", 5.0}, {"Y", 1.0}, {"Q", 1.0}, {"Q2", 10.0}})
    g.add_operator({name, "op", us * 1e-6, 0});
  g.add_tensor(0, 3, 1000);
  g.add_tensor(1, 4, 1000);
  g.add_tensor(4, 5, 1000);
  g.finalize("fcfs");
  const Cluster c = testutil::dedicated_mesh(2, 1e9);
  const std::vector<DeviceId> placement{0, 0, 1, 1, 1, 0};

  Evaluator evaluator(g, c);
  const Schedule fcfs = evaluator.schedule(placement, GpuQueue::Fcfs);
  EXPECT_EQ(fcfs.device_order[0], (std::vector<OpId>{0, 1, 5}));
  EXPECT_EQ(fcfs.device_order[1], (std::vector<OpId>{2, 3, 4}));
  EXPECT_NEAR(fcfs.latency, 18e-6, 1e-12);

  const Schedule scheduler = evaluator.schedule(placement);
  EXPECT_NEAR(scheduler.latency, 17e-6, 1e-12);
  EXPECT_EQ(scheduler.device_order[1], (std::vector<OpId>{2, 4, 3}));

  // SimGrid runs the FCFS order: no link is shared, so it matches the evaluator exactly.
  const Measurement m = measure_placement(g, c, placement, EngineSet::of({kEvaluator, kSimGrid}), RunOrder::Fcfs);
  EXPECT_NEAR(*m.latency(kEvaluator), 18e-6, 1e-12);
  ASSERT_TRUE(m.latency(kSimGrid).has_value());
  EXPECT_NEAR(*m.latency(kSimGrid), 18e-6, 1e-12);
}

TEST(SweepResults, AppendReadAndMergeShards) {
  const fs::path dir = temp_dir("merge");
  auto record = [](const std::string& key, std::size_t index, const std::string& error) {
    PointRecord r;
    r.key = key;
    r.index = index;
    if (error.empty()) {
      r.measurement.emplace().set_latency(kEvaluator, 1e-3);
    } else {
      r.status = PointStatus::Failed;
      r.reason = error;
    }
    return r;
  };
  append_record((dir / "results.rank1.jsonl").string(), record("b", 1, ""));
  append_record((dir / "results.rank0.jsonl").string(), record("c", 2, ""));
  append_record((dir / "results.rank0.jsonl").string(), record("a", 0, "x"));
  append_record((dir / "results.jsonl").string(), record("a", 0, ""));
  EXPECT_EQ(merge_result_shards(dir.string(), std::nullopt), 3u);
  const auto merged = read_result_lines((dir / "results.jsonl").string());
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0].key, "a");
  EXPECT_EQ(merged[0].status, PointStatus::Failed);  // the shard's line replaced the older one
  EXPECT_EQ(merged[2].key, "c");
  EXPECT_FALSE(fs::exists(dir / "results.rank0.jsonl"));
  EXPECT_TRUE(fs::exists(dir / "results.json"));
  EXPECT_TRUE(fs::exists(dir / "results.csv"));

  std::ofstream(dir / "bad.jsonl") << to_json(record("a", 0, "")).dump() << "\n{\"nokey\":1}\n";
  EXPECT_INPUT_ERROR(read_result_lines((dir / "bad.jsonl").string()), "", "line 2");
  fs::remove_all(dir);
}

// A sweep killed after 5 of its 12 points and resumed (with 2 workers) gives exactly the results
// of an uninterrupted run with 1 worker: same keys, each once, same deterministic fields.
TEST(SweepRunner, KilledAndResumedEqualsUninterruptedAndJobsDoNotMatter) {
  const fs::path dir = temp_dir("resume");
  SweepOptions full_run;
  full_run.output = (dir / "full").string();
  full_run.jobs = 1;
  ASSERT_EQ(run_sweep_in_child(kSweepScenario, full_run), 0);
  const auto full = deterministic(dir / "full" / "results.jsonl");
  ASSERT_EQ(full.size(), 12u);
  for (const auto& [key, r] : full) EXPECT_EQ(r["status"], "ok") << key;
  expect_lines_round_trip(dir / "full" / "results.jsonl");

  SweepOptions killed;
  killed.output = (dir / "part").string();
  killed.jobs = 2;
  killed.debug_stop_after = 5;
  EXPECT_EQ(run_sweep_in_child(kSweepScenario, killed), 128 + SIGKILL);
  EXPECT_EQ(count_lines(dir / "part" / "results.jsonl"), 5u);
  SweepOptions resumed = killed;
  resumed.debug_stop_after = -1;
  resumed.resume = true;
  ASSERT_EQ(run_sweep_in_child(kSweepScenario, resumed), 0);
  EXPECT_EQ(deterministic(dir / "part" / "results.jsonl"), full);
  expect_lines_round_trip(dir / "part" / "results.jsonl");

  // The aggregate lists every point in plan order.
  const nlohmann::json agg = nlohmann::json::parse(std::ifstream(dir / "part" / "results.json"));
  ASSERT_EQ(agg["strategies"].size(), 12u);
  EXPECT_EQ(agg["strategies"][0]["key"], "cluster.bandwidth=10GB/s cluster.gpus=2 strategy=round-robin rep=0");
  EXPECT_EQ(agg["sweep"], nlohmann::json({"cluster.bandwidth", "cluster.gpus"}));
  fs::remove_all(dir);
}

// Through the CLI: --resume of a finished sweep runs nothing and changes nothing.
TEST(SweepCli, ResumingAFinishedSweepRunsNothing) {
  const fs::path dir = temp_dir("resume-cli");
  std::ofstream(dir / "s.yaml") << kBase << "simulation: {engine: evaluator, trace: false}\n";
  SweepOptions first;
  first.output = dir.string();
  ASSERT_EQ(run_sweep_in_child(std::string(kBase) + "simulation: {engine: evaluator, trace: false}\n", first), 0);
  const auto before = deterministic(dir / "results.jsonl");
  std::string out;
  ASSERT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --resume --jobs 2 -o " + dir.string(), out), 0) << out;
  EXPECT_NE(out.find("3 points (3 already done), 0 to run"), std::string::npos) << out;
  EXPECT_NE(out.find("round-robin"), std::string::npos) << "the table lists the resumed points: " << out;
  EXPECT_EQ(deterministic(dir / "results.jsonl"), before);
  fs::remove_all(dir);
}

// `simulation.time_limit` ends a point that runs too long (here an MCMC chain of 10^9 steps with
// no time limit of its own) as "timed out", saying so; the other points run; exit 1.
TEST(SweepCli, APointOverTheTimeLimitIsStoppedAndRecordedAsTimedOut) {
  const fs::path dir = temp_dir("time-limit");
  std::ofstream(dir / "s.yaml") << "graph: {builtin: synthetic, layers: 4}\n"
                                   "cluster: {type: full-mesh, gpus: 4, bandwidth: 20GB/s}\n"
                                   "strategies: [single-device, {name: mcmc, options: {steps: 1000000000}}]\n"
                                   "simulation: {engine: evaluator, trace: false, time_limit: 1s}\n";
  std::string out;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --jobs 2 -o " + dir.string(), out), 1) << out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60) << out;
  const auto records = deterministic(dir / "results.jsonl");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records.at("strategy=single-device rep=0")["status"], "ok");
  const auto& stopped = records.at("strategy=mcmc rep=0");
  EXPECT_EQ(stopped["status"], "timed out") << stopped;
  EXPECT_NE(stopped["error"].get<std::string>().find("ran longer than simulation.time_limit"), std::string::npos) << stopped;
  EXPECT_NE(out.find("timed out: stopped after "), std::string::npos) << out;
  expect_lines_round_trip(dir / "results.jsonl");
  // The key takes a duration or none, nothing else.
  std::ofstream(dir / "bad.yaml") << "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                                     "strategies: [heft]\nsimulation: {time_limit: 0s}\n";
  EXPECT_EQ(run_cli("run " + (dir / "bad.yaml").string() + " -o " + (dir / "bad").string(), out), 2) << out;
  EXPECT_NE(out.find("simulation.time_limit"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(SweepCli, AWorkerCrashIsAFailedPointAndTheSweepGoesOn) {
  const fs::path dir = temp_dir("crash");
  std::ofstream(dir / "s.yaml") << "graph: {builtin: fig3.1}\n"
                                   "cluster: {type: full-mesh, gpus: 2, bandwidth: 20GB/s}\n"
                                   "strategies: [single-device, round-robin, metis]\n"
                                   "simulation: {engine: evaluator, trace: false}\n";
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --jobs 2 --debug-abort-point 1 -o " + dir.string(), out), 1)
      << out;
  const auto records = deterministic(dir / "results.jsonl");
  ASSERT_EQ(records.size(), 3u);
  const auto& crashed = records.at("strategy=round-robin rep=0");
  EXPECT_EQ(crashed["status"], "failed");
  EXPECT_NE(crashed["error"].get<std::string>().find("SIGABRT"), std::string::npos) << crashed;
  EXPECT_EQ(records.at("strategy=single-device rep=0")["status"], "ok");
  EXPECT_EQ(records.at("strategy=metis rep=0")["status"], "ok");
  expect_lines_round_trip(dir / "results.jsonl");  // a crashed point's line too
  // fig3.1 on one GPU: 5 + 10 + 5 us.
  EXPECT_NEAR(records.at("strategy=single-device rep=0")["evaluator_latency"].get<double>(), 20e-6, 1e-12);
  EXPECT_NE(out.find("failed: worker crashed: killed by signal SIGABRT"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(SweepCli, TwoMpiRanksMergeToTheSingleProcessResults) {
#ifndef PLACESIM_CLI_HAS_MPI
  GTEST_SKIP() << "placesim was built without MPI (PLACESIM_WITH_MPI is off: no libopenmpi-dev, or a sanitizer build)";
#endif
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is absent (install openmpi-bin)";
  const fs::path dir = temp_dir("mpi");
  std::ofstream(dir / "s.yaml") << kSweepScenario;
  const std::string scenario = (dir / "s.yaml").string();
  SweepOptions one;
  one.output = (dir / "one").string();
  ASSERT_EQ(run_sweep_in_child(kSweepScenario, one), 0);
  std::string out;
  // Bounded: a launch that hangs (it did once on a loaded CI machine) fails here with its output
  // instead of stalling the suite until ctest's timeout.
  const std::string mpirun =
      "timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -n 2 " + std::string(PLACESIM_CLI_PATH);
  const std::string cmd = mpirun + " run " + scenario + " --mpi -o " + (dir / "mpi").string() + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  char buf[4096];
  out.clear();
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  if (out.find("built without MPI") != std::string::npos) GTEST_SKIP() << "placesim was built without MPI";
  ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 124) << "mpirun did not finish in 300 s:\n" << out;
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("rank 1: "), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "mpi" / "results.rank0.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "mpi" / "results.rank1.jsonl"));
  EXPECT_EQ(deterministic(dir / "mpi" / "results.jsonl"), deterministic(dir / "one" / "results.jsonl"));
  // Sorted by key.
  const auto lines = read_result_lines((dir / "mpi" / "results.jsonl").string());
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_LT(lines[i - 1].key, lines[i].key);
  fs::remove_all(dir);
}

// FCFS in SimGrid picks by the arrival times under contention. Three GPUs, dedicated 1 GB/s links.
// A (GPU0, 1 us) sends 1000 B to Y and 3000 B to V (both GPU1); C (GPU2, 1.5 us) sends 1000 B to
// Z (GPU1); Z sends 1000 B to Z2 (GPU2, 10 us). W (GPU1, 5 us) keeps GPU1 busy until 5 us; Y, Z
// and V take 1 us.
// Without contention (the evaluator): Y's input arrives at 2, Z's at 2.5, V's at 4, so GPU1 runs
// W 0-5, Y 5-6, Z 6-7, V 7-8; Z2's input arrives at 8: Z2 8-18, 18 us.
// In SimGrid the two tensors of A share link 0->1 at 0.5 GB/s each: Y's arrives at 3 (V's 2000 B
// left then go at 1 GB/s, arriving at 5), so FCFS runs Z (2.5) 5-6, Y 6-7, V 7-8 and Z2 7-17:
// 17 us. Replaying the evaluator's order (Y, Z, V) in SimGrid instead gives 18 us.
TEST(FcfsOrder, SimGridPicksByTheArrivalsItSimulates) {
  Graph g;
  for (auto [name, us] : {std::pair{"A", 1.0}, {"C", 1.5}, {"W", 5.0}, {"Y", 1.0}, {"Z", 1.0}, {"V", 1.0}, {"Z2", 10.0}})
    g.add_operator({name, "op", us * 1e-6, 0});
  g.add_tensor(0, 3, 1000);
  g.add_tensor(0, 5, 3000);
  g.add_tensor(1, 4, 1000);
  g.add_tensor(4, 6, 1000);
  g.finalize("fcfs-contention");
  const Cluster c = testutil::dedicated_mesh(3, 1e9);
  const std::vector<DeviceId> placement{0, 2, 1, 1, 1, 1, 2};

  const Schedule fcfs = Evaluator(g, c).schedule(placement, GpuQueue::Fcfs);
  EXPECT_EQ(fcfs.device_order[1], (std::vector<OpId>{2, 3, 4, 5}));
  EXPECT_NEAR(fcfs.latency, 18e-6, 1e-12);
  EXPECT_NEAR(simulate(g, c, placement, fcfs.device_order, GpuQueue::Fixed).latency, 18e-6, 1e-12);
  const SimulationResult dynamic = simulate(g, c, placement, fcfs.device_order, GpuQueue::Fcfs);
  EXPECT_NEAR(dynamic.latency, 17e-6, 1e-12);
  EXPECT_NEAR(dynamic.start[4], 5e-6, 1e-12);  // Z first
  EXPECT_NEAR(dynamic.start[3], 6e-6, 1e-12);  // then Y
  EXPECT_NEAR(dynamic.start[5], 7e-6, 1e-12);  // then V
  EXPECT_NEAR(dynamic.start[6], 7e-6, 1e-12);

  const Measurement m = measure_placement(g, c, placement, EngineSet::of({kEvaluator, kSimGrid}), RunOrder::Fcfs);
  EXPECT_NEAR(*m.latency(kEvaluator), 18e-6, 1e-12);
  EXPECT_NEAR(m.latency(kSimGrid).value_or(0), 17e-6, 1e-12);
}

// On a profiled graph dealt round-robin over 4 GPUs: the FCFS order is a valid order (replay_order
// checks every operator is listed once, on its GPU, without deadlock) whose replay is the FCFS
// schedule to the bit, is not the scheduler's, and its latency is at least the lower bounds, in the
// evaluator and in SimGrid (which picks by the arrival times it simulates, so its order, and
// latency, may differ either way).
TEST(FcfsOrder, OnARealGraphIsAValidOrderOtherThanTheSchedulers) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/small.json").graph;
  const Cluster c = testutil::dedicated_mesh(4, 20e9);
  std::vector<DeviceId> placement(g.num_operators());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = static_cast<DeviceId>(i % 4);
  Evaluator evaluator(g, c);
  const Schedule fcfs = evaluator.schedule(placement, GpuQueue::Fcfs);
  const Schedule replay = replay_order(g, c, placement, fcfs.device_order);
  EXPECT_EQ(fcfs.start, replay.start);
  EXPECT_EQ(fcfs.finish, replay.finish);
  EXPECT_EQ(fcfs.busy, replay.busy);
  EXPECT_EQ(fcfs.latency, replay.latency);
  const Schedule scheduler = evaluator.schedule(placement);
  EXPECT_NE(fcfs.device_order, scheduler.device_order);
  EXPECT_GE(fcfs.latency, evaluator.lower_bounds().best() * (1 - 1e-12));
  const Measurement m = measure_placement(g, c, placement, EngineSet::of({kEvaluator, kSimGrid}), RunOrder::Fcfs);
  EXPECT_DOUBLE_EQ(*m.latency(kEvaluator), fcfs.latency);
  ASSERT_TRUE(m.latency(kSimGrid).has_value());
  EXPECT_EQ(m.runs.find(kSimGrid)->network->start.size(), g.num_operators());
  EXPECT_GE(*m.latency(kSimGrid), evaluator.lower_bounds().best() * (1 - 1e-12));
}

// A sweep over GPU counts and per-GPU order on a profiled graph: every point runs, nothing beats
// the critical path, and with the scheduler's order SimGrid is never below the evaluator.
TEST(SweepRunner, SweepsAProfiledGraphOverGpusAndOrder) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const fs::path dir = temp_dir("real");
  const std::string yaml = "graph: {file: " + testutil::shared_graphs() + "/quickp/small.json}\n" +
                           "cluster: {type: nvlink-servers, gpus: 2}\n"
                           "strategies: [round-robin, metis]\n"
                           "simulation: {engine: both, trace: false}\n"
                           "sweep:\n"
                           "  cluster.gpus: [2, 4]\n"
                           "  simulation.order: [scheduler, fcfs]\n";
  SweepOptions options;
  options.output = dir.string();
  options.jobs = 2;
  ASSERT_EQ(run_sweep_in_child(yaml, options), 0);
  const auto records = read_result_lines((dir / "results.jsonl").string());
  ASSERT_EQ(records.size(), 8u);
  for (const auto& r : records) {
    ASSERT_EQ(r.status, PointStatus::Ok) << to_json(r).dump();
    const PointMeasurement& m = *r.measurement;
    const double evaluator = m.latency(kEvaluator).value(), simgrid = m.latency(kSimGrid).value();
    // With the scheduler's order SimGrid runs the evaluator's order under contention: never faster.
    // With FCFS each picks by its own arrival times, so either may be ahead.
    if (r.order == RunOrder::Scheduler) {
      EXPECT_GE(simgrid, evaluator * (1 - 1e-9)) << r.key;
    }
    EXPECT_GE(simgrid, m.bounds.critical_path * (1 - 1e-12)) << r.key;
    EXPECT_GE(evaluator, m.bounds.critical_path * (1 - 1e-12)) << r.key;
    EXPECT_EQ(enum_name<RunOrder>(kRunOrderNames, r.order), r.sweep_value("simulation.order")->text) << r.key;
    EXPECT_EQ(r.gpus, r.sweep_value("cluster.gpus")->quantity->value) << r.key;
  }
  fs::remove_all(dir);
}

TEST(SweepPlan, TheExampleSweepFileExpands) {
  // 3 bandwidths x 3 GPU counts x (metis per seed, heft once, mcmc per seed) = 45 points.
  const SweepPlan p = load_sweep(std::string(PLACESIM_TEST_SOURCE_DIR) + "/scenarios/sweep.yaml");
  EXPECT_EQ(p.variants.size(), 9u);
  EXPECT_EQ(p.points.size(), 45u);
  EXPECT_EQ(p.variants[8].cluster.num_devices(), 6);
  EXPECT_EQ(p.points[44].key, "cluster.ethernet_bandwidth=20GB/s cluster.gpus=6 strategy=mcmc seed=2 rep=0");
}
