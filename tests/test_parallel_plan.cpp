// Parallel plans (sim/plans/parallel_plan.h) against timelines and memory derived by hand, and the
// NEST workloads loaded from ../shared/workloads/nest when present.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "sim/core/execution_graph.h"
#include "sim/engines/flow_engine.h"
#include "placement/planners/nest/nest.h"
#include "sim/models/layer_zoo.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

constexpr double ms = 1e-3;
constexpr double kBw = 10e9;

// `layers` layers of forward f and backward b, `output` bytes between layers, `params` and
// `stash` bytes each.
LayerModel uniform_model(int layers, double f, double b, double output = 0, double params = 0, double stash = 0) {
  LayerModel m;
  m.name = "uniform";
  for (int l = 0; l < layers; ++l) m.layers.push_back({fmt::format("l{}", l), f, b, params, stash, output});
  return m;
}

using Times = testutil::EngineTimes;
Times run(const CompiledPlan& c, const Cluster& cluster) { return testutil::run_all_engines(c.graph, cluster); }

#define EXPECT_ALL_ENGINES(times, expected)                                   \
  do {                                                                        \
    const Times t_ = (times);                                                 \
    EXPECT_NEAR(t_.evaluator, (expected), 1e-9 * (expected));                 \
    EXPECT_NEAR(t_.flow, (expected), 1e-9 * (expected));                      \
    EXPECT_NEAR(t_.simgrid, (expected), 1e-6 * (expected));                   \
  } while (0)

}  // namespace

TEST(ParallelPlan, GPipeAndOneFOneBTakeTheSameTimeWithoutCommunication) {
  // 4 layers of 1 ms forward and 2 ms backward on 2 stages (f = 2 ms, b = 4 ms per stage), 4
  // micro-batches: (m + p - 1)(f + b) = 5 x 6 = 30 ms for both schedules. By hand for GPipe:
  // stage 0 runs F0-F3 at 0-8; stage 1 F0-F3 at 2-10, B0-B3 at 10-26; stage 0 B0 at 14-18 ...
  // B3 at 26-30. For 1F1B stage 0 runs F0 F1 B0 F2 B1 F3 B2 B3 and ends at 30 as well.
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  for (PipelineSchedule schedule : {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB}) {
    ParallelPlan plan;
    plan.pp = 2;
    plan.micro_batches = 4;
    plan.schedule = schedule;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    EXPECT_EQ(c.stage_starts, (std::vector<int>{0, 2}));
    EXPECT_ALL_ENGINES(run(c, cluster), 30 * ms);
  }
}

TEST(ParallelPlan, GPipeAndOneFOneBOnThreeAndFourStagesByHand) {
  // 4 layers of f = 1 ms, b = 2 ms, 4 micro-batches, nothing to transfer.
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms);
  // 4 stages of one layer: m <= pp, so 1F1B runs every forward first like GPipe: (4 + 4 - 1) x 3
  // = 21 ms. By hand for GPipe: stage 3 runs F0-F3 at 3-7 and B0-B3 at 7-15; stage 2 B at 9-17,
  // stage 1 at 11-19, stage 0 at 13-21.
  const Cluster four = testutil::dedicated_mesh(4, kBw);
  // 3 stages of layers {0, 1}, {2}, {3}: stage 0 takes f = 2, b = 4 ms, the others 1 and 2.
  // GPipe: stage 0 runs F0-F3 at 0-8, stage 1 at 2-3, 4-5, 6-7, 8-9, stage 2 at 3-4 ... 9-10;
  // backwards after the last forward: stage 2 at 10-18, stage 1 at 12-20, stage 0 at 14-18,
  // 18-22, 22-26, 26-30: 30 ms. 1F1B, warm-ups of 2, 1 and 0 forwards: stage 2 F0 3-4 B0 4-6 F1
  // 6-7 B1 7-9 F2 9-10 B2 10-12; stage 1 F0 2-3 F1 4-5 B0 6-8 F2 8-9 B1 9-11; stage 0 F0 0-2 F1
  // 2-4 F2 4-6 B0 8-12 F3 12-14 B1 14-18; then stage 1 F3 14-15 B2 15-17, stage 2 F3 15-16 B3
  // 16-18, stage 1 B3 18-20, stage 0 B2 18-22 B3 22-26: 26 ms, 1F1B's earlier backwards win 4.
  const Cluster three = testutil::dedicated_mesh(3, kBw);
  for (auto [pp, schedule, expected] :
       {std::tuple{4, PipelineSchedule::GPipe, 21 * ms}, std::tuple{4, PipelineSchedule::OneFOneB, 21 * ms},
        std::tuple{3, PipelineSchedule::GPipe, 30 * ms}, std::tuple{3, PipelineSchedule::OneFOneB, 26 * ms}}) {
    ParallelPlan plan;
    plan.pp = pp;
    plan.micro_batches = 4;
    plan.schedule = schedule;
    plan.stage_starts = pp == 4 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0, 2, 3};
    const Cluster& cluster = pp == 4 ? four : three;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    EXPECT_EQ(c.stage_starts, plan.stage_starts);
    EXPECT_ALL_ENGINES(run(c, cluster), expected);
  }
}

TEST(ParallelPlan, StagesOfDifferentTensorParallelWidthsByHand) {
  // 2 layers measured at widths 1 (f = 2 ms, b = 4 ms each) and 2 (f = 1, b = 2 ms); stage 0 runs
  // layer 0 at width 1 on gpu0, stage 1 layer 1 at width 2 on gpu1 and gpu2; 10 MB between the
  // layers over 10 GB/s pair links. gpu0 sends each rank of stage 1 the whole activation (1 ms);
  // each of them sends back half the gradient (0.5 ms). GPipe, 2 micro-batches: stage 0 F0 0-2,
  // F1 2-4; stage 1 F0 3-4, F1 5-6, B0 6-8, B1 8-10; stage 0 B0 8.5-12.5, B1 12.5-16.5. 1F1B:
  // stage 1 F0 3-4, B0 4-6, F1 6-7, B1 7-9; stage 0 B0 6.5-10.5, B1 10.5-14.5.
  LayerWorkload w;
  w.name = "two";
  LayerModel narrow = uniform_model(2, 2 * ms, 4 * ms, 10e6, 1e6), wide = uniform_model(2, 1 * ms, 2 * ms, 10e6, 0.5e6);
  narrow.tensor_parallel = 1;
  wide.tensor_parallel = 2;
  w.by_tensor_parallel = {{1, narrow}, {2, wide}};
  const Cluster cluster = testutil::dedicated_mesh(3, kBw);
  ParallelPlan plan;
  plan.tp = 1;
  plan.pp = 2;
  plan.stage_tp = {1, 2};
  plan.micro_batches = 2;
  for (auto [schedule, expected] : {std::pair{PipelineSchedule::GPipe, 16.5 * ms}, std::pair{PipelineSchedule::OneFOneB, 14.5 * ms}}) {
    plan.schedule = schedule;
    ASSERT_EQ(plan_problem(w, plan, cluster), "");
    const CompiledPlan c = compile_plan(w, plan, cluster);
    EXPECT_EQ(c.gpus, (std::vector<DeviceId>{0, 1, 2}));
    EXPECT_EQ(c.stage_starts, (std::vector<int>{0, 1}));
    int compute = 0;
    for (std::size_t i = 0; i < c.graph.graph.num_operators(); ++i)
      if (c.graph.graph.op(static_cast<OpId>(i)).compute_s > 0) ++compute;
    EXPECT_EQ(compute, 4 + 8);  // F and B of 2 micro-batches: 1 GPU at stage 0, 2 at stage 1
    EXPECT_ALL_ENGINES(run(c, cluster), expected);
    // Each stage holds its own width's parameters: 1 MB at width 1, 0.5 MB per GPU at width 2.
    EXPECT_DOUBLE_EQ(c.memory[0].parameters, 1e6);
    EXPECT_DOUBLE_EQ(c.memory[1].parameters, 0.5e6);
    EXPECT_DOUBLE_EQ(c.memory[2].parameters, 0.5e6);
  }
  // Replicated twice (6 GPUs), stage 0's gradients are reduced by one group of 2, stage 1's by two.
  plan.dp = 2;
  const Cluster six = testutil::dedicated_mesh(6, kBw);
  const CompiledPlan c = compile_plan(w, plan, six);
  EXPECT_EQ(c.graph.collectives.size(), 3u);  // (1 + 2) groups, one layer's bucket each
  EXPECT_EQ(plan_gpu_index(plan, 1, 1, 1), 5u);
  // Megatron-LM's order keeps each rank's tensor groups together, the replicas inside.
  EXPECT_EQ(gpus_in_order(std::vector<int>{1, 2}, 2, GpuOrder::TpDpPp), (std::vector<DeviceId>{0, 2, 3, 1, 4, 5}));
}

TEST(ParallelPlan, EqualStageWidthsAreTheUniformPlan) {
  // stage_tp {2, 2, 2} compiles to the plan of tp 2: the same GPUs, memory and time.
  LayerWorkload w;
  w.name = "four";
  LayerModel wide = uniform_model(6, 1 * ms, 2 * ms, 10e6, 1e6, 2e6);
  wide.tensor_parallel = 2;
  for (Layer& l : wide.layers) l.tp_allreduce_forward_bytes = l.tp_allreduce_backward_bytes = 4e6;
  w.by_tensor_parallel = {{2, wide}};
  const Cluster cluster = testutil::dedicated_mesh(12, kBw);
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 3;
  plan.dp = 2;
  plan.micro_batches = 4;
  const CompiledPlan uniform = compile_plan(wide, plan, cluster);
  plan.stage_tp = {2, 2, 2};
  const CompiledPlan widths = compile_plan(w, plan, cluster);
  EXPECT_EQ(widths.gpus, uniform.gpus);
  EXPECT_EQ(widths.graph.graph.num_operators(), uniform.graph.graph.num_operators());
  EXPECT_EQ(widths.graph.graph.num_tensors(), uniform.graph.graph.num_tensors());
  for (std::size_t i = 0; i < uniform.memory.size(); ++i) EXPECT_DOUBLE_EQ(widths.memory[i].total(), uniform.memory[i].total());
  const Times a = run(uniform, cluster), b = run(widths, cluster);
  EXPECT_DOUBLE_EQ(a.evaluator, b.evaluator);
  EXPECT_DOUBLE_EQ(a.flow, b.flow);
  EXPECT_DOUBLE_EQ(a.simgrid, b.simgrid);
}

TEST(ParallelPlan, StagesOfTheirOwnWidthsAreBalancedByTheirOwnTimes) {
  // 4 layers of 3 ms at width 1 and 1.5 ms at width 2. Stage 0 at width 1, stage 1 at width 2:
  // one layer on stage 0 (3 ms) and three on stage 1 (4.5 ms) beat two and two (6 ms and 3 ms);
  // priced at width 1 throughout, two and two would look best.
  LayerWorkload w;
  w.name = "four";
  LayerModel narrow = uniform_model(4, 1 * ms, 2 * ms), wide = uniform_model(4, 0.5 * ms, 1 * ms);
  wide.tensor_parallel = 2;
  w.by_tensor_parallel = {{1, narrow}, {2, wide}};
  const Cluster cluster = testutil::dedicated_mesh(3, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.stage_tp = {1, 2};
  EXPECT_EQ(compile_plan(w, plan, cluster).stage_starts, (std::vector<int>{0, 1}));
  EXPECT_EQ(balanced_stages(narrow, 2), (std::vector<int>{0, 2}));
  plan.pp = 0;
  EXPECT_EQ(plan_problem(w, plan, cluster), "pp must be >= 1, got 0");
}

TEST(ParallelPlan, StageWidthsThatCannotRunSayWhy) {
  LayerWorkload w;
  w.name = "two";
  LayerModel narrow = uniform_model(2, 2 * ms, 4 * ms), wide = uniform_model(2, 1 * ms, 2 * ms), short_one = uniform_model(1, 1 * ms, 1 * ms);
  wide.tensor_parallel = 2;
  short_one.tensor_parallel = 4;
  w.by_tensor_parallel = {{1, narrow}, {2, wide}, {4, short_one}};
  const Cluster cluster = testutil::dedicated_mesh(8, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.stage_tp = {1, 2};
  EXPECT_EQ(plan_problem(w, plan, cluster), "");
  plan.stage_tp = {1, 2, 2};
  EXPECT_EQ(plan_problem(w, plan, cluster), "stage_tp gives 3 widths for 2 stages");
  plan.stage_tp = {2, 1};
  EXPECT_EQ(plan_problem(w, plan, cluster), "tp (1) must be the first stage's width in stage_tp (2)");
  plan.stage_tp = {1, 3};
  EXPECT_EQ(plan_problem(w, plan, cluster), "two has no tensor-parallel width 3 (stage 1); it has: 1, 2, 4");
  plan.stage_tp = {1, 4};
  EXPECT_NE(plan_problem(w, plan, cluster).find("stages of different widths need the same layers"), std::string::npos);
  plan.stage_tp = {1, 2};
  plan.dp = 3;  // 9 GPUs
  EXPECT_EQ(plan_problem(w, plan, cluster), "(stage widths 1 + 2) x dp 3 = 9 GPUs, the cluster has 8");
  plan.dp = 1;
  // One model cannot run two widths.
  EXPECT_NE(plan_problem(narrow, plan, cluster).find("compile with the workload's models of every width"), std::string::npos);
  EXPECT_THROW(compile_plan(narrow, plan, cluster), std::invalid_argument);
  plan.sequence_parallel = true;
  EXPECT_NE(plan_problem(w, plan, cluster).find("must be equal"), std::string::npos);
  plan.sequence_parallel = false;
  plan.virtual_stages = 2;
  plan.micro_batches = 2;
  EXPECT_NE(plan_problem(w, plan, cluster).find("not both"), std::string::npos);
}

// Interleaved 1F1B (Megatron's virtual pipeline): 4 layers of f = 1 ms and b = 2 ms as 4 stages of
// one layer, rank 0 holding stages 0 and 2, rank 1 stages 1 and 3; 4 micro-batches, nothing to
// transfer. Megatron's order, rank 0: warm-up of (2 - 0 - 1) x 2 + (2 - 1) x 2 = 4 forwards
// F0.0 F0.1 F2.0 F2.1 (stage.micro-batch), then F0.2 B2.0 F0.3 B2.1 F2.2 B0.0 F2.3 B0.1, then
// B2.2 B2.3 B0.2 B0.3; rank 1: F1.0 F1.1, then F3.0 B3.0 F3.1 B3.1 F1.2 B1.0 F1.3 B1.1 F3.2 B3.2
// F3.3 B3.3, then B1.2 B1.3. By hand, rank 0 runs F0.0 0-1, F0.1 1-2, F2.0 2-3, F2.1 3-4, F0.2
// 4-5, B2.0 6-8 (after B3.0 4-6), F0.3 8-9, B2.1 9-11, F2.2 11-12, B0.0 12-14, F2.3 14-15, B0.1
// 15-17, B2.2 18-20, B2.3 21-23, B0.2 23-25, B0.3 25-27: 27 ms, against (4 + 2 - 1) x 6 = 30 ms
// without interleaving; m (f + b) + (pp - 1) / v (f + b) = 24 + 3. NEST's estimate, which prices
// the bubble so, agrees. Memory: rank 0 holds 5 (stage, micro-batch) stashes at its peak (after
// F0.2 ... F2.2: five forwards ahead of their backwards), rank 1 holds 3.
TEST(ParallelPlan, InterleavedOneFOneBByHand) {
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms, 0, 0, 1e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.virtual_stages = 2;
  plan.micro_batches = 4;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_EQ(c.stage_starts, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_ALL_ENGINES(run(c, cluster), 27 * ms);
  EXPECT_EQ(c.in_flight, (std::vector<int>{5, 3}));
  EXPECT_DOUBLE_EQ(c.memory[0].activations, 5e6);
  EXPECT_DOUBLE_EQ(c.memory[1].activations, 3e6);
  EXPECT_NEAR(nest_estimate(model, plan, NestNetwork::aware(cluster)).time_per_batch, 27 * ms, 1e-12);
  plan.virtual_stages = 1;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 30 * ms);
  EXPECT_NEAR(nest_estimate(model, plan, NestNetwork::aware(cluster)).time_per_batch, 30 * ms, 1e-12);
}

// Interleaved without communication on more ranks and stages: one layer of f = 1, b = 2 ms per
// stage, so a rank's time per micro-batch is 3v ms and a step (m + (pp - 1)/v) x 3v ms: pp 3, v 2,
// m 6: 7 x 6 = 42 ms; pp 4, v 3, m 8: 9 x 9 = 81 ms. And m = pp (every forward first):
// pp 2, v 2, m 2 runs without a cycle and is never faster than that bound, 2.5 x 6 = 15 ms.
TEST(ParallelPlan, InterleavedOneFOneBOnMoreRanksAndStages) {
  struct Case {
    int pp, v, m;
    double expected;
  };
  for (const Case& k : {Case{3, 2, 6, 42 * ms}, Case{4, 3, 8, 81 * ms}}) {
    const LayerModel model = uniform_model(k.pp * k.v, 1 * ms, 2 * ms);
    const Cluster cluster = testutil::dedicated_mesh(k.pp, kBw);
    ParallelPlan plan;
    plan.pp = k.pp;
    plan.virtual_stages = k.v;
    plan.micro_batches = k.m;
    EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), k.expected);
  }
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.virtual_stages = 2;
  plan.micro_batches = 2;
  EXPECT_GE(testutil::run_all_engines(compile_plan(model, plan, cluster).graph, cluster).evaluator, 15 * ms * (1 - 1e-9));
}

// Interleaved with everything around it: 2 replicas, ZeRO 3, activations between stages (the last
// rank's hand-over to rank 0 included), tensor parallelism with scatter-gather. Compiles, runs on
// every engine (SimGrid never faster than the contention-free evaluator), and holds one ZeRO 3
// gather buffer per GPU: rank 0's two layers of 4 MB as 2 x 4 / 2 sharded + 4 / 2 = 6 MB of
// parameters per tensor rank (the layers' bytes are per tensor rank).
TEST(ParallelPlan, InterleavedWithReplicasZeroAndTensorParallelism) {
  LayerModel model = uniform_model(4, 1 * ms, 2 * ms, 1e6, 4e6, 1e6);
  model.tensor_parallel = 2;
  const Cluster cluster = testutil::dedicated_mesh(8, kBw, 1e-6);
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 2;
  plan.dp = 2;
  plan.virtual_stages = 2;
  plan.micro_batches = 4;
  plan.zero = 3;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_DOUBLE_EQ(c.memory[0].parameters, 6e6);
  const testutil::EngineTimes r = testutil::run_all_engines(c.graph, cluster);
  EXPECT_GT(r.evaluator, 27 * ms);
  EXPECT_GE(r.simgrid, r.evaluator * (1 - 1e-9));
  plan.zero = 1;
  const testutil::EngineTimes one = testutil::run_all_engines(compile_plan(model, plan, cluster).graph, cluster);
  EXPECT_GE(one.simgrid, one.evaluator * (1 - 1e-9));
}

TEST(ParallelPlan, InterleavingNeedsOneFOneBAndWholeGroupsOfMicroBatches) {
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.virtual_stages = 2;
  plan.micro_batches = 3;
  EXPECT_NE(plan_problem(model, plan, cluster).find("not a multiple of pp 2"), std::string::npos);
  plan.micro_batches = 4;
  plan.schedule = PipelineSchedule::GPipe;
  EXPECT_NE(plan_problem(model, plan, cluster).find("must be 1f1b"), std::string::npos);
  plan.schedule = PipelineSchedule::OneFOneB;
  plan.virtual_stages = 3;  // 6 stages of 4 layers
  EXPECT_NE(plan_problem(model, plan, cluster).find("6 stages but uniform has 4 layers"), std::string::npos);
  plan.virtual_stages = 2;
  plan.stage_starts = {0, 2};
  EXPECT_NE(plan_problem(model, plan, cluster).find("2 stage starts for 4 stages"), std::string::npos);
  plan.stage_starts.clear();
  plan.pp = 1;
  EXPECT_NE(plan_problem(model, plan, cluster).find("needs a pipeline"), std::string::npos);
  // The last rank hands on to the first: a chain 0 - 1 - 2 carries 3 ranks, not interleaved.
  Cluster chain;
  for (int i = 0; i < 3; ++i) chain.add_device({"gpu" + std::to_string(i), i, 16e9});
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{1, 2}, std::pair{2, 1}})
    chain.set_route(a, b, {chain.add_link({fmt::format("l{}{}", a, b), kBw, 0})});
  chain.set_unreachable(0, 2);
  chain.set_unreachable(2, 0);
  chain.finalize("chain");
  const LayerModel six = uniform_model(6, 1 * ms, 2 * ms);
  plan.pp = 3;
  plan.micro_batches = 3;
  plan.virtual_stages = 1;
  EXPECT_EQ(plan_problem(six, plan, chain), "");
  plan.virtual_stages = 2;
  EXPECT_NE(plan_problem(six, plan, chain).find("gpu2 (pipeline rank 2) and gpu0 (pipeline rank 0) cannot reach each other"),
            std::string::npos)
      << plan_problem(six, plan, chain);
}

TEST(ParallelPlan, OneFOneBOrderIsWarmupThenAlternation) {
  // Stage 0 of 2 with 4 micro-batches: one warm-up forward, then F1 B0 F2 B1 F3 B2, then B3.
  // Its start times by hand (f = 2, b = 4 per stage): F0 0, F1 2, B0 8 (after stage 1's B0 at
  // 4-8), F2 12, B1 14 (stage 1's B1 ends at 14), F3 18, B2 20, B3 26.
  const LayerModel model = uniform_model(2, 2 * ms, 4 * ms);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 4;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const Schedule s = Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
  std::map<std::string, double> start;
  for (OpId op = 0; op < static_cast<OpId>(c.graph.graph.num_operators()); ++op)
    start[c.graph.graph.op(op).name] = s.start[op];
  const std::vector<std::pair<std::string, double>> expected = {
      {"d0.p0.t0.F0.0", 0},  {"d0.p0.t0.F1.0", 2},  {"d0.p0.t0.B0.0", 8},  {"d0.p0.t0.F2.0", 12},
      {"d0.p0.t0.B1.0", 14}, {"d0.p0.t0.F3.0", 18}, {"d0.p0.t0.B2.0", 20}, {"d0.p0.t0.B3.0", 26}};
  for (const auto& [name, t] : expected) EXPECT_NEAR(start.at(name), t * ms, 1e-12) << name;
  EXPECT_NEAR(s.latency, 30 * ms, 1e-12);
}

TEST(ParallelPlan, ActivationsCrossStagesAsTransfers) {
  // GPipe, 2 stages of one layer (f = 2 ms, b = 4 ms), 2 micro-batches, 10 MB activations at
  // 10 GB/s: 1 ms per transfer. Stage 0: F0 0-2, F1 2-4; stage 1: F0 3-5, F1 5-7, B0 7-11,
  // B1 11-15; the gradients reach stage 0 at 12 and 16: B0 12-16, B1 16-20.
  // = (m + p - 1)(f + b) + 2 (p - 1) c = 18 + 2 = 20 ms.
  const LayerModel model = uniform_model(2, 2 * ms, 4 * ms, 10e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 2;
  plan.schedule = PipelineSchedule::GPipe;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 20 * ms);
}

// The plan on 2 GPUs at kBw, every engine, its sends blocking their sender (Megatron's), then
// beside the sender's next operator.
void expect_blocking_then_beside(const LayerModel& model, ParallelPlan plan, double blocking, double beside) {
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  plan.blocking_sends = true;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), blocking);
  plan.blocking_sends = false;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), beside);
}

// Blocking sends (Megatron-LM's): a GPU's last send blocks what follows it too. 1F1B, 2 stages of
// one layer (f = 1 ms, b = 2 ms), 1 micro-batch, 10 MB at 10 GB/s (1 ms), stage 1's optimizer
// step 5 ms: stage 0 F 0-1; stage 1 F 2-3, B 3-5, its gradients reach stage 0 at 6 and its step
// waits for that, 6-11 (stage 0's B 6-8). Sends beside the next operator: the step 5-10, stage
// 0 done at 8: 10 ms.
TEST(ParallelPlan, AGpusLastSendBlocksItsOptimizerStep) {
  LayerModel model = uniform_model(2, 1 * ms, 2 * ms, 10e6);
  model.layers[1].optimizer_s = 5 * ms;
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 1;
  expect_blocking_then_beside(model, plan, 11 * ms, 10 * ms);
}

// The rendezvous: NCCL's send waits for its receive, which Megatron posts between its schedule's
// steps. 1F1B, 2 stages of one layer, stage 0 slow (f = b = 3 ms), stage 1 fast (1 ms), 2
// micro-batches, 10 MB at 10 GB/s (1 ms). Stage 0: F0 0-3, its send 3-4, F1 4-7, its send 7-8.
// Stage 1: F0 4-5, B0 5-6; its gradient waits for stage 0 to post the receive, after F1 (7): 7-8.
// F1 8-9, B1 9-10; its gradient waits for the receive stage 0 posts after B0 (8-11): 11-12, and
// B1 runs 12-15. Without the rendezvous that send went at 10 (14 ms); sends beside the next
// operator: stage 0 F1 3-6, B0 7-10, B1 10-13 (13 ms).
TEST(ParallelPlan, BlockingSendsWaitForTheirReceiverToPostItsReceive) {
  LayerModel model = uniform_model(2, 1 * ms, 1 * ms, 10e6);
  model.layers[0].forward_s = model.layers[0].backward_s = 3 * ms;
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 2;
  expect_blocking_then_beside(model, plan, 15 * ms, 13 * ms);
}

// Interleaved, as Megatron runs it (pp 2, v 2, 4 micro-batches, 4 layers of f = 1 ms and b =
// 2 ms, nothing to send): rank 0 warms up with F(s0,0) F(s0,1) F(s2,0) F(s2,1), rank 1 with
// F(s1,0) F(s1,1); then steps of a forward and a backward, one exchange after each (rank 0
// [F(s0,2) B(s2,0)] [F(s0,3) B(s2,1)] [F(s2,2) B(s0,0)] [F(s2,3) B(s0,1)], rank 1 [F(s3,0)
// B(s3,0)] ... [F(s3,3) B(s3,3)]), then the remaining backwards. By hand, blocking: rank 0's
// warm-up ends at 4, but its step [F(s0,2) B(s2,0)] waits for the exchange with rank 1's
// [F(s3,0) B(s3,0)] (3-6): F(s0,2) 6-7, B(s2,0) 7-9; the steps then run in lockstep, 3 ms each
// (9, 12, 15, 18), and the cool-down ends at 27 ms. Sends beside the next operator: F(s0,2)
// runs at 4-5 and B(s2,0) at 6-8, and the pipeline ends at 27 ms too.
TEST(ParallelPlan, InterleavedBlockingSendsExchangeOncePerStep) {
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  plan.virtual_stages = 2;
  plan.micro_batches = 4;
  for (const auto& [blocking, forward, backward] : {std::tuple{true, 6 * ms, 7 * ms}, std::tuple{false, 4 * ms, 6 * ms}}) {
    SCOPED_TRACE(blocking);
    plan.blocking_sends = blocking;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    EXPECT_ALL_ENGINES(run(c, cluster), 27 * ms);
    const Schedule s = FlowEngine(c.graph.graph, cluster).schedule(c.graph.placement, GpuQueue::Fcfs);
    EXPECT_NEAR(s.start[*c.graph.graph.find("d0.p0.t0.F2.0")], forward, 1e-12);
    EXPECT_NEAR(s.start[*c.graph.graph.find("d0.p2.t0.B0.2")], backward, 1e-12);
  }
}

TEST(ParallelPlan, GradientReductionOverlapsTheBackwardPass) {
  // One stage, 3 layers of 1 ms forward and backward, 2 replicas, 10 MB of gradients per layer
  // (a 2-GPU ring all-reduce: 2 steps of 5 MB each way at 10 GB/s, 1 ms alone). By hand: F 0-3,
  // B(l2) 3-4, B(l1) 4-5, B(l0) 5-6. Each layer's all-reduce starts when its backward ends, on
  // NCCL's stream beside the next backward, alone on the links: l2 4-5, l1 5-6, l0 6-7. Every
  // engine: 7 ms. (Had the reductions waited for the GPU, all three would start at 6: 7 ms alone,
  // 9 ms sharing the links.)
  const LayerModel model = uniform_model(3, 1 * ms, 1 * ms, 0, 10e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.dp = 2;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const Times t = run(c, cluster);
  EXPECT_NEAR(t.evaluator, 7 * ms, 1e-12);
  EXPECT_NEAR(t.flow, 7 * ms, 1e-12);
  EXPECT_NEAR(t.simgrid, 7 * ms, 1e-9);
  // Layer 2's reduction on replica 0 starts at 4 ms, while B(l1) computes, in the flow engine too.
  const OpId first_step = *c.graph.graph.find("grad.p0.t0.l2.r0.start");
  for (const Schedule& s : {Evaluator(c.graph.graph, cluster).schedule(c.graph.placement),
                            FlowEngine(c.graph.graph, cluster).schedule(c.graph.placement, GpuQueue::Fcfs)}) {
    EXPECT_NEAR(s.start[first_step], 4 * ms, 1e-12);
    // The GPU's order holds its compute only.
    for (OpId op : s.device_order[0]) EXPECT_FALSE(c.graph.graph.op(op).communication) << c.graph.graph.op(op).name;
  }
}

TEST(ParallelPlan, GradientReductionWithoutOverlapWaitsForTheBackward) {
  // As above, Megatron's default (no --overlap-grad-reduce): the three all-reduces wait for the
  // GPU's last backward (6 ms) and run one after another on the group's stream, 1 ms each: 9 ms.
  // NEST's estimate, overlapped: the last layer's 1 ms is exposed; not overlapped, all 3 ms.
  const LayerModel model = uniform_model(3, 1 * ms, 1 * ms, 0, 10e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.dp = 2;
  plan.overlap_grad_reduce = false;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 9 * ms);
  const double exposed = nest_estimate(model, plan, NestNetwork::aware(cluster), NestReduction::Overlapped).gradient_reduction;
  plan.overlap_grad_reduce = true;
  const double overlapped = nest_estimate(model, plan, NestNetwork::aware(cluster), NestReduction::Overlapped).gradient_reduction;
  EXPECT_NEAR(overlapped, 1 * ms, 1e-6);
  EXPECT_NEAR(exposed, 3 * overlapped, 1e-12);
}

TEST(ParallelPlan, GradientBucketsOfOneGroupRunOneAfterAnother) {
  // As above with 20 MB of gradients per layer (2 ms alone). F 0-3, B(l2) 3-4, B(l1) 4-5, B(l0)
  // 5-6. Layer 1's bucket is ready at 5 but waits for layer 2's (4-6) on the group's stream:
  // l2 4-6, l1 6-8, l0 8-10, 10 ms on every engine. (Run side by side they would take 8 ms in
  // the evaluator, and share the link in the others.) ZeRO 1: the reduce-scatters (1 ms each:
  // l2 4-5, l1 5-6, l0 6-7), then after the last one the all-gathers, 7-8, 8-9, 9-10.
  const LayerModel model = uniform_model(3, 1 * ms, 1 * ms, 0, 20e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  for (int zero : {0, 1}) {
    ParallelPlan plan;
    plan.dp = 2;
    plan.zero = zero;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    const Times t = run(c, cluster);
    EXPECT_NEAR(t.evaluator, 10 * ms, 1e-12) << zero;
    EXPECT_NEAR(t.flow, 10 * ms, 1e-12) << zero;
    EXPECT_NEAR(t.simgrid, 10 * ms, 1e-9) << zero;
    const Schedule s = Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
    const std::string l1 = zero == 0 ? "grad.p0.t0.l1.r0.done" : "grad.p0.t0.l1.rs.r0.done";
    EXPECT_NEAR(s.finish[*c.graph.graph.find(l1)], (zero == 0 ? 8 : 6) * ms, 1e-12) << zero;
  }
}

TEST(ParallelPlan, ZeroThreeGathersTheLayersForTheForwardOneAfterAnother) {
  // 2 layers of 10 MB, 2 replicas, ZeRO 3: each layer's gather before the forward is a 2-rank
  // ring all-gather, one step of 5 MB each way, 0.5 ms alone. In layer order, one after another:
  // layer 0's 0-0.5 ms, layer 1's 0.5-1 ms (side by side, both would end at 1 ms on a shared link).
  const LayerModel model = uniform_model(2, 1 * ms, 1 * ms, 0, 10e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.dp = 2;
  plan.zero = 3;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const Graph& g = c.graph.graph;
  for (const Schedule& s : {Evaluator(g, cluster).schedule(c.graph.placement),
                            FlowEngine(g, cluster).schedule(c.graph.placement, GpuQueue::Fcfs)}) {
    EXPECT_NEAR(s.finish[*g.find("grad.p0.t0.l0.agf.r0.done")], 0.5 * ms, 1e-12);
    EXPECT_NEAR(s.start[*g.find("grad.p0.t0.l1.agf.r0.start")], 0.5 * ms, 1e-12);
    EXPECT_NEAR(s.finish[*g.find("grad.p0.t0.l1.agf.r0.done")], 1 * ms, 1e-12);
    EXPECT_NEAR(s.start[*g.find("d0.p0.t0.F0.0")], 0.5 * ms, 1e-12);  // layer 0's forward waits for its gather only
  }
}

TEST(ParallelPlan, ZeroThreePrefetchesAsManyLayersAheadAsItIsTold) {
  // 3 layers of 10 MB and 1 ms forwards, 2 replicas, ZeRO 3: each gather 0.5 ms alone. Unlimited,
  // the gathers run back to back (0-0.5, 0.5-1, 1-1.5 ms) while layer 0 computes 0.5-1.5. One layer
  // ahead (FSDP's), layer 2's gather is issued as layer 1's forward begins, when layer 0's is done
  // (1.5 ms): 1.5-2 ms, still before layer 2's forward (2.5 ms), which starts as before.
  const LayerModel model = uniform_model(3, 1 * ms, 1 * ms, 0, 10e6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.dp = 2;
  plan.zero = 3;
  for (int prefetch : {0, 1}) {
    plan.zero3_prefetch = prefetch;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    const Graph& g = c.graph.graph;
    for (const Schedule& s : {Evaluator(g, cluster).schedule(c.graph.placement),
                              FlowEngine(g, cluster).schedule(c.graph.placement, GpuQueue::Fcfs)}) {
      EXPECT_NEAR(s.start[*g.find("grad.p0.t0.l1.agf.r0.start")], 0.5 * ms, 1e-12) << prefetch;
      EXPECT_NEAR(s.start[*g.find("grad.p0.t0.l2.agf.r0.start")], (prefetch ? 1.5 : 1.0) * ms, 1e-12) << prefetch;
      EXPECT_NEAR(s.start[*g.find("d0.p0.t0.F0.2")], 2.5 * ms, 1e-12) << prefetch;
    }
  }
}

TEST(ParallelPlan, ZeroStagesChangeMemoryAndTrafficAsStated) {
  // One layer of 1 GB of parameters (fp16) on 4 replicas. Memory: parameters 1 GB, gradients
  // 1 GB, Adam's states 6 GB. ZeRO 1 shards the states (1.5 GB), ZeRO 2 also the gradients
  // (0.25 GB), ZeRO 3 also the parameters (0.25 GB + the gathered layer's 0.75 GB).
  const LayerModel model = uniform_model(1, 1 * ms, 1 * ms, 0, 1e9);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  struct Expect {
    double params, grads, states, bytes_sent;
  };
  // Traffic across GPUs, in all: an all-reduce (or reduce-scatter + all-gather) moves
  // 2 (n-1)/n x 1 GB per GPU, 6 GB over 4 GPUs; ZeRO 3's extra all-gather adds half of it.
  const Expect expected[] = {{1e9, 1e9, 6e9, 6e9}, {1e9, 1e9, 1.5e9, 6e9}, {1e9, 0.25e9, 1.5e9, 6e9},
                             {1e9, 0.25e9, 1.5e9, 9e9}};
  for (int zero = 0; zero <= 3; ++zero) {
    ParallelPlan plan;
    plan.dp = 4;
    plan.zero = zero;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    ASSERT_EQ(c.memory.size(), 4u);
    const GpuMemory& mem = c.memory[0];
    EXPECT_NEAR(mem.parameters, expected[zero].params, 1) << zero;
    EXPECT_NEAR(mem.gradients, expected[zero].grads, 1) << zero;
    EXPECT_NEAR(mem.optimizer_states, expected[zero].states, 1) << zero;
    double sent = 0;
    for (const Tensor& t : c.graph.graph.tensors())
      if (c.graph.placement[t.src] != c.graph.placement[t.dst]) sent += t.bytes;
    EXPECT_NEAR(sent, expected[zero].bytes_sent, 1e3) << zero;
  }
}

// Megatron-LM's bytes per parameter (its distributed optimizer's table), for one layer of 1 GB of
// 16-bit parameters (0.5 G parameters) on d = 4 replicas: bf16 keeps fp32 main gradients (4
// bytes, 2 GB) and reduces them in fp32; fp16 keeps 16-bit gradients and an fp32 copy with the
// optimizer. Without ZeRO: bf16 2 + 4 + 12 = 18 bytes (9 GB), fp16 2 + 2 + 16 = 20 (10 GB); the
// distributed optimizer (ZeRO 1): bf16 6 + 12/d (3 + 1.5 GB), fp16 4 + 16/d (2 + 2 GB). A
// reduce-scatter of fp32 gradients moves twice the bytes; the parameters' all-gather stays 16-bit:
// 2 x 3/4 x 2 GB + 3/4 x 1 GB per GPU, 4 x 2.25 = 9 GB in all (16-bit gradients: 6 GB).
TEST(ParallelPlan, MainGradientsAreMegatronsBytesPerParameter) {
  struct Expect {
    MainGradients gradients;
    int zero;
    double total, bytes_sent;
  };
  const Expect expected[] = {{MainGradients::Fp32, 0, 9e9, 12e9},      {MainGradients::Fp32Copy, 0, 10e9, 6e9},
                             {MainGradients::Fp32, 1, 4.5e9, 9e9},      {MainGradients::Fp32Copy, 1, 4e9, 6e9},
                             {MainGradients::AsParameters, 1, 3.5e9, 6e9}};
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  for (const Expect& e : expected) {
    LayerModel model = uniform_model(1, 1 * ms, 1 * ms, 0, 1e9);
    model.main_gradients = e.gradients;
    ParallelPlan plan;
    plan.dp = 4;
    plan.zero = e.zero;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    const std::string what = fmt::format("{} zero {}", enum_name<MainGradients>(kMainGradientsNames, e.gradients), e.zero);
    EXPECT_NEAR(c.memory[0].total(), e.total, 1) << what;
    double sent = 0;
    for (const Tensor& t : c.graph.graph.tensors())
      if (c.graph.placement[t.src] != c.graph.placement[t.dst]) sent += t.bytes;
    EXPECT_NEAR(sent, e.bytes_sent, 1e3) << what;
  }
}

// NCCL runs reduce-scatter and all-gather by ring whichever algorithm its all-reduces take: with
// ZeRO a plan whose gradient algorithm has no reduce-scatter (tree, hierarchical, multi-level)
// compiles its reduce-scatters and all-gathers by ring, message for message the ring plan's;
// without ZeRO the all-reduce is the tree's own.
TEST(ParallelPlan, ZeroTakesRingWhereTheGradientAlgorithmHasNoReduceScatter) {
  const LayerModel model = uniform_model(1, 1 * ms, 1 * ms, 0, 1e9);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  EXPECT_EQ(zero_collective_algorithm(CollectiveAlgorithm::Tree), CollectiveAlgorithm::Ring);
  EXPECT_EQ(zero_collective_algorithm(CollectiveAlgorithm::Hierarchical), CollectiveAlgorithm::Ring);
  EXPECT_EQ(zero_collective_algorithm(CollectiveAlgorithm::MultiLevel), CollectiveAlgorithm::Ring);
  EXPECT_EQ(zero_collective_algorithm(CollectiveAlgorithm::HalvingDoubling), CollectiveAlgorithm::HalvingDoubling);
  EXPECT_EQ(zero_collective_algorithm(CollectiveAlgorithm::Direct), CollectiveAlgorithm::Direct);
  auto transfers = [](const CompiledPlan& c) {
    std::vector<std::pair<DeviceId, DeviceId>> pairs;
    for (const Tensor& t : c.graph.graph.tensors())
      if (c.graph.placement[t.src] != c.graph.placement[t.dst]) pairs.emplace_back(c.graph.placement[t.src], c.graph.placement[t.dst]);
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  };
  for (int zero = 0; zero <= 3; ++zero) {
    SCOPED_TRACE(fmt::format("zero {}", zero));
    ParallelPlan ring, tree;
    ring.dp = tree.dp = 4;
    ring.zero = tree.zero = zero;
    tree.gradient_algorithm = CollectiveAlgorithm::Tree;
    EXPECT_EQ(plan_problem(model, tree, cluster), "");
    const CompiledPlan r = compile_plan(model, ring, cluster), t = compile_plan(model, tree, cluster);
    if (zero > 0) {
      EXPECT_EQ(transfers(t), transfers(r));
      EXPECT_DOUBLE_EQ(run(t, cluster).evaluator, run(r, cluster).evaluator);
    } else {
      EXPECT_NE(transfers(t), transfers(r));
    }
  }
}

TEST(ParallelPlan, ScatterGatherSendsATensorRanksShareAcrossStages) {
  // tp 2, pp 2, one layer per stage (f 1 ms, b 2 ms), 20 MB of activation, a link per GPU pair
  // at 10 GB/s. Scatter-gather: each rank sends 10 MB (1 ms), then the two ranks of the next
  // stage all-gather the 20 MB by ring (10 MB each way: 1 ms); without it each rank sends all
  // 20 MB (2 ms). Either way 1 + 2 + 1 + 2 + 2 + 2 = 10 ms; across stages, 20 MB each way
  // against 40 MB. With sequence parallelism each rank sends its 10 MB and the next stage works
  // on it as it is, no all-gather: 1 + 1 + 1 + 2 + 1 + 2 = 8 ms, 20 MB each way, whether or not
  // scatter-gather is asked for.
  LayerModel model = uniform_model(2, 1 * ms, 2 * ms, 20e6);
  model.tensor_parallel = 2;
  const Cluster cluster = testutil::dedicated_mesh(4, kBw);
  struct Case {
    bool scatter_gather, sequence_parallel;
    double time, across;
  };
  for (const Case& k : {Case{true, false, 10 * ms, 40e6}, Case{false, false, 10 * ms, 80e6}, Case{true, true, 8 * ms, 40e6},
                        Case{false, true, 8 * ms, 40e6}}) {
    SCOPED_TRACE(fmt::format("scatter_gather {}, sequence_parallel {}", k.scatter_gather, k.sequence_parallel));
    ParallelPlan plan;
    plan.tp = 2;
    plan.pp = 2;
    plan.scatter_gather = k.scatter_gather;
    plan.sequence_parallel = k.sequence_parallel;  // the uniform model has no stash to miss
    const CompiledPlan c = compile_plan(model, plan, cluster);
    EXPECT_ALL_ENGINES(run(c, cluster), k.time);
    double across = 0;  // GPUs 0, 1 are stage 0; 2, 3 stage 1
    for (const Tensor& t : c.graph.graph.tensors())
      if ((c.graph.placement[t.src] < 2) != (c.graph.placement[t.dst] < 2)) across += t.bytes;
    EXPECT_NEAR(across, k.across, 1);
  }
}

// One expert layer: f 1 ms, b 2 ms, 10 MB of dense parameters and 60 MB in 2 experts, each
// all-to-all 20 MB per GPU.
LayerModel expert_model() {
  LayerModel model = uniform_model(1, 1 * ms, 2 * ms, 0, 70e6);
  model.layers[0].expert_parameter_bytes = 60e6;
  model.layers[0].expert_alltoall_bytes = 20e6;
  model.layers[0].experts = 2;
  return model;
}

TEST(ParallelPlan, ExpertParallelismAddsAllToAllsAndSpreadsTheExperts) {
  // dp 2, ep 2 on two GPUs at 10 GB/s: an all-to-all sends half of its 20 MB to the other GPU,
  // 1 ms. Forward 1 + dispatch 1 + combine 1, backward 2 + 1 + 1: 7 ms; then the dense 10 MB
  // all-reduced by ring (two steps of 5 MB: 1 ms); the experts are not reduced (each is on one
  // GPU): 8 ms. Without expert parallelism no all-to-alls, and the whole 70 MB is all-reduced
  // (7 ms): 1 + 2 + 7 = 10 ms. Memory: 10 MB + 60 MB / 2 of parameters, as many of gradients,
  // six times as many of optimizer states; ZeRO 1 shards the dense states over 2, the experts'
  // over dp / ep = 1: 6 x (5 + 30) MB.
  const LayerModel model = expert_model();
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.dp = 2;
  plan.ep = 2;
  CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_ALL_ENGINES(run(c, cluster), 8 * ms);
  EXPECT_NEAR(c.memory[0].parameters, 40e6, 1);
  EXPECT_NEAR(c.memory[1].gradients, 40e6, 1);
  EXPECT_NEAR(c.memory[0].optimizer_states, 240e6, 1);
  plan.zero = 1;
  c = compile_plan(model, plan, cluster);
  EXPECT_NEAR(c.memory[0].optimizer_states, 210e6, 1);
  // ZeRO 3 keeps 5 MB of the dense part and gathers the other 5; the experts, one per GPU, are
  // neither sharded nor gathered: 5 + 5 + 30 MB.
  plan.zero = 3;
  c = compile_plan(model, plan, cluster);
  EXPECT_NEAR(c.memory[0].parameters, 40e6, 1);
  plan.zero = 0;
  plan.ep = 1;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 10 * ms);
}

TEST(ParallelPlan, ExpertGradientsAreReducedAmongTheReplicasHoldingTheSameExperts) {
  // dp 4, ep 2 on four GPUs, each pair with its own link: all-to-alls within {0, 1} and {2, 3}
  // (7 ms as above); then the dense 10 MB by ring over all four (three steps of 2.5 MB to
  // reduce-scatter and three to all-gather: 6 x 0.25 = 1.5 ms) beside the experts' 30 MB per GPU
  // by ring among {0, 2} and among {1, 3} (2 x 15 MB: 3 ms), on links of their own: 10 ms.
  const LayerModel model = expert_model();
  const Cluster cluster = testutil::dedicated_mesh(4, kBw);
  ParallelPlan plan;
  plan.dp = 4;
  plan.ep = 2;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_ALL_ENGINES(run(c, cluster), 10 * ms);
  // Only GPUs 0 and 2 (and 1 and 3) exchange the experts' gradients: 30 MB from each GPU.
  double expert_traffic = 0;
  for (const Tensor& t : c.graph.graph.tensors())
    if (c.graph.graph.op(t.src).name.starts_with("grad.e")) {
      const int a = c.graph.placement[t.src], b = c.graph.placement[t.dst];
      if (a != b) {
        EXPECT_EQ((a + b) % 2, 0) << c.graph.graph.op(t.src).name;
        expert_traffic += t.bytes;
      }
    }
  EXPECT_NEAR(expert_traffic, 4 * 30e6, 1e3);
}

TEST(ParallelPlan, ExpertParallelismMustDivideTheReplicas) {
  const Cluster cluster = testutil::dedicated_mesh(4, kBw);
  ParallelPlan plan;
  plan.dp = 3;
  plan.ep = 2;
  EXPECT_NE(plan_problem(expert_model(), plan, cluster).find("ep must divide dp"), std::string::npos);
  plan.dp = 4;
  plan.ep = 4;
  EXPECT_NE(plan_problem(expert_model(), plan, cluster).find("ep 4 does not divide the 2 experts"), std::string::npos);
  plan.dp = 2;
  plan.ep = 2;
  EXPECT_NE(plan_problem(uniform_model(1, ms, ms), plan, cluster).find("has no experts"), std::string::npos);
  LayerModel baked = uniform_model(1, ms, ms);
  baked.expert_parallel = 4;
  EXPECT_NE(plan_problem(baked, plan, cluster).find("built for expert-parallel width 4"), std::string::npos);
}

TEST(ParallelPlan, ZeroThreeWithOneFOneBGathersForTheBackwardBeforeItsFirstBackward) {
  // 2 stages, 4 micro-batches, 2 replicas, 1F1B: stage 1 runs F0 B0 F1 B1 ..., so the backward's
  // gather follows F0 there (after the last forward it would wait for F3, which waits for B0).
  // The graph compiles, and every engine runs it; the traffic is ZeRO 3's: per layer and stage
  // a reduce-scatter and two all-gathers of (n-1)/n x 1 GB on each of 2 GPUs, 3 GB per layer.
  const LayerModel model = uniform_model(2, 1 * ms, 2 * ms, 0, 1e9);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.dp = 2;
  plan.micro_batches = 4;
  plan.zero = 3;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  double sent = 0;
  for (const Tensor& t : c.graph.graph.tensors())
    if (c.graph.placement[t.src] != c.graph.placement[t.dst]) sent += t.bytes;
  EXPECT_NEAR(sent, 2 * 3e9, 1e3);
  const Times t = run(c, cluster);
  EXPECT_NEAR(t.flow, t.simgrid, 1e-6 * t.flow);
  EXPECT_GT(t.evaluator, 0);
}

TEST(ParallelPlan, GpusThatCannotReachEachOtherAreRefused) {
  Cluster c;
  for (int i = 0; i < 2; ++i) c.add_device({"gpu" + std::to_string(i), i, 16e9});
  c.set_unreachable(0, 1);
  c.set_unreachable(1, 0);
  c.finalize("two islands");
  ParallelPlan plan;
  plan.pp = 2;
  EXPECT_NE(plan_problem(uniform_model(2, 1 * ms, 1 * ms), plan, c).find("gpu0 (pipeline rank 0) and gpu1 (pipeline rank 1) cannot reach each other"),
            std::string::npos);
}

TEST(ParallelPlan, ActivationsInFlightFollowTheSchedule) {
  // 4 stages, 8 micro-batches, 1 GB stashed per layer and micro-batch: GPipe holds all 8 on every
  // stage; 1F1B holds 4, 3, 2, 1 (pp - p).
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms, 0, 0, 1e9);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  ParallelPlan plan;
  plan.pp = 4;
  plan.micro_batches = 8;
  plan.schedule = PipelineSchedule::GPipe;
  CompiledPlan gpipe = compile_plan(model, plan, cluster);
  EXPECT_EQ(gpipe.in_flight, (std::vector<int>{8, 8, 8, 8}));
  EXPECT_NEAR(gpipe.memory[0].activations, 8e9, 1);
  plan.schedule = PipelineSchedule::OneFOneB;
  CompiledPlan one = compile_plan(model, plan, cluster);
  EXPECT_EQ(one.in_flight, (std::vector<int>{4, 3, 2, 1}));
  EXPECT_NEAR(one.memory[3].activations, 1e9, 1);
  EXPECT_EQ(one.infeasible, "");
  // On 6 GB GPUs GPipe's 8 GB of activations do not fit; 1F1B's 4 GB do.
  const Cluster small = testutil::dedicated_mesh(4, kBw, 0.0, 6e9);
  plan.schedule = PipelineSchedule::GPipe;
  const std::string why = compile_plan(model, plan, small).infeasible;
  EXPECT_NE(why.find("gpu0 (replica 0, stage 0, tensor rank 0) needs"), std::string::npos) << why;
  EXPECT_NE(why.find("activations of 8 micro-batches in flight"), std::string::npos) << why;
  plan.schedule = PipelineSchedule::OneFOneB;
  EXPECT_EQ(compile_plan(model, plan, small).infeasible, "");
}

TEST(ParallelPlan, MemoryOverTimeRisesWithTheForwardsAndFallsWithTheBackwards) {
  // 4 stages of one layer (f = 1 ms, b = 2 ms), 8 micro-batches, 1 GB stashed per micro-batch,
  // 0.1 GB of parameters per layer: 0.8 GB held throughout (2 + 2 + 12 bytes per 2-byte parameter).
  // 1F1B, stage 0: F0-F3 at 0-4 (three warm-up forwards, then one), B0 at 10-12 once the gradient
  // is back (stage 3 B0 at 4-6, stage 2 at 6-8, stage 1 at 8-10): 4 GB from 3 ms, 3 GB at 12 ms
  // as F4 starts then. Stage 3: F0 at 3-4, B0 at 4-6, F1 at 6-7: 1 GB from 3 ms. GPipe, stage 0: 8
  // GB from 7 ms (F7). Every curve peaks at the plan's memory and ends with what is held throughout.
  const LayerModel model = uniform_model(4, 1 * ms, 2 * ms, 0, 1e8, 1e9);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw, 0.0, 100e9);
  ParallelPlan plan;
  plan.pp = 4;
  plan.micro_batches = 8;
  auto at = [](const MemoryCurve& c, double time) {  // bytes held just after `time`
    double held = c.front().second;
    for (const auto& [t, bytes] : c)
      if (t <= time + 1e-12) held = bytes;
    return held;
  };
  auto first_at = [](const MemoryCurve& c, double bytes) {
    for (const auto& [t, b] : c)
      if (b >= bytes - 1) return t;
    return -1.0;
  };
  for (PipelineSchedule schedule : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe}) {
    plan.schedule = schedule;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    const Schedule run = Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
    const std::vector<MemoryCurve> curves = memory_over_time(c, run.start, run.finish);
    ASSERT_EQ(curves.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      double peak = 0;
      for (const auto& [t, bytes] : curves[i]) peak = std::max(peak, bytes);
      EXPECT_NEAR(peak, c.memory[i].total(), 1) << i;
      EXPECT_NEAR(curves[i].back().second, 0.8e9, 1) << i;
    }
    if (schedule == PipelineSchedule::OneFOneB) {
      EXPECT_NEAR(first_at(curves[0], 4.8e9), 3 * ms, 1e-12);
      EXPECT_NEAR(at(curves[0], 11 * ms), 4.8e9, 1);
      EXPECT_NEAR(at(curves[0], 12 * ms), 4.8e9, 1);  // B0 frees as F4 stashes
      EXPECT_NEAR(first_at(curves[3], 1.8e9), 3 * ms, 1e-12);
      EXPECT_NEAR(at(curves[3], 5 * ms), 1.8e9, 1);
      EXPECT_NEAR(at(curves[3], 6 * ms), 1.8e9, 1);  // B0 ends as F1 starts (stage 2's F1 was done at 4)
    } else {
      EXPECT_NEAR(first_at(curves[0], 8.8e9), 7 * ms, 1e-12);
    }
  }
}

TEST(ParallelPlan, TensorParallelAllReducesJoinTheLayers) {
  // One layer of 1 ms forward and backward on 2 GPUs of tensor parallelism, with a 10 MB
  // all-reduce after each (2-GPU ring at 10 GB/s: 1 ms): F 0-1, all-reduce 1-2, B 2-3,
  // all-reduce 3-4.
  LayerModel model = uniform_model(1, 1 * ms, 1 * ms);
  model.tensor_parallel = 2;
  model.layers[0].tp_allreduce_forward_bytes = model.layers[0].tp_allreduce_backward_bytes = 10e6;
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.tp = 2;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 4 * ms);
}

TEST(ParallelPlan, SequenceParallelismReduceScattersThenAllGathers) {
  // The same layer with sequence parallelism: each 10 MB all-reduce becomes a reduce-scatter
  // (one 5 MB step: 0.5 ms) and an all-gather (0.5 ms), as long as the ring all-reduce, and the
  // backward gathers the linears' inputs again (0.5 ms): 4.5 ms.
  LayerModel model = uniform_model(1, 1 * ms, 1 * ms, 0, 0, 8e6);
  model.tensor_parallel = 2;
  model.layers[0].tp_allreduce_forward_bytes = model.layers[0].tp_allreduce_backward_bytes = 10e6;
  model.layers[0].sequence_parallel_stashed_bytes = 3e6;
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_ALL_ENGINES(run(c, cluster), 4.5 * ms);
  std::vector<CollectiveOp> ops;
  for (const AppendedCollective& k : c.graph.collectives) ops.push_back(k.op);
  EXPECT_EQ(ops, (std::vector<CollectiveOp>{CollectiveOp::ReduceScatter, CollectiveOp::AllGather,
                                            CollectiveOp::ReduceScatter, CollectiveOp::AllGather,
                                            CollectiveOp::AllGather}));
  // A micro-batch in flight keeps the sequence-parallel stash (3 MB), not the 8 MB.
  EXPECT_DOUBLE_EQ(c.memory[0].activations, 3e6);
  plan.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(compile_plan(model, plan, cluster).memory[0].activations, 8e6);
}

TEST(ParallelPlan, TensorParallelOverlapRunsTheCollectivesBesideTheLayer) {
  // Three layers (1 ms forward, 2 ms backward) at tp 2 with sequence parallelism, the middle one
  // with X bytes of tensor-parallel traffic in the forward and Y in the backward, on two GPUs at
  // 10 GB/s: its forward's reduce-scatter and all-gather take X / 10 GB/s, its backward's (with the
  // inputs' all-gather) 1.5 Y / 10 GB/s. After the layer: 9 ms + both. Beside it
  // (tp_comm_overlap): 1 + max(1, forward's) + 1 + 2 + max(2, backward's) + 2 ms.
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.tp = 2;
  plan.sequence_parallel = true;
  struct Case {
    double x, y, after, beside;
  };
  for (const Case& c : {Case{5e6, 10e6, 11 * ms, 9 * ms}, Case{30e6, 40e6, 18 * ms, 15 * ms}}) {
    SCOPED_TRACE(c.x);
    LayerModel model = uniform_model(3, 1 * ms, 2 * ms);
    model.tensor_parallel = 2;
    model.layers[1].tp_allreduce_forward_bytes = c.x;
    model.layers[1].tp_allreduce_backward_bytes = c.y;
    plan.tp_comm_overlap = false;
    EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), c.after);
    plan.tp_comm_overlap = true;
    EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), c.beside);
  }
  plan.sequence_parallel = false;  // Megatron's overlap is of sequence parallelism's collectives
  LayerModel model = uniform_model(3, ms, ms);
  model.tensor_parallel = 2;
  EXPECT_NE(plan_problem(model, plan, cluster).find("needs sequence_parallel"), std::string::npos);
}

TEST(ParallelPlan, SequenceParallelismNeedsTensorParallelismAndItsActivations) {
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.sequence_parallel = true;
  EXPECT_NE(plan_problem(uniform_model(1, ms, ms), plan, cluster).find("needs tp >= 2"), std::string::npos);
  LayerModel measured = uniform_model(1, ms, ms, 0, 0, 8e6);  // a stash, but none with sequence parallelism
  measured.tensor_parallel = 2;
  plan.tp = 2;
  EXPECT_NE(plan_problem(measured, plan, cluster).find("gives no activations with it"), std::string::npos);
}

TEST(ParallelPlan, ZooSequenceParallelStashIsKorthikantisTable2) {
  // GPT-3 175B (h 12288, a 96), s 2048, b 1, t 8, no recomputation: sbh (10 + 24/t + 5as/(ht))
  // without, sbh (34/t + 5as/(ht)) with sequence parallelism; with full recomputation the
  // layer's input, 2sbh, and 2sbh/t.
  const double s = 2048, h = 12288, a = 96, t = 8;
  models::LayerZooOptions options;
  options.recompute = models::Recompute::None;
  options.fused_attention = false;  // the scores, softmax and dropout kept (5as/(ht))
  const LayerModel none = models::build_layer_model("gpt3-175b", options, {8}).by_tensor_parallel.at(8);
  EXPECT_NEAR(none.layers[1].stashed_bytes, s * h * (10 + 24 / t + 5 * a * s / (h * t)), 1);
  EXPECT_NEAR(none.layers[1].sequence_parallel_stashed_bytes, s * h * (34 / t + 5 * a * s / (h * t)), 1);
  options.recompute = models::Recompute::Full;
  const LayerModel full = models::build_layer_model("gpt3-175b", options, {8}).by_tensor_parallel.at(8);
  EXPECT_NEAR(full.layers[1].stashed_bytes, 2 * s * h, 1);
  EXPECT_NEAR(full.layers[1].sequence_parallel_stashed_bytes, 2 * s * h / t, 1);
}

TEST(ParallelPlan, BalancedStagesMinimiseTheLargestStage) {
  // Times 1, 1, 1, 5, 1, 1 into 3 stages: the best largest stage is 5 ({1,1,1} {5} {1,1}).
  LayerModel model;
  for (double t : {1, 1, 1, 5, 1, 1}) model.layers.push_back({"l", t, 0, 0, 0, 0});
  EXPECT_EQ(balanced_stages(model, 3), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(balanced_stages(model, 6), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(balanced_stages(model, 7), std::invalid_argument);
}

TEST(ParallelPlan, BadPlansSayWhy) {
  const LayerModel model = uniform_model(4, 1 * ms, 1 * ms);
  const Cluster cluster = testutil::dedicated_mesh(4, kBw);
  ParallelPlan plan;
  plan.pp = 8;
  EXPECT_NE(plan_problem(model, plan, cluster).find("8 pipeline stages but uniform has 4 layers"), std::string::npos);
  plan.pp = 2;
  plan.dp = 4;
  EXPECT_NE(plan_problem(model, plan, cluster).find("= 8 GPUs, the cluster has 4"), std::string::npos);
  plan.dp = 1;
  plan.tp = 2;
  EXPECT_NE(plan_problem(model, plan, cluster).find("tensor-parallel width 1, the plan has tp 2"), std::string::npos);
  plan.tp = 1;
  plan.stage_starts = {0, 0};
  EXPECT_NE(plan_problem(model, plan, cluster).find("must increase"), std::string::npos);
  plan.stage_starts = {};
  plan.zero = 4;
  EXPECT_NE(plan_problem(model, plan, cluster).find("ZeRO stage"), std::string::npos);
  plan.zero = 0;
  EXPECT_EQ(plan_problem(model, plan, cluster), "");
  // 3 replicas cannot halve and double.
  ParallelPlan three;
  three.dp = 3;
  three.gradient_algorithm = CollectiveAlgorithm::HalvingDoubling;
  EXPECT_NE(plan_problem(model, three, cluster).find("gradient reduction of stage 0, tensor rank 0: halving-doubling needs a power-of-two group"),
            std::string::npos)
      << plan_problem(model, three, cluster);
}

TEST(ParallelPlan, LoadsNestWorkloads) {
  const std::string root = std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared/workloads/nest";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " is absent (CI has it)";
  const LayerWorkload w = load_nest_workload(root + "/gpt3.h100_spineLeaf.mbs1.json");
  EXPECT_EQ(w.name, "gpt3");
  const LayerModel& m = w.at(8, "t", "tp");
  EXPECT_EQ(m.layers.size(), 97u);
  // The README's totals: 43,715,100,672 parameter bytes at width 8; recomputation stashes the
  // layer's input (50,331,648 bytes: 2,048 tokens x 12,288 x 2 bytes).
  double params = 0;
  for (const Layer& l : m.layers) params += l.parameter_bytes;
  EXPECT_NEAR(params, 43715100672.0, 1);
  EXPECT_NEAR(m.layers[1].stashed_bytes, 50331648.0, 0.5);
  EXPECT_NEAR(m.bytes_into(1), 50331648.0, 0.5);
  // What NEST's own DP reads besides: every operator output of a layer (3,281,179,702 bytes), that
  // the times leave recomputation out, and its units (milliseconds read as seconds: x 1000).
  EXPECT_NEAR(m.layers[1].activation_bytes, 3281179702.0, 0.5);
  EXPECT_TRUE(m.nest_recomputation);
  EXPECT_DOUBLE_EQ(m.nest_time_scale, 1000);
  EXPECT_THROW(w.at(2, "t", "tp"), InputError);
  // Malformed files name the field.
  const auto dir = testutil::fresh_temp_dir("nest-bad");
  std::ofstream(dir / "w.json") << R"({"schema": "nest-workload/1", "time_unit": "s", "variants": {"1": {
      "tensor_parallel_degree": 1, "layers": [{"id": 0, "fwd_s": -1, "bwd_s": 0, "parameter_bytes": 0,
      "stashed_bytes_without_recompute": 0}], "edges": []}}})";
  EXPECT_INPUT_ERROR(load_nest_workload((dir / "w.json").string()), "variants.1.layers[0].fwd_s", "a number >= 0");
  std::ofstream(dir / "t.json") << R"({"schema": "nest-workload/1", "time_unit": "s", "activation_recomputation": "yes",
      "variants": {}})";
  EXPECT_INPUT_ERROR(load_nest_workload((dir / "t.json").string()), "activation_recomputation", "expected boolean");
  std::ofstream(dir / "n.json") << R"({"schema": "nest-workload/1", "time_unit": "s", "variants": {"1": {
      "tensor_parallel_degree": 4294967298, "layers": [], "edges": []}}})";
  EXPECT_INPUT_ERROR(load_nest_workload((dir / "n.json").string()), "variants.1.tensor_parallel_degree", "whole number");
  std::filesystem::remove_all(dir);
}

TEST(ParallelPlan, CondensedCollectivesKeepThePlansTimeUnderContention) {
  // A plan whose gradient reduce-scatters and parameter all-gathers (ZeRO 3, rings of 8 over two
  // leaves of a 4:1 spine-leaf) share the NICs and the spine with the pipeline's transfers:
  // condensed (a flow per ring neighbour and phase) against message by message. Its rings mix
  // NVLink, leaf and spine hops, where the condensed phase ends at its slowest flow and the
  // messages let ranks run ahead; the gap measured here is 0.04% (the flow engine and SimGrid;
  // the evaluator's is none), from 2,936 operators instead of 5,024 -- the bound pins it at 1%.
  SpineLeafConfig cfg;
  cfg.servers = 8;
  cfg.servers_per_leaf = 4;
  cfg.gpus_per_server = 2;
  cfg.spines = 1;
  cfg.nic_bandwidth = 10e9;
  cfg.nic_latency = 5e-6;
  cfg.nvlink_bandwidth = 100e9;
  cfg.oversubscription = 4;
  cfg.gpu_memory = 100e9;
  const Cluster cluster = make_spine_leaf(cfg);
  const LayerModel model = uniform_model(8, 1 * ms, 2 * ms, 8e6, 40e6, 1e6);
  ParallelPlan plan;
  plan.pp = 2;
  plan.dp = 8;
  plan.zero = 3;
  plan.micro_batches = 16;
  const CompiledPlan messages = compile_plan(model, plan, cluster);
  const CompiledPlan condensed = compile_plan(model, plan, cluster, CollectiveDetail::Condensed);
  EXPECT_LT(condensed.graph.graph.num_operators(), messages.graph.graph.num_operators());
  const Times a = run(messages, cluster), b = run(condensed, cluster);
  std::cout << fmt::format("messages {} ops: evaluator {:.4f} flow {:.4f} simgrid {:.4f}; condensed {} ops: {:.4f} {:.4f} {:.4f}\n",
                           messages.graph.graph.num_operators(), a.evaluator, a.flow, a.simgrid,
                           condensed.graph.graph.num_operators(), b.evaluator, b.flow, b.simgrid);
  EXPECT_NEAR(b.evaluator, a.evaluator, 0.01 * a.evaluator);
  EXPECT_NEAR(b.flow, a.flow, 0.01 * a.flow);
  EXPECT_NEAR(b.simgrid, a.simgrid, 0.01 * a.simgrid);
}

// NEST's assumptions (PlanAssumptions), each on a model small enough to derive by hand.

TEST(ParallelPlan, SgdHoldsNoOptimizerStatesInEveryMemoryCheck) {
  // Two layers of 0.1 GB of parameters and 10 MB stashed each, on one GPU, one micro-batch in
  // flight (1F1B on one stage). Adam: parameters 0.2 GB, gradients 0.2 GB, states 6 x 0.2 = 1.2 GB,
  // activations 20 MB: 1.62 GB. SGD: no states, 0.42 GB. On a 1 GB GPU the compiled plan, its
  // layout and NEST's estimate all say Adam's does not fit and SGD's does.
  const LayerModel model = uniform_model(2, 1 * ms, 2 * ms, 0, 1e8, 1e7);
  const Cluster cluster = testutil::dedicated_mesh(1, kBw, 0.0, 1e9);
  ParallelPlan plan;
  plan.micro_batches = 4;
  for (Optimizer optimizer : {Optimizer::Adam, Optimizer::Sgd}) {
    plan.assumptions.optimizer = optimizer;
    const bool adam = optimizer == Optimizer::Adam;
    SCOPED_TRACE(adam ? "adam" : "sgd");
    const CompiledPlan c = compile_plan(model, plan, cluster);
    EXPECT_NEAR(c.memory[0].optimizer_states, adam ? 1.2e9 : 0.0, 1);
    EXPECT_NEAR(c.memory[0].total(), adam ? 1.62e9 : 0.42e9, 1);
    EXPECT_EQ(c.infeasible.empty(), !adam) << c.infeasible;
    EXPECT_EQ(plan_layout(model, plan, cluster).infeasible, c.infeasible);
    EXPECT_EQ(nest_estimate(model, plan, NestNetwork::aware(cluster)).fits, !adam);
    EXPECT_NEAR(stage_memory(model, 0, 2, plan, 1).total(), c.memory[0].total(), 1);
  }
  // ZeRO 1 shards the states over the replicas: Adam's 1.2 GB over 2 is 0.6 GB, SGD's nothing.
  const Cluster two = testutil::dedicated_mesh(2, kBw, 0.0, 1e9);
  plan.dp = 2;
  plan.zero = 1;
  plan.assumptions.optimizer = Optimizer::Adam;
  EXPECT_NEAR(compile_plan(model, plan, two).memory[1].optimizer_states, 0.6e9, 1);
  plan.assumptions.optimizer = Optimizer::Sgd;
  EXPECT_NEAR(compile_plan(model, plan, two).memory[1].optimizer_states, 0.0, 1e-9);
}

namespace {
// Three layers with every operator output 1, 2 and 3 GB, a chain of 10 MB and a 5 MB edge from
// layer 0 to layer 2 (as BERT's attention mask skips layers); built with recomputation (placesim
// stashes each layer's input: 0, 10 and 15 MB), or without (each layer's outputs).
LayerModel nest_memory_model(bool recomputation) {
  LayerModel m = uniform_model(3, 1 * ms, 2 * ms);
  m.name = "outputs";
  const double outputs[] = {1e9, 2e9, 3e9}, inputs[] = {0, 10e6, 15e6};
  for (int l = 0; l < 3; ++l) {
    m.layers[l].activation_bytes = outputs[l];
    m.layers[l].stashed_bytes = recomputation ? inputs[l] : outputs[l];
  }
  m.edges = {{0, 1, 10e6}, {1, 2, 10e6}, {0, 2, 5e6}};
  m.nest_recomputation = recomputation;
  return m;
}
}  // namespace

TEST(ParallelPlan, NestMemoryModelHoldsEveryOutputOfTheMicroBatchInCompute) {
  // Stages [0, 1) and [1, 3) under GPipe with 4 micro-batches: 4 in flight on both. NEST's DP:
  // every output of the stage for the micro-batch in compute, plus 3 more stashes. With
  // recomputation a stash is what enters the stage: stage 1 receives 10 MB (0 -> 1) and 5 MB
  // (0 -> 2), 15 MB (the 10 MB from layer 1 to layer 2 stays inside): 5 GB + 3 x 15 MB = 5.045
  // GB, held as a 4.985 GB workspace and 4 x 15 MB of stashes; stage 0 receives nothing: 1 GB.
  // placesim's model stashes each layer's input, 4 x (10 + 15) MB = 100 MB, and 0 on stage 0.
  const LayerModel model = nest_memory_model(true);
  EXPECT_NEAR(model.bytes_entering(1, 3), 15e6, 1e-6);
  EXPECT_NEAR(model.bytes_entering(1, 2), 10e6, 1e-6);  // 0 -> 2 enters a later stage
  EXPECT_NEAR(model.bytes_entering(2, 3), 15e6, 1e-6);
  const Cluster cluster = testutil::dedicated_mesh(2, kBw, 0.0, 100e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 4;
  plan.schedule = PipelineSchedule::GPipe;
  plan.stage_starts = {0, 1};
  EXPECT_NEAR(compile_plan(model, plan, cluster).memory[1].activations, 100e6, 1);
  EXPECT_NEAR(compile_plan(model, plan, cluster).memory[0].total(), 0, 1);
  plan.assumptions.memory_model = MemoryModel::Nest;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  EXPECT_NEAR(c.memory[1].workspace, 5e9 - 15e6, 1);
  EXPECT_NEAR(c.memory[1].activations, 60e6, 1);
  EXPECT_NEAR(c.memory[1].total(), 5.045e9, 1);
  EXPECT_NEAR(c.memory[0].total(), 1e9, 1);
  EXPECT_NEAR(plan_layout(model, plan, cluster).memory[1].total(), 5.045e9, 1);
  EXPECT_NEAR(stage_memory(model, 1, 3, plan, 4).total(), 5.045e9, 1);
  // The memory over time peaks there on every GPU: the workspace is held throughout, a stash
  // per micro-batch from the stage's first forward to its last backward.
  const Schedule run = Evaluator(c.graph.graph, cluster).schedule(c.graph.placement);
  const std::vector<MemoryCurve> curves = memory_over_time(c, run.start, run.finish);
  for (std::size_t i = 0; i < 2; ++i) {
    double peak = 0;
    for (const auto& [t, bytes] : curves[i]) peak = std::max(peak, bytes);
    EXPECT_NEAR(peak, c.memory[i].total(), 1) << i;
    EXPECT_NEAR(curves[i].back().second, c.memory[i].workspace, 1) << i;
  }
  // On a 5 GB GPU NEST's model does not fit stage 1, placesim's does; NEST's estimate agrees.
  const Cluster small = testutil::dedicated_mesh(2, kBw, 0.0, 5e9);
  EXPECT_NE(compile_plan(model, plan, small).infeasible.find("NEST's memory model"), std::string::npos);
  EXPECT_FALSE(nest_estimate(model, plan, NestNetwork::aware(small)).fits);
  plan.assumptions.memory_model = MemoryModel::Placesim;
  EXPECT_EQ(compile_plan(model, plan, small).infeasible, "");
  // Without recomputation NEST stashes every output of the stage, as placesim does: 4 x 5 GB.
  plan.assumptions.memory_model = MemoryModel::Nest;
  const LayerModel whole = nest_memory_model(false);
  EXPECT_NEAR(compile_plan(whole, plan, cluster).memory[1].total(), 20e9, 1);
  EXPECT_NEAR(compile_plan(whole, plan, cluster).memory[1].workspace, 0, 1e-6);
  // A model that gives no operator's output cannot be counted so.
  EXPECT_NE(plan_problem(uniform_model(3, 1 * ms, 2 * ms), plan, cluster).find("memory_model nest"), std::string::npos);
}

TEST(ParallelPlan, NestRecomputeChargesAForwardAtTheBackwardsTimeButOnTheLastStage) {
  // Stages of layers {0, 1} and {2} (f = 1 ms, b = 2 ms per layer), 1F1B, 2 micro-batches, nothing
  // to transfer. As given: stage 0 F0 0-2, F1 2-4; stage 1 F0 2-3, B0 3-5, F1 5-6, B1 6-8; stage 0
  // B0 5-9, B1 9-13: 13 ms. Charged, stage 0's backward of each micro-batch re-runs its forward
  // at the backward's time (4 ms more): B0 5-13, B1 13-21: 21 ms. Stage 1, the last, is not
  // charged. NEST's estimate: max(2 + 4, 1 + 2) x (2 + 1) = 18 ms; charged, (2 + 8) x 3 = 30 ms.
  LayerModel model = uniform_model(3, 1 * ms, 2 * ms, 0, 0, 1e9);
  model.nest_recomputation = true;
  const Cluster cluster = testutil::dedicated_mesh(2, kBw, 0.0, 3e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 2;
  plan.stage_starts = {0, 2};
  const NestNetwork network = NestNetwork::aware(cluster);
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 13 * ms);
  EXPECT_NEAR(nest_estimate(model, plan, network).time_per_batch, 18 * ms, 1e-12);
  plan.assumptions.recompute = RecomputeCharge::Nest;
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 21 * ms);
  EXPECT_NEAR(nest_estimate(model, plan, network).time_per_batch, 30 * ms, 1e-12);
  // As NEST prices its manual baseline, the stages counted from the wrong end: stage 0 priced as
  // the last (not charged, 6 ms), stage 1 as the first (charged, 1 + 4 = 5 ms): 6 x 3 = 18 ms.
  // Its memory too: stage 0 (2 GB of stash per micro-batch) counted with 1 in flight instead of
  // 2, 2 GB; stage 1 with 2, 2 GB: it fits the 3 GB GPUs that stage 0's 4 GB does not.
  EXPECT_FALSE(nest_estimate(model, plan, network).fits);
  plan.nest_baseline_pricing = true;
  const NestEstimate reversed = nest_estimate(model, plan, network);
  EXPECT_NEAR(reversed.time_per_batch, 18 * ms, 1e-12);
  EXPECT_TRUE(reversed.fits);
  EXPECT_FALSE(plan_layout(model, plan, cluster).infeasible.empty());  // the schedule's memory: 4 GB
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 21 * ms);  // the engines keep it too
  // A model built without recomputation (NEST's BERT) is never charged.
  plan.nest_baseline_pricing = false;
  model.nest_recomputation = false;
  EXPECT_NEAR(nest_estimate(model, plan, network).time_per_batch, 18 * ms, 1e-12);
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 13 * ms);
}

TEST(ParallelPlan, NestComputeUnitsScaleTheLayersTimesInTheEstimateOnly) {
  // Two stages of one layer (f = 1 ms, b = 2 ms), 10 MB between them over 10 GB/s (1 ms), one
  // micro-batch: each stage's load is 3 ms + 1 ms, the estimate 4 x (1 + 1) = 8 ms, as the
  // engines run it (F 0-1, send 1-2, F 2-3, B 3-5, send 5-6, B 6-8). In NEST's units (the
  // workload's times x 1000, communication in seconds): (3 s + 1 ms) x 2 = 6.002 s; the engines
  // keep 8 ms.
  LayerModel model = uniform_model(2, 1 * ms, 2 * ms, 10e6);
  model.nest_time_scale = 1000;
  const Cluster cluster = testutil::dedicated_mesh(2, kBw);
  ParallelPlan plan;
  plan.pp = 2;
  EXPECT_NEAR(nest_estimate(model, plan, NestNetwork::aware(cluster)).time_per_batch, 8 * ms, 1e-12);
  plan.assumptions.compute_units = ComputeUnits::Nest;
  EXPECT_NEAR(nest_estimate(model, plan, NestNetwork::aware(cluster)).time_per_batch, 6.002, 1e-9);
  EXPECT_ALL_ENGINES(run(compile_plan(model, plan, cluster), cluster), 8 * ms);
  // A model without NEST's scale cannot be read so.
  model.nest_time_scale = 0;
  EXPECT_NE(plan_problem(model, plan, cluster).find("compute_units nest"), std::string::npos);
}
