// The data-centre fabrics (topologies/fabrics.h), pinned against closed-form answers measured
// through the SimGrid engine, and the agreement of each fabric's pairwise view with SimGrid.
//
// Unless said otherwise a test sends equal transfers of X bytes that all become ready at the same
// time (their producers finish together at 1 us), so under max-min sharing each flow's duration
// is X / its rate; the derivation of every rate is in the test's comment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "scenarios/runner/record.h"
#include "scenarios/runner/scenario.h"
#include "scenarios/runner/sweep.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/simgrid_engine.h"
#include "sim/io/trace.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/topology_info.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

constexpr double X = 8e6;  // bytes per transfer
constexpr double GB = 1e9;

double tol(double expected) { return 1e-9 * std::abs(expected) + 1e-15; }
#define EXPECT_TIME(actual, expected) EXPECT_NEAR((actual), (expected), tol(expected))

struct Transfer {
  DeviceId src, dst;
  double bytes = X;
};

// One producer per distinct source GPU (1 us), one tensor per transfer to a consumer on the
// destination GPU; a GPU sending several transfers sends them together. Returns SimGrid's result;
// flows come in the order of `transfers`.
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
    g.add_tensor(producer[transfers[i].src], consumer, transfers[i].bytes);
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

DeviceId gpu(int server, int gpus_per_server, int index = 0) { return server * gpus_per_server + index; }

std::string error_of(const std::string& yaml) {
  return testutil::input_error_message([&] { cluster_from_yaml(YAML::Load(yaml), "c.yaml"); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Closed forms through SimGrid.

TEST(Topologies, SpineLeafOversubscribedUplinksShareAsTheClosedFormSays) {
  // 2 leaves of n = 4 one-GPU servers, s = 2 spines, NIC B = 10 GB/s, oversubscription r = 4:
  // each uplink carries U = n*B / (s*r) = 5 GB/s. m servers of leaf 0 send to m servers of leaf 1.
  // With ECMP each flow is two sub-flows, one per spine; each of leaf 0's two uplinks carries m
  // sub-flows and gives each U/m, so a flow moves at min(B, s*U/m) = min(10, 10/m) GB/s: the
  // leaf's uplink capacity n*B/r split m ways. With m = n = 4 flows each gets B/r = B/4 = 2.5 GB/s,
  // a quarter of its NIC; 2 flows get 5 GB/s; a lone flow gets its full NIC.
  SpineLeafConfig cfg;
  cfg.servers = 8;
  cfg.gpus_per_server = 1;
  cfg.servers_per_leaf = 4;
  cfg.spines = 2;
  cfg.nic_bandwidth = 10 * GB;
  cfg.oversubscription = 4;
  Cluster c = make_spine_leaf(cfg);
  c.finalize("t");
  EXPECT_DOUBLE_EQ(c.link(c.route(0, 4)[1]).bandwidth, 5 * GB);  // leaf0 -> spine0
  EXPECT_EQ(c.num_paths(0, 4), 2);
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 4);
  for (int m : {1, 2, 4}) {
    SCOPED_TRACE(m);
    std::vector<Transfer> t;
    for (int i = 0; i < m; ++i) t.push_back({i, 4 + i});
    SimulationResult r = run_transfers(c, t);
    const double rate = std::min(10 * GB, 10 * GB / m);
    for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(c, f), X / rate);
  }
  // Static routing (spine = destination mod 2): flows to servers 4 and 6 both take spine 0, so
  // two flows share one 5 GB/s uplink (2.5 GB/s each) where ECMP gave them 5 GB/s each.
  cfg.ecmp = false;
  Cluster st = make_spine_leaf(cfg);
  st.finalize("t");
  EXPECT_EQ(st.num_paths(0, 4), 1);
  EXPECT_DOUBLE_EQ(st.bandwidth(0, 4), 5 * GB);  // one uplink is the bottleneck of a lone flow
  SimulationResult r = run_transfers(st, {{0, 4}, {1, 6}});
  for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(st, f), X / (2.5 * GB));
}

TEST(Topologies, IncastSharesTheReceiversNicEqually) {
  // Non-blocking switch, 5 servers of 2 GPUs, NIC B = 10 GB/s, NVLink 50 GB/s. GPU 0 of servers
  // 1..4 send to GPU 0 of server 0: the four flows share server 0's NIC down link, B/4 each.
  // GPU 1 of server 0 sends over NVLink, which the NIC flows do not touch: X / 50 GB/s.
  NonBlockingConfig cfg;
  cfg.servers = 5;
  cfg.gpus_per_server = 2;
  cfg.nic_bandwidth = 10 * GB;
  cfg.nic_latency = 1e-6;
  Cluster c = make_non_blocking(cfg);
  c.finalize("t");
  std::vector<Transfer> t;
  for (int s = 1; s <= 4; ++s) t.push_back({gpu(s, 2), 0});
  t.push_back({1, 0});
  SimulationResult r = run_transfers(c, t);
  for (int i = 0; i < 4; ++i) EXPECT_TIME(moving(c, r.flows[i]), X / (2.5 * GB));
  EXPECT_TIME(moving(c, r.flows[4]), X / (50 * GB));
  EXPECT_TIME(c.latency(2, 0), 2e-6);  // NIC up and down

  // Unequal sizes X, 2X, 3X, 4X: max-min gives B/4 each until the smallest ends at 4X/B, then B/3
  // to the other three (each has X left of what remains): the next ends at 4X/B + 3X/B = 7X/B,
  // then 7X/B + 2X/B = 9X/B, and the largest at 10X/B -- all 10X bytes through one NIC at B.
  t.clear();
  for (int s = 1; s <= 4; ++s) t.push_back({gpu(s, 2), 0, s * X});
  r = run_transfers(c, t);
  const double unit = X / (10 * GB);
  EXPECT_TIME(moving(c, r.flows[0]), 4 * unit);
  EXPECT_TIME(moving(c, r.flows[1]), 7 * unit);
  EXPECT_TIME(moving(c, r.flows[2]), 9 * unit);
  EXPECT_TIME(moving(c, r.flows[3]), 10 * unit);
}

TEST(Topologies, FatTreePermutationBetweenPodsRunsAtNicRateWithEcmp) {
  // k = 4, 16 one-GPU servers, every tier 10 GB/s. Server (pod p, edge e, host h) = 4p + 2e + h
  // sends to (p xor 1, h, e): a full permutation between pods 0<->1 and 2<->3.
  // ECMP: each flow is 4 sub-flows of X/4, one per (aggregation i, core column j). Every link
  // carries exactly 4 sub-flows: a NIC its flow's 4; an edge uplink to aggregation i the 2
  // sub-flows (i, 0..1) of each of its 2 hosts; a core uplink (i, j) the sub-flow (i, j) of each
  // of its pod's 4 flows; likewise going down. So every sub-flow gets 10/4 GB/s, and each flow
  // runs at the full 10 GB/s NIC rate.
  // Static d-mod-k: destination (p', h, e) picks aggregation switch (its host index) e, so both
  // hosts of edge e go up through aggregation e: two flows on one 10 GB/s uplink, 5 GB/s each
  // (the cores (e, h) and the down links differ). The collision halves the rate.
  FatTreeConfig cfg;
  cfg.k = 4;
  cfg.servers = 16;
  cfg.gpus_per_server = 1;
  cfg.nic_bandwidth = 10 * GB;
  std::vector<Transfer> perm;
  for (int p = 0; p < 4; ++p)
    for (int e = 0; e < 2; ++e)
      for (int h = 0; h < 2; ++h) perm.push_back({4 * p + 2 * e + h, 4 * (p ^ 1) + 2 * h + e});
  {
    Cluster c = make_fat_tree(cfg);
    c.finalize("t");
    EXPECT_EQ(c.num_paths(0, 4), 4);
    EXPECT_EQ(c.num_paths(0, 2), 2);
    EXPECT_EQ(c.num_paths(0, 1), 1);
    EXPECT_DOUBLE_EQ(c.bandwidth(0, 15), 10 * GB);
    SimulationResult r = run_transfers(c, perm);
    for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(c, f), X / (10 * GB));
    EXPECT_EQ(r.subflows.size(), 16u * 4);
  }
  cfg.ecmp = false;
  Cluster st = make_fat_tree(cfg);
  st.finalize("t");
  EXPECT_EQ(st.num_paths(0, 4), 1);
  EXPECT_DOUBLE_EQ(st.bandwidth(0, 15), 10 * GB);  // alone, the static path is as fast
  SimulationResult r = run_transfers(st, perm);
  for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(st, f), X / (5 * GB));
  // A shift between pods (s -> s + 4) sends edge e's hosts to distinct aggregation switches:
  // d-mod-k has no collision there.
  std::vector<Transfer> shift;
  for (int s = 0; s < 16; ++s) shift.push_back({s, (s + 4) % 16});
  r = run_transfers(st, shift);
  for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(st, f), X / (10 * GB));
}

TEST(Topologies, MultiNicPairWithAllNicsGetsDTimesOneLink) {
  // d = 3 NICs of b = 10 GB/s, 4 one-GPU servers. Server 0 gives all of B = 30 GB/s to server 1
  // (nothing to 2 and 3); the others use the uniform allocation B/3 = 10 GB/s per destination.
  // The transfer 0 -> 1 is striped over 3 NICs, 10 GB/s each: X / 30 GB/s, three times a link.
  MultiNicConfig cfg;
  cfg.servers = 4;
  cfg.gpus_per_server = 1;
  cfg.nics_per_server = 3;
  cfg.link_bandwidth = 10 * GB;
  BandwidthAllocation a = BandwidthAllocation::uniform(4, 30 * GB);
  a.set(0, 1, 30 * GB);
  a.set(0, 2, 0);
  a.set(0, 3, 0);
  Cluster c = make_multi_nic(cfg, a);
  c.finalize("t");
  EXPECT_EQ(c.num_paths(0, 1), 3);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1), 30 * GB);
  EXPECT_DOUBLE_EQ(c.bandwidth(1, 0), 10 * GB);
  EXPECT_FALSE(c.reachable(0, 2));
  EXPECT_EQ(c.bandwidth(0, 2), 0);
  EXPECT_TRUE(std::isinf(c.transfer_time(0, 2, 1.0)));
  EXPECT_EQ(c.transfer_time(0, 2, 0.0), 0);
  SimulationResult r = run_transfers(c, {{0, 1}});
  EXPECT_TIME(moving(c, r.flows[0]), X / (30 * GB));
  ASSERT_EQ(r.subflows.size(), 3u);
  for (const SubflowRecord& s : r.subflows) EXPECT_TIME(s.bytes, X / 3);
  // Under the uniform allocation the same pair gets B/3 = one link.
  Cluster u = make_multi_nic(cfg);
  u.finalize("t");
  EXPECT_DOUBLE_EQ(u.bandwidth(0, 1), 10 * GB);
  EXPECT_TIME(moving(u, run_transfers(u, {{0, 1}}).flows[0]), X / (10 * GB));
  // A tensor between servers the allocation does not connect cannot be simulated.
  EXPECT_THROW(run_transfers(c, {{0, 2}}), std::invalid_argument);
}

TEST(Topologies, MultiNicAllocationsShareInTheirRatio) {
  // d = 2 NICs of b = 30 GB/s, 3 servers of 2 GPUs. Server 0 gives 40 GB/s to server 1 and
  // 20 GB/s to server 2 (2:1, B = 60). Packing: NIC 0 holds server 1's queue at 30 GB/s, NIC 1
  // server 1's other 10 GB/s and server 2's 20 GB/s. NIC 1 is shared by two queues, and their caps
  // (not max-min fairness, which would give 15/15) split it 10:20.
  MultiNicConfig cfg;
  cfg.servers = 3;
  cfg.gpus_per_server = 2;
  cfg.nics_per_server = 2;
  cfg.link_bandwidth = 30 * GB;
  BandwidthAllocation a = BandwidthAllocation::uniform(3, 60 * GB);
  a.set(0, 1, 40 * GB);
  a.set(0, 2, 20 * GB);
  const auto queues = pack_nic_queues(a, 0, 2, 30 * GB);
  ASSERT_EQ(queues[1].size(), 2u);
  EXPECT_EQ(queues[1][0].nic, 0);
  EXPECT_DOUBLE_EQ(queues[1][0].rate, 30 * GB);
  EXPECT_EQ(queues[1][1].nic, 1);
  EXPECT_DOUBLE_EQ(queues[1][1].rate, 10 * GB);
  ASSERT_EQ(queues[2].size(), 1u);
  EXPECT_EQ(queues[2][0].nic, 1);
  Cluster c = make_multi_nic(cfg, a);
  c.finalize("t");
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 2), 40 * GB);  // gpu0 -> server 1
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 4), 20 * GB);  // gpu0 -> server 2
  // GPU 0 sends X to server 1 and X to server 2 together: 40 and 20 GB/s, ending at X/40 and
  // X/20 GB/s. Server 2's queue keeps its cap after server 1's transfer ends (no borrowing).
  SimulationResult r = run_transfers(c, {{0, 2}, {0, 4}});
  EXPECT_TIME(moving(c, r.flows[0]), X / (40 * GB));
  EXPECT_TIME(moving(c, r.flows[1]), X / (20 * GB));
  // GPUs 0 and 1 both send X to server 1: they share its queues (per destination server, not per
  // GPU): 20 GB/s each, as much as GPU 0's transfer to server 2 gets.
  r = run_transfers(c, {{0, 2}, {1, 3}, {0, 4}});
  for (const FlowRecord& f : r.flows) EXPECT_TIME(moving(c, f), X / (20 * GB));
  // Link statistics count each sub-flow on its own links: NIC 1 of server 0 carried X/4 + X/4
  // of the transfers to server 1 and all X of the one to server 2.
  int nic1 = -1;
  for (int l = 0; l < static_cast<int>(c.links().size()); ++l)
    if (c.link(l).name == "server0-nic1-up") nic1 = l;
  ASSERT_GE(nic1, 0);
  EXPECT_TIME(r.links[nic1].bytes, 1.5 * X);
}

TEST(Topologies, MultiNicStripesUnderContentionEndApart) {
  // d = 2 NICs of 30 GB/s, 3 servers of 2 GPUs. Server 0 gives server 1 40 GB/s (NIC 0: 30,
  // NIC 1: 10) and server 2 20 GB/s (NIC 1); server 2 gives server 0 10 GB/s (NIC 0) and server 1
  // 50 GB/s (NIC 0: 20, NIC 1: 30). A = gpu0 -> server 1 (stripes A0 = 3X/4, A1 = X/4) and
  // B = gpu4 -> server 1 (B0 = 2X/5, B1 = 3X/5), both X bytes, meet at server 1's NIC down links
  // (30 GB/s each). Rates in GB/s, times in X/GB:
  //   NIC 0 down: A0 and B0 under caps 30 and 20 share it 15/15. NIC 1 down: A1 is held to its
  //   queue's 10, B1 takes 20. A1 ends at (1/4)/10 = 15/600, B0 at (2/5)/15 = 16/600.
  //   After 15/600, B1 alone on NIC 1 down gets 30: its 3/5 - 20 * 15/600 = 1/10 left ends at
  //   15/600 + 2/600 = 17/600. After 16/600, A0 alone on NIC 0 down gets 30: its
  //   3/4 - 15 * 16/600 = 0.35 left ends at 16/600 + 7/600 = 23/600.
  // So A ends at 23/600 with its stripes 8/600 apart, B at 17/600.
  MultiNicConfig cfg;
  cfg.servers = 3;
  cfg.gpus_per_server = 2;
  cfg.nics_per_server = 2;
  cfg.link_bandwidth = 30 * GB;
  BandwidthAllocation a(3);
  a.set(0, 1, 40 * GB);
  a.set(0, 2, 20 * GB);
  a.set(1, 0, 30 * GB);
  a.set(1, 2, 30 * GB);
  a.set(2, 0, 10 * GB);
  a.set(2, 1, 50 * GB);
  Cluster c = make_multi_nic(cfg, a);
  c.finalize("t");
  SimulationResult r = run_transfers(c, {{0, 2}, {4, 2}});
  const double unit = X / (600 * GB);
  ASSERT_EQ(r.subflows.size(), 4u);
  EXPECT_TIME(moving(c, r.flows[0]), 23 * unit);
  EXPECT_TIME(moving(c, r.flows[1]), 17 * unit);
  const double t0 = r.flows[0].start;  // no latency: bytes move from the producers' finish
  EXPECT_TIME(r.subflows[0].end - t0, 23 * unit);  // A0
  EXPECT_TIME(r.subflows[1].end - t0, 15 * unit);  // A1
  EXPECT_TIME(r.subflows[2].end - t0, 16 * unit);  // B0
  EXPECT_TIME(r.subflows[3].end - t0, 17 * unit);  // B1
}

TEST(Topologies, MultiNicPodsStripeOverTheCore) {
  // 2 pods of 2 one-GPU servers, d = 2 NICs of 10 GB/s, 2 core switches per NIC plane with
  // 2.5 GB/s links, uniform allocation B/3 = 20/3 GB/s. Between pods, NIC 0 of server 0 holds the
  // queue to server 1 (20/3) and 10/3 of server 2's queue, NIC 1 its other 10/3 and server 3's
  // 20/3; each stripe is split over 2 cores. The stripe of 10/3 GB/s gets 2 x 5/3 GB/s sub-flows,
  // under 2.5 GB/s core links: the allocation holds, 0 -> 2 runs at 20/3 GB/s. Server 3's single
  // stripe of 20/3 GB/s needs 10/3 per core link but gets 2.5: 0 -> 3 runs at 5 GB/s, as the view says.
  MultiNicConfig cfg;
  cfg.servers = 4;
  cfg.gpus_per_server = 1;
  cfg.nics_per_server = 2;
  cfg.link_bandwidth = 10 * GB;
  cfg.servers_per_pod = 2;
  cfg.core_switches = 2;
  cfg.core_bandwidth = 2.5 * GB;
  Cluster c = make_multi_nic(cfg);
  c.finalize("t");
  EXPECT_NEAR(c.bandwidth(0, 1), 20 * GB / 3, 1e-6);
  EXPECT_EQ(c.num_paths(0, 2), 4);
  EXPECT_NEAR(c.bandwidth(0, 2), 20 * GB / 3, 1e-6);
  EXPECT_EQ(c.num_paths(0, 3), 2);
  EXPECT_NEAR(c.bandwidth(0, 3), 5 * GB, 1e-6);
  EXPECT_TIME(moving(c, run_transfers(c, {{0, 3}}).flows[0]), X / (5 * GB));
  // A pod switch has 2 servers x 10 GB/s below it and 2 cores x 2.5 GB/s above: 4:1.
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 4.0);
}

TEST(Topologies, GpuSpeedOverridesMakeSimgridComputeFaster) {
  // Server 1's GPUs run twice as fast: a 10 us operator takes 5 us there.
  YAML::Node n = YAML::Load(
      "type: non-blocking\nservers: 2\ngpus_per_server: 1\nserver_overrides: [{server: 1, gpu_memory: 80GiB, gpu_speed: 2}]\n");
  Cluster c = cluster_from_yaml(n, "c.yaml");
  EXPECT_DOUBLE_EQ(c.device(0).memory_bytes, 16.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(c.device(1).memory_bytes, 80.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(c.device(1).compute_speed, 2);
  EXPECT_DOUBLE_EQ(c.compute_time(1, 10e-6), 5e-6);
  Graph g;
  g.add_operator({"a", "op", 10e-6, 0});
  g.add_operator({"b", "op", 10e-6, 0});
  g.finalize("two");
  SimulationResult r = simulate(g, c, std::vector<DeviceId>{0, 1}, {{0}, {1}});
  EXPECT_TIME(r.finish[0], 10e-6);
  EXPECT_TIME(r.finish[1], 5e-6);
}

// ---------------------------------------------------------------------------------------------
// The view and SimGrid agree: every ordered GPU pair, one lone transfer at a time.

namespace {

// A chain that crosses every ordered GPU pair once (a -> b, then b -> the next pair's a), so
// every transfer is alone on the network; tensors of 1..7 MB.
void expect_view_matches_simgrid(const Cluster& c) {
  const int n = c.num_devices();
  std::vector<DeviceId> hops;
  for (DeviceId a = 0; a < n; ++a)
    for (DeviceId b = 0; b < n; ++b)
      if (a != b) {
        hops.push_back(a);
        hops.push_back(b);
      }
  Graph g;
  for (std::size_t i = 0; i < hops.size(); ++i) {
    g.add_operator({fmt::format("op{}", i), "op", 1e-6, 0});
    if (i > 0) g.add_tensor(static_cast<OpId>(i - 1), static_cast<OpId>(i), 1e6 * (1 + static_cast<double>(i % 7)));
  }
  g.finalize("chain");
  Evaluator ev(g, c);
  Schedule s = ev.schedule(hops);
  SimulationResult r = simulate(g, c, hops, s.device_order);
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n) * n, 0);
  ASSERT_EQ(r.subflows.size(), [&] {
    std::size_t paths = 0;
    for (const FlowRecord& f : r.flows) paths += static_cast<std::size_t>(c.num_paths(f.src, f.dst));
    return paths;
  }());
  for (const SubflowRecord& sub : r.subflows) {  // a lone transfer's sub-flows all end together
    const FlowRecord& f = r.flows.at(sub.flow);
    EXPECT_NEAR(sub.end, f.end, 1e-9 * (f.end - f.start));
  }
  for (const FlowRecord& f : r.flows) {
    const double view = c.transfer_time(f.src, f.dst, f.bytes);
    EXPECT_NEAR(f.end - f.start, view, 1e-9 * view) << c.device(f.src).name << " -> " << c.device(f.dst).name;
    seen[static_cast<std::size_t>(f.src) * n + f.dst] = 1;
  }
  int pairs = 0;
  for (auto x : seen) pairs += x;
  EXPECT_EQ(pairs, n * (n - 1));
  EXPECT_NEAR(r.latency, s.latency, 1e-9 * s.latency);
  for (std::size_t i = 0; i < hops.size(); ++i) EXPECT_NEAR(r.finish[i], s.finish[i], 1e-9 * s.latency);
}

}  // namespace

TEST(TopologiesCrossCheck, EveryPairOfEveryFabricMatchesTheView) {
  struct Case {
    const char* name;
    const char* yaml;
  };
  // Tier bandwidths and latencies differ so that the bottleneck moves around the paths.
  const Case cases[] = {
      {"nvlink-servers", "type: nvlink-servers\ngpus: 5\ngpus_per_server: 2\nethernet_latency: 2us\n"},
      {"full-mesh", "type: full-mesh\ngpus: 3\nlatency: 1us\n"},
      {"non-blocking", "type: non-blocking\nservers: 3\ngpus_per_server: 2\nnic_bandwidth: 25Gbps\nnic_latency: 1us\n"},
      {"fat-tree ecmp",
       "type: fat-tree\nk: 4\nservers: 6\ngpus_per_server: 2\nnic_bandwidth: 10GB/s\naggregation_bandwidth: 4GB/s\n"
       "core_bandwidth: 3GB/s\nnic_latency: 1us\naggregation_latency: 0.5us\ncore_latency: 2us\n"},
      {"fat-tree static",
       "type: fat-tree\nk: 4\nservers: 6\ngpus_per_server: 1\nnic_bandwidth: 10GB/s\naggregation_bandwidth: 4GB/s\n"
       "ecmp: false\n"},
      {"spine-leaf ecmp",
       "type: spine-leaf\nservers: 5\nservers_per_leaf: 2\nspines: 3\ngpus_per_server: 2\nnic_bandwidth: 10GB/s\n"
       "oversubscription: 2\nuplink_latency: 1us\n"},
      {"spine-leaf static",
       "type: spine-leaf\nleaves: 2\nservers_per_leaf: 2\nspines: 2\ngpus_per_server: 1\nuplink_bandwidth: 3GB/s\n"
       "ecmp: false\n"},
      {"fat-tree nics", "type: fat-tree\nk: 4\nservers: 5\ngpus_per_server: 4\nnics_per_server: 2\nnic_bandwidth: 10GB/s\n"
                        "core_bandwidth: 7GB/s\nnic_latency: 1us\n"},
      {"fat-tree nics static", "type: fat-tree\nk: 4\nservers: 6\ngpus_per_server: 2\nnics_per_server: 2\necmp: false\n"},
      {"spine-leaf nics", "type: spine-leaf\nservers: 5\nservers_per_leaf: 2\nspines: 3\ngpus_per_server: 4\nnics_per_server: 4\n"
                          "nic_bandwidth: 10GB/s\noversubscription: 3\n"},
      {"multi-nic uniform", "type: multi-nic\nservers: 4\ngpus_per_server: 2\nnics_per_server: 3\nlink_bandwidth: 25Gbps\n"},
      {"multi-nic explicit",
       "type: multi-nic\nservers: 3\ngpus_per_server: 2\nnics_per_server: 2\nlink_bandwidth: 10GB/s\nlink_latency: 1us\n"
       "allocation: [[0, 13GB/s, 7GB/s], [2GB/s, 0, 1GB/s], [10GB/s, 10GB/s, 0]]\n"},
      {"multi-nic pods",
       "type: multi-nic\nservers: 5\ngpus_per_server: 1\nnics_per_server: 2\nlink_bandwidth: 10GB/s\nservers_per_pod: 2\n"
       "core_switches: 2\ncore_bandwidth: 3GB/s\ncore_latency: 1us\n"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Cluster c = cluster_from_yaml(YAML::Load(k.yaml), k.name);
    expect_view_matches_simgrid(c);
  }
}

// Every registered fabric, at its defaults and with each key set to its documented example:
// a lone transfer between every GPU pair in SimGrid takes what the pairwise view says.
TEST(TopologiesCrossCheck, EveryRegisteredFabricAndKeyMatchesTheView) {
  for (const auto& [type, yaml] : testutil::registry_variants()) {
    SCOPED_TRACE(yaml);
    EXPECT_NO_THROW(expect_view_matches_simgrid(cluster_from_yaml(YAML::Load(yaml), "c.yaml")));
  }
}

// Rail-only (topologies/rail_only.h): traffic to rank j of a server rides rail j. Servers of 2 GPUs,
// 10 GB/s NICs. GPU 0 (server 0, rank 0) and GPU 1 (server 0, rank 1) both send X to GPU 3
// (server 1, rank 1): both cross server 0's rail-1 NIC, so they share it, 5 GB/s each. Sent to
// GPUs 2 and 3 instead, they use rails 0 and 1 and run at 10 GB/s each.
TEST(Topologies, RailOnlySendsToRankJOverRailJ) {
  const Cluster c = cluster_from_yaml(YAML::Load("{type: rail-only, servers: 2, gpus_per_server: 2, nic_bandwidth: 10GB/s}"), "t");
  EXPECT_EQ(c.link(c.route(0, 3)[0]).name, "server0-rail1-up");
  EXPECT_EQ(c.link(c.route(0, 2)[0]).name, "server0-rail0-up");
  const SimulationResult shared = run_transfers(c, {{0, 3}, {1, 3}});
  for (const FlowRecord& f : shared.flows) EXPECT_TIME(f.end - f.start, X / (5 * GB));
  const SimulationResult apart = run_transfers(c, {{0, 2}, {1, 3}});
  for (const FlowRecord& f : apart.flows) EXPECT_TIME(f.end - f.start, X / (10 * GB));
}

TEST(TopologiesCrossCheck, ViewsHaveTheExpectedClosedForms) {
  // Fat-tree with ECMP and slower upper tiers: NIC 10, edge-aggregation 4, aggregation-core 3 GB/s.
  // Same edge: NIC bound, 10. Same pod: 2 paths, X/2 on each 4 GB/s edge uplink: 8 GB/s.
  // Other pod: 4 paths; edge uplinks carry X/2 (8 GB/s), core links X/4 (12 GB/s): 8 GB/s.
  Cluster c = cluster_from_yaml(YAML::Load("type: fat-tree\nk: 4\nservers: 6\ngpus_per_server: 1\nnic_bandwidth: 10GB/s\n"
                                           "aggregation_bandwidth: 4GB/s\ncore_bandwidth: 3GB/s\nnic_latency: 1us\n"
                                           "aggregation_latency: 0.5us\ncore_latency: 2us\n"),
                                "t");
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1), 10 * GB);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 2), 8 * GB);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 4), 8 * GB);
  EXPECT_NEAR(c.latency(0, 1), 2e-6, 1e-18);
  EXPECT_NEAR(c.latency(0, 2), 3e-6, 1e-18);
  EXPECT_NEAR(c.latency(0, 4), 7e-6, 1e-18);
  // With 1 GB/s cores the core links bind: each carries X/4, so 4 GB/s.
  Cluster slow = cluster_from_yaml(YAML::Load("type: fat-tree\nk: 4\nservers: 6\ngpus_per_server: 1\nnic_bandwidth: 10GB/s\n"
                                              "core_bandwidth: 1GB/s\n"),
                                   "t");
  EXPECT_DOUBLE_EQ(slow.bandwidth(0, 4), 4 * GB);
  // route() still gives one path's links, in order: NIC up, edge uplink, core up, core down,
  // edge downlink, NIC down.
  auto first = c.route(0, 4);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(c.link(first[0]).name, "server0-nic-up");
  EXPECT_EQ(c.link(first[1]).name, "edge0.0-to-agg0.0");
  EXPECT_EQ(c.link(first[2]).name, "agg0.0-to-core0.0");
  EXPECT_EQ(c.link(first[5]).name, "server4-nic-down");
  double shares = 0;
  for (const RoutePath& p : c.paths(0, 4)) shares += p.share;
  EXPECT_DOUBLE_EQ(shares, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Shapes, units and errors.

TEST(Topologies, ImpossibleShapesAndBadUnitsNameTheField) {
  auto expect = [](const std::string& yaml, const std::string& needle) {
    const std::string m = error_of(yaml);
    EXPECT_NE(m.find(needle), std::string::npos) << "for: " << yaml << "\ngot: " << m;
    EXPECT_NE(m.find("c.yaml"), std::string::npos) << m;
  };
  expect("type: fat-tree\nk: 5\n", "cluster.k (line 2): k must be even");
  expect("type: fat-tree\nk: 4\nservers: 17\n", "cluster.servers (line 3): a k=4 fat-tree holds 16 servers");
  expect("type: fat-tree\nk: 4\nnic_bandwidth: 0GB/s\n", "cluster.nic_bandwidth");
  expect("type: fat-tree\nk: 4\nnic_bandwidth: 25 Gb/h\n", "unknown bandwidth unit 'Gb/h'");
  expect("type: fat-tree\nk: 4\ncore_latency: soon\n", "cluster.core_latency");
  expect("type: fat-tree\nk: 128\n", "give `servers:`");
  expect("type: fat-tree\nk: 4\necmp: maybe\n", "cluster.ecmp");
  expect("type: fat-tree\nk: 4\nradix: 4\n", "unknown key");
  expect("type: spine-leaf\nleaves: 2\nservers: 9\nservers_per_leaf: 4\n", "2 leaves of 4 servers hold 8 servers, not 9");
  expect("type: spine-leaf\nleaves: 2\noversubscription: 4\nuplink_bandwidth: 1GB/s\n", "not both");
  expect("type: spine-leaf\nleaves: 2\noversubscription: 0\n", "cluster.oversubscription");
  expect("type: spine-leaf\nservers_per_leaf: 2\n", "give `servers:` or `leaves:`");
  expect("type: non-blocking\nservers: 0\n", "cluster.servers");
  expect("type: non-blocking\nservers: 2\nserver_overrides: [{server: 2, gpu_memory: 80GiB}]\n",
         "cluster.server_overrides[0].server (line 3): server 2 does not exist");
  expect("type: non-blocking\nservers: 2\nserver_overrides: [{server: 1}]\n", "gpu_memory and/or gpu_speed");
  expect("type: non-blocking\nservers: 2\ngpu_speed: 0\n", "cluster.gpu_speed");
  expect("type: non-blocking\nservers: 65537\ngpus_per_server: 4\n", "more than placesim handles");
  expect("type: multi-nic\nservers: 2\nnics_per_server: 2\nlink_bandwidth: 10GB/s\nallocation: [[0, 30GB/s], [5GB/s, 0]]\n",
         "cluster.allocation[0]");
  expect("type: multi-nic\nservers: 2\nnics_per_server: 2\nlink_bandwidth: 10GB/s\nallocation: [[0, 30GB/s], [5GB/s, 0]]\n",
         "more than its NICs' 20 GB/s");
  expect("type: multi-nic\nservers: 3\nallocation: [[0, 1GB/s], [1GB/s, 0]]\n", "3 rows");
  expect("type: multi-nic\nservers: 2\nallocation: [[1GB/s, 1GB/s], [1GB/s, 0]]\n", "must be 0");
  expect("type: multi-nic\nservers: 2\nallocation: [[0, fast], [1GB/s, 0]]\n", "cluster.allocation[0][1]");
  expect("type: multi-nic\nservers: 2\nallocation: even\n", "'uniform' or a matrix");
  expect("type: multi-nic\nservers: 2\ncore_switches: 2\n", "only clusters with pods");
  expect("type: fat-tree\nk: 4\nnic_bandwith: 1GB/s\n", "did you mean 'nic_bandwidth'");
  expect("type: spine-leef\n", "did you mean 'spine-leaf'");
  expect("type: fat-tree\nk: 4\ngpus_per_server: 8\nnics_per_server: 3\n",
         "cluster.nics_per_server (line 4): expected a divisor of gpus_per_server (8)");
  expect("type: spine-leaf\nleaves: 2\nnics_per_server: 0\n", "cluster.nics_per_server");
  // A key beside a preset keeps its line through the preset's expansion.
  expect("preset: dgx-h100\nservers: 2\nfoo: 4\n", "foo (line 3): unknown key");

  // The C++ builders check the same shapes (QuickP builds clusters directly).
  FatTreeConfig ft;
  ft.k = 3;
  EXPECT_INPUT_ERROR(make_fat_tree(ft), "cluster.k", "cluster.k: k must be even");
  BandwidthAllocation a(3);
  a.set(1, 0, 25e9);
  EXPECT_INPUT_ERROR(a.validate(3, 20e9), "", "cluster.allocation[1]");
  a.set(1, 0, -1);
  EXPECT_THROW(a.validate(3, 20e9), InputError);
  EXPECT_THROW(BandwidthAllocation(2).validate(3, 20e9), InputError);
}

TEST(Topologies, InfoReportsLevelsBisectionAndOversubscription) {
  // Spine-leaf, 2 leaves of 4 one-GPU servers, 2 spines, NIC 10 GB/s, 4:1: the cut between the
  // leaves is the leaf's 2 uplinks of 5 GB/s = 10 GB/s (against 40 GB/s of NICs).
  Cluster sl = cluster_from_yaml(YAML::Load("type: spine-leaf\nleaves: 2\nservers_per_leaf: 4\nspines: 2\ngpus_per_server: 1\n"
                                            "nic_bandwidth: 10GB/s\noversubscription: 4\n"),
                                 "t");
  TopologyInfo info = describe_topology(sl);
  EXPECT_EQ(info.gpus, 8);
  EXPECT_EQ(info.servers, 8);
  EXPECT_NEAR(info.bisection_bandwidth, 10 * GB, 1e3);
  ASSERT_EQ(info.levels.size(), 1u);  // every pair: 10 GB/s alone
  EXPECT_EQ(info.levels[0].pairs, 56);
  EXPECT_NE(format_topology_info(sl, info).find("oversubscription  4:1"), std::string::npos);
  // A full k=4 fat-tree has full bisection: 8 servers x 12.5 GB/s.
  Cluster ft = cluster_from_yaml(YAML::Load("type: fat-tree\nk: 4\ngpus_per_server: 2\nnic_bandwidth: 100Gbps\n"), "t");
  info = describe_topology(ft);
  EXPECT_EQ(info.gpus, 32);
  EXPECT_EQ(info.max_paths, 4);
  EXPECT_NEAR(info.bisection_bandwidth, 100 * GB, 1e3);
  ASSERT_EQ(info.levels.size(), 2u);  // NVLink, and NIC for every other pair
  EXPECT_DOUBLE_EQ(info.levels[0].bandwidth, 50 * GB);
  EXPECT_EQ(info.levels[0].pairs, 32);
  EXPECT_EQ(info.levels[1].pairs, 32 * 31 - 32);
  // Multi-NIC, 4 servers, 2 NICs of 10 GB/s, uniform (20/3 GB/s per pair): 2 x 2 x 10 GB/s of
  // cables cross the cut, but the allocation gives only 4 pairs x 20/3 GB/s across it.
  Cluster mn = cluster_from_yaml(YAML::Load("type: multi-nic\nservers: 4\ngpus_per_server: 1\nlink_bandwidth: 10GB/s\n"), "t");
  info = describe_topology(mn);
  EXPECT_NEAR(info.bisection_bandwidth, 40 * GB, 1e3);
  EXPECT_NEAR(info.allocated_bisection, 80 * GB / 3, 1e3);
  EXPECT_EQ(info.logical_links, 4 * 3 + 4);  // 12 pairs, 4 of them straddling NICs
  const std::string dot = topology_dot(mn);
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("style=dashed"), std::string::npos);
  EXPECT_NE(dot.find("dir=both"), std::string::npos);
}

TEST(Topologies, ThousandGpuFatTreeStaysSmall) {
  // k = 16 with 256 servers of 4 GPUs: a million GPU pairs share 65,280 server-pair routes (ids
  // up to 256 x 256 between servers, 256 x 4 x 4 within) and 64 equal-cost paths between pods,
  // computed when asked; memory stays at tens of MB (bench/bench_topology.cpp).
  FatTreeConfig cfg;
  cfg.k = 16;
  cfg.servers = 256;
  cfg.gpus_per_server = 4;
  Cluster c = make_fat_tree(cfg);
  c.finalize("t");
  EXPECT_EQ(c.num_devices(), 1024);
  EXPECT_EQ(c.num_routes(), 256 * 256 + 256 * 4 * 4);
  EXPECT_EQ(c.num_paths(0, 1023), 64);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1023), 12.5e9);
}

// ---------------------------------------------------------------------------------------------
// The scenario files of each fabric parse and run.

TEST(Topologies, ScenarioFilesRun) {
  for (const char* name : {"fat-tree", "spine-leaf", "non-blocking", "multi-nic", "rail-optimized"}) {
    SCOPED_TRACE(name);
    SweepPlan plan = load_sweep(fmt::format("{}/scenarios/{}.yaml", PLACESIM_TEST_SOURCE_DIR, name));
    ASSERT_EQ(plan.variants.size(), 1u);
    EXPECT_EQ(plan.variants[0].cluster.fabric.type, name);
    plan.variants[0].simulation.trace = false;
    const fs::path dir = testutil::fresh_temp_dir(fmt::format("topo-{}", name));
    const std::vector<PointRecord> r = testutil::run_plan(plan, dir);
    ASSERT_EQ(r.size(), 2u);
    for (const PointRecord& o : r) {
      ASSERT_TRUE(o.measurement) << o.reason;
      ASSERT_TRUE(o.measurement->latency(kSimGrid).has_value());
      EXPECT_GE(*o.measurement->latency(kSimGrid), o.measurement->latency(kEvaluator).value() * (1 - 1e-9));
    }
    // One GPU: no transfer, both engines give the total compute.
    EXPECT_NEAR(*r[0].measurement->latency(kSimGrid), r[0].measurement->latency(kEvaluator).value(),
                1e-9 * r[0].measurement->latency(kEvaluator).value());
    fs::remove_all(dir);
  }
  Scenario mn = load_scenario(fmt::format("{}/scenarios/multi-nic.yaml", PLACESIM_TEST_SOURCE_DIR));
  // Server 0 gives server 1 25 Gb/s: one NIC plus 5 Gb/s on the other.
  EXPECT_DOUBLE_EQ(mn.cluster.bandwidth(0, 2), 25e9 / 8);
  EXPECT_EQ(mn.cluster.num_paths(0, 2), 2);
  EXPECT_DOUBLE_EQ(mn.cluster.bandwidth(0, 4), 7.5e9 / 8);
}

// ---------------------------------------------------------------------------------------------
// Traces and the CLI.

TEST(Topologies, TraceShowsEverySubflowOnItsLinks) {
  // Spine-leaf with 2 spines (ECMP), one-GPU servers: 0 -> 2 crosses the leaves as 2 sub-flows
  // of X/2, one per spine. The trace has one slice per link the flow crossed (NIC up, 2 uplinks,
  // 2 downlinks, NIC down), each holding the bytes that crossed it.
  Cluster c = cluster_from_yaml(YAML::Load("type: spine-leaf\nleaves: 2\nservers_per_leaf: 2\nspines: 2\ngpus_per_server: 1\n"
                                           "nic_bandwidth: 10GB/s\n"),
                                "t");
  SimulationResult r = run_transfers(c, {{0, 2}});
  ASSERT_EQ(r.subflows.size(), 2u);
  Graph g;
  g.add_operator({"p", "op", 1e-6, 0});
  g.add_operator({"c", "op", 0.0, 0});
  g.add_tensor(0, 1, X);
  g.finalize("pair");
  const std::vector<DeviceId> placement = {0, 2};
  r = simulate(g, c, placement, {{0}, {}, {1}});
  const fs::path path = fs::temp_directory_path() / fmt::format("placesim_topo_trace_{}.json", ::getpid());
  write_chrome_trace(path.string(), g, c, placement, r.start, r.finish, r.flows, r.subflows);
  const nlohmann::json trace = nlohmann::json::parse(std::ifstream(path));
  fs::remove(path);
  std::map<std::string, double> bytes;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "b") {
      bytes[e.at("name").get<std::string>()] += e.at("args").at("bytes").get<double>();
      EXPECT_EQ(e.at("args").at("paths"), 2);
    }
  ASSERT_EQ(bytes.size(), 6u);
  EXPECT_DOUBLE_EQ(bytes["server0-nic-up"], X);
  EXPECT_DOUBLE_EQ(bytes["leaf0-to-spine0"], X / 2);
  EXPECT_DOUBLE_EQ(bytes["leaf0-to-spine1"], X / 2);
  EXPECT_DOUBLE_EQ(bytes["spine1-to-leaf1"], X / 2);
  EXPECT_DOUBLE_EQ(bytes["server2-nic-down"], X);
  // Link statistics agree.
  for (int l = 0; l < static_cast<int>(c.links().size()); ++l)
    if (bytes.count(c.link(l).name)) {
      EXPECT_DOUBLE_EQ(r.links[l].bytes, bytes[c.link(l).name]) << c.link(l).name;
    }
}

TEST(Topologies, CliTopologyInfoAndDot) {
  const fs::path dot = fs::temp_directory_path() / fmt::format("placesim_topo_{}.dot", ::getpid());
  const std::string cmd = fmt::format("{} topology info {}/scenarios/spine-leaf.yaml --dot {} 2>&1", PLACESIM_CLI_PATH,
                                      PLACESIM_TEST_SOURCE_DIR, dot.string());
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  // 16 servers of 2 GPUs; NVLink within a server, the NIC rate otherwise (2 latencies); 8 servers
  // on 2 leaves face the rest through 2 x 2 uplinks of 6.25 GB/s.
  EXPECT_NE(out.find("GPUs              32 in 16 servers"), std::string::npos) << out;
  EXPECT_NE(out.find("50 GB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("12.5 GB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("bisection         25 GB/s"), std::string::npos) << out;
  EXPECT_NE(out.find("oversubscription  4:1"), std::string::npos) << out;
  std::ifstream in(dot);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("spine1"), std::string::npos);
  fs::remove(dot);
}

namespace placesim {
namespace {

// The descriptions that reach every report say one in the singular.
TEST(Topologies, DescriptionsSayOneInTheSingular) {
  EXPECT_NE(testutil::nvlink_servers(2).description.find("2 GPUs in 1 server of 2"), std::string::npos)
      << testutil::nvlink_servers(2).description;
  const Cluster multi = cluster_from_yaml(
      YAML::Load("type: multi-nic\nservers: 4\ngpus_per_server: 1\nnics_per_server: 2\nlink_bandwidth: 20Gbps\n"), "c.yaml");
  EXPECT_NE(multi.description.find("4 servers x 1 GPU (NVLink"), std::string::npos) << multi.description;
}

}  // namespace
}  // namespace placesim

// The example: a fat-tree of DGX-like servers, each GPU with its own 400 Gb/s NIC. It
// builds, says its NICs, and keeps full bisection (the tiers above take a server's 8 NICs).
TEST(Topologies, FatTreeOfEightNicServersBuildsAtFullBisection) {
  const Cluster c = cluster_from_yaml(
      YAML::Load("{type: fat-tree, k: 8, servers: 64, gpus_per_server: 8, nics_per_server: 8, nic_bandwidth: 400Gbps}"), "c.yaml");
  EXPECT_NE(c.description.find("8 NICs of 50 GB/s per server"), std::string::npos) << c.description;
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 1);
  EXPECT_EQ(c.link(c.route(5, 13)[0]).name, "server0-nic5-up");
  EXPECT_DOUBLE_EQ(c.bandwidth(5, 13), 50e9);
  EXPECT_DOUBLE_EQ(c.link(c.route(5, 8 * 40 + 5)[1]).bandwidth, 400e9);  // edge -> aggregation: the server's NICs together
}

// A fat-tree or spine-leaf of several NICs per server describes itself by server pairs (each GPU's
// own NIC, all alike): its levels are what a walk over every GPU pair finds.
TEST(Topologies, InfoOfSeveralNicsPerServerIsEveryPairsView) {
  for (const char* yaml : {"{type: fat-tree, k: 4, servers: 6, gpus_per_server: 4, nics_per_server: 2, nic_latency: 1us, core_latency: 2us}",
                           "{type: spine-leaf, servers: 5, servers_per_leaf: 2, spines: 3, gpus_per_server: 4, nics_per_server: 4, "
                           "oversubscription: 3, uplink_latency: 1us}"}) {
    SCOPED_TRACE(yaml);
    Cluster c = cluster_from_yaml(YAML::Load(yaml), "c.yaml");
    c.finalize("t");
    EXPECT_TRUE(c.views_by_server());
    EXPECT_FALSE(c.routes_by_server());
    std::map<std::pair<double, double>, long> walked;
    int most_paths = 0;
    for (DeviceId a = 0; a < c.num_devices(); ++a)
      for (DeviceId b = 0; b < c.num_devices(); ++b)
        if (a != b) {
          ++walked[{-c.bandwidth(a, b), c.latency(a, b)}];
          most_paths = std::max(most_paths, c.num_paths(a, b));
        }
    const TopologyInfo info = describe_topology(c);
    ASSERT_EQ(info.levels.size(), walked.size());
    std::size_t i = 0;
    for (const auto& [view, pairs] : walked) {
      EXPECT_DOUBLE_EQ(info.levels[i].bandwidth, -view.first);
      EXPECT_DOUBLE_EQ(info.levels[i].latency, view.second);
      EXPECT_EQ(info.levels[i].pairs, pairs);
      ++i;
    }
    EXPECT_EQ(info.max_paths, most_paths);
  }
}
