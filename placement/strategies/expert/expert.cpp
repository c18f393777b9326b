#include "placement/strategies/expert/expert.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <string_view>
#include <unordered_map>
#include <unordered_set>


namespace placesim {

namespace {

// The first `count` '/'-separated components of `name` (count >= 1), without a trailing '/'.
std::string_view first_components(std::string_view name, int count) {
  std::size_t pos = 0;
  for (int c = 1;; ++c) {
    const std::size_t slash = name.find('/', pos);
    if (slash == std::string_view::npos) return name;
    if (c == count) return name.substr(0, slash);
    pos = slash + 1;
  }
}

struct Layers {
  std::vector<int> layer_of;       // per operator
  std::vector<std::string> names;  // per layer, ordered by topological position of the first operator
  int unscoped = 0, own_layer = 0;
};

constexpr std::string_view kGradientScope = "gradient_tape/";

Layers find_layers(const Graph& graph, int depth, bool backward_with_forward) {
  const std::size_t n = graph.num_operators();
  auto layer_name = [&](OpId i) {
    std::string_view name = graph.op(i).name;
    if (backward_with_forward && name.starts_with(kGradientScope)) name.remove_prefix(kGradientScope.size());
    return name;
  };
  // Scope of each operator, cut to `depth` components ("" when the name has no '/').
  std::vector<std::string_view> scope(n);
  std::unordered_set<std::string_view> scopes;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view name = layer_name(static_cast<OpId>(i));
    const std::size_t slash = name.rfind('/');
    if (slash == std::string_view::npos) continue;
    scope[i] = first_components(name.substr(0, slash), depth);
    scopes.insert(scope[i]);
  }
  std::vector<std::string_view> key(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string_view own = first_components(layer_name(static_cast<OpId>(i)), depth);
    key[i] = scopes.count(own) ? own : scope[i];
  }

  Layers out;
  out.layer_of.assign(n, -1);
  const auto topo = graph.topological_order();
  // Layers numbered by first appearance in topological order, which is also their final order.
  std::unordered_map<std::string_view, int> layer_id;
  std::vector<char> unscoped(n, 0);
  for (OpId op : topo) {
    if (key[op].empty()) {
      unscoped[op] = 1;
      continue;
    }
    auto [it, fresh] = layer_id.emplace(key[op], static_cast<int>(out.names.size()));
    if (fresh) out.names.emplace_back(key[op]);
    out.layer_of[op] = it->second;
  }
  for (OpId op : topo) {
    if (!unscoped[op]) continue;
    ++out.unscoped;
    for (EdgeId e : graph.in_edges(op))
      if (const int l = out.layer_of[graph.tensor(e).src]; l >= 0) {
        out.layer_of[op] = l;
        break;
      }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    if (out.layer_of[*it] >= 0) continue;
    for (EdgeId e : graph.out_edges(*it))
      if (const int l = out.layer_of[graph.tensor(e).dst]; l >= 0) {
        out.layer_of[*it] = l;
        break;
      }
  }
  // Layers of their own for the rest: renumber everything by first topological appearance.
  std::vector<int> renumber(out.names.size(), -1);
  std::vector<std::string> names;
  for (OpId op : topo) {
    int& l = out.layer_of[op];
    if (l < 0) {
      ++out.own_layer;
      l = static_cast<int>(renumber.size());
      renumber.push_back(-1);
      out.names.push_back(graph.op(op).name);
    }
    if (renumber[l] < 0) {
      renumber[l] = static_cast<int>(names.size());
      names.push_back(out.names[l]);
    }
    l = renumber[l];
  }
  out.names = std::move(names);
  return out;
}

// Cuts the sequence into exactly `parts` (1 <= parts <= weights.size()) non-empty contiguous
// chunks whose largest sum is minimal; returns the chunk of each element.
std::vector<int> contiguous_chunks(std::span<const double> weights, int parts) {
  const auto pack = [&](double cap) {
    std::vector<std::size_t> starts = {0};
    double sum = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (i > 0 && sum + weights[i] > cap) {
        starts.push_back(i);
        sum = 0;
      }
      sum += weights[i];
    }
    return starts;
  };
  double lo = *std::max_element(weights.begin(), weights.end());
  double hi = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (static_cast<int>(pack(lo).size()) <= parts) hi = lo;
  for (int iter = 0; iter < 100 && hi - lo > 1e-12 * hi; ++iter) {
    const double mid = 0.5 * (lo + hi);
    (static_cast<int>(pack(mid).size()) <= parts ? hi : lo) = mid;
  }
  std::vector<std::size_t> starts = pack(hi);
  // Fewer chunks than parts: split the heaviest splittable chunk where its halves are most even.
  while (static_cast<int>(starts.size()) < parts) {
    int best = -1;
    double best_sum = -1;
    for (std::size_t c = 0; c < starts.size(); ++c) {
      const std::size_t end = c + 1 < starts.size() ? starts[c + 1] : weights.size();
      if (end - starts[c] < 2) continue;
      const double s = std::accumulate(weights.begin() + starts[c], weights.begin() + end, 0.0);
      if (s > best_sum) {
        best_sum = s;
        best = static_cast<int>(c);
      }
    }
    const std::size_t begin = starts[best];
    const std::size_t end = best + 1 < static_cast<int>(starts.size()) ? starts[best + 1] : weights.size();
    std::size_t cut = begin + 1;
    double left = 0, best_max = -1;
    for (std::size_t split = begin + 1; split < end; ++split) {
      left += weights[split - 1];
      const double m = std::max(left, best_sum - left);
      // Ties go to the split nearest the middle, so all-zero chunks still halve.
      const auto off_middle = [&](std::size_t s) { return std::max(s - begin, end - s); };
      if (best_max < 0 || m < best_max || (m == best_max && off_middle(split) < off_middle(cut))) {
        best_max = m;
        cut = split;
      }
    }
    starts.insert(starts.begin() + best + 1, cut);
  }
  std::vector<int> chunk(weights.size());
  for (std::size_t c = 0; c < starts.size(); ++c) {
    const std::size_t end = c + 1 < starts.size() ? starts[c + 1] : weights.size();
    for (std::size_t i = starts[c]; i < end; ++i) chunk[i] = static_cast<int>(c);
  }
  return chunk;
}

std::vector<DeviceId> layers_mode(const Graph& graph, const Layers& layers, int gpus) {
  const std::size_t L = layers.names.size();
  std::vector<double> compute(L, 0);
  for (std::size_t i = 0; i < graph.num_operators(); ++i)
    compute[layers.layer_of[i]] += graph.op(static_cast<OpId>(i)).compute_s;
  const std::vector<int> chunk = contiguous_chunks(compute, std::min<int>(gpus, static_cast<int>(L)));
  return {chunk.begin(), chunk.end()};
}

std::vector<DeviceId> branches_mode(const Graph& graph, const Layers& layers, int gpus) {
  const int L = static_cast<int>(layers.names.size());
  // Layers on a cycle of the layer graph are merged into one node.
  boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS> layer_graph(L);
  for (const Tensor& t : graph.tensors()) {
    const int a = layers.layer_of[t.src], b = layers.layer_of[t.dst];
    if (a != b) boost::add_edge(a, b, layer_graph);
  }
  std::vector<int> comp(L);
  const int nodes = static_cast<int>(boost::strong_components(
      layer_graph, boost::make_iterator_property_map(comp.begin(), boost::get(boost::vertex_index, layer_graph))));
  // Node order key: its first layer (layers are already in topological order of first operator).
  std::vector<int> first_layer(nodes, L);
  for (int l = 0; l < L; ++l) first_layer[comp[l]] = std::min(first_layer[comp[l]], l);

  std::map<std::pair<int, int>, double> edge_bytes;  // (from, to) node -> bytes
  for (const Tensor& t : graph.tensors()) {
    const int a = comp[layers.layer_of[t.src]], b = comp[layers.layer_of[t.dst]];
    if (a != b) edge_bytes[{a, b}] += t.bytes;
  }
  std::vector<std::vector<std::pair<int, double>>> preds(nodes);
  std::vector<std::vector<int>> succs(nodes);
  for (const auto& [e, bytes] : edge_bytes) {
    preds[e.second].emplace_back(e.first, bytes);
    succs[e.first].push_back(e.second);
  }
  // Kahn's order, ties by first layer; levels = longest path from a source.
  std::vector<int> indegree(nodes), level(nodes, 0), order;
  for (int v = 0; v < nodes; ++v) indegree[v] = static_cast<int>(preds[v].size());
  using Item = std::pair<int, int>;  // (first layer, node)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (int v = 0; v < nodes; ++v)
    if (indegree[v] == 0) ready.emplace(first_layer[v], v);
  while (!ready.empty()) {
    const int v = ready.top().second;
    ready.pop();
    order.push_back(v);
    for (int s : succs[v]) {
      level[s] = std::max(level[s], level[v] + 1);
      if (--indegree[s] == 0) ready.emplace(first_layer[s], s);
    }
  }
  std::vector<int> per_level(nodes + 1, 0);
  for (int v = 0; v < nodes; ++v) ++per_level[level[v]];

  std::vector<DeviceId> node_gpu(nodes, 0);
  DeviceId next = 0;
  for (int v : order) {
    const auto& p = preds[v];
    if (p.size() == 1 && succs[p[0].first].size() == 1) {
      node_gpu[v] = node_gpu[p[0].first];  // the branch goes on
    } else if (!p.empty() && per_level[level[v]] == 1) {
      // A trunk or a join: stay with the heaviest input (the first on ties).
      const auto heaviest = std::max_element(p.begin(), p.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      });
      node_gpu[v] = node_gpu[heaviest->first];
    } else {
      node_gpu[v] = next;  // a new branch
      next = (next + 1) % gpus;
    }
  }
  std::vector<DeviceId> layer_gpu(L);
  for (int l = 0; l < L; ++l) layer_gpu[l] = node_gpu[comp[l]];
  return layer_gpu;
}

}  // namespace

PlacementResult Expert::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  const int gpus = cluster.num_devices();
  PlacementResult r;
  r.placement.assign(graph.num_operators(), 0);
  if (graph.num_operators() == 0) return r;
  const Layers layers = find_layers(graph, config_.prefix_depth, config_.backward_with_forward);
  const std::vector<DeviceId> layer_gpu = config_.mode == ExpertConfig::Mode::Layers
                                              ? layers_mode(graph, layers, gpus)
                                              : branches_mode(graph, layers, gpus);
  std::vector<DeviceId> class_gpu(graph.num_colocation_classes(), -1);
  std::vector<double> gpu_compute(gpus, 0);
  for (OpId op : graph.topological_order()) {
    const Operator& o = graph.op(op);
    DeviceId d = layer_gpu[layers.layer_of[op]];
    if (o.colocation_class >= 0) {
      if (class_gpu[o.colocation_class] < 0) class_gpu[o.colocation_class] = d;
      d = class_gpu[o.colocation_class];
    }
    r.placement[op] = d;
    gpu_compute[d] += o.compute_s;
  }
  std::vector<std::string> first_layer(gpus);
  std::vector<char> seen(gpus, 0);
  for (std::size_t l = 0; l < layers.names.size(); ++l)
    if (!seen[layer_gpu[l]]) {
      seen[layer_gpu[l]] = 1;
      first_layer[layer_gpu[l]] = layers.names[l];
    }
  r.details["mode"] = std::string(enum_name<ExpertConfig::Mode>(kExpertModeNames, config_.mode));
  r.details["layers"] = layers.names.size();
  r.details["unscoped_operators"] = layers.unscoped;
  r.details["own_layer_operators"] = layers.own_layer;
  r.details["gpu_compute_s"] = gpu_compute;
  r.details["first_layer_per_gpu"] = first_layer;
  return r;
}

OptionSchema<ExpertConfig> expert_schema() {
  OptionSchema<ExpertConfig> s;
  s.choice<ExpertConfig::Mode>("mode", &ExpertConfig::mode, kExpertModeNames,
                               "layers = contiguous chunks of layers of about equal compute, one per GPU; branches = "
                               "each parallel branch on its own GPU, round-robin");
  s.count("prefix_depth", &ExpertConfig::prefix_depth, "'/'-separated name components that name a layer", 1, 64, "1");
  s.flag("backward_with_forward", &ExpertConfig::backward_with_forward,
         "gradient_tape/<layer> operators join <layer>");
  return s;
}

StrategyInfo expert_strategy_info() {
  return strategy_info<Expert>("expert",
                               "Placeto's human-expert baseline: layers read from name prefixes, contiguous layer "
                               "chunks (or parallel branches) per GPU; over GPU memory, the portfolio's best that fits "
                               "(said: memory_fallback)",
                               expert_schema(), {.memory_fallback = true});
}

}  // namespace placesim
