#include "sim/models/onnx_shape_folding.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace placesim::models {

namespace {

using onnx::TensorProto;

constexpr std::size_t kMaxFoldedElements = 65536;

// A known integer (or boolean, as 0/1) tensor.
struct IntTensor {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> values;
  int elem_type = TensorProto::INT64;
};

bool is_integer_type(int t) {
  return t == TensorProto::INT64 || t == TensorProto::INT32 || t == TensorProto::INT16 || t == TensorProto::INT8 ||
         t == TensorProto::UINT8 || t == TensorProto::BOOL;
}

std::int64_t count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::optional<IntTensor> from_proto(const TensorProto& t) {
  if (!is_integer_type(t.data_type()) || (t.has_data_location() && t.data_location() == TensorProto::EXTERNAL)) return std::nullopt;
  IntTensor out;
  out.elem_type = t.data_type();
  out.dims.assign(t.dims().begin(), t.dims().end());
  for (auto d : out.dims)
    if (d < 0) return std::nullopt;
  const std::int64_t n = count(out.dims);
  if (n < 0 || static_cast<std::size_t>(n) > kMaxFoldedElements) return std::nullopt;
  if (!t.raw_data().empty()) {
    const std::string& raw = t.raw_data();
    const std::size_t width = t.data_type() == TensorProto::INT64 ? 8 : t.data_type() == TensorProto::INT32 ? 4
                              : t.data_type() == TensorProto::INT16                                          ? 2
                                                                                                             : 1;
    if (raw.size() != static_cast<std::size_t>(n) * width) return std::nullopt;
    for (std::int64_t i = 0; i < n; ++i) {
      const char* p = raw.data() + i * width;
      switch (t.data_type()) {
        case TensorProto::INT64: { std::int64_t v; std::memcpy(&v, p, 8); out.values.push_back(v); break; }
        case TensorProto::INT32: { std::int32_t v; std::memcpy(&v, p, 4); out.values.push_back(v); break; }
        case TensorProto::INT16: { std::int16_t v; std::memcpy(&v, p, 2); out.values.push_back(v); break; }
        case TensorProto::INT8: out.values.push_back(static_cast<std::int8_t>(*p)); break;
        default: out.values.push_back(static_cast<std::uint8_t>(*p)); break;  // UINT8, BOOL
      }
    }
  } else if (t.data_type() == TensorProto::INT64) {
    out.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else {
    out.values.assign(t.int32_data().begin(), t.int32_data().end());
  }
  if (static_cast<std::int64_t>(out.values.size()) != n) return std::nullopt;
  return out;
}

TensorProto to_proto(const IntTensor& t, const std::string& name) {
  TensorProto p;
  p.set_name(name);
  p.set_data_type(t.elem_type);
  for (auto d : t.dims) p.add_dims(d);
  for (auto v : t.values) {
    if (t.elem_type == TensorProto::INT64)
      p.add_int64_data(v);
    else
      p.add_int32_data(static_cast<std::int32_t>(v));
  }
  return p;
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

IntTensor scalar_or_list(std::vector<std::int64_t> values, bool scalar) {
  IntTensor t;
  if (!scalar) t.dims = {static_cast<std::int64_t>(values.size())};
  t.values = std::move(values);
  return t;
}

// Numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<std::int64_t>> broadcast(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The element of `t` at the broadcast index `index` of shape `shape`.
std::int64_t at_broadcast(const IntTensor& t, const std::vector<std::int64_t>& shape, std::int64_t index) {
  std::int64_t offset = 0, stride = 1;
  for (std::size_t k = shape.size(); k-- > 0;) {
    const std::int64_t i = index % shape[k];
    index /= shape[k];
    const std::size_t tk = k + t.dims.size();
    if (tk >= shape.size()) {
      const std::int64_t d = t.dims[tk - shape.size()];
      offset += (d == 1 ? 0 : i) * stride;
      stride *= d;
    }
  }
  return t.values[offset];
}

std::optional<IntTensor> elementwise(std::span<const IntTensor* const> in, int out_type,
                                     const std::function<std::optional<std::int64_t>(const std::vector<std::int64_t>&)>& f) {
  std::vector<std::int64_t> shape;
  for (const IntTensor* t : in) {
    auto b = broadcast(shape, t->dims);
    if (!b) return std::nullopt;
    shape = *b;
  }
  IntTensor out;
  out.dims = shape;
  out.elem_type = out_type;
  const std::int64_t n = count(shape);
  if (static_cast<std::size_t>(n) > kMaxFoldedElements) return std::nullopt;
  std::vector<std::int64_t> args(in.size());
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < in.size(); ++k) args[k] = at_broadcast(*in[k], shape, i);
    auto v = f(args);
    if (!v) return std::nullopt;
    out.values.push_back(*v);
  }
  return out;
}

std::int64_t normalize_axis(std::int64_t axis, std::int64_t rank) { return axis < 0 ? axis + rank : axis; }

using ShapeOf = std::function<std::optional<std::vector<std::int64_t>>(const std::string&)>;

std::optional<std::vector<std::int64_t>> ints_attribute(const onnx::NodeProto& node, const char* name) {
  if (const auto* a = attribute(node, name)) return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
  return std::nullopt;
}

std::int64_t int_attribute(const onnx::NodeProto& node, const char* name, std::int64_t fallback) {
  const auto* a = attribute(node, name);
  return a ? a->i() : fallback;
}

std::optional<IntTensor> fold_constant(const onnx::NodeProto& node) {
  if (const auto* a = attribute(node, "value")) return from_proto(a->t());
  if (const auto* a = attribute(node, "value_int")) return scalar_or_list({a->i()}, true);
  if (const auto* a = attribute(node, "value_ints")) return scalar_or_list({a->ints().begin(), a->ints().end()}, false);
  return std::nullopt;
}

// Shape and Size, of an input whose shape is known (its values need not be).
std::optional<IntTensor> fold_shape(const onnx::NodeProto& node, const ShapeOf& shape_of) {
  if (node.input_size() < 1) return std::nullopt;
  auto shape = shape_of(node.input(0));
  if (!shape) return std::nullopt;
  if (node.op_type() == "Size") return scalar_or_list({count(*shape)}, true);
  const auto rank = static_cast<std::int64_t>(shape->size());
  const std::int64_t start = std::clamp(normalize_axis(int_attribute(node, "start", 0), rank), std::int64_t{0}, rank);
  const std::int64_t end = std::clamp(normalize_axis(int_attribute(node, "end", rank), rank), start, rank);
  return scalar_or_list({shape->begin() + start, shape->begin() + end}, false);
}

// Unsqueeze and Squeeze: the axes from the second input, else the attribute.
std::optional<IntTensor> fold_squeeze(const onnx::NodeProto& node, std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  std::vector<std::int64_t> axes;
  if (in.size() > 1)
    axes = in[1]->values;
  else if (auto a = ints_attribute(node, "axes"))
    axes = *a;
  IntTensor out = x;
  if (node.op_type() == "Unsqueeze") {
    const auto rank = static_cast<std::int64_t>(x.dims.size() + axes.size());
    for (auto& a : axes) a = normalize_axis(a, rank);
    std::sort(axes.begin(), axes.end());
    for (auto a : axes) {
      if (a < 0 || a > static_cast<std::int64_t>(out.dims.size())) return std::nullopt;
      out.dims.insert(out.dims.begin() + a, 1);
    }
  } else {
    const auto rank = static_cast<std::int64_t>(x.dims.size());
    std::vector<std::int64_t> dims;
    for (std::int64_t k = 0; k < rank; ++k) {
      const bool listed = axes.empty() ? x.dims[k] == 1
                                       : std::any_of(axes.begin(), axes.end(), [&](auto a) { return normalize_axis(a, rank) == k; });
      if (!listed) dims.push_back(x.dims[k]);
    }
    out.dims = dims;
  }
  return out;
}

// Only along the one axis of vectors (and scalars as vectors of one): what shapes are.
std::optional<IntTensor> fold_concat(std::span<const IntTensor* const> in) {
  IntTensor out;
  out.elem_type = in[0]->elem_type;
  for (const IntTensor* t : in) {
    if (t->dims.size() > 1) return std::nullopt;
    out.values.insert(out.values.end(), t->values.begin(), t->values.end());
  }
  out.dims = {static_cast<std::int64_t>(out.values.size())};
  return out;
}

std::optional<IntTensor> fold_gather(const onnx::NodeProto& node, std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  if (in.size() < 2 || x.dims.size() != 1 || normalize_axis(int_attribute(node, "axis", 0), 1) != 0) return std::nullopt;
  IntTensor out = *in[1];
  out.elem_type = x.elem_type;
  for (auto& i : out.values) {
    const std::int64_t k = i < 0 ? i + x.dims[0] : i;
    if (k < 0 || k >= x.dims[0]) return std::nullopt;
    i = x.values[k];
  }
  return out;
}

std::optional<IntTensor> fold_slice(std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  if (in.size() < 3 || x.dims.size() != 1) return std::nullopt;
  if (in.size() > 3 && (in[3]->values.size() != 1 || normalize_axis(in[3]->values[0], 1) != 0)) return std::nullopt;
  if (in[1]->values.size() != 1 || in[2]->values.size() != 1) return std::nullopt;
  const std::int64_t step = in.size() > 4 ? in[4]->values.at(0) : 1;
  if (step != 1) return std::nullopt;
  const std::int64_t n = x.dims[0];
  auto clampi = [&](std::int64_t v) { return std::clamp(v < 0 ? v + n : v, std::int64_t{0}, n); };
  const std::int64_t b = clampi(in[1]->values[0]), e = std::max(b, clampi(in[2]->values[0]));
  IntTensor out;
  out.elem_type = x.elem_type;
  out.values.assign(x.values.begin() + b, x.values.begin() + e);
  out.dims = {e - b};
  return out;
}

std::optional<IntTensor> fold_reshape(const onnx::NodeProto& node, std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  if (in.size() < 2) return std::nullopt;
  std::vector<std::int64_t> dims = in[1]->values;
  std::int64_t known = 1, infer = -1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 0 && !int_attribute(node, "allowzero", 0)) dims[k] = k < x.dims.size() ? x.dims[k] : 0;
    if (dims[k] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<std::int64_t>(k);
    } else {
      known *= dims[k];
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(x.values.size());
  if (infer >= 0) {
    if (known <= 0 || n % known != 0) return std::nullopt;
    dims[infer] = n / known;
  }
  if (count(dims) != n) return std::nullopt;
  IntTensor out = x;
  out.dims = dims;
  return out;
}

std::optional<IntTensor> fold_cast(const onnx::NodeProto& node, const IntTensor& x) {
  const int to = static_cast<int>(int_attribute(node, "to", 0));
  if (!is_integer_type(to) || (to != TensorProto::INT64 && to != TensorProto::INT32 && to != TensorProto::BOOL)) return std::nullopt;
  IntTensor out = x;
  out.elem_type = to;
  if (to == TensorProto::BOOL)
    for (auto& v : out.values) v = v != 0;
  return out;
}

std::optional<IntTensor> fold_constant_of_shape(const onnx::NodeProto& node, const IntTensor& x) {
  IntTensor value;
  value.values = {0};
  value.elem_type = TensorProto::FLOAT;
  if (const auto* a = attribute(node, "value")) {
    auto v = from_proto(a->t());
    if (!v || v->values.size() != 1) return std::nullopt;
    value = *v;
  }
  if (!is_integer_type(value.elem_type)) return std::nullopt;  // a float fill is data, not shape arithmetic
  IntTensor out;
  out.elem_type = value.elem_type;
  out.dims = x.values;
  const std::int64_t n = count(out.dims);
  if (n < 0 || static_cast<std::size_t>(n) > kMaxFoldedElements) return std::nullopt;
  out.values.assign(static_cast<std::size_t>(n), value.values[0]);
  return out;
}

std::optional<IntTensor> fold_range(std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  if (in.size() < 3) return std::nullopt;
  const std::int64_t start = x.values.at(0), limit = in[1]->values.at(0), delta = in[2]->values.at(0);
  if (delta == 0) return std::nullopt;
  IntTensor out;
  out.elem_type = x.elem_type;
  for (std::int64_t v = start; delta > 0 ? v < limit : v > limit; v += delta) {
    if (out.values.size() >= kMaxFoldedElements) return std::nullopt;
    out.values.push_back(v);
  }
  out.dims = {static_cast<std::int64_t>(out.values.size())};
  return out;
}

// Element-wise arithmetic, comparisons, Not and Where (nullopt for any other op).
std::optional<IntTensor> fold_elementwise(const std::string& op, std::span<const IntTensor* const> in) {
  const IntTensor& x = *in[0];
  using Args = std::vector<std::int64_t>;
  if (in.size() == 2 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Max" || op == "Min")) {
    return elementwise(in, x.elem_type, [&](const Args& a) -> std::optional<std::int64_t> {
      if (op == "Add") return a[0] + a[1];
      if (op == "Sub") return a[0] - a[1];
      if (op == "Mul") return a[0] * a[1];
      if (op == "Max") return std::max(a[0], a[1]);
      if (op == "Min") return std::min(a[0], a[1]);
      if (a[1] == 0) return std::nullopt;
      return a[0] / a[1];  // ONNX's integer Div truncates, as C++ does
    });
  }
  if (in.size() == 2 && (op == "Equal" || op == "Less" || op == "Greater")) {
    return elementwise(in, TensorProto::BOOL, [&](const Args& a) -> std::optional<std::int64_t> {
      return op == "Equal" ? a[0] == a[1] : op == "Less" ? a[0] < a[1] : a[0] > a[1];
    });
  }
  if (op == "Not" && in.size() == 1) {
    IntTensor out = x;
    for (auto& v : out.values) v = !v;
    return out;
  }
  if (op == "Where" && in.size() == 3) {
    return elementwise(in, in[1]->elem_type, [](const Args& a) -> std::optional<std::int64_t> { return a[0] ? a[1] : a[2]; });
  }
  return std::nullopt;
}

// The node's value when its inputs are known, for the shape arithmetic exporters write.
std::optional<IntTensor> evaluate(const onnx::NodeProto& node, const std::vector<const IntTensor*>& in, const ShapeOf& shape_of) {
  const std::string& op = node.op_type();
  if (op == "Constant") return fold_constant(node);
  if (op == "Shape" || op == "Size") return fold_shape(node, shape_of);
  // The other ops need every input known.
  for (const IntTensor* t : in)
    if (!t) return std::nullopt;
  if (in.empty()) return std::nullopt;
  const IntTensor& x = *in[0];
  if (op == "Identity") return x;
  if (op == "Unsqueeze" || op == "Squeeze") return fold_squeeze(node, in);
  if (op == "Concat") return fold_concat(in);
  if (op == "Gather") return fold_gather(node, in);
  if (op == "Slice") return fold_slice(in);
  if (op == "Reshape") return fold_reshape(node, in);
  if (op == "Cast") return fold_cast(node, x);
  if (op == "ConstantOfShape") return fold_constant_of_shape(node, x);
  if (op == "Range") return fold_range(in);
  return fold_elementwise(op, in);
}

// The static shapes that inference gave the values of `model`.
std::unordered_map<std::string, std::vector<std::int64_t>> inferred_shapes(const onnx::ModelProto& model) {
  std::unordered_map<std::string, std::vector<std::int64_t>> out;
  auto add = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    std::vector<std::int64_t> dims;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    out[v.name()] = std::move(dims);
  };
  for (const auto& v : model.graph().input()) add(v);
  for (const auto& v : model.graph().value_info()) add(v);
  for (const auto& v : model.graph().output()) add(v);
  for (const auto& t : model.graph().initializer()) out[t.name()] = {t.dims().begin(), t.dims().end()};
  return out;
}

// Folds what it can of `graph`'s nodes into initializers (a folded node is removed; a value also
// a graph output stays computed). Returns how many nodes it folded.
std::size_t fold(onnx::GraphProto& graph, const std::unordered_map<std::string, std::vector<std::int64_t>>& shapes) {
  std::unordered_map<std::string, IntTensor> known;
  for (const auto& t : graph.initializer())
    if (auto v = from_proto(t)) known.emplace(t.name(), std::move(*v));
  std::unordered_set<std::string> graph_outputs;
  for (const auto& o : graph.output()) graph_outputs.insert(o.name());
  auto shape_of = [&](const std::string& name) -> std::optional<std::vector<std::int64_t>> {
    if (auto it = shapes.find(name); it != shapes.end()) return it->second;
    if (auto it = known.find(name); it != known.end()) return it->second.dims;
    return std::nullopt;
  };
  onnx::GraphProto kept_nodes;
  std::vector<TensorProto> folded_values;
  std::size_t folded = 0;
  for (const auto& node : graph.node()) {
    std::optional<IntTensor> value;
    if (node.output_size() == 1 && !graph_outputs.contains(node.output(0)) && (node.domain().empty() || node.domain() == "ai.onnx")) {
      // Optional inputs left out at the end are absent; one left out in between stops the fold.
      int inputs = node.input_size();
      while (inputs > 0 && node.input(inputs - 1).empty()) --inputs;
      std::vector<const IntTensor*> in;
      for (int k = 0; k < inputs; ++k) {
        auto it = known.find(node.input(k));
        in.push_back(it == known.end() ? nullptr : &it->second);
      }
      value = evaluate(node, in, shape_of);
    }
    if (!value) {
      *kept_nodes.add_node() = node;
      continue;
    }
    ++folded;
    folded_values.push_back(to_proto(*value, node.output(0)));
    known.emplace(node.output(0), std::move(*value));
  }
  if (folded == 0) return 0;
  graph.mutable_node()->Swap(kept_nodes.mutable_node());
  for (auto& t : folded_values) {
    // An initializer that is also listed as an input is an input with a default; folded values
    // are plain initializers.
    *graph.add_initializer() = std::move(t);
  }
  return folded;
}

}  // namespace

onnx::ModelProto infer_shapes_with_folding(const onnx::ModelProto& model) {
  onnx::ModelProto copy = model;
  const onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*data_propagation=*/true);
  // Each round folds what the last inference made known (a Shape node, once its input's shape is
  // known) and infers again; a round that folds nothing ends it.
  fold(*copy.mutable_graph(), inferred_shapes(copy));
  for (int round = 0; round < 16; ++round) {
    copy.mutable_graph()->clear_value_info();
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
    if (fold(*copy.mutable_graph(), inferred_shapes(copy)) == 0) break;
  }
  return copy;
}

}  // namespace placesim::models
