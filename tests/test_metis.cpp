#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "placement/strategies/metis/metis_strategy.h"
#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using testutil::nvlink_servers;

// `chains` chains "c<i>_<j>" of `length` operators (1 ms each), consecutive operators joined by
// `bytes`-byte tensors; chain i's operators are ids i * length .. i * length + length - 1.
Graph chains(int count, int length, double bytes, std::vector<std::tuple<int, int, double>> cross = {},
             double memory = 0, std::vector<int> coloc = {}) {
  Graph g;
  for (int c = 0; c < count; ++c)
    for (int j = 0; j < length; ++j) {
      const int id = c * length + j;
      const int cls = id < static_cast<int>(coloc.size()) ? coloc[id] : -1;
      g.add_operator({fmt::format("c{}_{}", c, j), "op", 1e-3, memory, cls});
    }
  for (int c = 0; c < count; ++c)
    for (int j = 0; j + 1 < length; ++j) g.add_tensor(c * length + j, c * length + j + 1, bytes);
  for (const auto& [a, b, by] : cross) g.add_tensor(a, b, by);
  g.finalize("chains");
  return g;
}

PlacementResult run_metis(const Graph& g, const Cluster& c, MetisConfig cfg = {}) {
  MetisStrategy s(cfg);
  return s.place(g, c);
}

bool all_on(const std::vector<DeviceId>& p, int first, int last, DeviceId d) {
  for (int i = first; i <= last; ++i)
    if (p[i] != d) return false;
  return true;
}

}  // namespace

TEST(Metis, TwoDisconnectedEqualChainsGetOneGpuEachWithZeroCut) {
  // Two identical chains of 4 x 1 ms: the only 2-way split with balance within 3% and a zero cut
  // is one chain per GPU (any other balanced split cuts at least one 1 MB tensor).
  const Graph g = chains(2, 4, 1e6);
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  for (auto method : {MetisConfig::Method::Kway, MetisConfig::Method::Recursive, MetisConfig::Method::Best}) {
    MetisConfig cfg;
    cfg.method = method;
    const PlacementResult r = run_metis(g, c, cfg);
    EXPECT_TRUE(all_on(r.placement, 0, 3, r.placement[0]));
    EXPECT_TRUE(all_on(r.placement, 4, 7, r.placement[4]));
    EXPECT_NE(r.placement[0], r.placement[4]);
    EXPECT_EQ(r.details["edge_cut_bytes"].get<double>(), 0.0);
    EXPECT_EQ(r.details["metis_edge_cut"].get<long>(), 0);
    EXPECT_EQ(r.details["gpu_compute_s"], nlohmann::json({4e-3, 4e-3}));
  }
}

TEST(Metis, ColocationClassesAreContractedAndKept) {
  // The same two chains, but c0_3 (id 3) and c1_0 (id 4) share class 0: without the class they
  // are on different GPUs (test above); with it they must share one.
  std::vector<int> coloc(8, -1);
  coloc[3] = coloc[4] = 0;
  const Graph g = chains(2, 4, 1e6, {}, 0, coloc);
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  const PlacementResult r = run_metis(g, c);  // Strategy::place validates the classes too
  EXPECT_EQ(r.placement[3], r.placement[4]);
  EXPECT_EQ(r.details["metis_vertices"].get<int>(), 7);
  // Both GPUs are used: the balance constraint still holds.
  EXPECT_NE(std::count(r.placement.begin(), r.placement.end(), 0), 0);
  EXPECT_NE(std::count(r.placement.begin(), r.placement.end(), 1), 0);
}

TEST(Metis, ParallelAndOppositeTensorsMergeIntoOneEdge) {
  // Classes C0 = {a, b} and C1 = {x, y}, 1 ms per operator; u and v 2 ms each.
  // u -> a 10 MB, a -> x 1 MB, a -> x 2 MB (parallel), y -> b 3 MB (opposite direction),
  // y -> v 10 MB. METIS sees the chain u - C0 - C1 - v with weights 10, 1 + 2 + 3 = 6, 10 MB,
  // scaled by 10^6 / 10 MB (the doubled total, 52 MB, is far from 10^9): 10^6, 6 x 10^5, 10^6.
  // The only balanced 2-way cut of least weight is {u, C0} | {C1, v}: cut 6 x 10^5 = 6 MB.
  Graph g;
  g.add_operator({"a", "op", 1e-3, 0, 0});
  g.add_operator({"b", "op", 1e-3, 0, 0});
  g.add_operator({"x", "op", 1e-3, 0, 1});
  g.add_operator({"y", "op", 1e-3, 0, 1});
  g.add_operator({"u", "op", 2e-3, 0});
  g.add_operator({"v", "op", 2e-3, 0});
  g.add_tensor(4, 0, 10e6);
  g.add_tensor(0, 2, 1e6);
  g.add_tensor(0, 2, 2e6);
  g.add_tensor(3, 1, 3e6);
  g.add_tensor(3, 5, 10e6);
  g.finalize("merge");
  const PlacementResult r = run_metis(g, testutil::dedicated_mesh(2, 20e9));
  EXPECT_EQ(r.details["metis_vertices"].get<int>(), 4);
  EXPECT_EQ(r.details["metis_edge_cut"].get<long>(), 600000);
  EXPECT_DOUBLE_EQ(r.details["edge_cut_bytes"].get<double>(), 6e6);
  EXPECT_EQ(r.placement[4], r.placement[0]);
  EXPECT_EQ(r.placement[5], r.placement[2]);
  EXPECT_NE(r.placement[0], r.placement[2]);
}

TEST(Metis, MappingPutsHeaviestPairsOnNvlink) {
  // 4 GPUs in 2 servers: 0-1 and 2-3 share NVLink (50 GB/s), other pairs go over 20 GB/s Ethernet.
  // Parts 0->2 send 8 GB, 1->3 4 GB, 0->1 1 GB. Best: {0,2} and {1,3} each on an NVLink pair:
  //   8/50 + 4/50 + 1/20 = 0.29 s; identity would cost 8/20 + 4/20 + 1/50 = 0.62 s.
  // The first optimum in lexicographic order is part -> GPU [0, 2, 1, 3].
  const Cluster c = nvlink_servers(4);
  PartTraffic t;
  t.parts = 4;
  t.add(0, 2, 8e9);
  t.add(1, 3, 4e9);
  t.add(0, 1, 1e9);
  const std::vector<DeviceId> m = map_parts_to_devices(t, c);
  EXPECT_EQ(m, (std::vector<DeviceId>{0, 2, 1, 3}));
  EXPECT_NEAR(mapping_cost(t, m, c), 0.29, 1e-12);
  EXPECT_NEAR(mapping_cost(t, std::vector<DeviceId>{0, 1, 2, 3}, c), 0.62, 1e-12);
}

TEST(Metis, HierarchicalMappingAbove8GpusPairsHeavyTalkersOnNvlink) {
  // 10 GPUs in 5 servers. Parts p and p + 5 exchange (10 - p) GB, nothing else: the optimum puts
  // each such pair on one server's NVLink, cost sum (10 - p) / 50 = 40 / 50 = 0.8 s.
  const Cluster c = nvlink_servers(10);
  PartTraffic t;
  t.parts = 10;
  for (int p = 0; p < 5; ++p) t.add(p, p + 5, (10 - p) * 1e9);
  const std::vector<DeviceId> m = map_parts_to_devices(t, c);
  for (int p = 0; p < 5; ++p) EXPECT_EQ(m[p] / 2, m[p + 5] / 2) << "part " << p;
  EXPECT_NEAR(mapping_cost(t, m, c), 0.8, 1e-12);
}

TEST(Metis, FullStrategyMapsHeaviestTalkingChainsOntoNvlinkPairs) {
  // Four chains of 4 ops (1 ms each, 1 GB tensors inside a chain); between chains: c0 -> c2 1 MB,
  // c1 -> c3 0.5 MB, c0 -> c1 0.1 MB. Balanced 4-way cut of least bytes = one chain per part
  // (cut 1.6 MB; splitting any chain cuts 1 GB). Mapping: c0/c2 on one NVLink pair, c1/c3 on the
  // other, as in MappingPutsHeaviestPairsOnNvlink.
  const Graph g = chains(4, 4, 1e9, {{3, 8, 1e6}, {7, 12, 5e5}, {3, 4, 1e5}});
  const Cluster c = nvlink_servers(4);
  const PlacementResult r = run_metis(g, c);
  for (int ch = 0; ch < 4; ++ch) EXPECT_TRUE(all_on(r.placement, ch * 4, ch * 4 + 3, r.placement[ch * 4])) << ch;
  const DeviceId c0 = r.placement[0], c1 = r.placement[4], c2 = r.placement[8], c3 = r.placement[12];
  EXPECT_NE(c0, c2);
  EXPECT_EQ(c0 / 2, c2 / 2);  // same server: NVLink
  EXPECT_NE(c1, c3);
  EXPECT_EQ(c1 / 2, c3 / 2);
  EXPECT_DOUBLE_EQ(r.details["edge_cut_bytes"].get<double>(), 1.6e6);
  EXPECT_NEAR(r.details["mapping_transfer_s"].get<double>(), 1e6 / 50e9 + 5e5 / 50e9 + 1e5 / 20e9, 1e-15);
}

TEST(Metis, MemoryAsSecondConstraintSplitsTheMemoryHeavyChain) {
  // Chain 0 holds all the memory (1 GB per op), chain 1 none. Compute alone: one chain per GPU
  // (4 GB / 0 GB). With memory balanced each GPU must get two of chain 0's operators: 2 GB each.
  Graph g;
  for (int i = 0; i < 8; ++i) g.add_operator({fmt::format("o{}", i), "op", 1e-3, i < 4 ? 1e9 : 0.0});
  for (int i = 0; i < 8; ++i)
    if (i != 3 && i != 7) g.add_tensor(i, i + 1, 1e6);
  g.finalize("mem chains");
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  MetisConfig cfg;
  const auto plain = run_metis(g, c, cfg);
  EXPECT_EQ(plain.details["gpu_memory_bytes"][plain.placement[0]].get<double>(), 4e9);
  cfg.balance_memory = true;
  const auto balanced = run_metis(g, c, cfg);
  EXPECT_EQ(balanced.details["gpu_memory_bytes"], nlohmann::json({2e9, 2e9}));
  EXPECT_EQ(balanced.details["gpu_compute_s"], nlohmann::json({4e-3, 4e-3}));
}

TEST(Metis, OneGpuAndFewerVerticesThanGpus) {
  const Graph g = testutil::fig31_graph();
  const PlacementResult one = run_metis(g, testutil::dedicated_mesh(1, 20e9));
  EXPECT_EQ(one.placement, (std::vector<DeviceId>{0, 0, 0}));
  // 3 operators on 4 GPUs: one each, on three distinct GPUs.
  const PlacementResult four = run_metis(g, nvlink_servers(4));
  std::vector<DeviceId> p = four.placement;
  std::sort(p.begin(), p.end());
  EXPECT_EQ(std::unique(p.begin(), p.end()), p.end());
  // A sends 1000 B to each of B and C: the mapping puts A on an NVLink pair with one of them.
  EXPECT_TRUE(four.placement[0] / 2 == four.placement[1] / 2 || four.placement[0] / 2 == four.placement[2] / 2);
}

TEST(Metis, SameSeedSamePlacement) {
  SyntheticGraphConfig sc;
  sc.layers = 6;
  const Graph g = synthetic_training_graph(sc);
  const Cluster c = nvlink_servers(4);
  MetisConfig cfg;
  cfg.seed = 7;
  EXPECT_EQ(run_metis(g, c, cfg).placement, run_metis(g, c, cfg).placement);
}

TEST(Metis, OptionsAreValidated) {
  const auto make_metis = [](const std::string& yaml) {
    make_strategy("metis", YAML::Load(yaml), "s.yaml", "strategies[0]");
  };
  EXPECT_INPUT_ERROR(make_metis("{method: spectral}"), "options.method", "s.yaml: ");
  EXPECT_INPUT_ERROR(make_metis("{ufactor: 0}"), "options.ufactor", "s.yaml: ");
  EXPECT_INPUT_ERROR(make_metis("{ncuts: 0}"), "options.ncuts", "s.yaml: ");
  EXPECT_INPUT_ERROR(make_metis("{seed: -1}"), "options.seed", "s.yaml: ");
  EXPECT_INPUT_ERROR(make_metis("{balance_memory: maybe}"), "options.balance_memory", "s.yaml: ");
  EXPECT_INPUT_ERROR(make_metis("{ufactr: 10}"), "options", "s.yaml: ");
  EXPECT_NO_THROW(make_strategy("metis", YAML::Load("{method: kway, ufactor: 100, seed: 3, ncuts: 2}"), "s.yaml",
                                "strategies[0]"));
}

TEST(Metis, VggOnFourGpusIsValidAndBalanced) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/vgg.json").graph;
  const Cluster c = nvlink_servers(4);
  const PlacementResult r = run_metis(g, c);  // Strategy::place checks: every operator on an existing GPU
  const auto loads = r.details["gpu_compute_s"].get<std::vector<double>>();
  ASSERT_EQ(loads.size(), 4u);
  const double mean = g.total_compute() / 4;
  for (double l : loads) {
    EXPECT_GT(l, 0.9 * mean);
    EXPECT_LT(l, 1.1 * mean);
  }
  // A min-cut partition moves far fewer bytes than dealing operators out in turn.
  double round_robin_cut = 0;
  const auto topo = g.topological_order();
  std::vector<DeviceId> rr(g.num_operators());
  for (std::size_t i = 0; i < topo.size(); ++i) rr[topo[i]] = static_cast<DeviceId>(i % 4);
  for (const Tensor& t : g.tensors())
    if (rr[t.src] != rr[t.dst]) round_robin_cut += t.bytes;
  EXPECT_LT(r.details["edge_cut_bytes"].get<double>(), 0.2 * round_robin_cut);
}

TEST(Metis, MsrGraphWithColocationClassesIsValid) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/msr-fiddle/inceptionv3_training.json").graph;
  ASSERT_GT(g.num_colocation_classes(), 0);
  const Cluster c = nvlink_servers(4);
  const PlacementResult r = run_metis(g, c);  // validate_placement checks every class
  EXPECT_LT(r.details["metis_vertices"].get<std::size_t>(), g.num_operators());
}

// Above 8 GPUs parts are mapped down the topology's bandwidth levels.
// 32 GPUs in 8 servers of 4 (NVLink inside, Ethernet between). Parts form 8 cliques {c, c + 8,
// c + 16, c + 24}, c = 0..7; every two parts of a clique exchange (c + 1) GB each way, parts of
// different cliques nothing. The optimum puts each clique on one server: all traffic on NVLink,
// cost = sum over cliques of 12 directed flows x (c + 1) GB / 50 GB/s = 12 x 36 / 50 = 8.64 s.
// The hierarchy has two levels (server, switch): at the root each server's group of 4 grows from
// the heaviest clique's first part and takes its clique-mates, which are the only parts it talks to.
TEST(Metis, HierarchicalMappingKeepsCliquesInsideServers) {
  NvlinkServersConfig cfg;
  cfg.gpus = 32;
  cfg.gpus_per_server = 4;
  const Cluster c = make_nvlink_servers(cfg);
  PartTraffic t;
  t.parts = 32;
  for (int q = 0; q < 8; ++q)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        if (i != j) t.add(q + 8 * i, q + 8 * j, (q + 1) * 1e9);
  const std::vector<DeviceId> m = map_parts_to_devices(t, c);
  std::vector<DeviceId> sorted = m;
  std::sort(sorted.begin(), sorted.end());
  for (int d = 0; d < 32; ++d) EXPECT_EQ(sorted[d], d);  // a permutation
  for (int q = 0; q < 8; ++q)
    for (int i = 1; i < 4; ++i) EXPECT_EQ(m[q + 8 * i] / 4, m[q] / 4) << "clique " << q;
  EXPECT_NEAR(mapping_cost(t, m, c), 12.0 * 36 / 50, 1e-9);
}

// A 4-operator diamond (a feeds b and c, both feed d; 1 GB tensors) on 1,024 GPUs in 128
// servers of 8: one vertex per part, parts 0-3 talk, the other 1,020 are empty. The whole diamond
// lands on one server (its four tensors ride NVLink: 4 x 1 GB / 50 GB/s = 80 ms), as it would on 8
// GPUs. (Its speed is measured in bench/bench_metis.cpp, not here.)
TEST(Metis, DiamondOnThousandGpusStaysInOneServer) {
  Graph g;
  for (const char* name : {"a", "b", "c", "d"}) g.add_operator({name, "op", 1e-3, 0});
  g.add_tensor(0, 1, 1e9);
  g.add_tensor(0, 2, 1e9);
  g.add_tensor(1, 3, 1e9);
  g.add_tensor(2, 3, 1e9);
  g.finalize("diamond");
  NvlinkServersConfig cfg;
  cfg.gpus = 1024;
  cfg.gpus_per_server = 8;
  const Cluster c = make_nvlink_servers(cfg);
  const PlacementResult r = run_metis(g, c);
  for (int i = 1; i < 4; ++i) EXPECT_EQ(r.placement[i] / 8, r.placement[0] / 8);
  EXPECT_NEAR(r.details["mapping_transfer_s"].get<double>(), 4 * 1e9 / 50e9, 1e-12);
}

TEST(Metis, AVertexHeavierThanItsShareGetsAGpuOfItsOwn) {
  // H (10 ms) then a chain of eight 1 ms operators, on 4 GPUs: the share is 18 / 4 = 4.5 ms, so H
  // cannot be balanced and gets a GPU alone; the others (8 ms) are split over the other three
  // (2.67 ms each, and no 1 ms operator is heavier than that). METIS, given H, would print "too
  // many parts" on standard output: nothing may be printed.
  Graph g;
  g.add_operator({"H", "op", 10e-3, 0});
  for (int i = 0; i < 8; ++i) g.add_operator({fmt::format("c{}", i), "op", 1e-3, 0});
  for (int i = 0; i < 8; ++i) g.add_tensor(i, i + 1, 1e6);
  g.finalize("heavy head");
  for (auto method : {MetisConfig::Method::Kway, MetisConfig::Method::Recursive, MetisConfig::Method::Best}) {
    MetisConfig cfg;
    cfg.method = method;
    testing::internal::CaptureStdout();
    const PlacementResult r = run_metis(g, testutil::dedicated_mesh(4, 20e9), cfg);
    EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
    for (int i = 1; i <= 8; ++i) EXPECT_NE(r.placement[i], r.placement[0]) << i;
    EXPECT_NE(r.details["method"].get<std::string>().find("1 vertex heavier than its share"), std::string::npos);
    const std::vector<double> compute = r.details["gpu_compute_s"].get<std::vector<double>>();
    EXPECT_NEAR(compute[r.placement[0]], 10e-3, 1e-12);
    for (int d = 0; d < 4; ++d)
      EXPECT_LE(compute[d], d == r.placement[0] ? 10e-3 + 1e-12 : 3e-3 + 1e-12) << d;
  }
}
