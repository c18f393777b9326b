#include "sim/chakra/chakra_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <fstream>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

#include "sim/chakra/chakra_et.pb.h"
#include "sim/errors.h"

namespace placesim {

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

namespace {

// Chakra's schema version these traces follow (its GlobalMetadata.version).
constexpr const char* kChakraSchemaVersion = "0.0.4";
constexpr const char* kProducer = "placesim";

pb::AttributeProto& add_attr(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const std::string& name) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(name);
  return *a;
}

std::uint64_t micros(double seconds) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, seconds) * 1e6)); }

// A rank's nodes, in the order the rank ran them.
struct RankTrace {
  std::vector<pb::Node> nodes;
  std::uint64_t next_id = 0;
  std::int64_t last_compute = -1;  // the node of the operator the GPU ran last
  pb::Node& add(pb::NodeType type, std::string name, double start_s) {
    pb::Node& n = nodes.emplace_back();
    n.set_id(next_id++);
    n.set_name(std::move(name));
    n.set_type(type);
    n.set_start_time_micros(micros(start_s));
    return n;
  }
};

void add_comm_attrs(pb::Node& n, int src, int dst, std::int64_t tensor, double bytes) {
  auto* attrs = n.mutable_attr();
  add_attr(attrs, "is_cpu_op").set_bool_val(false);
  add_attr(attrs, "comm_src").set_int32_val(src);
  add_attr(attrs, "comm_dst").set_int32_val(dst);
  add_attr(attrs, "comm_tag").set_int32_val(static_cast<std::int32_t>(tensor));
  add_attr(attrs, "comm_size").set_int64_val(std::llround(bytes));
  add_attr(attrs, "placesim.tensor").set_int64_val(tensor);
  add_attr(attrs, "placesim.bytes").set_double_val(bytes);
}

}  // namespace

std::vector<std::string> write_chakra_traces(const std::string& dir, const std::string& prefix, const Graph& graph,
                                             std::span<const DeviceId> placement, int ranks, std::span<const double> start,
                                             const ChakraRun& run) {
  if (placement.size() != graph.num_operators() || start.size() != graph.num_operators())
    throw std::invalid_argument("write_chakra_traces: placement and start must have one entry per operator");
  // The order the GPUs ran the operators: by start time, ties in topological order (an operator
  // of zero time starts when its consumer does).
  std::vector<std::size_t> topo_position(graph.num_operators());
  for (std::size_t i = 0; i < graph.topological_order().size(); ++i) topo_position[graph.topological_order()[i]] = i;
  std::vector<OpId> order(graph.topological_order().begin(), graph.topological_order().end());
  std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) {
    return start[a] != start[b] ? start[a] < start[b] : topo_position[a] < topo_position[b];
  });

  std::vector<RankTrace> trace(static_cast<std::size_t>(ranks));
  std::vector<std::uint64_t> compute_node(graph.num_operators());
  for (OpId u : order) {
    const Operator& op = graph.op(u);
    const int r = placement[u];
    RankTrace& rank = trace[r];
    std::vector<std::uint64_t> deps;
    std::vector<std::int64_t> dep_tensors;
    for (EdgeId e : graph.in_edges(u)) {
      const Tensor& t = graph.tensor(e);
      const int from = placement[t.src];
      if (from == r) {
        deps.push_back(compute_node[t.src]);
      } else {
        pb::Node& recv = rank.add(pb::COMM_RECV_NODE, fmt::format("recv {} -> {}", graph.op(t.src).name, op.name),
                                  start[t.src] + graph.op(t.src).compute_s);
        add_comm_attrs(recv, from, r, e, t.bytes);
        deps.push_back(recv.id());
      }
      dep_tensors.push_back(e);
    }
    pb::Node& n = rank.add(pb::COMP_NODE, op.name, start[u]);
    n.set_duration_micros(micros(op.compute_s));
    for (auto d : deps) n.add_data_deps(d);
    // Communication steps of collectives run beside the GPU's kernels, in no GPU order.
    if (!op.communication) {
      if (rank.last_compute >= 0) n.add_ctrl_deps(static_cast<std::uint64_t>(rank.last_compute));
      rank.last_compute = static_cast<std::int64_t>(n.id());
    }
    auto* attrs = n.mutable_attr();
    add_attr(attrs, "is_cpu_op").set_bool_val(false);
    add_attr(attrs, "placesim.op").set_int64_val(u);
    add_attr(attrs, "placesim.type").set_string_val(op.type);
    add_attr(attrs, "placesim.compute_s").set_double_val(op.compute_s);
    add_attr(attrs, "placesim.memory_bytes").set_double_val(op.memory_bytes);
    add_attr(attrs, "placesim.colocation_class").set_int64_val(op.colocation_class);
    add_attr(attrs, "placesim.communication").set_bool_val(op.communication);
    auto* tensors = add_attr(attrs, "placesim.dep_tensors").mutable_int64_list();
    for (auto e : dep_tensors) tensors->add_values(e);
    auto* bytes = add_attr(attrs, "placesim.dep_bytes").mutable_double_list();
    for (auto e : dep_tensors) bytes->add_values(graph.tensor(e).bytes);
    compute_node[u] = n.id();
    for (EdgeId e : graph.out_edges(u)) {
      const Tensor& t = graph.tensor(e);
      const int to = placement[t.dst];
      if (to == r) continue;
      pb::Node& send = rank.add(pb::COMM_SEND_NODE, fmt::format("send {} -> {}", op.name, graph.op(t.dst).name),
                                start[u] + op.compute_s);
      send.add_data_deps(compute_node[u]);
      add_comm_attrs(send, r, to, e, t.bytes);
    }
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw OutputError(dir, "cannot create the directory: " + ec.message());
  std::vector<std::string> written;
  for (int r = 0; r < ranks; ++r) {
    const std::string path = (fs::path(dir) / fmt::format("{}.{}.et", prefix, r)).string();
    const std::string partial = path + ".partial";
    {
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      if (!out) throw OutputError(partial, "cannot write the Chakra trace");
      pb::GlobalMetadata meta;
      meta.set_version(kChakraSchemaVersion);
      auto* attrs = meta.mutable_attr();
      add_attr(attrs, "producer").set_string_val(kProducer);
      add_attr(attrs, "placesim.rank").set_int64_val(r);
      add_attr(attrs, "placesim.ranks").set_int64_val(ranks);
      add_attr(attrs, "placesim.operators").set_int64_val(static_cast<std::int64_t>(graph.num_operators()));
      add_attr(attrs, "placesim.tensors").set_int64_val(static_cast<std::int64_t>(graph.num_tensors()));
      add_attr(attrs, "placesim.source").set_string_val(run.source);
      add_attr(attrs, "placesim.engine").set_string_val(run.engine);
      add_attr(attrs, "placesim.latency_s").set_double_val(run.latency_s);
      bool ok = google::protobuf::util::SerializeDelimitedToOstream(meta, &out);
      for (const pb::Node& n : trace[r].nodes) ok = ok && google::protobuf::util::SerializeDelimitedToOstream(n, &out);
      out.flush();
      if (!ok || !out) throw OutputError(partial, "cannot write the Chakra trace (disk full?)");
    }
    fs::rename(partial, path, ec);
    if (ec) throw OutputError(path, "cannot write the Chakra trace: " + ec.message());
    written.push_back(path);
  }
  return written;
}

namespace {

struct RankFile {
  std::string path;
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

const pb::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, std::string_view name) {
  for (const auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

RankFile read_rank(const std::string& path) {
  RankFile f;
  f.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the Chakra trace");
  google::protobuf::io::IstreamInputStream stream(&in);
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f.meta, &stream, &clean_eof))
    throw InputError(path, "GlobalMetadata",
                     clean_eof ? "the file is empty" : "not a Chakra execution trace (no length-prefixed GlobalMetadata first)");
  for (;;) {
    pb::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &clean_eof)) {
      if (clean_eof) break;
      throw InputError(path, fmt::format("node {}", f.nodes.size()), "truncated or not a Chakra Node message");
    }
    f.nodes.push_back(std::move(n));
  }
  return f;
}

// Exactly what placesim wrote: operators and tensors by their placesim.op and placesim.tensor.
ChakraTraces read_exact(std::vector<RankFile>& files) {
  ChakraTraces out;
  out.ranks = static_cast<int>(files.size());
  out.exact = true;
  const auto& meta = files.front().meta.attr();
  const std::int64_t num_ops = find_attr(meta, "placesim.operators")->int64_val();
  const std::int64_t num_tensors = find_attr(meta, "placesim.tensors")->int64_val();
  ChakraRun run;
  run.source = find_attr(meta, "placesim.source")->string_val();
  run.engine = find_attr(meta, "placesim.engine")->string_val();
  run.latency_s = find_attr(meta, "placesim.latency_s")->double_val();
  out.run = run;
  if (num_ops < 0 || num_tensors < 0 || num_ops > (1LL << 31) || num_tensors > (1LL << 31))
    throw InputError(files.front().path, "GlobalMetadata.placesim.operators", "out of range");
  std::vector<Operator> ops(static_cast<std::size_t>(num_ops));
  std::vector<bool> seen(ops.size(), false);
  out.placement.assign(ops.size(), 0);
  struct Edge {
    OpId src = -1, dst = -1;
    double bytes = 0;
  };
  std::vector<Edge> edges(static_cast<std::size_t>(num_tensors));
  for (int r = 0; r < out.ranks; ++r) {
    const RankFile& f = files[r];
    std::unordered_map<std::uint64_t, const pb::Node*> by_id;
    for (const auto& n : f.nodes) by_id[n.id()] = &n;
    std::unordered_map<std::uint64_t, OpId> op_of_node;
    for (std::size_t k = 0; k < f.nodes.size(); ++k) {
      const pb::Node& n = f.nodes[k];
      const std::string where = fmt::format("node {} ('{}')", n.id(), n.name());
      auto need = [&](std::string_view name) -> const pb::AttributeProto& {
        const pb::AttributeProto* a = find_attr(n.attr(), name);
        if (!a) throw InputError(f.path, where, fmt::format("has no attribute '{}', which placesim's traces have", name));
        return *a;
      };
      if (n.type() == pb::COMM_SEND_NODE || n.type() == pb::COMM_RECV_NODE) {
        const std::int64_t e = need("placesim.tensor").int64_val();
        if (e < 0 || e >= num_tensors) throw InputError(f.path, where, fmt::format("tensor {} out of range", e));
        edges[e].bytes = need("placesim.bytes").double_val();
        continue;
      }
      if (n.type() != pb::COMP_NODE) continue;
      const std::int64_t u = need("placesim.op").int64_val();
      if (u < 0 || u >= num_ops || seen[u]) throw InputError(f.path, where, fmt::format("operator {} out of range or repeated", u));
      seen[u] = true;
      Operator& op = ops[u];
      op.name = n.name();
      op.type = need("placesim.type").string_val();
      op.compute_s = need("placesim.compute_s").double_val();
      op.memory_bytes = need("placesim.memory_bytes").double_val();
      op.colocation_class = static_cast<std::int32_t>(need("placesim.colocation_class").int64_val());
      op.communication = need("placesim.communication").bool_val();
      out.placement[u] = r;
      op_of_node[n.id()] = static_cast<OpId>(u);
      const auto& dep_tensors = need("placesim.dep_tensors").int64_list().values();
      const auto& dep_bytes = need("placesim.dep_bytes").double_list().values();
      if (dep_tensors.size() != n.data_deps_size() || dep_bytes.size() != n.data_deps_size())
        throw InputError(f.path, where, "placesim.dep_tensors or placesim.dep_bytes does not match data_deps");
      for (int d = 0; d < n.data_deps_size(); ++d) {
        const std::int64_t e = dep_tensors[d];
        if (e < 0 || e >= num_tensors) throw InputError(f.path, where, fmt::format("tensor {} out of range", e));
        edges[e].dst = static_cast<OpId>(u);
        edges[e].bytes = dep_bytes[d];
        auto dep = by_id.find(n.data_deps(d));
        if (dep == by_id.end()) throw InputError(f.path, where, fmt::format("depends on node {}, which the file does not have", n.data_deps(d)));
        if (dep->second->type() == pb::COMP_NODE) {
          const pb::AttributeProto* src = find_attr(dep->second->attr(), "placesim.op");
          if (!src) throw InputError(f.path, where, "its producer has no placesim.op");
          edges[e].src = static_cast<OpId>(src->int64_val());
        }
      }
    }
    // Sends name their producer by data dependency.
    for (const auto& n : f.nodes) {
      if (n.type() != pb::COMM_SEND_NODE || n.data_deps_size() != 1) continue;
      const std::int64_t e = find_attr(n.attr(), "placesim.tensor")->int64_val();
      auto it = op_of_node.find(n.data_deps(0));
      if (it == op_of_node.end())
        throw InputError(f.path, fmt::format("node {} ('{}')", n.id(), n.name()), "its producer is not an operator of this rank");
      edges[e].src = it->second;
    }
  }
  for (std::size_t u = 0; u < ops.size(); ++u)
    if (!seen[u]) throw InputError(files.front().path, "GlobalMetadata", fmt::format("operator {} is on no rank", u));
  for (auto& op : ops) out.graph.add_operator(std::move(op));
  for (std::size_t e = 0; e < edges.size(); ++e) {
    if (edges[e].src < 0 || edges[e].dst < 0)
      throw InputError(files.front().path, "GlobalMetadata", fmt::format("tensor {} has no producer or no consumer in the traces", e));
    out.graph.add_tensor(edges[e].src, edges[e].dst, edges[e].bytes);
  }
  return out;
}

// Another tool's traces: compute nodes as operators, send/receive pairs as tensors.
ChakraTraces read_foreign(std::vector<RankFile>& files) {
  ChakraTraces out;
  out.ranks = static_cast<int>(files.size());
  struct Key {
    int rank;
    std::uint64_t id;
    bool operator<(const Key& o) const { return rank != o.rank ? rank < o.rank : id < o.id; }
  };
  std::map<Key, const pb::Node*> nodes;
  std::map<Key, OpId> op_of;
  std::map<std::string, int> name_uses;
  // Sends by (src, dst, tag), in file order, to pair with receives in the same order.
  std::map<std::tuple<int, int, int>, std::vector<Key>> sends;
  std::map<std::tuple<int, int, int>, std::size_t> sends_taken;
  std::size_t passed_through = 0;
  auto attr_int = [](const pb::Node& n, std::string_view name) -> std::int64_t {
    const pb::AttributeProto* a = find_attr(n.attr(), name);
    if (!a) return -1;
    switch (a->value_case()) {
      case pb::AttributeProto::kInt32Val: return a->int32_val();
      case pb::AttributeProto::kInt64Val: return a->int64_val();
      case pb::AttributeProto::kUint64Val: return static_cast<std::int64_t>(a->uint64_val());
      default: return -1;
    }
  };
  for (int r = 0; r < out.ranks; ++r)
    for (const auto& n : files[r].nodes) {
      nodes[{r, n.id()}] = &n;
      if (n.type() == pb::COMP_NODE) {
        Operator op;
        op.name = n.name().empty() ? fmt::format("node{}", n.id()) : n.name();
        if (name_uses[op.name]++ > 0) op.name = fmt::format("rank{}/{}/{}", r, op.name, n.id());
        op.type = "chakra";
        op.compute_s = static_cast<double>(n.duration_micros()) * 1e-6;
        op_of[{r, n.id()}] = out.graph.add_operator(std::move(op));
        out.placement.push_back(r);
      } else if (n.type() == pb::COMM_SEND_NODE) {
        sends[{static_cast<int>(attr_int(n, "comm_src")), static_cast<int>(attr_int(n, "comm_dst")),
               static_cast<int>(attr_int(n, "comm_tag"))}]
            .push_back({r, n.id()});
      } else if (n.type() != pb::COMM_RECV_NODE) {
        ++passed_through;
      }
    }
  // The operators a node stands for: itself, or (through sends, receives, collectives and the
  // rest) the operators behind it, each with the bytes of the transfer on the way.
  std::map<Key, Key> matched_send;
  for (int r = 0; r < out.ranks; ++r)
    for (const auto& n : files[r].nodes) {
      if (n.type() != pb::COMM_RECV_NODE) continue;
      const std::tuple<int, int, int> key{static_cast<int>(attr_int(n, "comm_src")), static_cast<int>(attr_int(n, "comm_dst")),
                                          static_cast<int>(attr_int(n, "comm_tag"))};
      auto& list = sends[key];
      std::size_t& taken = sends_taken[key];
      if (taken >= list.size())
        throw InputError(files[r].path, fmt::format("node {} ('{}')", n.id(), n.name()),
                         fmt::format("a receive from rank {} (tag {}) with no matching send", std::get<0>(key), std::get<2>(key)));
      matched_send[{r, n.id()}] = list[taken++];
    }
  // Each non-operator node's producers, worked out once (chains of collectives with several
  // dependencies each would otherwise be walked once per path); a cycle is an error.
  using Producers = std::vector<std::pair<OpId, double>>;
  std::map<Key, Producers> behind;
  std::set<Key> visiting;
  std::function<const Producers&(const Key&)> producers_of;
  auto add_from = [&](const Key& k, double bytes, Producers& found) {
    if (auto op = op_of.find(k); op != op_of.end()) {
      found.emplace_back(op->second, bytes);
      return;
    }
    for (const auto& [p, b] : producers_of(k)) found.emplace_back(p, bytes > 0 ? bytes : b);
  };
  // One entry per producer: the largest transfer on the way (one tensor per producer).
  auto largest_per_producer = [](const Producers& found) {
    std::map<OpId, double> by_producer;
    for (const auto& [p, bytes] : found) by_producer[p] = std::max(by_producer[p], bytes);
    return Producers(by_producer.begin(), by_producer.end());
  };
  // The operators behind a node's own data and control dependencies.
  auto dependencies_of = [&](const Key& k, const pb::Node& n) {
    Producers found;
    for (auto d : n.data_deps()) add_from({k.rank, d}, 0.0, found);
    for (auto d : n.ctrl_deps()) add_from({k.rank, d}, 0.0, found);
    return largest_per_producer(found);
  };
  producers_of = [&](const Key& k) -> const Producers& {
    if (auto done = behind.find(k); done != behind.end()) return done->second;
    auto it = nodes.find(k);
    if (it == nodes.end())
      throw InputError(files[k.rank].path, fmt::format("node {}", k.id), "a dependency on a node the file does not have");
    if (!visiting.insert(k).second)
      throw InputError(files[k.rank].path, fmt::format("node {} ('{}')", k.id, it->second->name()), "is on a dependency cycle");
    const pb::Node& n = *it->second;
    Producers found;
    if (n.type() == pb::COMM_RECV_NODE) {
      const std::int64_t size = attr_int(n, "comm_size");
      add_from(matched_send.at(k), size > 0 ? static_cast<double>(size) : 0.0, found);
      found = largest_per_producer(found);
    } else {
      found = dependencies_of(k, n);
    }
    visiting.erase(k);
    return behind[k] = std::move(found);
  };
  for (const auto& [key, op] : op_of)
    for (const auto& [p, bytes] : dependencies_of(key, *nodes.at(key))) out.graph.add_tensor(p, op, bytes);
  if (passed_through > 0)
    out.warnings.push_back(fmt::format("{}: {} node{} neither compute nor send/receive (collectives, memory, metadata): "
                                       "not operators; the dependencies through them are kept",
                                       files.front().path, passed_through, passed_through == 1 ? "" : "s"));
  return out;
}

}  // namespace

ChakraTraces read_chakra_traces(const std::string& dir, const std::string& prefix) {
  if (!fs::is_directory(dir)) throw InputError(dir, "", "expected a directory of Chakra traces (<prefix>.<rank>.et)");
  static const std::regex kName(R"((.*)\.(\d+)\.et)");
  std::map<std::string, std::map<int, std::string>> by_prefix;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName) || m[2].length() > 7) continue;
    if (!prefix.empty() && m[1] != prefix) continue;
    by_prefix[m[1]][std::stoi(m[2])] = entry.path().string();
  }
  if (by_prefix.empty())
    throw InputError(dir, "", prefix.empty() ? "holds no Chakra trace (<prefix>.<rank>.et)"
                                             : fmt::format("holds no Chakra trace {}.<rank>.et", prefix));
  if (by_prefix.size() > 1) {
    std::string names;
    for (const auto& [p, _] : by_prefix) names += (names.empty() ? "" : ", ") + p;
    throw InputError(dir, "", fmt::format("holds the traces of several runs ({}); give the prefix", names));
  }
  const auto& ranks = by_prefix.begin()->second;
  std::vector<RankFile> files;
  for (const auto& [rank, path] : ranks) {
    if (rank != static_cast<int>(files.size()))
      throw InputError(dir, "", fmt::format("has no trace of rank {} ({}.{}.et)", files.size(), by_prefix.begin()->first, files.size()));
    files.push_back(read_rank(path));
  }
  bool placesim = true;
  for (const auto& f : files) {
    const pb::AttributeProto* producer = find_attr(f.meta.attr(), "producer");
    placesim = placesim && producer && producer->string_val() == kProducer && find_attr(f.meta.attr(), "placesim.operators") &&
               find_attr(f.meta.attr(), "placesim.tensors") && find_attr(f.meta.attr(), "placesim.ranks") &&
               find_attr(f.meta.attr(), "placesim.source") && find_attr(f.meta.attr(), "placesim.engine") &&
               find_attr(f.meta.attr(), "placesim.latency_s");
  }
  if (placesim) {
    const std::int64_t written = find_attr(files.front().meta.attr(), "placesim.ranks")->int64_val();
    if (written != static_cast<std::int64_t>(files.size()))
      throw InputError(dir, "", fmt::format("placesim wrote {} ranks, the directory holds {}", written, files.size()));
  }
  ChakraTraces out = placesim ? read_exact(files) : read_foreign(files);
  out.graph.finalize(dir);
  return out;
}

}  // namespace placesim
