#pragma once
// Layer-level models of the model zoo: transformers as a sequence of layers with
// forward and backward times per micro-batch, per device of a tensor-parallel group, from their
// architecture -- what parallel plans (sim/plans/parallel_plan.h) split into stages, tensor-parallel
// groups and replicas when no measured per-layer workload exists.
//
// Per transformer layer of hidden size h, a heads (g of them for keys and values: grouped-query
// attention), feed-forward width f, on a micro-batch of b sequences of s tokens, tensor-parallel
// width t (Megatron's split: attention heads and the feed-forward's columns/rows over t):
//  - weights: attention h^2 (2 + 2g/a) (Q and O, then K and V), feed-forward 2hf, or 3hf when
//    gated (SwiGLU), times E experts for a mixture of experts (plus a router of hE); norms 2h
//    (RMSNorm) or 4h (LayerNorm); divided by t except the norms and the router; 2 bytes each
//    (fp16/bf16). Biases are left out (under 0.1% of the weights).
//  - forward FLOPs: 2bs x (the matrix weights a token uses: attention, and for experts top_k of
//    them) + 4bs^2 h (scores and their weighted sum, causal or not: Megatron's count), over t;
//    backward twice the forward, plus the forward again with full recomputation (not for the
//    head, which is not recomputed).
//  - time: the layer's kernels one after another on the kernel model (sim/models/kernels.h):
//    its matrix products (QKV, attention's two batched products unless fused, the projection,
//    the feed-forward's), fused attention, and the memory-bound kernels (norms, bias-dropout-adds,
//    the activation, softmax and dropout of unfused attention, rotary embeddings, fp8 casts);
//    the backward: each product's two gradient products, the memory-bound kernels' backward
//    (about 1.5x their bytes), plus the recomputation (the attention core, or the whole forward).
//    `mfu` instead: the FLOPs at that fraction of the peak (the old assumption, as an override).
//  - optimizer step (Layer::optimizer_s): mixed-precision Adam over the layer's weights on the
//    GPU, memory-bound: 34 bytes per parameter (fp32 master weight, gradient, two moments read;
//    weight and moments written, the 16-bit copy written, the gradient read once more for the
//    norm clipping).
//  - tensor parallelism (t > 1): two all-reduces of the layer's output (2bsh bytes each) in the
//    forward and two in the backward, given as one of 4bsh bytes per pass (not in the times).
//  - stash per micro-batch (Korthikanti et al. 2022, "Reducing activation recomputation", table
//    2): with full recomputation the layer's input, 2bsh bytes; without it their count term by
//    term, sbh (10 + (4 + 4g/a + 4k f/h)/t + 5as/(ht)) for k top_k experts (k = 1 without) and
//    6k f/h in place of 4k f/h when gated: for GPT's layer (g = a, f = 4h) their 10 + 24/t;
//    without dropout (TransformerShape::dropout) 8 in place of 10 and 2as/(ht) of 5as/(ht).
//  - experts: the E feed-forwards' weights are the layer's expert_parameter_bytes, which expert
//    parallelism spreads over ep GPUs (ParallelPlan::ep); each all-to-all (dispatch and combine,
//    in each pass) sends every token's top_k copies, 2bsh top_k / t bytes per GPU (with t > 1,
//    Megatron-core's sequence parallelism for experts: a tensor rank dispatches 1/t of the tokens). With balanced
//    routing a GPU computes as many token-expert pairs at every ep, so the times do not change.
// Not modelled: imbalanced routing.
//  - output: 2bsh bytes to the next layer.
//  - context parallelism (LayerZooOptions::context_parallel = c, ring attention): everything
//    above with s/c tokens in place of s, except the attention: c fused kernels of s/c queries
//    against as many keys (1/c of the causal attention; Megatron's count 4 b (s/c) s h FLOPs);
//    the keys and values of the GPU's tokens, 2 b (s/c) (g/t) (h/a) x 2 bytes, go around the
//    context ranks (Layer::context_exchange_bytes); model_flops is the GPU's 1/c share.
// The embedding (V h weights over t, plus the learned position table of GPT and BERT, of the
// model's maximum sequence; a lookup: no FLOPs counted) is the first layer and the output
// head (V h weights unless tied, 2bshV FLOPs forward) the last, each split over t. Their stash
// (Korthikanti et al. 4.3): the embedding's dropout mask, sbh bytes; the head's norm and
// projection inputs, 2sbh each, and its fp32 logits, 4sbV/t (with sequence parallelism the
// first three over t). With t > 1 the vocabulary-parallel embedding all-reduces its output (2bsh
// bytes, forward) and the head its input's gradient (2bsh, backward) and its cross-entropy's
// per-token maximum, sum and target logit (12bs bytes, forward).
#include <optional>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/models/gpu.h"
#include "sim/plans/layer_model.h"
#include "sim/config/options.h"

namespace placesim::models {

struct TransformerShape {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, sequence = 0;
  bool gated = false;         // SwiGLU feed-forward (3 matrices) instead of GELU (2)
  bool rms_norm = false;      // RMSNorm (h weights) instead of LayerNorm (2h)
  bool tied_head = true;      // output head shares the embedding's weights
  bool learned_positions = true;  // a learned table of `sequence` positions (GPT, BERT)
  bool rotary = false;            // rotary position embeddings applied to queries and keys (Llama)
  bool causal = true;             // decoders' masked attention (GPT, Llama); false: bidirectional (BERT, encoders)
  // Hidden and attention dropout (GPT, BERT); Llama and Mixtral train without it, so no mask is
  // written or kept (PyTorch's dropout at p = 0 returns its input).
  bool dropout = true;
  int experts = 1, top_k = 1;  // mixture of experts: E feed-forwards, top_k used per token
  std::string description;
};

// gpt2, gpt3-175b, llama2-7b, llama2-70b, mixtral-8x7b, bert-large, transformer (the encoder
// stack of the base Transformer: its decoder's cross-attention is left out).
const std::vector<TransformerShape>& layer_zoo();
std::string layer_zoo_names();  // "gpt2, gpt3-175b, ..." for messages
const TransformerShape* find_layer_zoo(const std::string& name);

// A model by its dimensions (`--model-file`, a scenario's `workload: {model_file: ...}`): YAML
// with `family` (gpt: LayerNorm, GELU, learned positions, tied embeddings; llama: RMSNorm, SwiGLU,
// rotary, untied, no dropout; mixtral: llama with experts 8, top_k 2), `layers`, `hidden`,
// `heads`, `kv_heads` (default heads), `ffn_hidden` (default 4 x hidden), `vocab`, `sequence`, and
// to override the family's: `experts`, `top_k`, `activation` (gelu, swiglu), `tied_embeddings`,
// `dropout`, `name`. Throws InputError naming the file and the field.
TransformerShape load_model_file(const std::string& path);
TransformerShape model_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path = "");

// What the backward recomputes (Korthikanti et al. 2022): nothing, the attention core (the
// scores, softmax, dropout and their product with the values: what is big and cheap), or the
// whole forward of every layer (the layer's input is kept).
enum class Recompute { None, Selective, Full };
inline constexpr EnumName<Recompute> kRecomputeNames[] = {
    {Recompute::None, "none"}, {Recompute::Selective, "selective"}, {Recompute::Full, "full"}};

struct LayerZooOptions {
  int micro_batch = 1;
  int sequence = 0;            // tokens per sequence; 0: the model's
  std::string gpu = "h100";    // a GPU preset the kernel model times (gpu.h: kernel_model_gpu_names)
  std::optional<Precision> precision;  // the matrix products'; unset: the GPU's default (bf16 from A100 on)
  // 0: every time from the kernel model (sim/models/kernels.h); else the old assumption, kept as
  // an explicit override: every FLOP at this fraction of the GPU's peak at the precision.
  double mfu = 0;
  Recompute recompute = Recompute::Full;
  // Megatron's sequence parallelism: the norms and dropouts run on 1/t of the tokens (their
  // times; the stash is the plan's, Layer::sequence_parallel_stashed_bytes).
  bool sequence_parallel = false;
  // Fused attention (FlashAttention: no s^2 scores in memory); false: the scores, softmax and
  // dropout as kernels of their own, as Megatron-LM ran in 2022.
  bool fused_attention = true;
  // Context parallelism (ring attention, ParallelPlan::cp): each GPU runs 1/context_parallel of
  // every sequence's tokens (twice it must divide the sequence; fused attention only), passing its
  // keys and values around the context ranks (Layer::context_exchange_bytes).
  int context_parallel = 1;
  // Where the gradients are kept and reduced (LayerModel::main_gradients); unset: Megatron-LM's at
  // the precision (bf16, fp8: fp32; fp16: fp32_copy). as_parameters is the ZeRO paper's count.
  std::optional<MainGradients> main_gradients;
};

// The keys of a scenario's `workload:` for a zoo model (micro_batch_size, sequence, gpu,
// precision, mfu, recompute, sequence_parallel, fused_attention, context_parallel, main_gradients),
// declared once.
OptionSchema<LayerZooOptions> layer_zoo_schema();

// Every tensor-parallel width from 1 to 64 the model can be split into.
std::vector<int> layer_zoo_widths(const std::string& model);
std::vector<int> layer_widths(const TransformerShape& shape);

// The model at each tensor-parallel width in `widths` (each must divide the heads, the
// key-value heads and the feed-forward width). Throws InputError naming `source` and the field.
LayerWorkload build_layer_model(const std::string& model, const LayerZooOptions& options, const std::vector<int>& widths,
                                const std::string& source = "command line");
LayerWorkload build_layer_model(const TransformerShape& shape, const LayerZooOptions& options, const std::vector<int>& widths,
                                const std::string& source = "command line");

// The GPU `name` stands for: a preset the kernel model times, or a YAML file (`{preset: a100,
// gemm_efficiency: 0.8}`, or `gpu:` of that). Throws InputError naming `source` and "gpu".
GpuSpec kernel_model_gpu(const std::string& name, const std::string& source);

// Weights of the whole model, in parameters (not bytes): the published counts' check.
double layer_zoo_parameters(const TransformerShape& shape);

// Megatron's model FLOPs of one sequence's forward and backward (no recomputation; Narayanan et
// al. 2021, appendix: 3 x the forward's matrix products, attention counted in full), which MFU is
// measured against. `causal_half`: a causal model's attention scores and context counted half, the
// products its masked attention computes (a bidirectional model's are whole either way).
double model_flops_per_sequence(const TransformerShape& shape, int sequence, bool causal_half = false);

}  // namespace placesim::models
