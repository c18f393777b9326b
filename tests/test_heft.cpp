#include <gtest/gtest.h>

#include <string>

#include "placement/strategies/heft/heft.h"
#include "placement/strategies/single_device/single_device.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using testutil::nvlink_servers;

}  // namespace

TEST(Heft, Fig31ForkGives15us) {
  // A 5 us -> B 10 us, A -> C 5 us; 100 kB at 20 GB/s = 5 us per transfer, 2 GPUs.
  // Mean communication is 5 us, so ranks are B 10, C 5, A 5 + max(5 + 10, 5 + 5) = 20: order A, B, C.
  // A: EFT 5 on both GPUs -> gpu0. B: gpu0 5 + 10 = 15, gpu1 10 + 10 = 20 -> gpu0.
  // C: gpu0 after B, 20; gpu1 input at 10, 15 -> gpu1. Makespan 15 us, which the Evaluator confirms.
  const Graph g = testutil::fig31_graph(1e5);
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  const HeftSchedule s = heft_schedule(g, c, {});
  EXPECT_NEAR(s.rank[0], 20e-6, 1e-15);
  EXPECT_NEAR(s.rank[1], 10e-6, 1e-15);
  EXPECT_NEAR(s.rank[2], 5e-6, 1e-15);
  EXPECT_EQ(s.order, (std::vector<OpId>{0, 1, 2}));
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{0, 0, 1}));
  EXPECT_NEAR(s.makespan, 15e-6, 1e-15);
  Heft heft(HeftConfig{});
  const PlacementResult r = heft.place(g, c);
  Evaluator ev(g, c);
  EXPECT_NEAR(ev.latency(r.placement), 15e-6, 1e-15);
  EXPECT_NEAR(r.details["heft_makespan_s"].get<double>(), 15e-6, 1e-15);
}

namespace {

// 2 GPUs joined at 1 B/s, no latency, so 1 byte = 1 s.
//   a (2 s) -> b (8 s) with 100 B: b stays with a.
//   a -> y (1 s) with 1 B; y -> w (3 s) control edge (0 B); z (2 s) alone.
// Mean communication: c(a,b) = 100, c(a,y) = 1, c(y,w) = 0.
// Ranks: b 8, w 3, y 1 + 0 + 3 = 4, z 2, a 2 + max(100 + 8, 1 + 4) = 110. Order a, b, y, w, z.
//   a: gpu0 [0,2] (tie with gpu1, lowest index). b: gpu0 [2,10] (gpu1 would wait for 100 B).
//   y: gpu0 busy until 10 -> 11; gpu1 input at 2 + 1 = 3 -> [3,4] on gpu1.
//   w: gpu1 [4,7] (gpu0 13). z: gpu0 after b -> 12; gpu1 has the idle gap [0,3] -> [0,2].
// Without insertion z goes after w on gpu1: [7,9].
Graph gap_graph() {
  Graph g;
  g.add_operator({"a", "op", 2, 0});
  g.add_operator({"b", "op", 8, 0});
  g.add_operator({"y", "op", 1, 0});
  g.add_operator({"w", "op", 3, 0});
  g.add_operator({"z", "op", 2, 0});
  g.add_tensor(0, 1, 100);
  g.add_tensor(0, 2, 1);
  g.add_tensor(2, 3, 0);
  g.finalize("gap");
  return g;
}

}  // namespace

TEST(Heft, InsertionFillsAnIdleGap) {
  const Graph g = gap_graph();
  const Cluster c = testutil::dedicated_mesh(2, 1.0);
  const HeftSchedule s = heft_schedule(g, c, {});
  EXPECT_EQ(s.order, (std::vector<OpId>{0, 1, 2, 3, 4}));
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{0, 0, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(s.start[2], 3);
  EXPECT_DOUBLE_EQ(s.start[3], 4);
  EXPECT_DOUBLE_EQ(s.start[4], 0);  // z in the gap before y
  EXPECT_DOUBLE_EQ(s.makespan, 10);

  HeftConfig no_insertion;
  no_insertion.insertion = false;
  const HeftSchedule t = heft_schedule(g, c, no_insertion);
  EXPECT_EQ(t.placement[4], 1);
  EXPECT_DOUBLE_EQ(t.start[4], 7);
}

TEST(Heft, MemoryAwareSkipsAFullGpu) {
  // a (1 s) -> b (1 s), 1 B at 1 B/s; 10 B of memory each, 15 B per GPU.
  // Time alone would keep b with a (finish 2 vs 3); memory sends it to gpu1: start 2, finish 3.
  Graph g;
  g.add_operator({"a", "op", 1, 10});
  g.add_operator({"b", "op", 1, 10});
  g.add_tensor(0, 1, 1);
  g.finalize("mem");
  const Cluster c = testutil::dedicated_mesh(2, 1.0, 0.0, 15);
  const HeftSchedule s = heft_schedule(g, c, {});
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{0, 1}));
  EXPECT_DOUBLE_EQ(s.makespan, 3);
  EXPECT_FALSE(s.memory_overflow);

  HeftConfig blind;
  blind.memory_aware = false;
  const HeftSchedule t = heft_schedule(g, c, blind);
  EXPECT_EQ(t.placement, (std::vector<DeviceId>{0, 0}));
  EXPECT_TRUE(t.memory_overflow);

  // 5 B per GPU: nothing fits anywhere, a placement is still returned (time decides).
  const Cluster tiny = testutil::dedicated_mesh(2, 1.0, 0.0, 5);
  const HeftSchedule u = heft_schedule(g, tiny, {});
  EXPECT_EQ(u.placement, (std::vector<DeviceId>{0, 0}));
  EXPECT_TRUE(u.memory_overflow);
}

TEST(Heft, ColocationClassFollowsItsFirstMember) {
  // Fig. 3.1 with B and C in one class: B (rank 10) is scheduled first and picks gpu0 (finish 15);
  // C must follow: gpu0 [15,20]. Without the class C went to gpu1 (Fig31ForkGives15us).
  Graph g;
  g.add_operator({"A", "op", 5e-6, 0});
  g.add_operator({"B", "op", 10e-6, 0, 0});
  g.add_operator({"C", "op", 5e-6, 0, 0});
  g.add_tensor(0, 1, 1e5);
  g.add_tensor(0, 2, 1e5);
  g.finalize("fig31 coloc");
  const Cluster c = testutil::dedicated_mesh(2, 20e9);
  Heft heft(HeftConfig{});
  const PlacementResult r = heft.place(g, c);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{0, 0, 0}));
  EXPECT_NEAR(r.details["heft_makespan_s"].get<double>(), 20e-6, 1e-15);
}

TEST(Heft, OptionsAreValidated) {
  EXPECT_INPUT_ERROR(make_strategy("heft", YAML::Load("{insertion: sometimes}"), "s.yaml", "strategies[2]"),
                     "options.insertion");
  EXPECT_THROW(make_strategy("heft", YAML::Load("{lookahead: 2}"), "s.yaml", "strategies[2]"), InputError);
  EXPECT_NO_THROW(make_strategy("heft", YAML::Load("{insertion: false, memory_aware: false}"), "s.yaml", "s"));
}

TEST(Heft, VggOnFourGpus) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/vgg.json").graph;
  const Cluster c = nvlink_servers(4);
  Heft heft(HeftConfig{});
  const PlacementResult r = heft.place(g, c);
  Evaluator ev(g, c);
  // HEFT's schedule respects every dependency and transfer, so it is no shorter than the lower bound.
  EXPECT_GE(r.details["heft_makespan_s"].get<double>(), ev.lower_bounds().best() * (1 - 1e-12));
  // VGG has enough parallel work for HEFT to beat one GPU (about 99 ms against 122 ms).
  const double single = ev.latency(std::vector<DeviceId>(g.num_operators(), 0));
  EXPECT_LT(ev.latency(r.placement), 0.9 * single);
  EXPECT_FALSE(r.details["memory_overflow"].get<bool>());
}

TEST(Heft, MsrGraphWithColocationClassesIsValid) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/msr-fiddle/inceptionv3_training.json").graph;
  ASSERT_GT(g.num_colocation_classes(), 0);
  Heft heft(HeftConfig{});
  const PlacementResult r = heft.place(g, nvlink_servers(4));  // validates the classes
  EXPECT_GT(r.details["heft_makespan_s"].get<double>(), 0);
}

// HEFT must use Cluster::compute_time. GPU 1 is 3x faster than GPU 0.
// Four independent operators of 3 ms (as measured): ranks are all 3 x mean(1, 1/3) = 2 ms, so the
// order is x, y, z, w (topological position).
//   x: gpu0 finishes at 3, gpu1 at 1 -> gpu1 [0, 1].   y: gpu0 3, gpu1 [1, 2] -> gpu1.
//   z: gpu0 [0, 3], gpu1 [2, 3]: a tie, the lower index -> gpu0.   w: gpu0 6, gpu1 [2, 3] -> gpu1.
// Makespan 3 ms (ignoring the speed it was 6 ms: two operators on each GPU, 3 ms each).
TEST(Heft, FastGpuTakesWhatItFinishesFirst) {
  Graph g;
  for (const char* name : {"x", "y", "z", "w"}) g.add_operator({name, "op", 3e-3, 0});
  g.finalize("four independent");
  const Cluster c = testutil::dedicated_mesh_with_speeds({1.0, 3.0}, 1e9);
  const HeftSchedule s = heft_schedule(g, c, {});
  EXPECT_NEAR(s.rank[0], 2e-3, 1e-15);
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{1, 1, 0, 1}));
  EXPECT_NEAR(s.finish[1], 2e-3, 1e-15);
  EXPECT_NEAR(s.makespan, 3e-3, 1e-15);
}

// The reported case in small: a chain a -> b -> c of 3 ms operators (1 MB tensors, 1 GB/s, so a
// hop costs 1 ms) on two servers of one GPU, the second 3x faster. a finishes at 1 ms on gpu1
// against 3 ms on gpu0; b and c then finish first where their input is. All on the fast GPU:
// 3 x 1 ms = 3 ms (was 9 ms on gpu0), and the evaluator agrees.
TEST(Heft, ChainGoesToTheFastServer) {
  Graph g;
  for (const char* name : {"a", "b", "c"}) g.add_operator({name, "op", 3e-3, 0});
  g.add_tensor(0, 1, 1e6);
  g.add_tensor(1, 2, 1e6);
  g.finalize("chain");
  const Cluster c = testutil::dedicated_mesh_with_speeds({1.0, 3.0}, 1e9);
  Heft heft(HeftConfig{});
  const PlacementResult r = heft.place(g, c);
  EXPECT_EQ(r.placement, (std::vector<DeviceId>{1, 1, 1}));
  EXPECT_NEAR(r.details["heft_makespan_s"].get<double>(), 3e-3, 1e-15);
  Evaluator ev(g, c);
  EXPECT_NEAR(ev.latency(r.placement), 3e-3, 1e-15);
}
