// Data parallelism over operator placements (sim/plans/data_parallel.h): iterations derived by hand on
// every engine, the buckets, the groups, and what is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "scenarios/runner/runner.h"
#include "scenarios/runner/sweep.h"
#include "sim/plans/data_parallel.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"
#include "sim/io/placement_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

constexpr double kB = 20e9;         // bytes/s per NIC, each direction
constexpr double kNicAlpha = 1e-6;  // per NIC link: a transfer crosses two
constexpr double kAlpha = 2 * kNicAlpha;

Cluster one_gpu_servers(int n) { return testutil::one_gpu_servers(n, kB, kNicAlpha); }

// Ring all-reduce of S bytes over 2 GPUs: 2 steps of alpha + S / (2B).
double ring_of_two(double bytes) { return 2 * (kAlpha + bytes / (2 * kB)); }

testutil::EngineTimes run(const DataParallelGraph& g, const Cluster& c) { return testutil::run_all_engines(g.graph, c); }

#define EXPECT_ALL_ENGINES(times, expected)                 \
  do {                                                      \
    const double want = (expected);                         \
    EXPECT_NEAR((times).evaluator, want, 1e-9 * want);      \
    EXPECT_NEAR((times).flow, want, 1e-9 * want);           \
    EXPECT_NEAR((times).simgrid, want, 1e-9 * want);        \
  } while (0)

// F (1 ms) -> B (2 ms) -> U (0.5 ms); B's output into U is a parameter gradient of `bytes`.
Graph forward_backward_update(double bytes) {
  Graph g;
  g.add_operator({"F", "forward", 1e-3, 0.0});
  g.add_operator({"B", "backward", 2e-3, 0.0});
  g.add_operator({"U", "update", 0.5e-3, 0.0});
  g.add_tensor(0, 1, 0);
  g.add_tensor(1, 2, bytes, /*gradient=*/true);
  g.finalize("fbu");
  return g;
}

// F (1 ms) -> B1 (2 ms) -> B2 (1 ms), B1 -> U1, B2 -> U2 (0.5 ms each); B1 and B2 each produce a
// gradient of `bytes`; B1 also hands its (activation) output to B2, which must not wait.
Graph two_gradients(double bytes) {
  Graph g;
  g.add_operator({"F", "forward", 1e-3, 0.0});
  g.add_operator({"B1", "backward", 2e-3, 0.0});
  g.add_operator({"B2", "backward", 1e-3, 0.0});
  g.add_operator({"U1", "update", 0.5e-3, 0.0});
  g.add_operator({"U2", "update", 0.5e-3, 0.0});
  g.add_tensor(0, 1, 0);
  g.add_tensor(1, 2, 0);
  g.add_tensor(1, 3, bytes, true);
  g.add_tensor(2, 4, bytes, true);
  g.finalize("two gradients");
  return g;
}

DataParallelConfig replicas(int n, double bucket_bytes = 0) {
  DataParallelConfig c;
  c.replicas = n;
  c.bucket_bytes = bucket_bytes;
  return c;
}

}  // namespace

TEST(DataParallel, OneGradientIsReducedBetweenBackwardAndUpdate) {
  // Two replicas of F -> B -> U, one GPU each: 3 ms, the ring all-reduce of 64 MB
  // (2 (2 us + 1.6 ms) = 3.204 ms), then U: 6.704 ms on every engine (each GPU has its own NIC).
  const Cluster c = one_gpu_servers(2);
  const Graph g = forward_backward_update(64e6);
  const std::vector<DeviceId> placement(3, 0);
  const DataParallelGraph dp = replicate_data_parallel(g, placement, c, replicas(2));
  EXPECT_EQ(dp.gpus_per_replica, 1);
  EXPECT_EQ(dp.gradients, 1);
  EXPECT_EQ(dp.all_reduces, 1);
  EXPECT_DOUBLE_EQ(dp.gradient_bytes, 64e6);
  ASSERT_EQ(dp.graph.collectives.size(), 1u);
  EXPECT_EQ(dp.graph.collectives[0].group, (std::vector<DeviceId>{0, 1}));
  EXPECT_DOUBLE_EQ(dp.graph.collectives[0].bytes, 64e6);
  EXPECT_ALL_ENGINES(run(dp, c), 3e-3 + ring_of_two(64e6) + 0.5e-3);
  EXPECT_NEAR(ring_of_two(64e6), 3.204e-3, 1e-12);

  // One replica is the graph itself: no all-reduce, the same latency as the graph alone.
  const Cluster one = one_gpu_servers(1);
  const DataParallelGraph single = replicate_data_parallel(g, placement, one, replicas(1));
  EXPECT_EQ(single.all_reduces, 0);
  EXPECT_TRUE(single.graph.collectives.empty());
  EXPECT_ALL_ENGINES(run(single, one), 3.5e-3);
}

TEST(DataParallel, BucketsQueueOnTheCommunicatorAndGatherGradients) {
  // Two replicas; B1 ends at 3 ms, B2 (which does not wait for B1's reduction) at 4 ms.
  const Cluster c = one_gpu_servers(2);
  const Graph g = two_gradients(32e6);
  const std::vector<DeviceId> placement(5, 0);
  const double one = ring_of_two(32e6);  // 1.604 ms
  // One all-reduce per gradient: B1's 3 -> 4.604 ms; B2's queued behind it, 4.604 -> 6.208 ms;
  // U1 4.604 -> 5.104, U2 6.208 -> 6.708 ms.
  for (double bucket : {0.0, 32e6}) {  // a bucket closes once it holds bucket_bytes
    SCOPED_TRACE(bucket);
    const DataParallelGraph dp = replicate_data_parallel(g, placement, c, replicas(2, bucket));
    EXPECT_EQ(dp.all_reduces, 2);
    EXPECT_ALL_ENGINES(run(dp, c), 3e-3 + 2 * one + 0.5e-3);
  }
  // One bucket of both (64 MB): it waits for B2 (4 ms), takes 3.204 ms, then U1 and U2: 8.204 ms.
  const DataParallelGraph bucketed = replicate_data_parallel(g, placement, c, replicas(2, 64e6));
  EXPECT_EQ(bucketed.all_reduces, 1);
  ASSERT_EQ(bucketed.graph.collectives.size(), 1u);
  EXPECT_DOUBLE_EQ(bucketed.graph.collectives[0].bytes, 64e6);
  EXPECT_ALL_ENGINES(run(bucketed, c), 4e-3 + ring_of_two(64e6) + 1e-3);
}

TEST(DataParallel, EachGpuReducesWithItsCopiesAndSendsAfterwards) {
  // A replica is 2 GPUs: A on GPU 0 sends 4 MB to B on GPU 1 (2 us + 0.2 ms), B's gradient of
  // 8 MB goes to U on GPU 0. Replica 1 is GPUs 2 and 3, so B's all-reduce is over {1, 3}:
  // A 0 -> 1 ms, B 1.202 -> 2.202, all-reduce 2 (2 us + 0.2 ms) -> 2.606, the gradient to GPU 0
  // (2 us + 0.4 ms) -> 3.008, U -> 3.508 ms. No two flows share a NIC direction.
  const Cluster c = one_gpu_servers(4);
  Graph g;
  g.add_operator({"A", "forward", 1e-3, 0.0});
  g.add_operator({"B", "backward", 1e-3, 0.0});
  g.add_operator({"U", "update", 0.5e-3, 0.0});
  g.add_tensor(0, 1, 4e6);
  g.add_tensor(1, 2, 8e6, true);
  g.finalize("two gpus");
  const DataParallelGraph dp = replicate_data_parallel(g, std::vector<DeviceId>{0, 1, 0}, c, replicas(2));
  EXPECT_EQ(dp.gpus_per_replica, 2);
  ASSERT_EQ(dp.graph.collectives.size(), 1u);
  EXPECT_EQ(dp.graph.collectives[0].group, (std::vector<DeviceId>{1, 3}));
  // The copies run on their replica's GPUs.
  EXPECT_EQ(dp.graph.placement[*dp.graph.graph.find("r1/A")], 2);
  EXPECT_EQ(dp.graph.placement[*dp.graph.graph.find("r1/B")], 3);
  EXPECT_ALL_ENGINES(run(dp, c), 1e-3 + (kAlpha + 0.2e-3) + 1e-3 + 2 * (kAlpha + 0.2e-3) + (kAlpha + 0.4e-3) + 0.5e-3);
}

TEST(DataParallel, AProducerDownstreamOfTheBucketsUpdateStartsANewBucket) {
  // P1's gradient feeds C, which feeds P2, whose gradient feeds U. One 64 MB bucket would wait
  // for P2, which waits for C, which waits for the bucket: P2 opens a bucket of its own.
  const Cluster c = one_gpu_servers(2);
  Graph g;
  g.add_operator({"P1", "backward", 1e-3, 0.0});
  g.add_operator({"C", "update", 1e-3, 0.0});
  g.add_operator({"P2", "backward", 1e-3, 0.0});
  g.add_operator({"U", "update", 1e-3, 0.0});
  g.add_tensor(0, 1, 8e6, true);
  g.add_tensor(1, 2, 0);
  g.add_tensor(2, 3, 8e6, true);
  g.finalize("chained updates");
  const DataParallelGraph dp = replicate_data_parallel(g, std::vector<DeviceId>(4, 0), c, replicas(2, 64e6));
  EXPECT_EQ(dp.all_reduces, 2);
  // P1 1 ms, its all-reduce 2 (2 us + 0.2 ms), C, P2, the second all-reduce, U.
  EXPECT_ALL_ENGINES(run(dp, c), 4e-3 + 2 * ring_of_two(8e6));
}

TEST(DataParallel, ReplicasThatAreNotWholeServersAreNamed) {
  // 3 servers of 2 GPUs, 2 replicas of 3 GPUs: GPUs 0 and 1 share a server, their copies 3 and 4
  // do not.
  NonBlockingConfig cfg;
  cfg.servers = 3;
  cfg.gpus_per_server = 2;
  const Cluster c = make_non_blocking(cfg);
  EXPECT_NE(data_parallel_layout_note(c, 2).find("replica 1 does not have replica 0's layout: GPUs 0 and 1"),
            std::string::npos);
  EXPECT_EQ(data_parallel_layout_note(c, 3), "");  // a server each
  EXPECT_EQ(data_parallel_layout_note(c, 6), "");  // a GPU each
}

TEST(DataParallel, ZooGradientsAreTheParameters) {
  // TensorFlow style, AlexNet: the reduced gradients are the fp32 parameters, exactly.
  models::ModelConfig config;
  config.model = "alexnet";
  config.batch = 8;
  const models::ModelConfig resolved = models::resolve_model_config(config);
  const models::ModelBuilder b = models::record_model(resolved);
  const Graph g = b.to_graph(resolved.gpu, "alexnet");
  const DataParallelGraph dp =
      replicate_data_parallel(g, std::vector<DeviceId>(g.num_operators(), 0), one_gpu_servers(1), replicas(1));
  EXPECT_DOUBLE_EQ(dp.gradient_bytes, 4.0 * static_cast<double>(b.trainable_parameters()));
  EXPECT_EQ(dp.gradients, static_cast<int>(std::count_if(b.variables().begin(), b.variables().end(),
                                                         [](const models::BuiltVariable& v) { return v.trainable; })));
}

TEST(DataParallel, RefusesWhatCannotBeReplicated) {
  const Graph g = forward_backward_update(1e6);
  EXPECT_NE(data_parallel_problem(g, one_gpu_servers(4), replicas(3)).find("3 replicas do not divide the cluster's 4 GPUs"),
            std::string::npos);
  DataParallelConfig hd = replicas(3);
  hd.algorithm = CollectiveAlgorithm::HalvingDoubling;
  EXPECT_NE(data_parallel_problem(g, one_gpu_servers(3), hd).find("GPU 0 and its copies"), std::string::npos);
  Graph plain;
  plain.add_operator({"a", "x", 1e-3, 0.0});
  plain.add_operator({"b", "x", 1e-3, 0.0});
  plain.add_tensor(0, 1, 8);
  plain.finalize("plain");
  EXPECT_NE(data_parallel_problem(plain, one_gpu_servers(2), replicas(2)).find("marks no parameter gradient"),
            std::string::npos);
  EXPECT_THROW(replicate_data_parallel(plain, std::vector<DeviceId>{0, 0}, one_gpu_servers(2), replicas(2)), InputError);
  // A placement outside replica 0.
  EXPECT_THROW(replicate_data_parallel(g, std::vector<DeviceId>{0, 1, 0}, one_gpu_servers(2), replicas(2)),
               std::invalid_argument);
}

TEST(DataParallel, ScenarioPlacesOneReplicaAndReportsTheReduction) {
  // The synthetic training graph on 4 servers of one GPU, 2 replicas: strategies see 2 GPUs.
  const std::string yaml = R"(
name: dp
graph: {builtin: synthetic, layers: 2, branches: 2, ops_per_branch: 1}
cluster: {type: non-blocking, servers: 4, gpus_per_server: 1, nic_bandwidth: 20GB/s}
strategies:
  - {name: round-robin, label: rr-dp, data_parallel: 2}
  - {name: round-robin, label: rr-dp-tree, data_parallel: {replicas: 2, algorithm: tree, bucket_bytes: 0}}
  - round-robin
simulation: {engine: all, trace: false}
)";
  const SweepPlan plan = plan_sweep(YAML::Load(yaml), "inline.yaml");
  const Scenario& s = plan.variants.at(0);
  ASSERT_TRUE(s.strategies[0].data_parallel);
  EXPECT_EQ(s.strategies[0].data_parallel->replicas, 2);
  EXPECT_EQ(s.strategies[0].data_parallel->bucket_bytes, 25.0 * 1024 * 1024);
  EXPECT_EQ(s.strategies[1].data_parallel->algorithm, CollectiveAlgorithm::Tree);
  EXPECT_EQ(s.strategies[1].data_parallel->bucket_bytes, 0);
  const auto dir = testutil::fresh_temp_dir("data-parallel");
  const std::vector<PointRecord> r = testutil::run_plan(plan, dir);
  ASSERT_EQ(r.size(), 3u);
  for (const auto& o : r) ASSERT_TRUE(o.measurement) << o.label << ": " << o.reason;
  std::vector<std::string> warnings;
  const Graph g = load_graph_source(s.graph, s.file, warnings);
  const std::vector<DeviceId> placed = load_placement(g, (dir / r[0].measurement->placement_file).string());
  for (DeviceId d : placed) EXPECT_LT(d, 2) << "the strategy places one replica, on GPUs 0 and 1";
  const auto& report = r[0].measurement->strategy_report.at("data_parallel");
  EXPECT_EQ(report.at("replicas"), 2);
  EXPECT_EQ(report.at("gpus_per_replica"), 2);
  EXPECT_GT(report.at("gradients").get<int>(), 0);
  EXPECT_GT(report.at("all_reduces").get<int>(), 0);
  EXPECT_LE(report.at("all_reduces").get<int>(), report.at("gradients").get<int>());
  // Unbucketed, one all-reduce per gradient.
  EXPECT_EQ(r[1].measurement->strategy_report.at("data_parallel").at("all_reduces"),
            r[1].measurement->strategy_report.at("data_parallel").at("gradients"));
  // Replication adds the reduction to the one replica's time.
  const double one_replica = report.at("one_replica_evaluator_latency").get<double>();
  EXPECT_DOUBLE_EQ(one_replica, Evaluator(g, s.cluster.restricted_to(first_replica_gpus(s.cluster, 2)))
                                    .schedule(placed)
                                    .latency);
  EXPECT_GT(*r[0].measurement->latency(kEvaluator), one_replica);
  std::filesystem::remove_all(dir);
}

TEST(DataParallel, ScenarioErrorsNameTheField) {
  auto error = [](const std::string& strategy) {
    return testutil::input_error_message([&] {
      parse_scenario(YAML::Load("graph: {builtin: synthetic}\ncluster: {type: non-blocking, servers: 4, gpus_per_server: 1}\n"
                                "strategies:\n  - " + strategy + "\n"),
                     "bad.yaml");
    });
  };
  EXPECT_NE(error("{name: round-robin, data_parallel: 3}").find("strategies[0].data_parallel"), std::string::npos);
  EXPECT_NE(error("{name: round-robin, data_parallel: 3}").find("3 replicas do not divide the cluster's 4 GPUs"),
            std::string::npos);
  EXPECT_NE(error("{name: round-robin, data_parallel: {algorithm: ring}}").find("strategies[0].data_parallel.replicas"),
            std::string::npos);
  EXPECT_NE(error("{name: round-robin, data_parallel: {replicas: 2, bucket_bytes: -1}}").find("bucket_bytes"),
            std::string::npos);
  EXPECT_NE(error("{name: round-robin, data_parallel: [2]}").find("expected the number of replicas"), std::string::npos);
}
