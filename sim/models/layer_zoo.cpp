#include "sim/models/layer_zoo.h"

#include <fmt/format.h>
#include <optional>

#include "sim/core/errors.h"
#include "sim/models/gpu.h"

namespace placesim::models {

namespace {

constexpr double kBytesPerWeight = 2;  // fp16/bf16

TransformerShape shape(std::string name, int layers, int hidden, int heads, int kv_heads, int ffn, int vocab,
                       int sequence, std::string description) {
  TransformerShape s;
  s.name = std::move(name);
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.ffn = ffn;
  s.vocab = vocab;
  s.sequence = sequence;
  s.description = std::move(description);
  return s;
}

// Learned position embeddings: GPT-2, GPT-3 and BERT have a table of `sequence` rows.
bool learned_positions(const TransformerShape& s) { return !s.rms_norm && s.name != "transformer"; }

double attention_weights(const TransformerShape& s) {
  const double h = s.hidden;
  return h * h * (2.0 + 2.0 * s.kv_heads / s.heads);
}
double ffn_weights(const TransformerShape& s) { return (s.gated ? 3.0 : 2.0) * s.hidden * s.ffn; }
double norm_weights(const TransformerShape& s) { return (s.rms_norm ? 2.0 : 4.0) * s.hidden; }

// Megatron's split over t: the heads, the key-value heads and the feed-forward's columns.
bool splits_into(const TransformerShape& s, int t) {
  return t >= 1 && s.heads % t == 0 && s.kv_heads % t == 0 && s.ffn % t == 0;
}

}  // namespace

const std::vector<TransformerShape>& layer_zoo() {
  static const std::vector<TransformerShape> zoo = [] {
    std::vector<TransformerShape> z;
    z.push_back(shape("gpt2", 12, 768, 12, 12, 3072, 50257, 1024, "GPT-2 small (124 M)"));
    z.push_back(shape("gpt3-175b", 96, 12288, 96, 96, 49152, 50257, 2048, "GPT-3 175B (Brown et al. 2020)"));
    auto llama = [](std::string name, int layers, int hidden, int heads, int kv, int ffn, std::string what) {
      TransformerShape s = shape(std::move(name), layers, hidden, heads, kv, ffn, 32000, 4096, std::move(what));
      s.gated = s.rms_norm = true;
      s.tied_head = false;
      return s;
    };
    z.push_back(llama("llama2-7b", 32, 4096, 32, 32, 11008, "Llama 2 7B"));
    z.push_back(llama("llama2-70b", 80, 8192, 64, 8, 28672, "Llama 2 70B, grouped-query attention (8 key-value heads)"));
    TransformerShape mixtral = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, "Mixtral 8x7B: 8 experts, 2 per token");
    mixtral.experts = 8;
    mixtral.top_k = 2;
    z.push_back(mixtral);
    z.push_back(shape("bert-large", 24, 1024, 16, 16, 4096, 30522, 512, "BERT-large (340 M)"));
    z.push_back(shape("transformer", 6, 512, 8, 8, 2048, 32000, 128, "the base Transformer's encoder stack"));
    return z;
  }();
  return zoo;
}

std::string layer_zoo_names() {
  std::string out;
  for (const auto& s : layer_zoo()) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

double layer_zoo_parameters(const TransformerShape& s) {
  const double h = s.hidden;
  const double per_layer = attention_weights(s) + s.experts * ffn_weights(s) + (s.experts > 1 ? h * s.experts : 0.0) +
                           norm_weights(s);
  double total = s.layers * per_layer + static_cast<double>(s.vocab) * h + norm_weights(s) / 2;  // + final norm
  if (learned_positions(s)) total += static_cast<double>(s.sequence) * h;
  if (!s.tied_head) total += static_cast<double>(s.vocab) * h;
  return total;
}

OptionSchema<LayerZooOptions> layer_zoo_schema() {
  OptionSchema<LayerZooOptions> s;
  s.count("micro_batch_size", &LayerZooOptions::micro_batch, "sequences per micro-batch", 1, 1 << 16, "2");
  s.count("sequence", &LayerZooOptions::sequence, "tokens per sequence (0: the model's)", 0, 1 << 24, "1024");
  s.text("gpu", &LayerZooOptions::gpu, "GPU preset whose fp16 tensor-core peak sets the times (v100, a100, h100)", "a100");
  s.number("mfu", &LayerZooOptions::mfu, "achieved fraction of that peak", Range{0, 1, true, false}, "0.4");
  s.flag("recompute", &LayerZooOptions::recompute, "full activation recomputation (false: keep every activation)");
  return s;
}

std::vector<int> layer_zoo_widths(const std::string& model) {
  std::vector<int> widths;
  for (const auto& s : layer_zoo())
    if (s.name == model)
      for (int t = 1; t <= 64; ++t)
        if (splits_into(s, t)) widths.push_back(t);
  return widths;
}

LayerWorkload build_layer_model(const std::string& model, const LayerZooOptions& o, const std::vector<int>& widths,
                                const std::string& source) {
  const TransformerShape* found = nullptr;
  for (const auto& s : layer_zoo())
    if (s.name == model) found = &s;
  if (!found) throw InputError(source, "model", fmt::format("expected one of {}, got '{}'", layer_zoo_names(), model));
  const TransformerShape& sh = *found;
  // The presets with a tensor-core peak.
  std::optional<GpuSpec> gpu;
  std::string gpus;
  for (const GpuSpec& g : gpu_presets()) {
    if (!(g.tensor_flops > 0)) continue;
    gpus += (gpus.empty() ? "" : ", ") + g.name;
    if (o.gpu == g.name) gpu = g;
  }
  if (!gpu) throw InputError(source, "gpu", fmt::format("expected one of {} (their tensor-core peaks), got '{}'", gpus, o.gpu));
  if (!(o.mfu > 0 && o.mfu <= 1)) throw InputError(source, "mfu", fmt::format("expected a fraction in (0, 1], got {}", o.mfu));
  if (o.micro_batch < 1) throw InputError(source, "micro_batch_size", fmt::format("expected at least 1, got {}", o.micro_batch));
  if (o.sequence < 0) throw InputError(source, "sequence", fmt::format("expected at least 1 (or 0: the model's), got {}", o.sequence));

  if (o.sequence > sh.sequence && learned_positions(sh))
    throw InputError(source, "sequence",
                     fmt::format("expected at most {}: {} learns a table of that many positions", sh.sequence, sh.name));
  const double b = o.micro_batch, s = o.sequence > 0 ? o.sequence : sh.sequence, h = sh.hidden;
  const double achieved = gpu->tensor_flops * o.mfu;
  const double activation = kBytesPerWeight * b * s * h;  // one layer's output
  LayerWorkload w;
  w.name = sh.name;
  w.source = fmt::format("model zoo: {}, micro-batch {}, {} tokens, {} at {:g}% of {:g} TFLOP/s{}", sh.description, o.micro_batch,
                         s, o.gpu, 100 * o.mfu, gpu->tensor_flops / 1e12, o.recompute ? ", full recomputation" : "");
  for (int t : widths) {
    if (!splits_into(sh, t))
      throw InputError(source, "tp",
                       fmt::format("{} cannot be split {} ways: the width must divide its {} heads, {} key-value heads and "
                                   "feed-forward width {}",
                                   sh.name, t, sh.heads, sh.kv_heads, sh.ffn));
    LayerModel m;
    m.name = sh.name;
    m.tensor_parallel = t;
    m.sequence = static_cast<int>(s);
    auto time_of = [&](double forward_flops, Layer& layer, bool recomputed) {
      layer.forward_s = forward_flops / t / achieved;
      layer.backward_s = (recomputed ? 3 : 2) * layer.forward_s;  // recomputation runs the forward again
    };
    Layer embedding;
    embedding.name = "embedding";
    embedding.block = false;
    embedding.parameter_bytes =
        kBytesPerWeight * (static_cast<double>(sh.vocab) * h / t + (learned_positions(sh) ? sh.sequence * h : 0.0));
    // Its dropout's mask, a byte per element (Korthikanti et al. 4.3: sbh, sbh/t sequence-split).
    embedding.stashed_bytes = b * s * h;
    embedding.sequence_parallel_stashed_bytes = b * s * h / t;
    embedding.output_bytes = activation;
    // The vocabulary-parallel lookup: each rank holds V/t rows, so the ranks' outputs are summed.
    if (t > 1) embedding.tp_allreduce_forward_bytes = activation;
    m.layers.push_back(embedding);

    const double active_ffn = sh.top_k * ffn_weights(sh) + (sh.experts > 1 ? h * sh.experts : 0.0);
    const double forward_flops = 2 * b * s * (attention_weights(sh) + active_ffn) + 4 * b * s * s * h;
    for (int l = 0; l < sh.layers; ++l) {
      Layer layer;
      layer.name = fmt::format("layer{}", l);
      time_of(forward_flops, layer, o.recompute);
      layer.parameter_bytes =
          kBytesPerWeight * ((attention_weights(sh) + sh.experts * ffn_weights(sh)) / t + norm_weights(sh) +
                             (sh.experts > 1 ? h * sh.experts : 0.0));
      layer.stashed_bytes = o.recompute ? activation : s * b * h * (10 + 24.0 / t + 5.0 * sh.heads * s / (h * t));
      // Sequence parallelism splits the rest over t too: sbh (34/t + 5as/(ht)) (their table 2),
      // and with full recomputation the stored input is the rank's part of the sequence.
      layer.sequence_parallel_stashed_bytes =
          o.recompute ? activation / t : s * b * h * (34.0 / t + 5.0 * sh.heads * s / (h * t));
      layer.output_bytes = activation;
      if (sh.experts > 1) {
        layer.expert_parameter_bytes = kBytesPerWeight * sh.experts * ffn_weights(sh) / t;
        // Each token to its top_k experts; with tp > 1 Megatron-core requires sequence parallelism
        // for experts, so each tensor rank dispatches its 1/t of the tokens.
        layer.expert_alltoall_bytes = sh.top_k * activation / t;
        layer.experts = sh.experts;
      }
      if (t > 1) layer.tp_allreduce_forward_bytes = layer.tp_allreduce_backward_bytes = 2 * activation;
      m.layers.push_back(layer);
    }
    Layer head;
    head.name = "head";
    head.block = false;
    time_of(2 * b * s * h * sh.vocab, head, false);  // the head is not recomputed
    head.parameter_bytes = kBytesPerWeight * ((sh.tied_head ? 0.0 : static_cast<double>(sh.vocab) * h / t) + norm_weights(sh) / 2);
    // Korthikanti et al. 4.3: the final norm's input and the projection's (2sbh each; sequence-split
    // with sequence parallelism) and the cross-entropy's fp32 logits, 4sbV/t.
    const double logits = 4 * b * s * static_cast<double>(sh.vocab) / t;
    head.stashed_bytes = 2 * activation + logits;
    head.sequence_parallel_stashed_bytes = 2 * activation / t + logits;
    head.output_bytes = 0;
    if (t > 1) {
      // Vocabulary-parallel cross-entropy: three all-reduces of one fp32 per token (the logits'
      // maximum, their exponentials' sum, the target's logit), given as one; in the backward the
      // replicated input's gradient, summed over the ranks.
      head.tp_allreduce_forward_bytes = 3 * 4 * b * s;
      head.tp_allreduce_backward_bytes = activation;
    }
    m.layers.push_back(head);
    w.by_tensor_parallel.emplace(t, std::move(m));
  }
  return w;
}

}  // namespace placesim::models
