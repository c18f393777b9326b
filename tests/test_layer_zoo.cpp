// The model zoo's layer-level models (sim/models/layer_zoo.h): parameter counts against the
// published ones, times and stashes derived by hand, tensor-parallel splits, refusals, and a plan
// of one on every engine.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

#include "sim/config/yaml_fields.h"
#include "sim/core/errors.h"
#include "sim/core/execution_graph.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/parallel_plan.h"
#include "tests/test_util.h"

using namespace placesim;
using namespace placesim::models;

namespace {

const TransformerShape& find_shape(const std::string& name) {
  for (const auto& s : layer_zoo())
    if (s.name == name) return s;
  throw std::runtime_error(name);
}

}  // namespace

TEST(LayerZoo, ParameterCountsMatchThePublishedOnes) {
  // Published: GPT-2 124.4 M (with biases; ours leaves them out), GPT-3 175 B, Llama 2 6.74 B and
  // 68.98 B, Mixtral 8x7B 46.7 B, BERT-large 335 M (BertModel; 340 M quoted).
  const std::pair<const char*, double> published[] = {{"gpt2", 124.44e6},    {"gpt3-175b", 175e9},
                                                      {"llama2-7b", 6.738e9}, {"llama2-70b", 68.98e9},
                                                      {"mixtral-8x7b", 46.7e9}, {"bert-large", 335e6}};
  for (auto [name, count] : published) EXPECT_NEAR(layer_zoo_parameters(find_shape(name)), count, 0.01 * count) << name;
  // GPT-2 by hand: 12 x (12 x 768^2 + 4 x 768) + 50,257 x 768 + 1,024 x 768 + 2 x 768.
  EXPECT_DOUBLE_EQ(layer_zoo_parameters(find_shape("gpt2")), 124356864.0);
}

TEST(LayerZoo, LayersCarryTheWeightsTimesAndStashesDerivedByHand) {
  // GPT-2, one sequence of 1,024 tokens on an H100 at 50% of 989.4 TFLOP/s (bf16) (--mfu, the override of
  // the kernel model). A layer's forward: 2 x 1024 x 12 x 768^2 + 4 x 1024^2 x 768 =
  // 17,716,740,096 FLOPs; backward 3x (recomputation).
  LayerZooOptions o;
  o.mfu = 0.5;
  o.fused_attention = false;  // the stash below keeps the scores
  const LayerWorkload w = build_layer_model("gpt2", o, {1, 4});
  const LayerModel& m = w.by_tensor_parallel.at(1);
  ASSERT_EQ(m.layers.size(), 14u);  // embedding, 12 layers, head
  const Layer& l = m.layers[1];
  EXPECT_NEAR(l.forward_s, 17716740096.0 / (989.4e12 * 0.5), 1e-15);
  EXPECT_NEAR(l.backward_s, 3 * l.forward_s, 1e-15);
  EXPECT_DOUBLE_EQ(l.parameter_bytes, 2 * (12.0 * 768 * 768 + 4 * 768));
  EXPECT_DOUBLE_EQ(l.stashed_bytes, 2.0 * 1024 * 768);  // the layer's input
  EXPECT_DOUBLE_EQ(l.output_bytes, 2.0 * 1024 * 768);
  EXPECT_EQ(l.tp_allreduce_forward_bytes, 0);
  // The head: 2 x 1024 x 768 x 50,257 FLOPs forward, and a backward of twice that (not recomputed).
  const Layer& head = m.layers.back();
  EXPECT_NEAR(head.forward_s, 2.0 * 1024 * 768 * 50257 / (989.4e12 * 0.5), 1e-15);
  EXPECT_NEAR(head.backward_s, 2 * head.forward_s, 1e-15);
  double bytes = 0;
  for (const Layer& layer : m.layers) bytes += layer.parameter_bytes;
  EXPECT_DOUBLE_EQ(bytes, 2 * layer_zoo_parameters(find_shape("gpt2")));
  // At width 4: a quarter of the matrices and FLOPs, the norms whole; two all-reduces of the
  // layer's output per pass.
  const Layer& l4 = w.by_tensor_parallel.at(4).layers[1];
  EXPECT_NEAR(l4.forward_s, l.forward_s / 4, 1e-15);
  EXPECT_DOUBLE_EQ(l4.parameter_bytes, 2 * (12.0 * 768 * 768 / 4 + 4 * 768));
  EXPECT_DOUBLE_EQ(l4.tp_allreduce_forward_bytes, 2 * 2.0 * 1024 * 768);
  // Without recomputation: Korthikanti et al.'s sbh (10 + 24/t + 5as/(ht)); at t = 1,
  // 1024 x 768 x (34 + 5 x 12 x 1024 / 768) = 89,653,248 bytes, and the backward is 2x.
  o.recompute = Recompute::None;
  const Layer kept = build_layer_model("gpt2", o, {1}).by_tensor_parallel.at(1).layers[1];
  EXPECT_DOUBLE_EQ(kept.stashed_bytes, 89653248.0);
  EXPECT_NEAR(kept.backward_s, 2 * kept.forward_s, 1e-15);
  // The ends (Korthikanti et al. 4.3), s = 1024, h = 768, V = 50,257: the embedding keeps its
  // dropout mask, sbh = 786,432 bytes (sbh/t with sequence parallelism); the head its norm's and
  // projection's inputs, 2sbh each, and the fp32 logits, 4sbV/t = 205,852,672 / t.
  const Layer& embedding = m.layers.front();
  EXPECT_DOUBLE_EQ(embedding.stashed_bytes, 1024.0 * 768);
  EXPECT_DOUBLE_EQ(head.stashed_bytes, 2 * 2 * 1024.0 * 768 + 4 * 1024.0 * 50257);
  EXPECT_EQ(embedding.tp_allreduce_forward_bytes, 0);
  EXPECT_EQ(head.tp_allreduce_backward_bytes, 0);
  // At width 4 the vocabulary-parallel ends add their all-reduces: the embedding's output
  // (2sbh) forward; the head's input gradient (2sbh) backward and three fp32 per token forward.
  const LayerModel& m4 = w.by_tensor_parallel.at(4);
  EXPECT_DOUBLE_EQ(m4.layers.front().tp_allreduce_forward_bytes, 2.0 * 1024 * 768);
  EXPECT_EQ(m4.layers.front().tp_allreduce_backward_bytes, 0);
  EXPECT_DOUBLE_EQ(m4.layers.back().tp_allreduce_forward_bytes, 12.0 * 1024);
  EXPECT_DOUBLE_EQ(m4.layers.back().tp_allreduce_backward_bytes, 2.0 * 1024 * 768);
  EXPECT_DOUBLE_EQ(m4.layers.back().stashed_bytes, 2 * 2 * 1024.0 * 768 + 4 * 1024.0 * 50257 / 4);
  EXPECT_DOUBLE_EQ(m4.layers.back().sequence_parallel_stashed_bytes, 2 * 2 * 1024.0 * 768 / 4 + 4 * 1024.0 * 50257 / 4);
  EXPECT_DOUBLE_EQ(m4.layers.front().sequence_parallel_stashed_bytes, 1024.0 * 768 / 4);
}

TEST(LayerZoo, MixtureOfExpertsHoldsEveryExpertButComputesTopK) {
  // Mixtral: a layer holds 8 SwiGLU experts (8 x 3 x 4096 x 14336) and a router (4096 x 8), and a
  // token runs 2 of them: forward 2bs (41,943,040 attention + 2 x 176,160,768 + 32,768) + 4bs^2h.
  LayerZooOptions o;
  o.sequence = 1024;
  o.mfu = 0.5;
  const Layer l = build_layer_model("mixtral-8x7b", o, {1}).by_tensor_parallel.at(1).layers[1];
  const double attention = 4096.0 * 4096 * (2 + 2.0 * 8 / 32), expert = 3.0 * 4096 * 14336;
  EXPECT_DOUBLE_EQ(l.parameter_bytes, 2 * (attention + 8 * expert + 2 * 4096 + 4096 * 8));
  const double flops = 2.0 * 1024 * (attention + 2 * expert + 4096 * 8) + 4.0 * 1024 * 1024 * 4096;
  EXPECT_NEAR(l.forward_s, flops / (989.4e12 * 0.5), 1e-15);
  // The experts are what expert parallelism spreads; an all-to-all sends each token's 2 copies
  // of its 4096 fp16 values: 2 x 1024 x 4096 x 2 bytes.
  EXPECT_DOUBLE_EQ(l.expert_parameter_bytes, 2 * 8 * expert);
  EXPECT_DOUBLE_EQ(l.expert_alltoall_bytes, 2.0 * 1024 * 4096 * 2);
  const Layer dense = build_layer_model("llama2-7b", o, {1}).by_tensor_parallel.at(1).layers[1];
  EXPECT_EQ(dense.expert_parameter_bytes, 0);
  EXPECT_EQ(dense.expert_alltoall_bytes, 0);
}

TEST(LayerZoo, GroupedQueryAndGatedLayersKeepTheirOwnStash) {
  // Korthikanti et al.'s count term by term, without recomputation, fused attention (no scores
  // kept), per sbh bytes: whole on each tensor rank, the norms' inputs (4), the QKV and first
  // feed-forward products' inputs (4), two dropout masks (2, GPT's; Llama trains without
  // dropout: none); split over t, the queries (2), keys and values (4 g/a), the projection's
  // input (2), the feed-forward's activations.
  // Llama 2 7B (g = a, SwiGLU of f = 11,008: 6f/h = 16.125; no dropout) at s = 1024, h = 4096:
  //   t = 1: 8 + 8 + 16.125 = 32.125 sbh; t = 4: 8 + 24.125 / 4 = 14.03125 sbh;
  //   sequence parallel, t = 4: 32.125 / 4 sbh. Its embedding keeps no mask.
  LayerZooOptions o;
  o.sequence = 1024;
  o.mfu = 0.5;
  o.recompute = Recompute::None;
  const double sbh = 1024.0 * 4096;
  const LayerWorkload llama = build_layer_model("llama2-7b", o, {1, 4});
  EXPECT_DOUBLE_EQ(llama.by_tensor_parallel.at(1).layers[1].stashed_bytes, 32.125 * sbh);
  EXPECT_DOUBLE_EQ(llama.by_tensor_parallel.at(4).layers[1].stashed_bytes, 14.03125 * sbh);
  EXPECT_DOUBLE_EQ(llama.by_tensor_parallel.at(4).layers[1].sequence_parallel_stashed_bytes, 32.125 / 4 * sbh);
  EXPECT_EQ(llama.by_tensor_parallel.at(1).layers.front().stashed_bytes, 0);
  // Mixtral (8 key-value heads of 32: 4 g/a = 1; SwiGLU of 14,336 for each of 2 experts a token
  // runs: 2 x 6 x 3.5 = 42): 8 + 4 + 1 + 42 = 55 sbh at t = 1.
  EXPECT_DOUBLE_EQ(build_layer_model("mixtral-8x7b", o, {1}).by_tensor_parallel.at(1).layers[1].stashed_bytes, 55 * sbh);
  // GPT's layer keeps their 34 sbh (g = a, a GELU feed-forward of 4h: 4 x 4 = 16), h = 768.
  EXPECT_DOUBLE_EQ(build_layer_model("gpt2", o, {1}).by_tensor_parallel.at(1).layers[1].stashed_bytes, 34 * 1024.0 * 768);
  // A model file's `dropout: true` gives a Llama back its masks (and their kernels): 34.125 sbh,
  // and a forward that writes them is slower.
  const char* dims = "family: llama\nlayers: 2\nhidden: 4096\nheads: 32\nffn_hidden: 11008\nvocab: 32000\nsequence: 1024\n";
  o.mfu = 0;
  const Layer without = build_layer_model(model_from_yaml(YAML::Load(dims), "m.yaml"), o, {1}).by_tensor_parallel.at(1).layers[1];
  const Layer with = build_layer_model(model_from_yaml(YAML::Load(std::string(dims) + "dropout: true\n"), "m.yaml"), o, {1})
                         .by_tensor_parallel.at(1)
                         .layers[1];
  EXPECT_DOUBLE_EQ(without.stashed_bytes, 32.125 * sbh);
  EXPECT_DOUBLE_EQ(with.stashed_bytes, 34.125 * sbh);
  EXPECT_GT(with.forward_s, without.forward_s);
}

TEST(LayerZoo, RefusesWhatItCannotBuild) {
  LayerZooOptions o;
  try {
    build_layer_model("gpt2", o, {5});
    FAIL() << "a width of 5 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "tp");
    EXPECT_NE(e.reason().find("12 heads"), std::string::npos) << e.what();
  }
  // Llama 2 70B: 64 heads split 16 ways, but not its 8 key-value heads.
  EXPECT_THROW(build_layer_model("llama2-70b", o, {16}), InputError);
  EXPECT_NO_THROW(build_layer_model("llama2-70b", o, {8}));
  EXPECT_THROW(build_layer_model("gpt5", o, {1}), InputError);
  o.sequence = 2048;  // GPT-2 learned 1,024 positions; Llama's rotary ones have no table
  EXPECT_THROW(build_layer_model("gpt2", o, {1}), InputError);
  EXPECT_NO_THROW(build_layer_model("llama2-7b", o, {1}));
  o.sequence = 0;
  o.mfu = 1.5;
  EXPECT_THROW(build_layer_model("gpt2", o, {1}), InputError);
  o.mfu = 0;
  o.gpu = "k80";  // no tensor cores: the kernel model does not time it
  EXPECT_THROW(build_layer_model("gpt2", o, {1}), InputError);
  o.gpu = "v100";
  o.precision = Precision::Bf16;  // Volta has no bf16
  try {
    build_layer_model("gpt2", o, {1});
    FAIL() << "bf16 on a V100 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "precision");
    EXPECT_NE(e.reason().find("fp32, fp16"), std::string::npos) << e.what();
  }
}

TEST(LayerZoo, APlanOfLlamaRunsOnEveryEngine) {
  // Llama 2 7B, 512 tokens, tp 2 x pp 2 x dp 2 on 8 GPUs of a mesh: the graph compiles, fits in
  // 80 GB, every engine runs it, and the flow engine and SimGrid agree and are never faster than
  // the contention-free evaluator (same FCFS order on the GPUs).
  LayerZooOptions o;
  o.sequence = 512;
  const LayerWorkload w = build_layer_model("llama2-7b", o, {2});
  const Cluster cluster = testutil::dedicated_mesh(8, 50e9, 1e-6, 80e9);
  ParallelPlan plan;
  plan.tp = plan.pp = plan.dp = 2;
  plan.micro_batches = 4;
  const CompiledPlan c = compile_plan(w.by_tensor_parallel.at(2), plan, cluster);
  EXPECT_EQ(c.infeasible, "");
  const testutil::EngineTimes r = testutil::run_all_engines(c.graph, cluster);
  EXPECT_GT(r.evaluator, 0);
  EXPECT_GE(r.flow, r.evaluator * (1 - 1e-9));
  EXPECT_NEAR(r.simgrid, r.flow, 1e-6 * r.flow);
}

// Megatron-LM's gradients at each precision, unless the model says otherwise (a scenario's
// workload.main_gradients, plan's --main-gradients).
TEST(LayerZoo, MainGradientsFollowMegatronAtThePrecision) {
  using placesim::MainGradients;
  const auto gradients = [](placesim::models::LayerZooOptions o) {
    return placesim::models::build_layer_model("gpt2", o, {1}).by_tensor_parallel.at(1).main_gradients;
  };
  placesim::models::LayerZooOptions o;
  o.gpu = "a100";
  EXPECT_EQ(gradients(o), MainGradients::Fp32);  // the A100's default, bf16
  o.precision = placesim::models::Precision::Fp16;
  EXPECT_EQ(gradients(o), MainGradients::Fp32Copy);
  o.precision = placesim::models::Precision::Fp8;
  o.gpu = "h100";
  EXPECT_EQ(gradients(o), MainGradients::Fp32);
  o.main_gradients = MainGradients::AsParameters;
  EXPECT_EQ(gradients(o), MainGradients::AsParameters);
  const LayerZooOptions parsed = layer_zoo_schema().parse(YamlFields(YAML::Load("{main_gradients: fp32_copy}"), "s.yaml", "workload"));
  EXPECT_EQ(parsed.main_gradients, MainGradients::Fp32Copy);
  EXPECT_THROW(layer_zoo_schema().parse(YamlFields(YAML::Load("{main_gradients: fp64}"), "s.yaml", "workload")), InputError);
}

namespace placesim {
namespace {

TEST(LayerZoo, SelectiveRecomputationUnderFusedAttentionSaysItIsNone) {
  // Fused attention recomputes attention's core in its backward and stores none of it: selective
  // recomputation has nothing left to save, and the workload says so, where it is not so unfused.
  std::string out;
  const auto dir = testutil::fresh_temp_dir("recompute-note");
  std::ofstream(dir / "c.yaml") << "cluster: {preset: dgx-h100, servers: 1}\n";
  const std::string base = "plan --model llama2-7b --tp 8 --engine evaluator --cluster " + (dir / "c.yaml").string();
  ASSERT_EQ(testutil::run_cli(base + " --recompute selective", out), 0) << out;
  EXPECT_NE(out.find("recompute selective (as none: fused attention already recomputes attention's core"), std::string::npos) << out;
  ASSERT_EQ(testutil::run_cli(base + " --recompute selective --attention unfused", out), 0) << out;
  EXPECT_EQ(out.find("(as none"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace placesim
