#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "tests/test_util.h"

using namespace placesim;

namespace {
// 20 GB/s and 100 kB tensors: every cross-GPU transfer takes exactly 5 us, as in Fig. 3.1.
constexpr double kBw = 20e9;
constexpr double kBytes = 5e-6 * kBw;
}  // namespace

TEST(Evaluator, Fig31OneGpuTakes20us) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  std::vector<DeviceId> one = {0, 0, 0};
  EXPECT_NEAR(ev.latency(one), 20e-6, 1e-15);
}

TEST(Evaluator, Fig31TwoGpusBestIs15us) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  // A and B together, C alone: A 0-5, B 5-15 on gpu0; C's input arrives at 10, C 10-15 on gpu1.
  std::vector<DeviceId> split = {0, 0, 1};
  Schedule s = ev.schedule(split);
  EXPECT_NEAR(s.latency, 15e-6, 1e-15);
  EXPECT_NEAR(s.start[2], 10e-6, 1e-15);
  EXPECT_NEAR(s.start[1], 5e-6, 1e-15);
  // A and C together, B alone: B's input arrives at 10 and it runs 10-20.
  std::vector<DeviceId> bad = {0, 1, 0};
  EXPECT_NEAR(ev.latency(bad), 20e-6, 1e-15);
  // Exhaustively, 15 us is the best two-GPU latency.
  double best = 1;
  for (int mask = 0; mask < 8; ++mask) {
    std::vector<DeviceId> p = {mask & 1, (mask >> 1) & 1, (mask >> 2) & 1};
    best = std::min(best, ev.latency(p));
  }
  EXPECT_NEAR(best, 15e-6, 1e-15);
}

TEST(Evaluator, BuiltinFig31MatchesTheTestGraph) {
  Graph g = fig31_graph(kBw);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  EXPECT_NEAR(ev.latency(std::vector<DeviceId>{0, 0, 1}), 15e-6, 1e-15);
}

TEST(Evaluator, HigherRankRunsFirstOnAGpu) {
  // Two independent chains on one GPU: x (1) -> y (10) and z (3). Ranks: x 11, z 3, y 10.
  Graph g;
  g.add_operator({"x", "op", 1, 0});
  g.add_operator({"y", "op", 10, 0});
  g.add_operator({"z", "op", 3, 0});
  g.add_tensor(0, 1, 0);
  g.finalize("t");
  Cluster c = testutil::dedicated_mesh(1, kBw);
  Evaluator ev(g, c);
  Schedule s = ev.schedule(std::vector<DeviceId>{0, 0, 0});
  EXPECT_EQ(s.device_order[0], (std::vector<OpId>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(s.start[2], 11);
  EXPECT_DOUBLE_EQ(s.latency, 14);
}

TEST(Evaluator, IdleGpuTakesWhatIsReadyInsteadOfWaiting) {
  // gpu1 runs b (rank high, input arrives late) and c (low rank, ready at 0): c must not wait.
  Graph g;
  g.add_operator({"a", "op", 2, 0});
  g.add_operator({"b", "op", 5, 0});
  g.add_operator({"c", "op", 1, 0});
  g.add_tensor(0, 1, 1.0);  // 1 byte at 1 B/s: 1 s
  g.finalize("t");
  Cluster c = testutil::dedicated_mesh(2, 1.0);
  Evaluator ev(g, c);
  Schedule s = ev.schedule(std::vector<DeviceId>{0, 1, 1});
  EXPECT_DOUBLE_EQ(s.start[2], 0);  // c runs 0-1 while b waits for its input (arrives at 3)
  EXPECT_DOUBLE_EQ(s.start[1], 3);
  EXPECT_DOUBLE_EQ(s.latency, 8);
}

TEST(Evaluator, LatencyAddsAlphaAndZeroByteTensorsAreFree) {
  Graph g;
  g.add_operator({"a", "op", 1, 0});
  g.add_operator({"b", "op", 1, 0});
  g.add_operator({"c", "op", 1, 0});
  g.add_tensor(0, 1, 4.0);  // 4 bytes at 2 B/s + 0.5 s alpha = 2.5 s
  g.add_tensor(0, 2, 0.0);  // control dependency: no cost across GPUs
  g.finalize("t");
  Cluster c = testutil::dedicated_mesh(3, 2.0, 0.5);
  Evaluator ev(g, c);
  Schedule s = ev.schedule(std::vector<DeviceId>{0, 1, 2});
  EXPECT_DOUBLE_EQ(s.start[1], 3.5);
  EXPECT_DOUBLE_EQ(s.start[2], 1.0);
  EXPECT_DOUBLE_EQ(s.latency, 4.5);
}

TEST(Evaluator, ChainIsBestOnOneDevice) {
  // QuickP Theorem 1: with no parallelizable pair, any cut only adds communication.
  Graph g;
  for (int i = 0; i < 5; ++i) g.add_operator({"op" + std::to_string(i), "op", 1.0 + i, 0});
  for (int i = 0; i + 1 < 5; ++i) g.add_tensor(i, i + 1, 3.0);
  g.finalize("chain");
  Cluster c = testutil::dedicated_mesh(2, 1.0);
  Evaluator ev(g, c);
  const double single = ev.latency(std::vector<DeviceId>(5, 0));
  EXPECT_DOUBLE_EQ(single, 15.0);
  for (int mask = 0; mask < 32; ++mask) {
    std::vector<DeviceId> p(5);
    for (int i = 0; i < 5; ++i) p[i] = (mask >> i) & 1;
    EXPECT_GE(ev.latency(p), single);
  }
}

TEST(Evaluator, LowerBoundsAndBookkeeping) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  Evaluator ev(g, c);
  EXPECT_NEAR(ev.lower_bounds().critical_path, 15e-6, 1e-15);
  EXPECT_NEAR(ev.lower_bounds().work_per_device, 10e-6, 1e-15);
  Schedule s = ev.schedule(std::vector<DeviceId>{0, 0, 1});
  EXPECT_NEAR(s.busy[0], 15e-6, 1e-15);
  EXPECT_NEAR(s.busy[1], 5e-6, 1e-15);
}

TEST(Evaluator, ReplayOfItsOwnOrderIsExact) {
  SyntheticGraphConfig cfg;
  cfg.layers = 6;
  Graph g = synthetic_training_graph(cfg);
  Cluster c = testutil::dedicated_mesh(4, 10e9, 2e-6);
  Evaluator ev(g, c);
  std::vector<DeviceId> p(g.num_operators());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<DeviceId>((i * 7919) % 4);
  Schedule s = ev.schedule(p);
  Schedule r = replay_order(g, c, p, s.device_order);
  EXPECT_EQ(r.latency, s.latency);
  for (std::size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(r.start[i], s.start[i]);
    EXPECT_EQ(r.finish[i], s.finish[i]);
  }
  EXPECT_EQ(ev.latency(p), s.latency);  // the fast path and the detailed path agree
  EXPECT_GE(s.latency, ev.lower_bounds().best());
}

TEST(Evaluator, ReplayDetectsADeadlockingOrder) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(1, kBw);
  std::vector<DeviceId> p = {0, 0, 0};
  EXPECT_THROW(replay_order(g, c, p, {{1, 0, 2}}), std::invalid_argument);
  EXPECT_THROW(replay_order(g, c, p, {{0, 2}}), std::invalid_argument);
}

TEST(Evaluator, ValidatePlacementNamesTheProblem) {
  Graph g;
  g.add_operator({"a", "op", 1, 0, 0});
  g.add_operator({"b", "op", 1, 0, 0});
  g.finalize("t");
  Cluster c = testutil::dedicated_mesh(2, 1.0);
  EXPECT_NO_THROW(validate_placement(g, c, std::vector<DeviceId>{1, 1}, "s"));
  EXPECT_INPUT_ERROR(validate_placement(g, c, std::vector<DeviceId>{0, 1}, "strategy 'x'"), "", "colocation class 0");
  EXPECT_THROW(validate_placement(g, c, std::vector<DeviceId>{0, 2}, "s"), InputError);
  EXPECT_THROW(validate_placement(g, c, std::vector<DeviceId>{0}, "s"), InputError);
}

TEST(Evaluator, SyntheticGeneratorCountsAndIsDeterministic) {
  SyntheticGraphConfig cfg;
  cfg.layers = 5;
  cfg.branches = 2;
  cfg.ops_per_branch = 3;
  Graph a = synthetic_training_graph(cfg), b = synthetic_training_graph(cfg);
  EXPECT_EQ(a.num_operators(), synthetic_operator_count(cfg));
  ASSERT_EQ(a.num_operators(), b.num_operators());
  for (OpId i = 0; i < static_cast<OpId>(a.num_operators()); ++i) EXPECT_EQ(a.op(i).compute_s, b.op(i).compute_s);
  // The shape of profiled graphs: some zero-time bookkeeping operators, most of the time in few.
  std::size_t zero = 0;
  for (const auto& op : a.operators()) zero += op.compute_s == 0;
  EXPECT_GT(zero, 0u);
  EXPECT_LT(zero, a.num_operators() / 2);
  cfg.seed = 2;
  Graph other = synthetic_training_graph(cfg);
  EXPECT_NE(other.total_compute(), a.total_compute());
}
