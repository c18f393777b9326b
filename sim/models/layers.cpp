#include "sim/models/layers.h"

#include <cmath>
#include <string>

namespace placesim::models {

namespace {

double elements(const ModelBuilder& b, Tid t) { return static_cast<double>(num_elements(b.tensor(t).shape)); }

// Keras 3's seeded stateless dropout draws its key from a seed-generator variable.
Tid keras_dropout(ModelBuilder& b, Tid x) {
  const Shape shape = b.tensor(x).shape;
  const double n = static_cast<double>(num_elements(shape));
  const Pid seed = b.variable("seed_generator_state", {2}, false);
  const Tid state = b.read(seed);
  const Tid scaled_seed = b.emit1("mul", "Mul", {state, b.constant("mul/y", {}, DType::I64)}, {{2}, DType::I64}, 2);
  const Tid next = b.emit1("Add", "AddV2", {b.constant("Const", {2}, DType::I64), b.read(seed, "Add", false)}, {{2}, DType::I64}, 2);
  b.assign(seed, "AssignVariableOp", "AssignVariableOp", next);
  const Tid key_seed = b.emit1("Cast", "Cast", {b.emit1("FloorMod", "FloorMod", {scaled_seed, b.constant("FloorMod/y", {}, DType::I64)},
                                                         {{2}, DType::I64}, 2)},
                               {{2}, DType::I32}, 2);
  const Tid shape_const = b.constant("Shape", {static_cast<std::int64_t>(shape.size())});
  auto s = b.scope("stateless_dropout");
  const Tid scaled = b.mul(x, b.constant("Const", {}, DType::F32), "Mul");
  Tid uniform = kNoTensor;
  {
    auto r = b.scope("stateless_random_uniform");
    const Tid lo = b.constant("min", {}, DType::F32);
    const Tid hi = b.constant("max", {}, DType::F32);
    const std::int32_t key = b.emit("StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounter", {key_seed},
                                    {{{1}, DType::I64}, {{2}, DType::I64}}, 0);
    const Tid bits = b.emit1("StatelessRandomUniformV2", "StatelessRandomUniformV2",
                             {shape_const, b.out(key, 0), b.out(key, 1), b.constant("StatelessRandomUniformV2/alg")},
                             {shape, DType::F32}, 4 * n);
    const Tid range = b.emit1("sub", "Sub", {hi, lo}, {{}, DType::F32}, 1);
    const Tid scaled_bits = b.emit1("mul", "Mul", {bits, range}, {shape, DType::F32}, n);
    uniform = scaled_bits;
  }
  uniform = b.emit1("stateless_random_uniform", "AddV2", {b.constant("stateless_random_uniform/min", {}, DType::F32), uniform},
                    {shape, DType::F32}, n);
  const Tid keep = b.emit1("GreaterEqual", "GreaterEqual", {uniform, b.constant("GreaterEqual/y", {}, DType::F32)},
                           {shape, DType::Bool}, n);
  const std::int32_t op = b.emit("SelectV2", "SelectV2", {keep, scaled, b.constant("Const_1", {}, DType::F32)}, {{shape, DType::F32}}, n);
  b.differentiable(op, [keep, scaled, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Tid zeros = m.constant("zeros", {}, DType::F32);
    m.add_grad(scaled, m.emit1("SelectV2", "SelectV2", {keep, dy[0], zeros}, {m.tensor(scaled).shape, DType::F32}, n));
  });
  return b.out(op);
}

// erf(x) with TensorFlow's gradient: 2/sqrt(pi) * exp(-x^2) * dy.
Tid erf(ModelBuilder& b, Tid x) {
  const double n = elements(b, x);
  const std::int32_t op = b.emit("Erf", "Erf", {x}, {{b.tensor(x).shape, DType::F32}}, 10 * n);
  b.differentiable(op, [x, n](ModelBuilder& m, std::span<const Tid> dy) {
    const Shape s = m.tensor(x).shape;
    const Tid sq = m.emit1("Square", "Square", {x}, {s, DType::F32}, n);
    const Tid neg = m.emit1("Neg", "Neg", {sq}, {s, DType::F32}, n);
    const Tid ex = m.emit1("Exp", "Exp", {neg}, {s, DType::F32}, 4 * n);
    const Tid scaled = m.emit1("mul", "Mul", {m.constant("mul/x", {}, DType::F32), ex}, {s, DType::F32}, n);
    m.add_grad(x, m.emit1("mul_1", "Mul", {dy[0], scaled}, {s, DType::F32}, n));
  });
  return b.out(op);
}

Tid neg(ModelBuilder& b, Tid x) {
  const double n = elements(b, x);
  const std::int32_t op = b.emit("Neg", "Neg", {x}, {{b.tensor(x).shape, DType::F32}}, n);
  b.differentiable(op, [x, n](ModelBuilder& m, std::span<const Tid> dy) {
    m.add_grad(x, m.emit1("Neg", "Neg", {dy[0]}, {m.tensor(x).shape, DType::F32}, n));
  });
  return b.out(op);
}

// Mean and variance over `axes` (keepdims) as keras.ops.moments records them.
std::pair<Tid, Tid> moments(ModelBuilder& b, Tid x, const std::vector<int>& axes) {
  auto s = b.scope("moments");
  const Tid mean = b.mean(x, axes, true, "mean");
  const Tid centred = b.square_diff(x, b.stop_gradient(mean));
  const Tid var = b.mean(centred, axes, true, "variance");
  return {mean, var};
}

}  // namespace

Tid conv2d_layer(ModelBuilder& b, std::string_view name, Tid x, int filters, int kh, int kw, int stride, bool same, bool bias) {
  auto s = b.scope(name);
  const std::int64_t cin = b.tensor(x).shape[3];
  const Pid kernel = b.variable("kernel", {kh, kw, cin, filters});
  Tid y = b.conv2d(x, b.read(kernel, "convolution"), stride, same, "convolution");
  if (bias) {
    const Pid bv = b.variable("bias", {filters});
    Tid r = b.read(bv, "Reshape");
    if (!b.fused()) r = b.reshape(r, {1, 1, 1, filters}, "Reshape");
    y = b.add(y, r, "add");
  }
  return y;
}

Tid relu_layer(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  return b.relu(x);
}

Tid batch_norm(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  const Shape shape = b.tensor(x).shape;
  const std::int64_t c = shape.back();
  std::vector<int> axes;
  for (int i = 0; i + 1 < static_cast<int>(shape.size()); ++i) axes.push_back(i);
  const Pid gamma = b.variable("gamma", {c});
  const Pid beta = b.variable("beta", {c});
  const Pid moving_mean = b.variable("moving_mean", {c}, false);
  const Pid moving_var = b.variable("moving_variance", {c}, false);
  if (b.fused()) {
    const double n = static_cast<double>(num_elements(shape));
    const Tid g = b.read(gamma), be = b.read(beta);
    const std::int32_t op = b.emit("FusedBatchNormV3", "FusedBatchNormV3", {x, g, be, b.read(moving_mean), b.read(moving_var)},
                                   {{shape, DType::F32}, {{c}, DType::F32}, {{c}, DType::F32}}, 8 * n);
    const Tid mean = b.out(op, 1), var = b.out(op, 2);
    b.differentiable(op, [x, g, be, mean, var, n, c](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      const std::int32_t grad = m.emit("FusedBatchNormGradV3", "FusedBatchNormGradV3", {dy[0], x, g, mean, var},
                                       {{m.tensor(x).shape, DType::F32}, {{c}, DType::F32}, {{c}, DType::F32}}, 10 * n);
      m.add_grad(x, m.out(grad, 0));
      m.add_grad(g, m.out(grad, 1));
      m.add_grad(be, m.out(grad, 2));
    });
    return b.out(op);
  }
  // keras.layers.BatchNormalization.call(training=True) on TensorFlow.
  const Tid mm = b.read(moving_mean, "Cast");
  const Tid mv = b.read(moving_var, "Cast_1");
  const auto [mean4, var4] = moments(b, x, axes);
  Tid mean, var;
  {
    auto m = b.scope("moments");
    mean = b.reshape(mean4, {c}, "Squeeze", "Squeeze");
    var = b.reshape(var4, {c}, "Squeeze_1", "Squeeze");
  }
  const Tid new_mean = b.add(b.mul(mm, b.constant("mul/y", {}, DType::F32), "mul"),
                             b.mul(mean, b.constant("mul_1/y", {}, DType::F32), "mul_1"), "add");
  b.assign(moving_mean, "AssignVariableOp", "AssignVariableOp", new_mean);
  const Tid new_var = b.add(b.mul(mv, b.constant("mul_2/y", {}, DType::F32), "mul_2"),
                            b.mul(var, b.constant("mul_3/y", {}, DType::F32), "mul_3"), "add_1");
  b.assign(moving_var, "AssignVariableOp_1", "AssignVariableOp", new_var);
  const Tid g = b.read(gamma, "Cast_2");
  const Tid be = b.read(beta, "Cast_3");
  auto bn = b.scope("batchnorm");
  const Tid inv = b.unary("Rsqrt", "Rsqrt", b.add(var, b.constant("add/y", {}, DType::F32), "add"), 1, "RsqrtGrad");
  const Tid scale = b.mul(g, inv, "mul");
  const Tid xs = b.mul(x, scale, "mul_1");
  const Tid shift = b.sub(be, b.mul(mean, scale, "mul_2"), "sub");
  return b.add(xs, shift, "add_1");
}

Tid dense(ModelBuilder& b, std::string_view name, Tid x, std::int64_t units, bool bias) {
  auto s = b.scope(name);
  const std::int64_t in = b.tensor(x).shape[1];
  const Pid kernel = b.variable("kernel", {in, units});
  Tid y = b.matmul(x, b.read(kernel, "Cast"), false, false, "MatMul");
  if (bias) {
    const Pid bv = b.variable("bias", {units});
    y = b.add(y, b.read(bv, "Add"), "Add");
  }
  return y;
}

Tid dropout(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  if (!b.fused()) return keras_dropout(b, x);
  const Shape shape = b.tensor(x).shape;
  const double n = static_cast<double>(num_elements(shape));
  const std::int32_t op = b.emit("Dropout", "Dropout", {x}, {{shape, DType::F32}, {shape, DType::Bool}}, 2 * n);
  const Tid mask = b.out(op, 1);
  b.differentiable(op, [x, mask, n](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    m.add_grad(x, m.emit1("DropoutGrad", "DropoutGrad", {dy[0], mask}, {m.tensor(x).shape, DType::F32}, n));
  });
  return b.out(op);
}

Tid layer_norm(ModelBuilder& b, std::string_view name, Tid x) {
  auto s = b.scope(name);
  const Shape shape = b.tensor(x).shape;
  const std::int64_t d = shape.back();
  const Pid gamma = b.variable("gamma", {d});
  const Pid beta = b.variable("beta", {d});
  if (b.fused()) {
    const double n = static_cast<double>(num_elements(shape));
    Shape rows = shape;
    rows.back() = 1;
    const Tid g = b.read(gamma), be = b.read(beta);
    const std::int32_t op = b.emit("LayerNormalization", "LayerNormalization", {x, g, be},
                                   {{shape, DType::F32}, {rows, DType::F32}, {rows, DType::F32}}, 8 * n);
    const Tid mean = b.out(op, 1), inv = b.out(op, 2);
    b.differentiable(op, [x, g, be, mean, inv, n, d](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      const std::int32_t grad = m.emit("LayerNormalizationGrad", "LayerNormalizationGrad", {dy[0], x, g, mean, inv},
                                       {{m.tensor(x).shape, DType::F32}, {{d}, DType::F32}, {{d}, DType::F32}}, 10 * n);
      m.add_grad(x, m.out(grad, 0));
      m.add_grad(g, m.out(grad, 1));
      m.add_grad(be, m.out(grad, 2));
    });
    return b.out(op);
  }
  // keras.layers.LayerNormalization: inv = rsqrt(var + eps) * gamma; y = x * inv + (beta - mean * inv).
  std::vector<int> axes{static_cast<int>(shape.size()) - 1};
  const auto [mean, var] = moments(b, x, axes);
  const Tid inv = b.mul(b.unary("Rsqrt", "Rsqrt", b.add(var, b.constant("add/y", {}, DType::F32), "add"), 1, "RsqrtGrad"),
                        b.read(gamma, "mul"), "mul");
  const Tid shift = b.add(b.mul(neg(b, mean), inv, "mul_1"), b.read(beta, "add_1"), "add_1");
  return b.add(b.mul(x, inv, "mul_2"), shift, "add_2");
}

Tid gelu(ModelBuilder& b, Tid x) {
  auto s = b.scope("gelu");
  if (b.fused()) return b.unary("Gelu", "Gelu", x, 8, "GeluGrad", false);
  // tf.nn.gelu(approximate=False): 0.5 * x * (1 + erf(x / sqrt(2))).
  const Tid half = b.mul(x, b.constant("mul/y", {}, DType::F32), "mul");
  const Tid e = erf(b, b.mul(x, b.constant("mul_1/y", {}, DType::F32), "mul_1"));
  return b.mul(half, b.add(b.constant("add/x", {}, DType::F32), e, "add"), "mul_2");
}

Tid embedding(ModelBuilder& b, std::string_view name, Tid ids, std::int64_t vocab, std::int64_t dim, Pid* table) {
  auto s = b.scope(name);
  const Pid t = b.variable("embeddings", {vocab, dim});
  if (table) *table = t;
  return b.gather(b.read(t, "GatherV2"), ids);
}

Tid attention(ModelBuilder& b, std::string_view name, Tid queries, Tid keys_values, std::int64_t batch, std::int64_t seq_q,
              std::int64_t seq_k, int heads, Tid mask, bool self_attention, bool fused_qkv) {
  auto s = b.scope(name);
  const std::int64_t d = b.tensor(queries).shape[1];
  const std::int64_t dh = d / heads;
  Tid q, k, v;
  if (fused_qkv && self_attention) {
    const std::vector<Tid> parts = b.split(dense(b, "c_attn", queries, 3 * d), 1, 3);
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    q = dense(b, "query", queries, d);
    k = dense(b, "key", keys_values, d);
    v = dense(b, "value", keys_values, d);
  }
  auto to_heads = [&](Tid t, std::int64_t seq, const char* reshape_leaf, const char* transpose_leaf) {
    return b.transpose(b.reshape(t, {batch, seq, heads, dh}, reshape_leaf), {0, 2, 1, 3}, transpose_leaf);
  };
  const Tid qh = to_heads(q, seq_q, "Reshape", "transpose");
  const Tid kh = to_heads(k, seq_k, "Reshape_1", "transpose_1");
  const Tid vh = to_heads(v, seq_k, "Reshape_2", "transpose_2");
  Tid scores = b.mul(b.batch_matmul(qh, kh, false, true, "MatMul"), b.constant("Mul/y", {}, DType::F32), "Mul");
  if (mask != kNoTensor) scores = b.add(scores, mask, "add");
  const Tid probs = dropout(b, "dropout", b.softmax(scores));
  const Tid ctx = b.batch_matmul(probs, vh, false, false, "MatMul_1");
  const Tid merged = b.reshape(b.transpose(ctx, {0, 2, 1, 3}, "transpose_3"), {batch * seq_q, d}, "Reshape_3");
  return dense(b, fused_qkv ? "c_proj" : "output", merged, d);
}

LstmState lstm_step(ModelBuilder& b, Tid x, LstmState prev, Tid w, Tid u, Tid bias) {
  const std::int64_t rows = b.tensor(x).shape[0];
  const std::int64_t h = b.tensor(u).shape[0];
  const Tid zx = b.matmul(x, w, false, false, "MatMul");
  const Tid zh = b.matmul(prev.h, u, false, false, "MatMul_1");
  if (b.fused()) {
    // TensorFlow's LSTMBlockCell: one kernel for the gates, one for their gradient.
    const double n = static_cast<double>(rows * h);
    const Shape state{rows, h};
    const Shape gates_shape{rows, 4 * h};
    const std::int32_t op = b.emit("LSTMBlockCell", "LSTMBlockCell", {zx, zh, prev.c, bias},
                                   {{state, DType::F32}, {state, DType::F32}, {gates_shape, DType::F32}}, 20 * n);
    const Tid c = b.out(op, 0), hh = b.out(op, 1), gates = b.out(op, 2);
    const Tid c_prev = prev.c;
    b.differentiable(op, [zx, zh, c_prev, bias, c, gates, n, gates_shape, h, state](ModelBuilder& m, std::span<const Tid> dy) {
      std::vector<Tid> in{c_prev, gates, c};
      for (Tid g : dy.first(2))
        if (g != kNoTensor) in.push_back(g);
      const std::int32_t grad = m.emit("LSTMBlockCellGrad", "LSTMBlockCellGrad", std::move(in),
                                       {{gates_shape, DType::F32}, {state, DType::F32}, {{4 * h}, DType::F32}}, 20 * n);
      m.add_grad(zx, m.out(grad, 0));
      m.add_grad(zh, m.out(grad, 0));
      m.add_grad(c_prev, m.out(grad, 1));
      m.add_grad(bias, m.out(grad, 2));
    });
    return {hh, c};
  }
  const Tid z = b.add(b.add(zx, zh, "add"), bias, "BiasAdd");
  const std::vector<Tid> gates = b.split(z, 1, 4);
  const Tid i = b.sigmoid(gates[0], "Sigmoid");
  const Tid f = b.sigmoid(gates[1], "Sigmoid_1");
  const Tid g = b.tanh(gates[2], "Tanh");
  const Tid o = b.sigmoid(gates[3], "Sigmoid_2");
  const Tid c = b.add(b.mul(f, prev.c, "mul"), b.mul(i, g, "mul_1"), "add_1");
  return {b.mul(o, b.tanh(c, "Tanh_1"), "mul_2"), c};
}

Tid classification_loss(ModelBuilder& b, std::string_view name, Tid logits, Tid labels, Tid probabilities) {
  const Shape shape = b.tensor(logits).shape;
  const std::int64_t rows = shape[0];
  const double n = static_cast<double>(num_elements(shape));
  if (b.fused()) {
    auto s = b.scope(name);
    const std::int32_t op = b.emit("SoftmaxCrossEntropy", "SoftmaxCrossEntropyLoss", {logits, labels},
                                   {{{}, DType::F32}, {shape, DType::F32}}, 6 * n);
    const Tid log_probs = b.out(op, 1);
    b.differentiable(op, [logits, labels, log_probs, n](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      m.add_grad(logits, m.emit1("SoftmaxCrossEntropyGrad", "SoftmaxCrossEntropyLossGrad", {dy[0], log_probs, labels},
                                 {m.tensor(logits).shape, m.tensor(logits).dtype}, 2 * n));
    });
    return b.out(op);
  }
  Tid loss;
  Tid label_ids;
  {
    auto s = b.scope(name);
    const Shape label_shape = b.tensor(labels).shape;
    Tid l = b.emit1("Cast", "Cast", {labels}, {label_shape, DType::I64}, static_cast<double>(num_elements(label_shape)));
    if (label_shape.size() > 1) l = b.reshape(l, {rows}, "Squeeze", "Squeeze");
    label_ids = b.emit1("Cast_1", "Cast", {l}, {{rows}, DType::I32}, static_cast<double>(rows));
    b.constant("SparseSoftmaxCrossEntropyWithLogits/Shape", {1});
    std::int32_t op;
    {
      auto x = b.scope("SparseSoftmaxCrossEntropyWithLogits");
      op = b.emit("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", {logits, label_ids},
                  {{{rows}, DType::F32}, {shape, DType::F32}}, 6 * n);
    }
    const Tid backprop = b.out(op, 1);
    b.differentiable(op, [logits, backprop, n, rows](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      const Tid e = m.emit1("ExpandDims", "ExpandDims", {dy[0], m.constant("ExpandDims/dim")}, {{rows, 1}, DType::F32}, 0);
      m.add_grad(logits, m.emit1("mul", "Mul", {backprop, e}, {m.tensor(logits).shape, DType::F32}, n));
    });
    const Tid total = b.reduce_sum(b.out(op, 0), {0}, false, "Sum");
    b.constant("Shape", {1});
    const Tid count = b.emit1("Prod", "Prod", {b.constant("Const_1", {1}), b.constant("Const_2", {1})}, {{}, DType::I32}, 1);
    loss = b.div(total, b.emit1("Cast_2", "Cast", {count}, {{}, DType::F32}, 1), "truediv");
  }
  loss = b.add(loss, b.constant(std::string(name) + "_add/y", {}, DType::F32), std::string(name) + "_add");
  if (probabilities == kNoTensor) return loss;
  // Keras's compiled metrics: the loss tracker and sparse categorical accuracy.
  auto m = b.scope("metrics");
  const Tid range = b.emit1("range", "Range", {b.constant("Rank"), b.constant("range/start"), b.constant("range/delta")}, {{0}, DType::I32}, 0);
  const Pid total = b.variable("loss_total", {}, false);
  const Pid seen = b.variable("loss_count", {}, false);
  b.assign(total, "AssignAddVariableOp", "AssignAddVariableOp", b.emit1("Sum", "Sum", {loss, range}, {{}, DType::F32}, 1));
  b.assign(seen, "AssignAddVariableOp_1", "AssignAddVariableOp", b.emit1("Cast", "Cast", {b.constant("Size")}, {{}, DType::F32}, 1));
  const Tid predicted = b.emit1("ArgMax", "ArgMax", {probabilities, b.constant("ArgMax/dimension")}, {{rows}, DType::I64},
                                static_cast<double>(num_elements(shape)));
  const Tid label_f = b.emit1("Cast_1", "Cast", {labels}, {b.tensor(labels).shape, DType::F32}, static_cast<double>(rows));
  const Tid squeezed = b.reshape(label_f, {rows}, "Squeeze", "Squeeze");
  const Tid hits = b.emit1("Equal", "Equal", {squeezed, b.emit1("Cast_2", "Cast", {predicted}, {{rows}, DType::F32}, static_cast<double>(rows))},
                           {{rows}, DType::Bool}, static_cast<double>(rows));
  const Tid hits_f = b.reshape(b.emit1("Cast_3", "Cast", {hits}, {{rows}, DType::F32}, static_cast<double>(rows)), {rows}, "Reshape");
  const Pid correct = b.variable("accuracy_total", {}, false);
  const Pid counted = b.variable("accuracy_count", {}, false);
  b.assign(correct, "AssignAddVariableOp_2", "AssignAddVariableOp",
           b.emit1("Sum_1", "Sum", {hits_f, b.constant("Const", {1})}, {{}, DType::F32}, static_cast<double>(rows)));
  b.assign(counted, "AssignAddVariableOp_3", "AssignAddVariableOp", b.emit1("Cast_4", "Cast", {b.constant("Size_1")}, {{}, DType::F32}, 1));
  b.emit1("Identity", "Identity", {loss}, {{}, DType::F32}, 0);
  return loss;
}

void train_step(ModelBuilder& b, Tid loss) {
  b.backward(loss);
  b.optimizer_step();
}

}  // namespace placesim::models
