// The search cost model (sim/engines/cost_model.h): `list` is the evaluator; `flow` is the flow engine
// replaying the evaluator's order, never below the list latency, and its cutoff gives the same
// answers as a full run. And the `cost_model` option: declared once, taken by search strategies only.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>

#include "placement/framework/strategy.h"
#include "sim/engines/cost_model.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

using namespace placesim;
using namespace placesim::testutil;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A (1 s) sends two 1 GB tensors to C and D (1 s each) on the other GPU of a 1 GB/s mesh.
Graph fork_over_one_link() {
  Graph g;
  g.add_operator({"A", "op", 1.0, 0});
  g.add_operator({"C", "op", 1.0, 0});
  g.add_operator({"D", "op", 1.0, 0});
  g.add_tensor(0, 1, 1e9);
  g.add_tensor(0, 2, 1e9);
  g.finalize("fork");
  return g;
}

}  // namespace

// By hand: in the list schedule both tensors arrive at 1 + 1 = 2 s, C and D run 2-3 and 3-4:
// 4 s. Under contention they share the link at 0.5 GB/s and both arrive at 1 + 2 = 3 s: 5 s.
TEST(CostModel, TwoTensorsOnOneLinkByHand) {
  const Graph g = fork_over_one_link();
  const Cluster c = dedicated_mesh(2, 1e9);
  const std::vector<DeviceId> p = {0, 1, 1};
  CostModel list(g, c, CostModelKind::List), flow(g, c, CostModelKind::Flow);
  EXPECT_DOUBLE_EQ(list.latency(p), 4.0);
  EXPECT_NEAR(flow.latency(p), 5.0, 1e-9);
  // Cut off at 4.5 s: the list schedule (4 s) does not settle it, the flow run does.
  EXPECT_EQ(flow.latency_with_cutoff(p, 4.5), kInf);
  EXPECT_EQ(flow.flow_runs(), 2);
  // Cut off at 3.5 s: the list schedule already proves it, the flow engine is not run.
  EXPECT_EQ(flow.latency_with_cutoff(p, 3.5), kInf);
  EXPECT_EQ(flow.flow_runs(), 2);
  EXPECT_EQ(flow.settled_by_list(), 1);
  EXPECT_NEAR(flow.latency_with_cutoff(p, 5.0 + 1e-9), 5.0, 1e-9);
}

// On every fabric of the registry: list is the evaluator, flow is the flow engine in the
// evaluator's order (what SimGrid measures), flow >= list, and the cutoff changes no answer.
TEST(CostModel, FlowIsTheReplayAndNeverBelowListOnEveryFabric) {
  std::mt19937 rng(77);
  int contended = 0, checked = 0;
  for (const auto& [type, yaml] : registry_variants()) {
    SCOPED_TRACE(yaml);
    const Cluster c = cluster_from_yaml(YAML::Load(yaml), "c.yaml");
    const Graph g = random_dag(rng, 50 + static_cast<int>(rng() % 50));
    CostModel list(g, c, CostModelKind::List), flow(g, c, CostModelKind::Flow);
    Evaluator ev(g, c);
    FlowEngine engine(g, c);
    for (int trial = 0; trial < 3; ++trial) {
      const auto p = random_placement(rng, g, c);
      const Schedule s = ev.schedule(p);
      const double l = list.latency(p), f = flow.latency(p);
      EXPECT_EQ(l, s.latency);
      if (std::isinf(l)) continue;  // an unreachable pair
      EXPECT_EQ(f, engine.replay_latency(p, s.device_order));
      EXPECT_GE(f, l * (1 - 1e-12)) << "contention made a transfer faster";
      contended += f > l * (1 + 1e-9);
      ++checked;
      for (const double factor : {0.5, 0.999, 1.0, 1.001, 2.0}) {
        const double cut = f * factor;
        EXPECT_EQ(flow.latency_with_cutoff(p, cut), f <= cut ? f : kInf) << "cutoff " << factor;
        const double lc = l * factor;
        EXPECT_EQ(list.latency_with_cutoff(p, lc), l <= lc ? l : kInf) << "cutoff " << factor;
      }
      // A cut-off run leaves nothing behind: the next full run is the same.
      EXPECT_EQ(flow.latency(p), f);
    }
  }
  EXPECT_GT(checked, 20);
  EXPECT_GT(contended, 5) << "the fabrics never made two flows share a link";
}

TEST(CostModel, OptionOnlyForSearchStrategies) {
  for (const StrategyInfo& info : strategy_registry()) {
    const bool searches = info.name == "mcmc" || info.name == "quickp" || info.name == "celeritas" ||
                          info.name == "placeto-greedy" || info.name == "placeto" || info.name == "random";
    EXPECT_EQ(info.takes("cost_model"), searches) << info.name;
  }
  EXPECT_EQ(make_strategy_from_yaml("mcmc", "{cost_model: flow}")->common_options().cost_model, CostModelKind::Flow);
  EXPECT_EQ(make_strategy_from_yaml("mcmc", "{}")->common_options().cost_model, CostModelKind::List);
  EXPECT_INPUT_ERROR(make_strategy_from_yaml("mcmc", "{cost_model: simgrid}"), "cost_model", "list", "flow");
  EXPECT_INPUT_ERROR(make_strategy_from_yaml("heft", "{cost_model: flow}"), "cost_model");
}

// MCMC searching the flow model returns a placement no slower under contention than the one it
// finds with the list model, on a graph whose fan-out contends on one link, and says which it used.
TEST(CostModel, McmcWithFlowAvoidsTheSharedLink) {
  const Graph g = fork_over_one_link();
  const Cluster c = dedicated_mesh(2, 1e9);
  auto list = make_strategy_from_yaml("mcmc", "{steps: 200, seed: 3}")->place(g, c);
  auto flow = make_strategy_from_yaml("mcmc", "{steps: 200, seed: 3, cost_model: flow}")->place(g, c);
  EXPECT_EQ(flow.facts.cost_model, CostModelKind::Flow);
  EXPECT_EQ(list.facts.cost_model, CostModelKind::List);
  CostModel measured(g, c, CostModelKind::Flow);
  EXPECT_LE(measured.latency(flow.placement), measured.latency(list.placement));
  EXPECT_DOUBLE_EQ(measured.latency(flow.placement), 3.0);  // one GPU: 3 s, no transfer
}

// Feasibility first: a search strategy that ends over a GPU's memory returns the
// portfolio's best placement that fits. Four 6-byte operators, two 12-byte GPUs: a random draw
// that puts three on one GPU (18 B) overflows; m-TOPO's fill puts two and two.
TEST(MemoryFallback, SearchStrategiesNeverReturnAnOverflowWhenAFillFits) {
  Graph g;
  for (int i = 0; i < 4; ++i) g.add_operator({"op" + std::to_string(i), "op", 1.0, 6});
  g.finalize("four");
  const Cluster c = dedicated_mesh(2, 1e9, 0.0, 12.0);
  int fallbacks = 0;
  for (int seed = 1; seed <= 12; ++seed) {
    auto r = make_strategy_from_yaml("random", fmt::format("{{seed: {}}}", seed))->place(g, c);
    const std::vector<double> memory = device_memory(g, r.placement, 2);
    EXPECT_LE(memory[0], 12.0) << "seed " << seed;
    EXPECT_LE(memory[1], 12.0) << "seed " << seed;
    if (r.details.contains("memory_fallback")) {
      ++fallbacks;
      EXPECT_EQ(r.details["memory_fallback"]["chosen"], "m-topo") << r.details.dump();
    }
  }
  EXPECT_GT(fallbacks, 0) << "no seed drew an overflowing placement: the test checks nothing";
  // A baseline returns what it is: one GPU cannot hold the graph (24 B).
  auto single = make_strategy_from_yaml("single-device", "{}")->place(g, c);
  EXPECT_FALSE(single.details.contains("memory_fallback"));
  EXPECT_GT(device_memory(g, single.placement, 2)[single.placement[0]], 12.0);
}
