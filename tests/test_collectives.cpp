// Collectives (sim/collectives/collectives.h) against closed forms derived by hand, on every engine: the
// evaluator (contention-free), the flow engine and SimGrid (flows sharing links).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

constexpr double kB = 20e9;       // bytes/s per NIC, each direction
constexpr double kNicAlpha = 1e-6;  // per NIC link: a transfer crosses two
constexpr double kAlpha = 2 * kNicAlpha;
constexpr double kS = 64e6;

Cluster one_gpu_servers(int n, double nic_latency = kNicAlpha) { return testutil::one_gpu_servers(n, kB, nic_latency); }

CollectiveSpec spec(CollectiveOp op, CollectiveAlgorithm a, int n, int chunks = 1, double bytes = kS) {
  CollectiveSpec s;
  s.op = op;
  s.algorithm = a;
  for (int i = 0; i < n; ++i) s.group.push_back(i);
  s.bytes = bytes;
  s.chunks = chunks;
  return s;
}

using Times = testutil::EngineTimes;
Times run(const ExecutionGraph& g, const Cluster& c) { return testutil::run_all_engines(g, c); }
Times run(const CollectiveSpec& sp, const Cluster& c) { return run(collective_graph(sp, c), c); }

// A spine-leaf of `servers` servers of `gpus` GPUs, `per_leaf` under each leaf, one spine, NICs
// at kB, NVLink at 8 kB, no latency.
Cluster spine_leaf(int servers, int per_leaf, int gpus, double oversubscription = 1) {
  SpineLeafConfig cfg;
  cfg.servers = servers;
  cfg.servers_per_leaf = per_leaf;
  cfg.gpus_per_server = gpus;
  cfg.spines = 1;
  cfg.nic_bandwidth = kB;
  cfg.nvlink_bandwidth = 8 * kB;
  cfg.oversubscription = oversubscription;
  return make_spine_leaf(cfg);
}

// 2 servers of 4 GPUs: NVLink at 50 GB/s without latency, a NIC per server at kB with kNicAlpha.
Cluster two_nvlink_servers() {
  NonBlockingConfig cfg;
  cfg.servers = 2;
  cfg.gpus_per_server = 4;
  cfg.nic_bandwidth = kB;
  cfg.nic_latency = kNicAlpha;
  cfg.nvlink_bandwidth = 50e9;
  return make_non_blocking(cfg);
}

#define EXPECT_REL(a, b) EXPECT_NEAR((a), (b), 1e-9 * std::abs(b))

}  // namespace

TEST(Collectives, RingAllReduceIsTwoNMinusOneStepsOfAnNth) {
  // 2(n-1)(alpha + S/(nB)); each GPU sends 2(n-1)/n of the buffer. Chunks serialise on a
  // connection: c pieces per step cost c alphas and the same bytes.
  for (int n : {2, 3, 4, 8})
    for (int chunks : {1, 4}) {
      const Cluster c = one_gpu_servers(n);
      const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, n, chunks);
      const double expected = 2 * (n - 1) * (chunks * kAlpha + kS / (n * kB));
      EXPECT_REL(collective_closed_form(sp, c), expected);
      const ExecutionGraph g = collective_graph(sp, c);
      const Times t = run(g, c);
      EXPECT_REL(t.evaluator, expected) << n << " " << chunks;
      EXPECT_REL(t.flow, expected) << n << " " << chunks;
      EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected) << n << " " << chunks;
      // The bytes each GPU sends: its cross-GPU tensors, the flows every engine runs.
      std::map<DeviceId, double> sent;
      for (const Tensor& x : g.graph.tensors())
        if (g.placement[x.src] != g.placement[x.dst]) sent[g.placement[x.src]] += x.bytes;
      for (int r = 0; r < n; ++r) EXPECT_REL(sent[r], 2.0 * (n - 1) / n * kS) << n;
    }
}

TEST(Collectives, RingReduceScatterAndAllGatherAreHalfOfIt) {
  const Cluster c = one_gpu_servers(4);
  for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllGather}) {
    const CollectiveSpec sp = spec(op, CollectiveAlgorithm::Ring, 4);
    const double expected = 3 * (kAlpha + kS / (4 * kB));
    EXPECT_REL(collective_closed_form(sp, c), expected);
    const Times t = run(sp, c);
    EXPECT_REL(t.evaluator, expected);
    EXPECT_REL(t.flow, expected);
  }
}

TEST(Collectives, HalvingDoublingIsASumOverLogNSteps) {
  // Reduce-scatter: sum over i = 1..log2 n of alpha + S/(2^i B); all-gather the same steps in
  // reverse; all-reduce both. One partner per step: nothing shares a NIC, so every engine agrees.
  const int n = 8;
  const Cluster c = one_gpu_servers(n);
  double rs = 0;
  for (int i = 1; i <= 3; ++i) rs += kAlpha + kS / (std::pow(2, i) * kB);
  for (auto [op, expected] : {std::pair{CollectiveOp::ReduceScatter, rs}, std::pair{CollectiveOp::AllGather, rs},
                              std::pair{CollectiveOp::AllReduce, 2 * rs}}) {
    const CollectiveSpec sp = spec(op, CollectiveAlgorithm::HalvingDoubling, n);
    EXPECT_REL(collective_closed_form(sp, c), expected);
    const Times t = run(sp, c);
    EXPECT_REL(t.evaluator, expected);
    EXPECT_REL(t.flow, expected);
    EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected);
  }
  // Two chunks: two alphas per step, the same bytes.
  const CollectiveSpec two = spec(CollectiveOp::ReduceScatter, CollectiveAlgorithm::HalvingDoubling, n, 2);
  EXPECT_REL(run(two, c).flow, rs + 3 * kAlpha);
}

TEST(Collectives, TreePipelinesItsChunks) {
  // Double binary tree on 4 GPUs: heap trees of depth 2, each carrying S/2 in c pieces; piece k
  // is reduced at the root at (2 + k) piece times and reaches the deepest leaf 2 later:
  // (2 * 2 + c - 1)(alpha + S/(2cB)). The evaluator lets a parent receive from two children at
  // full rate; the flow engine shares the NIC, and can only be slower.
  const Cluster c = one_gpu_servers(4);
  for (int chunks : {1, 8}) {
    const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, 4, chunks);
    const double expected = (4 + chunks - 1) * (kAlpha + kS / (2 * chunks * kB));
    EXPECT_REL(collective_closed_form(sp, c), expected);
    const Times t = run(sp, c);
    EXPECT_REL(t.evaluator, expected) << chunks;
    EXPECT_GE(t.flow, expected * (1 - 1e-9)) << chunks;
    EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow) << chunks;
  }
  // 8 GPUs: depth 3; 7 GPUs: depth 2 as 4 (floor(log2 n)).
  for (auto [n, depth] : {std::pair{8, 3}, std::pair{7, 2}}) {
    const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, n, 4);
    const double expected = (2 * depth + 4 - 1) * (kAlpha + kS / (2 * 4 * kB));
    const Cluster cn = one_gpu_servers(n);
    EXPECT_REL(collective_closed_form(sp, cn), expected) << n;
    EXPECT_REL(run(sp, cn).evaluator, expected) << n;
  }
  // Pipelining pays: 8 chunks beat 1 by far (11 * S/16B against 4 * S/2B, without alpha).
  EXPECT_LT(collective_closed_form(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, 4, 8), c),
            0.5 * collective_closed_form(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, 4, 1), c));
}

TEST(Collectives, ChainBroadcastAndReduceFromTheRoot) {
  // A chain of n - 1 hops, c pieces: (n - 2 + c)(alpha + S/(cB)); one flow in and one out per
  // NIC, so every engine agrees. Root 2 of 5: the chain is 2, 3, 4, 0, 1.
  const Cluster c = one_gpu_servers(5);
  for (CollectiveOp op : {CollectiveOp::Broadcast, CollectiveOp::Reduce}) {
    CollectiveSpec sp = spec(op, CollectiveAlgorithm::Ring, 5, 4);
    sp.root = 2;
    const double expected = (5 - 2 + 4) * (kAlpha + kS / (4 * kB));
    EXPECT_REL(collective_closed_form(sp, c), expected);
    const Times t = run(sp, c);
    EXPECT_REL(t.evaluator, expected);
    EXPECT_REL(t.flow, expected);
    EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected);
  }
  // A tree broadcast and a tree reduce over 7 GPUs from root 3: depth 2, (2 + c - 1) pieces. A
  // parent sends to (broadcast) or receives from (reduce) two children at once: the evaluator
  // gives each its full rate, the flow engine shares the NIC and can only be slower.
  const Cluster seven = one_gpu_servers(7);
  for (CollectiveOp op : {CollectiveOp::Broadcast, CollectiveOp::Reduce}) {
    CollectiveSpec tree = spec(op, CollectiveAlgorithm::Tree, 7, 4);
    tree.root = 3;
    const double expected = (2 + 4 - 1) * (kAlpha + kS / (4 * kB));
    EXPECT_REL(collective_closed_form(tree, seven), expected);
    const Times t = run(tree, seven);
    EXPECT_REL(t.evaluator, expected);
    EXPECT_GT(t.flow, expected * (1 + 1e-6));
    EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
  }
}

TEST(Collectives, DirectSharesTheNicAmongItsFlows) {
  // Each GPU sends S/n to each of the n - 1 others at once. Contention-free: alpha + S/(nB). On
  // the NIC the n - 1 flows share B: alpha + (n-1) S/(nB), as the flow engine and SimGrid find.
  const int n = 4;
  const Cluster c = one_gpu_servers(n);
  for (CollectiveOp op : {CollectiveOp::ReduceScatter, CollectiveOp::AllToAll, CollectiveOp::AllGather}) {
    const CollectiveSpec sp = spec(op, CollectiveAlgorithm::Direct, n);
    EXPECT_REL(collective_closed_form(sp, c), kAlpha + kS / (n * kB));
    const Times t = run(sp, c);
    EXPECT_REL(t.evaluator, kAlpha + kS / (n * kB));
    EXPECT_REL(t.flow, kAlpha + (n - 1) * kS / (n * kB));
    EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
  }
  EXPECT_REL(run(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Direct, n), c).flow,
             2 * (kAlpha + (n - 1) * kS / (n * kB)));
}

TEST(Collectives, HierarchicalUsesNvlinkInsideAndTheNicAcross) {
  // 2 servers of 4 GPUs (NVLink 50 GB/s, no latency; NICs 20 GB/s with 1 us each): ring
  // reduce-scatter and all-gather over NVLink, 3 steps of S/4 each, and a ring all-reduce of S/4
  // across the 2 servers, 2 steps of S/8: 2 * 3 * S/(4 * 50e9) + 2 * (alpha + S/(8 * 20e9)).
  const Cluster c = two_nvlink_servers();
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, 8);
  const double expected = 6 * kS / (4 * 50e9) + 2 * (kAlpha + kS / (8 * kB));
  EXPECT_REL(collective_closed_form(sp, c), expected);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, expected);
  // Across servers the 4 rings share their server's one NIC: each gets B/4.
  EXPECT_REL(t.flow, 6 * kS / (4 * 50e9) + 2 * (kAlpha + kS / (8 * kB / 4)));
  EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
  // A flat ring over the same 8 GPUs crosses the NIC with S/8 per step for 14 steps.
  EXPECT_GT(run(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8), c).flow, t.flow);
}

TEST(Collectives, HalvingDoublingPricesEachStepAtItsPartners) {
  // 2 servers of 4 GPUs. Reduce-scatter by halving: step 1 pairs GPUs 4 apart (across the NICs,
  // S/2), steps 2 and 3 pairs inside a server (NVLink, S/4 and S/8); all-gather the same in
  // reverse. The closed form and the evaluator price each step at its own partners: 2 * (alpha +
  // S/(2 B) + S/(4 * 50e9) + S/(8 * 50e9)), not every step at the NIC. Under contention the 4
  // GPUs of a server share its NIC in step 1: B/4 each.
  const Cluster c = two_nvlink_servers();
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::HalvingDoubling, 8);
  const double inside = kS / (4 * 50e9) + kS / (8 * 50e9);
  const double expected = 2 * (kAlpha + kS / (2 * kB) + inside);
  EXPECT_REL(collective_closed_form(sp, c), expected);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, expected);
  EXPECT_REL(t.flow, 2 * (kAlpha + kS / (2 * kB / 4) + inside));
  EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
  // As a line in the bytes (what planners price): the latency of the two NIC steps, then the rest.
  const AffineTime line = collective_affine_form(sp, c);
  EXPECT_REL(line.intercept, 2 * kAlpha);
  EXPECT_REL(line.at(kS), expected);
  EXPECT_EQ(line.at(0), 0);
}

TEST(Collectives, RingOnAMultiNicAllocationRunsAtItsSuccessorsShare) {
  // QuickP's Fig. 3.2 allocation (scenarios/multi-nic.yaml): 4 one-GPU servers with d = 2 NICs
  // of 20 GB/s; each server gives its ring successor 25 GB/s (one NIC and 5 GB/s of the other)
  // and the two others 7.5 GB/s. A ring all-reduce only sends to successors: 6 steps of S/4 at
  // 25 GB/s, in the closed form as in every engine (the slowest pair of the group, 7.5 GB/s,
  // carries nothing).
  MultiNicConfig cfg;
  cfg.servers = 4;
  cfg.gpus_per_server = 1;
  cfg.nics_per_server = 2;
  cfg.link_bandwidth = 20e9;
  BandwidthAllocation a = BandwidthAllocation::uniform(4, 40e9);
  for (int s = 0; s < 4; ++s)
    for (int t = 0; t < 4; ++t)
      if (s != t) a.set(s, t, t == (s + 1) % 4 ? 25e9 : 7.5e9);
  Cluster c = make_multi_nic(cfg, a);
  c.finalize("t");
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 4);
  const double expected = 6 * kS / (4 * 25e9);
  EXPECT_REL(collective_closed_form(sp, c), expected);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, expected);
  EXPECT_REL(t.flow, expected);
  EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected);
  // The ring the other way round sends only on the 7.5 GB/s pairs.
  CollectiveSpec reversed = sp;
  reversed.group = {3, 2, 1, 0};
  EXPECT_REL(collective_closed_form(reversed, c), 6 * kS / (4 * 7.5e9));
  EXPECT_REL(run(reversed, c).evaluator, 6 * kS / (4 * 7.5e9));
}

TEST(Collectives, CrossLeafStepsRunAtTheUplinkShare) {
  // Spine-leaf, 2 leaves of 4 one-GPU servers, one spine, 4:1: each leaf's uplink carries 4 x
  // 20 / 4 = 20 GB/s. Halving-doubling reduce-scatter over the 8 GPUs: step 1 pairs each GPU with
  // the one 4 ranks away, on the other leaf, so 4 flows share the uplink at B/4 each: S/2 takes
  // 2S/B. Steps 2 and 3 stay in the leaf: S/(4B) and S/(8B). No latency here.
  const Cluster c = spine_leaf(8, 4, 1, 4);
  const CollectiveSpec sp = spec(CollectiveOp::ReduceScatter, CollectiveAlgorithm::HalvingDoubling, 8);
  const double contention_free = kS / (2 * kB) + kS / (4 * kB) + kS / (8 * kB);
  EXPECT_REL(collective_closed_form(sp, c), contention_free);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, contention_free);
  EXPECT_REL(t.flow, (kS / 2) / (kB / 4) + kS / (4 * kB) + kS / (8 * kB));
  EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
}

TEST(Collectives, TwoAllReducesSharingANicEachSlowDownAsMaxMinSays) {
  // Ring all-reduces over GPUs {0, 1} and {0, 2} of three one-GPU servers, at once, no latency.
  // Alone each is 2 steps of S/2 at B: S/B. Together GPU 0 sends two flows and receives two, so
  // max-min gives every flow B/2 (GPU 1's and 2's flows are held to it by GPU 0's ingress): 2S/B.
  const Cluster c = one_gpu_servers(3, 0.0);
  CollectiveSpec a = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 2);
  CollectiveSpec b = a;
  b.group = {0, 2};
  EXPECT_REL(run(a, c).flow, kS / kB);
  ExecutionGraph both;
  append_collective(both, a, c, "a");
  append_collective(both, b, c, "b");
  both.graph.finalize("two all-reduces");
  const Times t = run(both, c);
  EXPECT_REL(t.evaluator, kS / kB);  // contention-free: as if alone
  EXPECT_REL(t.flow, 2 * kS / kB);
  EXPECT_NEAR(t.simgrid, 2 * kS / kB, 1e-6 * kS / kB);
}

TEST(Collectives, ACollectiveWaitsForWhatItIsAppendedAfter) {
  // A 1 ms compute operator on each of two GPUs, then a ring all-reduce of their outputs.
  const Cluster c = one_gpu_servers(2, 0.0);
  ExecutionGraph g;
  const OpId a = g.add({"backward0", "compute", 1e-3, 0}, 0);
  const OpId b = g.add({"backward1", "compute", 2e-3, 0}, 1);
  const std::vector<OpId> done = append_collective(g, spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 2), c,
                                                   "grad", std::vector<OpId>{a, b});
  g.graph.finalize("compute then all-reduce");
  ASSERT_EQ(done.size(), 2u);
  // The slower GPU starts its part at 2 ms: each step waits for both sides.
  EXPECT_REL(run(g, c).flow, 2e-3 + kS / kB);
}

TEST(Collectives, BadSpecsSayWhy) {
  const Cluster c = one_gpu_servers(6);
  auto why = [&](CollectiveSpec s) { return collective_problem(s, c); };
  EXPECT_NE(why(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::HalvingDoubling, 6)).find("power-of-two"),
            std::string::npos);
  EXPECT_NE(why(spec(CollectiveOp::AllToAll, CollectiveAlgorithm::Ring, 4)).find("it has: direct"), std::string::npos);
  EXPECT_NE(why(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 1)).find("at least 2"), std::string::npos);
  CollectiveSpec twice = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 2);
  twice.group = {1, 1};
  EXPECT_NE(why(twice).find("twice"), std::string::npos);
  CollectiveSpec outside = twice;
  outside.group = {0, 9};
  EXPECT_NE(why(outside).find("not in the cluster"), std::string::npos);
  EXPECT_EQ(why(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 6)), "");
  EXPECT_THROW(collective_graph(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 1), c), std::invalid_argument);
  // nccl-tests' bus bandwidth factors.
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::Broadcast, 8), 1.0);
}

TEST(Collectives, MultiLevelGroupsServersByTheTiersOfTheFabric) {
  // Spine-leaf, 2 leaves of 2 servers of 2 GPUs: the server (GPUs 0-1, ...), the leaf (servers
  // 0-1, 2-3), the spine. Rings: in each server; then GPUs of equal local rank under one leaf;
  // then the same place under the two leaves.
  const Cluster c = spine_leaf(4, 2, 2);
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 8);
  using Rings = std::vector<std::vector<int>>;
  const auto levels = collective_levels(sp, c);
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0], (Rings{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(levels[1], (Rings{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(levels[2], (Rings{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Contention-free, by hand: 2 (1)(S/2 over NVLink) + 2 (1)(S/4 over a NIC) + 2 (1)(S/8 across
  // the spine), each at its pair's latency and bandwidth.
  auto step = [&](DeviceId a, DeviceId b, double bytes) { return c.latency(a, b) + bytes / c.bandwidth(a, b); };
  const double by_hand = 2 * step(0, 1, kS / 2) + 2 * step(0, 2, kS / 4) + 2 * step(0, 4, kS / 8);
  EXPECT_REL(collective_closed_form(sp, c), by_hand);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, by_hand);
  // Under contention the leaf level's two rings leave each server by its one NIC (2 flows, B/2
  // each), as do the top level's: those steps take twice as long.
  EXPECT_REL(t.flow, 2 * step(0, 1, kS / 2) + 2 * (c.latency(0, 2) + kS / 4 / (kB / 2)) +
                         2 * (c.latency(0, 4) + kS / 8 / (kB / 2)));
  EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
}

TEST(Collectives, MultiLevelOnOneGpuServersUnderAnOversubscribedSpine) {
  // As CrossLeafStepsRunAtTheUplinkShare (2 leaves of 4 one-GPU servers, 4:1, no latency): a ring
  // reduce-scatter and all-gather in each leaf (3 steps of S/4 each), a ring all-reduce of S/4
  // between the leaves (2 steps of S/8). Contention-free 1.75 S/B, the ring's; under contention
  // the top level's 4 flows per uplink run at B/4: 2 x (S/8)/(B/4) = S/B instead of S/(4B), 2.5 S/B
  // in all, where the ring (two crossings per step, one per direction) keeps 1.75 S/B.
  const Cluster c = spine_leaf(8, 4, 1, 4);
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 8);
  EXPECT_REL(collective_closed_form(sp, c), 1.75 * kS / kB);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, 1.75 * kS / kB);
  EXPECT_REL(t.flow, 2.5 * kS / kB);
  EXPECT_NEAR(t.simgrid, t.flow, 1e-6 * t.flow);
  const Times ring = run(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8), c);
  EXPECT_REL(ring.flow, 1.75 * kS / kB);
}

TEST(Collectives, MultiLevelWithOneServerPerTierIsHierarchical) {
  // One server per leaf: the tiers are the server and everything else, hierarchical's two levels.
  const Cluster c = spine_leaf(4, 1, 2);
  const CollectiveSpec multi = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 8);
  const CollectiveSpec hier = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, 8);
  EXPECT_EQ(collective_levels(multi, c), collective_levels(hier, c));
  const Times a = run(multi, c), b = run(hier, c);
  EXPECT_REL(a.evaluator, b.evaluator);
  EXPECT_REL(a.flow, b.flow);
  EXPECT_REL(a.simgrid, b.simgrid);
}

TEST(Collectives, MultiLevelNeedsRegularTiers) {
  // GPUs of servers 0 and 1 (leaf 0) and server 2 (leaf 1): two groups under one leaf, one under
  // the other.
  const Cluster c = spine_leaf(4, 2, 1);
  const std::string why = collective_problem(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 3), c);
  EXPECT_NE(why.find("multi-level needs the same number of groups under every group of a tier"), std::string::npos) << why;
  EXPECT_NE(collective_problem(spec(CollectiveOp::AllGather, CollectiveAlgorithm::MultiLevel, 4), c).find("has no algorithm"),
            std::string::npos);
}

// Condensed ring phases (CollectiveDetail::Condensed): a flow per ring neighbour with every
// step's bytes and latencies, the phase ending at the slowest flow.
namespace {
CollectiveSpec condensed(CollectiveSpec s) {
  s.detail = CollectiveDetail::Condensed;
  return s;
}
}  // namespace

TEST(Collectives, CondensedRingIsTheMessageTimeInAFlowPerNeighbour) {
  // Every flow at one rate: steps x (chunks x alpha + S/(nB)), as message by message, from about
  // 4n operators instead of n per step; each GPU sends the same bytes.
  for (int n : {2, 3, 4, 8})
    for (int chunks : {1, 4})
      for (CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather}) {
        const Cluster c = one_gpu_servers(n);
        const CollectiveSpec sp = condensed(spec(op, CollectiveAlgorithm::Ring, n, chunks));
        const int steps = op == CollectiveOp::AllReduce ? 2 * (n - 1) : n - 1;
        const double expected = steps * (chunks * kAlpha + kS / (n * kB));
        const ExecutionGraph g = collective_graph(sp, c);
        const Times t = run(g, c);
        EXPECT_REL(t.evaluator, expected) << n << " " << chunks;
        EXPECT_REL(t.flow, expected) << n << " " << chunks;
        EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected) << n << " " << chunks;
        std::map<DeviceId, double> sent;
        int flows = 0;
        for (const Tensor& x : g.graph.tensors())
          if (g.placement[x.src] != g.placement[x.dst] && x.bytes > 0) {
            sent[g.placement[x.src]] += x.bytes;
            EXPECT_EQ(x.latencies, steps * chunks);
            ++flows;
          }
        EXPECT_EQ(flows, n);
        for (int r = 0; r < n; ++r) EXPECT_REL(sent[r], steps * kS / n) << n;
        EXPECT_LE(g.graph.num_operators(), static_cast<std::size_t>(5 * n + 1));
      }
}

TEST(Collectives, CondensedRingsShareLinksAsTheirMessagesDo) {
  // TwoAllReducesSharingANicEachSlowDownAsMaxMinSays, condensed: GPU 0's two flows each way get
  // B/2, 2S/B; the evaluator sees each alone.
  const Cluster c = one_gpu_servers(3, 0.0);
  CollectiveSpec a = condensed(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 2));
  CollectiveSpec b = a;
  b.group = {0, 2};
  ExecutionGraph both;
  append_collective(both, a, c, "a");
  append_collective(both, b, c, "b");
  both.graph.finalize("two condensed all-reduces");
  const Times t = run(both, c);
  EXPECT_REL(t.evaluator, kS / kB);
  EXPECT_REL(t.flow, 2 * kS / kB);
  EXPECT_NEAR(t.simgrid, 2 * kS / kB, 1e-6 * kS / kB);
  // Hierarchical (HierarchicalUsesNvlinkInsideAndTheNicAcross): the 4 cross-server rings share
  // each server's NIC, condensed as message by message.
  const Cluster servers = two_nvlink_servers();
  const CollectiveSpec hier = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Hierarchical, 8);
  const Times messages = run(hier, servers), flows = run(condensed(hier), servers);
  EXPECT_REL(flows.evaluator, messages.evaluator);
  EXPECT_REL(flows.flow, 6 * kS / (4 * 50e9) + 2 * (kAlpha + kS / (8 * kB / 4)));
  EXPECT_NEAR(flows.simgrid, flows.flow, 1e-6 * flows.flow);
}

TEST(Collectives, CondensedRingAcrossNvlinkAndNicsEndsAtItsSlowestFlow) {
  // A flat ring over 2 servers of 4 GPUs: 6 of its 8 hops on NVLink (50 GB/s, no latency), 2 on
  // NICs (20 GB/s, 2 us), each alone on its links. Condensed, the phase ends with the NIC flows:
  // 14 (alpha + S/(8B)) exactly. Message by message the NIC connections carry their 14 pieces
  // one after another, so no less; ranks run ahead only by the NVLink hops of the first and
  // last piece, which is all the message graph adds.
  const Cluster c = two_nvlink_servers();
  const CollectiveSpec ring = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8);
  const double expected = 14 * (kAlpha + kS / (8 * kB));
  const Times flows = run(condensed(ring), c), messages = run(ring, c);
  EXPECT_REL(flows.evaluator, expected);
  EXPECT_REL(flows.flow, expected);
  EXPECT_NEAR(flows.simgrid, expected, 1e-6 * expected);
  EXPECT_GE(messages.flow, expected * (1 - 1e-9));
  EXPECT_LE(messages.flow, expected + 7 * kS / (8 * 50e9));
}

TEST(Collectives, MultiLevelNamesTheServersWhoseTiersDoNotNest) {
  // One GPU per server, servers joined by links in a line (0 - 1 - 2 - 3) or a star around server
  // 0 (1 - 0 - 2), each route the links between: hops are the route's length.
  auto cluster_of = [](const std::vector<std::pair<int, int>>& edges, int n) {
    Cluster c;
    for (int i = 0; i < n; ++i) c.add_device({"gpu" + std::to_string(i), i, 16e9});
    std::vector<std::vector<int>> adjacent(n);
    for (auto [a, b] : edges) {
      adjacent[a].push_back(b);
      adjacent[b].push_back(a);
    }
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        if (a == b) continue;
        // The path by breadth-first search, a link per hop.
        std::vector<int> parent(n, -1);
        std::vector<int> queue{a};
        parent[a] = a;
        for (std::size_t q = 0; q < queue.size(); ++q)
          for (int v : adjacent[queue[q]])
            if (parent[v] < 0) {
              parent[v] = queue[q];
              queue.push_back(v);
            }
        std::vector<int> links;
        for (int v = b; v != a; v = parent[v]) links.push_back(c.add_link({fmt::format("{}-{}-{}-{}", a, b, parent[v], v), kB, 0}));
        c.set_route(a, b, links);
      }
    c.finalize("hand-made");
    return c;
  };
  const Cluster line = cluster_of({{0, 1}, {1, 2}, {2, 3}}, 4);
  std::string why = collective_problem(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 4), line);
  EXPECT_NE(why.find("servers 1 and 2 are 1 hop apart, but server 1 is within 1 hop of server 0 and server 2 is not (it "
                     "is 2 hops away), so no tier at 1 hop holds the three"),
            std::string::npos)
      << why;
  const Cluster star = cluster_of({{0, 1}, {0, 2}}, 3);
  why = collective_problem(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::MultiLevel, 3), star);
  EXPECT_NE(why.find("servers 1 and 2 are both within 1 hop of server 0, but 2 hops from each other"), std::string::npos)
      << why;
}

TEST(Collectives, RingsOverEveryNicOfAFatTreeServerRunAtTheServersNics) {
  // A k=4 fat-tree of 4 servers of 4 GPUs, each GPU with its own NIC at kB (nics_per_server 4),
  // NVLink at 100 kB, no latency. A ring all-reduce over the 16 GPUs in 4 channels, channel c on
  // 1/4 of the buffer and entering each server at local rank c: each NIC carries one channel's
  // crossing, 2(n-1)/n of S/4, so the all-reduce takes 2(n-1)/n S / (4 kB), as on one NIC of
  // 4 kB per server. One channel crosses one NIC per server: four times as long.
  FatTreeConfig cfg;
  cfg.k = 4;
  cfg.servers = 4;
  cfg.gpus_per_server = 4;
  cfg.nics_per_server = 4;
  cfg.nic_bandwidth = kB;
  cfg.nvlink_bandwidth = 100 * kB;
  const Cluster c = make_fat_tree(cfg);
  EXPECT_EQ(c.link(c.route(3, 7)[0]).name, "server0-nic3-up");  // GPU 3 leaves through its own NIC
  EXPECT_EQ(c.link(c.route(3, 7).back()).name, "server1-nic3-down");
  EXPECT_FALSE(c.routes_by_server());
  CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 16);
  sp.channels = 4;
  const double n = 16, expected = 2 * (n - 1) / n * kS / (4 * kB);
  EXPECT_REL(collective_closed_form(sp, c), expected);
  const Times t = run(sp, c);
  EXPECT_REL(t.evaluator, expected);
  EXPECT_REL(t.flow, expected);
  EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected);
  sp.channels = 1;
  EXPECT_REL(run(sp, c).flow, 4 * expected);
  // The same servers with one NIC of 4 kB: the same all-reduce time.
  cfg.nics_per_server = 1;
  cfg.nic_bandwidth = 4 * kB;
  sp.channels = 4;
  EXPECT_REL(run(sp, make_fat_tree(cfg)).flow, expected);
  // NVLink as slow as a NIC: GPU g -> g + 1 inside a server is a hop of the three channels that do
  // not leave the server at g, so each step moves three pieces of S/(16 x 4) over it: 2(n-1) x 3S
  // / (64 kB) in the flow engine and the closed form (each pair with all a step gives it). The
  // evaluator runs every message alone: a third of it.
  cfg.nics_per_server = 4;
  cfg.nic_bandwidth = kB;
  cfg.nvlink_bandwidth = kB;
  const Cluster slow = make_fat_tree(cfg);
  const double shared = 2 * (n - 1) * 3 * kS / (64 * kB);
  EXPECT_REL(collective_closed_form(sp, slow), shared);
  const Times s = run(sp, slow);
  EXPECT_REL(s.evaluator, shared / 3);
  EXPECT_REL(s.flow, shared);
}

TEST(Collectives, SpineLeafNicsPerServerSizeTheUplinksByTheServersNics) {
  // 2 leaves of 2 servers of 2 GPUs, 2 NICs per server at kB, one spine, 4:1: each leaf's uplink
  // carries 2 servers x 2 NICs x kB / 4 = kB. A ring over the 8 GPUs in 2 channels crosses each
  // NIC with one channel's 2(n-1)/n of S/2, and each leaf's uplink with both channels (the ring's
  // hop to the other leaf), so at kB/2 each: 2(n-1)/n S / kB. At 1:1 (uplinks 4 kB) the NICs
  // set the pace: half that.
  SpineLeafConfig cfg;
  cfg.servers = 4;
  cfg.servers_per_leaf = 2;
  cfg.gpus_per_server = 2;
  cfg.nics_per_server = 2;
  cfg.spines = 1;
  cfg.nic_bandwidth = kB;
  cfg.nvlink_bandwidth = 100 * kB;
  cfg.oversubscription = 4;
  const Cluster c = make_spine_leaf(cfg);
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 4);
  EXPECT_EQ(c.link(c.route(1, 5)[0]).name, "server0-nic1-up");
  EXPECT_DOUBLE_EQ(c.link(c.route(1, 5)[1]).bandwidth, kB);  // leaf0 -> spine0
  CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8);
  sp.channels = 2;
  const double n = 8, expected = 2 * (n - 1) / n * kS / kB;
  const Times t = run(sp, c);
  EXPECT_REL(t.flow, expected);
  EXPECT_NEAR(t.simgrid, expected, 1e-6 * expected);
  cfg.oversubscription = 1;
  EXPECT_REL(run(sp, make_spine_leaf(cfg)).flow, expected / 2);
}
