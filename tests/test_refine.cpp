// `refine:` (placement/stages/refine/refine.h): the local search that follows a strategy. Answers by
// hand on two independent chains; on random graphs and every fabric it never ends worse than it
// started; its result does not depend on the thread count; memory that fit keeps fitting. And the
// scenario key: its parse errors, and a run that reports it.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "placement/stages/refine/refine.h"
#include "scenarios/runner/scenario.h"
#include "sim/engines/cost_model.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/io/placement_io.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

using namespace placesim;
using namespace placesim::testutil;
namespace fs = std::filesystem;

namespace {

constexpr double kOpSeconds = 10e-6;
constexpr double kOpBytes = 1e9;
enum Op : OpId { A0, A1, B0, B1 };

// Two independent chains a0 -> a1 and b0 -> b1: four operators of 10 us and 1 GB each, 1 kB
// tensors. With `chain_b_colocated`, b0 and b1 form one colocation class (one unit).
Graph two_chains(bool chain_b_colocated = false) {
  Graph g;
  const std::int32_t b_class = chain_b_colocated ? 0 : -1;
  g.add_operator({"a0", "op", kOpSeconds, kOpBytes});
  g.add_operator({"a1", "op", kOpSeconds, kOpBytes});
  g.add_operator({"b0", "op", kOpSeconds, kOpBytes, b_class});
  g.add_operator({"b1", "op", kOpSeconds, kOpBytes, b_class});
  g.add_tensor(A0, A1, 1e3);
  g.add_tensor(B0, B1, 1e3);
  g.finalize("two chains");
  return g;
}

// Two single-GPU servers (GPU i on server i) on a non-blocking switch; GPU 1 holds `gpu1_memory`.
Cluster two_servers(const std::string& gpu1_memory) {
  return cluster_from_yaml(
      YAML::Load("{type: non-blocking, servers: 2, gpus_per_server: 1, nic_bandwidth: 1GB/s, gpu_memory: 16GB, "
                 "server_overrides: [{server: 1, gpu_memory: " +
                 gpu1_memory + "}]}"),
      "test");
}

// Parses bad.yaml: fig3.1 on 2 GPUs, with `strategy` (YAML flow) its one strategy entry.
void parse_with_strategy(const std::string& strategy) {
  parse_scenario(
      YAML::Load("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [" + strategy + "]\n"),
      "bad.yaml");
}

}  // namespace

// All four operators on GPU 0 run one after another: 40 us. One chain per GPU runs both chains
// side by side with no transfer: 20 us, the work bound (40 us of work on 2 GPUs), and the only
// placements that reach it (a chain split across the GPUs waits for its tensor: at least 21 us).
// Moving one operator at a time gets there: a leaf to GPU 1 gives 31 us, then its root 20 us.
TEST(Refine, MovesOneChainAndHalvesTheLatency) {
  const Graph g = two_chains();
  const Cluster c = dedicated_mesh(2, 1e9);
  for (const CostModelKind kind : {CostModelKind::List, CostModelKind::Flow}) {
    SCOPED_TRACE(cost_model_name(kind));
    const RefineResult r = refine_placement(g, c, {0, 0, 0, 0}, RefineConfig{}, kind);
    EXPECT_EQ(r.cost_model, kind);
    EXPECT_NEAR(r.start_latency, 40e-6, 1e-15);
    EXPECT_NEAR(r.latency, 20e-6, 1e-15);
    EXPECT_EQ(r.placement[A0], r.placement[A1]);
    EXPECT_EQ(r.placement[B0], r.placement[B1]);
    EXPECT_NE(r.placement[A0], r.placement[B0]);
    EXPECT_GE(r.improvements, 2) << "no single move of one operator reaches 20 us";
    // 20 us cannot be beaten, so `patience` rounds without an improvement end it, long before
    // the 2,000 steps.
    EXPECT_EQ(r.stopped_by, RefineStop::Converged);
    EXPECT_LT(r.evaluations, RefineConfig{}.steps);
    EXPECT_GE(r.rounds, r.improvements + RefineConfig{}.patience);
  }
}

// A colocation class moves as a whole: chain b is one unit, which goes to GPU 1 in one move.
TEST(Refine, MovesAColocationClassAsAWhole) {
  const Graph g = two_chains(/*chain_b_colocated=*/true);
  const Cluster c = dedicated_mesh(2, 1e9);
  const RefineResult r = refine_placement(g, c, {0, 0, 0, 0}, RefineConfig{}, CostModelKind::List);
  validate_placement(g, c, r.placement, "refine");
  EXPECT_NEAR(r.latency, 20e-6, 1e-15);
  EXPECT_EQ(r.placement[B0], r.placement[B1]);
  EXPECT_NE(r.placement[A0], r.placement[B0]);
}

// GPU 1 holds 1.5 GB: one 1 GB operator. Of the placements that fit, one root on GPU 1 is best
// (30 us: its chain's leaf waits on GPU 0 behind the other chain, 10 + 10 + 10 us); a leaf there
// gives 31 us. With room on GPU 1 the same search reaches 20 us (above).
TEST(Refine, APlacementThatFitsKeepsFitting) {
  const Graph g = two_chains();
  const Cluster c = two_servers("1.5GB");
  const RefineResult r = refine_placement(g, c, {0, 0, 0, 0}, RefineConfig{}, CostModelKind::List);
  EXPECT_NEAR(r.latency, 30e-6, 1e-15);
  const std::vector<double> memory = device_memory(g, r.placement, 2);
  EXPECT_EQ(memory[1], kOpBytes) << "GPU 1 takes exactly one operator";
  EXPECT_TRUE(r.placement[A0] == 1 || r.placement[B0] == 1) << "the one on GPU 1 is a root";

  const RefineResult roomy = refine_placement(g, two_servers("16GB"), {0, 0, 0, 0}, RefineConfig{}, CostModelKind::List);
  EXPECT_NEAR(roomy.latency, 20e-6, 1e-15) << "the limit, not the search, stopped it at 30 us";
}

// Starts that overflow GPU 1, which holds 0.5 GB: moving off it is always allowed, moving onto it
// never (its overflow would grow).
//  - All four operators (4 GB) on GPU 1: refine moves one chain to GPU 0 and reaches 20 us with
//    GPU 1 still over, by 1.5 GB instead of 3.5 GB.
//  - Root a0 on GPU 1, the rest on GPU 0 (30 us, as above): 20 us needs a1 on GPU 1 too, so the
//    start stays (moving a0 back gives 40 us, a swap 30 or 31 us).
TEST(Refine, AnOverflowingStartNeverOverflowsMore) {
  const Graph g = two_chains();
  const Cluster c = two_servers("0.5GB");
  const RefineResult all_on_1 = refine_placement(g, c, {1, 1, 1, 1}, RefineConfig{}, CostModelKind::List);
  EXPECT_NEAR(all_on_1.latency, 20e-6, 1e-15);
  EXPECT_EQ(device_memory(g, all_on_1.placement, 2), (std::vector<double>{2 * kOpBytes, 2 * kOpBytes}));

  const RefineResult root_on_1 = refine_placement(g, c, {1, 0, 0, 0}, RefineConfig{}, CostModelKind::List);
  EXPECT_NEAR(root_on_1.latency, 30e-6, 1e-15);
  EXPECT_EQ(root_on_1.improvements, 0);
  EXPECT_EQ(device_memory(g, root_on_1.placement, 2)[1], kOpBytes);
}

// On random graphs, every fabric of the registry (each key's example too) and both cost models:
// the start and final latencies are the cost model's for those placements, the final one is no
// worse, the placement is valid and no GPU overflows (the random starts fit).
TEST(Refine, NeverWorseThanTheStartOnRandomGraphsAndEveryFabric) {
  std::mt19937 rng(14);
  RefineConfig config;
  config.steps = 48;
  config.batch = 8;
  config.threads = 2;
  for (const auto& [type, yaml] : registry_variants()) {
    SCOPED_TRACE(yaml);
    const Cluster c = cluster_from_yaml(YAML::Load(yaml), "test");
    const Graph g = random_dag(rng, 30);
    const std::vector<DeviceId> start = random_placement(rng, g, c);
    for (const CostModelKind kind : {CostModelKind::List, CostModelKind::Flow}) {
      SCOPED_TRACE(cost_model_name(kind));
      config.seed = rng();
      const RefineResult r = refine_placement(g, c, start, config, kind);
      CostModel model(g, c, kind);
      EXPECT_EQ(r.start_latency, model.latency(start));
      EXPECT_EQ(r.latency, model.latency(r.placement));
      EXPECT_LE(r.latency, r.start_latency);
      EXPECT_EQ(r.latency < r.start_latency, r.improvements > 0);
      EXPECT_LE(r.evaluations, config.steps);
      validate_placement(g, c, r.placement, "refine");
      const std::vector<double> memory = device_memory(g, r.placement, c.num_devices());
      for (int d = 0; d < c.num_devices(); ++d) EXPECT_LE(memory[d], c.device(d).memory_bytes) << "GPU " << d;
    }
  }
}

// The candidates are drawn serially and the best is chosen by (latency, draw order), so the
// thread count changes nothing: 1, 2 and 3 threads give the same search (3 runs as many as the
// machine has).
TEST(Refine, OneTwoAndThreeThreadsGiveTheSamePlacement) {
  std::mt19937 rng(7);
  const Cluster c = cluster_from_yaml(YAML::Load("{type: fat-tree, k: 4, servers: 4, gpus_per_server: 2}"), "test");
  const Graph g = random_dag(rng, 60);
  const std::vector<DeviceId> start = random_placement(rng, g, c);
  for (const CostModelKind kind : {CostModelKind::List, CostModelKind::Flow}) {
    SCOPED_TRACE(cost_model_name(kind));
    RefineConfig config;
    config.threads = 1;
    config.steps = 300;
    config.batch = 8;
    config.patience = 1000;
    const RefineResult one = refine_placement(g, c, start, config, kind);
    ASSERT_GT(one.improvements, 0) << "a search that changes nothing would prove nothing";
    EXPECT_EQ(one.threads, 1);
    for (const int threads : {2, 3}) {
      config.threads = threads;
      const RefineResult many = refine_placement(g, c, start, config, kind);
      EXPECT_GE(many.threads, 1);
      EXPECT_LE(many.threads, threads);
      EXPECT_EQ(many.placement, one.placement) << threads << " threads";
      EXPECT_EQ(many.latency, one.latency) << threads << " threads";
      EXPECT_EQ(many.evaluations, one.evaluations) << threads << " threads";
      EXPECT_EQ(many.improvements, one.improvements) << threads << " threads";
    }
  }
}

TEST(Refine, ZeroStepsReturnsTheStart) {
  const Graph g = two_chains();
  RefineConfig config;
  config.steps = 0;
  const RefineResult r = refine_placement(g, dedicated_mesh(2, 1e9), {0, 0, 0, 0}, config, CostModelKind::Flow);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 0}));
  EXPECT_EQ(r.evaluations, 0);
  EXPECT_EQ(r.rounds, 0);
  EXPECT_EQ(r.stopped_by, RefineStop::Steps);
  EXPECT_EQ(r.latency, r.start_latency);
}

// The time limit is checked before each round; one far below the time the start's evaluation
// took ends the search before its first round.
TEST(Refine, AnExpiredTimeLimitReturnsTheStart) {
  RefineConfig config;
  config.time_limit_s = 1e-15;
  const RefineResult r = refine_placement(two_chains(), dedicated_mesh(2, 1e9), {0, 0, 0, 0}, config, CostModelKind::List);
  EXPECT_EQ(r.stopped_by, RefineStop::TimeLimit);
  EXPECT_EQ(r.rounds, 0);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 0}));
}

// One GPU: nothing can move, so it stops at once, converged. The threads default to the machine's.
TEST(Refine, NothingToMoveOnOneGpu) {
  const RefineResult r = refine_placement(two_chains(), dedicated_mesh(1, 1e9), {0, 0, 0, 0}, RefineConfig{},
                                          CostModelKind::List);
  EXPECT_EQ(r.stopped_by, RefineStop::Converged);
  EXPECT_EQ(r.evaluations, 0);
  EXPECT_NEAR(r.latency, 40e-6, 1e-15);
  EXPECT_GE(r.threads, 1);
}

TEST(Refine, AStartOfTheWrongSizeIsABug) {
  EXPECT_THROW(refine_placement(two_chains(), dedicated_mesh(2, 1e9), {0, 0}, RefineConfig{}, CostModelKind::List),
               std::invalid_argument);
}

// Every key of the schema: its documented example parses and changes the config; `cost_model`
// is unset unless given.
TEST(Refine, EveryKeysExampleTakesEffect) {
  const OptionSchema<RefineConfig> schema = refine_schema();
  EXPECT_FALSE(schema.parse(YamlFields(YAML::Load("{}"), "s.yaml", "refine")).cost_model.has_value());
  std::set<std::string> keys;
  for (const OptionDoc& doc : schema.docs()) {
    SCOPED_TRACE(doc.key);
    keys.insert(doc.key);
    const RefineConfig parsed =
        schema.parse(YamlFields(YAML::Load(fmt::format("{{{}: {}}}", doc.key, doc.example)), "s.yaml", "refine"));
    EXPECT_NE(parsed, RefineConfig{});
  }
  EXPECT_EQ(keys, (std::set<std::string>{"steps", "time_limit", "cost_model", "batch", "threads", "swap_fraction",
                                         "patience", "seed"}));
  EXPECT_EQ(schema.parse(YamlFields(YAML::Load("{cost_model: flow}"), "s.yaml", "refine")).cost_model,
            CostModelKind::Flow);
}

// `refine:` in a scenario: parsed with the schema, so every bad key or value names the file and
// the field; `refine: {}` (or no value) takes the defaults.
TEST(Refine, ScenarioErrorsNameTheFileAndField) {
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: {stepz: 3}}"), "strategies[0].refine.stepz", "bad.yaml",
                     "unknown key; did you mean 'steps'?");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: {batch: 0}}"), "strategies[0].refine.batch", "bad.yaml",
                     "expected a whole number from 1");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: {cost_model: lists}}"), "strategies[0].refine.cost_model",
                     "bad.yaml", "list", "flow");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: {swap_fraction: 1.5}}"),
                     "strategies[0].refine.swap_fraction", "bad.yaml");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: {time_limit: -1s}}"), "strategies[0].refine.time_limit",
                     "bad.yaml");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refine: 100}"), "strategies[0].refine", "bad.yaml",
                     "expected a mapping");
  EXPECT_INPUT_ERROR(parse_with_strategy("{name: heft, refines: {}}"), "strategies[0].refines", "bad.yaml");

  const Scenario s = parse_scenario(
      YAML::Load("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies:\n"
                 "  - {name: heft, refine: {}}\n  - {name: metis, refine: }\n  - {name: random, refine: {steps: 5}}\n"
                 "  - round-robin\n"),
      "good.yaml");
  ASSERT_EQ(s.strategies.size(), 4u);
  EXPECT_EQ(s.strategies[0].refine, RefineConfig{});
  EXPECT_EQ(s.strategies[1].refine, RefineConfig{});
  ASSERT_TRUE(s.strategies[2].refine.has_value());
  EXPECT_EQ(s.strategies[2].refine->steps, 5);
  EXPECT_FALSE(s.strategies[3].refine.has_value());
}

// A run end to end: single-device puts both chains on GPU 0 (40 us); refine (list, the model of a
// strategy that does not search) moves one chain to GPU 1 (20 us, as above), which the evaluator
// then measures, and the refined placement is the one saved. A search strategy's `cost_model` is
// inherited unless `refine` names its own.
TEST(Refine, ScenarioRunReportsTheRefineStage) {
  const fs::path dir = fresh_temp_dir("refine-run");
  {
    Graph g = two_chains();
    save_placesim_json(g, (dir / "chains.json").string());
  }
  const std::string yaml = R"(
name: refined
graph: {file: chains.json}
cluster: {type: full-mesh, gpus: 2, bandwidth: 1GB/s}
strategies:
  - {name: single-device, refine: {threads: 2}}
  - {name: single-device, label: unrefined}
  - {name: mcmc, label: mcmc-flow, options: {steps: 10, cost_model: flow}, refine: {steps: 16}}
  - {name: mcmc, label: mcmc-list-refine, options: {steps: 10, cost_model: flow}, refine: {steps: 16, cost_model: list}}
simulation: {engine: evaluator, trace: false}
)";
  const SweepPlan plan = plan_sweep(YAML::Load(yaml), (dir / "refined.yaml").string());
  const std::vector<PointRecord> r = run_plan(plan, dir);
  ASSERT_EQ(r.size(), 4u);
  for (const auto& o : r) ASSERT_TRUE(o.measurement) << o.label << ": " << o.reason;

  const auto& refined = r[0].measurement->strategy_report.at("refine");
  EXPECT_EQ(refined.at("cost_model"), "list");
  EXPECT_NEAR(refined.at("start_latency_s").get<double>(), 40e-6, 1e-15);
  EXPECT_NEAR(refined.at("final_latency_s").get<double>(), 20e-6, 1e-15);
  EXPECT_EQ(refined.at("stopped_by"), "converged");
  EXPECT_GT(refined.at("evaluations").get<long>(), 0);
  EXPECT_GE(refined.at("improvements").get<long>(), 1);
  EXPECT_GE(refined.at("threads").get<int>(), 1);
  EXPECT_LE(refined.at("threads").get<int>(), 2);
  EXPECT_GE(r[0].measurement->search_time, refined.at("seconds").get<double>()) << "refine counts as search time";
  EXPECT_NEAR(r[0].measurement->latency(kEvaluator).value(), 20e-6, 1e-15);
  std::vector<std::string> warnings;
  const Graph g = load_graph_source(plan.variants.at(0).graph, plan.variants.at(0).file, warnings);
  const std::vector<DeviceId> saved = load_placement(g, (dir / r[0].measurement->placement_file).string());
  EXPECT_EQ(saved[A0], saved[A1]);
  EXPECT_EQ(saved[B0], saved[B1]);

  EXPECT_FALSE(r[1].measurement->strategy_report.contains("refine"));
  EXPECT_NEAR(r[1].measurement->latency(kEvaluator).value(), 40e-6, 1e-15);

  EXPECT_EQ(r[2].measurement->strategy_report.at("refine").at("cost_model"), "flow");
  EXPECT_EQ(r[3].measurement->strategy_report.at("refine").at("cost_model"), "list");
  fs::remove_all(dir);
}
