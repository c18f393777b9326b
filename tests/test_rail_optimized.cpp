// The rail-optimized fabric (topologies/rail_optimized.h) against closed forms derived by hand,
// through SimGrid, and the flow engine against SimGrid on it.
//
// Unless said otherwise a test sends equal transfers of X bytes that all become ready together
// (their producers finish at 1 us), so under max-min sharing each flow moves its bytes in X / its
// rate after the route's latency; the derivation of every rate is in the test's comment.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <random>
#include <string>
#include <vector>

#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/engines/simgrid_engine.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/topology_info.h"

using namespace placesim;

namespace {

constexpr double X = 8e6;  // bytes per transfer
constexpr double GB = 1e9;

#define EXPECT_TIME(actual, expected) EXPECT_NEAR((actual), (expected), 1e-9 * std::abs(expected) + 1e-15)

struct Transfer {
  DeviceId src, dst;
};

// One producer per distinct source GPU (1 us), one tensor of X bytes per transfer to a consumer on
// its destination GPU. SimGrid's flows come in the order of `transfers`.
SimulationResult run_transfers(const Cluster& c, const std::vector<Transfer>& transfers) {
  Graph g;
  std::vector<int> producer(c.num_devices(), -1);
  std::vector<DeviceId> placement;
  for (const Transfer& t : transfers)
    if (producer[t.src] < 0) {
      producer[t.src] = g.add_operator({fmt::format("p{}", t.src), "op", 1e-6, 0});
      placement.push_back(t.src);
    }
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const int consumer = g.add_operator({fmt::format("c{}", i), "op", 0.0, 0});
    placement.push_back(transfers[i].dst);
    g.add_tensor(producer[transfers[i].src], consumer, X);
  }
  g.finalize("transfers");
  std::vector<std::vector<OpId>> order(c.num_devices());
  for (OpId op : g.topological_order()) order[placement[op]].push_back(op);
  SimulationResult r = simulate(g, c, placement, order);
  EXPECT_EQ(r.flows.size(), transfers.size());
  return r;
}

// Seconds a flow spent moving bytes: its duration less the route latency waited first.
double moving(const Cluster& c, const FlowRecord& f) { return f.end - f.start - c.latency(f.src, f.dst); }

Cluster build(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "rail.yaml"); }

std::vector<std::string> link_names(const Cluster& c, DeviceId a, DeviceId b) {
  std::vector<std::string> names;
  for (int l : c.route(a, b)) names.push_back(c.link(l).name);
  return names;
}

}  // namespace

// Two servers of 8 GPUs, one NIC of B = 10 GB/s per GPU, in one scalable unit. GPU i of server A
// sends to GPU i of server B (8 + i): both on rail i, so the transfer leaves through A's NIC i and
// enters through B's NIC i, crossing only the unit's rail-i leaf. The 8 transfers use 8 disjoint
// rails: each runs at the full NIC rate B, 80 GB/s between the servers in all.
TEST(RailOptimized, EightRailsRunEightTransfersAtFullNicRate) {
  const Cluster c = build("{type: rail-optimized, servers: 2, gpus_per_server: 8, nic_bandwidth: 10GB/s, nvlink_bandwidth: 100GB/s}");
  EXPECT_EQ(link_names(c, 3, 11), (std::vector<std::string>{"server0-nic3-up", "server1-nic3-down"}));
  EXPECT_EQ(c.num_paths(3, 11), 1);
  std::vector<Transfer> t;
  for (int i = 0; i < 8; ++i) t.push_back({i, 8 + i});
  const SimulationResult r = run_transfers(c, t);
  for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(c, f), X / (10 * GB));
}

// Three servers of 2 GPUs, B = 10 GB/s. GPU 0 (server 0, rail 0) sends X to GPU 2 (server 1,
// rail 0) and X to GPU 4 (server 2, rail 0): both leave through server 0's NIC 0, which they
// share, B/2 = 5 GB/s each. Sent to GPU 2 by GPU 0 and to GPU 5 (rail 1) by GPU 1, they use rails
// 0 and 1 and run at B each.
TEST(RailOptimized, TwoTransfersOnOneRailShareItsNic) {
  const Cluster c = build("{type: rail-optimized, servers: 3, gpus_per_server: 2, nic_bandwidth: 10GB/s}");
  for (const FlowRecord& f : run_transfers(c, {{0, 2}, {0, 4}}).flows) EXPECT_TIME(moving(c, f), X / (5 * GB));
  for (const FlowRecord& f : run_transfers(c, {{0, 2}, {1, 5}}).flows) EXPECT_TIME(moving(c, f), X / (10 * GB));
}

// PXN. Two servers of 2 GPUs, NVLink N = 40 GB/s, B = 10 GB/s. GPU 0 (server 0, rail 0) -> GPU 3
// (server 1, rail 1) crosses NVLink to GPU 1, the sender's GPU on rail 1 (GPU 0's up link, GPU 1's
// down link), then leaves through GPU 1's NIC: it stays on rail 1.
//  - With GPU 1 -> GPU 3 (rail 1, its own NIC 1) at the same time: both cross server 0's NIC 1 up
//    and server 1's NIC 1 down, B/2 = 5 GB/s each. GPU 0 -> GPU 1 inside the server at the same
//    time shares GPU 0's NVLink up and GPU 1's NVLink down link with the relayed flow, which the
//    NIC holds to 5 GB/s, so it gets N - 5 = 35 GB/s (max-min).
//  - GPU 0 -> GPU 3 and GPU 0 -> GPU 2 (rail 0, own NIC 0): NICs 1 and 0, B each. Without PXN
//    both leave through GPU 0's NIC 0; GPU 0 -> GPU 3 then crosses the spine tier from leaf 0 to
//    leaf 1 of the unit (ECMP: one aggregate link of 2 uplinks, one flow). Max-min shares NIC 0
//    between the 2 flows, B/2 each: both end at 2 X/B. (Were the transfer one sub-flow per spine,
//    it would take 2/3 of the NIC.)
TEST(RailOptimized, PxnRelaysOverNvlinkToTheDestinationsRail) {
  const std::string base = "{type: rail-optimized, servers: 2, gpus_per_server: 2, nvlink_bandwidth: 40GB/s, nic_bandwidth: 10GB/s";
  const Cluster c = build(base + "}");
  EXPECT_EQ(link_names(c, 0, 3),
            (std::vector<std::string>{"gpu0-nvlink-up", "gpu1-nvlink-down", "server0-nic1-up", "server1-nic1-down"}));
  EXPECT_EQ(link_names(c, 1, 3), (std::vector<std::string>{"server0-nic1-up", "server1-nic1-down"}));
  const SimulationResult shared = run_transfers(c, {{0, 3}, {1, 3}, {0, 1}});
  EXPECT_TIME(moving(c, shared.flows[0]), X / (5 * GB));
  EXPECT_TIME(moving(c, shared.flows[1]), X / (5 * GB));
  EXPECT_TIME(moving(c, shared.flows[2]), X / (35 * GB));
  for (const FlowRecord& f : run_transfers(c, {{0, 3}, {0, 2}}).flows) EXPECT_TIME(moving(c, f), X / (10 * GB));

  const Cluster off = build(base + ", pxn: false}");
  EXPECT_EQ(off.num_paths(0, 3), 1);
  EXPECT_EQ(link_names(off, 0, 3),
            (std::vector<std::string>{"server0-nic0-up", "su0-leaf0-to-spines", "spines-to-su0-leaf1", "server1-nic1-down"}));
  const SimulationResult own = run_transfers(off, {{0, 3}, {0, 2}});
  EXPECT_TIME(moving(off, own.flows[0]), 2 * X / (10 * GB));
  EXPECT_TIME(moving(off, own.flows[1]), 2 * X / (10 * GB));
}

// Spines. Two scalable units of 2 servers with 2 GPUs (2 rails), B = 10 GB/s, 2 spines. Each GPU
// of unit 0 sends to its peer in unit 1 (GPU k of server s -> GPU k of server s + 2): 4 flows, 2
// per rail leaf. Oversubscription r sizes an uplink U = servers_per_unit x B / (spines x r) =
// 10/r GB/s; with ECMP the leaf's 2 uplinks are one aggregate link of 2U, shared by the leaf's 2
// flows: U = 10/r each. At r = 1 the flows run at the NIC rate B; at r = 2 they run at B/2: the
// oversubscription halves the pattern.
TEST(RailOptimized, OversubscribedSpinesHalveACrossUnitPattern) {
  std::vector<Transfer> t;
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k) t.push_back({2 * s + k, 2 * (s + 2) + k});
  for (const double r : {1.0, 2.0}) {
    SCOPED_TRACE(r);
    const Cluster c = build(fmt::format("{{type: rail-optimized, servers: 4, gpus_per_server: 2, servers_per_unit: 2, spines: 2, "
                                        "nic_bandwidth: 10GB/s, oversubscription: {}}}",
                                        r));
    EXPECT_EQ(c.num_paths(0, 4), 1);
    EXPECT_DOUBLE_EQ(c.fabric.oversubscription, r);
    EXPECT_DOUBLE_EQ(c.bandwidth(0, 4), 10 * GB);  // alone, a flow fits in the aggregate of 2 uplinks of 10/r
    for (const FlowRecord& f : run_transfers(c, t).flows) EXPECT_TIME(moving(c, f), X / (10 * GB / r));
  }
  // Static routing (spine = destination server mod 2) sends servers 0 and 1's flows on rail 0 to
  // servers 2 and 3 through spines 0 and 1: no collision, the full uplink each, B at r = 1.
  const Cluster st = build("{type: rail-optimized, servers: 4, gpus_per_server: 2, servers_per_unit: 2, spines: 2, "
                           "nic_bandwidth: 10GB/s, ecmp: false}");
  EXPECT_EQ(st.num_paths(0, 4), 1);
  for (const FlowRecord& f : run_transfers(st, t).flows) EXPECT_TIME(moving(st, f), X / (10 * GB));
}

// Three tiers: one-GPU servers, one per unit and pod (servers_per_unit 1, units_per_pod 1), 2
// spines per pod, 3 core switches per spine plane. Server 0 -> server 1 crosses NIC up, leaf ->
// spine, spine -> core, core -> spine of pod 1, spine -> leaf, NIC down: with ECMP one path of 6
// links, the spine and core tiers as aggregates (2 x 3 = 6 equal-cost paths spread evenly).
// Latency: 2 NIC links (1 us each), 5 switches (0.1 us each), 2 uplink cables (0.5 us) and 2
// core cables (2 us): 2 + 0.5 + 1 + 4 = 7.5 us. Uplinks are B / 2 = 5 GB/s (aggregate 10 GB/s),
// core links non-blocking: a spine takes in 1 leaf x 5 GB/s, so 5/3 GB/s each (aggregate 6 x 5/3
// = 10 GB/s). A lone transfer runs at B = 10 GB/s. Static routing takes spine 1, core (1, 0)
// for server 1 (1 mod 2, (1 / 2) mod 3): 5 GB/s uplink, 5/3 GB/s core link.
TEST(RailOptimized, PodsJoinThroughTheCoreTier) {
  const Cluster c = build(
      "{type: rail-optimized, servers: 2, gpus_per_server: 1, servers_per_unit: 1, units_per_pod: 1, spines: 2, core_switches: 3, "
      "nic_bandwidth: 10GB/s, nic_latency: 1us, switch_latency: 100ns, uplink_latency: 0.5us, core_latency: 2us}");
  EXPECT_EQ(c.num_paths(0, 1), 1);
  EXPECT_EQ(link_names(c, 0, 1),
            (std::vector<std::string>{"server0-nic0-up", "su0-leaf0-to-pod0-spines", "pod0-spines-to-core", "core-to-pod1-spines",
                                      "pod1-spines-to-su1-leaf0", "server1-nic0-down"}));
  EXPECT_NEAR(c.latency(0, 1), 7.5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1), 10 * GB);
  EXPECT_TIME(moving(c, run_transfers(c, {{0, 1}}).flows[0]), X / (10 * GB));
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 1.0);
  const Cluster st = build(
      "{type: rail-optimized, servers: 2, gpus_per_server: 1, servers_per_unit: 1, units_per_pod: 1, spines: 2, core_switches: 3, "
      "nic_bandwidth: 10GB/s, ecmp: false}");
  EXPECT_EQ(link_names(st, 0, 1),
            (std::vector<std::string>{"server0-nic0-up", "su0-leaf0-to-pod0-spine1", "pod0-spine1-to-core1.0",
                                      "core1.0-to-pod1-spine1", "pod1-spine1-to-su1-leaf0", "server1-nic0-down"}));
  EXPECT_NEAR(st.bandwidth(0, 1), 5.0 / 3 * GB, 1e-3);
}

// `placesim topology info` on 2 units of 2 servers with 2 GPUs (2 rails): NVLink 50 GB/s and
// 1 us a link, NICs 10 GB/s and 2 us, 0.5 us a switch, 2 spines, 2:1 (uplinks 2 x 10 / (2 x 2) =
// 5 GB/s; with ECMP one aggregate link of 10 GB/s per leaf and direction). Every pair across
// servers runs at the NIC rate; the latencies tell the routes apart:
//   same server                     NVLink up + down                          2 us,  4 x 2 = 8 pairs
//   same unit, same rail            NIC up (2 + 0.5 leaf) + NIC down (2)      4.5 us, 4 server pairs x 2 = 8
//   other unit, same rail           + up to a spine and down (2 x 0.5)        5.5 us, 8 x 2 = 16
//   same unit, other rail (PXN)     + NVLink up and down (2 x 1)              6.5 us, 4 x 2 = 8
//   other unit, other rail (PXN)                                              7.5 us, 8 x 2 = 16
// Bisection (servers 0-1 = unit 0 against unit 1): the unit's 2 leaves x 2 uplinks x 5 GB/s =
// 20 GB/s, half its 40 GB/s of NICs. Links: 8 GPUs x 2 NVLink + 4 servers x 2 NICs x 2 + 4 leaves
// x 2 (one aggregate each way) = 40.
TEST(RailOptimized, TopologyInfoFiguresAsDerivedByHand) {
  const Cluster c = build(
      "{type: rail-optimized, servers: 4, gpus_per_server: 2, servers_per_unit: 2, spines: 2, nvlink_bandwidth: 50GB/s, "
      "nvlink_latency: 1us, nic_bandwidth: 10GB/s, nic_latency: 2us, switch_latency: 0.5us, oversubscription: 2}");
  const TopologyInfo info = describe_topology(c);
  EXPECT_EQ(info.gpus, 8);
  EXPECT_EQ(info.servers, 4);
  EXPECT_EQ(info.physical_links, 40);
  EXPECT_EQ(info.max_paths, 1);
  EXPECT_NEAR(info.bisection_bandwidth, 20 * GB, 1e3);
  struct Level {
    double bandwidth, latency;
    long pairs;
  };
  const std::vector<Level> expected = {{50 * GB, 2e-6, 8},   {10 * GB, 4.5e-6, 8}, {10 * GB, 5.5e-6, 16},
                                       {10 * GB, 6.5e-6, 8}, {10 * GB, 7.5e-6, 16}};
  ASSERT_EQ(info.levels.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NEAR(info.levels[i].bandwidth, expected[i].bandwidth, 1e-3);
    EXPECT_NEAR(info.levels[i].latency, expected[i].latency, 1e-15);
    EXPECT_EQ(info.levels[i].pairs, expected[i].pairs);
  }
  const std::string text = format_topology_info(c, info);
  EXPECT_NE(text.find("fabric            rail-optimized"), std::string::npos) << text;
  EXPECT_NE(text.find("bisection         20 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("oversubscription  2:1"), std::string::npos) << text;
  EXPECT_NE(text.find("routing: PXN"), std::string::npos) << text;

  // One NIC per GPU pair (gpus_per_nic 2): one rail, so no PXN hop; the bisection halves with the
  // NICs (4 NICs of 10 GB/s in unit 0, uplinks 2 x 10 / (2 x 2) = 5 GB/s, one leaf: 10 GB/s).
  const Cluster pairs = build(
      "{type: rail-optimized, servers: 4, gpus_per_server: 2, gpus_per_nic: 2, servers_per_unit: 2, spines: 2, "
      "nic_bandwidth: 10GB/s, oversubscription: 2}");
  EXPECT_EQ(link_names(pairs, 1, 4), (std::vector<std::string>{"server0-nic0-up", "su0-leaf0-to-spines", "spines-to-su1-leaf0",
                                                               "server2-nic0-down"}));
  EXPECT_NEAR(describe_topology(pairs).bisection_bandwidth, 10 * GB, 1e3);
}

// The flow engine equals SimGrid on the rail-optimized fabric with contention on every tier:
// PXN relays, spines, a core, static and ECMP routing (the registry-wide cross-check of
// test_flow_engine.cpp covers its keys' examples too).
TEST(RailOptimized, FlowEngineAgreesWithSimgrid) {
  std::mt19937 rng(37);
  bool contended = false;
  for (const char* yaml : {"{type: rail-optimized, servers: 6, gpus_per_server: 4, servers_per_unit: 2, units_per_pod: 2, spines: 2, "
                           "core_switches: 2, nic_bandwidth: 10GB/s, nvlink_bandwidth: 30GB/s, oversubscription: 2, nic_latency: 1us, "
                           "switch_latency: 100ns}",
                           "{type: rail-optimized, servers: 4, gpus_per_server: 4, gpus_per_nic: 2, servers_per_unit: 2, spines: 3, "
                           "ecmp: false, pxn: false, nic_bandwidth: 10GB/s}"}) {
    SCOPED_TRACE(yaml);
    const Cluster c = build(yaml);
    for (int trial = 0; trial < 3; ++trial) {
      const Graph g = testutil::random_dag(rng, 80);
      const std::vector<DeviceId> p = testutil::random_placement(rng, g, c);
      const Schedule s = Evaluator(g, c).schedule(p);
      const SimulationResult r = simulate(g, c, p, s.device_order);
      FlowEngine flow(g, c);
      const Schedule f = flow.replay(p, s.device_order);
      contended |= f.latency > s.latency * (1 + 1e-9);
      for (std::size_t i = 0; i < p.size(); ++i)
        EXPECT_NEAR(f.finish[i], r.finish[i], 1e-6 * std::max(f.finish[i], r.finish[i])) << "operator " << i;
    }
  }
  EXPECT_TRUE(contended);
}

TEST(RailOptimized, ImpossibleShapesNameTheField) {
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, gpus_per_server: 8, gpus_per_nic: 3}"), "cluster.gpus_per_nic (line 1)",
                     "rail.yaml", "expected a divisor of gpus_per_server (8)");
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, gpus_per_server: 2, gpus_per_nic: 4}"), "cluster.gpus_per_nic");
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, oversubscription: 2, uplink_bandwidth: 1GB/s}"), "cluster.oversubscription",
                     "not both");
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, spines: 0}"), "cluster.spines");
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, pxn: maybe}"), "cluster.pxn");
  EXPECT_INPUT_ERROR(build("{type: rail-optimized, switch_latency: soon}"), "cluster.switch_latency");
}
