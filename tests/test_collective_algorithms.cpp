// Every registered collective algorithm (sim/collectives/algorithms/), driven from the registry so
// that a new algorithm is checked without a test of its own: its shape is well formed, and on a
// non-blocking switch (every pair alike, one message per NIC and direction at a time for rings and
// exchanges of one partner) its three views agree: the message graph on the evaluator, the closed
// form, and the lockstep steps.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <set>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective_steps.h"
#include "sim/collectives/collectives.h"
#include "sim/config/plan_options.h"
#include "tests/test_util.h"

using namespace placesim;

namespace {

constexpr double kB = 10e9;
constexpr double kNicAlpha = 2e-6;
constexpr double kBytes = 48e6;
constexpr CollectiveOp kOps[] = {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather,
                                 CollectiveOp::AllToAll,  CollectiveOp::Broadcast,     CollectiveOp::Reduce};

struct Case {
  CollectiveAlgorithm algorithm;
  CollectiveOp op;
  std::string name;
};

std::vector<Case> every_algorithm_and_op() {
  std::vector<Case> out;
  for (const auto& a : collective_algorithm_names())
    for (CollectiveOp op : kOps)
      if (collective_supports(op, a.value))
        out.push_back({a.value, op, fmt::format("{}_{}", a.name, enum_name<CollectiveOp>(kCollectiveOpNames, op))});
  return out;
}

CollectiveSpec spec_of(const Case& c, int n, int chunks) {
  CollectiveSpec s;
  s.op = c.op;
  s.algorithm = c.algorithm;
  for (int i = 0; i < n; ++i) s.group.push_back(i);
  s.bytes = kBytes;
  s.chunks = chunks;
  s.root = n / 2;
  return s;
}

class EveryAlgorithm : public testing::TestWithParam<Case> {};

// NVLS runs in one server whose switches reduce; NVLS-tree and every other algorithm on one-GPU
// servers (NVLS-tree's on switches that reduce: a double binary tree there).
Cluster cluster_for(const Case& which) {
  Cluster c = testutil::one_gpu_servers(8, kB, kNicAlpha);
  c.nvlink_sharp = collective_algorithm(which.algorithm).across_servers;
  if (collective_algorithm(which.algorithm).nvls && !collective_algorithm(which.algorithm).across_servers) {
    c = Cluster{};
    for (int g = 0; g < 8; ++g) c.add_device({fmt::format("gpu{}", g), 0, 1e9});
    std::vector<int> up, down;
    for (int g = 0; g < 8; ++g) up.push_back(c.add_link({fmt::format("up{}", g), kB, kNicAlpha}));
    for (int g = 0; g < 8; ++g) down.push_back(c.add_link({fmt::format("down{}", g), kB, kNicAlpha}));
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b)
        if (a != b) c.set_route(a, b, {up[a], down[b]});
    c.nvlink_sharp = true;
    c.finalize("one server");
  }
  return c;
}

TEST_P(EveryAlgorithm, ShapeIsWellFormed) {
  const Cluster c = cluster_for(GetParam());
  const CollectiveSpec s = spec_of(GetParam(), 8, 1);
  ASSERT_EQ(collective_problem(s, c), "");
  const CollectiveShape shape = collective_shape(s, c);
  ASSERT_FALSE(shape.empty());
  std::set<std::string> names;
  for (const CollectivePhase& phase : shape) {
    EXPECT_TRUE(names.insert(phase.name).second) << "two phases named " << phase.name;
    int pairs = 0;
    for_each_pair(phase, [&](int from, int to) {
      ++pairs;
      EXPECT_NE(from, to) << phase.name;
      EXPECT_GE(from, 0);
      EXPECT_LT(from, 8);
      EXPECT_GE(to, 0);
      EXPECT_LT(to, 8);
    });
    EXPECT_GT(pairs, 0) << phase.name << " sends nothing";
  }
}

// On a non-blocking switch every pair has the same latency and bandwidth, so the closed form (each
// phase at its slowest pair) is exactly what the contention-free evaluator finds on the message
// graph, with and without chunks.
TEST_P(EveryAlgorithm, ClosedFormIsTheEvaluatorOnAUniformSwitch) {
  const Cluster c = cluster_for(GetParam());
  for (int chunks : {1, 3}) {
    const CollectiveSpec s = spec_of(GetParam(), 8, chunks);
    const ExecutionGraph g = collective_graph(s, c);
    const double evaluator = *run_engines(g, c, EngineSet::of({kEvaluator}), RunOrder::Fcfs).latency(kEvaluator);
    EXPECT_NEAR(collective_closed_form(s, c), evaluator, 1e-9 * evaluator) << "chunks " << chunks;
    // uniform_collective_time prices every pair alike: the same on this switch.
    const double uniform = uniform_collective_time(s.op, s.algorithm, 8, s.bytes, 2 * kNicAlpha, kB, chunks);
    EXPECT_NEAR(uniform, evaluator, 1e-9 * evaluator) << "chunks " << chunks;
    // The affine form is the closed form at any size.
    const AffineTime line = collective_affine_form(s, c);
    EXPECT_NEAR(line.at(s.bytes), evaluator, 1e-9 * evaluator);
  }
}

// Phases without pipelined trees have a lockstep view; on the switch every message of a step runs
// at one rate, so the steps take the message-level time.
// Pipelined trees step in lockstep, every edge carrying a chunk at once, hops + chunks - 1 times:
// the flow engine's lockstep is no faster than the messages, which run ahead.
TEST_P(EveryAlgorithm, StepsAreTheMessageTimeWhereTheyExist) {
  const Cluster c = cluster_for(GetParam());
  const CollectiveSpec s = spec_of(GetParam(), 8, 2);
  const CollectiveShape shape = collective_shape(s, c);
  const bool pipelined = std::any_of(shape.begin(), shape.end(), [](const CollectivePhase& p) {
    return std::holds_alternative<TreePhase>(p.shape);
  });
  const EngineRuns steps = run_collective_steps(s, c, EngineSet::of({kEvaluator, kFlow}));
  const testutil::EngineTimes messages = testutil::run_all_engines(collective_graph(s, c), c);
  // The evaluator's steps are floored at their busiest link (busiest_link_time): the contended
  // time where a step's messages run at one rate, no faster than its messages, each alone.
  EXPECT_GE(*steps.latency(kEvaluator), messages.evaluator * (1 - 1e-9));
  if (pipelined) {
    EXPECT_GE(*steps.latency(kEvaluator), collective_closed_form(s, c) * (1 - 1e-9));
    EXPECT_NEAR(*steps.latency(kEvaluator), *steps.latency(kFlow), 1e-6 * *steps.latency(kFlow));
    EXPECT_GE(*steps.latency(kFlow), messages.flow * (1 - 1e-9));
    return;
  }
  EXPECT_NEAR(*steps.latency(kEvaluator), messages.flow, 1e-6 * messages.flow);
  EXPECT_NEAR(*steps.latency(kFlow), messages.flow, 1e-6 * messages.flow);
}

INSTANTIATE_TEST_SUITE_P(Registered, EveryAlgorithm, testing::ValuesIn(every_algorithm_and_op()),
                         [](const testing::TestParamInfo<Case>& param) {
                           std::string name = param.param.name;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

TEST(CollectiveAlgorithms, BuiltInsSitAtTheirEnumeratorsPositions) {
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::Ring).name, "ring");
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::Tree).name, "tree");
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::HalvingDoubling).name, "halving-doubling");
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::Direct).name, "direct");
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::Hierarchical).name, "hierarchical");
  EXPECT_EQ(collective_algorithm(CollectiveAlgorithm::MultiLevel).name, "multi-level");
  EXPECT_EQ(collective_algorithm_names().size(), collective_algorithm_registry().size());
}

// The registry's lookups: a typo is suggested.
TEST(CollectiveAlgorithms, UnknownNamesAreSuggested) {
  try {
    collective_algorithm_registry().get("halving-dubling", "scenario.yaml", "algorithm");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("halving-doubling"), std::string::npos) << e.what();
  }
}

}  // namespace

// An option choosing the algorithm of a gradient all-reduce offers only algorithms that run an
// all-reduce: pairwise (all-to-all only) is refused where it is read, and the closed form refuses
// an operation its algorithm does not run instead of pricing it.
TEST(CollectiveAlgorithms, GradientReductionsOfferOnlyAllReduceAlgorithms) {
  for (const auto& a : collective_algorithm_names(CollectiveOp::AllReduce))
    EXPECT_TRUE(collective_supports(CollectiveOp::AllReduce, a.value)) << a.name;
  for (const auto& a : collective_algorithm_names(CollectiveOp::AllReduce)) EXPECT_NE(a.name, "pairwise");
  EXPECT_INPUT_ERROR(data_parallel_schema().parse(YamlFields(YAML::Load("{replicas: 2, algorithm: pairwise}"), "s.yaml",
                                                             "data_parallel")),
                     "algorithm", "pairwise", "ring");
  const auto pairwise = enum_parse<CollectiveAlgorithm>(collective_algorithm_names(), "pairwise", "t", "algorithm");
  EXPECT_THROW(uniform_collective_time(CollectiveOp::AllReduce, pairwise, 8, 1e6, 1e-6, 1e9, 1), std::invalid_argument);
  EXPECT_GT(uniform_collective_time(CollectiveOp::AllToAll, pairwise, 8, 1e6, 1e-6, 1e9, 1), 0);
}
