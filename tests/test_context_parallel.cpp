// Context parallelism (ParallelPlan::cp, ring attention): the zoo's layers at a context width
// (1/cp of every sequence's work, activations and model FLOPs; the key-value block each rank
// passes around), and the compiled ring on a toy plan whose time is derived by hand, hidden
// behind the layer or not, on every engine and in the estimate.
#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/engines/engine.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/parallel_plan.h"
#include "tests/test_util.h"

using namespace placesim;
using namespace placesim::models;

namespace {

LayerModel zoo_at(int cp, int tp = 2) {
  LayerZooOptions o;
  o.gpu = "h100";
  o.mfu = 0.5;  // every FLOP at one rate: the times are the FLOPs'
  o.recompute = Recompute::Selective;
  o.sequence = 4096;
  o.context_parallel = cp;
  return build_layer_model("llama2-7b", o, {tp}).by_tensor_parallel.at(tp);
}

// Embedding-like, attention, head-like layers, 1 ms forward and 2 ms backward each, no
// parameters; the middle one passes `block` bytes of keys and values around its context group.
LayerModel three_layers(double block) {
  LayerModel m;
  m.name = "toy";
  m.context_parallel = 2;
  for (int i = 0; i < 3; ++i) m.layers.push_back(Layer{"l" + std::to_string(i), 1e-3, 2e-3, 0, 0, 0});
  m.layers[1].context_exchange_bytes = block;
  return m;
}

double estimate_of(const CompiledPlan& c, const Cluster& cluster) {
  const EngineRuns ran = run_engines(c.graph, cluster, EngineSet::of({kEstimate}), RunOrder::Fcfs);
  return *ran.latency(kEstimate);
}

}  // namespace

TEST(ContextParallel, EachRankDoesItsPartOfEverySequence) {
  // Every FLOP at one rate (mfu): a layer's forward is 2 (s/cp) W + 4 (s/cp) s h FLOPs over tp,
  // exactly half at cp 2 (the attention's 4 b s^2 h split over the ranks, causal or not, is
  // Megatron's count); so are its stash, its output, its tensor-parallel all-reduces and the
  // model FLOPs each rank is credited; the weights are whole on every rank.
  const LayerModel one = zoo_at(1), two = zoo_at(2);
  ASSERT_EQ(one.layers.size(), two.layers.size());
  EXPECT_EQ(two.context_parallel, 2);
  EXPECT_EQ(two.sequence, 4096);
  EXPECT_DOUBLE_EQ(two.model_flops, one.model_flops / 2);
  for (std::size_t l = 0; l < one.layers.size(); ++l) {
    const Layer &a = one.layers[l], &b = two.layers[l];
    SCOPED_TRACE(a.name);
    if (a.block) {
      EXPECT_NEAR(b.forward_s, a.forward_s / 2, 1e-12 * a.forward_s);
    }
    EXPECT_DOUBLE_EQ(b.parameter_bytes, a.parameter_bytes);
    EXPECT_DOUBLE_EQ(b.stashed_bytes, a.stashed_bytes / 2);
    EXPECT_DOUBLE_EQ(b.output_bytes, a.output_bytes / 2);
    EXPECT_DOUBLE_EQ(b.tp_allreduce_forward_bytes, a.tp_allreduce_forward_bytes / 2);
    EXPECT_EQ(a.context_exchange_bytes, 0);
    // Keys and values of 2048 tokens, 32 key-value heads of 128 over tp 2, 2 bytes each.
    EXPECT_DOUBLE_EQ(b.context_exchange_bytes, a.block ? 2.0 * 2 * 2048 * 16 * 128 : 0.0);
  }
}

TEST(ContextParallel, TheWidthMustFitTheSequenceAndFusedAttention) {
  LayerZooOptions o;
  o.gpu = "h100";
  o.sequence = 4096;
  o.context_parallel = 3;  // 6 does not divide 4096
  EXPECT_THROW(build_layer_model("llama2-7b", o, {1}), InputError);
  o.context_parallel = 2;
  o.fused_attention = false;
  EXPECT_THROW(build_layer_model("llama2-7b", o, {1}), InputError);
  // A plan's cp must be the model's, and divide dp (which counts the context ranks).
  const LayerModel model = three_layers(1e6);
  const Cluster cluster = testutil::dedicated_mesh(4, 1e9);
  ParallelPlan plan;
  plan.dp = 2;
  plan.cp = 1;
  EXPECT_NE(plan_problem(model, plan, cluster), "");
  plan.cp = 2;
  EXPECT_EQ(plan_problem(model, plan, cluster), "");
  plan.dp = 3;
  EXPECT_NE(plan_problem(model, plan, cluster), "");
  // Sequence parallelism splits a GPU's part of the sequence: 12 tokens over cp 2 are 6 per GPU,
  // which tp 4 does not divide (tp 2 does).
  LayerModel twelve = three_layers(1e6);
  twelve.sequence = 12;
  twelve.tensor_parallel = 4;
  ParallelPlan sp;
  sp.tp = 4;
  sp.dp = sp.cp = 2;
  sp.sequence_parallel = true;
  const Cluster eight = testutil::dedicated_mesh(8, 1e9);
  EXPECT_NE(plan_problem(twelve, sp, eight).find("the 6 tokens"), std::string::npos) << plan_problem(twelve, sp, eight);
  twelve.tensor_parallel = sp.tp = 2;
  EXPECT_EQ(plan_problem(twelve, sp, eight), "");
}

TEST(ContextParallel, TheRingHidesBehindTheLayerUntilItOutlastsIt) {
  // Two GPUs (cp 2, one micro-batch) joined at 1 GB/s, no latency. The middle layer's forward
  // ring is one step of the block (B / 1 GB/s) from the end of the first layer's forward, beside
  // its own 1 ms; the backward's carries the gradients too (2B), from the end of the last layer's
  // backward, beside its 2 ms. Iteration = 1 + max(1, B/bw) + 1 + 2 + max(2, 2B/bw) + 2 ms:
  // 9 ms while the ring hides (B = 0.5 MB: 0.5 and 1 ms), 15 ms once it outlasts the layer
  // (B = 3 MB: 3 and 6 ms). The estimate charges the same excess.
  const Cluster cluster = testutil::dedicated_mesh(2, 1e9);
  ParallelPlan plan;
  plan.dp = 2;
  plan.cp = 2;
  for (const auto& [block, expected] : {std::pair{0.5e6, 9e-3}, std::pair{3e6, 15e-3}}) {
    SCOPED_TRACE(block);
    const CompiledPlan c = compile_plan(three_layers(block), plan, cluster);
    const testutil::EngineTimes t = testutil::run_all_engines(c.graph, cluster);
    for (double v : {t.evaluator, t.flow, t.simgrid}) EXPECT_NEAR(v, expected, 1e-9);
    EXPECT_NEAR(estimate_of(c, cluster), expected, 1e-9);
  }
}

TEST(ContextParallel, ContextRanksSitNextToTheTensorRanks) {
  // tp 2, pp 2, dp 2 x cp 2 in tp-pp-dp order: replica cp*j + c, stage p, rank t on GPU
  // ((j*pp + p)*cp + c)*tp + t; replicas 0 and 1 (a context group) on GPUs 0-1 and 2-3 at stage 0.
  const std::vector<DeviceId> gpus = gpus_in_order(2, 2, 4, GpuOrder::TpPpDp, 2);
  ASSERT_EQ(gpus.size(), 16u);
  EXPECT_EQ(gpus[0], 0);   // d0 p0 t0
  EXPECT_EQ(gpus[2], 4);   // d0 p1 t0
  EXPECT_EQ(gpus[4], 2);   // d1 p0 t0
  EXPECT_EQ(gpus[6], 6);   // d1 p1 t0
  EXPECT_EQ(gpus[8], 8);   // d2 p0 t0
  EXPECT_EQ(gpus[15], 15);  // d3 p1 t1
}
