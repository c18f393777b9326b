#pragma once
// The model zoo: the training graphs of the DNNs the placement papers use, built from their
// architecture (sim/models/builder.h) and costed on a GPU (sim/models/gpu.h), so every scenario
// runs with nothing but the repository. Documented in docs/model-zoo.md.
//
//   alexnet, vgg16     Keras CIFAR-10 variants of the QuickP graphs (32x32, batch 512)
//   resnet50           ResNet-50 v1.5 (torchvision), ImageNet 224x224
//   inception-v3       Inception-v3 without the auxiliary head, ImageNet 299x299
//   bert-base          BERT-base pre-training (masked LM + next sentence), sequence 128
//   fnet-base          FNet-base: BERT with Fourier mixing instead of attention
//   gpt2               GPT-2 small (124 M), causal language modelling, sequence 1024
//   transformer        encoder-decoder Transformer (Vaswani et al.), N layers, H heads
//   gnmt               GNMT: LSTM encoder (bidirectional first layer) and decoder with
//                      attention, unrolled over the sequence
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/graph.h"
#include "sim/models/builder.h"
#include "sim/models/gpu.h"
#include "sim/config/options.h"

namespace placesim::models {

// What to build. Size fields left at 0 take the model's default; a field a model does not have
// (e.g. `seq` for alexnet) must stay 0.
struct ModelConfig {
  std::string model;
  std::int64_t batch = 0;
  std::int64_t seq = 0;      // sequence length (tokens; source and target length for gnmt/transformer)
  std::int64_t layers = 0;   // transformer blocks (per stack for transformer), LSTM layers per stack for gnmt
  std::int64_t heads = 0;
  std::int64_t hidden = 0;   // model width
  std::int64_t ffn = 0;      // feed-forward width (default 4 x hidden)
  std::int64_t vocab = 0;
  std::int64_t image = 0;    // input height and width
  std::int64_t classes = 0;
  GraphStyle style = GraphStyle::TensorFlow;
  OptimizerKind optimizer = OptimizerKind::Adam;
  GpuSpec gpu = *find_gpu_preset("rtx3070");
};

struct ZooModel {
  std::string name;
  std::string description;
  std::vector<std::string> keys;  // size keys it takes ("batch", "seq", ...)
  ModelConfig defaults;
};
const std::vector<ZooModel>& zoo_models();
const ZooModel* find_zoo_model(std::string_view name);
std::string zoo_model_names();

// Defaults filled in. Throws InputError naming `file` and `path + ".<key>"` on an unknown model,
// a key the model does not take, or a value out of range.
ModelConfig resolve_model_config(const ModelConfig& config, const std::string& file = "", const std::string& path = "graph");

// Records one training iteration (forward, backward, optimizer) of a resolved config.
ModelBuilder record_model(const ModelConfig& resolved);

// The placesim graph of a model (resolves the config first).
Graph zoo_graph(const ModelConfig& config);

// A scenario's `graph:` mapping with a `model:` key: model, batch, seq, layers, heads, hidden,
// ffn, vocab, image, classes, style (tensorflow | fused), optimizer (adam | sgd), gpu (a preset
// name or mapping, see gpu_from_yaml). Strict; errors name `path.<key>`.
ModelConfig model_config_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);

inline constexpr EnumName<OptimizerKind> kOptimizerNames[] = {{OptimizerKind::Adam, "adam"}, {OptimizerKind::Sgd, "sgd"}};

GraphStyle parse_graph_style(std::string_view text, const std::string& file, const std::string& field);
OptimizerKind parse_optimizer(std::string_view text, const std::string& file, const std::string& field);

// Summary of a recorded model, for `placesim graph generate` and the tests.
struct ModelSummary {
  std::int64_t parameters = 0;     // trainable
  double forward_macs = 0;         // whole batch
  double forward_macs_per_sample = 0;
  std::size_t operators = 0, forward_operators = 0, backward_operators = 0, optimizer_operators = 0;
};
ModelSummary summarize(const ModelBuilder& recorded, std::int64_t batch);

}  // namespace placesim::models
