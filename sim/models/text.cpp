// Sequence models of the zoo: BERT, FNet, GPT-2, the Transformer and GNMT. Token tensors are
// [batch * seq, features] matrices; ids are int32.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/models/architectures.h"
#include "sim/models/layers.h"

namespace placesim::models {

namespace {

// The first `rows` rows of a [table_rows, d] tensor (position embeddings); gradient: Pad.
Tid slice_rows(ModelBuilder& b, Tid table, std::int64_t rows) {
  const std::int64_t d = b.tensor(table).shape[1];
  std::vector<Tid> in{table};
  if (!b.fused()) {
    in.push_back(b.constant("Slice/begin", {2}));
    in.push_back(b.constant("Slice/size", {2}));
  }
  const std::int32_t op = b.emit("Slice", "Slice", std::move(in), {{{rows, d}, DType::F32}}, 0);
  b.differentiable(op, [table](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(table, m.emit1("Pad", "Pad", {dy[0]}, {m.tensor(table).shape, DType::F32},
                              static_cast<double>(num_elements(m.tensor(table).shape))));
  });
  return b.out(op);
}

// x [batch*seq, d] + per-position rows [seq, d].
Tid add_positions(ModelBuilder& b, Tid x, Tid positions, std::int64_t batch, std::int64_t seq) {
  const std::int64_t d = b.tensor(x).shape[1];
  const Tid x3 = b.reshape(x, {batch, seq, d}, "Reshape");
  return b.reshape(b.add(x3, positions, "add_positions"), {batch * seq, d}, "Reshape_1");
}

// The first token of every sequence: [batch*seq, d] -> [batch, d]; gradient: StridedSliceGrad.
Tid first_token(ModelBuilder& b, Tid x, std::int64_t batch, std::int64_t seq) {
  const std::int64_t d = b.tensor(x).shape[1];
  const Tid x3 = b.reshape(x, {batch, seq, d}, "Reshape");
  const std::int32_t op = b.emit("strided_slice", "StridedSlice", {x3}, {{{batch, d}, DType::F32}}, 0);
  b.differentiable(op, [x3](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(x3, m.emit1("StridedSliceGrad", "StridedSliceGrad", {dy[0]}, {m.tensor(x3).shape, DType::F32},
                           static_cast<double>(num_elements(m.tensor(x3).shape))));
  });
  return b.out(op);
}

// FNet's token mixing: the real part of the 2-D DFT over (sequence, hidden), by FFT.
Tid fourier_mix(ModelBuilder& b, Tid x, std::int64_t batch, std::int64_t seq) {
  auto s = b.scope("fourier");
  const std::int64_t d = b.tensor(x).shape[1];
  const Shape shape{batch, seq, d};
  const double points = static_cast<double>(seq * d);
  const double fft_flops = static_cast<double>(batch) * 5.0 * points * std::log2(points);  // Cooley-Tukey estimate
  const Tid x3 = b.reshape(x, shape, "Reshape");
  const std::int32_t to_complex = b.emit("Cast", "Cast", {x3}, {{shape, DType::C64}}, points * static_cast<double>(batch));
  b.differentiable(to_complex, [x3](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(x3, m.emit1("Real", "Real", {dy[0]}, {m.tensor(x3).shape, DType::F32}, static_cast<double>(num_elements(m.tensor(x3).shape))));
  });
  const Tid cx = b.out(to_complex);
  const std::int32_t fft = b.emit("FFT2D", "FFT2D", {cx}, {{shape, DType::C64}}, fft_flops);
  b.differentiable(fft, [cx, fft_flops](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(cx, m.emit1("IFFT2D", "IFFT2D", {dy[0]}, {m.tensor(cx).shape, DType::C64}, fft_flops));
  });
  const Tid fx = b.out(fft);
  const std::int32_t real = b.emit("Real", "Real", {fx}, {{shape, DType::F32}}, points * static_cast<double>(batch));
  b.differentiable(real, [fx](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(fx, m.emit1("Complex", "Complex", {dy[0], m.constant("zeros", {}, DType::F32)}, {m.tensor(fx).shape, DType::C64},
                           static_cast<double>(num_elements(m.tensor(fx).shape))));
  });
  return b.reshape(b.out(real), {batch * seq, d}, "Reshape_1");
}

Tid feed_forward(ModelBuilder& b, Tid x, std::int64_t ffn, std::int64_t hidden, bool use_gelu) {
  Tid h = dense(b, "intermediate", x, ffn);
  h = use_gelu ? gelu(b, h) : relu_layer(b, "relu", h);
  return dense(b, "output", h, hidden);
}

// An additive causal mask [1, 1, seq, seq] (0 on and below the diagonal, -1e9 above).
Tid causal_mask(ModelBuilder& b, std::int64_t seq) { return b.constant("causal_mask", {1, 1, seq, seq}, DType::F32); }

}  // namespace

Tid build_bert(ModelBuilder& b, const ModelConfig& c, bool fnet) {
  const std::int64_t B = c.batch, S = c.seq, H = c.hidden;
  const std::int64_t predictions = static_cast<std::int64_t>(std::ceil(0.15 * static_cast<double>(S)));
  const std::int64_t positions = std::max<std::int64_t>(512, S);
  const Tid ids = b.input("input_ids", {B * S}, DType::I32);
  const Tid type_ids = b.input("token_type_ids", {B * S}, DType::I32);
  const Tid input_mask = fnet ? kNoTensor : b.input("input_mask", {B, S}, DType::I32);
  // Google's BERT (TensorFlow) predicts the masked positions only (gathered first); PyTorch and
  // ONNX Runtime implementations score every token and let the loss ignore unmasked ones.
  const bool gather_first = !b.fused();
  const Tid mlm_positions = gather_first ? b.input("masked_lm_positions", {B * predictions}, DType::I32) : kNoTensor;
  const Tid mlm_ids = b.input("masked_lm_ids", {gather_first ? B * predictions : B * S}, DType::I32);
  const Tid nsp_labels = b.input("next_sentence_labels", {B}, DType::I32);
  const std::string model = fnet ? "fnet" : "bert";
  Pid word_table = -1;
  Tid sequence, pooled;
  {
    auto s = b.scope(model);
    Tid x;
    {
      auto e = b.scope("embeddings");
      x = embedding(b, "word_embeddings", ids, c.vocab, H, &word_table);
      x = b.add(x, embedding(b, "token_type_embeddings", type_ids, fnet ? 4 : 2, H), "add");
      const Pid pos = b.variable("position_embeddings", {positions, H});
      x = add_positions(b, x, slice_rows(b, b.read(pos, "Slice"), S), B, S);
      x = layer_norm(b, "LayerNorm", x);
      if (fnet) x = dense(b, "projection", x, H);
      x = dropout(b, "dropout", x);
    }
    Tid mask = kNoTensor;
    if (!fnet) {
      auto m = b.scope("encoder/attention_mask");
      const Tid m4 = b.cast(b.reshape(input_mask, {B, 1, 1, S}, "Reshape"), DType::F32, "Cast");
      mask = b.mul(b.sub(b.constant("sub/x", {}, DType::F32), m4, "sub"), b.constant("mul/y", {}, DType::F32), "mul");
    }
    for (int l = 0; l < c.layers; ++l) {
      auto ls = b.scope(fmt::format("encoder/layer_{}", l));
      Tid mixed;
      if (fnet) {
        mixed = fourier_mix(b, x, B, S);
        x = layer_norm(b, "mixing/LayerNorm", b.add(mixed, x, "mixing/add"));
      } else {
        mixed = attention(b, "attention/self", x, x, B, S, S, static_cast<int>(c.heads), mask, true);
        mixed = dropout(b, "attention/output/dropout", mixed);
        x = layer_norm(b, "attention/output/LayerNorm", b.add(mixed, x, "attention/output/add"));
      }
      Tid f;
      {
        auto fs = b.scope("ffn");
        f = feed_forward(b, x, c.ffn, H, true);
        f = dropout(b, "dropout", f);
      }
      x = layer_norm(b, "output/LayerNorm", b.add(f, x, "output/add"));
    }
    sequence = x;
    auto p = b.scope("pooler");
    pooled = b.tanh(dense(b, "dense", first_token(b, x, B, S), H));
  }
  Tid mlm_loss, nsp_loss;
  {
    auto s = b.scope("cls/predictions");
    Tid t = gather_first ? b.gather(sequence, mlm_positions, "gather_indexes") : sequence;
    t = gelu(b, dense(b, "transform/dense", t, H));
    t = layer_norm(b, "transform/LayerNorm", t);
    // The output layer is tied to the word embeddings (a second read of the table).
    Tid logits = b.matmul(t, b.read(word_table, "MatMul"), false, true, "MatMul");
    const Pid bias = b.variable("output_bias", {c.vocab});
    logits = b.add(logits, b.read(bias, "BiasAdd"), "BiasAdd");
    mlm_loss = classification_loss(b, "masked_lm_loss", logits, mlm_ids);
  }
  {
    auto s = b.scope("cls/seq_relationship");
    nsp_loss = classification_loss(b, "next_sentence_loss", dense(b, "output", pooled, 2), nsp_labels);
  }
  return b.add(mlm_loss, nsp_loss, "total_loss");
}

Tid build_gpt2(ModelBuilder& b, const ModelConfig& c) {
  const std::int64_t B = c.batch, S = c.seq, H = c.hidden;
  const Tid ids = b.input("input_ids", {B * S}, DType::I32);
  const Tid labels = b.input("labels", {B * S}, DType::I32);
  Pid wte = -1;
  Tid logits;
  {
    auto s = b.scope("gpt2");
    Tid x = embedding(b, "wte", ids, c.vocab, H, &wte);
    const Pid wpe = b.variable("wpe", {std::max<std::int64_t>(1024, S), H});
    x = add_positions(b, x, slice_rows(b, b.read(wpe, "Slice"), S), B, S);
    x = dropout(b, "drop", x);
    const Tid mask = causal_mask(b, S);
    for (int l = 0; l < c.layers; ++l) {
      auto ls = b.scope(fmt::format("h{}", l));
      Tid a = layer_norm(b, "ln_1", x);
      a = dropout(b, "attn/resid_dropout", attention(b, "attn", a, a, B, S, S, static_cast<int>(c.heads), mask, true, true));
      x = b.add(x, a, "add");
      Tid m;
      {
        auto ms = b.scope("mlp");
        m = feed_forward(b, layer_norm(b, "ln_2", x), c.ffn, H, true);
        m = dropout(b, "dropout", m);
      }
      x = b.add(x, m, "add_1");
    }
    x = layer_norm(b, "ln_f", x);
    // The language-model head is tied to the token embeddings.
    logits = b.matmul(x, b.read(wte, "lm_head"), false, true, "lm_head");
  }
  return classification_loss(b, "loss", logits, labels);
}

Tid build_transformer(ModelBuilder& b, const ModelConfig& c) {
  const std::int64_t B = c.batch, S = c.seq, H = c.hidden;
  const int heads = static_cast<int>(c.heads);
  const Tid src = b.input("inputs", {B * S}, DType::I32);
  const Tid tgt = b.input("targets", {B * S}, DType::I32);
  const Tid labels = b.input("labels", {B * S}, DType::I32);
  Tid logits;
  {
    auto s = b.scope("transformer");
    // One table shared by the source and target embeddings and the pre-softmax projection.
    const Pid table = b.variable("shared_embedding", {c.vocab, H});
    auto embed = [&](Tid ids) {
      auto e = b.scope("embedding");
      Tid x = b.mul(b.gather(b.read(table, "GatherV2"), ids), b.constant("scale", {}, DType::F32), "mul");
      x = add_positions(b, x, b.constant("positional_encoding", {S, H}, DType::F32), B, S);
      return dropout(b, "dropout", x);
    };
    Tid enc;
    {
      auto es = b.scope("encoder");
      enc = embed(src);
      for (int l = 0; l < c.layers; ++l) {
        auto ls = b.scope(fmt::format("layer_{}", l));
        Tid a = dropout(b, "self_attention/dropout", attention(b, "self_attention", enc, enc, B, S, S, heads, kNoTensor, true));
        enc = layer_norm(b, "self_attention/LayerNorm", b.add(enc, a, "self_attention/add"));
        Tid f;
        {
          auto fs = b.scope("ffn");
          f = dropout(b, "dropout", feed_forward(b, enc, c.ffn, H, false));
        }
        enc = layer_norm(b, "ffn/LayerNorm", b.add(enc, f, "ffn/add"));
      }
    }
    Tid dec;
    {
      auto ds = b.scope("decoder");
      dec = embed(tgt);
      const Tid mask = causal_mask(b, S);
      for (int l = 0; l < c.layers; ++l) {
        auto ls = b.scope(fmt::format("layer_{}", l));
        Tid a = dropout(b, "self_attention/dropout", attention(b, "self_attention", dec, dec, B, S, S, heads, mask, true));
        dec = layer_norm(b, "self_attention/LayerNorm", b.add(dec, a, "self_attention/add"));
        a = dropout(b, "encdec_attention/dropout", attention(b, "encdec_attention", dec, enc, B, S, S, heads, kNoTensor, false));
        dec = layer_norm(b, "encdec_attention/LayerNorm", b.add(dec, a, "encdec_attention/add"));
        Tid f;
        {
          auto fs = b.scope("ffn");
          f = dropout(b, "dropout", feed_forward(b, dec, c.ffn, H, false));
        }
        dec = layer_norm(b, "ffn/LayerNorm", b.add(dec, f, "ffn/add"));
      }
    }
    logits = b.matmul(dec, b.read(table, "softmax"), false, true, "logits");
  }
  return classification_loss(b, "loss", logits, labels);
}

namespace {

// A token sequence [batch*seq] embedded and cut into per-step [batch, d] slices.
std::vector<Tid> embed_steps(ModelBuilder& b, Pid table, Tid ids, std::int64_t batch, std::int64_t seq) {
  const Tid e = b.gather(b.read(table, "GatherV2"), ids);
  const std::int64_t d = b.tensor(e).shape[1];
  const std::vector<Tid> steps = b.split(b.reshape(e, {batch, seq, d}, "Reshape"), 1, static_cast<int>(seq), "unstack");
  std::vector<Tid> out;
  for (std::size_t t = 0; t < steps.size(); ++t) out.push_back(b.reshape(steps[t], {batch, d}, fmt::format("step_{}", t)));
  return out;
}

struct LstmWeights {
  Tid w, u, bias;
};

LstmWeights lstm_weights(ModelBuilder& b, std::int64_t in, std::int64_t h) {
  const Pid w = b.variable("kernel", {in, 4 * h});
  const Pid u = b.variable("recurrent_kernel", {h, 4 * h});
  const Pid bias = b.variable("bias", {4 * h});
  return {b.read(w, "kernel"), b.read(u, "recurrent_kernel"), b.read(bias, "bias")};
}

// One LSTM layer over the steps (reversed when `backwards`), weights read once.
std::vector<Tid> lstm_layer(ModelBuilder& b, std::string_view name, const std::vector<Tid>& xs, std::int64_t h, bool backwards) {
  auto s = b.scope(name);
  const std::int64_t batch = b.tensor(xs[0]).shape[0];
  const LstmWeights wts = lstm_weights(b, b.tensor(xs[0]).shape[1], h);
  LstmState st{b.constant("zeros_h", {batch, h}, DType::F32), b.constant("zeros_c", {batch, h}, DType::F32)};
  std::vector<Tid> out(xs.size());
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::size_t t = backwards ? xs.size() - 1 - k : k;
    auto ts = b.scope(fmt::format("step_{}", t));
    st = lstm_step(b, xs[t], st, wts.w, wts.u, wts.bias);
    out[t] = st.h;
  }
  return out;
}

// Stacks per-step [batch, d] tensors into [batch*seq, d].
Tid stack_steps(ModelBuilder& b, const std::vector<Tid>& steps, std::string_view leaf) {
  const std::int64_t batch = b.tensor(steps[0]).shape[0], d = b.tensor(steps[0]).shape[1];
  std::vector<Tid> parts;
  for (std::size_t t = 0; t < steps.size(); ++t) parts.push_back(b.reshape(steps[t], {batch, 1, d}, fmt::format("expand_{}", t)));
  const Tid stacked = b.concat(parts, 1, leaf);
  return b.reshape(stacked, {batch * static_cast<std::int64_t>(steps.size()), d}, "Reshape");
}

}  // namespace

Tid build_gnmt(ModelBuilder& b, const ModelConfig& c) {
  const std::int64_t B = c.batch, S = c.seq, H = c.hidden;
  const Tid src = b.input("source", {B * S}, DType::I32);
  const Tid tgt = b.input("target_input", {B * S}, DType::I32);
  const Tid labels = b.input("target_output", {B * S}, DType::I32);
  Tid logits;
  {
    auto s = b.scope("gnmt");
    Tid memory;  // encoder outputs [B*S, H]
    {
      auto es = b.scope("encoder");
      const Pid table = b.variable("embedding", {c.vocab, H});
      std::vector<Tid> xs = embed_steps(b, table, src, B, S);
      // Layer 0 is bidirectional; its two directions are concatenated.
      const std::vector<Tid> fw = lstm_layer(b, "layer_0_fw", xs, H, false);
      const std::vector<Tid> bw = lstm_layer(b, "layer_0_bw", xs, H, true);
      for (std::size_t t = 0; t < xs.size(); ++t) {
        auto ts = b.scope(fmt::format("layer_0/step_{}", t));
        const std::vector<Tid> both{fw[t], bw[t]};
        xs[t] = b.concat(both, 1, "concat");
      }
      for (int l = 1; l < c.layers; ++l) {
        std::vector<Tid> ys = lstm_layer(b, fmt::format("layer_{}", l), xs, H, false);
        if (l >= 2)  // residual connections from the third layer on (Wu et al., 2016)
          for (std::size_t t = 0; t < ys.size(); ++t) {
            auto ts = b.scope(fmt::format("layer_{}/step_{}", l, t));
            ys[t] = b.add(ys[t], xs[t], "residual");
          }
        xs = std::move(ys);
      }
      memory = stack_steps(b, xs, "stack");
    }
    std::vector<Tid> outs;
    {
      auto ds = b.scope("decoder");
      const Pid table = b.variable("embedding", {c.vocab, H});
      const std::vector<Tid> ys = embed_steps(b, table, tgt, B, S);
      Tid keys, memory3;
      // Normalised Bahdanau attention: keys projected once, the query per step.
      const Pid wq = b.variable("attention/query_kernel", {H, H});
      const Pid wk = b.variable("attention/memory_kernel", {H, H});
      const Pid v = b.variable("attention/v", {H, 1});
      {
        auto as = b.scope("attention");
        keys = b.reshape(b.matmul(memory, b.read(wk, "memory_layer"), false, false, "memory_layer"), {B, S, H}, "Reshape");
        memory3 = b.reshape(memory, {B, S, H}, "Reshape_1");
      }
      const Tid q_kernel = b.read(wq, "query_layer");
      const Tid v_read = b.read(v, "v");
      std::vector<LstmWeights> wts;
      for (int l = 0; l < c.layers; ++l) {
        auto ls = b.scope(fmt::format("layer_{}", l));
        wts.push_back(lstm_weights(b, l == 0 ? H : 2 * H, H));
      }
      std::vector<LstmState> states;
      for (int l = 0; l < c.layers; ++l) {
        auto ls = b.scope(fmt::format("layer_{}", l));
        states.push_back({b.constant("zeros_h", {B, H}, DType::F32), b.constant("zeros_c", {B, H}, DType::F32)});
      }
      for (std::int64_t t = 0; t < S; ++t) {
        Tid x;
        {
          auto ls = b.scope(fmt::format("layer_0/step_{}", t));
          states[0] = lstm_step(b, ys[t], states[0], wts[0].w, wts[0].u, wts[0].bias);
          x = states[0].h;
        }
        Tid context;
        {
          auto as = b.scope(fmt::format("attention/step_{}", t));
          const Tid q = b.reshape(b.matmul(x, q_kernel, false, false, "query"), {B, 1, H}, "Reshape");
          const Tid energy = b.tanh(b.add(keys, q, "add"));
          const Tid scores = b.reshape(b.matmul(b.reshape(energy, {B * S, H}, "Reshape_1"), v_read, false, false, "score"),
                                       {B, 1, S}, "Reshape_2");
          const Tid weights = b.softmax(scores);
          context = b.reshape(b.batch_matmul(weights, memory3, false, false, "context"), {B, H}, "Reshape_3");
        }
        for (int l = 1; l < c.layers; ++l) {
          auto ls = b.scope(fmt::format("layer_{}/step_{}", l, t));
          const std::vector<Tid> in{x, context};
          states[l] = lstm_step(b, b.concat(in, 1, "concat"), states[l], wts[l].w, wts[l].u, wts[l].bias);
          x = l >= 2 ? b.add(states[l].h, x, "residual") : states[l].h;
        }
        outs.push_back(x);
      }
    }
    auto os = b.scope("output_projection");
    logits = dense(b, "dense", stack_steps(b, outs, "stack"), c.vocab);
  }
  return classification_loss(b, "loss", logits, labels);
}

}  // namespace placesim::models
