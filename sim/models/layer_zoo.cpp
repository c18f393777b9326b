#include "sim/models/layer_zoo.h"

#include <fmt/format.h>
#include <optional>

#include "sim/config/yaml_fields.h"
#include "sim/core/errors.h"
#include "sim/models/gpu.h"
#include "sim/models/kernels.h"

namespace placesim::models {

namespace {

constexpr double kBytesPerWeight = 2;  // fp16/bf16
// Mixed-precision Adam per parameter (layer_zoo.h): read 16 (fp32 weight, gradient, two
// moments), write 14 (weight, moments, the 16-bit copy), read the gradient again for clipping.
constexpr double kOptimizerBytesPerParameter = 34;

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

bool learned_positions(const TransformerShape& s) { return s.learned_positions; }

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
      s.gated = s.rms_norm = s.rotary = true;
      s.tied_head = s.learned_positions = s.dropout = false;
      return s;
    };
    z.push_back(llama("llama2-7b", 32, 4096, 32, 32, 11008, "Llama 2 7B"));
    z.push_back(llama("llama2-70b", 80, 8192, 64, 8, 28672, "Llama 2 70B, grouped-query attention (8 key-value heads)"));
    TransformerShape mixtral = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, "Mixtral 8x7B: 8 experts, 2 per token");
    mixtral.experts = 8;
    mixtral.top_k = 2;
    z.push_back(mixtral);
    TransformerShape bert = shape("bert-large", 24, 1024, 16, 16, 4096, 30522, 512, "BERT-large (340 M)");
    bert.causal = false;  // an encoder: every token attends to every token
    z.push_back(bert);
    TransformerShape base = shape("transformer", 6, 512, 8, 8, 2048, 32000, 128, "the base Transformer's encoder stack");
    base.learned_positions = false;  // sinusoidal positions: no weights
    base.causal = false;
    z.push_back(base);
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

const TransformerShape* find_layer_zoo(const std::string& name) {
  for (const auto& s : layer_zoo())
    if (s.name == name) return &s;
  return nullptr;
}

double model_flops_per_sequence(const TransformerShape& sh, int sequence, bool causal_half) {
  const double s = sequence > 0 ? sequence : sh.sequence, h = sh.hidden;
  const double active_ffn = sh.top_k * ffn_weights(sh) + (sh.experts > 1 ? h * sh.experts : 0.0);
  const double layer = 2 * s * (attention_weights(sh) + active_ffn) + 4 * s * s * h * (causal_half && sh.causal ? 0.5 : 1.0);
  return 3 * (sh.layers * layer + 2 * s * h * sh.vocab);
}

OptionSchema<LayerZooOptions> layer_zoo_schema() {
  using O = LayerZooOptions;
  OptionSchema<O> s;
  s.count("micro_batch_size", &O::micro_batch, "sequences per micro-batch", 1, 1 << 16, "2");
  s.count("sequence", &O::sequence, "tokens per sequence (0: the model's)", 0, 1 << 24, "1024");
  s.text("gpu", &O::gpu, "GPU preset the kernel model times the layers on (`placesim gpus`)", "a100");
  s.add({"precision", "choice", "the matrix products' precision (fp8: GEMMs in fp8 with their casts, the rest bf16)",
         "the GPU's (bf16 from A100 on, fp16 on V100)", {"fp32", "tf32", "fp16", "bf16", "fp8"}, "fp16"},
        [](const YamlFields& f, std::string_view k, O& o) {
          o.precision = enum_parse<Precision>(kPrecisionNames, f.string(k), f.file(), f.field(k));
        });
  s.number("mfu", &O::mfu,
           "override: every FLOP at this fraction of the GPU's peak instead of the kernel model (0: the kernel model)",
           Range{0, 1, false, false}, "0.4");
  s.add({"recompute", "choice", "what the backward recomputes: none, selective (the attention core) or full (true/false: full/none)",
         "full", {"none", "selective", "full"}, "selective"},
        [](const YamlFields& f, std::string_view k, O& o) {
          const std::string v = f.string(k);
          if (v == "true" || v == "false") o.recompute = v == "true" ? Recompute::Full : Recompute::None;
          else o.recompute = enum_parse<Recompute>(kRecomputeNames, v, f.file(), f.field(k));
        });
  s.flag("sequence_parallel", &O::sequence_parallel,
         "the norms and dropouts on 1/tp of the tokens: the plan's sequence_parallel must agree (refused otherwise)");
  s.flag("fused_attention", &O::fused_attention, "FlashAttention-style fused attention (false: scores, softmax and dropout apart)");
  s.add({"main_gradients", "choice",
         "where the gradients are kept and reduced: fp32 (fp32 main gradients reduced in fp32), fp32_copy (16-bit, with an fp32 "
         "copy in the optimizer) or as_parameters (16-bit, no copy: the ZeRO paper's 2 + 2 + 12 bytes per parameter)",
         "Megatron-LM's at the precision (bf16, fp8: fp32; fp16: fp32_copy)", {"fp32", "fp32_copy", "as_parameters"}, "as_parameters"},
        [](const YamlFields& f, std::string_view k, O& o) {
          o.main_gradients = enum_parse<MainGradients>(kMainGradientsNames, f.string(k), f.file(), f.field(k));
        });
  s.count("context_parallel", &O::context_parallel,
          "context-parallel width the layers are built for: each GPU runs 1/cp of every sequence (set it with the plan's cp)", 1,
          1 << 16, "2");
  return s;
}

std::vector<int> layer_widths(const TransformerShape& shape) {
  std::vector<int> widths;
  for (int t = 1; t <= 64; ++t)
    if (splits_into(shape, t)) widths.push_back(t);
  return widths;
}

std::vector<int> layer_zoo_widths(const std::string& model) {
  const TransformerShape* s = find_layer_zoo(model);
  return s ? layer_widths(*s) : std::vector<int>{};
}

namespace {

// The kernels of one layer's forward and backward on one GPU of t (kernels.h), and the part the
// selective recomputation runs again (the attention core's forward).
struct LayerKernels {
  KernelCost forward, backward, attention_core;
};

struct KernelContext {
  const GpuSpec& gpu;
  Precision p;          // the matrix products'
  double act = 2;       // bytes of a 16-bit activation (fp8 keeps activations in bf16 between GEMMs)
  double tokens = 0;    // b x s
  double norm_tokens = 0;  // the tokens a norm or dropout runs on (1/t with sequence parallelism)
};

// A matrix product of the layer, forward and backward, with fp8's casts of its input.
void add_gemm(const KernelContext& c, LayerKernels& k, double m, double n, double kk) {
  k.forward += gemm(c.gpu, c.p, m, n, kk);
  k.backward += gemm_backward(c.gpu, c.p, m, n, kk);
  if (c.p == Precision::Fp8) {  // the 16-bit input cast to fp8 (and its gradient in the backward)
    k.forward += memory_bound(c.gpu, m * kk * (c.act + 1));
    k.backward += memory_bound(c.gpu, m * n * (c.act + 1));
  }
}

// A memory-bound kernel of `elements`: forward `fwd` bytes each, backward `bwd`.
void add_elementwise(const KernelContext& c, LayerKernels& k, double elements, double fwd, double bwd) {
  k.forward += memory_bound(c.gpu, elements * fwd);
  k.backward += memory_bound(c.gpu, elements * bwd);
}

// `s` is the whole sequence; with context parallelism (`context` > 1) the GPU holds s / context of
// its tokens (c.tokens) and runs ring attention: one fused kernel per step of the ring, each on a
// block of s / context queries against as many keys, causal (the diagonal one) or half of a
// block (the others, under Megatron's load-balanced split): 1/context of the causal attention
// (of a bidirectional model's, every block whole).
LayerKernels transformer_layer_kernels(const TransformerShape& sh, const KernelContext& c, double b, double s, int t,
                                       bool fused, int context) {
  LayerKernels k;
  const double h = sh.hidden, d = h / sh.heads, heads = static_cast<double>(sh.heads) / t;
  const double kv = static_cast<double>(sh.kv_heads) / t, T = c.tokens, a = c.act;
  // Norm: read and write (backward: read input and gradient, write gradient).
  add_elementwise(c, k, c.norm_tokens * h, 2 * a, 3 * a);
  add_gemm(c, k, T, (heads + 2 * kv) * d, h);  // Q, K, V
  if (sh.rotary) add_elementwise(c, k, T * (heads + kv) * d, 2 * a, 2 * a);
  if (fused) {
    for (int step = 0; step < context; ++step) {
      k.forward += fused_attention(c.gpu, c.p, b * heads, s / context, d, sh.causal, false);
      k.backward += fused_attention(c.gpu, c.p, b * heads, s / context, d, sh.causal, true);
    }
  } else {
    // Scores (QK^T), scale-mask-softmax, dropout (a byte of mask), their product with V: 16-bit
    // products even in fp8 runs (Transformer Engine keeps attention in bf16).
    LayerKernels core;
    const Precision p = c.gpu.outside_fp8(c.p);
    core.forward += gemm(c.gpu, p, s, s, d, b * heads);
    core.backward += gemm_backward(c.gpu, p, s, s, d, b * heads);
    const double scores = b * heads * s * s;
    add_elementwise(c, core, scores, 2 * a, 3 * a);                          // softmax
    if (sh.dropout) add_elementwise(c, core, scores, 2 * a + 1, 2 * a + 1);  // dropout
    core.forward += gemm(c.gpu, p, s, d, s, b * heads);
    core.backward += gemm_backward(c.gpu, p, s, d, s, b * heads);
    k.forward += core.forward;
    k.backward += core.backward;
    k.attention_core = core.forward;
  }
  add_gemm(c, k, T, h, heads * d);  // output projection
  // Bias-dropout-add: read the input and the residual, write the sum (and a byte of mask).
  const double residual_add = 3 * a + (sh.dropout ? 1 : 0);
  add_elementwise(c, k, c.norm_tokens * h, residual_add, residual_add);
  add_elementwise(c, k, c.norm_tokens * h, 2 * a, 3 * a);  // the second norm
  const double pairs = T * sh.top_k;  // token-expert pairs (T without experts)
  if (sh.experts > 1) {
    add_gemm(c, k, T, sh.experts, h);                        // router
    add_elementwise(c, k, T * h * sh.top_k, 2 * a, 2 * a);   // permute the tokens to their experts and back
  }
  const double f = static_cast<double>(sh.ffn) / t;
  add_gemm(c, k, pairs, (sh.gated ? 2 : 1) * f, h);
  add_elementwise(c, k, pairs * f, (sh.gated ? 3 : 2) * a, (sh.gated ? 5 : 3) * a);  // GELU or SwiGLU
  add_gemm(c, k, pairs, h, f);
  add_elementwise(c, k, c.norm_tokens * h, residual_add, residual_add);  // bias-dropout-add
  return k;
}

// The head: final norm, the vocabulary-parallel projection, the cross-entropy over fp32 logits
// (cast, maximum, exponentials' sum, loss: about 14 bytes per logit; backward 10). In an fp8 run
// the projection stays 16-bit: Megatron's output layer is its own column-parallel linear, not
// Transformer Engine's, so fp8 does not reach it.
LayerKernels head_kernels(const TransformerShape& sh, const KernelContext& c, int t) {
  LayerKernels k;
  const double h = sh.hidden, v = static_cast<double>(sh.vocab) / t;
  add_elementwise(c, k, c.norm_tokens * h, 2 * c.act, 3 * c.act);
  KernelContext sixteen_bit = c;
  sixteen_bit.p = c.gpu.outside_fp8(c.p);
  add_gemm(sixteen_bit, k, c.tokens, v, h);
  add_elementwise(c, k, c.tokens * v, 14, 10);
  return k;
}

// The embedding: a lookup (write the rows, backward a scatter-add in fp32) and its dropout.
LayerKernels embedding_kernels(const TransformerShape& sh, const KernelContext& c) {
  LayerKernels k;
  add_elementwise(c, k, c.tokens * sh.hidden, 2 * c.act, c.act + 8);
  if (sh.dropout) add_elementwise(c, k, c.norm_tokens * sh.hidden, 2 * c.act + 1, 2 * c.act + 1);
  return k;
}

void check_options(const LayerZooOptions& o, const TransformerShape& sh, const GpuSpec& gpu, Precision p, const std::string& source) {
  if (!(o.mfu >= 0 && o.mfu <= 1)) throw InputError(source, "mfu", fmt::format("expected a fraction in (0, 1] (0: the kernel model), got {}", o.mfu));
  if (!gpu.has(p))
    throw InputError(source, "precision",
                     fmt::format("{} has no {} peak (it has {})", gpu.model, enum_name<Precision>(kPrecisionNames, p), [&] {
                       std::string have;
                       for (const auto& n : kPrecisionNames)
                         if (gpu.has(n.value)) have += (have.empty() ? "" : ", ") + std::string(n.name);
                       return have;
                     }()));
  if (o.micro_batch < 1) throw InputError(source, "micro_batch_size", fmt::format("expected at least 1, got {}", o.micro_batch));
  if (o.sequence < 0) throw InputError(source, "sequence", fmt::format("expected at least 1 (or 0: the model's), got {}", o.sequence));
  if (o.context_parallel < 1 || (o.context_parallel > 1 && static_cast<long>(o.sequence > 0 ? o.sequence : sh.sequence) % (2 * o.context_parallel) != 0))
    throw InputError(source, "context_parallel",
                     fmt::format("expected a width of at least 1 whose double divides the sequence ({} tokens: Megatron splits it into "
                                 "2 x cp chunks), got {}",
                                 o.sequence > 0 ? o.sequence : sh.sequence, o.context_parallel));
  if (o.context_parallel > 1 && !o.fused_attention)
    throw InputError(source, "context_parallel", "context parallelism runs ring attention in fused kernels (Transformer Engine's): not "
                                                 "with unfused attention");
  if (o.sequence > sh.sequence && learned_positions(sh))
    throw InputError(source, "sequence",
                     fmt::format("expected at most {}: {} learns a table of that many positions", sh.sequence, sh.name));
}

}  // namespace

namespace {
bool is_yaml_file(const std::string& name) {
  return name.size() > 5 && (name.ends_with(".yaml") || name.ends_with(".yml"));
}

}  // namespace

GpuSpec kernel_model_gpu(const std::string& name, const std::string& source) {
  if (is_yaml_file(name)) {
    // A GPU of the user's: a preset with overrides, or every figure (gpu.h, gpu_from_yaml).
    const YAML::Node root = load_yaml_file(name);
    const bool wrapped = root.IsMap() && root["gpu"];
    GpuSpec g = gpu_from_yaml(wrapped ? root["gpu"] : root, name, wrapped ? "gpu" : "");
    if (!(g.sms > 0 && g.gemm_efficiency > 0 && g.memory_efficiency > 0 && g.has(g.default_precision())))
      throw InputError(name, "", "the kernel model needs sms, a tensor-core peak (bf16_flops or fp16_flops), gemm_efficiency and "
                                 "memory_efficiency: start from a preset (`preset: a100`) or give them");
    return g;
  }
  const std::optional<GpuSpec> gpu = find_gpu_preset(name);
  const std::vector<std::string> names = kernel_model_gpu_names();
  if (!gpu || std::find(names.begin(), names.end(), name) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError(source, "gpu",
                     fmt::format("expected one of {} (the presets the kernel model times) or a GPU YAML file, got '{}'", list, name));
  }
  return *gpu;
}


LayerWorkload build_layer_model(const std::string& model, const LayerZooOptions& o, const std::vector<int>& widths,
                                const std::string& source) {
  const TransformerShape* found = find_layer_zoo(model);
  if (!found) throw InputError(source, "model", fmt::format("expected one of {}, got '{}'", layer_zoo_names(), model));
  return build_layer_model(*found, o, widths, source);
}

namespace {

// What a layer keeps for its backward without recomputation, in units of sbh bytes (s tokens, b
// sequences, hidden h): Korthikanti et al.'s count (their table 2) term by term, so that it holds
// for grouped-query attention and any feed-forward, not only GPT's layer (as many key-value heads
// as heads, a GELU feed-forward of 4h: 10 + 24/t). Kept whole by each tensor rank: the two
// norms' inputs (2 + 2), the inputs of the QKV and the first feed-forward product (2 + 2), the
// two dropout masks (1 + 1; none without dropout). Split over the t ranks: the queries (2), the keys and values
// (2 + 2, of g/a of the heads), the projection's input (2), and the feed-forward's 16-bit
// activations of width f: its first product's output and the activation's (2f + 2f; gated, the
// first product is twice as wide: 4f + 2f), for each of a token's top_k experts. The attention
// core (5as/h, unfused) is counted apart.
struct LayerStash {
  double whole = 0, split = 0;
};
LayerStash layer_stash(const TransformerShape& sh) {
  const double feed_forward = sh.top_k * (sh.gated ? 6.0 : 4.0) * sh.ffn / sh.hidden;
  return {8.0 + (sh.dropout ? 2.0 : 0.0), 4.0 + 4.0 * sh.kv_heads / sh.heads + feed_forward};
}

}  // namespace

LayerWorkload build_layer_model(const TransformerShape& sh, const LayerZooOptions& o, const std::vector<int>& widths,
                                const std::string& source) {
  const GpuSpec gpu = kernel_model_gpu(o.gpu, source);
  const Precision precision = o.precision.value_or(gpu.default_precision());
  check_options(o, sh, gpu, precision, source);
  const double b = o.micro_batch, whole = o.sequence > 0 ? o.sequence : sh.sequence, h = sh.hidden;
  const int cp = o.context_parallel;
  const double s = whole / cp;  // the tokens of each sequence on a GPU (context parallelism: its part)
  const double activation = kBytesPerWeight * b * s * h;  // one layer's output
  const std::string precision_name(enum_name<Precision>(kPrecisionNames, precision));
  // `mfu` is of the peak MFU is reported against: an fp8 run's 16-bit peak (plan's report).
  const double mfu_peak = gpu.dense(gpu.outside_fp8(precision));
  LayerWorkload w;
  w.name = sh.name;
  w.source = fmt::format("{}: {}, micro-batch {}, {} tokens, {} {}, {}, recompute {}{}", sh.name == sh.description ? "model" : "model zoo",
                         sh.description, o.micro_batch, whole, gpu.model, precision_name,
                         o.mfu > 0 ? fmt::format("every FLOP at {:g}% of {:g} TFLOP/s (--mfu)", 100 * o.mfu, mfu_peak / 1e12)
                                   : fmt::format("kernel model{}", o.fused_attention ? ", fused attention" : ""),
                         enum_name<Recompute>(kRecomputeNames, o.recompute),
                         // Selective recomputes attention's core, which fused attention already
                         // recomputes in its backward and never stores: nothing is left to save.
                         fmt::format("{}{}{}",
                                     o.recompute == Recompute::Selective && o.fused_attention
                                         ? " (as none: fused attention already recomputes attention's core and stores none of it)"
                                         : "",
                                     o.sequence_parallel ? ", sequence-parallel" : "", cp > 1 ? fmt::format(", context-parallel {}", cp) : ""));
  const bool full = o.recompute == Recompute::Full;
  for (int t : widths) {
    if (!splits_into(sh, t))
      throw InputError(source, "tp",
                       fmt::format("{} cannot be split {} ways: the width must divide its {} heads, {} key-value heads and "
                                   "feed-forward width {}",
                                   sh.name, t, sh.heads, sh.kv_heads, sh.ffn));
    LayerModel m;
    m.name = sh.name;
    m.tensor_parallel = t;
    // Megatron-LM's gradients at the precision: fp32 main gradients reduced in fp32 under bf16
    // (and fp8, whose weights are bf16), an fp32 copy beside 16-bit ones under fp16.
    m.main_gradients = o.main_gradients                                             ? *o.main_gradients
                       : precision == Precision::Fp16                              ? MainGradients::Fp32Copy
                       : precision == Precision::Bf16 || precision == Precision::Fp8 ? MainGradients::Fp32
                                                                                     : MainGradients::AsParameters;
    m.sequence = static_cast<int>(whole);
    m.micro_batch = o.micro_batch;
    m.context_parallel = cp;
    m.built_sequence_parallel = o.sequence_parallel;
    m.model_flops = b * model_flops_per_sequence(sh, static_cast<int>(whole)) / cp;  // this GPU's part
    m.causal_model_flops = b * model_flops_per_sequence(sh, static_cast<int>(whole), true) / cp;
    const KernelContext ctx{gpu, precision, 2.0, b * s, o.sequence_parallel && t > 1 ? b * s / t : b * s};
    // A layer's times: the kernel model's, or (mfu) its FLOPs at that fraction of the peak.
    auto time_of = [&](const LayerKernels& k, double forward_flops, Layer& layer, bool recomputed) {
      if (o.mfu > 0) {
        layer.forward_s = forward_flops / t / (mfu_peak * o.mfu);
        layer.backward_s = (recomputed ? 3 : 2) * layer.forward_s;  // recomputation runs the forward again
        return;
      }
      layer.forward_s = k.forward.seconds;
      layer.backward_s = k.backward.seconds + (recomputed ? k.forward.seconds : 0.0) +
                         (o.recompute == Recompute::Selective ? k.attention_core.seconds : 0.0);
    };
    auto optimizer_of = [&](Layer& layer) {
      layer.optimizer_s = memory_bound(gpu, layer.parameter_bytes / kBytesPerWeight * kOptimizerBytesPerParameter).seconds;
    };
    Layer embedding;
    embedding.name = "embedding";
    embedding.block = false;
    embedding.parameter_bytes =
        kBytesPerWeight * (static_cast<double>(sh.vocab) * h / t + (learned_positions(sh) ? sh.sequence * h : 0.0));
    time_of(embedding_kernels(sh, ctx), 0, embedding, false);
    optimizer_of(embedding);
    // Its dropout's mask, a byte per element (Korthikanti et al. 4.3: sbh, sbh/t sequence-split).
    embedding.stashed_bytes = sh.dropout ? b * s * h : 0.0;
    embedding.sequence_parallel_stashed_bytes = embedding.stashed_bytes / t;
    embedding.output_bytes = activation;
    // The vocabulary-parallel lookup: each rank holds V/t rows, so the ranks' outputs are summed.
    if (t > 1) embedding.tp_allreduce_forward_bytes = activation;
    m.layers.push_back(embedding);

    const double active_ffn = sh.top_k * ffn_weights(sh) + (sh.experts > 1 ? h * sh.experts : 0.0);
    // Megatron's attention count, 4 b s^2 h for the whole sequence: 1/cp of it on each context rank.
    const double forward_flops = 2 * b * s * (attention_weights(sh) + active_ffn) + 4 * b * s * whole * h;
    const LayerKernels kernels = transformer_layer_kernels(sh, ctx, b, whole, t, o.fused_attention, cp);
    // The attention core's stash (5as/(ht) of Korthikanti et al.'s count: the softmax's output,
    // the dropout's mask and output; 2as/(ht) without dropout) is kept only when the backward
    // needs it and attention is not fused.
    const double core =
        o.recompute == Recompute::None && !o.fused_attention ? (sh.dropout ? 5.0 : 2.0) * sh.heads * s / (h * t) : 0.0;
    const LayerStash stash = layer_stash(sh);
    for (int l = 0; l < sh.layers; ++l) {
      Layer layer;
      layer.name = fmt::format("layer{}", l);
      time_of(kernels, forward_flops, layer, full);
      layer.parameter_bytes =
          kBytesPerWeight * ((attention_weights(sh) + sh.experts * ffn_weights(sh)) / t + norm_weights(sh) +
                             (sh.experts > 1 ? h * sh.experts : 0.0));
      optimizer_of(layer);
      layer.stashed_bytes = full ? activation : s * b * h * (stash.whole + stash.split / t + core);
      // Sequence parallelism splits the rest over t too (their table 2: GPT's sbh (34/t + 5as/(ht))),
      // and with full recomputation the stored input is the rank's part of the sequence.
      layer.sequence_parallel_stashed_bytes = full ? activation / t : s * b * h * ((stash.whole + stash.split) / t + core);
      layer.output_bytes = activation;
      // Ring attention's block: this GPU's keys and values (16-bit, its kv_heads / t heads).
      if (cp > 1) layer.context_exchange_bytes = 2 * kBytesPerWeight * b * s * sh.kv_heads / t * (h / sh.heads);
      if (sh.experts > 1) {
        layer.expert_parameter_bytes = kBytesPerWeight * sh.experts * ffn_weights(sh) / t;
        // Each token to its top_k experts; with tp > 1 Megatron-core requires sequence parallelism
        // for experts, so each tensor rank dispatches its 1/t of the tokens.
        layer.expert_alltoall_bytes = sh.top_k * activation / t;
        layer.experts = sh.experts;
      }
      // Two all-reduces of the layer's output per pass; full recomputation runs the forward's
      // two again in the backward.
      if (t > 1) {
        layer.tp_allreduce_forward_bytes = 2 * activation;
        layer.tp_allreduce_backward_bytes = (full ? 4 : 2) * activation;
      }
      m.layers.push_back(layer);
    }
    Layer head;
    head.name = "head";
    head.block = false;
    time_of(head_kernels(sh, ctx, t), 2 * b * s * h * sh.vocab, head, false);  // the head is not recomputed
    head.parameter_bytes = kBytesPerWeight * ((sh.tied_head ? 0.0 : static_cast<double>(sh.vocab) * h / t) + norm_weights(sh) / 2);
    optimizer_of(head);
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

TransformerShape model_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"name", "family", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "sequence", "experts", "top_k",
                "activation", "tied_embeddings", "dropout"});
  TransformerShape sh;
  const std::string family = f.string("family");
  if (family != "gpt" && family != "llama" && family != "mixtral")
    throw InputError(file, f.field("family"), fmt::format("expected gpt, llama or mixtral, got '{}'", family));
  const bool llama = family != "gpt";
  sh.gated = sh.rms_norm = sh.rotary = llama;
  sh.tied_head = sh.learned_positions = sh.dropout = !llama;
  if (family == "mixtral") sh.experts = 8, sh.top_k = 2;
  auto count = [&](const char* key, long min, long max) -> int {
    const double v = f.number_or(key, 0);
    if (!(v >= min && v <= max && v == std::floor(v)))
      throw InputError(file, f.field(key), fmt::format("expected a whole number from {} to {}, got {}", min, max, v));
    return static_cast<int>(v);
  };
  for (const char* key : {"layers", "hidden", "heads", "vocab", "sequence"})
    if (!f.has(key)) throw InputError(file, path.empty() ? key : path + "." + key, "required: the model's dimensions");
  sh.layers = count("layers", 1, 100000);
  sh.hidden = count("hidden", 1, 1 << 20);
  sh.heads = count("heads", 1, 1 << 16);
  sh.kv_heads = f.has("kv_heads") ? count("kv_heads", 1, sh.heads) : sh.heads;
  sh.ffn = f.has("ffn_hidden") ? count("ffn_hidden", 1, 1 << 24) : 4 * sh.hidden;
  sh.vocab = count("vocab", 1, 1 << 24);
  sh.sequence = count("sequence", 1, 1 << 24);
  if (f.has("experts")) sh.experts = count("experts", 1, 4096);
  if (f.has("top_k")) sh.top_k = count("top_k", 1, sh.experts);
  if (sh.top_k > sh.experts)
    throw InputError(file, f.field("top_k"), fmt::format("expected at most experts ({}), got {}", sh.experts, sh.top_k));
  if (sh.hidden % sh.heads != 0)
    throw InputError(file, f.field("heads"), fmt::format("expected a divisor of hidden ({}), got {}", sh.hidden, sh.heads));
  if (sh.heads % sh.kv_heads != 0)
    throw InputError(file, f.field("kv_heads"), fmt::format("expected a divisor of heads ({}), got {}", sh.heads, sh.kv_heads));
  if (f.has("activation")) {
    const std::string a = f.string("activation");
    if (a != "gelu" && a != "swiglu") throw InputError(file, f.field("activation"), fmt::format("expected gelu or swiglu, got '{}'", a));
    sh.gated = a == "swiglu";
  }
  sh.tied_head = f.boolean_or("tied_embeddings", sh.tied_head);
  sh.dropout = f.boolean_or("dropout", sh.dropout);
  sh.name = f.string_or("name", family);
  sh.description = sh.name;
  return sh;
}

TransformerShape load_model_file(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  if (!root.IsMap()) throw InputError(path, "", "expected a mapping of the model's dimensions (family, layers, hidden, ...)");
  return model_from_yaml(root, path, "");
}

}  // namespace placesim::models
