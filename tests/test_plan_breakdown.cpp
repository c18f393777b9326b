// Where an iteration's time goes (sim/plans/plan_breakdown.h), against a timeline derived by hand,
// and the parts summing to the iteration on every engine.
#include <gtest/gtest.h>

#include "sim/engines/engine.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_breakdown.h"
#include "tests/test_util.h"

namespace placesim {
namespace {

constexpr double ms = 1e-3;

// GPipe on 2 stages of one layer (f = 2 ms, b = 4 ms, a 3 ms optimizer step), 2 micro-batches,
// 2 replicas, on a mesh of 10 GB/s links of their own: 10 MB activations take 1 ms, a layer's
// 10 MB of gradients 1 ms (a 2-rank ring all-reduce, 2 steps of 5 MB). By hand, per replica:
// stage 0 F0 0-2, F1 2-4; stage 1 F0 3-5, F1 5-7, B0 7-11, B1 11-15; stage 0 B0 12-16, B1 16-20,
// its all-reduce 20-21 and its optimizer step 21-24; stage 1's reduction 15-16, its step 16-19.
// Stage 0's GPUs are the slowest: compute 4 x 2 + 2 x 4 = 12 ms; idle 4-12 waiting for the
// first gradient, which stage 1's B0 computes until 11 (bubble, 7 ms) and sends 11-12
// (pipeline, 1 ms); the all-reduce 20-21 (data-parallel, 1 ms); the optimizer 3 ms. 24 ms.
TEST(PlanBreakdown, TwoStagesTwoReplicasByHand) {
  LayerModel model;
  model.name = "two layers";
  for (int l = 0; l < 2; ++l) model.layers.push_back({fmt::format("l{}", l), 2 * ms, 4 * ms, 10e6, 0, 10e6});
  for (Layer& layer : model.layers) layer.optimizer_s = 3 * ms;
  const Cluster cluster = testutil::dedicated_mesh(4, 10e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.dp = 2;
  plan.micro_batches = 2;
  plan.schedule = PipelineSchedule::GPipe;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const EngineRuns ran = run_engines(c.graph, cluster, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
  for (const EngineRun& r : ran.runs) {
    SCOPED_TRACE(r.engine);
    ASSERT_TRUE(r.schedule);
    const double tolerance = r.engine == kSimGrid ? 1e-8 : 1e-12;
    EXPECT_NEAR(r.latency, 24 * ms, tolerance);
    const TimeBreakdown b = time_breakdown(c.graph.graph, c.graph.placement, *r.schedule, r.latency);
    EXPECT_EQ(c.graph.placement[*c.graph.graph.find("d0.p0.t0.optimizer")] % 2, b.gpu % 2);  // a stage-0 GPU
    EXPECT_NEAR(b.compute, 12 * ms, tolerance);
    EXPECT_NEAR(b.bubble, 7 * ms, tolerance);
    EXPECT_NEAR(b.pipeline, 1 * ms, tolerance);
    EXPECT_NEAR(b.data_parallel, 1 * ms, tolerance);
    EXPECT_NEAR(b.optimizer, 3 * ms, tolerance);
    EXPECT_NEAR(b.tensor_parallel + b.context_parallel + b.expert + b.other_communication, 0, tolerance);
    EXPECT_NEAR(b.total(), r.latency, tolerance);
  }
}

// Tensor parallelism on 2 GPUs: 4 layers of f = 1 ms, b = 2 ms, each pass followed by a 20 MB
// all-reduce (2 ring steps of 10 MB at 10 GB/s: 2 ms) the next layer waits for: 4 x (1 + 2) +
// 4 x (2 + 2) = 28 ms, of which 12 compute and 16 exposed tensor-parallel communication.
TEST(PlanBreakdown, TensorParallelCollectivesAreExposedCommunication) {
  LayerModel model;
  model.name = "tp";
  model.tensor_parallel = 2;
  for (int l = 0; l < 4; ++l) {
    Layer layer{fmt::format("l{}", l), 1 * ms, 2 * ms, 0, 0, 0};
    layer.tp_allreduce_forward_bytes = layer.tp_allreduce_backward_bytes = 20e6;
    model.layers.push_back(layer);
  }
  const Cluster cluster = testutil::dedicated_mesh(2, 10e9);
  ParallelPlan plan;
  plan.tp = 2;
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const EngineRuns ran = run_engines(c.graph, cluster, EngineSet::of({kEvaluator, kFlow}), RunOrder::Fcfs);
  for (const EngineRun& r : ran.runs) {
    SCOPED_TRACE(r.engine);
    const TimeBreakdown b = time_breakdown(c.graph.graph, c.graph.placement, *r.schedule, r.latency);
    EXPECT_NEAR(b.compute, 12 * ms, 1e-12);
    EXPECT_NEAR(r.latency, 28 * ms, 1e-12);
    EXPECT_NEAR(b.tensor_parallel, 16 * ms, 1e-12);
    EXPECT_NEAR(b.total(), r.latency, 1e-12);
  }
}

}  // namespace
}  // namespace placesim
