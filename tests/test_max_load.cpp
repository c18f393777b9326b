// max-load (placement/strategies/max_load): hand-derived optima on toy graphs, the exhaustive search on
// random small training graphs, and the msr-fiddle graphs of Tarnawski et al.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "placement/strategies/max_load/max_load.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"

using namespace placesim;

namespace {

// A chain of operators with these compute times (ms) and memories (bytes).
Graph chain(const std::vector<double>& ms, const std::vector<double>& memory = {}) {
  Graph g;
  for (std::size_t i = 0; i < ms.size(); ++i)
    g.add_operator({"op" + std::to_string(i), "op", ms[i] * 1e-3, memory.empty() ? 0.0 : memory[i]});
  for (std::size_t i = 1; i < ms.size(); ++i) g.add_tensor(static_cast<OpId>(i - 1), static_cast<OpId>(i), 1e6);
  g.finalize("chain");
  return g;
}

MaxLoadSplit split_of(const Graph& g, const Cluster& c, MaxLoadConfig config = {}) { return max_load_split(g, c, config); }

TEST(MaxLoad, ChainOnTwoThreeAndFourGpus) {
  // 1, 2, 3, 4 ms: {1,2,3} | {4} = 6 beats {1,2} | {3,4} = 7; on 3 GPUs {1,2} {3} {4} = 4.
  const Graph g = chain({1, 2, 3, 4});
  const MaxLoadSplit two = split_of(g, testutil::dedicated_mesh(2, 1e9));
  EXPECT_NEAR(two.max_stage_load, 6e-3, 1e-12);
  EXPECT_EQ(two.placement, (std::vector<DeviceId>{0, 0, 0, 1}));
  EXPECT_NEAR(split_of(g, testutil::dedicated_mesh(3, 1e9)).max_stage_load, 4e-3, 1e-12);
  EXPECT_NEAR(split_of(g, testutil::dedicated_mesh(4, 1e9)).max_stage_load, 4e-3, 1e-12);
}

TEST(MaxLoad, DiamondSplitsAcrossItsBranches) {
  // a(1) feeds b(4) and c(4), which feed d(1): {a, b} | {c, d} = 5, which no chain order beats.
  Graph g;
  for (auto [name, ms] : {std::pair{"a", 1.0}, {"b", 4.0}, {"c", 4.0}, {"d", 1.0}}) g.add_operator({name, "op", ms * 1e-3, 0});
  g.add_tensor(0, 1, 1);
  g.add_tensor(0, 2, 1);
  g.add_tensor(1, 3, 1);
  g.add_tensor(2, 3, 1);
  g.finalize("diamond");
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9));
  EXPECT_NEAR(s.max_stage_load, 5e-3, 1e-12);
  EXPECT_EQ(s.placement[0], 0);
  EXPECT_EQ(s.placement[3], 1);
  EXPECT_NE(s.placement[1], s.placement[2]);
}

TEST(MaxLoad, MemoryOfEachGpuIsRespected) {
  // 1, 1, 1, 3 ms holding 4, 1, 1, 1 bytes on 5-byte GPUs: {1,1,1} | {3} = 3 needs 6 bytes on the
  // first GPU, so the optimum is {1,1} | {1,3} = 4.
  const Graph g = chain({1, 1, 1, 3}, {4, 1, 1, 1});
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9, 0, 5));
  EXPECT_NEAR(s.max_stage_load, 4e-3, 1e-12);
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{0, 0, 1, 1}));
  EXPECT_LE(*std::max_element(s.gpu_memory.begin(), s.gpu_memory.end()), 5);
}

TEST(MaxLoad, AGpuMayStayEmptyAndSpeedsCount) {
  const MaxLoadSplit one = split_of(chain({7}), testutil::dedicated_mesh(3, 1e9));
  EXPECT_NEAR(one.max_stage_load, 7e-3, 1e-12);
  // 4, 4, 4 ms on a speed-1 GPU then a speed-2 one: {4} | {4, 4} = max(4, 8 / 2) = 4.
  const MaxLoadSplit fast = split_of(chain({4, 4, 4}), testutil::dedicated_mesh_with_speeds({1, 2}, 1e9));
  EXPECT_NEAR(fast.max_stage_load, 4e-3, 1e-12);
  EXPECT_EQ(fast.placement, (std::vector<DeviceId>{0, 1, 1}));
}

// Forward f1 -> f2 -> f3 of 1 ms each, their backward b3 -> b2 -> b1 of 3 ms in the same classes
// (the msr-fiddle shape): units of 4 ms, so 2 GPUs give 8 ms and backward follows forward.
TEST(MaxLoad, BackwardOperatorsGoWithTheirForwardClass) {
  Graph g;
  for (int i = 0; i < 3; ++i) g.add_operator({"f" + std::to_string(i), "forward", 1e-3, 0, i});
  for (int i = 0; i < 3; ++i) g.add_operator({"b" + std::to_string(i), "backward", 3e-3, 0, i});
  g.add_tensor(0, 1, 1);
  g.add_tensor(1, 2, 1);
  g.add_tensor(2, 5, 1);
  g.add_tensor(5, 4, 1);
  g.add_tensor(4, 3, 1);
  g.finalize("training chain");
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9));
  EXPECT_TRUE(s.training);
  EXPECT_NEAR(s.max_stage_load, 8e-3, 1e-12);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.placement[i], s.placement[i + 3]);
}

// A class of backward operators only (BERT's loss gradients) is placed by its backward edges
// mirrored: o -> b(B) means o's stand-in comes after B's forward. Units A 2, B 4, C 2 ms in the
// order A, B, C give 6 ms on 2 GPUs; ignoring the order, {A, C} | {B} would claim 4.
TEST(MaxLoad, BackwardOnlyClassFollowsItsBackwardEdgesMirrored) {
  Graph g;
  g.add_operator({"fA", "forward", 1e-3, 0, 0});
  g.add_operator({"bA", "backward", 1e-3, 0, 0});
  g.add_operator({"fB", "forward", 2e-3, 0, 1});
  g.add_operator({"bB", "backward", 2e-3, 0, 1});
  g.add_operator({"loss_grad", "backward", 2e-3, 0, 2});
  g.add_tensor(0, 2, 1);  // fA -> fB
  g.add_tensor(4, 3, 1);  // loss_grad -> bB
  g.add_tensor(3, 1, 1);  // bB -> bA
  g.finalize("orphan");
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9));
  EXPECT_NEAR(s.max_stage_load, 6e-3, 1e-12);
  EXPECT_GE(s.placement[4], s.placement[2]);
}

TEST(MaxLoad, ZeroTimeOperatorsLeaveTheDpAndStayContiguous) {
  // a(2) -> z(0) -> b(2) and a -> s(0): z and s leave the DP; z lands between a and b.
  Graph g;
  g.add_operator({"a", "op", 2e-3, 0});
  g.add_operator({"z", "op", 0, 0});
  g.add_operator({"b", "op", 2e-3, 0});
  g.add_operator({"s", "op", 0, 0});
  g.add_tensor(0, 1, 1);
  g.add_tensor(1, 2, 1);
  g.add_tensor(0, 3, 1);
  g.finalize("zeros");
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9));
  EXPECT_EQ(s.units, 2);
  EXPECT_EQ(s.removed_units, 2);
  EXPECT_NEAR(s.max_stage_load, 2e-3, 1e-12);
  EXPECT_LE(s.placement[0], s.placement[1]);
  EXPECT_LE(s.placement[1], s.placement[2]);
  EXPECT_LE(s.placement[0], s.placement[3]);
}

// When no contiguous split fits, the split without memory comes back with the reason.
TEST(MaxLoad, SplitsThatCannotFitSayWhy) {
  Graph g;
  g.add_operator({"w", "forward", 1e-3, 6, 0});
  g.add_operator({"dw", "backward", 1e-3, 6, 0});
  g.add_tensor(0, 1, 1);
  g.finalize("big class");
  const MaxLoadSplit big = split_of(g, testutil::dedicated_mesh(2, 1e9, 0, 10));
  EXPECT_NE(big.memory_problem.find("must share a GPU"), std::string::npos) << big.memory_problem;
  EXPECT_NEAR(big.max_stage_load, 2e-3, 1e-12);
  // 3 + 3 + 3 bytes in a chain on two 5-byte GPUs: the total (9) fits in two, no contiguous split
  // does; without memory the best is {1, 1} | {1}.
  const MaxLoadSplit tight = split_of(chain({1, 1, 1}, {3, 3, 3}), testutil::dedicated_mesh(2, 1e9, 0, 5));
  EXPECT_NE(tight.memory_problem.find("contiguous"), std::string::npos) << tight.memory_problem;
  EXPECT_NEAR(tight.max_stage_load, 2e-3, 1e-12);
  EXPECT_TRUE(split_of(chain({1, 1, 1}, {3, 3, 3}), testutil::dedicated_mesh(2, 1e9, 0, 6)).memory_problem.empty());
}

// 20 independent 1 ms operators have 2^20 downsets: past max_downsets the DP splits one
// topological order (21 downsets), which here still gives the optimum, 10 ms on 2 GPUs.
TEST(MaxLoad, PastMaxDownsetsItSplitsOneOrderAndSaysSo) {
  Graph g;
  for (int i = 0; i < 20; ++i) g.add_operator({"op" + std::to_string(i), "op", 1e-3, 0});
  g.finalize("wide");
  const MaxLoadSplit s = split_of(g, testutil::dedicated_mesh(2, 1e9), {.max_downsets = 1000});
  EXPECT_FALSE(s.exact);
  EXPECT_EQ(s.downsets, 21);
  EXPECT_NEAR(s.max_stage_load, 10e-3, 1e-12);
  EXPECT_TRUE(split_of(chain({1, 2}), testutil::dedicated_mesh(2, 1e9)).exact);
}

// The exhaustive search: every assignment of the classes (and lone operators) to GPUs whose
// forward edges never go back to an earlier GPU, memory respected; the best largest load.
double exhaustive_max_load(const Graph& g, const Cluster& c) {
  const int ops = static_cast<int>(g.num_operators());
  std::vector<int> group(ops);
  int groups = g.num_colocation_classes();
  for (int v = 0; v < ops; ++v) group[v] = g.op(v).colocation_class >= 0 ? g.op(v).colocation_class : groups++;
  const int gpus = c.num_devices();
  std::vector<int> stage(groups, 0);
  double best = std::numeric_limits<double>::infinity();
  std::function<void(int)> visit = [&](int i) {
    if (i < groups) {
      for (int s = 0; s < gpus; ++s) {
        stage[i] = s;
        visit(i + 1);
      }
      return;
    }
    for (const Tensor& t : g.tensors())
      if (g.op(t.src).type != "backward" && g.op(t.dst).type != "backward" && stage[group[t.src]] > stage[group[t.dst]])
        return;
    std::vector<double> load(gpus, 0), memory(gpus, 0);
    for (int v = 0; v < ops; ++v) {
      load[stage[group[v]]] += c.compute_time(stage[group[v]], g.op(v).compute_s);
      memory[stage[group[v]]] += g.op(v).memory_bytes;
    }
    for (int d = 0; d < gpus; ++d)
      if (memory[d] > c.device(d).memory_bytes) return;
    best = std::min(best, *std::max_element(load.begin(), load.end()));
  };
  visit(0);
  return best;
}

// Random training graphs: up to 7 forward operators (some of no time, some sharing a class), a
// backward partner for most, forward -> backward edges, 1 to 3 GPUs with ample or tight memory.
Graph random_training_graph(std::mt19937& rng) {
  auto pick = [&](std::initializer_list<double> values) {
    return *(values.begin() + std::uniform_int_distribution<int>(0, static_cast<int>(values.size()) - 1)(rng));
  };
  std::bernoulli_distribution coin(0.5);
  const int forward = std::uniform_int_distribution<int>(2, 7)(rng);
  std::vector<int> cls(forward);
  for (int i = 0; i < forward; ++i)
    cls[i] = (i > 0 && std::bernoulli_distribution(0.2)(rng)) ? cls[std::uniform_int_distribution<int>(0, i - 1)(rng)] : i;
  Graph g;
  for (int i = 0; i < forward; ++i)
    g.add_operator({"f" + std::to_string(i), "forward", pick({0, 0, 1, 2, 3, 5}) * 1e-3, pick({0, 1, 2, 3}), cls[i]});
  std::vector<int> backward_of(forward, -1);
  for (int i = 0; i < forward; ++i)
    if (std::bernoulli_distribution(0.6)(rng))
      backward_of[i] = g.add_operator({"b" + std::to_string(i), "backward", pick({1, 2, 4}) * 1e-3, pick({0, 1}), cls[i]});
  for (int i = 0; i < forward; ++i)
    for (int j = i + 1; j < forward; ++j)
      if (std::bernoulli_distribution(0.35)(rng)) {
        g.add_tensor(i, j, 1);
        if (backward_of[i] >= 0 && backward_of[j] >= 0) g.add_tensor(backward_of[j], backward_of[i], 1);
      }
  for (int i = 0; i < forward; ++i)
    if (backward_of[i] >= 0 && coin(rng)) g.add_tensor(i, backward_of[i], 1);
  g.finalize("random training graph");
  return g;
}

TEST(MaxLoad, EqualsExhaustiveSearchOnRandomTrainingGraphs) {
  std::mt19937 rng(20201206);
  int infeasible = 0, feasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const Graph g = random_training_graph(rng);
    const int gpus = std::uniform_int_distribution<int>(1, 3)(rng);
    const double memory = std::bernoulli_distribution(0.5)(rng) ? 1e9 : std::uniform_int_distribution<int>(3, 9)(rng);
    const Cluster c = testutil::dedicated_mesh(gpus, 1e9, 0, memory);
    SCOPED_TRACE(testing::Message() << "trial " << trial << ", " << gpus << " GPUs of " << memory << " bytes");
    const double expected = exhaustive_max_load(g, c);
    if (!std::isfinite(expected)) {
      EXPECT_FALSE(split_of(g, c).memory_problem.empty());
      ++infeasible;
      continue;
    }
    ++feasible;
    const MaxLoadSplit s = split_of(g, c);
    EXPECT_TRUE(s.memory_problem.empty()) << s.memory_problem;
    EXPECT_NEAR(s.max_stage_load, expected, 1e-12);
    for (const Tensor& t : g.tensors()) {
      if (g.op(t.src).type != "backward" && g.op(t.dst).type != "backward") {
        EXPECT_LE(s.placement[t.src], s.placement[t.dst]) << g.op(t.src).name << " -> " << g.op(t.dst).name;
      }
    }
    for (int d = 0; d < gpus; ++d) EXPECT_LE(s.gpu_memory[d], c.device(d).memory_bytes);
  }
  EXPECT_GT(infeasible, 10);  // both outcomes are exercised
  EXPECT_GT(feasible, 200);
}

TEST(MaxLoad, StrategyReportsTheOptimum) {
  auto s = testutil::make_strategy_from_yaml("max-load", "max_downsets: 100");
  const PlacementResult r = s->place(chain({1, 2, 3, 4}), testutil::dedicated_mesh(2, 1e9));
  EXPECT_NEAR(r.details["max_stage_load"].get<double>(), 6e-3, 1e-12);
  EXPECT_EQ(r.details["downsets"].get<long>(), 5);
  EXPECT_TRUE(r.details["exact"].get<bool>());
}

// The time limit: a search cut short says which limit passed and returns nothing, never a split
// labelled exact. Every limit either stops it with that error or gives the split of the search
// with no limit (exact, the same optimum).
TEST(MaxLoad, TheTimeLimitStopsTheSearchAndNamesTheLimit) {
  std::vector<double> ms(3000);
  for (std::size_t i = 0; i < ms.size(); ++i) ms[i] = 1 + static_cast<double>(i % 7);
  const Graph g = chain(ms);
  const Cluster c = testutil::dedicated_mesh(4, 1e9);
  const PlacementResult full = testutil::make_strategy_from_yaml("max-load", "time_limit: inf")->place(g, c);
  ASSERT_TRUE(full.details["exact"].get<bool>());
  int stopped = 0;
  for (const char* limit : {"1us", "100us", "1ms", "10ms", "100ms", "10s"}) {
    SCOPED_TRACE(limit);
    auto s = testutil::make_strategy_from_yaml("max-load", std::string("time_limit: ") + limit);
    try {
      const PlacementResult r = s->place(g, c);
      EXPECT_TRUE(r.details["exact"].get<bool>());
      EXPECT_EQ(r.details["max_stage_load"], full.details["max_stage_load"]);
      EXPECT_EQ(r.placement, full.placement);
    } catch (const std::runtime_error& e) {
      ++stopped;
      EXPECT_NE(std::string(e.what()).find("max-load: the time limit ("), std::string::npos) << e.what();
    }
  }
  EXPECT_GE(stopped, 1);  // 1 us is past before 3,001 downsets are enumerated
  try {
    testutil::make_strategy_from_yaml("max-load", "time_limit: 1us")->place(g, c);
    ADD_FAILURE() << "1 us is not enough";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("max-load: the time limit (1e-06 s) passed"), std::string::npos) << e.what();
  }
}

// The msr-fiddle training graphs: millions of downsets as given, a few thousand at most
// after the exact reductions.
TEST(MaxLoad, MsrFiddleTrainingGraphs) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  for (const char* name : {"bert_l-3_training", "gnmt_training", "resnet50_training"}) {
    const Graph g = load_graph(testutil::shared_graphs() + "/msr-fiddle/" + name + ".json").graph;
    for (int gpus : {2, 4}) {
      SCOPED_TRACE(testing::Message() << name << " on " << gpus << " GPUs");
      const Cluster c = testutil::dedicated_mesh(gpus, 1e9, 0, 16e9);
      const MaxLoadSplit s = split_of(g, c);
      EXPECT_TRUE(s.training);
      EXPECT_TRUE(s.exact);
      EXPECT_LT(s.downsets, 10000);
      // Never below the average load, never above one GPU's.
      EXPECT_GE(s.max_stage_load, g.total_compute() / gpus - 1e-9);
      EXPECT_LT(s.max_stage_load, g.total_compute());
      for (OpId v = 0; v < static_cast<OpId>(g.num_operators()); ++v) {
        const int cls = g.op(v).colocation_class;
        if (cls < 0) continue;
        for (OpId u = 0; u < v; ++u)
          if (g.op(u).colocation_class == cls) {
            EXPECT_EQ(s.placement[u], s.placement[v]);
            break;
          }
      }
    }
  }
}

}  // namespace
