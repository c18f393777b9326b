#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <yaml-cpp/yaml.h>

#include "placement/strategies/celeritas/celeritas.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;
using namespace placesim::celeritas;

namespace {

using testutil::make_strategy_from_yaml;
using testutil::option_error_field;

// Every tensor goes forward in `order`, which lists each operator once.
void expect_topological(const Graph& g, const std::vector<OpId>& order) {
  ASSERT_EQ(order.size(), g.num_operators());
  std::vector<int> pos(g.num_operators(), -1);
  for (std::size_t k = 0; k < order.size(); ++k) {
    ASSERT_EQ(pos[order[k]], -1) << "operator listed twice";
    pos[order[k]] = static_cast<int>(k);
  }
  for (const Tensor& t : g.tensors()) ASSERT_LT(pos[t.src], pos[t.dst]) << g.op(t.src).name << " -> " << g.op(t.dst).name;
}

// The critical-path graph of the order tests. Compute in seconds, 1-byte tensors; on a mesh of
// 1 B/s links every tensor costs 1 s.
//   S(1) -> A(1) -> C(1) -> T(1);  S -> B(5) -> D(1) -> T;  X(1) -> T
Graph critical_path_graph() {
  Graph g;
  for (auto [name, w] : {std::pair{"S", 1.0}, {"A", 1.0}, {"B", 5.0}, {"C", 1.0}, {"D", 1.0}, {"T", 1.0}, {"X", 1.0}})
    g.add_operator({name, "op", w, 0});
  // Ids in the order added (Graph::find needs a finalized graph): S 0, A 1, B 2, C 3, D 4, T 5, X 6.
  for (auto [a, b] : {std::pair{0, 1}, {0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 5}, {6, 5}}) g.add_tensor(a, b, 1.0);
  g.finalize("critical path graph");
  return g;
}

std::vector<std::string> names(const Graph& g, const std::vector<OpId>& order) {
  std::vector<std::string> out;
  for (OpId v : order) out.push_back(g.op(v).name);
  return out;
}

// Hand-placed operators for the placement tests: (name, compute s, memory B).
struct OpSpec {
  const char* name;
  double compute_s, memory;
};
Graph small_graph(std::initializer_list<OpSpec> ops, std::initializer_list<std::tuple<const char*, const char*, double>> edges) {
  Graph g;
  std::map<std::string, OpId> id;  // Graph::find needs a finalized graph
  for (const OpSpec& o : ops) id[o.name] = g.add_operator({o.name, "op", o.compute_s, o.memory});
  for (auto [a, b, bytes] : edges) g.add_tensor(id.at(a), id.at(b), bytes);
  g.finalize("hand graph");
  return g;
}

std::vector<std::string> real_graphs() {
  return {"/quickp/alexnet.json", "/quickp/vgg.json", "/msr-fiddle/gnmt_training.json",
          "/msr-fiddle/bert_l-3_training.json", "/msr-fiddle/inceptionv3_training.json",
          "/msr-fiddle/resnet50_training.json"};
}

}  // namespace

TEST(Celeritas, LevelsAndOrdersOnTheCriticalPathGraph) {
  // c = 1 s per tensor (1 byte at 1 B/s on both GPU pairs, no latency).
  // tlevel (eq. 2): S 0, X 0, A = 0+1+1 = 2, B = 2, C = 2+1+1 = 4, D = 2+5+1 = 8,
  //                 T = max(C 4+1+1, D 8+1+1, X 0+1+1) = 10.
  // blevel (eq. 3): T 1, C = 1+(1+1) = 3, D = 3, A = 1+(3+1) = 5, B = 5+(3+1) = 9,
  //                 S = 1+max(5+1, 9+1) = 11, X = 1+(1+1) = 3.
  // cpath: S 11, A 7, B 11, C 7, D 11, T 11, X 3: the critical path is S -> B -> D -> T (11 s).
  const Graph g = critical_path_graph();
  const Cluster c = testutil::dedicated_mesh(2, 1.0);
  const MeanCommCost comm(c);
  EXPECT_DOUBLE_EQ(comm(1.0), 1.0);
  EXPECT_DOUBLE_EQ(comm(0.0), 0.0);
  const Levels lv = compute_levels(g, comm);
  EXPECT_EQ(lv.tlevel, (std::vector<double>{0, 2, 2, 4, 8, 10, 0}));
  EXPECT_EQ(lv.blevel, (std::vector<double>{11, 5, 9, 3, 3, 1, 3}));
  EXPECT_EQ(lv.cpath, (std::vector<double>{11, 7, 11, 7, 11, 11, 3}));

  // CPD-TOPO: sources by decreasing cpath: S (11) before X (3). S's children A (7) and B (11)
  // are pushed by increasing cpath, so B is at the head: B, then its child D. T still waits for
  // C and X, so A comes next, then C; then X, after which T is ready.
  const std::vector<OpId> cpd = cpd_topo_order(g, comm);
  expect_topological(g, cpd);
  EXPECT_EQ(names(g, cpd), (std::vector<std::string>{"S", "B", "D", "A", "C", "X", "T"}));
  // DFS-TOPO (no key, lowest id first): S's children A (id 1) before B (id 2), depth first.
  const std::vector<OpId> dfs = dfs_topo_order(g);
  expect_topological(g, dfs);
  EXPECT_EQ(names(g, dfs), (std::vector<std::string>{"S", "A", "C", "B", "D", "X", "T"}));
  // Kahn's FIFO order (m-TOPO's) is neither: it takes both sources before anything else.
  EXPECT_NE(std::vector<OpId>(g.topological_order().begin(), g.topological_order().end()), cpd);
}

TEST(Celeritas, OrdersAreTopologicalOnRealGraphs) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Cluster c = testutil::nvlink_servers(4);
  for (const std::string& file : real_graphs()) {
    SCOPED_TRACE(file);
    const Graph g = load_graph(testutil::shared_graphs() + file).graph;
    expect_topological(g, cpd_topo_order(g, MeanCommCost(c)));
    expect_topological(g, dfs_topo_order(g));
  }
}

TEST(Celeritas, FusionByHandOnAChain) {
  // v0 -> v1 -> v2 -> v3 with tensors of 5, 1, 5 bytes (5, 1, 5 s at 1 B/s), 1 B of memory each.
  //  R = 4, no memory limit: one cluster, nothing cut (cost 0).
  //  R = 2: clusters of at most two; {v0 v1}{v2 v3} cuts only the 1 s tensor: cost 1.
  //  R = 2, M = 1 B: every cluster is one operator: all three tensors cut, 11.
  //  R = 3, M = 2 B: {v0 v1}{v2 v3} again (1); {v0}{v1 v2}{v3} would cut 10.
  const Graph g = small_graph({{"v0", 1, 1}, {"v1", 1, 1}, {"v2", 1, 1}, {"v3", 1, 1}},
                              {{"v0", "v1", 5}, {"v1", "v2", 1}, {"v2", "v3", 5}});
  const MeanCommCost comm(testutil::dedicated_mesh(2, 1.0));
  const std::vector<OpId> seq = {0, 1, 2, 3};
  Fusion f = optimal_fusion(g, seq, comm, {4, 1e300});
  EXPECT_EQ(f.num_clusters(), 1);
  EXPECT_DOUBLE_EQ(f.cut_cost, 0.0);
  f = optimal_fusion(g, seq, comm, {2, 1e300});
  EXPECT_EQ(f.cluster_of, (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(f.cut_cost, 1.0);
  f = optimal_fusion(g, seq, comm, {2, 1.0});
  EXPECT_EQ(f.cluster_of, (std::vector<std::int32_t>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(f.cut_cost, 11.0);
  f = optimal_fusion(g, seq, comm, {3, 2.0});
  EXPECT_EQ(f.starts, (std::vector<std::int32_t>{0, 2}));
  EXPECT_DOUBLE_EQ(f.cut_cost, 1.0);
  // An operator larger than M still forms a cluster on its own.
  f = optimal_fusion(g, seq, comm, {4, 0.5});
  EXPECT_EQ(f.num_clusters(), 4);
  // Colocation: v1 in class 0, v2 in class 1 (R = 4, no memory limit). One cluster would join the
  // two classes, so v1 and v2 must be cut apart; the cheapest cut between them is the 1 s tensor:
  // {v0 v1}{v2 v3}, cost 1.
  Graph classed;
  for (int i = 0; i < 4; ++i) classed.add_operator({"v" + std::to_string(i), "op", 1, 1, i == 1 ? 0 : i == 2 ? 1 : -1});
  classed.add_tensor(0, 1, 5);
  classed.add_tensor(1, 2, 1);
  classed.add_tensor(2, 3, 5);
  classed.finalize("classed chain");
  f = optimal_fusion(classed, seq, comm, {4, 1e300});
  EXPECT_EQ(f.cluster_of, (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_DOUBLE_EQ(f.cut_cost, 1.0);
  EXPECT_EQ(contract_fusion(classed, f).coarse.num_colocation_classes(), 2);
  // Not a topological order: refused.
  EXPECT_THROW(optimal_fusion(g, std::vector<OpId>{1, 0, 2, 3}, comm, {2, 1e300}), std::invalid_argument);
}

TEST(Celeritas, FusionMatchesBruteForceOnRandomSequences) {
  // Random DAGs on 2..10 operators whose ids are a topological order (tensors go from lower to
  // higher ids; some zero-byte), random memories, colocation classes, R and M. Brute force: every
  // one of the 2^(n-1) ways to cut the sequence, kept if each cluster has at most R operators, at
  // most M bytes (or is a single operator) and at most one colocation class, scored by the summed
  // cost of the tensors between clusters.
  std::mt19937 rng(12345);
  const MeanCommCost comm(testutil::dedicated_mesh(2, 1.0));
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 9);
    Graph g;
    std::vector<double> memory(n);
    std::vector<int> cls(n);
    for (int i = 0; i < n; ++i) {
      memory[i] = static_cast<double>(rng() % 5);
      cls[i] = rng() % 3 == 0 ? static_cast<int>(rng() % 3) : -1;
      g.add_operator({"v" + std::to_string(i), "op", 1.0, memory[i], cls[i]});
    }
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        if (rng() % 3 == 0) g.add_tensor(i, j, static_cast<double>(rng() % 7));
    g.finalize("random sequence");
    const int R = 1 + static_cast<int>(rng() % n);
    const double M = (rng() % 4 == 0) ? 1e300 : static_cast<double>(rng() % 10);
    std::vector<OpId> seq(n);
    for (int i = 0; i < n; ++i) seq[i] = i;

    double best = INFINITY;
    std::vector<std::int32_t> cluster_of(n);
    for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {  // bit k: cut between v_k and v_{k+1}
      bool feasible = true;
      int cluster = 0, length = 0, cluster_class = -1;
      double mem = 0;
      for (int i = 0; i < n && feasible; ++i) {
        if (i > 0 && (mask >> (i - 1)) & 1u) {
          ++cluster;
          length = 0;
          mem = 0;
          cluster_class = -1;
        }
        cluster_of[i] = cluster;
        ++length;
        mem += memory[i];
        feasible = length <= R && (length == 1 || mem <= M) && (cls[i] < 0 || cluster_class < 0 || cls[i] == cluster_class);
        if (cls[i] >= 0) cluster_class = cls[i];
      }
      if (feasible) best = std::min(best, fusion_cut_cost(g, cluster_of, comm));
    }
    const Fusion f = optimal_fusion(g, seq, comm, {R, M});
    SCOPED_TRACE("trial " + std::to_string(trial));
    EXPECT_NEAR(f.cut_cost, best, 1e-9);
    EXPECT_NEAR(fusion_cut_cost(g, f.cluster_of, comm), f.cut_cost, 1e-9);  // the clusters score what S says
    for (int c = 0; c < f.num_clusters(); ++c) {  // and respect R, M and one class per cluster
      const int end = c + 1 < f.num_clusters() ? f.starts[c + 1] : n;
      double mem = 0;
      std::set<int> classes;
      for (int i = f.starts[c]; i < end; ++i) {
        mem += memory[i];
        if (cls[i] >= 0) classes.insert(cls[i]);
      }
      EXPECT_LE(classes.size(), 1u);
      EXPECT_LE(end - f.starts[c], R);
      if (end - f.starts[c] > 1) {
        EXPECT_LE(mem, M);
      }
    }
  }
}

TEST(Celeritas, FusedRealGraphsStayAcyclic) {
  // Lemma 2: clusters are runs of the CPD-TOPO sequence, so every tensor goes from a cluster to
  // itself or to a later one, and the coarse graph finalizes (finalize throws on a cycle).
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Cluster c = testutil::nvlink_servers(4);
  const MeanCommCost comm(c);
  for (const std::string& file : real_graphs()) {
    SCOPED_TRACE(file);
    const Graph g = load_graph(testutil::shared_graphs() + file).graph;
    for (int R : {5, 50, 200}) {
      const Fusion f = optimal_fusion(g, cpd_topo_order(g, comm), comm, {R, 0.25 * c.device(0).memory_bytes});
      for (const Tensor& t : g.tensors()) ASSERT_LE(f.cluster_of[t.src], f.cluster_of[t.dst]);
      EXPECT_GE(f.num_clusters(), static_cast<int>((g.num_operators() + R - 1) / R));
      Coarsening coarse;
      ASSERT_NO_THROW(coarse = contract_fusion(g, f));
      EXPECT_EQ(coarse.coarse.num_operators(), static_cast<std::size_t>(f.num_clusters()));
      EXPECT_NEAR(coarse.coarse.total_compute(), g.total_compute(), 1e-9 * g.total_compute());
    }
  }
}

TEST(Celeritas, AdjustingPlacementMovesOnlyWhenTheWaitBeatsTheBackCost) {
  // A(5) -> B(10), A -> C(5), 5-byte tensors (5 s at 1 B/s), 2 GPUs, memory no object.
  // tlevel A 0, B 10, C 10; blevel B 10, C 5, A 5 + max(10+5, 5+5) = 20: order A, B, C.
  //  A: EST 0 on both -> gpu0 (lowest index), 0-5. B: EST 5 on gpu0, 10 on gpu1 -> stays, 5-15.
  //  C: EST 15 on gpu0 (busy until 15), 10 on gpu1; back_cost 0 (no outputs); 15 - 10 > 0: moves
  //  to gpu1, 10-15. Makespan 15 (Order-Place keeps all on gpu0: 20).
  const Cluster c = testutil::dedicated_mesh(2, 1.0);
  const MeanCommCost comm(c);
  {
    const Graph g = small_graph({{"A", 5, 0}, {"B", 10, 0}, {"C", 5, 0}}, {{"A", "B", 5}, {"A", "C", 5}});
    const std::vector<OpId> order = cpd_topo_order(g, comm);
    EXPECT_EQ(names(g, order), (std::vector<std::string>{"A", "B", "C"}));
    const CoarsePlacement adj = adjusting_placement(g, c, order, 1.0);
    EXPECT_EQ(adj.placement, (std::vector<DeviceId>{0, 0, 1}));
    EXPECT_EQ(adj.moves, 1);
    EXPECT_DOUBLE_EQ(adj.start[2], 10.0);
    EXPECT_DOUBLE_EQ(adj.schedule_makespan_s, 15.0);
    EXPECT_DOUBLE_EQ(Evaluator(g, c).latency(adj.placement), 15.0);
    EXPECT_EQ(order_place(g, c, order, 1.0).placement, (std::vector<DeviceId>{0, 0, 0}));
  }
  // Add C -> E (E takes 0 s) with 5 bytes. tlevel E = 10 + 5 + 5 = 20, blevel C = 5 + 5 = 10:
  // every cpath is 20, ties go to the lower id: order A, B, C, E. C would gain 15 - 10 = 5 s on
  // gpu1, but sending E's input back costs back_cost = 5 s, and eq. 9 needs strictly more: C and
  // E stay on gpu0 (makespan 20).
  {
    const Graph g = small_graph({{"A", 5, 0}, {"B", 10, 0}, {"C", 5, 0}, {"E", 0, 0}},
                                {{"A", "B", 5}, {"A", "C", 5}, {"C", "E", 5}});
    const std::vector<OpId> order = cpd_topo_order(g, comm);
    EXPECT_EQ(names(g, order), (std::vector<std::string>{"A", "B", "C", "E"}));
    const CoarsePlacement adj = adjusting_placement(g, c, order, 1.0);
    EXPECT_EQ(adj.placement, (std::vector<DeviceId>{0, 0, 0, 0}));
    EXPECT_EQ(adj.moves, 0);
    EXPECT_DOUBLE_EQ(adj.schedule_makespan_s, 20.0);
  }
  // With 4 bytes on C -> E the back cost is 4 < 5: C moves to gpu1 (10-15), and E follows it
  // there (EST 15 on gpu1 = d_k, 15 + 4 on gpu0). cpath C = 10 + 5 + 4 = 19 < 20 keeps B first.
  {
    const Graph g = small_graph({{"A", 5, 0}, {"B", 10, 0}, {"C", 5, 0}, {"E", 0, 0}},
                                {{"A", "B", 5}, {"A", "C", 5}, {"C", "E", 4}});
    const std::vector<OpId> order = cpd_topo_order(g, comm);
    EXPECT_EQ(names(g, order), (std::vector<std::string>{"A", "B", "C", "E"}));
    const CoarsePlacement adj = adjusting_placement(g, c, order, 1.0);
    EXPECT_EQ(adj.placement, (std::vector<DeviceId>{0, 0, 1, 1}));
    EXPECT_EQ(adj.moves, 1);
    EXPECT_DOUBLE_EQ(adj.schedule_makespan_s, 15.0);
  }
}

TEST(Celeritas, AdjustingPlacementInsertsIntoIdleSlotsAndRespectsMemory) {
  // Budget 10 B per GPU. A(4 s, 10 B) -> B(1 s, 1 B) with 2 bytes (2 s); C(1 s, 0 B) alone.
  // cpath A = 4 + 2 + 1 = 7 > C = 1: order A, B, C.
  //  A: gpu0 (EST 0 on both, lowest index), 0-4; gpu0 is now full.
  //  B: gpu0 has no room (EST +inf), gpu1 EST 4 + 2 = 6: moves, 6-7.
  //  C: gpu1 is idle in [0, 6): EST 0 by insertion (gpu0: 4); it stays on gpu1 (d_k) and runs 0-1.
  // Order-Place: A fills gpu0, B and C go to gpu1.
  const Cluster c = testutil::dedicated_mesh(2, 1.0, 0.0, 10.0);
  const Graph g = small_graph({{"A", 4, 10}, {"B", 1, 1}, {"C", 1, 0}}, {{"A", "B", 2}});
  const std::vector<OpId> order = cpd_topo_order(g, MeanCommCost(c));
  EXPECT_EQ(names(g, order), (std::vector<std::string>{"A", "B", "C"}));
  const CoarsePlacement adj = adjusting_placement(g, c, order, 1.0);
  EXPECT_EQ(adj.placement, (std::vector<DeviceId>{0, 1, 1}));
  EXPECT_DOUBLE_EQ(adj.start[1], 6.0);
  EXPECT_DOUBLE_EQ(adj.start[2], 0.0);
  EXPECT_DOUBLE_EQ(adj.schedule_makespan_s, 7.0);
  EXPECT_EQ(adj.memory_fallbacks, 0);
  EXPECT_EQ(adj.device_memory, (std::vector<double>{10, 1}));
  EXPECT_EQ(order_place(g, c, order, 1.0).placement, (std::vector<DeviceId>{0, 1, 1}));

  // Three 10 B operators in a chain: gpu0, gpu1, then nothing has room: best effort on the GPU
  // with the most free memory (0 B each: tie -> gpu0), counted as a fallback, for both placers.
  const Graph full = small_graph({{"P", 1, 10}, {"Q", 1, 10}, {"R", 1, 10}}, {{"P", "Q", 1}, {"Q", "R", 1}});
  const std::vector<OpId> chain = {0, 1, 2};
  const CoarsePlacement op = order_place(full, c, chain, 1.0);
  EXPECT_EQ(op.placement, (std::vector<DeviceId>{0, 1, 0}));
  EXPECT_EQ(op.memory_fallbacks, 1);
  const CoarsePlacement ap = adjusting_placement(full, c, chain, 1.0);
  EXPECT_EQ(ap.placement, (std::vector<DeviceId>{0, 1, 0}));
  EXPECT_EQ(ap.memory_fallbacks, 1);
}

TEST(Celeritas, ColocationClassesAreChargedAndPlacedAsOneUnit) {
  // f (6 B, class 0) -> g (1 B) -> b (6 B, class 0), budget 10 B, in that order.
  //  Order-Place: f's class is charged 12 B > 10 on every GPU: best effort (gpu0), then g fits
  //  gpu0 only if 12 + 1 <= 10: no, moves on to gpu1; b follows its class to gpu0.
  Graph g;
  g.add_operator({"f", "op", 1, 6, 0});
  g.add_operator({"g", "op", 1, 1});
  g.add_operator({"b", "op", 1, 6, 0});
  g.add_tensor(0, 1, 1);
  g.add_tensor(1, 2, 1);
  g.finalize("classes");
  const Cluster c = testutil::dedicated_mesh(2, 1.0, 0.0, 10.0);
  const std::vector<OpId> chain = {0, 1, 2};
  const CoarsePlacement op = order_place(g, c, chain, 1.0);
  EXPECT_EQ(op.placement, (std::vector<DeviceId>{0, 1, 0}));
  EXPECT_EQ(op.memory_fallbacks, 1);
  EXPECT_EQ(op.device_memory, (std::vector<double>{12, 1}));
  // Adjusting: f best effort on gpu0 as well; g has room only on gpu1 (EST 1 + 1 = 2 there, +inf on
  // gpu0): it moves; b follows its class to gpu0.
  const CoarsePlacement ap = adjusting_placement(g, c, chain, 1.0);
  EXPECT_EQ(ap.placement, (std::vector<DeviceId>{0, 1, 0}));
  EXPECT_EQ(ap.memory_fallbacks, 1);
  // With 20 B budgets the class fits: everything stays on gpu0 (a chain gains nothing by moving).
  const Cluster roomy = testutil::dedicated_mesh(2, 1.0, 0.0, 20.0);
  EXPECT_EQ(order_place(g, roomy, chain, 1.0).placement, (std::vector<DeviceId>{0, 0, 0}));
  EXPECT_EQ(adjusting_placement(g, roomy, chain, 1.0).placement, (std::vector<DeviceId>{0, 0, 0}));
}

TEST(Celeritas, OptionsAreValidated) {
  EXPECT_NO_THROW(make_strategy_from_yaml(
      "celeritas", "{exploration_range: 50, cluster_memory_fraction: 0.5, memory_fraction: 0.9, keep_better: false}"));
  EXPECT_NO_THROW(make_strategy_from_yaml("order-place", "{exploration_range: 1}"));
  const std::string range = "options.exploration_range";
  EXPECT_NE(option_error_field("celeritas", "{exploration_range: 0}").find(range), std::string::npos);
  EXPECT_NE(option_error_field("celeritas", "{exploration_range: 2.5}").find(range), std::string::npos);
  EXPECT_NE(option_error_field("order-place", "{cluster_memory_fraction: 0}").find("options.cluster_memory_fraction"),
            std::string::npos);
  EXPECT_NE(option_error_field("order-place", "{memory_fraction: 1.5}").find("options.memory_fraction"),
            std::string::npos);
  EXPECT_NE(option_error_field("celeritas", "{keep_better: maybe}").find("options.keep_better"), std::string::npos);
  EXPECT_NE(option_error_field("order-place", "{keep_better: true}").find("options.keep_better"), std::string::npos);
  EXPECT_NE(option_error_field("celeritas", "{R: 10}").find("options.R"), std::string::npos);
}

TEST(Celeritas, StrategiesOnTheForkGraph) {
  // fig3.1 (A 5 us -> B 10 us, A -> C 5 us, 100 kB = 5 us at 20 GB/s): fusion with R = 1 keeps
  // every operator; Adjusting Placement gives the 15 us of the by-hand derivation above (scaled),
  // Order-Place keeps all on gpu0 (20 us). With the default R everything fuses into one cluster.
  const Graph g = testutil::fig31_graph(1e5);
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  Evaluator ev(g, c);
  auto celeritas = make_strategy_from_yaml("celeritas", "{exploration_range: 1, portfolio: false}");
  const PlacementResult r = celeritas->place(g, c);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 1}));
  EXPECT_NEAR(ev.latency(r.placement), 15e-6, 1e-15);
  EXPECT_EQ(r.details["chosen"].get<std::string>(), "adjusting");
  EXPECT_EQ(r.details["clusters"].get<int>(), 3);
  auto order = make_strategy_from_yaml("order-place", "{exploration_range: 1}");
  EXPECT_EQ(order->place(g, c).placement, (std::vector<DeviceId>{0, 0, 0}));
  auto fused = make_strategy_from_yaml("celeritas", "{portfolio: false}");
  const PlacementResult one = fused->place(g, c);
  EXPECT_EQ(one.details["clusters"].get<int>(), 1);
  EXPECT_EQ(one.placement, (std::vector<DeviceId>{0, 0, 0}));
}

// The default keeps the better of Celeritas' answer and the warm-start portfolio's:
// with the default R everything fuses onto one GPU (20 us), HEFT finds the 15 us split; the
// report says who won and keeps Celeritas' own report under own_answer.
TEST(Celeritas, PortfolioKeepsTheBetterAnswer) {
  const Graph g = testutil::fig31_graph(1e5);
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  const PlacementResult r = make_strategy_from_yaml("celeritas", "{portfolio: true}")->place(g, c);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 15e-6, 1e-15);
  EXPECT_NE(r.facts.portfolio_winner, "celeritas");
  EXPECT_NEAR(r.details["portfolio"]["celeritas"].get<double>(), 20e-6, 1e-15);
  EXPECT_EQ(r.details["own_answer"]["clusters"].get<int>(), 1);
  EXPECT_FALSE(r.details.contains("clusters"));
}

TEST(Celeritas, AdjustingVersusOrderPlaceOnRealGraphsWithBindingMemory) {
  // Memory binds: every GPU gets 1.3 x total memory / #GPUs, so no GPU can hold the graph (1.3 / n
  // of it at most) and Order-Place has to spread over all of them. Default options (R = 200,
  // M = 0.25 x GPU memory).
  //
  // What the paper's proof claims (§5.2: "each adjustment step ... can reduce the running time or
  // at least keep the same with Order-Place") does not hold in general, not even in its own model:
  // an early move changes what every later operator sees. Measured here (evaluator latency, raw
  // Adjusting Placement vs Order-Place, 6 graphs x 2 and 4 GPUs): it wins 8 of 12, and loses by at
  // most 0.8% (alexnet on 2 and 4 GPUs, gnmt on 4); in its own block schedule it also loses some
  // cases at other settings. So the `celeritas` strategy keeps Order-Place's placement when the
  // evaluator prefers it (keep_better), and that is what is never worse.
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  int raw_wins = 0, cases = 0;
  for (const std::string& file : real_graphs()) {
    const Graph g = load_graph(testutil::shared_graphs() + file).graph;
    for (int n : {2, 4}) {
      SCOPED_TRACE(file + " on " + std::to_string(n) + " GPUs");
      const Cluster c = testutil::nvlink_servers(n, 1.3 * g.total_memory() / n);
      ASSERT_GT(g.total_memory(), c.device(0).memory_bytes) << "memory must bind";
      Evaluator ev(g, c);
      auto order = make_strategy_from_yaml("order-place", "{}");
      auto guarded = make_strategy_from_yaml("celeritas", "{portfolio: false}");
      auto raw = make_strategy_from_yaml("celeritas", "{keep_better: false, portfolio: false}");
      const PlacementResult ro = order->place(g, c);
      const PlacementResult rg = guarded->place(g, c);
      const PlacementResult rr = raw->place(g, c);
      const double order_s = ev.latency(ro.placement), guarded_s = ev.latency(rg.placement),
                   raw_s = ev.latency(rr.placement);
      EXPECT_LE(guarded_s, order_s);
      EXPECT_EQ(guarded_s, std::min(raw_s, order_s));
      EXPECT_EQ(rg.details["chosen"].get<std::string>(), raw_s <= order_s ? "adjusting" : "order-place");
      EXPECT_DOUBLE_EQ(rg.details["cost_model_latency_s"]["adjusting"].get<double>(), raw_s);
      EXPECT_LT(raw_s, 1.01 * order_s);
      raw_wins += raw_s < order_s;
      ++cases;
      // Both respect the memory that binds, and both use more than one GPU.
      for (const PlacementResult* r : {&ro, &rg, &rr}) {
        EXPECT_EQ(r->details["memory_fallbacks"].get<int>(), 0);
        const std::vector<double> used = device_memory(g, r->placement, n);
        for (double u : used) EXPECT_LE(u, c.device(0).memory_bytes);
        EXPECT_GT(std::count_if(used.begin(), used.end(), [](double u) { return u > 0; }), 1);
      }
    }
  }
  EXPECT_GE(raw_wins, cases / 2) << raw_wins << " of " << cases;
}

TEST(Celeritas, PlacesVggQuickly) {
  // VGG-16 (3,704 operators) on 4 GPUs: the whole strategy well under the 2 s bench target.
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/vgg.json").graph;
  const Cluster c = testutil::nvlink_servers(4);
  auto s = make_strategy_from_yaml("celeritas", "{portfolio: false}");
  const PlacementResult r = s->place(g, c);
  EXPECT_LT(r.search_seconds, 0.5);
  EXPECT_LT(r.details["clusters"].get<int>(), static_cast<int>(g.num_operators()) / 20);
}

TEST(Celeritas, MemoryRegressionPredictsTheLargeBatch) {
  // The zoo's operator memory is what it keeps resident: variables and optimizer slots (batch
  // independent) plus activations saved for the backward pass (proportional to the batch), so
  // memory = a + b x batch holds per operator and the fit on batches 16, 32, 64 should predict
  // batch 512 to rounding: we bound the relative error per operator by 1e-6 (of the larger of the
  // two values, 1 byte floor). Names match across batches, so every operator is predicted.
  models::ModelConfig config;
  config.model = "alexnet";
  config.batch = 512;
  const std::vector<std::int64_t> small = default_small_batches(config.batch);
  EXPECT_EQ(small, (std::vector<std::int64_t>{16, 32, 64}));
  const MemoryRegression fit = fit_memory_regression(config, small);
  const Graph large = models::zoo_graph(config);
  ASSERT_EQ(fit.names.size(), large.num_operators());
  const EstimatedGraph estimated = with_estimated_memory(large, fit, 512.0);
  EXPECT_EQ(estimated.predicted, large.num_operators());
  ASSERT_EQ(estimated.graph.num_operators(), large.num_operators());
  ASSERT_EQ(estimated.graph.num_tensors(), large.num_tensors());
  double worst = 0;
  int batch_dependent = 0;
  for (OpId v = 0; v < static_cast<OpId>(large.num_operators()); ++v) {
    const double actual = large.op(v).memory_bytes, predicted = estimated.graph.op(v).memory_bytes;
    worst = std::max(worst, std::abs(predicted - actual) / std::max({actual, predicted, 1.0}));
    EXPECT_EQ(estimated.graph.op(v).name, large.op(v).name);
    EXPECT_EQ(estimated.graph.op(v).compute_s, large.op(v).compute_s);
    const std::size_t k = static_cast<std::size_t>(v);
    if (fit.names[k] == large.op(v).name && fit.slope_bytes[k] > 0) ++batch_dependent;
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(batch_dependent, 0) << "a fit that sees no batch dependence tests nothing";
  EXPECT_NEAR(estimated.graph.total_memory(), large.total_memory(), 1e-6 * large.total_memory());
  // The small graphs alone would under-estimate badly: batch 64 holds far less than batch 512.
  models::ModelConfig at64 = config;
  at64.batch = 64;
  EXPECT_LT(models::zoo_graph(at64).total_memory(), 0.5 * large.total_memory());

  // Bad batches are input errors naming graph.batch.
  const std::vector<std::int64_t> one = {8, 8}, zero = {0, 4};
  EXPECT_THROW(fit_memory_regression(config, one), InputError);
  EXPECT_INPUT_ERROR(fit_memory_regression(config, zero), "graph.batch") << "batch 0 accepted";
}
