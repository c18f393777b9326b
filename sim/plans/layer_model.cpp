#include "sim/plans/layer_model.h"

#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/core/errors.h"

namespace placesim {

const LayerModel& LayerWorkload::at(int tp, const std::string& file, const std::string& field) const {
  const auto it = by_tensor_parallel.find(tp);
  if (it != by_tensor_parallel.end()) return it->second;
  std::string widths;
  for (const auto& [w, m] : by_tensor_parallel) widths += (widths.empty() ? "" : ", ") + std::to_string(w);
  throw InputError(file, field,
                   fmt::format("{} ({}) has no tensor-parallel width {}; it has: {}", name, source, tp, widths));
}

double LayerModel::bytes_into(int first) const {
  if (first <= 0 || first >= static_cast<int>(layers.size())) return 0;
  if (edges.empty()) return layers[first - 1].output_bytes;
  double bytes = 0;
  for (const LayerEdge& e : edges)
    if (e.src < first && e.dst >= first) bytes += e.bytes;
  return bytes;
}

double LayerModel::bytes_entering(int first, int end) const {
  const int L = static_cast<int>(layers.size());
  if (first <= 0 || first >= L || end <= first) return 0;
  if (edges.empty()) return layers[first - 1].output_bytes;
  double bytes = 0;
  for (const LayerEdge& e : edges)
    if (e.src < first && e.dst >= first && e.dst < end) bytes += e.bytes;
  return bytes;
}

namespace {

using json = nlohmann::json;

// A field of `object` (at `where`) that must be a finite number >= 0.
double bytes_or_seconds(const json& object, const std::string& key, const std::string& file, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw InputError(file, where + "." + key, "missing (a number >= 0)");
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0)
    throw InputError(file, where + "." + key, fmt::format("expected a number >= 0, got {}", it->dump()));
  return it->get<double>();
}

const json& member(const json& object, const std::string& key, json::value_t type, const std::string& file,
                   const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw InputError(file, where.empty() ? key : where + "." + key, "missing");
  if (it->type() != type && !(type == json::value_t::number_integer && it->is_number_integer()))
    throw InputError(file, where.empty() ? key : where + "." + key,
                     fmt::format("expected {}, got {}", json(type).type_name(), it->type_name()));
  return *it;
}

// An optional field of `object` of JSON type `type`, else `fallback`.
template <class T>
T optional_field(const json& object, const std::string& key, json::value_t type, T fallback, const std::string& file,
                 const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (it->type() != type)
    throw InputError(file, where.empty() ? key : where + "." + key,
                     fmt::format("expected {}, got {}", json(type).type_name(), it->type_name()));
  return it->get<T>();
}

// A whole number of `object`, within [lo, hi].
long whole_number(const json& object, const std::string& key, long lo, long hi, const std::string& file,
                  const std::string& where) {
  const auto it = object.find(key);
  const std::string field = where + "." + key;
  if (it == object.end()) throw InputError(file, field, "missing (a whole number)");
  const bool fits = (it->is_number_unsigned() && it->get<std::uint64_t>() <= static_cast<std::uint64_t>(hi)) ||
                    (it->is_number_integer() && !it->is_number_unsigned() && it->get<std::int64_t>() >= lo &&
                     it->get<std::int64_t>() <= hi);
  if (!fits) throw InputError(file, field, fmt::format("expected a whole number from {} to {}, got {}", lo, hi, it->dump()));
  return it->get<long>();
}

}  // namespace

LayerWorkload load_nest_workload(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  json root;
  try {
    root = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw InputError(path, "", fmt::format("not valid JSON: {}", e.what()));
  }
  if (!root.is_object()) throw InputError(path, "", "expected a JSON object (a NEST workload, schema nest-workload/1)");
  const auto schema = root.find("schema");
  if (schema == root.end() || *schema != "nest-workload/1")
    throw InputError(path, "schema",
                     fmt::format("expected \"nest-workload/1\" (../shared/workloads/nest/README.md), got {}",
                                 schema == root.end() ? std::string("nothing") : schema->dump()));
  if (const auto unit = root.find("time_unit"); unit == root.end() || *unit != "s")
    throw InputError(path, "time_unit", "expected \"s\": the loader reads seconds");
  const bool recompute = optional_field<bool>(root, "activation_recomputation", json::value_t::boolean, false, path, "");
  const int expert_parallel =
      root.contains("expert_parallel_degree") ? static_cast<int>(whole_number(root, "expert_parallel_degree", 1, 1 << 20, path, ""))
                                              : 1;
  double time_scale = 0;
  if (const auto scale = root.find("nest_dp_time_scale"); scale != root.end() && !scale->is_null()) {
    if (!scale->is_number() || !std::isfinite(scale->get<double>()) || scale->get<double>() <= 0)
      throw InputError(path, "nest_dp_time_scale", fmt::format("expected a number > 0, got {}", scale->dump()));
    time_scale = scale->get<double>();
  }
  LayerWorkload w;
  w.name = optional_field<std::string>(root, "model", json::value_t::string, "nest workload", path, "");
  w.source = path;
  const json& variants = member(root, "variants", json::value_t::object, path, "");
  for (const auto& [key, variant] : variants.items()) {
    const std::string where = "variants." + key;
    if (!variant.is_object()) throw InputError(path, where, "expected an object");
    LayerModel m;
    m.name = w.name;
    m.tensor_parallel = static_cast<int>(whole_number(variant, "tensor_parallel_degree", 1, 1 << 20, path, where));
    m.expert_parallel = expert_parallel;
    m.nest_recomputation = recompute;
    m.nest_time_scale = time_scale;
    const json& layers = member(variant, "layers", json::value_t::array, path, where);
    if (layers.empty()) throw InputError(path, where + ".layers", "expected at least one layer");
    std::map<long, std::size_t> index_of_id;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const json& l = layers[i];
      const std::string at = fmt::format("{}.layers[{}]", where, i);
      if (!l.is_object()) throw InputError(path, at, "expected an object");
      Layer layer;
      layer.name = optional_field<std::string>(l, "name", json::value_t::string, fmt::format("layer {}", i), path, at);
      layer.forward_s = bytes_or_seconds(l, "fwd_s", path, at);
      layer.backward_s = bytes_or_seconds(l, "bwd_s", path, at);
      layer.parameter_bytes = bytes_or_seconds(l, "parameter_bytes", path, at);
      layer.block = optional_field<std::string>(l, "kind", json::value_t::string, "transformer_block", path, at) ==
                    "transformer_block";
      layer.stashed_bytes =
          bytes_or_seconds(l, recompute ? "stashed_bytes_with_recompute" : "stashed_bytes_without_recompute", path, at);
      if (l.contains("activation_bytes") && !l.at("activation_bytes").is_null())
        layer.activation_bytes = bytes_or_seconds(l, "activation_bytes", path, at);
      const long id = whole_number(l, "id", -(1L << 40), 1L << 40, path, at);
      if (!index_of_id.emplace(id, i).second)
        throw InputError(path, at + ".id", fmt::format("layer id {} appears twice", id));
      m.layers.push_back(std::move(layer));
    }
    // A layer's output: its edges to later layers (NEST's layer graph; a plain chain for most models).
    const json& edges = member(variant, "edges", json::value_t::array, path, where);
    for (std::size_t e = 0; e < edges.size(); ++e) {
      const std::string at = fmt::format("{}.edges[{}]", where, e);
      const json& edge = edges[e];
      if (!edge.is_object()) throw InputError(path, at, "expected an object {src, dst, bytes}");
      const long src = whole_number(edge, "src", -(1L << 40), 1L << 40, path, at);
      const long dst = whole_number(edge, "dst", -(1L << 40), 1L << 40, path, at);
      const auto s = index_of_id.find(src), d = index_of_id.find(dst);
      if (s == index_of_id.end() || d == index_of_id.end())
        throw InputError(path, at, fmt::format("names a layer id that is not in {}.layers", where));
      if (d->second <= s->second)
        throw InputError(path, at, "goes backwards in the layer order (the layers must be listed in topological order)");
      const double bytes = bytes_or_seconds(edge, "bytes", path, at);
      m.layers[s->second].output_bytes += bytes;
      m.edges.push_back({static_cast<int>(s->second), static_cast<int>(d->second), bytes});
    }
    if (!w.by_tensor_parallel.emplace(m.tensor_parallel, std::move(m)).second)
      throw InputError(path, where + ".tensor_parallel_degree", "two variants have the same width");
  }
  if (w.by_tensor_parallel.empty()) throw InputError(path, "variants", "expected at least one variant");
  return w;
}

}  // namespace placesim
