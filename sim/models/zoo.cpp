#include "sim/models/zoo.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/errors.h"
#include "sim/models/architectures.h"
#include "sim/models/layers.h"
#include "sim/config/yaml_fields.h"

namespace placesim::models {

namespace {

ModelConfig sizes(std::string model, std::int64_t batch, std::int64_t seq, std::int64_t layers, std::int64_t heads,
                  std::int64_t hidden, std::int64_t ffn, std::int64_t vocab, std::int64_t image, std::int64_t classes) {
  ModelConfig c;
  c.model = std::move(model);
  c.batch = batch;
  c.seq = seq;
  c.layers = layers;
  c.heads = heads;
  c.hidden = hidden;
  c.ffn = ffn;
  c.vocab = vocab;
  c.image = image;
  c.classes = classes;
  return c;
}

std::vector<ZooModel> make_models() {
  const std::vector<std::string> cnn = {"batch", "image", "classes"};
  return {
      {"alexnet", "AlexNet, Keras CIFAR-10 variant of the QuickP graph (5 conv + BN, 3 dense)", cnn,
       sizes("alexnet", 512, 0, 0, 0, 0, 0, 0, 32, 10)},
      {"vgg16", "VGG-16 with batch normalisation, Keras CIFAR-10 variant of the QuickP graph", cnn,
       sizes("vgg16", 512, 0, 0, 0, 0, 0, 0, 32, 10)},
      {"resnet50", "ResNet-50 v1.5 (torchvision), ImageNet", cnn, sizes("resnet50", 32, 0, 0, 0, 0, 0, 0, 224, 1000)},
      {"inception-v3", "Inception-v3 without the auxiliary classifier, ImageNet", cnn,
       sizes("inception-v3", 32, 0, 0, 0, 0, 0, 0, 299, 1000)},
      {"bert-base", "BERT-base pre-training (masked LM + next sentence)",
       {"batch", "seq", "layers", "heads", "hidden", "ffn", "vocab"}, sizes("bert-base", 16, 128, 12, 12, 768, 3072, 30522, 0, 0)},
      {"fnet-base", "FNet-base pre-training: BERT with 2-D Fourier mixing instead of attention",
       {"batch", "seq", "layers", "hidden", "ffn", "vocab"}, sizes("fnet-base", 16, 128, 12, 0, 768, 3072, 32000, 0, 0)},
      {"gpt2", "GPT-2 small (124 M), causal language modelling",
       {"batch", "seq", "layers", "heads", "hidden", "ffn", "vocab"}, sizes("gpt2", 8, 1024, 12, 12, 768, 3072, 50257, 0, 0)},
      {"transformer", "Transformer encoder-decoder (Vaswani et al.), `layers` per stack, shared embeddings",
       {"batch", "seq", "layers", "heads", "hidden", "ffn", "vocab"}, sizes("transformer", 32, 128, 6, 8, 512, 2048, 32000, 0, 0)},
      {"gnmt", "GNMT: LSTM encoder (bidirectional first layer) and decoder with attention, unrolled",
       {"batch", "seq", "layers", "hidden", "vocab"}, sizes("gnmt", 128, 32, 4, 0, 1024, 0, 32000, 0, 0)},
  };
}

struct SizeKey {
  const char* name;
  std::int64_t ModelConfig::*field;
};
constexpr SizeKey kSizeKeys[] = {
    {"batch", &ModelConfig::batch},   {"seq", &ModelConfig::seq},     {"layers", &ModelConfig::layers},
    {"heads", &ModelConfig::heads},   {"hidden", &ModelConfig::hidden}, {"ffn", &ModelConfig::ffn},
    {"vocab", &ModelConfig::vocab},   {"image", &ModelConfig::image}, {"classes", &ModelConfig::classes},
};

}  // namespace

const std::vector<ZooModel>& zoo_models() {
  static const std::vector<ZooModel> models = make_models();
  return models;
}

const ZooModel* find_zoo_model(std::string_view name) {
  for (const auto& m : zoo_models())
    if (m.name == name) return &m;
  return nullptr;
}

std::string zoo_model_names() {
  std::string out;
  for (const auto& m : zoo_models()) out += (out.empty() ? "" : ", ") + m.name;
  return out;
}

ModelConfig resolve_model_config(const ModelConfig& config, const std::string& file, const std::string& path) {
  // Scenario fields read "graph.seq"; with no path (the command line) they read "--seq".
  auto field = [&](const std::string& key) { return path.empty() ? "--" + key : path + "." + key; };
  const ZooModel* model = find_zoo_model(config.model);
  if (!model) {
    std::vector<std::string> names;
    for (const auto& m : zoo_models()) names.push_back(m.name);
    const std::string hint = nearest_word(config.model, names);
    throw InputError(file, path.empty() ? "model" : path + ".model",
                     fmt::format("unknown model '{}'{} (models: {})", config.model, hint.empty() ? "" : "; did you mean '" + hint + "'?",
                                 zoo_model_names()));
  }
  ModelConfig c = config;
  const bool hidden_given = config.hidden > 0;
  for (const auto& key : kSizeKeys) {
    const bool takes = std::find(model->keys.begin(), model->keys.end(), key.name) != model->keys.end();
    if (!takes) {
      if (config.*key.field != 0)
        throw InputError(file, field(key.name), fmt::format("{} takes no '{}' (it takes: {})", model->name, key.name,
                                                                  fmt::format("{}", fmt::join(model->keys, ", "))));
      continue;
    }
    if (config.*key.field < 0 || config.*key.field > 1'000'000'000)
      throw InputError(file, field(key.name), fmt::format("expected a whole number >= 1, got {}", config.*key.field));
    if (c.*key.field == 0) c.*key.field = model->defaults.*key.field;
  }
  // A width given without a feed-forward width keeps the usual ratio of 4.
  if (hidden_given && config.ffn == 0 && model->defaults.ffn > 0) c.ffn = 4 * c.hidden;
  auto fail = [&](const char* key, const std::string& what) { throw InputError(file, field(key), what); };
  const std::string& m = c.model;
  if ((m == "alexnet" && c.image < 8) || (m == "vgg16" && c.image < 32) || (m == "resnet50" && c.image < 32) ||
      (m == "inception-v3" && c.image < 75))
    fail("image", fmt::format("{} needs images of at least {} pixels, got {}", m,
                              m == "alexnet" ? 8 : m == "inception-v3" ? 75 : 32, c.image));
  if (c.heads > 0 && c.hidden % c.heads != 0)
    fail("heads", fmt::format("hidden ({}) must be a multiple of heads ({})", c.hidden, c.heads));
  if (m == "gnmt" && c.layers < 2) fail("layers", "gnmt needs at least 2 layers per stack (attention feeds layer 1 on)");
  if (m == "gnmt" && c.seq > 4096) fail("seq", "gnmt is unrolled per step: at most 4096 steps");
  if (m == "bert-base" || m == "fnet-base") {
    if (c.vocab < 2) fail("vocab", "expected a vocabulary of at least 2 tokens");
  }
  return c;
}

ModelBuilder record_model(const ModelConfig& c) {
  ModelBuilder b({c.style, c.optimizer});
  Tid loss = kNoTensor;
  if (c.model == "alexnet") loss = build_alexnet(b, c);
  else if (c.model == "vgg16") loss = build_vgg16(b, c);
  else if (c.model == "resnet50") loss = build_resnet50(b, c);
  else if (c.model == "inception-v3") loss = build_inception_v3(b, c);
  else if (c.model == "bert-base") loss = build_bert(b, c, false);
  else if (c.model == "fnet-base") loss = build_bert(b, c, true);
  else if (c.model == "gpt2") loss = build_gpt2(b, c);
  else if (c.model == "transformer") loss = build_transformer(b, c);
  else if (c.model == "gnmt") loss = build_gnmt(b, c);
  else throw InputError("", "model", "unknown model '" + c.model + "'");
  train_step(b, loss);
  return b;
}

Graph zoo_graph(const ModelConfig& config) {
  const ModelConfig c = resolve_model_config(config);
  const ModelBuilder recorded = record_model(c);
  return recorded.to_graph(c.gpu, "model " + c.model);
}

GraphStyle parse_graph_style(std::string_view text, const std::string& file, const std::string& field) {
  if (text == "tensorflow") return GraphStyle::TensorFlow;
  if (text == "fused") return GraphStyle::Fused;
  throw InputError(file, field, fmt::format("expected tensorflow or fused, got '{}'", text));
}

OptimizerKind parse_optimizer(std::string_view text, const std::string& file, const std::string& field) {
  return enum_parse(std::span<const EnumName<OptimizerKind>>(kOptimizerNames), text, file, field);
}

ModelConfig model_config_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"model", "batch", "seq", "layers", "heads", "hidden", "ffn", "vocab", "image", "classes", "style", "optimizer", "gpu",
                "precision"});
  ModelConfig c;
  c.model = f.string("model");
  for (const auto& key : kSizeKeys) {
    if (!f.has(key.name)) continue;
    const long v = f.integer(key.name);
    if (v < 1 || v > 1'000'000'000) throw InputError(file, f.field(key.name), fmt::format("expected a whole number >= 1, got {}", v));
    c.*key.field = v;
  }
  if (f.has("style")) c.style = parse_graph_style(f.string("style"), file, f.field("style"));
  if (f.has("optimizer")) c.optimizer = parse_optimizer(f.string("optimizer"), file, f.field("optimizer"));
  if (f.has("gpu")) c.gpu = gpu_from_yaml(f.node("gpu"), file, path + ".gpu");
  if (f.has("precision"))
    set_roofline_precision(c.gpu, enum_parse<Precision>(kPrecisionNames, f.string("precision"), file, f.field("precision")), file,
                           f.field("precision"), f.has("gpu") ? f.node("gpu") : YAML::Node());
  // Errors name the key as written (`graph.seq`), so resolve against the same path.
  return resolve_model_config(c, file, path);
}

ModelSummary summarize(const ModelBuilder& recorded, std::int64_t batch) {
  ModelSummary s;
  s.parameters = recorded.trainable_parameters();
  s.forward_macs = recorded.forward_macs();
  s.forward_macs_per_sample = batch > 0 ? s.forward_macs / static_cast<double>(batch) : 0;
  s.operators = recorded.ops().size();
  for (const auto& op : recorded.ops()) {
    if (op.phase == Phase::Forward) ++s.forward_operators;
    else if (op.phase == Phase::Backward) ++s.backward_operators;
    else ++s.optimizer_operators;
  }
  return s;
}

}  // namespace placesim::models
