#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

#include "placement/stages/coarsening/coarsening.h"
#include "scenarios/runner/record.h"
#include "scenarios/runner/scenario.h"
#include "scenarios/runner/sweep.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/core/graph_stats.h"
#include "sim/io/placement_io.h"
#include "tests/test_util.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

CoarseningConfig colocrl() { return {CoarseningScheme::ColocRL, 0}; }
CoarseningConfig placeto(int target) { return {CoarseningScheme::PlaceTo, target}; }
CoarseningConfig spotlight() { return {CoarseningScheme::SpotLight, 0}; }

// Operators named by `names`, compute `compute[i]` seconds, memory 10 * (i + 1) bytes.
Graph make_graph(const std::vector<std::string>& names, const std::vector<double>& compute,
                 const std::vector<std::tuple<OpId, OpId, double>>& tensors, std::vector<int> classes = {}) {
  Graph g;
  for (std::size_t i = 0; i < names.size(); ++i)
    g.add_operator({names[i], "op", compute[i], 10.0 * static_cast<double>(i + 1),
                    classes.empty() ? -1 : classes[i]});
  for (auto [s, d, b] : tensors) g.add_tensor(s, d, b);
  g.finalize("test");
  return g;
}

// The coarse tensor from coarse operator s to d, or -1 when there is none.
double coarse_bytes(const Graph& g, OpId s, OpId d) {
  for (EdgeId e : g.out_edges(s))
    if (g.tensor(e).dst == d) return g.tensor(e).bytes;
  return -1;
}

// Properties every coarsening must have, whatever the scheme.
void expect_consistent(const Graph& fine, const Coarsening& c) {
  const Graph& coarse = c.coarse;
  ASSERT_EQ(c.group_of.size(), fine.num_operators());
  ASSERT_EQ(coarse.topological_order().size(), coarse.num_operators()) << "finalized, hence acyclic";
  std::vector<int> members(coarse.num_operators(), 0);
  for (OpId g : c.group_of) {
    ASSERT_GE(g, 0);
    ASSERT_LT(g, static_cast<OpId>(coarse.num_operators()));
    ++members[g];
  }
  for (int m : members) EXPECT_GT(m, 0) << "no empty coarse operator";
  // Sums of compute and memory are kept.
  EXPECT_NEAR(coarse.total_compute(), fine.total_compute(), 1e-9 * fine.total_compute() + 1e-15);
  EXPECT_NEAR(coarse.total_memory(), fine.total_memory(), 1e-9 * fine.total_memory() + 1e-9);
  // Tensor bytes: every tensor between two groups survives inside its pair's coarse tensor.
  std::map<std::pair<OpId, OpId>, double> expected;
  for (const Tensor& t : fine.tensors())
    if (c.group_of[t.src] != c.group_of[t.dst]) expected[{c.group_of[t.src], c.group_of[t.dst]}] += t.bytes;
  ASSERT_EQ(coarse.num_tensors(), expected.size()) << "one coarse tensor per coarse pair";
  for (const Tensor& t : coarse.tensors()) EXPECT_NEAR(t.bytes, (expected[{t.src, t.dst}]), 1e-6 * t.bytes + 1e-9);
  // Colocation: each fine class maps to exactly one coarse class, and unclassed groups are
  // groups of unclassed operators.
  std::map<int, int> coarse_class_of;
  for (OpId i = 0; i < static_cast<OpId>(fine.num_operators()); ++i) {
    const int fine_class = fine.op(i).colocation_class;
    const int coarse_class = coarse.op(c.group_of[i]).colocation_class;
    if (fine_class < 0) continue;
    ASSERT_GE(coarse_class, 0) << fine.op(i).name;
    auto [it, fresh] = coarse_class_of.emplace(fine_class, coarse_class);
    EXPECT_EQ(it->second, coarse_class) << "class " << fine_class << " split across coarse classes";
  }
  for (OpId g = 0; g < static_cast<OpId>(coarse.num_operators()); ++g) {
    if (coarse.op(g).colocation_class >= 0) continue;
    for (OpId i = 0; i < static_cast<OpId>(fine.num_operators()); ++i)
      if (c.group_of[i] == g) {
        EXPECT_LT(fine.op(i).colocation_class, 0);
      }
  }
}

// A random DAG of n operators whose ids are not in topological order.
Graph random_dag(int n, double edge_probability, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<OpId> rank(n);
  for (int i = 0; i < n; ++i) rank[i] = i;
  std::shuffle(rank.begin(), rank.end(), rng);  // rank[i]: position of operator i in a hidden order
  std::uniform_real_distribution<double> unit(0, 1);
  Graph g;
  for (int i = 0; i < n; ++i) g.add_operator({"op" + std::to_string(i), "op", std::floor(unit(rng) * 4), 1.0});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      if (rank[i] < rank[j] && unit(rng) < edge_probability) g.add_tensor(i, j, std::floor(unit(rng) * 8));
  g.finalize("random");
  return g;
}

}  // namespace

TEST(Coarsening, TwoLevelPrefix) {
  EXPECT_EQ(two_level_prefix("sequential_1/conv2d_1/convolution"), "sequential_1/conv2d_1");
  EXPECT_EQ(two_level_prefix("sequential_1/conv2d_1/Reshape/shape"), "sequential_1/conv2d_1");
  EXPECT_EQ(two_level_prefix("sequential_1/conv2d_1"), "sequential_1/conv2d_1");
  EXPECT_EQ(two_level_prefix("input"), "input");
}

TEST(Coarsening, SchemeNamesRoundTrip) {
  for (const auto& name : coarsening_scheme_names()) {
    auto scheme = parse_coarsening_scheme(name);
    ASSERT_TRUE(scheme) << name;
    EXPECT_EQ(coarsening_scheme_name(*scheme), name);
  }
  EXPECT_FALSE(parse_coarsening_scheme("metis"));
}

TEST(Coarsening, ColocRLCollapsesAChain) {
  // a -> b -> c -> d: a, b and c each have out-degree one and join their successor.
  Graph g = make_graph({"a", "b", "c", "d"}, {1, 2, 3, 4}, {{0, 1, 5}, {1, 2, 6}, {2, 3, 7}});
  Coarsening c = coarsen(g, colocrl());
  expect_consistent(g, c);
  ASSERT_EQ(c.coarse.num_operators(), 1u);
  EXPECT_EQ(c.coarse.num_tensors(), 0u) << "internal tensors are dropped";
  EXPECT_DOUBLE_EQ(c.coarse.op(0).compute_s, 10);
  EXPECT_DOUBLE_EQ(c.coarse.op(0).memory_bytes, 10 + 20 + 30 + 40);
  EXPECT_EQ(c.coarse.op(0).name, "a") << "named after its lowest-numbered member";
  EXPECT_EQ(c.group_of, (std::vector<OpId>{0, 0, 0, 0}));
}

TEST(Coarsening, ColocRLLeavesAForkApart) {
  // Fig. 3.1: A -> {B, C}. A has out-degree two; B and C have none. Nothing merges.
  Graph g = testutil::fig31_graph();
  Coarsening c = coarsen(g, colocrl());
  expect_consistent(g, c);
  EXPECT_EQ(c.coarse.num_operators(), 3u);
  EXPECT_EQ(c.group_of, (std::vector<OpId>{0, 1, 2}));
  EXPECT_EQ(c.coarse.op(1).name, "B");
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 0, 2), 1000);
}

TEST(Coarsening, ColocRLRepeatsUntilNothingMerges) {
  // a -> {b, c}, b -> d, c -> e, and x -> {d, e}.
  // Round 1: b (out-degree 1) joins d, c joins e. a now feeds {b,d} and {c,e}: out-degree two,
  // and x too. Result: {a}, {b,d}, {c,e}, {x}.
  // Then p -> {q, r}, q -> r: q joins r; p's two successors are now one, so p joins {q,r}.
  Graph g = make_graph({"a", "b", "c", "d", "e", "x", "p", "q", "r"}, {1, 1, 1, 1, 1, 1, 1, 1, 1},
                       {{0, 1, 1}, {0, 2, 2}, {1, 3, 3}, {2, 4, 4}, {5, 3, 5}, {5, 4, 6}, {6, 7, 7}, {6, 8, 8}, {7, 8, 9}});
  Coarsening c = coarsen(g, colocrl());
  expect_consistent(g, c);
  // Coarse ids by lowest member: {a}=0, {b,d}=1, {c,e}=2, {x}=3, {p,q,r}=4.
  EXPECT_EQ(c.group_of, (std::vector<OpId>{0, 1, 2, 1, 2, 3, 4, 4, 4}));
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 0, 1), 1);
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 3, 2), 6);
  for (OpId op = 0; op < static_cast<OpId>(c.coarse.num_operators()); ++op)
    EXPECT_NE(c.coarse.out_edges(op).size(), 1u) << "a fixed point: no coarse operator of out-degree one";
}

TEST(Coarsening, GroupsJoinColocationClasses) {
  // a(class 0) -> b(class 1) -> {e, f(class 3)}; c(class 2) -> d(class 1).
  // ColocRL: a joins b (classes 0 and 1 join), c joins d (classes 2 and 1 join); b, e, f stay.
  // Groups by lowest member: {a,b}=0, {c,d}=1, {e}=2, {f}=3. Coarse classes in order of their
  // lowest fine class: {0,1,2} -> 0, {3} -> 1.
  Graph g = make_graph({"a", "b", "c", "d", "e", "f"}, {1, 1, 1, 1, 1, 1}, {{0, 1, 1}, {1, 4, 1}, {1, 5, 1}, {2, 3, 1}},
                       {0, 1, 2, 1, -1, 3});
  Coarsening c = coarsen(g, colocrl());
  expect_consistent(g, c);
  ASSERT_EQ(c.group_of, (std::vector<OpId>{0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(c.coarse.op(0).colocation_class, 0);
  EXPECT_EQ(c.coarse.op(1).colocation_class, 0);
  EXPECT_EQ(c.coarse.op(2).colocation_class, -1);
  EXPECT_EQ(c.coarse.op(3).colocation_class, 1);
  EXPECT_EQ(c.coarse.num_colocation_classes(), 2);
  // A coarse placement honouring the coarse classes honours the fine ones once expanded.
  Cluster cluster = testutil::dedicated_mesh(2, 1e9);
  std::vector<DeviceId> coarse_placement = {1, 1, 0, 0};
  validate_placement(c.coarse, cluster, coarse_placement, "test");
  EXPECT_NO_THROW(validate_placement(g, cluster, expand_placement(c, coarse_placement), "test"));
}

TEST(Coarsening, PlaceToMergesTheCheapestIntoASuccessorDownToTheTarget) {
  // a(1) -> b(5) -> c(2) -> d(3). Cheapest a joins b ({a,b} = 6); then c (2) joins d ({c,d} = 5).
  Graph g = make_graph({"a", "b", "c", "d"}, {1, 5, 2, 3}, {{0, 1, 1}, {1, 2, 2}, {2, 3, 3}});
  Coarsening two = coarsen(g, placeto(2));
  expect_consistent(g, two);
  EXPECT_EQ(two.group_of, (std::vector<OpId>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(two.coarse.op(0).compute_s, 6);
  EXPECT_DOUBLE_EQ(coarse_bytes(two.coarse, 0, 1), 2);
  // Target 3 stops after the first merge.
  Coarsening three = coarsen(g, placeto(3));
  EXPECT_EQ(three.group_of, (std::vector<OpId>{0, 0, 1, 2}));
  // Target 1: after those two, {c,d} (5) is cheaper than {a,b} (6) but has no successor, so it
  // joins its predecessor.
  Coarsening one = coarsen(g, placeto(1));
  EXPECT_EQ(one.coarse.num_operators(), 1u);
  // A target at or above the size changes nothing.
  EXPECT_EQ(coarsen(g, placeto(4)).group_of, (std::vector<OpId>{0, 1, 2, 3}));
  EXPECT_THROW(coarsen(g, placeto(0)), std::invalid_argument);
}

TEST(Coarsening, PlaceToPrefersTheLargestTensorAndFallsBackToAPredecessor) {
  // u(1) -> v(10) with 1 B and u -> w(10) with 5 B: u joins w, the larger tensor.
  Graph g = make_graph({"u", "v", "w"}, {1, 10, 10}, {{0, 1, 1}, {0, 2, 5}});
  EXPECT_EQ(coarsen(g, placeto(2)).group_of, (std::vector<OpId>{0, 1, 0}));
  // p(10) -> q(1) with 1 B and r(10) -> q with 3 B: q has no successor and joins r.
  Graph h = make_graph({"p", "q", "r"}, {10, 1, 10}, {{0, 1, 1}, {2, 1, 3}});
  Coarsening c = coarsen(h, placeto(2));
  expect_consistent(h, c);
  EXPECT_EQ(c.group_of, (std::vector<OpId>{0, 1, 1}));
  EXPECT_EQ(c.coarse.op(1).name, "q");
}

TEST(Coarsening, PlaceToSkipsAMergeThatWouldCloseACycle) {
  // u(1) -> v(10) with 9 B, u -> w(10) with 1 B, w -> v. Merging u into v would give the cycle
  // {u,v} -> w -> {u,v} (out-degree(u) = in-degree(v) = 2, so the search decides), so u joins w.
  Graph g = make_graph({"u", "v", "w"}, {1, 10, 10}, {{0, 1, 9}, {0, 2, 1}, {2, 1, 1}});
  Coarsening c = coarsen(g, placeto(2));
  expect_consistent(g, c);
  EXPECT_EQ(c.group_of, (std::vector<OpId>{0, 1, 0}));
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 0, 1), 10) << "u->v and w->v merged: 9 + 1 bytes";
}

TEST(Coarsening, PlaceToOnRandomGraphsStaysAcyclicAndReachesItsTarget) {
  // Every operator with a neighbour can merge (its earliest successor, or latest predecessor,
  // is always safe), and one without joins another component, so PlaceTo reaches its target.
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    Graph g = random_dag(40, 0.04 * static_cast<double>(1 + seed % 4), seed);
    for (int target : {1, 3, 10, 25, 40}) {
      Coarsening c = coarsen(g, placeto(target));
      expect_consistent(g, c);
      EXPECT_EQ(c.coarse.num_operators(), static_cast<std::size_t>(target))
          << "seed " << seed << " target " << target;
    }
    Coarsening cr = coarsen(g, colocrl());
    expect_consistent(g, cr);
  }
}

TEST(Coarsening, PlaceToMergesWeakComponentsToReachItsTarget) {
  // Three disconnected chains a1(1) -> a2(1), b1(2) -> b2(2), c1(3) -> c2(3); target 2 < 3 components.
  // a1 joins a2 ({a} = 2, no neighbour left); {a} then joins the cheapest other node, b1 (2, lower
  // id than b2): {a, b1} = 4; b2 (2) joins its predecessor {a, b1} (6); c1 (3) joins c2: 2 left.
  Graph g = make_graph({"a1", "a2", "b1", "b2", "c1", "c2"}, {1, 1, 2, 2, 3, 3},
                       {{0, 1, 1}, {2, 3, 1}, {4, 5, 1}});
  Coarsening two = coarsen(g, placeto(2));
  expect_consistent(g, two);  // acyclic, totals kept
  EXPECT_EQ(two.group_of, (std::vector<OpId>{0, 0, 0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(two.coarse.op(0).compute_s, 6);
  EXPECT_DOUBLE_EQ(two.coarse.op(1).compute_s, 6);
  EXPECT_EQ(two.coarse.num_tensors(), 0u);
  // Target 1: the two remaining components merge as well.
  Coarsening one = coarsen(g, placeto(1));
  expect_consistent(g, one);
  EXPECT_EQ(one.coarse.num_operators(), 1u);
  // Many single-operator components (no tensor at all) reach the target too.
  Graph loose = make_graph({"p", "q", "r", "s", "t"}, {1, 2, 3, 4, 5}, {});
  Coarsening three = coarsen(loose, placeto(3));
  expect_consistent(loose, three);
  // p (1) joins q (2) -> 3; r (3) and {p, q} (3, id 1 < 2) tie: {p, q} joins r -> 6. Left: {p, q, r}, s, t.
  EXPECT_EQ(three.group_of, (std::vector<OpId>{0, 0, 0, 1, 2}));
}

TEST(Coarsening, SpotLightGroupsByTwoLevelPrefix) {
  // input -> seq/conv1/convolution -> seq/conv1/Reshape -> seq/dense/MatMul -> seq/dense
  // Groups: {input}, {seq/conv1/*}, {seq/dense/MatMul, seq/dense} ("seq/dense" is its own prefix).
  Graph g = make_graph({"input", "seq/conv1/convolution", "seq/conv1/Reshape", "seq/dense/MatMul", "seq/dense"},
                       {0, 3, 1, 2, 1}, {{0, 1, 4}, {1, 2, 5}, {2, 3, 6}, {3, 4, 7}, {1, 3, 8}});
  Coarsening c = coarsen(g, spotlight());
  expect_consistent(g, c);
  ASSERT_EQ(c.group_of, (std::vector<OpId>{0, 1, 1, 2, 2}));
  EXPECT_EQ(c.coarse.op(0).name, "input");
  EXPECT_EQ(c.coarse.op(1).name, "seq/conv1");
  EXPECT_EQ(c.coarse.op(2).name, "seq/dense");
  EXPECT_DOUBLE_EQ(c.coarse.op(1).compute_s, 4);
  EXPECT_DOUBLE_EQ(c.coarse.op(2).memory_bytes, 40 + 50);
  // Parallel tensors conv1/Reshape -> dense/MatMul (6 B) and conv1/convolution -> dense/MatMul
  // (8 B) become one coarse tensor of 14 B.
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 1, 2), 14);
  EXPECT_EQ(c.coarse.num_tensors(), 2u);
}

TEST(Coarsening, SpotLightSplitsAGroupThatWouldCloseACycle) {
  // x/a/1 -> y/b/1 -> x/a/2, x/a/3 alone, x/a/2 -> z/c/1, x/a/2 -> z/c/2. Group x/a would form
  // the cycle x/a -> y/b -> x/a, so it is split along the group-preferring topological order:
  // x/a/1, then x/a/3 (same group, ready), then y/b/1, then x/a/2 (a new run), then z/c/1, z/c/2.
  // Runs of x/a: {x/a/1, x/a/3} and {x/a/2}; y/b and z/c are on no cycle and stay whole.
  Graph g = make_graph({"x/a/1", "y/b/1", "x/a/2", "x/a/3", "z/c/1", "z/c/2"}, {1, 1, 1, 1, 1, 1},
                       {{0, 1, 1}, {1, 2, 2}, {2, 4, 3}, {2, 5, 4}});
  Coarsening c = coarsen(g, spotlight());
  expect_consistent(g, c);
  ASSERT_EQ(c.group_of, (std::vector<OpId>{0, 1, 2, 0, 3, 3}));
  EXPECT_EQ(c.coarse.op(0).name, "x/a");
  EXPECT_EQ(c.coarse.op(1).name, "y/b/1") << "a group of one keeps its operator's name";
  EXPECT_EQ(c.coarse.op(2).name, "x/a/2");
  EXPECT_EQ(c.coarse.op(3).name, "z/c");
  EXPECT_DOUBLE_EQ(coarse_bytes(c.coarse, 2, 3), 7);
}

TEST(Coarsening, SpotLightNamesAreMadeUnique) {
  // Two runs of "p/q" of two operators each: the second is named "p/q#2".
  Graph g = make_graph({"p/q/1", "p/q/2", "r/s/1", "p/q/3", "p/q/4"}, {1, 1, 1, 1, 1},
                       {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}});
  Coarsening c = coarsen(g, spotlight());
  expect_consistent(g, c);
  ASSERT_EQ(c.group_of, (std::vector<OpId>{0, 0, 1, 2, 2}));
  EXPECT_EQ(c.coarse.op(0).name, "p/q");
  EXPECT_EQ(c.coarse.op(2).name, "p/q#2");
}

TEST(Coarsening, ExpandPlacementRoundTrip) {
  Graph g = make_graph({"x/a/1", "y/b/1", "x/a/2", "x/a/3", "z/c/1", "z/c/2"}, {1, 1, 1, 1, 1, 1},
                       {{0, 1, 1}, {1, 2, 2}, {2, 4, 3}, {2, 5, 4}});
  Coarsening c = coarsen(g, spotlight());
  const std::vector<DeviceId> coarse_placement = {3, 1, 0, 2};
  const std::vector<DeviceId> fine = expand_placement(c, coarse_placement);
  EXPECT_EQ(fine, (std::vector<DeviceId>{3, 1, 0, 3, 2, 2}));
  // Back: every coarse operator's members agree, and give the coarse placement again.
  std::vector<DeviceId> back(c.coarse.num_operators(), -1);
  for (std::size_t i = 0; i < fine.size(); ++i) {
    if (back[c.group_of[i]] >= 0) {
      EXPECT_EQ(back[c.group_of[i]], fine[i]);
    }
    back[c.group_of[i]] = fine[i];
  }
  EXPECT_EQ(back, coarse_placement);
  EXPECT_THROW(expand_placement(c, std::vector<DeviceId>{0, 1}), std::invalid_argument);
}

TEST(Coarsening, RealGraphsStayAcyclicAndKeepTotals) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const std::string root = testutil::shared_graphs();
  for (const char* file : {"quickp/alexnet.json", "quickp/vgg.json", "msr-fiddle/bert_l-3_training.json",
                           "msr-fiddle/resnet50_training.json"}) {
    const Graph g = load_graph(root + "/" + file).graph;
    const std::vector<std::int32_t> wcc = weakly_connected_component_ids(g);
    const int components = *std::max_element(wcc.begin(), wcc.end()) + 1;
    for (const CoarseningConfig& config : {colocrl(), placeto(200), spotlight()}) {
      SCOPED_TRACE(std::string(file) + " " + std::string(coarsening_scheme_name(config.scheme)));
      Coarsening c = coarsen(g, config);
      expect_consistent(g, c);
      // msr-fiddle names are '.'-separated, so SpotLight's '/' prefixes may not group them.
      if (config.scheme != CoarseningScheme::SpotLight || std::string(file).starts_with("quickp")) {
        EXPECT_LT(c.coarse.num_operators(), g.num_operators());
      }
      if (config.scheme == CoarseningScheme::PlaceTo) {
        EXPECT_EQ(c.coarse.num_operators(), 200u) << components << " weak components";
      }
      if (config.scheme == CoarseningScheme::ColocRL) {
        for (OpId op = 0; op < static_cast<OpId>(c.coarse.num_operators()); ++op)
          ASSERT_NE(c.coarse.out_edges(op).size(), 1u) << c.coarse.op(op).name;
      }
      if (config.scheme == CoarseningScheme::SpotLight) {
        std::vector<std::string> prefix(c.coarse.num_operators());
        for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) {
          const std::string p = two_level_prefix(g.op(i).name);
          std::string& seen = prefix[c.group_of[i]];
          if (seen.empty()) seen = p;
          ASSERT_EQ(seen, p) << "a group mixes name prefixes";
        }
      }
      std::cout << "[          ] " << file << " " << coarsening_scheme_name(config.scheme) << ": "
                << g.num_operators() << " -> " << c.coarse.num_operators() << " operators\n";
    }
  }
}

// --- the `coarsen:` key of scenario files -------------------------------------------------------

namespace {

std::string coarsen_parse_error(const std::string& coarsen) {
  return testutil::input_error_message([&] {
    parse_scenario(YAML::Load("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                              "strategies: [{name: round-robin, coarsen: " + coarsen + "}]\n"),
                   "bad.yaml");
  });
}

}  // namespace

TEST(Coarsening, ScenarioKeyIsParsedStrictly) {
  std::string m = coarsen_parse_error("{scheme: colocrll}");
  EXPECT_NE(m.find("strategies[0].coarsen.scheme"), std::string::npos) << m;
  EXPECT_NE(m.find("colocrl, placeto, spotlight"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'colocrl'"), std::string::npos) << m;
  m = coarsen_parse_error("{scheme: placeto}");
  EXPECT_NE(m.find("strategies[0].coarsen.target"), std::string::npos) << m;
  m = coarsen_parse_error("{scheme: placeto, target: 0}");
  EXPECT_NE(m.find("strategies[0].coarsen.target"), std::string::npos) << m;
  m = coarsen_parse_error("{scheme: colocrl, target: 10}");
  EXPECT_NE(m.find("only the placeto scheme"), std::string::npos) << m;
  m = coarsen_parse_error("{scheme: spotlight, levels: 2}");
  EXPECT_NE(m.find("strategies[0].coarsen.levels"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown key"), std::string::npos) << m;
  m = coarsen_parse_error("colocrl");
  EXPECT_NE(m.find("strategies[0].coarsen"), std::string::npos) << m;
  EXPECT_EQ(coarsen_parse_error("{scheme: placeto, target: 2}"), "");
}

TEST(Coarsening, ScenarioRunsStrategiesOnTheCoarseGraph) {
  const std::string yaml = R"(
name: coarse
graph: {builtin: synthetic, layers: 3, branches: 2, ops_per_branch: 2}
cluster: {type: nvlink-servers, gpus: 4}
strategies:
  - {name: round-robin, label: rr-colocrl, coarsen: {scheme: colocrl}}
  - {name: round-robin, label: rr-placeto, coarsen: {scheme: placeto, target: 4}}
  - {name: round-robin, label: rr-spotlight, coarsen: {scheme: spotlight}}
  - round-robin
simulation: {engine: evaluator, trace: false}
)";
  const SweepPlan plan = plan_sweep(YAML::Load(yaml), "inline.yaml");
  const Scenario& s = plan.variants.at(0);
  ASSERT_TRUE(s.strategies[1].coarsen);
  EXPECT_EQ(s.strategies[1].coarsen->scheme, CoarseningScheme::PlaceTo);
  EXPECT_EQ(s.strategies[1].coarsen->target, 4);
  EXPECT_FALSE(s.strategies[3].coarsen);
  const fs::path dir = testutil::fresh_temp_dir("coarsen");
  const std::vector<PointRecord> r = testutil::run_plan(plan, dir);
  ASSERT_EQ(r.size(), 4u);
  for (const auto& o : r) ASSERT_TRUE(o.measurement) << o.label << ": " << o.reason;
  std::vector<std::string> warnings;
  const Graph g = load_graph_source(s.graph, s.file, warnings);

  // PlaceTo down to 4 coarse operators; round-robin deals them to the 4 GPUs, one each, so the
  // expanded placement uses every GPU.
  const auto& placeto_report = r[1].measurement->strategy_report.at("coarsening");
  EXPECT_EQ(placeto_report.at("scheme"), "placeto");
  EXPECT_EQ(placeto_report.at("coarse_operators"), 4);
  EXPECT_EQ(placeto_report.at("target"), 4);
  const double coarsen_s = placeto_report.at("coarsening_time").get<double>();
  EXPECT_GT(coarsen_s, 0);
  EXPECT_GE(r[1].measurement->search_time, coarsen_s) << "coarsening counts as search time";
  const std::vector<DeviceId> placed = load_placement(g, (dir / r[1].measurement->placement_file).string());
  EXPECT_EQ(std::set<DeviceId>(placed.begin(), placed.end()).size(), 4u);

  // The coarse graphs' sizes agree with coarsening the graph directly.
  EXPECT_EQ(r[0].measurement->strategy_report.at("coarsening").at("coarse_operators"),
            coarsen(g, colocrl()).coarse.num_operators());
  EXPECT_EQ(r[2].measurement->strategy_report.at("coarsening").at("coarse_operators"),
            coarsen(g, spotlight()).coarse.num_operators());
  EXPECT_FALSE(r[3].measurement->strategy_report.contains("coarsening"));
  // The saved placement is the expanded one: every ColocRL group sits on one GPU.
  const Coarsening cr = coarsen(g, colocrl());
  const std::vector<DeviceId> saved = load_placement(g, (dir / r[0].measurement->placement_file).string());
  std::vector<DeviceId> device_of_group(cr.coarse.num_operators(), -1);
  for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) {
    const DeviceId d = saved[i];
    if (device_of_group[cr.group_of[i]] < 0) device_of_group[cr.group_of[i]] = d;
    EXPECT_EQ(device_of_group[cr.group_of[i]], d) << g.op(i).name;
  }
  EXPECT_LT(cr.coarse.num_operators(), g.num_operators()) << "some group has several members";
  fs::remove_all(dir);
}
