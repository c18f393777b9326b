// Links degraded or down (Cluster::with_link_faults, a cluster's `faults:`): traffic routed around
// a failed leaf uplink with the closed-form time on every engine, and the errors of faults that
// cannot be.
#include <fstream>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "sim/engines/engine.h"
#include "test_util.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

// Two leaves of four 1-GPU servers under two spines, NICs 12.5 GB/s, 2:1 oversubscribed: each
// leaf has two uplinks of 12.5 GB/s.
std::string spine_leaf(const std::string& faults = "") {
  return "{type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 2, gpus_per_server: 1, nic_bandwidth: 12.5GB/s, "
         "oversubscription: 2" + (faults.empty() ? "" : ", faults: " + faults) + "}";
}
Cluster cluster_of(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "test.yaml", "cluster"); }

// Servers 0-3 each send 1 GB to servers 4-7 at once: every byte crosses leaf 0's uplinks.
struct CrossLeaf {
  Graph graph;
  std::vector<DeviceId> placement;
  CrossLeaf() {
    for (int i = 0; i < 8; ++i) graph.add_operator({"op" + std::to_string(i), "op", 0.0, 1.0});
    for (int i = 0; i < 4; ++i) graph.add_tensor(i, i + 4, 1e9);
    graph.finalize("cross-leaf");
    for (int i = 0; i < 8; ++i) placement.push_back(i);
  }
};

EngineRuns run_all(const Cluster& c, const CrossLeaf& g) {
  return run_engines(PlacedGraph(g.graph, g.placement), c, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
}

TEST(LinkFaults, AFailedLeafUplinkSendsEverythingOverTheOtherSpine) {
  const CrossLeaf g;
  // Healthy: 4 GB over two 12.5 GB/s uplinks (each transfer split over both spines): 160 ms.
  const EngineRuns healthy = run_all(cluster_of(spine_leaf()), g);
  EXPECT_NEAR(*healthy.latency(kFlow), 0.160, 1e-9);
  EXPECT_NEAR(*healthy.latency(kSimGrid), 0.160, 0.160 * 1e-3);
  // leaf0 -> spine1 down: the 4 GB take spine 0's uplink alone, 4 GB / 12.5 GB/s = 320 ms.
  const Cluster faulted = cluster_of(spine_leaf("[{link: leaf0-to-spine1, down: true}]"));
  const EngineRuns down = run_all(faulted, g);
  EXPECT_NEAR(*down.latency(kFlow), 0.320, 1e-9);
  EXPECT_NEAR(*down.latency(kSimGrid), 0.320, 0.320 * 1e-3);
  // Contention-free, a lone transfer still has its NIC's 12.5 GB/s: 80 ms either way.
  EXPECT_NEAR(*healthy.latency(kEvaluator), 0.080, 1e-9);
  EXPECT_NEAR(*down.latency(kEvaluator), 0.080, 1e-9);
  // The route lost a path: one path left, through spine 0, carrying all the bytes.
  const auto paths = faulted.paths(0, 4);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_DOUBLE_EQ(paths[0].share, 1.0);
  for (int l : paths[0].links) EXPECT_EQ(faulted.link(l).name.find("spine1"), std::string::npos) << faulted.link(l).name;
  // The other leaf's routes keep both spines.
  EXPECT_EQ(faulted.paths(4, 0).size(), 2u);
  EXPECT_NE(faulted.description.find("leaf0-to-spine1 down"), std::string::npos) << faulted.description;
}

TEST(LinkFaults, AHalfSpeedUplinkUnderStaticEcmpSharesCostsAsMuchAsADownOne) {
  // ECMP keeps splitting half the bytes over spine 1: 2 GB over 6.25 GB/s = 320 ms, while spine
  // 0's half finishes at 160 ms.
  const CrossLeaf g;
  const EngineRuns half = run_all(cluster_of(spine_leaf("[{link: leaf0-to-spine1, fraction: 0.5}]")), g);
  EXPECT_NEAR(*half.latency(kFlow), 0.320, 1e-9);
  EXPECT_NEAR(*half.latency(kSimGrid), 0.320, 0.320 * 1e-3);
  // A lone transfer: half its bytes at 6.25 GB/s, 0.5 GB / 6.25 GB/s = 80 ms, as its NIC's.
  EXPECT_NEAR(*half.latency(kEvaluator), 0.080, 1e-9);
}

TEST(LinkFaults, FaultsThatCannotBeAreRefusedInOneLine) {
  const auto error = [](const std::string& faults) {
    const auto e = testutil::input_error_of([&] { cluster_of(spine_leaf(faults)); });
    return e ? std::string(e->what()) : std::string("no error");
  };
  // A server's only NIC: nothing routes around it.
  EXPECT_NE(error("[{link: server5-nic-up, down: true}]").find("with server5-nic-up down, GPU 5 (server 5) cannot reach GPU 0 (server 0)"), std::string::npos)
      << error("[{link: server5-nic-up, down: true}]");
  // Both of a leaf's uplinks: its servers reach only each other.
  EXPECT_NE(error("[{link: leaf0-to-spine0, down: true}, {link: leaf0-to-spine1, down: true}]").find("GPU 0 (server 0) cannot reach GPU 4 (server 4): no path is left"),
            std::string::npos);
  EXPECT_NE(error("[{link: leaf0-to-spine7, down: true}]").find("did you mean 'leaf0-to-spine0'"), std::string::npos)
      << error("[{link: leaf0-to-spine7, down: true}]");
  EXPECT_NE(error("[{link: leaf0-to-spine1, fraction: 1.5}]").find("faults[0].fraction"), std::string::npos)
      << error("[{link: leaf0-to-spine1, fraction: 1.5}]");
  EXPECT_NE(error("[{link: leaf0-to-spine1}]").find("give `down: true` or `fraction:`"), std::string::npos);
  // both_directions: the cable's way back too.
  const Cluster both = cluster_of(spine_leaf("[{link: leaf0-to-spine1, down: true, both_directions: true}]"));
  EXPECT_EQ(both.paths(4, 0).size(), 1u);
}

TEST(LinkFaults, AFatTreeSplitsOverTheCorePathsLeft) {
  // k = 4 fat-tree of 1-GPU servers: server 0 (pod 0) to server 15 (pod 3) has 4 equal paths, over
  // agg0.0 to core0.0 and core0.1, agg0.1 to core1.0 and core1.1. With agg0.0 -> core0.0 down,
  // 3 are left, a third of the bytes each.
  const std::string base = "{type: fat-tree, k: 4, gpus_per_server: 1";
  EXPECT_EQ(cluster_of(base + "}").num_paths(0, 15), 4);
  const Cluster faulted = cluster_of(base + ", faults: [{link: agg0.0-to-core0.0, down: true}]}");
  const auto paths = faulted.paths(0, 15);
  ASSERT_EQ(paths.size(), 3u);
  for (const RoutePath& p : paths) {
    EXPECT_NEAR(p.share, 1.0 / 3, 1e-12);
    for (int l : p.links) EXPECT_NE(faulted.link(l).name, "agg0.0-to-core0.0");
  }
  // A cluster of some of its GPUs keeps the faults, and the healthy pairs' views.
  const std::vector<DeviceId> some = {0, 2, 15};
  const Cluster part = faulted.restricted_to(some);
  EXPECT_EQ(part.num_paths(0, 2), 3);
  EXPECT_NEAR(part.bandwidth(0, 2), faulted.bandwidth(0, 15), 1.0);
  EXPECT_NEAR(part.bandwidth(1, 2), faulted.bandwidth(2, 15), 1.0);
  // Within pod 0 no path crossed the core: 2 paths still.
  EXPECT_EQ(faulted.num_paths(0, 2), 2);
  // A lone transfer is still NIC-bound (12.5 GB/s): edge0.0's uplinks carry 1/3 and 2/3.
  EXPECT_NEAR(faulted.bandwidth(0, 15), 12.5e9, 1.0);
}

}  // namespace
}  // namespace placesim

namespace placesim {
namespace {

TEST(LinkFaults, PlanNamesTheDegradedNicAsItsBusiestLink) {
  // GPT-2, pure data parallelism over four 1-GPU servers, server 1's NIC uplink at a quarter of
  // 12.5 GB/s: its share of every ring step takes 4x as long there, and `plan` names it.
  const auto dir = testutil::fresh_temp_dir("busiest-link");
  std::ofstream(dir / "c.yaml") << "cluster: {type: spine-leaf, servers: 4, servers_per_leaf: 2, spines: 1, gpus_per_server: 1, "
                                   "nic_bandwidth: 100Gbps, oversubscription: 1, gpu_memory: 80GiB, "
                                   "faults: [{link: server1-nic-up, fraction: 0.25}]}\n";
  std::string out;
  ASSERT_EQ(testutil::run_cli("plan --model gpt2 --gpu h100 --dp 4 --engine flow --cluster " + (dir / "c.yaml").string(), out), 0) << out;
  EXPECT_NE(out.find("busiest link    server1-nic-up: "), std::string::npos) << out;
  EXPECT_NE(out.find(" at 3.125 GB/s per iteration, busy at least "), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placesim
