// Several jobs on one fabric (sim/engines/shared_runs.h): hand-derived slowdowns on every engine,
// the iterations a shorter job repeats, and the links where jobs meet.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "sim/collectives/collectives.h"
#include "sim/engines/shared_runs.h"
#include "test_util.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Two leaves of two 1-GPU servers under one spine, NICs 12.5 GB/s, 2:1 oversubscribed: each
// leaf's one uplink carries 12.5 GB/s, as much as one NIC.
Cluster two_leaves() {
  return cluster_from_yaml(YAML::Load("{type: spine-leaf, servers: 4, servers_per_leaf: 2, spines: 1, gpus_per_server: 1, "
                                      "nic_bandwidth: 12.5GB/s, oversubscription: 2}"),
                           "test.yaml", "cluster");
}

// A ring all-reduce of `bytes` among `gpus`, as one job's graph.
ExecutionGraph ring(const Cluster& c, std::vector<DeviceId> gpus, double bytes) {
  CollectiveSpec spec;
  spec.op = CollectiveOp::AllReduce;
  spec.algorithm = CollectiveAlgorithm::Ring;
  spec.group = std::move(gpus);
  spec.bytes = bytes;
  return collective_graph(spec, c);
}

const EngineSet kEveryEngine = EngineSet::of({kEvaluator, kFlow, kSimGrid});

TEST(SharedRuns, TwoRingsOverOneOversubscribedUplinkEachSlowByTheClosedFormFactor) {
  const Cluster c = two_leaves();
  // Job a rings GPUs 0 and 2, job b GPUs 1 and 3: both cross leaf 0's and leaf 1's uplinks.
  // Alone, a 2-rank ring sends S/2 each way per step, two steps: S / 12.5 GB/s. Together, k = 2
  // rings share an uplink of U = 12.5 GB/s whose NICs each give N = 12.5 GB/s: each runs at
  // U / k, slower by k N / U = 2.
  const ExecutionGraph a = ring(c, {0, 2}, kGiB), b = ring(c, {1, 3}, kGiB);
  const std::vector<JobGraph> jobs{{"a", &a.graph, a.placement}, {"b", &b.graph, b.placement}};
  const SharedRun run = run_jobs_together(jobs, c, kEveryEngine, RunOrder::Scheduler);
  const double alone = kGiB / 12.5e9;
  EXPECT_EQ(run.headline, "simgrid");
  for (const SharedJob& job : run.jobs) {
    EXPECT_EQ(job.iterations, 1);
    for (std::string_view engine : {kFlow, kSimGrid}) {
      const JobTimes* t = job.find(engine);
      ASSERT_NE(t, nullptr);
      EXPECT_NEAR(t->alone, alone, alone * 1e-3) << engine;
      EXPECT_NEAR(t->shared, 2 * alone, 2 * alone * 1e-3) << engine;
      EXPECT_NEAR(t->slowdown(), 2.0, 2e-3) << engine;
    }
    // The evaluator sees no contention: slowdown 1.
    EXPECT_DOUBLE_EQ(job.find(kEvaluator)->slowdown(), 1.0);
  }
  // They met on both uplinks and both spine downlinks, half each.
  ASSERT_EQ(run.links_met.size(), 4u);
  for (const SharedLink& l : run.links_met) {
    const std::string name = c.link(l.link).name;
    EXPECT_TRUE(name.find("spine") != std::string::npos) << name;
    ASSERT_EQ(l.share.size(), 2u);
    EXPECT_DOUBLE_EQ(l.share[0].second, 0.5);
    EXPECT_NEAR(l.bytes, 2 * kGiB, 1);  // each ring sends S/2 per step, two steps, each way
  }
}

TEST(SharedRuns, JobsOnDisjointLinksDoNotSlowEachOther) {
  const Cluster c = two_leaves();
  // Job a inside leaf 0 (GPUs 0, 1), job b inside leaf 1 (GPUs 2, 3): no link in common.
  const ExecutionGraph a = ring(c, {0, 1}, kGiB), b = ring(c, {2, 3}, kGiB);
  const std::vector<JobGraph> jobs{{"a", &a.graph, a.placement}, {"b", &b.graph, b.placement}};
  const SharedRun run = run_jobs_together(jobs, c, kEveryEngine, RunOrder::Scheduler);
  for (const SharedJob& job : run.jobs)
    for (const JobTimes& t : job.times) EXPECT_DOUBLE_EQ(t.slowdown(), 1.0) << t.engine;
  EXPECT_TRUE(run.links_met.empty());
}

TEST(SharedRuns, AShorterJobRepeatsItsIterationOverTheLongOnesWindow) {
  const Cluster c = two_leaves();
  // b moves a quarter of a's bytes: 4 iterations cover a's window. Together they move as many
  // bytes over the shared uplinks, each at half the rate: both finish at 2 S / 12.5 GB/s, so a's
  // one iteration and b's mean of four are both 2x slower.
  const ExecutionGraph a = ring(c, {0, 2}, kGiB), b = ring(c, {1, 3}, kGiB / 4);
  const std::vector<JobGraph> jobs{{"a", &a.graph, a.placement}, {"b", &b.graph, b.placement}};
  const SharedRun run = run_jobs_together(jobs, c, EngineSet::of({kFlow, kSimGrid}), RunOrder::Scheduler);
  EXPECT_EQ(run.jobs[0].iterations, 1);
  EXPECT_EQ(run.jobs[1].iterations, 4);
  const double alone = kGiB / 12.5e9;
  for (std::string_view engine : {kFlow, kSimGrid}) {
    EXPECT_NEAR(run.jobs[0].find(engine)->shared, 2 * alone, 2 * alone * 2e-3) << engine;
    EXPECT_NEAR(run.jobs[1].find(engine)->alone, alone / 4, alone / 4 * 1e-3) << engine;
    EXPECT_NEAR(run.jobs[1].find(engine)->slowdown(), 2.0, 4e-3) << engine;
  }
  // One iteration's bytes per link (b's quarter of a's).
  EXPECT_NEAR(run.links_met.front().share[1].second, 0.2, 1e-12);
}

TEST(SharedRuns, ChainedIterationsFollowEachOtherOnEveryGpu) {
  // A 2-GPU pipeline: f0 (1 s, GPU 0) -> f1 (2 s, GPU 1). Chained 3 times, GPU 0 starts its
  // second f0 once its first is done (1 s), not after f1: iterations overlap across GPUs as a
  // pipeline's do, and the makespan is 1 + 3 x 2 = 7 s with a zero-byte hand-over.
  Graph g;
  g.add_operator({"f0", "op", 1.0, 0.0});
  g.add_operator({"f1", "op", 2.0, 0.0});
  g.add_tensor(0, 1, 0);
  g.finalize("pipeline");
  const std::vector<DeviceId> placement{0, 1};
  std::vector<DeviceId> chained_placement;
  const Graph chained = chain_iterations(g, placement, 3, chained_placement);
  EXPECT_EQ(chained.num_operators(), 3 * 2 + 2 * 2u);  // + an iteration operator per GPU per boundary
  EXPECT_EQ(chained_placement.size(), chained.num_operators());
  const Cluster c = testutil::dedicated_mesh(2, 1e9);
  const EngineRuns runs = run_engines(PlacedGraph(chained, chained_placement), c, kEveryEngine, RunOrder::Scheduler);
  for (const EngineRun& r : runs.runs) EXPECT_NEAR(r.latency, 7.0, 1e-9) << r.engine;
}

TEST(SharedRuns, JobsMustNotShareAGpu) {
  const Cluster c = two_leaves();
  const ExecutionGraph a = ring(c, {0, 2}, kGiB), b = ring(c, {2, 3}, kGiB);
  const std::vector<JobGraph> jobs{{"a", &a.graph, a.placement}, {"b", &b.graph, b.placement}};
  try {
    run_jobs_together(jobs, c, kEveryEngine, RunOrder::Scheduler);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("jobs 'a' and 'b' both run on GPU 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace placesim
