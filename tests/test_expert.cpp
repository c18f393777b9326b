#include <gtest/gtest.h>

#include <fmt/format.h>

#include <set>
#include <string>

#include "placement/framework/portfolio.h"
#include "placement/strategies/expert/expert.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using testutil::nvlink_servers;
using testutil::option_error_field;

// "input" -> l0/w -> l0/w/read -> l1/w -> l1/w/read -> ... -> l3/w/read -> "loss", a chain.
// Layer i's two operators take compute[i] / 2 each; input and loss take no time.
Graph four_layer_chain(std::vector<double> compute) {
  Graph g;
  g.add_operator({"input", "Placeholder", 0, 0});
  for (int l = 0; l < 4; ++l) {
    g.add_operator({fmt::format("l{}/w", l), "op", compute[l] / 2, 0});
    g.add_operator({fmt::format("l{}/w/read", l), "op", compute[l] / 2, 0});
  }
  g.add_operator({"loss", "op", 0, 0});
  for (int i = 0; i + 1 < 10; ++i) g.add_tensor(i, i + 1, 1e6);
  g.finalize("four layers");
  return g;
}

PlacementResult run_expert(const Graph& g, const Cluster& c, ExpertConfig cfg = {}) {
  Expert e(cfg);
  return e.place(g, c);
}

}  // namespace

TEST(Expert, FourEqualLayersOnTwoGpusSplitIntoContiguousHalves) {
  // Layers (depth 2, the default): "l0/w/read" is in scope "l0/w". "l0/w" alone would be in scope
  // "l0", but its own name is the scope "l0/w", so it joins that layer: four layers l<i>/w.
  // "input" has no '/' and no predecessor: it takes its successor's layer (l0/w); "loss" takes
  // its predecessor's (l3/w). Equal compute 1 s per layer: best split 2 s | 2 s = l0 l1 | l2 l3.
  const Graph g = four_layer_chain({1, 1, 1, 1});
  const PlacementResult r = run_expert(g, testutil::dedicated_mesh(2, 20e9));
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  EXPECT_EQ(r.details["layers"].get<int>(), 4);
  EXPECT_EQ(r.details["unscoped_operators"].get<int>(), 2);
  EXPECT_EQ(r.details["own_layer_operators"].get<int>(), 0);
  EXPECT_EQ(r.details["first_layer_per_gpu"], nlohmann::json({"l0/w", "l2/w"}));
}

TEST(Expert, ChunksBalanceComputeNotLayerCount) {
  // Layers of 3, 1, 1, 1 s on 2 GPUs: the best contiguous split is 3 | 1 + 1 + 1 (max 3 s), not
  // two layers each (max 4 s).
  const Graph g = four_layer_chain({3, 1, 1, 1});
  const PlacementResult r = run_expert(g, testutil::dedicated_mesh(2, 20e9));
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(r.details["gpu_compute_s"], nlohmann::json({3.0, 3.0}));
}

TEST(Expert, OneLayerPerGpuWhenCountsMatch) {
  const Graph g = four_layer_chain({5, 1, 1, 1});
  const PlacementResult r = run_expert(g, testutil::dedicated_mesh(4, 20e9));
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 1, 1, 2, 2, 3, 3, 3}));
}

TEST(Expert, PrefixDepthChoosesTheLayers) {
  // "net/l<i>/op": at depth 1 everything is one layer "net" (one GPU), at depth 2 four layers.
  Graph g;
  for (int l = 0; l < 4; ++l) g.add_operator({fmt::format("net/l{}/op", l), "op", 1, 0});
  for (int l = 0; l + 1 < 4; ++l) g.add_tensor(l, l + 1, 1);
  g.finalize("nested");
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  ExpertConfig cfg;
  cfg.prefix_depth = 1;
  EXPECT_EQ(run_expert(g, c, cfg).placement, (std::vector<DeviceId>{0, 0, 0, 0}));
  cfg.prefix_depth = 2;
  EXPECT_EQ(run_expert(g, c, cfg).placement, (std::vector<DeviceId>{0, 0, 1, 1}));
}

TEST(Expert, BranchesGoToTheirOwnGpus) {
  // stem -> b1a -> b1b -> join, stem -> b2 -> join, stem -> b3 -> join (one op per layer, "<layer>/op").
  // Levels: stem 0; b1a, b2, b3 1 (parallel); b1b 2; join 3.
  // stem is a source: a new branch on gpu0. b1a, b2, b3 are parallel branch heads: gpus 1, 2, 3.
  // b1b continues b1a (its only predecessor, whose only successor it is): gpu1.
  // join is alone at its level: it follows its heaviest input, b2 -> join (5 MB): gpu2.
  Graph g;
  for (const char* name : {"stem/op", "b1a/op", "b1b/op", "b2/op", "b3/op", "join/op"}) g.add_operator({name, "op", 1, 0});
  g.add_tensor(0, 1, 1e6);
  g.add_tensor(1, 2, 1e6);
  g.add_tensor(0, 3, 1e6);
  g.add_tensor(0, 4, 1e6);
  g.add_tensor(2, 5, 1e6);
  g.add_tensor(3, 5, 5e6);
  g.add_tensor(4, 5, 1e6);
  g.finalize("branches");
  ExpertConfig cfg;
  cfg.mode = ExpertConfig::Mode::Branches;
  const PlacementResult r = run_expert(g, nvlink_servers(4), cfg);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(r.details["mode"], "branches");
}

TEST(Expert, ColocationClassesFollowTheirFirstMember) {
  // The equal four-layer chain with l0/w (id 1) and l3/w/read (id 8) in one class: the class
  // goes where its first member in topological order (l0/w, gpu0) goes.
  Graph g;
  g.add_operator({"input", "Placeholder", 0, 0});
  for (int l = 0; l < 4; ++l) {
    g.add_operator({fmt::format("l{}/w", l), "op", 0.5, 0, l == 0 ? 0 : -1});
    g.add_operator({fmt::format("l{}/w/read", l), "op", 0.5, 0, l == 3 ? 0 : -1});
  }
  g.add_operator({"loss", "op", 0, 0});
  for (int i = 0; i + 1 < 10; ++i) g.add_tensor(i, i + 1, 1e6);
  g.finalize("coloc layers");
  const PlacementResult r = run_expert(g, testutil::dedicated_mesh(2, 20e9));
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0, 0, 0, 1, 1, 1, 0, 1}));
}

TEST(Expert, UnnamedGraphFallsBackToOneLayerPerOperator) {
  // No '/' anywhere: every operator is its own layer, in topological order A (5 us), B (10), C (5).
  // Contiguous 2-splits: {A, B} {C} = 15 | 5 and {A} {B, C} = 5 | 15, both max 15; the binary
  // search finds the bound 15 and greedy packing fills the first chunk: A, B | C.
  const Graph g = testutil::fig31_graph();
  const PlacementResult r = run_expert(g, testutil::dedicated_mesh(2, 20e9));
  EXPECT_EQ(r.details["own_layer_operators"].get<int>(), 3);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 1}));
}

TEST(Expert, OptionsAreValidated) {
  EXPECT_NE(option_error_field("expert", "{mode: columns}").find("options.mode"), std::string::npos);
  EXPECT_NE(option_error_field("expert", "{prefix_depth: 0}").find("options.prefix_depth"), std::string::npos);
  EXPECT_NE(option_error_field("expert", "{prefix_depth: two}").find("options.prefix_depth"), std::string::npos);
  EXPECT_NE(option_error_field("expert", "{depth: 2}").find("options"), std::string::npos);
  EXPECT_EQ(option_error_field("expert", "{mode: branches, prefix_depth: 3}"), "no error");
}

TEST(Expert, VggPlacementIsValid) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/vgg.json").graph;
  const Cluster c = nvlink_servers(4);
  for (auto mode : {ExpertConfig::Mode::Layers, ExpertConfig::Mode::Branches}) {
    ExpertConfig cfg;
    cfg.mode = mode;
    const PlacementResult r = run_expert(g, c, cfg);  // Strategy::place validates it
    EXPECT_GT(r.details["layers"].get<int>(), 4);
    // Almost every operator has a scope or a scoped neighbour (VGG has one isolated one).
    EXPECT_LE(r.details["own_layer_operators"].get<int>(), 2);
    std::set<DeviceId> used(r.placement.begin(), r.placement.end());
    EXPECT_EQ(used.size(), 4u);
  }
}

TEST(Expert, MsrGraphWithoutScopesIsValid) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/msr-fiddle/inceptionv3_training.json").graph;
  const PlacementResult r = run_expert(g, nvlink_servers(4));  // colocation classes validated
  EXPECT_EQ(r.details["own_layer_operators"].get<std::size_t>(), g.num_operators());
}

TEST(Expert, GradientOperatorsJoinTheLayerTheyDifferentiate) {
  // Forward m/l0/op -> m/l1/op, backward gradient_tape/m/l1/op -> gradient_tape/m/l0/op, each
  // 1 s, chained. With backward_with_forward the layers are m/l0 {fwd, grad} and m/l1 {fwd, grad}:
  // 2 s each, one per GPU, so each gradient sits with its forward operator. Without it the layers
  // are m/l0 (1 s), m/l1 (1 s) and gradient_tape/m (2 s): the best split is l0 l1 | backward.
  Graph g;
  for (const char* name : {"m/l0/op", "m/l1/op", "gradient_tape/m/l1/op", "gradient_tape/m/l0/op"})
    g.add_operator({name, "op", 1.0, 0});
  for (int i = 0; i + 1 < 4; ++i) g.add_tensor(i, i + 1, 1e6);
  g.finalize("forward and backward");
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  EXPECT_EQ(run_expert(g, c).placement, (std::vector<DeviceId>{0, 1, 1, 0}));
  ExpertConfig apart;
  apart.backward_with_forward = false;
  EXPECT_EQ(run_expert(g, c, apart).placement, (std::vector<DeviceId>{0, 0, 1, 1}));
}

// Feasibility first: the four-layer chain on 2 GPUs of 8 GB, layer 0's two operators 5 GB each.
// The expert's chunks put layers 0 and 1 on GPU 0 (10 GB: over); the registry's expert falls back
// on the portfolio's best that fits (m-TOPO's fill splits layer 0) and says so.
TEST(Expert, OverMemoryFallsBackOnAPlacementThatFits) {
  Graph g;
  g.add_operator({"input", "Placeholder", 0, 0});
  for (int l = 0; l < 4; ++l) {
    g.add_operator({fmt::format("l{}/w", l), "op", 0.5e-3, l == 0 ? 5e9 : 0});
    g.add_operator({fmt::format("l{}/w/read", l), "op", 0.5e-3, l == 0 ? 5e9 : 0});
  }
  g.add_operator({"loss", "op", 0, 0});
  for (int i = 0; i + 1 < 10; ++i) g.add_tensor(i, i + 1, 1e6);
  g.finalize("four layers, a heavy first");
  const Cluster c = nvlink_servers(2, 8e9);
  const PlacementResult own = run_expert(g, c);
  EXPECT_FALSE(fits_memory(g, c, own.placement));
  const PlacementResult r = testutil::make_strategy_from_yaml("expert", "{}")->place(g, c);
  EXPECT_TRUE(fits_memory(g, c, r.placement));
  ASSERT_TRUE(r.facts.memory_fallback.has_value());
  EXPECT_NE(*r.facts.memory_fallback, "none fits");
  EXPECT_TRUE(r.details.contains("memory_fallback"));
  EXPECT_TRUE(r.details.contains("own_answer"));
}
