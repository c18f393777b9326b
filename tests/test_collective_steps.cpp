// The step view of collectives (sim/collectives/collective_steps.h) against the message-level graphs of
// sim/collectives/collectives.h on every engine, against closed forms at 1,024 GPUs, and its refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collectives/collective_steps.h"
#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

constexpr double kB = 20e9;
constexpr double kS = 64e6;

CollectiveSpec spec(CollectiveOp op, CollectiveAlgorithm a, int n, int chunks = 1) {
  CollectiveSpec s;
  s.op = op;
  s.algorithm = a;
  for (int i = 0; i < n; ++i) s.group.push_back(i);
  s.bytes = kS;
  s.chunks = chunks;
  return s;
}

Cluster one_gpu_servers(int n) {
  NonBlockingConfig cfg;
  cfg.servers = n;
  cfg.gpus_per_server = 1;
  cfg.nic_bandwidth = kB;
  cfg.nic_latency = 1e-6;
  return make_non_blocking(cfg);
}

Cluster spine_leaf_4_to_1() {
  SpineLeafConfig cfg;
  cfg.servers = 8;
  cfg.servers_per_leaf = 4;
  cfg.gpus_per_server = 1;
  cfg.spines = 1;
  cfg.nic_bandwidth = kB;
  cfg.nic_latency = 1e-6;
  cfg.oversubscription = 4;
  return make_spine_leaf(cfg);
}

Cluster two_servers_of_four() {
  NonBlockingConfig cfg;
  cfg.servers = 2;
  cfg.gpus_per_server = 4;
  cfg.nic_bandwidth = kB;
  cfg.nic_latency = 1e-6;
  cfg.nvlink_bandwidth = 50e9;
  return make_non_blocking(cfg);
}

// The step view and the message-level graph give the same times on the flow engine and SimGrid.
// The evaluator's steps are floored at their busiest link (busiest_link_time): where each step's
// messages run at one rate that is the contended time, the flow engine's, which the evaluator's
// messages, each alone, may undercut.
void expect_same_as_messages(const CollectiveSpec& sp, const Cluster& c, const std::string& what) {
  const EngineRuns steps = run_collective_steps(sp, c, EngineSet::of({kEvaluator, kFlow, kSimGrid}));
  const EngineRuns messages = run_engines(collective_graph(sp, c), c, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
  EXPECT_NEAR(*steps.latency(kEvaluator), *messages.latency(kFlow), 1e-9 * *messages.latency(kFlow)) << what;
  EXPECT_GE(*steps.latency(kEvaluator), *messages.latency(kEvaluator) * (1 - 1e-9)) << what;
  EXPECT_NEAR(*steps.latency(kFlow), *messages.latency(kFlow), 1e-9 * *messages.latency(kFlow)) << what;
  EXPECT_NEAR(*steps.latency(kSimGrid), *messages.latency(kSimGrid), 1e-6 * *messages.latency(kSimGrid)) << what;
}

}  // namespace

TEST(CollectiveSteps, LockstepLosesNothingOnEveryStepSynchronousCase) {
  // Every algorithm with a step view, on fabrics where each step's messages run at one rate or
  // the step ends when all have arrived: a non-blocking switch, a 4:1 spine-leaf (halving-doubling's
  // cross-leaf step shares the uplink), and hierarchical over NVLink and NICs.
  using Op = CollectiveOp;
  using A = CollectiveAlgorithm;
  const Cluster flat = one_gpu_servers(8), spine_leaf = spine_leaf_4_to_1(), servers = two_servers_of_four();
  for (const Cluster* c : {&flat, &spine_leaf}) {
    for (Op op : {Op::AllReduce, Op::ReduceScatter, Op::AllGather}) {
      for (int chunks : {1, 4}) {
        expect_same_as_messages(spec(op, A::Ring, 8, chunks), *c, "ring");
        expect_same_as_messages(spec(op, A::HalvingDoubling, 8, chunks), *c, "halving-doubling");
      }
      expect_same_as_messages(spec(op, A::Direct, 4), *c, "direct");
    }
    expect_same_as_messages(spec(Op::AllToAll, A::Direct, 8), *c, "all-to-all");
  }
  expect_same_as_messages(spec(Op::AllReduce, A::Hierarchical, 8), servers, "hierarchical");
  expect_same_as_messages(spec(Op::AllReduce, A::Hierarchical, 8, 2), servers, "hierarchical, 2 chunks");
}

TEST(CollectiveSteps, ARingThatCrossesSlowerLinksIsBoundedAbove) {
  // Ring over 2 servers of 4 GPUs: 6 messages per step on NVLink, 2 on NICs. In lockstep every
  // step waits for the NIC's message; message by message the NVLink ranks run ahead, but the NIC
  // connection still carries its 14 messages one after another. Lockstep is the upper bound, and
  // here within 5% of the message-level time.
  const Cluster c = two_servers_of_four();
  const CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 8);
  const EngineRuns steps = run_collective_steps(sp, c, EngineSet::of({kEvaluator, kFlow}));
  const EngineRuns messages = run_engines(collective_graph(sp, c), c, EngineSet::of({kEvaluator, kFlow}), RunOrder::Fcfs);
  for (auto [lockstep, free] : {std::pair{*steps.latency(kEvaluator), *messages.latency(kEvaluator)}, {*steps.latency(kFlow), *messages.latency(kFlow)}}) {
    EXPECT_GE(lockstep, free * (1 - 1e-12));
    EXPECT_LE(lockstep, free * 1.05);
  }
  // By hand: 14 steps of alpha (2 NIC links) + S/8 / B.
  EXPECT_NEAR(*steps.latency(kFlow), 14 * (2e-6 + kS / 8 / kB), 1e-12);
}

TEST(CollectiveSteps, RingAllReduceOnAThousandGpusMatchesItsClosedForm) {
  // 128 servers of 8 GPUs on a fat-tree (k = 8, 100 Gb/s NICs): the ring's neighbours share no
  // link, so every engine gives 2(n-1)(alpha + S/(nB)) of the slowest pair, the NIC; SimGrid too.
  FatTreeConfig cfg;
  cfg.gpus_per_server = 8;
  cfg.servers = 128;
  cfg.k = 8;
  cfg.nic_bandwidth = 12.5e9;
  const Cluster c = make_fat_tree(cfg);
  CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, 1024);
  sp.bytes = 1024.0 * 1024 * 1024;
  const double closed = collective_closed_form(sp, c);
  const EngineRuns steps = run_collective_steps(sp, c, EngineSet::of({kEvaluator, kFlow, kSimGrid}));
  EXPECT_NEAR(*steps.latency(kEvaluator), closed, 1e-9 * closed);
  EXPECT_NEAR(*steps.latency(kFlow), closed, 1e-9 * closed);
  EXPECT_NEAR(*steps.latency(kSimGrid), closed, 1e-6 * closed);
  const std::vector<CollectiveStep> list = collective_steps(sp, c);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].repeats, 2 * 1023);
  EXPECT_EQ(list[0].messages.size(), 1024u);
}

// A tree's step view is its pipeline: every edge at once, hops up + hops down + chunks - 1 times.
// The double binary tree of 4 ranks, by hand: tree 0 (root 0; 1 and 2 under 0; 3 under 1) and
// tree 1 (root 3; 2 and 1 under 3; 0 under 2), depth 2, 3 edges each, up and down: 12 messages of
// S / 2 / 3 (half the buffer per tree, 3 chunks), repeated 2 + 2 + 3 - 1 = 6 times.
TEST(CollectiveSteps, TreesAndChainsStepAsTheirPipeline) {
  const Cluster c = one_gpu_servers(4);
  CollectiveSpec sp = spec(CollectiveOp::AllReduce, CollectiveAlgorithm::Tree, 4);
  sp.chunks = 3;
  const std::vector<CollectiveStep> steps = collective_steps(sp, c);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].repeats, 2 + 2 + 3 - 1);
  ASSERT_EQ(steps[0].messages.size(), 12u);
  EXPECT_DOUBLE_EQ(steps[0].messages[0].bytes, sp.bytes / 2 / 3);
  // A chain (ring broadcast) of 4: 3 hops down, 1 chunk: 3 repeats of 3 messages.
  const std::vector<CollectiveStep> chain = collective_steps(spec(CollectiveOp::Broadcast, CollectiveAlgorithm::Ring, 4), c);
  ASSERT_EQ(chain.size(), 1u);
  EXPECT_EQ(chain[0].repeats, 3);
  EXPECT_EQ(chain[0].messages.size(), 3u);
  // collective_problem's reasons come first.
  EXPECT_NE(collective_steps_problem(spec(CollectiveOp::AllReduce, CollectiveAlgorithm::HalvingDoubling, 3), c), "");
}
