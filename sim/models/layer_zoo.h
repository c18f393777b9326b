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
//  - time = FLOPs / (the GPU preset's dense fp16 tensor-core peak, GpuSpec::tensor_flops, x mfu):
//    matrix products only, at one achieved fraction of the peak (memory-bound kernels, launch
//    overheads and attention's kernels are folded into mfu). An estimate, not a measurement.
//  - tensor parallelism (t > 1): two all-reduces of the layer's output (2bsh bytes each) in the
//    forward and two in the backward, given as one of 4bsh bytes per pass (not in the times).
//  - stash per micro-batch (Korthikanti et al. 2022, "Reducing activation recomputation", table
//    2): with full recomputation the layer's input, 2bsh bytes; without it
//    sbh (10 + 24/t + 5as/(ht)), their count for GPT's layer (4h GELU feed-forward, as many key
//    and value heads as heads), applied to every model as an estimate.
//  - experts: the E feed-forwards' weights are the layer's expert_parameter_bytes, which expert
//    parallelism spreads over ep GPUs (ParallelPlan::ep); each all-to-all (dispatch and combine,
//    in each pass) sends every token's top_k copies, 2bsh top_k / t bytes per GPU (with t > 1,
//    Megatron-core's sequence parallelism for experts: a tensor rank dispatches 1/t of the tokens). With balanced
//    routing a GPU computes as many token-expert pairs at every ep, so the times do not change.
// Not modelled: imbalanced routing.
//  - output: 2bsh bytes to the next layer.
// The embedding (V h weights over t, plus the learned position table of GPT and BERT, of the
// model's maximum sequence; a lookup: no FLOPs counted) is the first layer and the output
// head (V h weights unless tied, 2bshV FLOPs forward) the last, each split over t. Their stash
// (Korthikanti et al. 4.3): the embedding's dropout mask, sbh bytes; the head's norm and
// projection inputs, 2sbh each, and its fp32 logits, 4sbV/t (with sequence parallelism the
// first three over t). With t > 1 the vocabulary-parallel embedding all-reduces its output (2bsh
// bytes, forward) and the head its input's gradient (2bsh, backward) and its cross-entropy's
// per-token maximum, sum and target logit (12bs bytes, forward).
#include <string>
#include <vector>

#include "sim/plans/layer_model.h"
#include "sim/config/options.h"

namespace placesim::models {

struct TransformerShape {
  std::string name;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, sequence = 0;
  bool gated = false;         // SwiGLU feed-forward (3 matrices) instead of GELU (2)
  bool rms_norm = false;      // RMSNorm (h weights) instead of LayerNorm (2h)
  bool tied_head = true;      // output head shares the embedding's weights
  int experts = 1, top_k = 1;  // mixture of experts: E feed-forwards, top_k used per token
  std::string description;
};

// gpt2, gpt3-175b, llama2-7b, llama2-70b, mixtral-8x7b, bert-large, transformer (the encoder
// stack of the base Transformer: its decoder's cross-attention is left out).
const std::vector<TransformerShape>& layer_zoo();
std::string layer_zoo_names();  // "gpt2, gpt3-175b, ..." for messages

struct LayerZooOptions {
  int micro_batch = 1;
  int sequence = 0;            // tokens per sequence; 0: the model's
  std::string gpu = "h100";    // a GPU preset with a tensor-core peak (v100, a100, h100)
  double mfu = 0.5;            // achieved fraction of that peak
  bool recompute = true;       // full activation recomputation
};

// The keys of a scenario's `workload:` for a zoo model (micro_batch_size, sequence, gpu, mfu,
// recompute), declared once.
OptionSchema<LayerZooOptions> layer_zoo_schema();

// Every tensor-parallel width from 1 to 64 the model can be split into.
std::vector<int> layer_zoo_widths(const std::string& model);

// The model at each tensor-parallel width in `widths` (each must divide the heads, the
// key-value heads and the feed-forward width). Throws InputError naming `source` and the field.
LayerWorkload build_layer_model(const std::string& model, const LayerZooOptions& options, const std::vector<int>& widths,
                                const std::string& source = "command line");

// Weights of the whole model, in parameters (not bytes): the published counts' check.
double layer_zoo_parameters(const TransformerShape& shape);

}  // namespace placesim::models
