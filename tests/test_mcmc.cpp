#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>

#include "placement/strategies/mcmc/mcmc.h"
#include "placement/strategies/round_robin/round_robin.h"
#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/engines/cost_model.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

// 20 GB/s and 100 kB tensors: every cross-GPU transfer takes exactly 5 us, as in Fig. 3.1.
constexpr double kBw = 20e9;
constexpr double kBytes = 5e-6 * kBw;
constexpr double kInf = std::numeric_limits<double>::infinity();

PlacementResult run_mcmc(const Graph& g, const Cluster& c, const std::string& options) {
  auto strategy = make_strategy("mcmc", YAML::Load(options), "test.yaml", "strategies[0]");
  return strategy->place(g, c);  // also validates size, GPUs and colocation
}

Graph small_synthetic() {
  SyntheticGraphConfig cfg;
  cfg.layers = 4;
  return synthetic_training_graph(cfg);
}

// A chain op0 -> ... -> op4 taking 1..5 s, 3-byte tensors at 1 B/s: any cut adds 3 s.
Graph chain_graph() {
  Graph g;
  for (int i = 0; i < 5; ++i) g.add_operator({"op" + std::to_string(i), "op", 1.0 + i, 0});
  for (int i = 0; i + 1 < 5; ++i) g.add_tensor(i, i + 1, 3.0);
  g.finalize("chain");
  return g;
}

}  // namespace

TEST(EvaluatorCutoff, Fig31HandValues) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  // {A,B} on gpu0, C on gpu1: 15 us (test_evaluator.cpp derives it).
  const std::vector<DeviceId> split = {0, 0, 1};
  const double l = ev.latency(split);  // 15 us up to rounding (5e-6 + 10e-6 is not 15e-6 exactly)
  EXPECT_NEAR(l, 15e-6, 1e-15);
  EXPECT_EQ(ev.latency_with_cutoff(split, l), l);
  EXPECT_EQ(ev.latency_with_cutoff(split, 1.0), l);
  EXPECT_EQ(ev.latency_with_cutoff(split, 14.9e-6), kInf);
  // A alone on gpu1: A 0-5 us, its rank is 15 us, so even the start of A at 0 proves nothing;
  // B's input arrives at 10 us and B's rank is 10 us, so a 19 us cutoff fails at that arrival.
  const std::vector<DeviceId> apart = {1, 0, 0};
  EXPECT_NEAR(ev.latency(apart), 25e-6, 1e-15);
  EXPECT_EQ(ev.latency_with_cutoff(apart, 19e-6), kInf);
  EXPECT_EQ(ev.latency_with_cutoff(apart, 0.0), kInf);
}

TEST(EvaluatorCutoff, EqualsLatencyAtOrAboveItAndInfinityBelow) {
  SyntheticGraphConfig cfg;
  cfg.layers = 6;
  const Graph g = synthetic_training_graph(cfg);
  NvlinkServersConfig nv;
  nv.gpus = 4;
  Cluster c = make_nvlink_servers(nv);
  c.finalize("test");
  Evaluator ev(g, c);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<DeviceId> p(g.num_operators());
    // Mix of random placements and mostly-one-GPU ones (the shapes MCMC evaluates).
    for (auto& d : p) d = static_cast<DeviceId>(trial % 2 ? rng() % 4 : (rng() % 10 == 0 ? rng() % 4 : 0));
    const double l = ev.latency(p);
    ASSERT_GT(l, 0);
    EXPECT_EQ(ev.latency_with_cutoff(p, l), l);
    EXPECT_EQ(ev.latency_with_cutoff(p, l * 1.01), l);
    EXPECT_EQ(ev.latency_with_cutoff(p, kInf), l);
    EXPECT_EQ(ev.latency_with_cutoff(p, std::nextafter(l, 0.0)), kInf);
    EXPECT_EQ(ev.latency_with_cutoff(p, l * 0.9), kInf);
    EXPECT_EQ(ev.latency_with_cutoff(p, 0.0), kInf);
    // An aborted run leaves nothing behind in the workspace.
    EXPECT_EQ(ev.latency(p), l);
    EXPECT_EQ(ev.schedule(p).latency, l);
  }
}

TEST(Mcmc, Fig31FindsThe15usSplit) {
  // From all on gpu0 (20 us), moving C to gpu1 gives 15 us (A 0-5, B 5-15 on gpu0; C's input
  // arrives at 10, C 10-15 on gpu1), the two-GPU optimum (test_evaluator.cpp, exhaustively).
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  for (const char* options : {"{steps: 300}", "{steps: 300, seed: 9}", "{steps: 300, greedy: true}",
                              "{steps: 300, init: random, seed: 4}"}) {
    PlacementResult r = run_mcmc(g, c, options);
    EXPECT_NEAR(ev.latency(r.placement), 15e-6, 1e-15) << options;
    EXPECT_NEAR(r.details["best_latency_s"].get<double>(), 15e-6, 1e-15) << options;
    EXPECT_EQ(r.details["steps"].get<long>(), 300) << options;
    EXPECT_GT(r.details["steps_per_second"].get<double>(), 0) << options;
  }
  PlacementResult r = run_mcmc(g, c, "{steps: 300, init: single-device}");
  EXPECT_NEAR(r.details["initial_latency_s"].get<double>(), 20e-6, 1e-15);
  // The default start is one GPU, as the thesis starts the chain.
  EXPECT_NEAR(run_mcmc(g, c, "{steps: 0}").details["initial_latency_s"].get<double>(), 20e-6, 1e-15);
  // From the portfolio's best: HEFT already finds the split (C on gpu1 at 10 us), and the result
  // says where the chain started.
  PlacementResult p = run_mcmc(g, c, "{steps: 0, init: portfolio}");
  EXPECT_NEAR(p.details["initial_latency_s"].get<double>(), 15e-6, 1e-15);
  EXPECT_NE(p.details["start"].get<std::string>(), "single-device");
  EXPECT_EQ(p.facts.warm_start, p.details["start"].get<std::string>());
  EXPECT_NEAR(p.details["portfolio"]["single-device"].get<double>(), 20e-6, 1e-15);
}

TEST(Mcmc, ChainKeepsSingleDeviceLatency) {
  // QuickP Theorem 1: every cut of a chain adds a 3 s transfer, so nothing beats one GPU (15 s).
  // A hot chain (beta 5: a 20% worse move is accepted with probability e^-1) wanders into worse
  // placements, but the best one seen is the start.
  Graph g = chain_graph();
  Cluster c = testutil::dedicated_mesh(3, 1.0);
  Evaluator ev(g, c);
  PlacementResult r = run_mcmc(g, c, "{steps: 500, beta: 5}");
  EXPECT_DOUBLE_EQ(ev.latency(r.placement), 15.0);
  EXPECT_GT(r.details["accepted"].get<long>(), 0);
  EXPECT_GT(r.details["final_latency_s"].get<double>(), 15.0);  // it did leave, and came back with the best
}

TEST(Mcmc, SameSeedSamePlacementAndCutoffChangesNothing) {
  const Graph g = small_synthetic();
  Cluster c = testutil::dedicated_mesh(4, 10e9, 2e-6);
  PlacementResult a = run_mcmc(g, c, "{steps: 1500, seed: 7}");
  PlacementResult b = run_mcmc(g, c, "{steps: 1500, seed: 7}");
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.details["accepted"], b.details["accepted"]);
  // The cutoff only skips work: the chain and its answer are identical without it.
  PlacementResult full = run_mcmc(g, c, "{steps: 1500, seed: 7, cutoff: false}");
  EXPECT_EQ(a.placement, full.placement);
  EXPECT_EQ(a.details["accepted"], full.details["accepted"]);
  EXPECT_EQ(a.details["final_cost_s"], full.details["final_cost_s"]);
  EXPECT_GT(a.details["evaluations_cut_off"].get<long>(), 0);
  EXPECT_EQ(full.details["evaluations_cut_off"].get<long>(), 0);
  PlacementResult other = run_mcmc(g, c, "{steps: 1500, seed: 8}");
  EXPECT_NE(a.placement, other.placement);
}

TEST(Mcmc, GreedyNeverAcceptsAWorseMove) {
  // The greedy chain never steps up, so where it ends is its best; a hot chain ends above it.
  const Graph g = small_synthetic();
  Cluster c = testutil::dedicated_mesh(4, 10e9, 2e-6);
  PlacementResult greedy = run_mcmc(g, c, "{steps: 1500, greedy: true, init: random}");
  EXPECT_EQ(greedy.details["final_cost_s"].get<double>(), greedy.details["best_cost_s"].get<double>());
  EXPECT_LT(greedy.details["best_cost_s"].get<double>(), greedy.details["initial_latency_s"].get<double>());
  EXPECT_EQ(greedy.details["beta"], "inf");
  PlacementResult inf_beta = run_mcmc(g, c, "{steps: 1500, beta: inf, init: random}");
  EXPECT_EQ(inf_beta.placement, greedy.placement);
  PlacementResult hot = run_mcmc(g, c, "{steps: 1500, beta: 5, init: random}");
  EXPECT_GT(hot.details["final_cost_s"].get<double>(), hot.details["best_cost_s"].get<double>());
}

TEST(Mcmc, ColocationClassesMoveAsAUnit) {
  // Two independent chains x1 -> x2 and y1 -> y2 of 10 s operators; each chain is a colocation
  // class (members listed interleaved). One GPU: 40 s. Splitting a class is not allowed, and the
  // only improvement is moving a whole class: 20 s.
  Graph g;
  g.add_operator({"x1", "op", 10, 0, 0});
  g.add_operator({"y1", "op", 10, 0, 1});
  g.add_operator({"x2", "op", 10, 0, 0});
  g.add_operator({"y2", "op", 10, 0, 1});
  g.add_tensor(0, 2, 1.0);
  g.add_tensor(1, 3, 1.0);
  g.finalize("classes");
  Cluster c = testutil::dedicated_mesh(2, 1.0);
  Evaluator ev(g, c);
  for (const char* options : {"{steps: 50}", "{steps: 50, init: random, seed: 3}", "{steps: 50, init: round-robin}"}) {
    PlacementResult r = run_mcmc(g, c, options);  // Strategy::place throws if a class were split
    EXPECT_EQ(r.placement[0], r.placement[2]) << options;
    EXPECT_EQ(r.placement[1], r.placement[3]) << options;
    EXPECT_NE(r.placement[0], r.placement[1]) << options;
    EXPECT_DOUBLE_EQ(ev.latency(r.placement), 20.0) << options;
    EXPECT_EQ(r.details["proposable_units"].get<long>(), 2) << options;
  }
}

TEST(Mcmc, MemoryPenaltySteersAwayFromOverflow) {
  // a (1 s, 6 B) -> b (1 s, 6 B) with a 1-byte tensor at 1 B/s; GPUs hold 10 B.
  // One GPU: latency 2 s but 12 B on a 10 B GPU, overflow 2 B of 12 B; with memory_penalty 10
  // its cost is 2 * (1 + 10 * 2/12) = 5.33. Split: 1 + 1 + 1 = 3 s and no overflow: cost 3.
  // Without the penalty the split is just slower, and the search stays on one GPU.
  Graph g;
  g.add_operator({"a", "op", 1, 6});
  g.add_operator({"b", "op", 1, 6});
  g.add_tensor(0, 1, 1.0);
  g.finalize("memory");
  Cluster c = testutil::dedicated_mesh(2, 1.0, 0.0, 10.0);
  PlacementResult fits = run_mcmc(g, c, "{steps: 100}");
  EXPECT_NE(fits.placement[0], fits.placement[1]);
  EXPECT_DOUBLE_EQ(fits.details["best_latency_s"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(fits.details["best_memory_overflow_bytes"].get<double>(), 0.0);
  // Blind to memory the chain ends on one GPU (2 s, 2 B over); Strategy::place then returns the
  // portfolio's best placement that fits (the split, 3 s) and says so.
  PlacementResult blind = run_mcmc(g, c, "{steps: 100, memory_penalty: 0}");
  ASSERT_TRUE(blind.details.contains("memory_fallback")) << blind.details.dump();
  EXPECT_DOUBLE_EQ(blind.details["own_answer"]["best_latency_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(blind.details["own_answer"]["best_memory_overflow_bytes"].get<double>(), 2.0);
  EXPECT_NE(blind.placement[0], blind.placement[1]);
  EXPECT_DOUBLE_EQ(Evaluator(g, c).latency(blind.placement), 3.0);
}

TEST(Mcmc, NeverWorseThanItsStart) {
  const Graph g = small_synthetic();
  Cluster c = testutil::dedicated_mesh(4, 10e9, 2e-6);
  Evaluator ev(g, c);
  const double single = ev.latency(std::vector<DeviceId>(g.num_operators(), 0));
  const double rr = ev.latency(RoundRobin(RoundRobinConfig{}).place(g, c).placement);
  for (const char* options : {"{steps: 800, beta: 2, init: single-device}", "{steps: 800, beta: 2, seed: 5, init: single-device}"}) {
    PlacementResult r = run_mcmc(g, c, options);
    EXPECT_EQ(r.details["initial_latency_s"].get<double>(), single);
    EXPECT_LE(ev.latency(r.placement), single) << options;
  }
  // From the portfolio: never worse than any of its strategies.
  PlacementResult from_portfolio = run_mcmc(g, c, "{steps: 800, beta: 2}");
  for (const auto& [name, latency] : from_portfolio.details["portfolio"].items())
    EXPECT_LE(ev.latency(from_portfolio.placement), latency.get<double>()) << name;
  PlacementResult r = run_mcmc(g, c, "{steps: 800, beta: 2, init: round-robin}");
  EXPECT_EQ(r.details["initial_latency_s"].get<double>(), rr);
  EXPECT_LT(ev.latency(r.placement), rr);
}

TEST(Mcmc, TimeLimitStopsTheSearch) {
  const Graph g = small_synthetic();
  Cluster c = testutil::dedicated_mesh(4, 10e9, 2e-6);
  PlacementResult r = run_mcmc(g, c, "{steps: 100000000, time_limit: 200ms}");
  EXPECT_EQ(r.details["stopped_by"], "time_limit");
  EXPECT_LT(r.details["steps"].get<long>(), 100000000);
  PlacementResult s = run_mcmc(g, c, "{steps: 10, time_limit: 10s}");
  EXPECT_EQ(s.details["stopped_by"], "steps");
}

TEST(Mcmc, OneGpuOrNothingToMoveReturnsTheStart) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster one = testutil::dedicated_mesh(1, kBw);
  PlacementResult r = run_mcmc(g, one, "{steps: 100}");
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0}));
  EXPECT_EQ(r.details["steps"].get<long>(), 0);
  // Zero-compute operators without tensors cannot change the latency: nothing is proposed.
  Graph idle;
  idle.add_operator({"p", "op", 0, 0});
  idle.add_operator({"q", "op", 0, 0});
  idle.finalize("idle");
  Cluster two = testutil::dedicated_mesh(2, kBw);
  PlacementResult s = run_mcmc(idle, two, "{steps: 100}");
  EXPECT_EQ(s.details["proposable_units"].get<long>(), 0);
  EXPECT_EQ(s.details["steps"].get<long>(), 0);
}

TEST(Mcmc, BadOptionsNameTheField) {
  Graph g = testutil::fig31_graph(kBytes);
  struct Case {
    const char* yaml;
    const char* field;
  };
  for (const Case& k : {Case{"{init: middle}", "options.init"}, Case{"{beta: -1}", "options.beta"},
                        Case{"{beta: 0}", "options.beta"}, Case{"{beta: hot}", "options.beta"},
                        Case{"{greedy: true, beta: 5}", "options.beta"}, Case{"{greedy: maybe}", "options.greedy"},
                        Case{"{steps: -5}", "options.steps"}, Case{"{steps: many}", "options.steps"},
                        Case{"{time_limit: 0s}", "options.time_limit"}, Case{"{time_limit: soon}", "options.time_limit"},
                        Case{"{seed: -1}", "options.seed"}, Case{"{memory_penalty: -1}", "options.memory_penalty"},
                        Case{"{zero_compute_weight: -0.5}", "options.zero_compute_weight"},
                        Case{"{cutoff: 3}", "options.cutoff"}, Case{"{betta: 5}", "options.betta"}}) {
    EXPECT_INPUT_ERROR(make_strategy("mcmc", YAML::Load(k.yaml), "test.yaml", "strategies[0]"), k.field,
                       "test.yaml: ") << k.yaml;
  }
  EXPECT_NO_THROW(make_strategy("mcmc", YAML::Load("{beta: inf, steps: 0, init: round-robin, time_limit: 2s}"),
                                "test.yaml", "strategies[0]"));
}

TEST(Mcmc, AlexNetOnFourGpusBeatsOneGpuAndCutoffIsExact) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/alexnet.json").graph;
  NvlinkServersConfig nv;
  nv.gpus = 4;
  Cluster c = make_nvlink_servers(nv);
  c.finalize("quickp");
  Evaluator ev(g, c);
  const double single = ev.latency(std::vector<DeviceId>(g.num_operators(), 0));
  PlacementResult r = run_mcmc(g, c, "{steps: 400, init: single-device}");
  PlacementResult full = run_mcmc(g, c, "{steps: 400, cutoff: false, init: single-device}");
  EXPECT_EQ(r.placement, full.placement);
  EXPECT_LT(ev.latency(r.placement), single);
  EXPECT_EQ(r.details["initial_latency_s"].get<double>(), single);
}

TEST(Mcmc, PolishTakesTheMovesDownTheChainLeftUntaken) {
  // Fig. 3.1 on 2 GPUs with no step of the chain, from one GPU: A 5, B 10, C 5 us in a row is
  // 20 us. The polish moves C to the other GPU: A 0-5, B 5-15 on one, C 10-15 (its input at
  // 5 + 5) on the other: 15 us, the critical path A -> B. Without it the start is the answer.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  const PlacementResult polished = run_mcmc(g, c, "{steps: 0, init: single-device}");
  EXPECT_NEAR(Evaluator(g, c).latency(polished.placement), 15e-6, 1e-12);
  EXPECT_NEAR(polished.details["polish"]["start_latency_s"].get<double>(), 20e-6, 1e-12);
  // With no chain its budget is the floor, 320 candidates (20 rounds of 16).
  EXPECT_LE(polished.details["polish"]["evaluations"].get<long>(), 320);
  const PlacementResult chain_only = run_mcmc(g, c, "{steps: 0, init: single-device, polish: 0}");
  EXPECT_NEAR(Evaluator(g, c).latency(chain_only.placement), 20e-6, 1e-12);
  EXPECT_FALSE(chain_only.details.contains("polish"));
}

namespace {

// Searching the flow model, MCMC is never worse under it than its list search with the same seed
// and steps (whose answer it keeps as a candidate): on an oversubscribed spine-leaf, where the two
// models disagree.
TEST(Mcmc, FlowSearchIsNeverWorseUnderFlowThanTheListSearch) {
  const Graph g = small_synthetic();
  const Cluster c = cluster_from_yaml(
      YAML::Load("{type: spine-leaf, leaves: 2, servers_per_leaf: 2, spines: 1, gpus_per_server: 2, "
                 "nic_bandwidth: 1Gbps, oversubscription: 4}"),
      "t");
  for (int seed : {1, 2, 3}) {
    const std::string options = fmt::format("{{steps: 200, seed: {}}}", seed);
    const PlacementResult list = run_mcmc(g, c, options);
    const PlacementResult flow = run_mcmc(g, c, fmt::format("{{steps: 200, seed: {}, cost_model: flow}}", seed));
    CostModel model(g, c, CostModelKind::Flow);
    EXPECT_LE(model.latency(flow.placement), model.latency(list.placement) * (1 + 1e-12)) << seed;
    ASSERT_TRUE(flow.details.contains("list_search")) << seed;
    EXPECT_DOUBLE_EQ(flow.details["list_search"]["flow_latency_s"].get<double>(), model.latency(list.placement)) << seed;
  }
}

}  // namespace
