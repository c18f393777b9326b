#pragma once
// Layers of the model zoo, each a scope of operators recorded in the builder's style: in the
// TensorFlow style they are the primitives Keras 3 emits (so a BatchNormalization is ~40 forward
// operators, a Dropout ~25), in the fused style one kernel each. Tensors are NHWC for images and
// [tokens, features] matrices for sequences (attention reshapes to [batch, heads, seq, dim]).
#include <string_view>

#include "sim/models/builder.h"

namespace placesim::models {

// Keras Conv2D: kernel [kh, kw, cin, filters] (+ bias) and an optional ReLU.
Tid conv2d_layer(ModelBuilder& b, std::string_view name, Tid x, int filters, int kh, int kw, int stride = 1,
                 bool same_padding = true, bool bias = true);
// BatchNormalization over every axis but the last (training mode: batch statistics, moving
// averages updated, gamma and beta trained).
Tid batch_norm(ModelBuilder& b, std::string_view name, Tid x);
// Dense on a matrix [rows, in] -> [rows, units].
Tid dense(ModelBuilder& b, std::string_view name, Tid x, std::int64_t units, bool bias = true);
Tid dropout(ModelBuilder& b, std::string_view name, Tid x);
// LayerNormalization over the last axis.
Tid layer_norm(ModelBuilder& b, std::string_view name, Tid x);
Tid gelu(ModelBuilder& b, Tid x);
Tid relu_layer(ModelBuilder& b, std::string_view name, Tid x);
// Embedding lookup of int32 ids from a [vocab, dim] table (the variable is returned in `table`).
Tid embedding(ModelBuilder& b, std::string_view name, Tid ids, std::int64_t vocab, std::int64_t dim, Pid* table = nullptr);
// Multi-head attention on token matrices: queries [batch*seq_q, d], keys/values [batch*seq_k, d];
// `mask` is an additive bias broadcastable to [batch, heads, seq_q, seq_k] (kNoTensor: none).
// `fused_qkv` projects q, k, v with one [d, 3d] dense and a split (GPT-2).
Tid attention(ModelBuilder& b, std::string_view name, Tid queries, Tid keys_values, std::int64_t batch, std::int64_t seq_q,
              std::int64_t seq_k, int heads, Tid mask, bool self_attention, bool fused_qkv = false);
// One LSTM step: returns {h, c}. `w` [in, 4h], `u` [h, 4h] and `bias` [4h] are variable reads.
struct LstmState {
  Tid h = kNoTensor;
  Tid c = kNoTensor;
};
LstmState lstm_step(ModelBuilder& b, Tid x, LstmState prev, Tid w, Tid u, Tid bias);
// Sparse softmax cross-entropy of logits [rows, classes] against int labels [rows], averaged as
// Keras does; returns the scalar loss. In the TensorFlow style also emits Keras's accuracy and
// loss-tracker metric updates (`probabilities` feeds ArgMax; may be kNoTensor).
Tid classification_loss(ModelBuilder& b, std::string_view name, Tid logits, Tid labels, Tid probabilities = kNoTensor);
// The training iteration: backward from `loss`, then the optimizer step (and metrics).
void train_step(ModelBuilder& b, Tid loss);

}  // namespace placesim::models
