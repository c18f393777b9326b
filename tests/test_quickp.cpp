#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "placement/strategies/quickp/quickp.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {
// 20 GB/s and 100 kB tensors: every cross-GPU transfer takes exactly 5 us, as in Fig. 3.1.
constexpr double kBw = 20e9;
constexpr double kBytes = 5e-6 * kBw;

// Operators named by letter, compute in microseconds; edges (src, dst, bytes).
Graph make_graph(const std::vector<double>& compute_us, const std::vector<std::tuple<int, int, double>>& edges,
                 const std::vector<double>& memory = {}) {
  Graph g;
  for (std::size_t i = 0; i < compute_us.size(); ++i)
    g.add_operator({std::string(1, static_cast<char>('A' + i)), "op", compute_us[i] * 1e-6,
                    memory.empty() ? 0.0 : memory[i]});
  for (const auto& [s, d, b] : edges) g.add_tensor(s, d, b);
  g.finalize("test graph");
  return g;
}

// A -> B, A -> C, B -> D, C -> D.
Graph diamond(double a, double b, double c, double d, double bytes = kBytes) {
  return make_graph({a, b, c, d}, {{0, 1, bytes}, {0, 2, bytes}, {1, 3, bytes}, {2, 3, bytes}});
}

std::unique_ptr<Strategy> make_quickp(const std::string& yaml) {
  return quickp_strategy_info().make(YamlFields(YAML::Load(yaml), "s.yaml", "strategies[0].options"));
}

P2Options exact() {
  P2Options o;
  o.mip_gap = 0;
  o.time_limit_s = 10;
  return o;
}

Cluster nvlink_servers(int gpus) {
  NvlinkServersConfig cfg;
  cfg.gpus = gpus;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("test nvlink servers");
  return c;
}

Colocation no_groups(const Graph& g) {
  Colocation c;
  c.group_of.assign(g.num_operators(), -1);
  return c;
}
}  // namespace

// ---- parallelizable pairs ----

TEST(QuickPPairs, DiamondHasOnePair) {
  // B and C are the only operators with no path between them; A and D reach/are reached by all.
  Graph g = diamond(1, 1, 1, 1);
  Reachability r(g);
  EXPECT_EQ(r.count_parallelizable_pairs(), 1u);
  EXPECT_TRUE(r.parallelizable(1, 2));
  EXPECT_TRUE(r.reaches(0, 3));
  EXPECT_FALSE(r.reaches(3, 0));
  EXPECT_FALSE(r.parallelizable(0, 3));
  EXPECT_EQ(parallelizable_pairs(g), (std::vector<std::pair<OpId, OpId>>{{1, 2}}));
}

TEST(QuickPPairs, HandGraph) {
  // A -> B -> C, A -> D, E alone. Comparable: AB AC BC AD (4). Pairs of 5: 10. Parallel: 6 =
  // BD CD and E with each of A..D.
  Graph g = make_graph({1, 1, 1, 1, 1}, {{0, 1, 1}, {1, 2, 1}, {0, 3, 1}});
  Reachability r(g);
  EXPECT_EQ(r.count_parallelizable_pairs(), 6u);
  EXPECT_EQ(parallelizable_pairs(g),
            (std::vector<std::pair<OpId, OpId>>{{0, 4}, {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}}));
  // A chain has none (Theorem 1's premise).
  Graph chain = make_graph({1, 1, 1}, {{0, 1, 1}, {1, 2, 1}});
  EXPECT_EQ(Reachability(chain).count_parallelizable_pairs(), 0u);
}

TEST(QuickPPairs, BitsetsCrossWordBoundaries) {
  // 130 operators: a chain 0 -> 1 -> ... -> 69 and 60 isolated ones. Pairs: C(130,2) = 8385;
  // comparable: C(70,2) = 2415; parallel 5970.
  Graph g;
  for (int i = 0; i < 130; ++i) g.add_operator({"op" + std::to_string(i), "op", 1e-6, 0});
  for (int i = 0; i + 1 < 70; ++i) g.add_tensor(i, i + 1, 1);
  g.finalize("t");
  Reachability r(g);
  EXPECT_EQ(r.count_parallelizable_pairs(), 5970u);
  EXPECT_TRUE(r.reaches(0, 69));
  EXPECT_TRUE(r.parallelizable(69, 129));
}

// ---- fusion (ICC Algorithm 1) ----

TEST(QuickPFusion, StraightLinesAlwaysFuse) {
  // A chain fuses to one operator even with alpha = 0: compute and memory add up.
  Graph g = make_graph({3, 4, 5}, {{0, 1, 10}, {1, 2, 10}}, {1, 2, 4});
  Coarsening f = fuse_operators(g, 0.0);
  ASSERT_EQ(f.coarse.num_operators(), 1u);
  EXPECT_NEAR(f.coarse.op(0).compute_s, 12e-6, 1e-15);
  EXPECT_DOUBLE_EQ(f.coarse.op(0).memory_bytes, 7);
}

TEST(QuickPFusion, NeverFusesBothSidesBranching) {
  // Fig. 3: an edge whose source has out-degree >= 2 and destination in-degree >= 2 never fuses,
  // however cheap. K(2,2): A, B -> C, D: every edge is such an edge.
  Graph g = make_graph({1, 1, 1, 1}, {{0, 2, 1}, {0, 3, 1}, {1, 2, 1}, {1, 3, 1}});
  EXPECT_EQ(fuse_operators(g, 1.0).coarse.num_operators(), 4u);
}

TEST(QuickPFusion, CheapSideWithDegreeOneFuses) {
  // Fig. 4(b)/(d): A (10) -> B (1), A -> C (10); B -> D (10), C -> D. alpha = 2 us.
  // (A, B): out(A) = 2, in(B) = 1, p_B = 1 <= alpha: B fuses into A (AB = 11). Then
  // AB -> C, AB -> D, C -> D: (AB, C): in(C) = 1 but p_C = 10 > alpha and out(AB) = 2: no.
  // (AB, D): out 2, in 2: no. (C, D): out(C) = 1, p_C > alpha; in(D) = 2: no. 3 operators left.
  Graph g = diamond(10, 1, 10, 10);
  Coarsening f = fuse_operators(g, 2e-6);
  ASSERT_EQ(f.coarse.num_operators(), 3u);
  EXPECT_EQ(f.group_of[0], f.group_of[1]);
  EXPECT_NE(f.group_of[0], f.group_of[2]);
  EXPECT_NE(f.group_of[2], f.group_of[3]);
  EXPECT_NEAR(f.coarse.op(f.group_of[0]).compute_s, 11e-6, 1e-15);
  // The merged tensor AB -> D carries B -> D's bytes; A -> C keeps its own.
  Graph g2 = make_graph({10, 1, 10, 10}, {{0, 1, 5}, {0, 2, 7}, {1, 3, 11}, {2, 3, 13}});
  Coarsening f2 = fuse_operators(g2, 2e-6);
  double ab_to_d = 0, ab_to_c = 0;
  for (const Tensor& t : f2.coarse.tensors()) {
    if (t.src == f2.group_of[0] && t.dst == f2.group_of[3]) ab_to_d += t.bytes;
    if (t.src == f2.group_of[0] && t.dst == f2.group_of[2]) ab_to_c += t.bytes;
  }
  EXPECT_DOUBLE_EQ(ab_to_d, 11);
  EXPECT_DOUBLE_EQ(ab_to_c, 7);
}

TEST(QuickPFusion, ExpensiveSideWithDegreeOneDoesNotFuse) {
  // Fig. 4(a)/(c): the cheap operator is the branching one. A (1) -> B (10), A -> C (10), B, C -> D (10),
  // alpha = 2 us: (A, B): p_A <= alpha but out(A) = 2; p_B > alpha. Nothing fuses.
  Graph g = diamond(1, 10, 10, 10);
  EXPECT_EQ(fuse_operators(g, 2e-6).coarse.num_operators(), 4u);
  // With alpha above every compute time the diamond collapses: B into A, C into AB (in-degree
  // one), then the doubled edge AB(C) -> D is a straight line.
  Coarsening all = fuse_operators(g, 1.0);
  EXPECT_EQ(all.coarse.num_operators(), 1u);
  EXPECT_NEAR(all.coarse.op(0).compute_s, 31e-6, 1e-15);
}

TEST(QuickPFusion, JoinsColocationClasses) {
  Graph g;
  g.add_operator({"A", "op", 1e-6, 0, 0});
  g.add_operator({"B", "op", 1e-6, 0, 1});
  g.add_operator({"C", "op", 1e-6, 0, 1});
  g.add_operator({"D", "op", 1e-6, 0, -1});
  g.add_tensor(0, 1, 1);  // A -> B straight: fuses, joining classes 0 and 1
  g.add_tensor(2, 3, 1);  // C -> D straight
  g.finalize("t");
  Coarsening f = fuse_operators(g, 0.0);
  ASSERT_EQ(f.coarse.num_operators(), 2u);
  EXPECT_EQ(f.coarse.op(f.group_of[0]).colocation_class, f.coarse.op(f.group_of[2]).colocation_class);
  EXPECT_GE(f.coarse.op(f.group_of[0]).colocation_class, 0);
}

TEST(QuickPFusion, Threshold) {
  // Non-zero times 1..10 us: the 90th percentile by nearest rank is the 9th value.
  std::vector<double> us = {0, 3, 1, 2, 10, 9, 8, 7, 6, 5, 4, 0};
  Graph g = make_graph(us, {});
  EXPECT_NEAR(fusion_threshold(g, 0.9), 9e-6, 1e-15);
  EXPECT_NEAR(fusion_threshold(g, 1.0), 10e-6, 1e-15);
  EXPECT_EQ(fusion_threshold(make_graph({0, 0}, {}), 0.9), 0.0);
}

TEST(QuickPFusion, RealGraphsFuseEveryAllowedEdgeAndStayAcyclic) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  for (const char* name : {"alexnet", "vgg"}) {
    const Graph g = load_graph(testutil::shared_graphs() + "/quickp/" + name + ".json").graph;
    Coarsening f = fuse_operators(g, std::numeric_limits<double>::infinity());
    const Graph& c = f.coarse;  // finalize() already rejects cycles; check by hand too
    std::vector<int> pos(c.num_operators());
    for (std::size_t k = 0; k < c.topological_order().size(); ++k) pos[c.topological_order()[k]] = static_cast<int>(k);
    for (const Tensor& t : c.tensors()) EXPECT_LT(pos[t.src], pos[t.dst]) << name;
    EXPECT_LT(c.num_operators(), g.num_operators()) << name;
    EXPECT_NEAR(c.total_compute(), g.total_compute(), 1e-9 * g.total_compute()) << name;
    EXPECT_NEAR(c.total_memory(), g.total_memory(), 1e-9 * std::max(1.0, g.total_memory())) << name;
    // A fixed point: with alpha infinite every edge fuses unless both ends branch.
    for (OpId i = 0; i < static_cast<OpId>(c.num_operators()); ++i)
      for (EdgeId e : c.out_edges(i))
        EXPECT_TRUE(c.out_edges(i).size() >= 2 && c.in_edges(c.tensor(e).dst).size() >= 2) << name;
    // At the ICC threshold it keeps more operators than at infinity.
    EXPECT_GE(fuse_operators(g, fusion_threshold(g, 0.9)).coarse.num_operators(), c.num_operators()) << name;
  }
}

// ---- co-location (eq. 7) ----

TEST(QuickPColocation, Fig31GroupsAWithB) {
  // r_B = 10, r_C = 5; both tensors take 5 us: A joins B (10 + 5 > 5 + 5). C stays alone.
  Graph g = testutil::fig31_graph(kBytes);
  Colocation c = colocate(g, kBw);
  EXPECT_EQ(c.num_groups, 1);
  EXPECT_EQ(c.group_of, (std::vector<int>{0, 0, -1}));
}

TEST(QuickPColocation, CommunicationCountsAndGroupsChain) {
  // b = 1 GB/s. B -> D (r_D = 2), B -> E (r_E = 3): r_B = 1 + 3 = 4 and B picks E. A -> B carries
  // 10 kB (10 us), A -> C (r_C = 5) 0 bytes: A compares 4 + 10 = 14 with 5 and picks B.
  // Groups: {A, B, E}; C and D alone.
  Graph g = make_graph({1, 1, 5, 2, 3}, {{0, 1, 1e4}, {0, 2, 0}, {1, 3, 0}, {1, 4, 0}});
  Colocation c = colocate(g, 1e9);
  EXPECT_EQ(c.num_groups, 1);
  EXPECT_EQ(c.group_of, (std::vector<int>{0, 0, -1, -1, 0}));
  // Without the transfer, A picks C (5 > 4): two groups {A, C} and {B, E}.
  Graph g0 = make_graph({1, 1, 5, 2, 3}, {{0, 1, 0}, {0, 2, 0}, {1, 3, 0}, {1, 4, 0}});
  Colocation c0 = colocate(g0, 1e9);
  EXPECT_EQ(c0.num_groups, 2);
  EXPECT_EQ(c0.group_of, (std::vector<int>{0, 1, 0, -1, 1}));
}

TEST(QuickPColocation, BandwidthFromCluster) {
  EXPECT_DOUBLE_EQ(colocation_bandwidth(nvlink_servers(2)), 50e9);  // one server: NVLink
  EXPECT_DOUBLE_EQ(colocation_bandwidth(nvlink_servers(4)), 20e9);  // across servers: Ethernet
  EXPECT_TRUE(std::isinf(colocation_bandwidth(testutil::dedicated_mesh(1, kBw))));
}

// ---- P2 ----

TEST(QuickPSolver, Fig31TwoGpusIs15us) {
  // A with B on one GPU (A 0-5, B 5-15), C on the other (input at 10, runs 10-15): 15 us.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  P2Solution s = solve_p2(g, c, colocate(g, colocation_bandwidth(c)), exact());
  EXPECT_EQ(s.status, P2Status::Optimal);
  EXPECT_TRUE(s.warm_started);  // single-device (20 us) or HEFT was accepted as the first incumbent
  EXPECT_NEAR(s.objective, 15e-6, 1e-12);
  EXPECT_NEAR(Evaluator(g, c).latency(s.placement), 15e-6, 1e-12);
  EXPECT_EQ(s.placement[0], s.placement[1]);
  EXPECT_NE(s.placement[0], s.placement[2]);
}

TEST(QuickPSolver, NanosecondScaleIsSolvedExactly) {
  // Fig. 3.1 a thousand times faster (A 5 ns, B 10 ns, C 5 ns, 100-byte tensors: 5 ns each), no
  // warm start: 15 ns. Guards the model's time unit against CBC's absolute tolerances (a cutoff
  // increment of 1e-5 in seconds would prune every improvement here).
  Graph g = make_graph({5e-3, 10e-3, 5e-3}, {{0, 1, 100}, {0, 2, 100}});
  Cluster c = testutil::dedicated_mesh(2, kBw);
  P2Options o = exact();
  o.warm_start = false;
  P2Solution s = solve_p2(g, c, no_groups(g), o);
  EXPECT_EQ(s.status, P2Status::Optimal);
  EXPECT_NEAR(s.objective, 15e-9, 1e-13);
  EXPECT_NEAR(Evaluator(g, c).latency(s.placement), 15e-9, 1e-13);
}

TEST(QuickPSolver, ChainStaysOnOneGpu) {
  // Theorem 1: no parallelizable pairs -> one device; makespan = total compute (3 + 4 + 5 us). Both
  // tensors carry bytes, so any split is strictly slower and the one-GPU optimum is unique.
  Graph g = make_graph({3, 4, 5}, {{0, 1, kBytes}, {1, 2, kBytes}});
  Cluster c = testutil::dedicated_mesh(3, kBw);
  P2Options o = exact();
  o.warm_start = false;
  P2Solution s = solve_p2(g, c, no_groups(g), o);
  EXPECT_NEAR(s.objective, 12e-6, 1e-12);
  EXPECT_EQ(s.placement[0], s.placement[1]);
  EXPECT_EQ(s.placement[1], s.placement[2]);
}

TEST(QuickPSolver, ObjectiveEqualsReplayOfItsOrder) {
  // Small graphs solved exactly without fusion or co-location: replaying the solver's per-GPU
  // order (by start time) gives exactly its makespan.
  struct Case {
    Graph g;
    int gpus;
  };
  std::vector<Case> cases;
  cases.push_back({diamond(2, 10, 8, 3), 2});
  cases.push_back({diamond(2, 10, 8, 3, 4 * kBytes), 2});  // 20 us transfers: one GPU wins
  cases.push_back({make_graph({1, 6, 5, 4, 2, 1}, {{0, 1, kBytes}, {0, 2, kBytes}, {0, 3, kBytes}, {1, 4, kBytes},
                                                  {2, 4, 0}, {3, 5, kBytes}, {4, 5, kBytes}}),
                   3});
  for (auto& [g, gpus] : cases) {
    Cluster c = testutil::dedicated_mesh(gpus, kBw);
    P2Solution s = solve_p2(g, c, no_groups(g), exact());
    ASSERT_EQ(s.status, P2Status::Optimal);
    const Schedule replay = replay_order(g, c, s.placement, s.device_order);
    EXPECT_NEAR(replay.latency, s.objective, 1e-9 * s.objective);
    // The solver never does worse than one GPU.
    EXPECT_LE(s.objective, g.total_compute() * (1 + 1e-9));
  }
  // Diamond, 5 us transfers: B (10) and C (8) in parallel: A 0-2, B 2-12 on gpu0; C on gpu1
  // gets its input at 7, runs 7-15, D (with B) gets C's output at 20: 23 us. One GPU: 23 us too;
  // C with D on gpu1 instead: D waits for B's output 12+5 = 17, then C 7-15, D 17-20: 20 us.
  EXPECT_NEAR(solve_p2(cases[0].g, testutil::dedicated_mesh(2, kBw), no_groups(cases[0].g), exact()).objective,
              20e-6, 1e-12);
}

TEST(QuickPSolver, MemoryForcesASplit) {
  // Two independent operators of 10 GB each on 16 GB GPUs: they cannot share one.
  Graph g = make_graph({1, 1}, {}, {10e9, 10e9});
  Cluster c = testutil::dedicated_mesh(2, kBw, 0.0, 16e9);
  P2Solution s = solve_p2(g, c, no_groups(g), exact());
  EXPECT_NE(s.placement[0], s.placement[1]);
  // Three such operators on two GPUs cannot fit: a placement still comes back.
  Graph g3 = make_graph({1, 1, 1}, {}, {10e9, 10e9, 10e9});
  P2Solution s3 = solve_p2(g3, c, no_groups(g3), exact());
  EXPECT_EQ(s3.status, P2Status::Infeasible);
  EXPECT_EQ(s3.placement.size(), 3u);
}

TEST(QuickPSolver, ModelBuildStopsAtTheTimeLimitAndTheWarmStartIsTheAnswer) {
  // The diamond A 5, B 10, C 10, D 5 us with 5 us transfers: the optimum is 25 us (A, B on one
  // GPU, C and D on the other: C 10-20 after A's tensor, D 20-25 when B's arrives at 20; nothing
  // reaches the critical path's 20 us, since one branch waits for a transfer), and the trivial
  // bound is 20 us, so P2 needs its model. With a time limit that has passed before the model is
  // built, the build stops at the ordering rows, nothing is solved, and the warm start is the
  // answer, as time_limit.
  Graph g = diamond(5, 10, 10, 5);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  P2Options o = exact();
  o.time_limit_s = 1e-9;
  P2Solution s = solve_p2(g, c, no_groups(g), o);
  EXPECT_TRUE(s.model_incomplete);
  EXPECT_EQ(s.status, P2Status::TimeLimit);
  EXPECT_EQ(s.nodes, 0);
  EXPECT_NEAR(s.objective, s.warm_start_objective, 1e-15);
  EXPECT_GE(s.objective, 25e-6 - 1e-12);
  // Given the time, the same model is built whole and solved to the optimum.
  P2Solution whole = solve_p2(g, c, no_groups(g), exact());
  EXPECT_FALSE(whole.model_incomplete);
  EXPECT_EQ(whole.status, P2Status::Optimal);
  EXPECT_GT(whole.rows, s.rows);
  EXPECT_NEAR(whole.objective, 25e-6, 1e-12);
}

TEST(QuickPSolver, WritesModel) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  const auto path = std::filesystem::temp_directory_path() / "quickp_test_model.lp";
  std::filesystem::remove(path);
  P2Options o = exact();
  o.write_model = path.string();
  solve_p2(g, c, no_groups(g), o);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("inimize"), std::string::npos) << text.substr(0, 200);
  std::filesystem::remove(path);
}

// ---- strategy ----

TEST(QuickPStrategy, Fig31Is15us) {
  // alpha 0: nothing fuses (no straight line); co-location groups A with B.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  auto quickp = make_quickp("{alpha: 0, mip_gap: 0, unit_limits: false}");
  PlacementResult r = quickp->place(g, c);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 15e-6, 1e-12);
  EXPECT_EQ(r.details["fused_operators"], 3);
  EXPECT_EQ(r.details["groups"], 1);
  EXPECT_EQ(r.details["status"], "optimal");
  // With the default 90th percentile (10 us here) and the papers' fusion, B fuses into A and then
  // C: one GPU, 20 us.
  PlacementResult all = (make_quickp("{unit_limits: false, portfolio: false, polish: 0}"))->place(g, c);
  EXPECT_EQ(all.details["fused_operators"], 1);
  EXPECT_NEAR(Evaluator(g, c).latency(all.placement), 20e-6, 1e-12);
  // Optimal for the one-operator problem P2 was posed, 33% above the whole problem's 15 us bound.
  EXPECT_EQ(all.details["p2_status"], "optimal");
  EXPECT_EQ(all.details["status"], "reduced_optimal");
  EXPECT_EQ(all.details["reduced"]["fused_operators"], 1);
  // With the unit limits (2 units, at most 10 us of work each) A + B (15 us) may not fuse; C
  // fuses into A (10 us), and AC -> B stops there: two operators.
  PlacementResult limited = (make_quickp("{}"))->place(g, c);
  EXPECT_EQ(limited.details["fused_operators"], 2);
}

TEST(QuickPStatus, OptimalOnlyAgainstTheWholeProblem) {
  // Within mip_gap of the whole problem's bound: optimal, whatever P2 was posed.
  EXPECT_EQ(quickp_status(P2Status::TimeLimit, 10.4, 10, false, 0, 0.05), QuickPStatus::Optimal);
  // P2 proved its reduced problem, but the answer is 25% above the whole problem's bound.
  EXPECT_EQ(quickp_status(P2Status::Optimal, 20, 15, false, 20, 0.05), QuickPStatus::ReducedOptimal);
  // P2 posed the whole problem: its bound counts.
  EXPECT_EQ(quickp_status(P2Status::Optimal, 20, 15, true, 20, 0.05), QuickPStatus::Optimal);
  EXPECT_EQ(quickp_status(P2Status::NodeLimit, 20, 15, true, 16, 0.05), QuickPStatus::NodeLimit);
  EXPECT_EQ(quickp_status(P2Status::Infeasible, 20, 15, false, 0, 0.05), QuickPStatus::Infeasible);
}

TEST(QuickPStrategy, ReportsTheWholeProblemsLowerBound) {
  // Fig. 3.1 on 2 GPUs: the critical path A -> B is 15 us, the work per GPU 10 us: bound 15 us.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacementResult r = make_quickp("{alpha: 0, mip_gap: 0, unit_limits: false}")->place(g, c);
  EXPECT_NEAR(r.details["lower_bound_s"].get<double>(), 15e-6, 1e-12);
  EXPECT_NEAR(r.details["lower_bound_critical_path_s"].get<double>(), 15e-6, 1e-12);
  EXPECT_NEAR(r.details["lower_bound_work_s"].get<double>(), 10e-6, 1e-12);
  EXPECT_NEAR(r.details["evaluator_latency_s"].get<double>(), 15e-6, 1e-12);
  EXPECT_EQ(r.details["status"], "optimal");  // 15 us meets the bound
  EXPECT_EQ(r.details["reduced"]["groups"], 1);  // A with B: a reduced problem, optimal all the same
}

TEST(QuickPStrategy, DiamondIsNotFusedBelowTheGpus) {
  // The diamond A(1 ms) -> B(5 ms), A -> C(5 ms), B -> D(1 ms), C -> D, every transfer 0.1 ms, on
  // 4 GPUs. The papers' fusion (alpha = 90th percentile = 5 ms) fuses it into one operator: one GPU,
  // 12 ms. By hand: B and C must run on different GPUs to overlap; say B with A. If D is with A
  // too, C pays two transfers: 1 + 0.1 + 5 + 0.1 + 1 = 7.2 ms (HEFT's answer). If D is with C
  // instead, each path crosses GPUs once: A 0-1, B 1-6 on one GPU; C 1.1-6.1 and D 6.1-7.1 (B's
  // output arrives at 6.1) on another: 7.1 ms. No placement has neither path cross (that is one
  // GPU), so 7.1 ms is optimal (bound: critical path 7 ms).
  const double ms = 1e3;  // make_graph takes microseconds
  Graph g = make_graph({1 * ms, 5 * ms, 5 * ms, 1 * ms}, {{0, 1, 1e-4 * kBw}, {0, 2, 1e-4 * kBw}, {1, 3, 1e-4 * kBw},
                                                           {2, 3, 1e-4 * kBw}});
  Cluster c = testutil::dedicated_mesh(4, kBw);
  PlacementResult papers = make_quickp("{unit_limits: false, portfolio: false, polish: 0}")->place(g, c);
  EXPECT_EQ(papers.details["fused_operators"], 1);
  EXPECT_NEAR(Evaluator(g, c).latency(papers.placement), 12e-3, 1e-12);
  // With the limits: 4 units for 4 GPUs (nothing fuses); the group {A, B} holds 6 ms > 3 ms (its
  // share of the work) and is split again: P2 is posed the whole problem.
  PlacementResult r = make_quickp("{mip_gap: 0}")->place(g, c);
  EXPECT_EQ(r.details["fused_operators"], 4);
  EXPECT_EQ(r.details["groups"], 0);
  EXPECT_FALSE(r.details.contains("reduced"));
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 7.1e-3, 1e-9);
  EXPECT_EQ(r.details["status"], "optimal");
  EXPECT_NEAR(r.details["lower_bound_s"].get<double>(), 7e-3, 1e-12);
}

TEST(QuickPStrategy, PolishMovesWhatTheReductionFused) {
  // The diamond of DiamondIsNotFusedBelowTheGpus with the papers' reduction: one fused operator,
  // 12 ms on one GPU. The polish moves the graph's own operators: C to a second GPU gives 7.2 ms
  // (D waits for C's output, 6.1 + 0.1), D beside C then 7.1 ms, the optimum derived there.
  const double ms = 1e3;
  Graph g = make_graph({1 * ms, 5 * ms, 5 * ms, 1 * ms}, {{0, 1, 1e-4 * kBw}, {0, 2, 1e-4 * kBw}, {1, 3, 1e-4 * kBw},
                                                           {2, 3, 1e-4 * kBw}});
  Cluster c = testutil::dedicated_mesh(4, kBw);
  PlacementResult r = make_quickp("{unit_limits: false, portfolio: false}")->place(g, c);
  EXPECT_EQ(r.details["fused_operators"], 1);
  EXPECT_NEAR(r.details["polish"]["start_latency_s"].get<double>(), 12e-3, 1e-12);
  EXPECT_GE(r.details["polish"]["improvements"].get<int>(), 2);
  EXPECT_EQ(r.details["polish"]["stopped_by"], "converged");
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 7.1e-3, 1e-9);
  // Within mip_gap (5%) of the whole problem's bound, the 7 ms critical path: optimal, whatever
  // P2 was posed.
  EXPECT_EQ(r.details["status"], "optimal");
  // Under a time limit the polish gets its share, and the call stays within it.
  PlacementResult timed = make_quickp("{unit_limits: false, portfolio: false, time_limit: 2s}")->place(g, c);
  EXPECT_NEAR(Evaluator(g, c).latency(timed.placement), 7.1e-3, 1e-9);
  EXPECT_LT(timed.search_seconds, 2.0);
}

TEST(QuickPFusion, LimitsKeepUnitsForTheGpus) {
  // A chain of six 1 us operators always fuses to one; 3 GPUs ask for 3 units of at most 2 us.
  Graph chain = make_graph({1, 1, 1, 1, 1, 1}, {{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 1}},
                           {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(fuse_operators(chain, 0).coarse.num_operators(), 1u);
  const UnitLimits limits = unit_limits(chain, testutil::dedicated_mesh(3, kBw));
  EXPECT_EQ(limits.min_units, 3);
  EXPECT_NEAR(limits.max_work, 2e-6, 1e-15);
  const Coarsening fused = fuse_operators(chain, 0, limits);
  EXPECT_EQ(fused.coarse.num_operators(), 3u);
  for (const Operator& op : fused.coarse.operators()) EXPECT_LE(op.compute_s, 2e-6 * (1 + 1e-9));
  // Memory: no fused operator above 2 bytes either.
  UnitLimits memory;
  memory.max_memory = 2;
  const Coarsening small = fuse_operators(chain, 0, memory);  // named: the loop must not outlive it
  for (const Operator& op : small.coarse.operators()) EXPECT_LE(op.memory_bytes, 2);
}

TEST(QuickPStrategy, SplitsAColocationGroupLargerThanAGpu) {
  // Fig. 3.1 with A and B of 6 GB, C of 1 GB, on two 10 GB GPUs, the papers' reduction (alpha 0):
  // co-location groups A with B, 12 GB, which no GPU holds; P2 was infeasible and QuickP fell back
  // to one GPU (13 GB: out of memory). The group is cut (A | B). By hand: A and B cannot share a
  // GPU, so B waits for A's output: 5 + 5 + 10 = 20 us at best, with C beside A (A 0-5, C 5-10 on
  // one GPU, B 10-20 on the other); C beside B ends at 25 us.
  Graph g = make_graph({5, 10, 5}, {{0, 1, kBytes}, {0, 2, kBytes}}, {6e9, 6e9, 1e9});
  Cluster c = testutil::dedicated_mesh(2, kBw, 0.0, 10e9);
  PlacementResult r = make_quickp("{alpha: 0, mip_gap: 0, unit_limits: false}")->place(g, c);
  EXPECT_EQ(r.details["group_splits"], 1);
  EXPECT_EQ(r.details["groups"], 0);
  for (double m : device_memory(g, r.placement, 2)) EXPECT_LE(m, 10e9);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 20e-6, 1e-12);
}

TEST(QuickPStrategy, NoPlacementFitsIsInfeasibleForEveryStrategy) {
  // 3 x 6 GB on two 8 GB GPUs: 18 GB against 16 GB in all.
  Graph g = make_graph({1, 1, 1}, {{0, 1, 1}, {1, 2, 1}}, {6e9, 6e9, 6e9});
  Cluster c = testutil::dedicated_mesh(2, kBw, 0.0, 8e9);
  EXPECT_NE(infeasibility_reason(g, c).find("the 2 GPUs hold"), std::string::npos) << infeasibility_reason(g, c);
  for (const char* name : {"single-device", "quickp", "heft"})
    EXPECT_THROW(make_strategy(name, YAML::Load("{}"), "s.yaml", "strategies[0]")->place(g, c), InfeasibleProblem)
        << name;
  // A colocation class of 12 GB against GPUs of 10 GB (20 GB in all): no placement either.
  Graph cls;
  for (int i = 0; i < 2; ++i) cls.add_operator({std::string(1, static_cast<char>('A' + i)), "op", 1e-6, 6e9, 0});
  cls.add_tensor(0, 1, 1);
  cls.finalize("class");
  const Cluster ten = testutil::dedicated_mesh(2, kBw, 0.0, 10e9);
  EXPECT_NE(infeasibility_reason(cls, ten).find("colocation class of operator 'A'"), std::string::npos)
      << infeasibility_reason(cls, ten);
  EXPECT_EQ(infeasibility_reason(g, testutil::dedicated_mesh(3, kBw, 0.0, 8e9)), "");
}

TEST(QuickPStrategy, NeverWorseThanThePortfolio) {
  // Fig. 3.1 with the default options: the limited fusion leaves AC (10 us) -> B (10 us), whose
  // best is one GPU, 20 us. HEFT puts C beside A and B alone: A 0-5, C 5-10, B 10-20 is 20 us as
  // well, but B with A and C alone gives A 0-5, B 5-15, C 10-15 (its input at 5 + 5): 15 us, the
  // critical path. QuickP keeps the best of its answer and the portfolio's, by the evaluator.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacementResult r = make_quickp("{portfolio: true}")->place(g, c);
  const double latency = Evaluator(g, c).latency(r.placement);
  for (const auto& [name, v] : r.details["portfolio"].items())
    if (v.is_number()) {
      EXPECT_LE(latency, v.get<double>() * (1 + 1e-12)) << name;
    }
  EXPECT_TRUE(r.details["portfolio"].contains("single-device"));
  EXPECT_TRUE(r.details["portfolio"].contains("heft"));
  EXPECT_NEAR(latency, 15e-6, 1e-12);
  EXPECT_NE(r.facts.portfolio_winner, "quickp");
  EXPECT_EQ(r.details["status"], "optimal");  // 15 us is the critical path
}

TEST(QuickPStrategy, OptionsAreValidated) {
  for (const char* bad : {"{mip_gap: 2}", "{time_limit: 0}", "{alpha_percentile: 1.5}", "{alpha: -1}"}) {
    const std::string key = std::string(bad).substr(1, std::string(bad).find(':') - 1);
    EXPECT_INPUT_ERROR(make_quickp(bad), "options." + key) << bad;
  }
  EXPECT_THROW(make_quickp("{gap: 0.1}"), InputError);
  EXPECT_NO_THROW(make_strategy("quickp", YAML::Load("{}"), "s.yaml", "strategies[0]"));  // registered
  EXPECT_NO_THROW(make_quickp("{alpha: 0, mip_gap: 0.1, time_limit: 5s, warm_start: false, write_model: m.lp}"));
}
