// The kernel model (sim/models/kernels.h) on hand-made GPUs whose answers are derived by hand: a
// GEMM's tiles and waves, a memory-bound kernel, fused attention; the layer-level models' times
// built from them (recomputation, precision); the optimizer step and Megatron's distributed
// optimizer on a 2-stage plan on every engine; and the GPU presets' figures.
#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/models/gpu.h"
#include "sim/models/kernels.h"
#include "sim/models/layer_zoo.h"
#include "sim/models/onnx_import.h"
#include "sim/models/zoo.h"
#include "sim/plans/parallel_plan.h"
#include "tests/test_util.h"

using namespace placesim;
using namespace placesim::models;

namespace {

// 100 SMs, 100 TFLOP/s fp16 (1 TFLOP/s per SM), 1 TB/s; half of each reached, 1 us a kernel.
GpuSpec toy_gpu() {
  GpuSpec g;
  g.name = g.model = "toy";
  g.dense_flops[static_cast<std::size_t>(Precision::Fp16)] = 100e12;
  g.dense_flops[static_cast<std::size_t>(Precision::Fp8)] = 200e12;
  g.sms = 100;
  g.memory_bandwidth = 1e12;
  g.gemm_efficiency = 0.5;
  g.memory_efficiency = 0.5;
  g.attention_forward_efficiency = 0.4;
  g.attention_backward_efficiency = 0.25;
  g.kernel_gap_s = 1e-6;
  return g;
}

}  // namespace

TEST(Kernels, AGemmRunsInWavesOfTiles) {
  const GpuSpec g = toy_gpu();
  // 1024 x 1024 x 1000: 256 x 128 tiles are 4 x 8 = 32 (one wave of 100 SMs, 2 x 256 x 128 x
  // 1000 FLOPs each at 0.5 TFLOP/s: 131.072 us); 128 x 128 tiles are 64, also one wave, of half
  // the work: 65.536 us, so they are chosen. Memory: (3 x 1024 x 1000 + 24,576) x 2 bytes at
  // 0.5 TB/s = 12.4 us, less. Plus the 1 us gap.
  GemmTiling t = gemm_tiling(g, 1024, 1024);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.waves, 1);
  KernelCost c = gemm(g, Precision::Fp16, 1024, 1024, 1000);
  EXPECT_NEAR(c.seconds, 65.536e-6 + 1e-6, 1e-12);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 1024 * 1024 * 1000);
  // Wave quantization: 2048 x 2048 (x 1000) is 256 tiles of 128 x 128, 3 waves (the third 56 of
  // 100): 3 x 65.536 = 196.608 us, where its FLOPs at the achieved 50 TFLOP/s take 167.8 us; 256 x
  // 128 tiles are 128, 2 waves of twice the work (262.1 us), so 128 x 128 it is.
  t = gemm_tiling(g, 2048, 2048);
  EXPECT_EQ(t.tile_m, 128);
  EXPECT_EQ(t.tile_n, 128);
  EXPECT_EQ(t.waves, 3);
  c = gemm(g, Precision::Fp16, 2048, 2048, 1000);
  EXPECT_NEAR(c.seconds, 196.608e-6 + 1e-6, 1e-12);
  // At fp8 the peak doubles: half the time.
  EXPECT_NEAR(gemm(g, Precision::Fp8, 2048, 2048, 1000).seconds, 98.304e-6 + 1e-6, 1e-12);
  // 4096 x 2048: 256 x 128 tiles are 16 x 16 = 256 (3 waves), 128 x 128 are 512 (6 waves of half
  // the work): a tie, the first listed (256 x 128) kept.
  t = gemm_tiling(g, 4096, 2048);
  EXPECT_EQ(t.tile_m, 256);
  EXPECT_EQ(t.waves, 3);
  // A thin product is memory-bound: 65536 x 64 x 64: tiles 512 x 1 of 128 x 128 (64 used of
  // 128 columns), 6 waves: 6 x 2 x 128 x 128 x 64 / 0.5e12 = 25.2 us; memory (65536 x 64 x 2 +
  // 64 x 64) x 2 bytes = 16.8 MB at 0.5 TB/s = 33.6 us.
  c = gemm(g, Precision::Fp16, 65536, 64, 64);
  EXPECT_NEAR(c.seconds, (65536.0 * 64 * 2 + 64 * 64) * 2 / 0.5e12 + 1e-6, 1e-12);
  // The backward: two products, (m, k, n) and (k, n, m).
  const KernelCost b = gemm_backward(g, Precision::Fp16, 1024, 1024, 1000);
  EXPECT_EQ(b.kernels, 2);
  EXPECT_DOUBLE_EQ(b.flops, 4.0 * 1024 * 1024 * 1000);
}

TEST(Kernels, MemoryBoundKernelsAndFusedAttention) {
  const GpuSpec g = toy_gpu();
  // 1 GB at 0.5 TB/s: 2 ms, plus the gap.
  EXPECT_NEAR(memory_bound(g, 1e9).seconds, 2e-3 + 1e-6, 1e-12);
  // Attention over 16 heads of 2048 tokens, head dim 128, causal: 4 x 16 x 2048^2 x 128 / 2 =
  // 17.18 GFLOP at 40% of 100 TFLOP/s = 429.5 us; the backward 2.5x the FLOPs at 25%: 1,718 us.
  const double forward = 4.0 * 16 * 2048 * 2048 * 128 / 2;
  EXPECT_NEAR(fused_attention(g, Precision::Fp16, 16, 2048, 128, true, false).seconds, forward / 40e12 + 1e-6, 1e-12);
  EXPECT_NEAR(fused_attention(g, Precision::Fp16, 16, 2048, 128, true, true).seconds, 2.5 * forward / 25e12 + 1e-6, 1e-12);
  EXPECT_DOUBLE_EQ(fused_attention(g, Precision::Fp16, 16, 2048, 128, false, false).flops, 2 * forward);
}

TEST(Kernels, TheLayersTimesComeFromTheirKernels) {
  // A GPT layer of h 1024, 8 heads, s 512, b 2 on an A100 at fp16, tp 1. The forward's FLOPs,
  // counted kernel by kernel, are the direct count 2bs x 12h^2 + 4bs^2h; selective recomputation
  // adds exactly the attention core's forward to the backward (its two batched products, softmax
  // and dropout), full recomputation the whole forward.
  TransformerShape sh;
  sh.name = "toy-gpt";
  sh.layers = 2;
  sh.hidden = 1024;
  sh.heads = sh.kv_heads = 8;
  sh.ffn = 4096;
  sh.vocab = 1000;
  sh.sequence = 512;
  LayerZooOptions o;
  o.gpu = "a100";
  o.micro_batch = 2;
  o.precision = Precision::Fp16;
  o.fused_attention = false;
  o.recompute = Recompute::None;
  const GpuSpec a100 = *find_gpu_preset("a100");
  const Layer none = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1];
  o.recompute = Recompute::Selective;
  const Layer selective = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1];
  o.recompute = Recompute::Full;
  const Layer full = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1];
  const double b = 2, s = 512, d = 128, heads = 8, scores = b * heads * s * s;
  const double core = gemm(a100, Precision::Fp16, s, s, d, b * heads).seconds + memory_bound(a100, scores * 4).seconds +
                      memory_bound(a100, scores * 5).seconds + gemm(a100, Precision::Fp16, s, d, s, b * heads).seconds;
  EXPECT_NEAR(selective.backward_s - none.backward_s, core, 1e-12);
  EXPECT_NEAR(full.backward_s - none.backward_s, none.forward_s, 1e-12);
  EXPECT_DOUBLE_EQ(none.forward_s, full.forward_s);
  // The forward is at least its matrix products at the peak, and no kernel is free.
  const double flops = 2 * b * s * 12 * 1024.0 * 1024 + 4 * b * s * s * 1024;
  EXPECT_GT(none.forward_s, flops / 312e12);
  EXPECT_LT(none.forward_s, flops / 312e12 * 3);
  // The optimizer: 34 bytes per parameter at the memory rate: (12 h^2 + 4h) parameters.
  EXPECT_NEAR(none.optimizer_s, memory_bound(a100, (12.0 * 1024 * 1024 + 4 * 1024) * 34).seconds, 1e-12);
  // Model FLOPs of the micro-batch: 3 x (2 layers x forward + the head's 2bshV).
  const LayerModel m = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1);
  EXPECT_DOUBLE_EQ(m.model_flops, 3 * (2 * flops + 2 * b * s * 1024 * 1000));
  // Counting causal attention half: 3 x 2 layers x 2bs^2h less; a bidirectional model's the same.
  EXPECT_DOUBLE_EQ(m.causal_model_flops, m.model_flops - 3 * 2 * 2 * b * s * s * 1024);
  TransformerShape encoder = sh;
  encoder.causal = false;
  const LayerModel bidirectional = build_layer_model(encoder, o, {1}).by_tensor_parallel.at(1);
  EXPECT_DOUBLE_EQ(bidirectional.causal_model_flops, bidirectional.model_flops);
  // Fused, a bidirectional layer's attention is the whole s x s product, a causal one's half.
  o.fused_attention = true;
  const double causal_attention = fused_attention(a100, Precision::Fp16, b * heads, s, d, true, false).seconds;
  const double whole_attention = fused_attention(a100, Precision::Fp16, b * heads, s, d, false, false).seconds;
  EXPECT_NEAR(build_layer_model(encoder, o, {1}).by_tensor_parallel.at(1).layers[1].forward_s -
                  build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1].forward_s,
              whole_attention - causal_attention, 1e-12);
  EXPECT_FALSE(find_layer_zoo("bert-large")->causal);
  EXPECT_TRUE(find_layer_zoo("llama2-7b")->causal);
  o.fused_attention = false;
  // fp8: the products at twice the peak, with casts: an H100 layer's forward is faster than at
  // bf16 but not twice as fast.
  o.gpu = "h100";
  o.precision = Precision::Bf16;
  const double bf16 = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1].forward_s;
  o.precision = Precision::Fp8;
  const double fp8 = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers[1].forward_s;
  EXPECT_LT(fp8, bf16);
  EXPECT_GT(fp8, bf16 / 2);
  // The head stays 16-bit in an fp8 run (Megatron's output layer is not Transformer Engine's).
  o.precision = Precision::Bf16;
  const double head_bf16 = build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers.back().forward_s;
  o.precision = Precision::Fp8;
  EXPECT_DOUBLE_EQ(build_layer_model(sh, o, {1}).by_tensor_parallel.at(1).layers.back().forward_s, head_bf16);
}

TEST(Kernels, TheOptimizerStepEndsTheIterationOnEveryEngine) {
  // Two stages of one layer each (1 ms forward, 2 ms backward), one micro-batch, on a mesh with
  // free transfers: the iteration is 1 + 1 + 2 + 2 = 6 ms, and the optimizer's 0.5 ms per layer
  // after each stage's last backward ends it at 6.5 ms (stage 0 ends last). With dp 2 and ZeRO 1
  // (Megatron's distributed optimizer) each replica updates half: 6.25 ms (the layers hold no
  // parameter bytes here, so there is nothing to reduce).
  LayerModel model;
  model.name = "toy";
  for (int i = 0; i < 2; ++i) {
    Layer l{"l", 1e-3, 2e-3, 0, 0, 0};
    l.optimizer_s = 0.5e-3;
    model.layers.push_back(l);
  }
  const Cluster cluster = testutil::dedicated_mesh(4, 1e15, 0, 80e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.stage_starts = {0, 1};
  const CompiledPlan c = compile_plan(model, plan, cluster);
  const testutil::EngineTimes t = testutil::run_all_engines(c.graph, cluster);
  for (double v : {t.evaluator, t.flow, t.simgrid}) EXPECT_NEAR(v, 6.5e-3, 1e-9);
  plan.dp = 2;
  plan.zero = 1;
  const CompiledPlan z = compile_plan(model, plan, cluster);
  const testutil::EngineTimes tz = testutil::run_all_engines(z.graph, cluster);
  for (double v : {tz.evaluator, tz.flow, tz.simgrid}) EXPECT_NEAR(v, 6.25e-3, 1e-6);
}

TEST(Kernels, TheDistributedOptimizersGathersOverlapTheNextForward) {
  // One stage of two layers (1 ms forward, 2 ms backward, 2 MB of parameters, 0.5 ms of
  // optimizer step each), dp 2, ZeRO 1, one micro-batch, two GPUs at 1 GB/s: each reduce-scatter
  // and all-gather is one ring step of 1 MB, 1 ms. Forwards 0-2, backwards 2-6; the reduce-scatters
  // at 4-5 (layer 1) and 6-7 (layer 0). Gathers after the update's inputs (Megatron without
  // --overlap-param-gather): 7-8, 8-9, then the step (1 ms / dp 2): 9.5 ms. Overlapped with the
  // (next) forward: layer 0's gather 0-1 before its forward, layer 1's 1-2, forwards 1-2 and 2-3,
  // backwards 3-7, reduce-scatters 5-6 and 7-8, the step 8-8.5 ms.
  LayerModel model;
  model.name = "toy";
  for (int i = 0; i < 2; ++i) {
    Layer l{"l", 1e-3, 2e-3, 2e6, 0, 0};
    l.optimizer_s = 0.5e-3;
    model.layers.push_back(l);
  }
  const Cluster cluster = testutil::dedicated_mesh(2, 1e9, 0, 80e9);
  ParallelPlan plan;
  plan.dp = 2;
  plan.zero = 1;
  for (const auto& [overlap, expected] : {std::pair{false, 9.5e-3}, std::pair{true, 8.5e-3}}) {
    SCOPED_TRACE(overlap);
    plan.overlap_param_gather = overlap;
    const CompiledPlan c = compile_plan(model, plan, cluster);
    const testutil::EngineTimes t = testutil::run_all_engines(c.graph, cluster);
    for (double v : {t.evaluator, t.flow, t.simgrid}) EXPECT_NEAR(v, expected, 1e-9);
  }
}

TEST(Kernels, GpuPresetsHaveOneMeaningEach) {
  // A100-SXM4-80GB (datasheet): 19.5 FP32, 156 TF32, 312 FP16/BF16 dense; 2,039 GB/s; 80 GB;
  // 108 SMs. H100-SXM5-80GB: 67, 494.7, 989.4, 1978.9 (FP8); 3.35 TB/s; 132 SMs.
  const GpuSpec a100 = *find_gpu_preset("a100"), h100 = *find_gpu_preset("h100");
  EXPECT_EQ(a100.model, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(a100.dense(Precision::Fp32), 19.5e12);
  EXPECT_DOUBLE_EQ(a100.dense(Precision::Bf16), 312e12);
  EXPECT_FALSE(a100.has(Precision::Fp8));
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth, 2039e9);
  EXPECT_EQ(a100.sms, 108);
  EXPECT_EQ(a100.default_precision(), Precision::Bf16);
  EXPECT_DOUBLE_EQ(h100.dense(Precision::Fp8), 1978.9e12);
  EXPECT_EQ(h100.sms, 132);
  EXPECT_EQ(find_gpu_preset("v100")->default_precision(), Precision::Fp16);
  EXPECT_EQ(find_gpu_preset("k80")->default_precision(), Precision::Fp32);
  // The roofline of imported graphs runs at a precision's peak only when asked.
  const GpuSpec bf16 = gpu_from_yaml(YAML::Load("{preset: a100, precision: bf16}"), "g.yaml", "gpu");
  EXPECT_DOUBLE_EQ(bf16.peak_flops, 312e12);
  EXPECT_DOUBLE_EQ(find_gpu_preset("a100")->peak_flops, 19.5e12);
  EXPECT_THROW(gpu_from_yaml(YAML::Load("{preset: a100, precision: fp8}"), "g.yaml", "gpu"), InputError);
  // A zoo graph's and an ONNX import's `precision` key is the same rate, given once.
  const ModelConfig zoo = model_config_from_yaml(YAML::Load("{model: gpt2, layers: 1, gpu: a100, precision: bf16}"), "s.yaml", "graph");
  EXPECT_DOUBLE_EQ(zoo.gpu.peak_flops, 312e12);
  EXPECT_THROW(model_config_from_yaml(YAML::Load("{model: gpt2, gpu: {preset: a100, precision: bf16}, precision: bf16}"), "s.yaml", "graph"),
               InputError);
  EXPECT_THROW(model_config_from_yaml(YAML::Load("{model: gpt2, gpu: k80, precision: bf16}"), "s.yaml", "graph"), InputError);
  EXPECT_THROW(model_config_from_yaml(YAML::Load("{model: gpt2, gpu: {preset: h100, flops: 10TFLOP/s}, precision: bf16}"), "s.yaml", "graph"),
               InputError);
  const OnnxImportOptions onnx =
      onnx_import_schema().parse(YamlFields(YAML::Load("{onnx: m.onnx, gpu: h100, precision: fp8}"), "s.yaml", "graph"));
  EXPECT_DOUBLE_EQ(onnx.gpu.peak_flops, find_gpu_preset("h100")->dense(Precision::Fp8));
  EXPECT_DOUBLE_EQ(onnx_import_schema().parse(YamlFields(YAML::Load("{onnx: m.onnx, gpu: h100}"), "s.yaml", "graph")).gpu.peak_flops, 67e12);
  for (const auto& name : kernel_model_gpu_names()) {
    const GpuSpec g = *find_gpu_preset(name);
    EXPECT_GT(g.gemm_efficiency, 0) << name;
    EXPECT_FALSE(g.efficiency_source.empty()) << name;
  }
}
