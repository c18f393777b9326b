// Folded graphs (sim/core/folding.h): a representative copy standing for many, its flows sharing
// the links as all copies' flows would (sim/engines/folded_network.h). Each folded result is held
// to the full graph's on every engine, and the contention of k copies on a shared link is derived
// by hand.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "sim/collectives/collectives.h"
#include "sim/engines/engine.h"
#include "sim/engines/folded_network.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/plan_folding.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

Cluster cluster_of(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "test cluster"); }

CollectiveSpec ring_all_reduce(int gpus, double bytes, CollectiveDetail detail) {
  CollectiveSpec s;
  s.op = CollectiveOp::AllReduce;
  s.algorithm = CollectiveAlgorithm::Ring;
  s.bytes = bytes;
  s.detail = detail;
  for (int g = 0; g < gpus; ++g) s.group.push_back(g);
  return s;
}

// Every engine's latency on the graph.
std::vector<double> latencies(const ExecutionGraph& g, const Cluster& c) {
  const EngineRuns runs = run_engines(g, c, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
  std::vector<double> out;
  for (const EngineRun& r : runs.runs) out.push_back(r.latency);
  return out;
}

void expect_close(const std::vector<double>& folded, const std::vector<double>& full, double relative) {
  ASSERT_EQ(folded.size(), full.size());
  for (std::size_t i = 0; i < full.size(); ++i)
    EXPECT_NEAR(folded[i], full[i], relative * full[i]) << "engine #" << i;
}

}  // namespace

// A ring all-reduce over 8 servers of one switch, folded to one server's ranks: the same time on
// every engine as the 64 ranks built whole, message by message and condensed.
TEST(Folding, RingAllReduceOnEightServersMatchesTheWholeRingOnEveryEngine) {
  const Cluster c = cluster_of("{type: non-blocking, servers: 8, gpus_per_server: 8, nvlink_bandwidth: 300GB/s, "
                               "nic_bandwidth: 25GB/s, nic_latency: 2us}");
  for (const CollectiveDetail detail : {CollectiveDetail::Messages, CollectiveDetail::Condensed}) {
    const CollectiveSpec s = ring_all_reduce(64, 64e6, detail);
    const ExecutionGraph full = collective_graph(s, c);
    const ExecutionGraph folded = collective_graph(s, c, 8);
    ASSERT_TRUE(folded.fold);
    EXPECT_EQ(folded.fold->copies, 8);
    EXPECT_LT(folded.graph.num_operators() * 7, full.graph.num_operators());
    const FoldedNetwork network = fold_network(folded.graph, folded.placement, *folded.fold, c);
    EXPECT_TRUE(network.exact()) << network.first_split;
    expect_close(latencies(folded, c), latencies(full, c), 1e-9);
  }
}

// k copies of one flow crossing one shared link each get 1/k of it. Two leaves of 4 servers
// under one spine of uplink 10 GB/s, one GPU per server: a condensed ring over the 8 GPUs in the
// order 0, 4, 1, 5, 2, 6, 3, 7 crosses the spine at every hop, 4 flows each way on the one uplink
// of each leaf. Folded to its first 2 ranks (GPUs 0 and 4), the copies of each of its 2 flows are
// 4, each crossing its leaf's uplink: weight 4 on that link class, so every flow moves at
// 10 / 4 = 2.5 GB/s (the NICs give 25). The ring sends 7 steps of S / 8: 7 x 100 MB / 8 at
// 2.5 GB/s = 35 ms, plus 7 latencies of the path.
TEST(Folding, CopiesOnAnOversubscribedLinkEachGetTheirShare) {
  const Cluster c = cluster_of("{type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 1, gpus_per_server: 1, "
                               "nic_bandwidth: 25GB/s, uplink_bandwidth: 10GB/s, nic_latency: 0s, uplink_latency: 0s}");
  CollectiveSpec s;
  s.op = CollectiveOp::ReduceScatter;
  s.algorithm = CollectiveAlgorithm::Ring;
  s.detail = CollectiveDetail::Condensed;
  s.bytes = 100e6;
  s.group = {0, 4, 1, 5, 2, 6, 3, 7};
  const ExecutionGraph folded = collective_graph(s, c, 2);
  const FoldedNetwork network = fold_network(folded.graph, folded.placement, *folded.fold, c);
  EXPECT_TRUE(network.exact()) << network.first_split;
  // Each flow's path: its NIC up (weight 1), its leaf's uplink (weight 4), the spine's downlink
  // into the other leaf (weight 4), the NIC down (weight 1).
  double largest = 0;
  for (const FoldedNetwork::SubOrbit& o : network.sub_orbits) {
    EXPECT_EQ(o.copies, 4);
    for (const FoldedNetwork::Path& p : o.paths)
      for (const FoldedNetwork::WeightedLink& w : p.links) largest = std::max(largest, w.weight);
  }
  EXPECT_EQ(largest, 4);
  const double expected = 7 * 100e6 / 8 / 2.5e9;
  const ExecutionGraph full = collective_graph(s, c);
  for (const ExecutionGraph* g : {&folded, &full}) {
    const EngineRuns runs = run_engines(*g, c, EngineSet::of({kFlow, kSimGrid}), RunOrder::Fcfs);
    for (const EngineRun& r : runs.runs) EXPECT_NEAR(r.latency, expected, 1e-9 * expected) << r.engine;
  }
}

// A route whose copies differ (some stay under their leaf, others cross the spine) is folded
// approximately, and the network says which.
TEST(Folding, CopiesThatSeeTheNetworkDifferentlyAreSaidSo) {
  const Cluster c = cluster_of("{type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 1, gpus_per_server: 1, "
                               "nic_bandwidth: 25GB/s, uplink_bandwidth: 10GB/s}");
  CollectiveSpec s = ring_all_reduce(8, 1e6, CollectiveDetail::Condensed);
  const ExecutionGraph folded = collective_graph(s, c, 1);
  const FoldedNetwork network = fold_network(folded.graph, folded.placement, *folded.fold, c);
  EXPECT_FALSE(network.exact());
  EXPECT_NE(network.first_split.find("see the network in 2 ways"), std::string::npos) << network.first_split;
}

// A tree is rooted at one rank: it cannot be folded, and append_collective says why.
TEST(Folding, TreesAreNotFolded) {
  const Cluster c = cluster_of("{type: fat-tree, k: 4, servers: 8, gpus_per_server: 8}");
  CollectiveSpec s = ring_all_reduce(64, 1e6, CollectiveDetail::Messages);
  s.algorithm = CollectiveAlgorithm::Tree;
  EXPECT_NE(collective_fold_problem(s, c, 8).find("tree"), std::string::npos);
  EXPECT_THROW(collective_graph(s, c, 8), std::invalid_argument);
}

namespace {

LayerWorkload zoo_model(const std::string& name, int tp, bool sequence_parallel) {
  models::LayerZooOptions o;
  o.gpu = "h100";
  o.recompute = models::Recompute::Selective;
  o.sequence_parallel = sequence_parallel;
  return models::build_layer_model(name, o, {tp});
}

// The plan folded to `replicas` and whole, every engine's latency, side by side.
void expect_fold_matches_full(const LayerWorkload& w, const ParallelPlan& plan, const Cluster& c, int replicas,
                              CollectiveDetail detail, EngineSet engines, double relative) {
  ASSERT_EQ(plan_problem(w, plan, c), "");
  const CompiledPlan full = compile_plan(w, plan, c, detail);
  const CompiledPlan folded = compile_plan(w, plan, c, detail, replicas);
  ASSERT_TRUE(folded.graph.fold);
  EXPECT_EQ(folded.graph.fold->copies, plan.dp / replicas);
  EXPECT_LE(folded.graph.graph.num_operators() * (plan.dp / replicas), full.graph.graph.num_operators() * 11 / 10);
  const EngineRuns a = run_engines(folded.graph, c, engines, RunOrder::Fcfs);
  const EngineRuns b = run_engines(full.graph, c, engines, RunOrder::Fcfs);
  ASSERT_TRUE(a.fold);
  EXPECT_TRUE(a.fold->exact()) << a.fold->first_split;
  ASSERT_EQ(a.runs.size(), b.runs.size());
  for (std::size_t i = 0; i < a.runs.size(); ++i)
    EXPECT_NEAR(a.runs[i].latency, b.runs[i].latency, relative * b.runs[i].latency) << a.runs[i].engine;
}

ParallelPlan megatron_plan(int tp, int pp, int dp, int micro_batches) {
  ParallelPlan plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.dp = dp;
  plan.micro_batches = micro_batches;
  plan.blocking_sends = true;
  return plan;
}

}  // namespace

// 64 H100s in one scalable unit (every server on the same eight rail leaves): a tp 8, pp 2, dp 4
// plan folds to one replica of 16 GPUs, exactly, on every engine, with ZeRO 1 and without.
TEST(FoldingPlans, SixtyFourGpusInOneUnitFoldToOneReplicaOnEveryEngine) {
  const Cluster c = cluster_of("{preset: dgx-h100, servers: 8}");
  const LayerWorkload w = zoo_model("llama2-7b", 8, true);
  ParallelPlan plan = megatron_plan(8, 2, 4, 4);
  plan.sequence_parallel = true;
  const EngineSet every = EngineSet::of({kEvaluator, kFlow, kSimGrid});
  expect_fold_matches_full(w, plan, c, 1, CollectiveDetail::Messages, every, 1e-9);
  plan.zero = 1;
  plan.overlap_param_gather = true;
  expect_fold_matches_full(w, plan, c, 1, CollectiveDetail::Condensed, every, 1e-9);
}

// Context and expert groups fold as whole blocks: cp 2 keeps each context pair together.
TEST(FoldingPlans, ContextGroupsFoldAsWholeBlocks) {
  const Cluster c = cluster_of("{preset: dgx-h100, servers: 8}");
  models::LayerZooOptions o;
  o.gpu = "h100";
  o.context_parallel = 2;
  const LayerWorkload w = models::build_layer_model("llama2-7b", o, {4});
  ParallelPlan plan = megatron_plan(4, 2, 8, 4);
  plan.cp = 2;
  plan.gpus = gpus_in_order(4, 2, 8, GpuOrder::TpPpDp, 2);
  EXPECT_EQ(fold_blocks(plan, c).front(), 2);
  expect_fold_matches_full(w, plan, c, 2, CollectiveDetail::Condensed, EngineSet::of({kEvaluator, kFlow}), 1e-9);
}

// 1,024 H100s in four scalable units: a replica is two servers, so the data-parallel rings cross
// between units every 16 replicas; the fold is a block of 16 (one unit), exact, beside the full
// graph on the evaluator and the flow engine. SimGrid checks the same at 256 GPUs (one unit,
// folded to one replica): it sends every copy's flows on their own routes where the flow engine
// solves the classes.
TEST(FoldingPlans, AThousandGpusFoldExactlyIntoUnits) {
  const Cluster c = cluster_of("{preset: dgx-h100, servers: 128}");
  const LayerWorkload w = zoo_model("llama2-7b", 8, true);
  ParallelPlan plan = megatron_plan(8, 2, 64, 2);
  plan.sequence_parallel = true;
  plan.zero = 1;
  plan.overlap_param_gather = true;
  const FoldChoice choice = choose_fold(w, plan, c, CollectiveDetail::Condensed, FoldMode::Auto);
  EXPECT_TRUE(choice.exact) << choice.reason;
  EXPECT_EQ(choice.replicas, 16) << choice.reason;
  expect_fold_matches_full(w, plan, c, choice.replicas, CollectiveDetail::Condensed, EngineSet::of({kEvaluator, kFlow}), 1e-9);
  const Cluster unit = cluster_of("{preset: dgx-h100, servers: 32}");
  ParallelPlan small = megatron_plan(8, 2, 16, 2);
  small.sequence_parallel = true;
  EXPECT_EQ(choose_fold(w, small, unit, CollectiveDetail::Condensed, FoldMode::Auto).replicas, 1);
  expect_fold_matches_full(w, small, unit, 1, CollectiveDetail::Condensed, EngineSet::of({kFlow, kSimGrid}), 1e-9);
}

// Where the fabric treats replicas differently (a 4:1 oversubscribed spine-leaf whose leaves hold
// three servers, replicas of two, five of them: some replicas straddle two leaves, and no block of
// them repeats the leaves), Auto builds the small plan
// whole; folded anyway (--fold), the iteration comes out within 0.5% of the full graph's, and the
// choice says it approximates.
TEST(FoldingPlans, AnApproximateFoldIsSaidAndStaysClose) {
  const Cluster c = cluster_of("{type: spine-leaf, servers: 10, servers_per_leaf: 3, spines: 1, gpus_per_server: 8, "
                               "nic_bandwidth: 50GB/s, oversubscription: 4, nvlink_bandwidth: 450GB/s, gpu_memory: 80GiB}");
  const LayerWorkload w = zoo_model("llama2-7b", 8, true);
  ParallelPlan plan = megatron_plan(8, 2, 5, 4);
  plan.sequence_parallel = true;
  const FoldChoice automatic = choose_fold(w, plan, c, CollectiveDetail::Condensed, FoldMode::Auto);
  EXPECT_EQ(automatic.replicas, plan.dp) << automatic.reason;
  EXPECT_NE(automatic.reason.find("no block of replicas folds exactly"), std::string::npos) << automatic.reason;
  const FoldChoice forced = choose_fold(w, plan, c, CollectiveDetail::Condensed, FoldMode::Folded);
  EXPECT_FALSE(forced.exact);
  EXPECT_NE(forced.reason.find("approximate"), std::string::npos) << forced.reason;
  const CompiledPlan full = compile_plan(w, plan, c, CollectiveDetail::Condensed);
  const CompiledPlan folded = compile_plan(w, plan, c, CollectiveDetail::Condensed, forced.replicas);
  const EngineSet flow = EngineSet::of({kFlow});
  const double a = *run_engines(folded.graph, c, flow, RunOrder::Fcfs).latency(kFlow);
  const double b = *run_engines(full.graph, c, flow, RunOrder::Fcfs).latency(kFlow);
  // Not exact by construction (the copies' rates are shared, not each its own), though the
  // iteration may not show it: 0.04% apart with 16-bit gradient reductions, the same bits with
  // fp32 ones (their rings then set the pace alike in both).
  EXPECT_NEAR(a, b, 0.005 * b);
}

// Hierarchical's rings inside each server repeat from block to block, its rings across servers
// pass through every block: it folds to one server's ranks, with the whole ring's times.
TEST(Folding, HierarchicalFoldsToOneServer) {
  const Cluster c = cluster_of("{type: non-blocking, servers: 4, gpus_per_server: 4, nic_bandwidth: 25GB/s}");
  CollectiveSpec s = ring_all_reduce(16, 16e6, CollectiveDetail::Messages);
  s.algorithm = CollectiveAlgorithm::Hierarchical;
  EXPECT_EQ(collective_fold_problem(s, c, 4), "");
  EXPECT_EQ(collective_fold_block(s, c), 4);
  expect_close(latencies(collective_graph(s, c, 4), c), latencies(collective_graph(s, c), c), 1e-9);
}
