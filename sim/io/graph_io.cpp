#include "sim/io/graph_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "sim/core/errors.h"
#include "sim/io/placement_io.h"
#include "sim/core/units.h"

namespace placesim {

namespace {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Parsing JSON text. nlohmann's own DOM parser reports where an error is only as a byte
// position; this SAX builder also tracks the key path, so a malformed file names the field
// ("nodes[12].comp_cost") as well as the line and column.
//
// The elements of the root object's arrays that an ElementSink asks for are handed to it one at a
// time, as each is complete, instead of being kept: the DOM of a million operators took 1.4 GB
// (a std::map per element), while the graph they make takes a tenth of that. The DOM keeps an
// empty array in their place.

struct ElementSink {
  virtual ~ElementSink() = default;
  virtual bool streams(std::string_view key) const = 0;
  // The array `key` of the root object starts; its elements follow in order; it ends.
  virtual void begin(std::string_view key) = 0;
  virtual void element(std::string_view key, std::size_t index, json&& value) = 0;
  virtual void end(std::string_view key) = 0;
};

class PathTrackingBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit PathTrackingBuilder(ElementSink* sink = nullptr) : sink_(sink) {}

  json root;
  std::string error_path;
  std::string error_message;
  std::size_t error_position = 0;
  std::string error_token;

  bool null() { add(nullptr); return true; }
  bool boolean(bool v) { add(v); return true; }
  bool number_integer(number_integer_t v) { add(v); return true; }
  bool number_unsigned(number_unsigned_t v) { add(v); return true; }
  bool number_float(number_float_t v, const string_t&) { add(v); return true; }
  bool string(string_t& v) { add(std::move(v)); return true; }
  bool binary(binary_t& v) { add(json::binary(std::move(v))); return true; }
  bool start_object(std::size_t) { open_.push_back({add(json::object(), true), {}}); return true; }
  bool key(string_t& k) { open_.back().key = k; return true; }
  bool end_object() { close(); return true; }
  bool start_array(std::size_t) {
    const bool streamed = sink_ && open_.size() == 1 && open_[0].value->is_object() && sink_->streams(open_[0].key);
    open_.push_back({add(json::array(), true), {}, 0, streamed});
    if (streamed) sink_->begin(open_[0].key);
    return true;
  }
  bool end_array() { close(); return true; }

  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& ex) {
    error_position = position;
    error_token = last_token;
    error_message = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag: users need the text, not the id.
    if (error_message.rfind("[json.exception.", 0) == 0) {
      auto close = error_message.find("] ");
      if (close != std::string::npos) error_message.erase(0, close + 2);
    }
    error_path = current_path();
    return false;
  }

 private:
  struct Open {
    json* value;
    std::string key;         // last key read, for objects
    std::size_t count = 0;   // values added so far, for arrays
    bool streamed = false;   // an array whose elements go to the sink
  };
  // Pointers stay valid: only the innermost open container grows, and it is never an element of
  // a container that grows while it is open.
  std::vector<Open> open_;
  ElementSink* sink_;
  json element_;  // the element of a streamed array being built

  // `container`: v is an object or array about to be opened (it is complete when it closes).
  json* add(json&& v, bool container = false) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    Open& top = open_.back();
    ++top.count;
    if (top.streamed) {
      element_ = std::move(v);
      if (!container) hand_over();
      return &element_;
    }
    json& value = *top.value;
    if (value.is_array()) {
      value.push_back(std::move(v));
      return &value.back();
    }
    json& slot = value[top.key];
    slot = std::move(v);
    return &slot;
  }

  void close() {
    const bool streamed = open_.back().streamed;
    open_.pop_back();
    if (streamed) sink_->end(open_[0].key);
    else if (open_.size() == 2 && open_[1].streamed) hand_over();  // an element of a streamed array is complete
  }

  void hand_over() {
    sink_->element(open_[0].key, open_[1].count - 1, std::move(element_));
    element_ = json();
  }

  std::string current_path() const {
    std::string path;
    for (std::size_t i = 0; i < open_.size(); ++i) {
      const Open& o = open_[i];
      bool innermost = i + 1 == open_.size();
      if (o.value->is_array()) {
        // The innermost array is parsing its next element; an outer one holds the open child last.
        std::size_t index = innermost ? o.count : (o.count == 0 ? 0 : o.count - 1);
        path += fmt::format("[{}]", index);
      } else if (!o.key.empty()) {
        path += (path.empty() ? "" : ".") + o.key;
      }
    }
    return path;
  }
};

json parse_json(std::string_view text, const std::string& file, ElementSink* sink = nullptr) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw InputError(file, "", "the file is empty: expected a JSON object");
  PathTrackingBuilder builder(sink);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &builder);
  } catch (const json::exception& e) {
    throw InputError(file, builder.error_path, std::string("malformed JSON: ") + e.what());
  }
  if (ok) return std::move(builder.root);

  std::string message = "malformed JSON: " + builder.error_message;
  if (message.find(" line ") == std::string::npos) {
    // Number overflow and similar errors carry no position; add one.
    std::size_t end = std::min(builder.error_position, text.size());
    std::size_t line = 1 + std::count(text.begin(), text.begin() + end, '\n');
    std::size_t line_start = text.rfind('\n', end == 0 ? 0 : end - 1);
    std::size_t column = line_start == std::string_view::npos ? end : end - line_start - 1;
    message += fmt::format(" (at line {}, column {})", line, column);
  }
  // last_token holds what the lexer read up to the error; the offending literal is its tail.
  std::string_view token = builder.error_token;
  if (auto cut = token.find_last_of(" \t\r\n:,[{"); cut != std::string_view::npos) token.remove_prefix(cut + 1);
  if (!token.empty() && token.front() == '-') token.remove_prefix(1);
  // Python's json.dump writes NaN and Infinity; "na" and "i" are how nan and inf start.
  if (token.starts_with("N") || token.starts_with("I") || token.starts_with("na") || token.starts_with("i") ||
      message.find("overflow") != std::string::npos)
    message += "; NaN, Infinity and out-of-range numbers are not valid JSON: every value must be a finite number";
  throw InputError(file, builder.error_path, message);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory, expected a JSON file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw InputError(path, "", fmt::format("cannot open the file: {}", std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw InputError(path, "", "cannot read the file");
  return text;
}

// ---------------------------------------------------------------------------------------------
// Field access with errors that name the JSON path.

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
std::string at(const std::string& path, std::size_t index) { return fmt::format("{}[{}]", path, index); }

std::string describe(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return fmt::format("{} {}", v.type_name(), text);
}

class Fields {
 public:
  explicit Fields(const std::string& file) : file_(file) {}
  const std::string& file() const { return file_; }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(file_, field, what);
  }

  void expect_object(const json& v, const std::string& field, std::string_view what) const {
    if (!v.is_object()) fail(field, fmt::format("expected {}, got {}", what, describe(v)));
  }

  // `obj` must be an object; `expected` says what the member should hold, for the error.
  const json& member(const json& obj, std::string_view key, const std::string& path, std::string_view expected) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(join(path, key), fmt::format("missing field: expected {}", expected));
    return *it;
  }
  const json* optional_member(const json& obj, std::string_view key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  const json& array_member(const json& obj, std::string_view key, const std::string& path, std::string_view expected) const {
    const json& v = member(obj, key, path, expected);
    if (!v.is_array()) fail(join(path, key), fmt::format("expected {}, got {}", expected, describe(v)));
    return v;
  }

  // A finite, non-negative number; `unit` names the unit in the message.
  double quantity(const json& v, const std::string& field, std::string_view unit) const {
    if (!v.is_number()) fail(field, fmt::format("expected a non-negative number ({}), got {}", unit, describe(v)));
    double x = v.get<double>();
    if (!std::isfinite(x)) fail(field, fmt::format("expected a finite number ({}), got {}", unit, x));
    if (x < 0) fail(field, fmt::format("expected a non-negative number ({}), got {}", unit, v.dump()));
    return x;
  }

  // A duration in `unit` (of `seconds_per_unit` each), as written, within the range every
  // duration placesim reads must lie in (sim/core/units.h).
  double duration(const json& v, const std::string& field, std::string_view unit, double seconds_per_unit) const {
    const double x = quantity(v, field, unit);
    check_duration_range(x * seconds_per_unit, fmt::format("{} {}", v.dump(), unit), file_, field);
    return x;
  }
  // A size in `unit` (of `bytes_per_unit` each), as written, within the range of sizes.
  double size(const json& v, const std::string& field, std::string_view unit, double bytes_per_unit) const {
    const double x = quantity(v, field, unit);
    check_bytes_range(x * bytes_per_unit, fmt::format("{} {}", v.dump(), unit), file_, field);
    return x;
  }

  std::string string(const json& v, const std::string& field, std::string_view expected) const {
    if (!v.is_string()) fail(field, fmt::format("expected {}, got {}", expected, describe(v)));
    return v.get<std::string>();
  }

  std::int64_t integer(const json& v, const std::string& field, std::string_view expected) const {
    if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
        fail(field, fmt::format("expected {}, got the too large {}", expected, v.dump()));
      return v.get<std::int64_t>();
    }
    // Writers that go through floating point emit 3.0 for 3.
    if (v.is_number_float()) {
      double x = v.get<double>();
      if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) return static_cast<std::int64_t>(x);
    }
    fail(field, fmt::format("expected {}, got {}", expected, describe(v)));
  }

 private:
  const std::string& file_;
};

std::string with_file(const std::string& file, const std::string& text) {
  return (file.empty() ? std::string("<input>") : file) + ": " + text;
}

// ---------------------------------------------------------------------------------------------
// QuickP: networkx node-link JSON (nx.node_link_data) from the QuickP authors' repository.
//   Top level: directed, multigraph, graph (ignored), nodes, links ("edges" in networkx >= 3.4).
//   nodes[]: id (string; integers accepted), op_type (string), mem (BYTES resident on the device),
//            comp_cost (object: device name -> compute time in MICROSECONDS),
//            optional output_size / output_type (shape metadata, ignored).
//   links[]: source, target (node ids), optional tensor_size_in_bit (BITS; absent means 0, as in
//            tiny.json, which carries shapes instead).
// placesim models one device type, so compute time is the mean over the listed devices; if they
// disagree by more than 1% the graph still loads, with a warning.
// Parameter gradients (Tensor::gradient, for data parallelism): TensorFlow names the backward pass
// "gradient_tape/..." and the optimizer's operators by its scope, the first name component of its
// AssignSubVariableOp updates ("adam/..."); a tensor from the one to the other is a parameter's
// gradient. (Tensors from the backward pass to other scopes, as "AddN_9", are activation
// gradients.)
LoadResult load_quickp_json(const json& doc, const std::string& file) {
  Fields f(file);
  f.expect_object(doc, "", "a JSON object (networkx node-link graph)");
  LoadResult result;
  result.format = GraphFormat::QuickP;

  if (const json* directed = f.optional_member(doc, "directed"); directed && directed->is_boolean() && !directed->get<bool>())
    result.warnings.push_back(with_file(file, "\"directed\" is false; reading links as source -> target anyway"));

  const json& nodes = f.array_member(doc, "nodes", "", "an array of operators");
  // networkx >= 3.4 names the links "edges"; msr-fiddle's "edges" (sourceId/destId) must not pass.
  const char* links_key = "links";
  if (auto edges = doc.find("edges"); !doc.contains("links") && edges != doc.end() && edges->is_array() &&
                                      (edges->empty() || (edges->front().is_object() && edges->front().contains("source"))))
    links_key = "edges";
  const json& links = f.array_member(doc, links_key, "", "an array of tensors (source, target, tensor_size_in_bit)");

  // Node ids may be strings or integers; both are keyed by their text.
  auto id_key = [&](const json& v, const std::string& field) -> std::string {
    if (v.is_string()) {
      std::string s = v.get<std::string>();
      if (s.empty()) f.fail(field, "expected a non-empty node id");
      return s;
    }
    if (v.is_number_integer()) return v.dump();
    f.fail(field, fmt::format("expected a node id (string), got {}", describe(v)));
  };

  Graph& g = result.graph;
  std::unordered_map<std::string, std::pair<OpId, std::size_t>> by_id;  // id -> (op, index in nodes)
  by_id.reserve(nodes.size());
  std::size_t disagreeing = 0;
  double worst_spread = 0;
  std::string worst_op;
  std::set<std::string> optimizer_scopes;
  auto scope_of = [](const std::string& name) { return name.substr(0, name.find('/')); };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = at("nodes", i);
    const json& node = nodes[i];
    f.expect_object(node, path, "an object (id, op_type, mem, comp_cost)");
    const std::string id_field = join(path, "id");
    std::string name = id_key(f.member(node, "id", path, "a node id (string)"), id_field);
    std::string type = f.string(f.member(node, "op_type", path, "an operator type (string)"), join(path, "op_type"), "an operator type (string)");
    double memory = f.size(f.member(node, "mem", path, "a non-negative number (bytes)"), join(path, "mem"), "bytes", 1);

    const std::string cost_field = join(path, "comp_cost");
    const json& cost = f.member(node, "comp_cost", path, "an object of device -> microseconds");
    if (!cost.is_object() || cost.empty())
      f.fail(cost_field, fmt::format("expected a non-empty object of device -> microseconds, got {}",
                                     cost.is_object() ? "an empty object" : describe(cost)));
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (auto it = cost.begin(); it != cost.end(); ++it) {
      double us = f.duration(it.value(), join(cost_field, it.key()), "microseconds", 1e-6);
      sum += us;
      lo = std::min(lo, us);
      hi = std::max(hi, us);
    }
    // Equal values are taken as they are: summing and dividing could move the last bit.
    double mean_us = lo == hi ? lo : sum / static_cast<double>(cost.size());
    if (hi > 0 && (hi - lo) / hi > 0.01) {
      ++disagreeing;
      if ((hi - lo) / hi > worst_spread) {
        worst_spread = (hi - lo) / hi;
        worst_op = name;
      }
    }

    auto [it, inserted] = by_id.emplace(name, std::pair<OpId, std::size_t>{static_cast<OpId>(g.num_operators()), i});
    if (!inserted) f.fail(id_field, fmt::format("duplicate node id '{}' (first at nodes[{}])", name, it->second.second));
    if (type == "AssignSubVariableOp" && name.find('/') != std::string::npos) optimizer_scopes.insert(scope_of(name));
    g.add_operator({std::move(name), std::move(type), mean_us / 1e6, memory});
  }
  if (disagreeing > 0)
    result.warnings.push_back(with_file(file, fmt::format(
        "comp_cost differs by more than 1% between devices for {} operator(s) (largest: {:.1f}% on '{}'); "
        "using the mean over the devices", disagreeing, 100 * worst_spread, worst_op)));

  for (std::size_t e = 0; e < links.size(); ++e) {
    const std::string path = at(links_key, e);
    const json& link = links[e];
    f.expect_object(link, path, "an object (source, target, tensor_size_in_bit)");
    OpId ends[2];
    const char* keys[2] = {"source", "target"};
    for (int k = 0; k < 2; ++k) {
      const std::string field = join(path, keys[k]);
      std::string id = id_key(f.member(link, keys[k], path, "a node id"), field);
      auto found = by_id.find(id);
      if (found == by_id.end()) f.fail(field, fmt::format("unknown node id '{}': no such entry in nodes", id));
      ends[k] = found->second.first;
    }
    double bytes = 0;
    if (const json* bits = f.optional_member(link, "tensor_size_in_bit"))
      bytes = f.size(*bits, join(path, "tensor_size_in_bit"), "bits", 1.0 / 8) / 8;
    const bool gradient = bytes > 0 && g.op(ends[0]).name.starts_with("gradient_tape/") &&
                          optimizer_scopes.contains(scope_of(g.op(ends[1]).name));
    g.add_tensor(ends[0], ends[1], bytes, gradient);
  }
  g.finalize(file);
  return result;
}

// ---------------------------------------------------------------------------------------------
// msr-fiddle: Tarnawski et al., "Efficient Algorithms for Device Placement of DNN Graph
// Operators" (NeurIPS 2020).
//   Top level: maxSizePerFPGA (BYTES per accelerator; kept as suggested_device_memory),
//              maxFPGAs, maxCPUs (ignored), nodes, edges.
//   nodes[]: id (integer), name (string), fpgaLatency (MILLISECONDS on the accelerator),
//            size (BYTES of memory), isBackwardNode (bool or 0/1; gives the type "backward" or
//            "forward"), optional colorClass (integer: same class = same device; mapped to dense
//            colocation classes 0..k-1 in order of first appearance). cpuLatency is ignored;
//            supportedOnFpga is ignored with a warning when false (placesim has no CPU tier).
//   edges[]: sourceId, destId (node ids), size (BYTES of the tensor); cost (ms to CPU) ignored.
//
// Forward-to-backward pairing: in this format a backward node is paired with the forward node(s)
// of its colorClass. Layer graphs (inceptionv3_training, gnmt_training) carry no edge at all from a
// forward to a backward node, so without help their backward pass could start at t = 0 (and their
// backward edges copy the forward direction: see msr_backward_edges_mirror_forward; the loader
// reverses them before this runs). When a file has backward nodes and not one forward -> backward
// edge, the loader adds, for every colour class, a zero-byte control tensor f -> b from each
// forward node f to each backward node b of the class, unless f already reaches b (the dependency is implied) or b reaches f (the edge would
// close a cycle); backward nodes are visited in a topological order of the file's own edges, and
// "reaches" counts the edges added so far, so implied pairs add nothing. Files that do link the
// passes (operator graphs: bert_l-3, resnet50) are left as they are: there a class groups a weight
// with its gradient and update operators, some of which rightly need no forward output.
// Returns the number of edges added, and the number skipped because of a cycle.
struct PairingEdges {
  std::vector<std::pair<OpId, OpId>> added;
  std::size_t skipped_cycle = 0;
};

PairingEdges msr_pairing_edges(const std::vector<char>& backward, const std::vector<std::int32_t>& colour,
                               const std::vector<std::pair<OpId, OpId>>& edges) {
  PairingEdges out;
  const std::size_t n = backward.size();
  bool any_backward = false;
  for (char b : backward) any_backward = any_backward || b;
  if (!any_backward) return out;
  for (const auto& [src, dst] : edges)
    if (!backward[src] && backward[dst]) return out;  // the file links the passes itself

  std::vector<std::vector<OpId>> succ(n);
  std::vector<std::int32_t> indegree(n, 0);
  for (const auto& [src, dst] : edges) {
    succ[src].push_back(dst);
    ++indegree[dst];
  }
  // Kahn's order; a cyclic file is left to Graph::finalize, which names the cycle.
  std::vector<OpId> order;
  for (std::size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) order.push_back(static_cast<OpId>(v));
  for (std::size_t i = 0; i < order.size(); ++i)
    for (OpId w : succ[order[i]])
      if (--indegree[w] == 0) order.push_back(w);
  if (order.size() != n) return out;

  std::map<std::int32_t, std::vector<OpId>> forward_of_class;
  for (std::size_t v = 0; v < n; ++v)
    if (!backward[v] && colour[v] >= 0) forward_of_class[colour[v]].push_back(static_cast<OpId>(v));

  std::vector<std::uint32_t> seen(n, 0);
  std::uint32_t stamp = 0;
  std::vector<OpId> stack;
  const auto reaches = [&](OpId from, OpId to) {
    ++stamp;
    stack.assign(1, from);
    seen[from] = stamp;
    while (!stack.empty()) {
      const OpId u = stack.back();
      stack.pop_back();
      if (u == to) return true;
      for (OpId w : succ[u])
        if (seen[w] != stamp) {
          seen[w] = stamp;
          stack.push_back(w);
        }
    }
    return false;
  };
  for (OpId b : order) {
    if (!backward[b] || colour[b] < 0) continue;
    const auto it = forward_of_class.find(colour[b]);
    if (it == forward_of_class.end()) continue;
    for (OpId f : it->second) {
      if (reaches(f, b)) continue;
      if (reaches(b, f)) {
        ++out.skipped_cycle;
        continue;
      }
      succ[f].push_back(b);
      out.added.emplace_back(f, b);
    }
  }
  return out;
}

// Layer graphs in this format (inceptionv3_training, gnmt_training) copy the forward graph for the
// backward pass without reversing it: for every edge f_a -> f_b there is b_a -> b_b, where the
// gradient of a is in fact computed from the gradient of b. True when the file has backward nodes,
// no edge between the passes, and every backward -> backward edge joins two colour classes that a
// forward edge joins in the same direction; the loader then reverses the backward edges.
bool msr_backward_edges_mirror_forward(const std::vector<char>& backward, const std::vector<std::int32_t>& colour,
                                       const std::vector<std::pair<OpId, OpId>>& edges) {
  std::set<std::pair<std::int32_t, std::int32_t>> forward_class_edges;
  std::size_t backward_edges = 0;
  for (const auto& [src, dst] : edges) {
    if (backward[src] != backward[dst]) return false;
    if (!backward[src]) forward_class_edges.emplace(colour[src], colour[dst]);
  }
  for (const auto& [src, dst] : edges) {
    if (!backward[src]) continue;
    ++backward_edges;
    if (colour[src] < 0 || colour[dst] < 0 || !forward_class_edges.count({colour[src], colour[dst]})) return false;
  }
  return backward_edges > 0;
}

LoadResult load_msr_json(const json& doc, const std::string& file) {
  Fields f(file);
  f.expect_object(doc, "", "a JSON object (nodes, edges)");
  LoadResult result;
  result.format = GraphFormat::Msr;
  if (const json* mem = f.optional_member(doc, "maxSizePerFPGA"))
    result.suggested_device_memory = f.size(*mem, "maxSizePerFPGA", "bytes", 1);

  const json& nodes = f.array_member(doc, "nodes", "", "an array of operators");
  const json& edges = f.array_member(doc, "edges", "", "an array of tensors (sourceId, destId, size)");

  Graph& g = result.graph;
  std::unordered_map<std::int64_t, std::pair<OpId, std::size_t>> by_id;
  std::unordered_map<std::string, std::size_t> name_at;
  std::map<std::int64_t, std::int32_t> class_of;  // colorClass -> dense id
  std::size_t cpu_only = 0, renamed = 0;
  std::vector<char> backward_of;        // per operator
  std::vector<std::int32_t> colour_of;  // per operator: dense class or -1
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string path = at("nodes", i);
    const json& node = nodes[i];
    f.expect_object(node, path, "an object (id, name, fpgaLatency, size, isBackwardNode)");
    const std::string id_field = join(path, "id");
    std::int64_t id = f.integer(f.member(node, "id", path, "an integer node id"), id_field, "an integer node id");
    std::string name = f.string(f.member(node, "name", path, "a name (string)"), join(path, "name"), "a name (string)");
    double latency_ms = f.duration(f.member(node, "fpgaLatency", path, "a non-negative number (milliseconds)"),
                                   join(path, "fpgaLatency"), "milliseconds", 1e-3);
    double memory = f.size(f.member(node, "size", path, "a non-negative number (bytes)"), join(path, "size"), "bytes", 1);
    const json& backward = f.member(node, "isBackwardNode", path, "a boolean (or 0/1)");
    bool is_backward = false;
    if (backward.is_boolean()) {
      is_backward = backward.get<bool>();
    } else if (backward.is_number_integer() && (backward.get<std::int64_t>() == 0 || backward.get<std::int64_t>() == 1)) {
      is_backward = backward.get<std::int64_t>() == 1;
    } else {
      f.fail(join(path, "isBackwardNode"), fmt::format("expected a boolean (or 0/1), got {}", describe(backward)));
    }
    std::int32_t colocation = -1;
    if (const json* color = f.optional_member(node, "colorClass"); color && !color->is_null()) {
      std::int64_t c = f.integer(*color, join(path, "colorClass"), "an integer colour class");
      colocation = class_of.emplace(c, static_cast<std::int32_t>(class_of.size())).first->second;
    }
    if (const json* supported = f.optional_member(node, "supportedOnFpga");
        supported && ((supported->is_boolean() && !supported->get<bool>()) ||
                      (supported->is_number() && supported->get<double>() == 0)))
      ++cpu_only;

    auto [it, inserted] = by_id.emplace(id, std::pair<OpId, std::size_t>{static_cast<OpId>(g.num_operators()), i});
    if (!inserted) f.fail(id_field, fmt::format("duplicate node id {} (first at nodes[{}])", id, it->second.second));
    if (name.empty()) name = fmt::format("node{}", id);
    // Names are labels in this format (ids are the keys); placesim needs unique names.
    if (name_at.count(name)) {
      name = fmt::format("{}#{}", name, id);
      ++renamed;
    }
    if (!name_at.emplace(name, i).second)
      f.fail(join(path, "name"), fmt::format("duplicate name '{}' (also nodes[{}])", name, name_at[name]));
    g.add_operator({std::move(name), is_backward ? "backward" : "forward", latency_ms / 1e3, memory, colocation});
    backward_of.push_back(is_backward ? 1 : 0);
    colour_of.push_back(colocation);
  }
  if (cpu_only > 0)
    result.warnings.push_back(with_file(file, fmt::format(
        "{} operator(s) have supportedOnFpga = false; placesim has no CPU tier and may place them on any device",
        cpu_only)));
  if (renamed > 0)
    result.warnings.push_back(with_file(file, fmt::format(
        "{} operator(s) share a name with an earlier one; renamed to 'name#id'", renamed)));

  std::vector<std::pair<OpId, OpId>> file_edges;
  std::vector<double> file_bytes;
  for (std::size_t e = 0; e < edges.size(); ++e) {
    const std::string path = at("edges", e);
    const json& edge = edges[e];
    f.expect_object(edge, path, "an object (sourceId, destId, size)");
    OpId ends[2];
    const char* keys[2] = {"sourceId", "destId"};
    for (int k = 0; k < 2; ++k) {
      const std::string field = join(path, keys[k]);
      std::int64_t id = f.integer(f.member(edge, keys[k], path, "an integer node id"), field, "an integer node id");
      auto found = by_id.find(id);
      if (found == by_id.end()) f.fail(field, fmt::format("unknown node id {}: no such entry in nodes", id));
      ends[k] = found->second.first;
    }
    double bytes = f.size(f.member(edge, "size", path, "a non-negative number (bytes)"), join(path, "size"), "bytes", 1);
    file_edges.emplace_back(ends[0], ends[1]);
    file_bytes.push_back(bytes);
  }
  const bool mirrored = msr_backward_edges_mirror_forward(backward_of, colour_of, file_edges);
  for (std::size_t e = 0; e < file_edges.size(); ++e) {
    auto& [src, dst] = file_edges[e];
    if (mirrored && backward_of[src] && backward_of[dst]) std::swap(src, dst);
    g.add_tensor(src, dst, file_bytes[e]);
  }
  if (mirrored)
    result.warnings.push_back(with_file(file, fmt::format(
        "the backward edges copy the forward edges' direction (each runs from the gradient of a layer to the "
        "gradient of its consumer); reversed them so that the backward pass runs from the last layer to the "
        "first, as training does")));
  const PairingEdges pairing = msr_pairing_edges(backward_of, colour_of, file_edges);
  for (const auto& [fwd, bwd] : pairing.added) g.add_tensor(fwd, bwd, 0.0);
  if (!pairing.added.empty() || pairing.skipped_cycle > 0)
    result.warnings.push_back(with_file(file, fmt::format(
        "no edge leads from a forward to a backward node; added {} zero-byte control edge(s) forward -> backward "
        "between nodes of the same colorClass so that no backward node starts before its forward node has "
        "finished{}",
        pairing.added.size(),
        pairing.skipped_cycle ? fmt::format(" ({} pair(s) skipped: the edge would close a cycle)", pairing.skipped_cycle)
                              : std::string())));
  g.finalize(file);
  return result;
}

// ---------------------------------------------------------------------------------------------
// placesim native format: documented in graph_io.h and docs/graph-format.md. Seconds and bytes.

constexpr std::string_view kFormatTag = "placesim-graph";
constexpr int kFormatVersion = 1;

// Read element by element: parse_graph streams the elements of "operators" and "tensors" here
// while it parses the text (ElementSink), and finish() reads the rest of the document (feeding it
// the elements itself when the document was parsed whole). An element's error is kept until
// finish() has checked the top level, so errors come in the order of a reading of the whole
// document: top level, then operators, then tensors. Tensors that come before the operators are
// complete wait for them.
class PlacesimReader final : public ElementSink {
 public:
  explicit PlacesimReader(const std::string& file) : f_(file), file_(file) {}

  bool streams(std::string_view key) const override { return key == "operators" || key == "tensors"; }
  void begin(std::string_view key) override {
    bool& seen = key == "operators" ? ops_streamed_ : tensors_streamed_;
    if (seen && !repeated_) repeated_ = std::string(key);
    seen = true;
  }
  void element(std::string_view key, std::size_t index, json&& value) override {
    if (repeated_) return;
    if (key == "operators") {
      if (!ops_error_) capture(ops_error_, [&] { add_operator(value, index); });
    } else if (!ops_done_) {
      waiting_.emplace_back(index, std::move(value));
    } else if (!tensors_error_) {
      capture(tensors_error_, [&] { add_tensor(value, index); });
    }
  }
  void end(std::string_view key) override {
    if (key == "operators") ops_done_ = true;
  }

  LoadResult finish(const json& doc) {
    f_.expect_object(doc, "", "a JSON object (format, version, operators, tensors)");
    if (repeated_) f_.fail(*repeated_, "the key appears twice in the top-level object");
    LoadResult result;
    result.format = GraphFormat::Placesim;

    const std::string expected_tag = fmt::format("\"{}\"", kFormatTag);
    std::string tag = f_.string(f_.member(doc, "format", "", expected_tag), "format", expected_tag);
    if (tag != kFormatTag) f_.fail("format", fmt::format("expected {}, got \"{}\"", expected_tag, tag));
    std::int64_t version = f_.integer(f_.member(doc, "version", "", "1"), "version", "the integer 1");
    if (version != kFormatVersion)
      f_.fail("version", fmt::format("unsupported version {}: this placesim reads version {}", version, kFormatVersion));
    if (const json* units = f_.optional_member(doc, "units")) {
      f_.expect_object(*units, "units", "an object {\"time\": \"s\", \"memory\": \"B\", \"tensor\": \"B\"}");
      static constexpr std::pair<const char*, const char*> kUnits[] = {{"time", "s"}, {"memory", "B"}, {"tensor", "B"}};
      for (auto [key, unit] : kUnits) {
        const std::string field = join("units", key);
        const std::string expected = fmt::format("\"{}\"", unit);
        if (const json* u = f_.optional_member(*units, key); u && f_.string(*u, field, expected) != unit)
          f_.fail(field, fmt::format("expected {} (the only unit this version supports), got {}", expected, u->dump()));
      }
    }
    std::vector<std::string> unknown_keys;
    note_unknown(unknown_keys, doc, "", {"format", "version", "units", "timed_on", "operators", "tensors"});

    const json& operators = f_.array_member(doc, "operators", "", "an array of operators");
    const json& tensors = f_.array_member(doc, "tensors", "", "an array of tensors (src, dst, bytes)");

    if (!ops_streamed_)
      for (std::size_t i = 0; i < operators.size(); ++i) add_operator(operators[i], i);
    if (ops_error_) throw *ops_error_;
    ops_done_ = true;
    // Colocation classes: numbered densely, integers ascending, then strings.
    std::sort(class_ints_.begin(), class_ints_.end());
    class_ints_.erase(std::unique(class_ints_.begin(), class_ints_.end()), class_ints_.end());
    Graph& g = result.graph;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      auto [is_string, v] = raw_class_[i];
      if (is_string)
        ops_[i].colocation_class = static_cast<std::int32_t>(class_ints_.size() + v);
      else if (v >= 0)
        ops_[i].colocation_class = static_cast<std::int32_t>(std::lower_bound(class_ints_.begin(), class_ints_.end(), v) - class_ints_.begin());
      g.add_operator(std::move(ops_[i]));
    }
    std::vector<Operator>().swap(ops_);

    if (!tensors_streamed_)
      for (std::size_t e = 0; e < tensors.size(); ++e) add_tensor(tensors[e], e);
    for (auto& [e, t] : waiting_) add_tensor(t, e);
    if (tensors_error_) throw *tensors_error_;
    for (const Tensor& t : tensors_) g.add_tensor(t.src, t.dst, t.bytes, t.gradient);

    for (auto* list : {&ops_unknown_, &tensors_unknown_})
      for (const std::string& k : *list)
        if (unknown_keys.size() < 5) unknown_keys.push_back(k);
    if (!unknown_keys.empty()) {
      std::string list;
      for (const auto& k : unknown_keys) list += (list.empty() ? "" : ", ") + k;
      result.warnings.push_back(with_file(file_, "unknown field(s) ignored: " + list + (unknown_keys.size() == 5 ? ", ..." : "")));
    }
    by_name_ = {};
    g.finalize(file_);
    return result;
  }

 private:
  template <class F>
  static void capture(std::optional<InputError>& error, F&& f) {
    try {
      f();
    } catch (const InputError& e) {
      error = e;
    }
  }

  // The first five unknown keys of `obj` (the warning lists at most five in all).
  static void note_unknown(std::vector<std::string>& out, const json& obj, const std::string& path,
                           std::initializer_list<std::string_view> known) {
    for (auto it = obj.begin(); it != obj.end() && out.size() < 5; ++it)
      if (std::find(known.begin(), known.end(), it.key()) == known.end()) out.push_back(join(path, it.key()));
  }

  void add_operator(const json& op, std::size_t i) {
    const std::string path = at("operators", i);
    f_.expect_object(op, path, "an object (name, type, compute_s, memory_bytes)");
    note_unknown(ops_unknown_, op, path, {"name", "type", "compute_s", "memory_bytes", "colocation_class", "flops", "algorithm_flops"});
    const std::string name_field = join(path, "name");
    std::string name = f_.string(f_.member(op, "name", path, "a non-empty name (string)"), name_field, "a non-empty name (string)");
    if (name.empty()) f_.fail(name_field, "expected a non-empty name (string)");
    std::string type;
    if (const json* t = f_.optional_member(op, "type")) type = f_.string(*t, join(path, "type"), "an operator type (string)");
    double compute = f_.duration(f_.member(op, "compute_s", path, "a non-negative number (seconds)"), join(path, "compute_s"), "seconds", 1);
    double memory = 0;
    if (const json* m = f_.optional_member(op, "memory_bytes")) memory = f_.size(*m, join(path, "memory_bytes"), "bytes", 1);
    double flops = 0;
    if (const json* v = f_.optional_member(op, "flops")) flops = f_.quantity(*v, join(path, "flops"), "floating-point operations");
    double algorithm_flops = 0;
    if (const json* v = f_.optional_member(op, "algorithm_flops"))
      algorithm_flops = f_.quantity(*v, join(path, "algorithm_flops"), "floating-point operations");
    std::pair<bool, std::int64_t> raw_class{false, -1};  // (is string, value or index)
    if (const json* c = f_.optional_member(op, "colocation_class"); c && !c->is_null()) {
      const std::string field = join(path, "colocation_class");
      if (c->is_string()) {
        std::string label = c->get<std::string>();
        if (label.empty()) f_.fail(field, "expected a non-negative integer or a non-empty string");
        auto [it, inserted] = class_index_.emplace(label, class_names_.size());
        if (inserted) class_names_.push_back(label);
        raw_class = {true, static_cast<std::int64_t>(it->second)};
      } else {
        std::int64_t v = f_.integer(*c, field, "a non-negative integer or a non-empty string");
        if (v < 0) f_.fail(field, fmt::format("expected a non-negative integer or a non-empty string, got {}", v));
        class_ints_.push_back(v);
        raw_class = {false, v};
      }
    }
    auto [it, inserted] = by_name_.emplace(name, static_cast<OpId>(ops_.size()));
    if (!inserted) f_.fail(name_field, fmt::format("duplicate operator name '{}' (first at operators[{}])", name, it->second));
    ops_.push_back({std::move(name), std::move(type), compute, memory});
    ops_.back().flops = flops;
    ops_.back().algorithm_flops = algorithm_flops;
    raw_class_.push_back(raw_class);
  }

  void add_tensor(const json& t, std::size_t e) {
    const std::string path = at("tensors", e);
    f_.expect_object(t, path, "an object (src, dst, bytes)");
    note_unknown(tensors_unknown_, t, path, {"src", "dst", "bytes", "gradient"});
    OpId ends[2];
    const char* keys[2] = {"src", "dst"};
    for (int k = 0; k < 2; ++k) {
      const std::string field = join(path, keys[k]);
      const json& v = f_.member(t, keys[k], path, "an operator name");
      if (!v.is_string()) f_.string(v, field, "an operator name (string)");  // throws
      auto found = by_name_.find(v.get_ref<const std::string&>());
      if (found == by_name_.end())
        f_.fail(field, fmt::format("unknown operator '{}': no such name in operators", v.get_ref<const std::string&>()));
      ends[k] = found->second;
    }
    double bytes = f_.size(f_.member(t, "bytes", path, "a non-negative number (bytes)"), join(path, "bytes"), "bytes", 1);
    bool gradient = false;
    if (const json* grad = f_.optional_member(t, "gradient")) {
      if (!grad->is_boolean()) f_.fail(join(path, "gradient"), fmt::format("expected true or false, got {}", describe(*grad)));
      gradient = grad->get<bool>();
      if (gradient && !(bytes > 0)) f_.fail(join(path, "gradient"), "a parameter gradient must have bytes > 0");
    }
    tensors_.push_back({ends[0], ends[1], bytes, gradient});
  }

  Fields f_;
  const std::string& file_;
  std::optional<std::string> repeated_;  // "operators" or "tensors" given twice
  // Operators, in order, with their raw colocation classes.
  bool ops_streamed_ = false, ops_done_ = false;
  std::optional<InputError> ops_error_;
  std::vector<Operator> ops_;
  std::vector<std::pair<bool, std::int64_t>> raw_class_;  // (is string, value or index in class_names_)
  std::vector<std::int64_t> class_ints_;
  std::vector<std::string> class_names_;
  std::unordered_map<std::string, std::size_t> class_index_;
  std::unordered_map<std::string, OpId> by_name_;
  std::vector<std::string> ops_unknown_;
  // Tensors.
  bool tensors_streamed_ = false;
  std::optional<InputError> tensors_error_;
  std::vector<Tensor> tensors_;
  std::vector<std::pair<std::size_t, json>> waiting_;  // streamed before the operators were complete
  std::vector<std::string> tensors_unknown_;
};

GraphFormat detect_format(const json& doc, const std::string& file) {
  if (!doc.is_object())
    throw InputError(file, "", fmt::format("expected a JSON object describing a graph, got {}", describe(doc)));
  if (doc.contains("format")) return GraphFormat::Placesim;
  if (doc.contains("nodes") && doc.contains("links")) return GraphFormat::QuickP;
  if (auto edges = doc.find("edges"); edges != doc.end() && doc.contains("nodes")) {
    if (doc.contains("maxSizePerFPGA")) return GraphFormat::Msr;
    if (edges->is_array() && !edges->empty() && edges->front().is_object()) {
      if (edges->front().contains("sourceId")) return GraphFormat::Msr;
      if (edges->front().contains("source")) return GraphFormat::QuickP;  // networkx >= 3.4 names links "edges"
    }
  }
  throw InputError(file, "", "cannot tell the graph format: expected a placesim graph (\"format\": \"placesim-graph\"), "
                             "a QuickP node-link graph (\"nodes\" and \"links\") or an msr-fiddle graph "
                             "(\"nodes\" and \"edges\" with sourceId); name the format explicitly");
}

// Integral values are written as integers (readable, and exact below 2^53); others in nlohmann's
// shortest round-trip form.
nlohmann::ordered_json number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0 && !std::signbit(v))
    return static_cast<std::uint64_t>(v);
  return v;
}

}  // namespace

GraphFormat parse_graph_format(std::string_view name, const std::string& file, const std::string& field) {
  if (name == "auto") return GraphFormat::Auto;
  if (name == "quickp") return GraphFormat::QuickP;
  if (name == "msr") return GraphFormat::Msr;
  if (name == "placesim") return GraphFormat::Placesim;
  if (name == "onnx")
    throw InputError(file, field, "onnx: ONNX models are imported, not loaded as a graph file (graph formats: auto, quickp, msr, "
                                  "placesim): `placesim graph import MODEL.onnx -o model.json`, or a scenario's "
                                  "`graph: {onnx: MODEL.onnx}`");
  throw InputError(file, field, fmt::format("unknown graph format '{}': expected auto, quickp, msr or placesim", name));
}

std::string_view graph_format_name(GraphFormat format) {
  switch (format) {
    case GraphFormat::Auto: return "auto";
    case GraphFormat::QuickP: return "quickp";
    case GraphFormat::Msr: return "msr";
    case GraphFormat::Placesim: return "placesim";
  }
  return "?";
}

LoadResult parse_graph(std::string_view text, const std::string& source, GraphFormat format) {
  // The native format's operators and tensors are read as they are parsed (PlacesimReader); the
  // other formats have no top-level "operators" or "tensors" and never see the reader.
  PlacesimReader reader(source);
  const bool native = format == GraphFormat::Auto || format == GraphFormat::Placesim;
  json doc = parse_json(text, source, native ? &reader : nullptr);
  if (format == GraphFormat::Auto) format = detect_format(doc, source);
  switch (format) {
    case GraphFormat::QuickP: return load_quickp_json(doc, source);
    case GraphFormat::Msr: return load_msr_json(doc, source);
    default: return reader.finish(doc);
  }
}

void refuse_onnx_model(const std::string& path, const std::string& field) {
  // Asked for by --format onnx, the file itself may be anything: say what the flag cannot do.
  throw InputError(path, field,
                   fmt::format("{0}: ONNX models are read with `placesim graph import {1} -o model.json` (then give "
                               "model.json), or with a scenario's `graph: {{onnx: {1}}}`",
                               field == "--format" ? "onnx is not a graph file format" : "an ONNX model, not a graph file",
                               path));
}

LoadResult load_graph(const std::string& path, GraphFormat format) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  if (extension == ".onnx") refuse_onnx_model(path);
  // ONNX's ModelProto begins with ir_version (field 1, a varint: byte 0x08), which no JSON text
  // can begin with; looked at before reading a model of hundreds of MB whole.
  if (std::ifstream head(path, std::ios::binary); head && head.peek() == '\x08') refuse_onnx_model(path);
  return parse_graph(read_file(path), path, format);
}

LoadResult load_graph(const std::string& path, std::string_view format_name) {
  return load_graph(path, parse_graph_format(format_name));
}

std::string to_placesim_json(const Graph& g, const std::string& timed_on_json) {
  using ojson = nlohmann::ordered_json;
  std::string out = fmt::format("{{\n  \"format\": \"{}\",\n  \"version\": {},\n", kFormatTag, kFormatVersion);
  out += "  \"units\": {\"time\": \"s\", \"memory\": \"B\", \"tensor\": \"B\"},\n";
  if (!timed_on_json.empty()) out += "  \"timed_on\": " + timed_on_json + ",\n";
  out += "  \"operators\": [";
  for (std::size_t i = 0; i < g.num_operators(); ++i) {
    const Operator& o = g.op(static_cast<OpId>(i));
    ojson j;
    j["name"] = o.name;
    j["type"] = o.type;
    j["compute_s"] = number(o.compute_s);
    j["memory_bytes"] = number(o.memory_bytes);
    if (o.colocation_class >= 0) j["colocation_class"] = o.colocation_class;
    if (o.flops > 0) j["flops"] = number(o.flops);  // only where known, so other graphs' files stay as they were
    if (o.algorithm_flops > 0) j["algorithm_flops"] = number(o.algorithm_flops);
    out += (i ? ",\n    " : "\n    ") + j.dump();
  }
  out += g.num_operators() ? "\n  ],\n" : "],\n";
  out += "  \"tensors\": [";
  for (std::size_t e = 0; e < g.num_tensors(); ++e) {
    const Tensor& t = g.tensor(static_cast<EdgeId>(e));
    ojson j;
    j["src"] = g.op(t.src).name;
    j["dst"] = g.op(t.dst).name;
    j["bytes"] = number(t.bytes);
    if (t.gradient) j["gradient"] = true;
    out += (e ? ",\n    " : "\n    ") + j.dump();
  }
  out += g.num_tensors() ? "\n  ]\n}\n" : "]\n}\n";
  return out;
}

void save_placesim_json(const Graph& g, const std::string& path, const std::string& timed_on_json) {
  std::string text;
  try {
    text = to_placesim_json(g, timed_on_json);
  } catch (const nlohmann::json::exception& e) {
    // Only invalid UTF-8 in an operator name or type gets here.
    throw InputError(path, "operators", std::string("cannot write the graph: ") + e.what());
  }
  write_file_atomically(path, text);
}

}  // namespace placesim
