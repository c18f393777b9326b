#include "sim/models/onnx_import.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sim/core/errors.h"
#include "sim/models/layers.h"
#include "sim/models/onnx_shape_folding.h"

namespace placesim::models {

const OptionSchema<OnnxImportOptions>& onnx_import_schema() {
  static const OptionSchema<OnnxImportOptions> schema = [] {
    OptionSchema<OnnxImportOptions> s;
    s.text("onnx", &OnnxImportOptions::onnx, "the ONNX model (tools/export_onnx.py writes one from PyTorch)", "resnet50.onnx");
    s.count("batch", &OnnxImportOptions::batch, "the first dimension of every graph input (0: as exported)", 0, 1L << 24, "32");
    s.add({"gpu", "gpu", "GPU preset (" + gpu_preset_names() + ") or mapping whose roofline times the operators",
           OnnxImportOptions{}.gpu.name, {}, "a100"},
          [](const YamlFields& f, std::string_view k, OnnxImportOptions& o) {
            o.gpu = gpu_from_yaml(f.node(k), f.file(), f.field(k));
          });
    {
      OptionDoc doc{"precision", "choice",
                    "the roofline's rate: the GPU's dense peak at this precision (tensors keep the ONNX file's types)",
                    "fp32", {}, "bf16"};
      for (const auto& p : kPrecisionNames) doc.choices.emplace_back(p.name);
      s.add(std::move(doc), [](const YamlFields& f, std::string_view k, OnnxImportOptions& o) {
        o.precision = enum_parse<Precision>(kPrecisionNames, f.string(k), f.file(), f.field(k));
      });
    }
    s.flag("training", &OnnxImportOptions::training, "one training iteration (forward, backward, optimizer); false: forward only");
    s.choice("unsupported", &OnnxImportOptions::unsupported, std::span<const EnumName<UnsupportedOps>>(kUnsupportedOpsNames),
             "a node needing a gradient that placesim has no rule for: an error, or kept forward-only with a warning");
    s.choice("optimizer", &OnnxImportOptions::optimizer, std::span<const EnumName<OptimizerKind>>(kOptimizerNames),
             "the update per parameter (Adam keeps two fp32 slots)");
    s.check([](const YamlFields& f, OnnxImportOptions& o) {
      if (o.onnx.empty()) throw InputError(f.file(), f.field("onnx"), "expected the path of an .onnx file");
      if (o.precision)
        set_roofline_precision(o.gpu, *o.precision, f.file(), f.field("precision"), f.has("gpu") ? f.node("gpu") : YAML::Node());
    });
    return s;
  }();
  return schema;
}

namespace {

std::optional<DType> dtype_of(int elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::FLOAT: return DType::F32;
    case T::FLOAT16:
    case T::BFLOAT16: return DType::F16;
    case T::DOUBLE: return DType::F64;
    case T::INT8:
    case T::UINT8: return DType::I8;
    case T::INT16:
    case T::UINT16: return DType::I16;
    case T::INT32:
    case T::UINT32: return DType::I32;
    case T::INT64:
    case T::UINT64: return DType::I64;
    case T::BOOL: return DType::Bool;
    case T::COMPLEX64: return DType::C64;
    default: return std::nullopt;
  }
}

bool is_float(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::F64; }

double elements(const Shape& s) { return static_cast<double>(num_elements(s)); }

std::int64_t attr_int(const onnx::NodeProto& node, std::string_view name, std::int64_t fallback) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

std::vector<std::int64_t> attr_ints(const onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

// Element-wise functions of one input: FLOPs per element, and what their gradient kernel reads
// besides dy (the forward input or output).
enum class GradReads { Input, Output, Nothing };
struct UnaryOp {
  std::string_view type;
  double flops;
  GradReads reads;
};
constexpr UnaryOp kUnary[] = {
    {"Relu", 1, GradReads::Output},      {"LeakyRelu", 2, GradReads::Input},   {"Elu", 4, GradReads::Output},
    {"Selu", 4, GradReads::Input},       {"Celu", 4, GradReads::Input},        {"Sigmoid", 4, GradReads::Output},
    {"Tanh", 4, GradReads::Output},      {"HardSigmoid", 3, GradReads::Input}, {"HardSwish", 4, GradReads::Input},
    {"Softplus", 4, GradReads::Input},   {"Softsign", 3, GradReads::Input},    {"Mish", 8, GradReads::Input},
    {"Exp", 4, GradReads::Output},       {"Log", 4, GradReads::Input},         {"Sqrt", 4, GradReads::Output},
    {"Reciprocal", 1, GradReads::Output}, {"Abs", 1, GradReads::Input},        {"Erf", 8, GradReads::Input},
    {"Sin", 4, GradReads::Input},        {"Cos", 4, GradReads::Input},         {"Clip", 1, GradReads::Input},
    {"Gelu", 8, GradReads::Input},       {"ThresholdedRelu", 1, GradReads::Input}, {"Neg", 1, GradReads::Nothing},
};
const UnaryOp* find_unary(std::string_view type) {
  for (const auto& u : kUnary)
    if (u.type == type) return &u;
  return nullptr;
}

// Nodes whose outputs carry no gradient (integer or boolean results, piecewise-constant
// functions, shape arithmetic): recorded with one FLOP per output element, no rule needed.
const std::set<std::string_view> kNonDifferentiable = {
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN", "IsInf",
    "ArgMax", "ArgMin", "Shape", "Size", "NonZero", "ConstantOfShape", "Range", "Floor", "Ceil", "Round",
    "Sign", "Constant", "EyeLike", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
    "Bernoulli", "OneHot", "Trilu"};

// Views: no kernel, no arithmetic.
const std::set<std::string_view> kViews = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"};

const std::set<std::string_view> kBinary = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean"};
const std::set<std::string_view> kReductions = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1",
                                                "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceProd", "ReduceLogSum"};
const std::set<std::string_view> kNormalizations = {"BatchNormalization", "LayerNormalization", "InstanceNormalization"};
// Nodes that move data: a kernel that reads and writes, no arithmetic.
const std::set<std::string_view> kMoves = {"Transpose", "Concat", "Split", "Slice", "Pad", "Expand", "Tile", "Gather",
                                           "GatherElements", "Resize", "Upsample", "DepthToSpace", "SpaceToDepth"};
const std::set<std::string_view> kOthers = {"Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool",
                                            "GlobalMaxPool", "Softmax", "LogSoftmax", "Cast", "Dropout", "Where", "PRelu",
                                            "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"};

bool has_rule(std::string_view type) {
  return find_unary(type) || kViews.contains(type) || kBinary.contains(type) || kReductions.contains(type) ||
         kNormalizations.contains(type) || kMoves.contains(type) || kOthers.contains(type);
}

// The inputs a gradient flows to (and so the initializers that are parameters).
bool differentiable_slot(std::string_view type, int slot) {
  if (type == "Conv" || type == "Gemm" || kNormalizations.contains(type)) return slot <= 2;
  if (type == "MatMul" || type == "PRelu") return slot <= 1;
  if (kBinary.contains(type) || type == "Concat") return true;
  if (type == "Where") return slot == 1 || slot == 2;
  if (has_rule(type)) return slot == 0;
  return false;
}

std::string describe(const onnx::NodeProto& node) { return fmt::format("node '{}' ({})", node.name(), node.op_type()); }

// A node recorded with its gradient rule, as the rule reads it: the builder, the node, its leaf
// name and type, its present inputs, its inputs per slot (kNoTensor where omitted; at least 3
// slots), its outputs, and the elements of its first output.
struct RuleNode {
  ModelBuilder& builder;
  const onnx::NodeProto& node;
  const std::string& leaf;
  const std::string& type;
  const std::vector<Tid>& inputs;
  std::vector<Tid> slot;
  const std::vector<TensorSpec>& outputs;
  double output_elements;
};

// A gradient of `like`'s shape and dtype.
Tid grad_like(ModelBuilder& m, std::string_view leaf, std::string_view type, std::vector<Tid> inputs, Tid like, double flops) {
  return m.emit1(leaf, type, std::move(inputs), {m.tensor(like).shape, m.tensor(like).dtype}, flops);
}

std::int32_t record_unary(const RuleNode& r, const UnaryOp& u) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, u.flops * n);
  const Tid x = r.slot[0], y = b.out(op);
  const GradReads reads = u.reads;
  b.differentiable(op, [x, y, n, reads, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    if (reads == GradReads::Nothing) m.add_grad(x, grad_like(m, type, type, {dy[0]}, x, n));
    else m.add_grad(x, grad_like(m, type + "Grad", type + "Grad", {reads == GradReads::Output ? y : x, dy[0]}, x, 2 * n));
  });
  return op;
}

std::int32_t record_view(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, 0);
  b.set_no_kernel(op);
  const Tid x = r.slot[0];
  b.differentiable(op, [x](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] != kNoTensor) m.add_grad(x, m.emit1("Reshape", "Reshape", {dy[0]}, {m.tensor(x).shape, m.tensor(x).dtype}, 0));
  });
  return op;
}

std::int32_t record_binary(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, (type == "Pow" ? 4 : 1) * n * std::max<double>(1, r.inputs.size() - 1));
  const std::vector<Tid> xs = r.inputs;
  const Tid y = b.out(op);
  b.differentiable(op, [xs, y, n, type](ModelBuilder& m, std::span<const Tid> dy) {
    const Tid g = dy[0];
    if (g == kNoTensor) return;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const Tid x = xs[i];
      if (!m.requires_grad(x)) continue;
      const Tid other = xs.size() == 2 ? xs[1 - i] : kNoTensor;
      const Shape sy = m.tensor(g).shape;
      Tid full = g;  // the gradient at the output's shape
      if (type == "Sub" && i == 1) full = m.emit1("Neg", "Neg", {g}, {sy, m.tensor(g).dtype}, n);
      else if (type == "Mul") full = m.emit1(i == 0 ? "Mul" : "Mul_1", "Mul", {g, other}, {sy, m.tensor(g).dtype}, n);
      else if (type == "Div") full = i == 0 ? m.emit1("Div", "Div", {g, other}, {sy, m.tensor(g).dtype}, n)
                                            : m.emit1("DivGrad", "DivGrad", {g, xs[0], xs[1]}, {sy, m.tensor(g).dtype}, 3 * n);
      else if (type == "Pow") full = i == 0 ? m.emit1("PowGrad", "PowGrad", {g, xs[0], xs[1]}, {sy, m.tensor(g).dtype}, 3 * n)
                                            : m.emit1("PowGradExponent", "PowGradExponent", {g, xs[0], y}, {sy, m.tensor(g).dtype}, 3 * n);
      else if (type == "Max" || type == "Min")
        full = m.emit1(type + "Grad", type + "Grad", {g, x, y}, {sy, m.tensor(g).dtype}, n);
      else if (type == "Mean") full = m.emit1("MeanGrad", "Mul", {g}, {sy, m.tensor(g).dtype}, n);
      m.add_grad(x, m.unbroadcast(full, m.tensor(x).shape));
    }
  });
  return op;
}

std::int32_t record_reduction(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, elements(b.tensor(r.slot[0]).shape));
  const Tid x = r.slot[0], y = b.out(op);
  b.differentiable(op, [x, y, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    std::vector<Tid> reads{dy[0]};
    if (type != "ReduceSum" && type != "ReduceMean") reads = {dy[0], x, y};
    m.add_grad(x, grad_like(m, type + "Grad", type + "Grad", reads, x, elements(m.tensor(x).shape)));
  });
  return op;
}

std::int32_t record_normalization(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double nx = elements(b.tensor(r.slot[0]).shape);
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, 8 * nx);
  const Tid x = r.slot[0], scale = r.slot[1], bias = r.slot.size() > 2 ? r.slot[2] : kNoTensor;
  std::vector<Tid> saved;  // the statistics the forward kernel writes, which its gradient reads
  for (std::size_t k = 1; k < r.outputs.size(); ++k)
    if (num_elements(r.outputs[k].shape) > 0) saved.push_back(b.out(op, static_cast<int>(k)));
  b.differentiable(op, [x, scale, bias, saved, nx, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    std::vector<Tid> reads{dy[0], x, scale};
    reads.insert(reads.end(), saved.begin(), saved.end());
    std::vector<TensorSpec> specs{{m.tensor(x).shape, m.tensor(x).dtype}, {m.tensor(scale).shape, m.tensor(scale).dtype}};
    if (bias != kNoTensor) specs.push_back({m.tensor(bias).shape, m.tensor(bias).dtype});
    const std::int32_t g = m.emit(type + "Grad", type + "Grad", reads, specs, 10 * nx);
    m.add_grad(x, m.out(g, 0));
    m.add_grad(scale, m.out(g, 1));
    if (bias != kNoTensor) m.add_grad(bias, m.out(g, 2));
  });
  return op;
}

std::int32_t record_conv(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const double n = r.output_elements;
  const Shape& w = b.tensor(r.slot[1]).shape;  // [M, C/group, k...]
  double window = 1;
  for (std::size_t k = 1; k < w.size(); ++k) window *= static_cast<double>(w[k]);
  const double macs = n * window;
  // As the zoo's conv2d (builder.cpp): cuDNN runs 3x3 stride-1 convolutions with Winograd's
  // F(2x2, 3x3), 2.25x fewer multiplications, which the roofline times (algorithm_flops); `flops`
  // and `macs` stay the direct count.
  const auto strides = attr_ints(r.node, "strides"), dilations = attr_ints(r.node, "dilations");
  const bool unit = std::all_of(strides.begin(), strides.end(), [](auto s) { return s == 1; }) &&
                    std::all_of(dilations.begin(), dilations.end(), [](auto d) { return d == 1; });
  const bool winograd = w.size() == 4 && w[2] == 3 && w[3] == 3 && unit && attr_int(r.node, "group", 1) == 1;
  const double flops = 2 * macs, algorithm = winograd ? flops / 2.25 : 0.0;
  const double bias_adds = r.slot.size() > 2 && r.slot[2] != kNoTensor ? n : 0;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, flops + bias_adds, macs);
  if (winograd) b.set_algorithm_flops(op, algorithm + bias_adds);
  const Tid x = r.slot[0], wt = r.slot[1], bias = r.slot.size() > 2 ? r.slot[2] : kNoTensor;
  b.differentiable(op, [x, wt, bias, flops, algorithm, macs, n](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    auto gradient = [&](const char* name, std::vector<Tid> inputs, Tid like) {
      const std::int32_t g = m.emit(name, name, std::move(inputs), {{m.tensor(like).shape, m.tensor(like).dtype}}, flops, macs);
      m.set_algorithm_flops(g, algorithm);
      return m.out(g);
    };
    if (m.requires_grad(x)) m.add_grad(x, gradient("ConvBackpropInput", {wt, dy[0]}, x));
    if (m.requires_grad(wt)) m.add_grad(wt, gradient("ConvBackpropFilter", {x, dy[0]}, wt));
    if (bias != kNoTensor && m.requires_grad(bias))
      m.add_grad(bias, m.emit1("ConvBackpropBias", "ConvBackpropBias", {dy[0]}, {m.tensor(bias).shape, m.tensor(bias).dtype}, n));
  });
  return op;
}

// Gemm and MatMul.
std::int32_t record_matmul(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double n = r.output_elements;
  const Shape& a = b.tensor(r.slot[0]).shape;
  std::int64_t k = a.empty() ? 1 : a.back();
  if (type == "Gemm" && attr_int(r.node, "transA", 0) != 0) k = a.front();
  if (type == "MatMul" && a.size() == 1) k = a[0];
  const double macs = n * static_cast<double>(k);
  const bool bias = type == "Gemm" && r.slot.size() > 2 && r.slot[2] != kNoTensor;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, 2 * macs + (bias ? n : 0), macs);
  const Tid x = r.slot[0], w = r.slot[1], c = bias ? r.slot[2] : kNoTensor;
  b.differentiable(op, [x, w, c, macs, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    if (m.requires_grad(x))
      m.add_grad(x, m.emit1(type + "_dA", type, {dy[0], w}, {m.tensor(x).shape, m.tensor(x).dtype}, 2 * macs, macs));
    if (m.requires_grad(w))
      m.add_grad(w, m.emit1(type + "_dB", type, {x, dy[0]}, {m.tensor(w).shape, m.tensor(w).dtype}, 2 * macs, macs));
    if (c != kNoTensor && m.requires_grad(c)) m.add_grad(c, m.unbroadcast(dy[0], m.tensor(c).shape));
  });
  return op;
}

// MaxPool, AveragePool and their global forms.
std::int32_t record_pool(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  double window = 1;
  for (auto kdim : attr_ints(r.node, "kernel_shape")) window *= static_cast<double>(kdim);
  const bool global = type.starts_with("Global");
  const double work = global ? elements(b.tensor(r.slot[0]).shape) : r.output_elements * window;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, work);
  const Tid x = r.slot[0], y = b.out(op);
  const bool max = type.find("Max") != std::string::npos;
  b.differentiable(op, [x, y, work, max, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    std::vector<Tid> reads{dy[0]};
    if (max) reads = {x, y, dy[0]};
    m.add_grad(x, grad_like(m, type + "Grad", type + "Grad", reads, x, work));
  });
  return op;
}

// Softmax and LogSoftmax.
std::int32_t record_softmax(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, 5 * n);
  const Tid x = r.slot[0], y = b.out(op);
  b.differentiable(op, [x, y, n, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] != kNoTensor) m.add_grad(x, grad_like(m, type + "Grad", type + "Grad", {y, dy[0]}, x, 4 * n));
  });
  return op;
}

// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.
std::int32_t record_loss(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const double nx = elements(b.tensor(r.slot[0]).shape);
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, (type == "SoftmaxCrossEntropyLoss" ? 6 : 1) * nx);
  const Tid x = r.slot[0], labels = r.slot[1];
  const Tid reads = r.outputs.size() > 1 && num_elements(r.outputs[1].shape) > 0 ? b.out(op, 1) : x;
  b.differentiable(op, [x, labels, reads, nx, type](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] != kNoTensor) m.add_grad(x, grad_like(m, type + "Grad", type + "Grad", {dy[0], reads, labels}, x, 2 * nx));
  });
  return op;
}

std::int32_t record_cast(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, n);
  const Tid x = r.slot[0];
  if (is_float(r.outputs[0].dtype))
    b.differentiable(op, [x, n](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] != kNoTensor) m.add_grad(x, m.emit1("Cast", "Cast", {dy[0]}, {m.tensor(x).shape, m.tensor(x).dtype}, n));
    });
  return op;
}

std::int32_t record_dropout(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, 2 * n);
  const Tid x = r.slot[0];
  const Tid mask = r.outputs.size() > 1 && num_elements(r.outputs[1].shape) > 0 ? b.out(op, 1) : x;
  b.differentiable(op, [x, mask, n](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] != kNoTensor) m.add_grad(x, grad_like(m, "DropoutGrad", "DropoutGrad", {dy[0], mask}, x, n));
  });
  return op;
}

std::int32_t record_where(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, n);
  const Tid cond = r.slot[0], a = r.slot[1], c = r.slot[2];
  b.differentiable(op, [cond, a, c, n](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    const Shape sy = m.tensor(dy[0]).shape;
    for (Tid x : {a, c})
      if (m.requires_grad(x))
        m.add_grad(x, m.unbroadcast(m.emit1("WhereGrad", "Where", {cond, dy[0]}, {sy, m.tensor(dy[0]).dtype}, n), m.tensor(x).shape));
  });
  return op;
}

std::int32_t record_prelu(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const double n = r.output_elements;
  const std::int32_t op = b.emit(r.leaf, r.type, r.inputs, r.outputs, 2 * n);
  const Tid x = r.slot[0], slope = r.slot[1];
  b.differentiable(op, [x, slope, n](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    const Shape sy = m.tensor(dy[0]).shape;
    const std::int32_t g = m.emit("PReluGrad", "PReluGrad", {dy[0], x, slope}, {{m.tensor(x).shape, m.tensor(x).dtype}, {sy, m.tensor(dy[0]).dtype}}, 3 * n);
    m.add_grad(x, m.out(g, 0));
    if (m.requires_grad(slope)) m.add_grad(slope, m.unbroadcast(m.out(g, 1), m.tensor(slope).shape));
  });
  return op;
}

// Data movement: bytes, no arithmetic.
std::int32_t record_move(const RuleNode& r) {
  ModelBuilder& b = r.builder;
  const std::string& type = r.type;
  const std::int32_t op = b.emit(r.leaf, type, r.inputs, r.outputs, 0);
  if (type == "Gather" || type == "GatherElements") {
    // A gather reads the rows it returns, not the whole table (as the zoo's gather).
    b.set_bytes_moved(op, 2 * b.tensor(b.out(op)).bytes + b.tensor(r.slot[1]).bytes);
    const Tid table = r.slot[0], ids = r.slot[1];
    b.differentiable(op, [table, ids](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      // Densified as PyTorch's dense embedding backward: the whole table is written.
      m.add_grad(table, m.emit1("GatherGrad", "ScatterAdd", {dy[0], ids}, {m.tensor(table).shape, m.tensor(table).dtype},
                                elements(m.tensor(dy[0]).shape)));
    });
    return op;
  }
  if (type == "Concat") {
    const std::vector<Tid> parts = r.inputs;
    b.differentiable(op, [parts](ModelBuilder& m, std::span<const Tid> dy) {
      if (dy[0] == kNoTensor) return;
      for (Tid p : parts)
        if (m.requires_grad(p)) m.add_grad(p, m.emit1("Slice", "Slice", {dy[0]}, {m.tensor(p).shape, m.tensor(p).dtype}, 0));
    });
    return op;
  }
  if (type == "Split") {
    const Tid x = r.slot[0];
    std::vector<Tid> ys;
    for (std::size_t k = 0; k < r.outputs.size(); ++k) ys.push_back(b.out(op, static_cast<int>(k)));
    b.differentiable(op, [x, ys](ModelBuilder& m, std::span<const Tid> dy) {
      std::vector<Tid> parts;
      for (std::size_t k = 0; k < dy.size(); ++k)
        parts.push_back(dy[k] != kNoTensor ? dy[k]
                                           : m.emit1("ZerosLike", "ZerosLike", {ys[k]}, {m.tensor(ys[k]).shape, m.tensor(ys[k]).dtype}, 0));
      m.add_grad(x, m.emit1("Concat", "Concat", parts, {m.tensor(x).shape, m.tensor(x).dtype}, 0));
    });
    return op;
  }
  // Transpose, Slice, Pad, Expand, Tile, Resize, ...: the gradient moves dy back to x's shape,
  // summing where the forward copied (Expand, Tile, Resize up).
  const Tid x = r.slot[0];
  const bool sums = type == "Expand" || type == "Tile" || type == "Resize" || type == "Upsample";
  b.differentiable(op, [x, type, sums](ModelBuilder& m, std::span<const Tid> dy) {
    if (dy[0] == kNoTensor) return;
    const double work = sums ? elements(m.tensor(dy[0]).shape) : 0;
    m.add_grad(x, m.emit1(type + "Grad", type == "Transpose" ? "Transpose" : type + "Grad", {dy[0]}, {m.tensor(x).shape, m.tensor(x).dtype}, work));
  });
  return op;
}

// The forward op of a node with a gradient rule, and the rule: by the node's type.
std::int32_t record_by_rule(const RuleNode& r) {
  const std::string& type = r.type;
  if (const UnaryOp* u = find_unary(type)) return record_unary(r, *u);
  if (kViews.contains(type)) return record_view(r);
  if (kBinary.contains(type)) return record_binary(r);
  if (kReductions.contains(type)) return record_reduction(r);
  if (kNormalizations.contains(type)) return record_normalization(r);
  if (type == "Conv") return record_conv(r);
  if (type == "Gemm" || type == "MatMul") return record_matmul(r);
  if (type == "MaxPool" || type == "AveragePool" || type == "GlobalAveragePool" || type == "GlobalMaxPool") return record_pool(r);
  if (type == "Softmax" || type == "LogSoftmax") return record_softmax(r);
  if (type == "SoftmaxCrossEntropyLoss" || type == "NegativeLogLikelihoodLoss") return record_loss(r);
  if (type == "Cast") return record_cast(r);
  if (type == "Dropout") return record_dropout(r);
  if (type == "Where") return record_where(r);
  if (type == "PRelu") return record_prelu(r);
  return record_move(r);
}


class Importer {
 public:
  Importer(const OnnxImportOptions& options, OnnxImport& result)
      : o_(options), r_(result), b_(r_.recorded), file_(options.onnx) {}

  void run() {
    load();
    infer_shapes();
    collect_types();
    find_parameters();
    record_sources();
    const auto& graph = model_.graph();
    check_rules();
    for (int i = 0; i < graph.node_size(); ++i) {
      ++r_.node_types[graph.node(i).op_type()];
      record(graph.node(i), i);
    }
    if (o_.training) train();
    if (!unknown_types_.empty())
      r_.warnings.push_back(fmt::format("{}: no cost rule for {}: costed as one FLOP per output element", file_,
                                        fmt::join(unknown_types_, ", ")));
    if (!forward_only_.empty()) {
      std::map<std::string, int> by_type;
      for (const auto* n : forward_only_) ++by_type[n->op_type()];
      std::string types;
      for (const auto& [t, k] : by_type) types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", t, k);
      r_.warnings.push_back(fmt::format("{}: {} node{} without a gradient rule kept forward-only (no gradient flows through "
                                        "them; costed as one pass over their tensors): {}",
                                        file_, forward_only_.size(), forward_only_.size() == 1 ? "" : "s", types));
    }
    for (const auto& op : b_.ops()) {
      if (op.phase == Phase::Forward) r_.forward_flops += op.flops;
      else if (op.phase == Phase::Backward) r_.backward_flops += op.flops;
      else r_.optimizer_flops += op.flops;
    }
  }

 private:
  void load() {
    std::ifstream in(file_, std::ios::binary);
    if (!in) throw InputError(file_, "", "cannot open the ONNX file");
    if (!model_.ParseFromIstream(&in) || !model_.has_graph())
      throw InputError(file_, "", "not an ONNX model (it does not parse as an onnx.ModelProto with a graph)");
    const auto& graph = model_.graph();
    for (const auto& init : graph.initializer()) initializer_names_.insert(init.name());
    // The default domain's opset must be one this libonnx knows.
    const auto& versions = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    for (const auto& opset : model_.opset_import()) {
      const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      auto it = versions.find(domain);
      if (domain.empty() && it != versions.end() && opset.version() > it->second.second)
        throw InputError(file_, "opset_import",
                         fmt::format("opset {} is newer than this libonnx reads (up to {}); export with --opset {}",
                                     opset.version(), it->second.second, it->second.second));
    }
    for (const auto& node : graph.node())
      for (const auto& a : node.attribute())
        if (a.has_g() || a.graphs_size() > 0)
          throw InputError(file_, describe(node), "control flow (a subgraph) is not supported; export the model unrolled");
  }

  // The batch goes into every graph input's first dimension, then ONNX shape inference (with data
  // propagation, and the shape arithmetic folded, so that Reshape and Expand targets computed from
  // Shape nodes and constants resolve) gives every value a shape.
  void infer_shapes() {
    auto* graph = model_.mutable_graph();
    bool any_input = false;
    long exported_batch = 0;  // the first input's first dimension as exported
    for (auto& input : *graph->mutable_input()) {
      if (initializer_names_.contains(input.name())) continue;
      if (!input.type().has_tensor_type()) throw InputError(file_, fmt::format("input '{}'", input.name()), "expected a tensor input");
      auto* shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
      if (!any_input && shape->dim_size() > 0 && shape->dim(0).has_dim_value()) exported_batch = shape->dim(0).dim_value();
      if (o_.batch > 0 && shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_value(o_.batch);
      for (int k = 0; k < shape->dim_size(); ++k) {
        if (shape->dim(k).has_dim_value() && shape->dim(k).dim_value() <= 0)
          throw InputError(file_, fmt::format("input '{}'", input.name()),
                           fmt::format("dimension {} is {}: expected a size >= 1", k, shape->dim(k).dim_value()));
        if (!shape->dim(k).has_dim_value())
          throw InputError(file_, fmt::format("input '{}'", input.name()),
                           fmt::format("dimension {} is symbolic ('{}'); {}", k, shape->dim(k).dim_param(),
                                       k == 0 ? "give the batch (graph.batch, --batch)"
                                              : "export with fixed shapes (tools/export_onnx.py --input-shape)"));
      }
      if (!any_input && shape->dim_size() > 0) r_.batch = shape->dim(0).dim_value();
      any_input = true;
    }
    if (!any_input) throw InputError(file_, "graph.input", "the model has no input besides its weights");
    // Outputs whose first dimension was the exported batch: at another batch they must follow it.
    std::vector<std::string> batched_outputs;
    if (o_.batch > 0) {
      // The exporter's shapes are of its own batch: infer them afresh.
      graph->clear_value_info();
      for (auto& output : *graph->mutable_output())
        if (output.type().has_tensor_type()) {
          const auto& shape = output.type().tensor_type().shape();
          if (exported_batch > 0 && exported_batch != o_.batch && shape.dim_size() > 0 && shape.dim(0).has_dim_value() &&
              shape.dim(0).dim_value() == exported_batch)
            batched_outputs.push_back(output.name());
          output.mutable_type()->mutable_tensor_type()->clear_shape();
        }
    }
    try {
      shapes_ = infer_shapes_with_folding(model_);
    } catch (const std::exception& e) {
      std::string what = e.what();
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
      throw InputError(file_, "", fmt::format("ONNX shape inference failed{}: {}",
                                              o_.batch > 0 ? fmt::format(" at batch {} (the export may have fixed its own batch "
                                                                         "into a reshape; export at this batch)", o_.batch)
                                                           : "",
                                              what));
    }
    // An exporter that fixed its batch into a constant (ViT's reshapes from torch.onnx) leaves
    // part of the graph at that batch, which shape inference cannot see: the outputs tell.
    for (const auto& output : shapes_.graph().output()) {
      if (std::find(batched_outputs.begin(), batched_outputs.end(), output.name()) == batched_outputs.end()) continue;
      const auto& shape = output.type().tensor_type().shape();
      if (shape.dim_size() > 0 && shape.dim(0).has_dim_value() && shape.dim(0).dim_value() == o_.batch) continue;
      throw InputError(file_, fmt::format("output '{}'", output.name()),
                       fmt::format("exported at batch {}, its first dimension stays {} at batch {}: the export fixed its "
                                   "batch into the graph (a Reshape's or Expand's constant shape); export at batch {} "
                                   "(tools/export_onnx.py --batch {})",
                                   exported_batch,
                                   shape.dim_size() > 0 && shape.dim(0).has_dim_value() ? std::to_string(shape.dim(0).dim_value())
                                                                                        : std::string("unknown"),
                                   o_.batch, o_.batch, o_.batch));
    }
  }

  void add_type(const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    const auto& t = v.type().tensor_type();
    const auto dtype = dtype_of(t.elem_type());
    if (!dtype) return;
    Shape shape;
    for (const auto& d : t.shape().dim()) {
      if (!d.has_dim_value()) return;
      shape.push_back(d.dim_value());
    }
    types_[v.name()] = {std::move(shape), *dtype};
  }

  // Every value's type, from the model as shape inference saw it (shape arithmetic folded into
  // initializers: sim/models/onnx_shape_folding.h).
  void collect_types() {
    const auto& graph = shapes_.graph();
    for (const auto& v : graph.input()) add_type(v);
    for (const auto& v : graph.value_info()) add_type(v);
    for (const auto& v : graph.output()) add_type(v);
    for (const auto& init : graph.initializer()) {
      const auto dtype = dtype_of(init.data_type());
      if (!dtype)
        throw InputError(file_, fmt::format("initializer '{}'", init.name()), fmt::format("element type {} is not supported", init.data_type()));
      types_[init.name()] = {Shape(init.dims().begin(), init.dims().end()), *dtype};
    }
  }

  const TensorSpec& type_of(const std::string& value, const onnx::NodeProto& node) const {
    auto it = types_.find(value);
    if (it == types_.end())
      throw InputError(file_, describe(node),
                       fmt::format("ONNX shape inference gave '{}' no static shape; export with fixed input shapes "
                                   "(tools/export_onnx.py --batch, --input-shape)",
                                   value));
    return it->second;
  }

  // A parameter is a floating-point initializer with more than one element that some node takes
  // in an input a gradient flows to (BatchNormalization's running statistics are not).
  //
  // tools/export_onnx.py says which initializers are trainable (the model's metadata key
  // placesim.trainable_parameters, from named_parameters()): then a parameter is one it names that
  // a gradient reaches, whatever its size, and a buffer it does not name is state even where a
  // gradient would reach it.
  void find_parameters() {
    for (const auto& entry : model_.metadata_props()) {
      if (entry.key() != "placesim.trainable_parameters") continue;
      nlohmann::json names = nlohmann::json::parse(entry.value(), nullptr, false);
      if (!names.is_array() || !std::all_of(names.begin(), names.end(), [](const auto& n) { return n.is_string(); }))
        throw InputError(file_, "metadata placesim.trainable_parameters",
                         "expected a JSON list of initializer names (tools/export_onnx.py writes it)");
      declared_parameters_.emplace();
      for (const auto& n : names) declared_parameters_->insert(n.get<std::string>());
      std::vector<std::string> absent;
      for (const auto& n : *declared_parameters_)
        if (!initializer_names_.contains(n)) absent.push_back(n);
      std::sort(absent.begin(), absent.end());
      if (!absent.empty())
        r_.warnings.push_back(fmt::format(
            "{}: {} of the {} trainable parameters its metadata names are not initializers of the graph (renamed or "
            "folded by the exporter, or unused), so they get no gradient or update here: {}{}",
            file_, absent.size(), declared_parameters_->size(),
            fmt::join(absent.begin(), absent.begin() + std::min<std::size_t>(absent.size(), 3), ", "), absent.size() > 3 ? ", ..." : ""));
    }
    for (const auto& node : model_.graph().node())
      for (int k = 0; k < node.input_size(); ++k) {
        consumed_.insert(node.input(k));
        if (differentiable_slot(node.op_type(), k)) trained_inputs_.insert(node.input(k));
      }
    for (const auto& output : model_.graph().output()) consumed_.insert(output.name());
  }

  void record_sources() {
    const auto& graph = model_.graph();
    for (const auto& init : graph.initializer()) {
      const TensorSpec& t = types_.at(init.name());
      const bool declared = declared_parameters_ && declared_parameters_->contains(init.name());
      if (is_float(t.dtype) && (declared || num_elements(t.shape) > 1)) {
        const bool trained = trained_inputs_.contains(init.name()) && (!declared_parameters_ || declared);
        const Pid v = b_.variable(init.name(), t.shape, trained);
        values_[init.name()] = b_.read(v);
      } else {
        values_[init.name()] = b_.emit1(init.name(), "Const", {}, t, 0);
      }
    }
    for (const auto& input : graph.input()) {
      if (initializer_names_.contains(input.name())) continue;
      auto it = types_.find(input.name());
      if (it == types_.end())
        throw InputError(file_, fmt::format("input '{}'", input.name()),
                         fmt::format("element type {} is not supported", input.type().tensor_type().elem_type()));
      values_[input.name()] = b_.input(input.name(), it->second.shape, it->second.dtype);
    }
  }

  // Every node that needs a gradient has a rule, or the user said forward-only.
  void check_rules() {
    std::unordered_set<std::string> needs_grad;
    for (const auto& [name, tid] : values_)
      if (b_.requires_grad(tid)) needs_grad.insert(name);
    std::vector<const onnx::NodeProto*> missing;
    for (const auto& node : model_.graph().node()) {
      bool in_grad = false;
      for (const auto& in : node.input()) in_grad = in_grad || needs_grad.contains(in);
      if (!in_grad || kNonDifferentiable.contains(node.op_type())) continue;
      if (!has_rule(node.op_type())) {
        missing.push_back(&node);
        continue;  // forward-only: no gradient flows on
      }
      for (const auto& out : node.output()) {
        auto t = types_.find(out);
        if (t != types_.end() && is_float(t->second.dtype)) needs_grad.insert(out);
      }
    }
    if (missing.empty() || !o_.training) return;
    if (o_.unsupported == UnsupportedOps::ForwardOnly) {
      forward_only_ = missing;
      return;
    }
    std::map<std::string, int> by_type;
    for (const auto* n : missing) ++by_type[n->op_type()];
    std::string types;
    for (const auto& [t, k] : by_type) types += fmt::format("{}{} x{}", types.empty() ? "" : ", ", t, k);
    throw InputError(file_, describe(*missing.front()),
                     fmt::format("placesim has no gradient rule for {} (nodes without one: {}); set `unsupported: forward-only` "
                                 "(--unsupported forward-only) to keep them without gradients",
                                 missing.front()->op_type(), types));
  }

  Tid value(const std::string& name, const onnx::NodeProto& node) const {
    auto it = values_.find(name);
    if (it == values_.end())
      throw InputError(file_, describe(node), fmt::format("input '{}' is produced by no earlier node (the graph must be "
                                                          "topologically sorted, as ONNX requires)", name));
    return it->second;
  }

  static std::string leaf_of(const onnx::NodeProto& node, int index) {
    std::string name = node.name();
    while (!name.empty() && name.front() == '/') name.erase(name.begin());
    return name.empty() ? fmt::format("{}_{}", node.op_type(), index) : name;
  }

  void record(const onnx::NodeProto& node, int index) {
    const std::string& type = node.op_type();
    std::vector<Tid> in;       // present inputs
    std::vector<Tid> slot;     // per input slot, kNoTensor when omitted
    for (const auto& name : node.input()) {
      const Tid t = name.empty() ? kNoTensor : value(name, node);
      slot.push_back(t);
      if (t != kNoTensor) in.push_back(t);
    }
    std::vector<TensorSpec> outs;
    for (int k = 0; k < node.output_size(); ++k) {
      const std::string& name = node.output(k);
      if (name.empty() || (!types_.contains(name) && !consumed_.contains(name))) {
        // An omitted optional output, or one shape inference left open that nothing reads (ONNX
        // infers only Y of a training-mode BatchNormalization; its statistics are per channel).
        if (type == "BatchNormalization" && k > 0 && !name.empty() && !slot.empty() && slot[0] != kNoTensor &&
            b_.tensor(slot[0]).shape.size() >= 2)
          outs.push_back({{b_.tensor(slot[0]).shape[1]}, DType::F32});
        else outs.push_back({{0}, DType::F32});
      } else {
        outs.push_back(type_of(name, node));
      }
    }
    double out_elements = 0, in_elements = 0;
    for (const auto& s : outs) out_elements += elements(s.shape);
    for (Tid t : in) in_elements += elements(b_.tensor(t).shape);
    const std::string leaf = leaf_of(node, index);
    const bool forward_only = std::find(forward_only_.begin(), forward_only_.end(), &node) != forward_only_.end();

    std::int32_t op = -1;
    if (forward_only || !has_rule(type) || kNonDifferentiable.contains(type)) {
      op = b_.emit(leaf, type, in, outs, std::max(out_elements, forward_only ? in_elements : 0.0));
      if (type == "Constant") b_.set_no_kernel(op);
      if (!has_rule(type) && !kNonDifferentiable.contains(type) && !forward_only)
        unknown_types_.insert(type);
    } else {
      op = record_with_rule(node, leaf, in, slot, outs);
    }
    const auto& built = b_.ops()[op];
    for (int k = 0; k < node.output_size(); ++k)
      if (!node.output(k).empty()) values_[node.output(k)] = built.outputs[k];
  }

  // The forward op of a node with a gradient rule, and the rule.
  std::int32_t record_with_rule(const onnx::NodeProto& node, const std::string& leaf, const std::vector<Tid>& in,
                                const std::vector<Tid>& given, const std::vector<TensorSpec>& outs) {
    const std::string& type = node.op_type();
    // The inputs each rule reads must be there: ONNX's shape inference does not count them.
    const std::size_t required = type == "Conv" || type == "Gemm" || type == "MatMul" || type == "PRelu" || type == "Gather" ||
                                         type == "GatherElements" || kNormalizations.contains(type) || kBinary.contains(type) ||
                                         type.ends_with("Loss")
                                     ? 2
                                 : type == "Where" ? 3
                                                   : 1;
    if (outs.empty()) throw InputError(file_, describe(node), "has no output");
    for (std::size_t k = 0; k < required; ++k)
      if (k >= given.size() || given[k] == kNoTensor)
        throw InputError(file_, describe(node), fmt::format("input {} is missing ({} takes at least {})", k, type, required));
    std::vector<Tid> slot = given;
    slot.resize(std::max<std::size_t>(slot.size(), 3), kNoTensor);
    return record_by_rule({b_, node, leaf, type, in, std::move(slot), outs, elements(outs[0].shape)});
  }

  // The loss: the model's own when an output is a scalar, else softmax cross-entropy over each
  // floating-point output (flattened to [rows, classes]) as the zoo's classifiers train. Then the
  // backward pass and the optimizer.
  void train() {
    std::vector<Tid> scalars, others;
    std::vector<std::string> other_names;
    for (const auto& output : model_.graph().output()) {
      auto it = values_.find(output.name());
      if (it == values_.end()) continue;
      const Tid t = it->second;
      if (!is_float(b_.tensor(t).dtype) || !b_.requires_grad(t)) continue;
      if (num_elements(b_.tensor(t).shape) == 1) scalars.push_back(t);
      else {
        others.push_back(t);
        other_names.push_back(output.name());
      }
    }
    if (scalars.empty() && others.empty())
      throw InputError(file_, "graph.output",
                       "no floating-point output depends on a parameter: nothing to train (set training: false for the "
                       "forward graph alone)");
    Tid loss = kNoTensor;
    if (!scalars.empty()) {
      loss = scalars.front();
      for (std::size_t i = 1; i < scalars.size(); ++i) loss = b_.add(loss, scalars[i], "loss/add");
    } else {
      for (std::size_t i = 0; i < others.size(); ++i) {
        Tid logits = others[i];
        const Shape s = b_.tensor(logits).shape;
        const std::int64_t classes = s.back();
        const std::int64_t rows = num_elements(s) / classes;
        if (s.size() != 2) logits = b_.reshape(logits, {rows, classes}, "loss/Reshape");
        const Tid labels = b_.input("labels", {rows}, DType::I64);
        const Tid l = classification_loss(b_, "loss", logits, labels);
        loss = loss == kNoTensor ? l : b_.add(loss, l, "loss/add");
        r_.warnings.push_back(fmt::format("{}: the model has no loss output: added softmax cross-entropy over output '{}' [{}]",
                                          file_, other_names[i], fmt::join(s, ", ")));
      }
    }
    b_.backward(loss);
    b_.optimizer_step();
  }

  const OnnxImportOptions& o_;
  OnnxImport& r_;
  ModelBuilder& b_;
  std::string file_;
  onnx::ModelProto model_;
  onnx::ModelProto shapes_;  // model_ as shape inference saw it
  std::unordered_set<std::string> initializer_names_;
  std::unordered_map<std::string, TensorSpec> types_;
  std::unordered_set<std::string> trained_inputs_;
  std::optional<std::unordered_set<std::string>> declared_parameters_;  // the metadata's, when given
  std::unordered_set<std::string> consumed_;  // values some node or the graph's outputs read
  std::unordered_map<std::string, Tid> values_;
  std::vector<const onnx::NodeProto*> forward_only_;
  std::set<std::string> unknown_types_;
};

}  // namespace

OnnxImport import_onnx(const OnnxImportOptions& options) {
  validate_gpu(options.gpu, options.onnx, "gpu");
  OnnxImport result;
  result.recorded = ModelBuilder({GraphStyle::Fused, options.optimizer});
  Importer(options, result).run();
  return result;
}

Graph onnx_graph(const OnnxImportOptions& options, std::vector<std::string>& warnings) {
  OnnxImport imported = import_onnx(options);
  warnings.insert(warnings.end(), imported.warnings.begin(), imported.warnings.end());
  return imported.recorded.to_graph(options.gpu, options.onnx);
}

}  // namespace placesim::models
