#include "placement/stages/coarsening/coarsening.h"

#include "placement/framework/union_find.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <fmt/format.h>
#include <functional>
#include <queue>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace placesim {

namespace {

// Neighbours of a node with the summed bytes of the tensors to (or from) each, sorted by node id.
using Adjacency = std::vector<std::pair<int, double>>;

void add_bytes(Adjacency& adj, int node, double bytes) {
  auto it = std::lower_bound(adj.begin(), adj.end(), node, [](const auto& e, int n) { return e.first < n; });
  if (it != adj.end() && it->first == node) it->second += bytes;
  else adj.insert(it, {node, bytes});
}

double remove_node(Adjacency& adj, int node) {
  auto it = std::lower_bound(adj.begin(), adj.end(), node, [](const auto& e, int n) { return e.first < n; });
  if (it == adj.end() || it->first != node) return 0.0;
  const double bytes = it->second;
  adj.erase(it);
  return bytes;
}

// A DAG under edge contraction. Nodes start as the fine operators; contracting keeps the
// survivor's id. A topological order (`ord_`, positions with gaps) is maintained across
// contractions as in Pearce & Kelly's dynamic topological sort, so the acyclicity test is a
// search bounded by the positions of the two endpoints instead of the whole graph.
class ContractingDag {
 public:
  explicit ContractingDag(const Graph& g)
      : out_(g.num_operators()), in_(g.num_operators()), compute_(g.num_operators()), ord_(g.num_operators()),
        parent_(g.num_operators()), alive_(g.num_operators(), 1), mark_(g.num_operators(), 0),
        alive_count_(static_cast<int>(g.num_operators())) {
    for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) {
      compute_[i] = g.op(i).compute_s;
      parent_[i] = i;
    }
    const auto topo = g.topological_order();
    for (std::size_t k = 0; k < topo.size(); ++k) ord_[topo[k]] = static_cast<int>(k);
    for (const Tensor& t : g.tensors()) {
      add_bytes(out_[t.src], t.dst, t.bytes);
      add_bytes(in_[t.dst], t.src, t.bytes);
    }
  }

  int alive_count() const { return alive_count_; }
  bool alive(int n) const { return alive_[n] != 0; }
  const Adjacency& successors(int n) const { return out_[n]; }
  const Adjacency& predecessors(int n) const { return in_[n]; }
  double compute(int n) const { return compute_[n]; }

  // Contracts the edge a -> b into `survivor` (a or b) unless another path a ~> b exists (the
  // merged node would then lie on a cycle). Returns whether it contracted.
  bool try_contract(int a, int b, int survivor) {
    int merged_ord;
    if (out_[a].size() == 1) {
      merged_ord = ord_[b];  // a's only successor is b: b's position suits the merged node
    } else if (in_[b].size() == 1) {
      merged_ord = ord_[a];  // b's only predecessor is a: a's position suits it
    } else {
      if (!reorder_for(a, b)) return false;
      merged_ord = ord_[b];
    }
    const int absorbed = survivor == a ? b : a;
    remove_node(out_[a], b);
    remove_node(in_[b], a);
    for (const auto& [y, bytes] : out_[absorbed]) {
      remove_node(in_[y], absorbed);
      add_bytes(in_[y], survivor, bytes);
      add_bytes(out_[survivor], y, bytes);
    }
    for (const auto& [y, bytes] : in_[absorbed]) {
      remove_node(out_[y], absorbed);
      add_bytes(out_[y], survivor, bytes);
      add_bytes(in_[survivor], y, bytes);
    }
    Adjacency().swap(out_[absorbed]);
    Adjacency().swap(in_[absorbed]);
    compute_[survivor] += compute_[absorbed];
    ord_[survivor] = merged_ord;
    alive_[absorbed] = 0;
    parent_[absorbed] = survivor;
    --alive_count_;
    return true;
  }

  // Merges the node `u`, which has no neighbour left (its weak component is this one node), into
  // `w`. Nothing joins them, so the graph stays acyclic and w keeps its position in the order.
  void merge_isolated(int u, int w) {
    compute_[w] += compute_[u];
    alive_[u] = 0;
    parent_[u] = w;
    --alive_count_;
  }

  // The surviving node of every fine operator.
  std::vector<int> node_of_every_operator() {
    std::vector<int> out(parent_.size());
    for (std::size_t i = 0; i < parent_.size(); ++i) out[i] = find(static_cast<int>(i));
    return out;
  }

 private:
  int find(int x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }

  // Looks for a path a ~> b other than the edge a -> b, searching forward from a among nodes
  // placed before b. If there is none, moves b's ancestors placed after a (searched backward)
  // in front of a's descendants placed before b, so that a and b become neighbours in the order
  // and the merged node can take b's position. Returns false (changing nothing) on a path.
  bool reorder_for(int a, int b) {
    ++epoch_;
    forward_.assign(1, a);
    mark_[a] = epoch_;
    stack_.assign(1, a);
    while (!stack_.empty()) {
      const int x = stack_.back();
      stack_.pop_back();
      for (const auto& e : out_[x]) {
        const int y = e.first;
        if (y == b) {
          if (x != a) return false;
          continue;
        }
        if (ord_[y] < ord_[b] && mark_[y] != epoch_) {
          mark_[y] = epoch_;
          forward_.push_back(y);
          stack_.push_back(y);
        }
      }
    }
    backward_.assign(1, b);
    mark_[b] = epoch_;
    stack_.assign(1, b);
    while (!stack_.empty()) {
      const int x = stack_.back();
      stack_.pop_back();
      for (const auto& e : in_[x]) {
        const int y = e.first;
        // Nodes marked here are in `forward_`: reaching one would close a path a ~> y ~> b,
        // which the forward search has already ruled out; a itself is not after a.
        if (ord_[y] > ord_[a] && mark_[y] != epoch_) {
          mark_[y] = epoch_;
          backward_.push_back(y);
          stack_.push_back(y);
        }
      }
    }
    auto by_ord = [&](int x, int y) { return ord_[x] < ord_[y]; };
    std::sort(forward_.begin(), forward_.end(), by_ord);
    std::sort(backward_.begin(), backward_.end(), by_ord);
    positions_.clear();
    for (int x : backward_) positions_.push_back(ord_[x]);
    for (int x : forward_) positions_.push_back(ord_[x]);
    std::sort(positions_.begin(), positions_.end());
    std::size_t k = 0;
    for (int x : backward_) ord_[x] = positions_[k++];
    for (int x : forward_) ord_[x] = positions_[k++];
    return true;
  }

  std::vector<Adjacency> out_, in_;
  std::vector<double> compute_;
  std::vector<int> ord_, parent_;
  std::vector<std::uint8_t> alive_;
  std::vector<std::uint32_t> mark_;
  std::uint32_t epoch_ = 0;
  std::vector<int> forward_, backward_, stack_, positions_;
  int alive_count_ = 0;
};

}  // namespace

Coarsening contract_groups(const Graph& g, const std::vector<int>& label,
                           const std::function<std::string(const std::vector<OpId>&)>& name_of,
                           const std::string& mixed_type, const std::string& source) {
  const auto n = static_cast<OpId>(g.num_operators());
  Coarsening c;
  c.group_of.assign(n, -1);
  std::unordered_map<int, OpId> coarse_of_label;
  std::vector<std::vector<OpId>> members;
  for (OpId i = 0; i < n; ++i) {
    auto [it, fresh] = coarse_of_label.emplace(label[i], static_cast<OpId>(members.size()));
    if (fresh) members.emplace_back();
    c.group_of[i] = it->second;
    members[it->second].push_back(i);
  }

  // Colocation classes: a group holding members of several classes joins those classes.
  const int fine_classes = g.num_colocation_classes();
  UnionFind classes(fine_classes);
  std::vector<std::uint8_t> used(fine_classes, 0);
  for (const auto& group : members) {
    int first = -1;
    for (OpId m : group) {
      const int cls = g.op(m).colocation_class;
      if (cls < 0) continue;
      used[cls] = 1;
      if (first < 0) first = cls;
      else classes.join(first, cls);
    }
  }
  std::vector<int> dense(fine_classes, -1);
  int next_class = 0;
  for (int cls = 0; cls < fine_classes; ++cls)
    if (used[cls] && dense[classes.find(cls)] < 0) dense[classes.find(cls)] = next_class++;

  std::unordered_set<std::string> names;
  for (const auto& group : members) {
    Operator op;
    op.name = group.size() == 1 ? g.op(group[0]).name : name_of(group);
    if (names.count(op.name)) {
      int k = 2;
      while (names.count(fmt::format("{}#{}", op.name, k))) ++k;
      op.name = fmt::format("{}#{}", op.name, k);
    }
    names.insert(op.name);
    op.type = g.op(group[0]).type;
    for (OpId m : group) {
      if (g.op(m).type != op.type) op.type = mixed_type;
      op.compute_s += g.op(m).compute_s;
      op.memory_bytes += g.op(m).memory_bytes;
      if (g.op(m).colocation_class >= 0) op.colocation_class = dense[classes.find(g.op(m).colocation_class)];
    }
    c.coarse.add_operator(std::move(op));
  }

  std::vector<std::tuple<OpId, OpId, double>> edges;
  for (const Tensor& t : g.tensors()) {
    const OpId s = c.group_of[t.src], d = c.group_of[t.dst];
    if (s != d) edges.emplace_back(s, d, t.bytes);
  }
  std::stable_sort(edges.begin(), edges.end(), [](const auto& x, const auto& y) {
    return std::tie(std::get<0>(x), std::get<1>(x)) < std::tie(std::get<0>(y), std::get<1>(y));
  });
  for (std::size_t k = 0; k < edges.size();) {
    const OpId s = std::get<0>(edges[k]), d = std::get<1>(edges[k]);
    double bytes = 0;
    for (; k < edges.size() && std::get<0>(edges[k]) == s && std::get<1>(edges[k]) == d; ++k) bytes += std::get<2>(edges[k]);
    c.coarse.add_tensor(s, d, bytes);
  }
  c.coarse.finalize(source);
  return c;
}

namespace {

std::string lowest_member_name(const Graph& g, const std::vector<OpId>& members) {
  return g.op(members.front()).name;  // members are listed in id order
}

Coarsening build_coarsening(const Graph& g, const std::vector<int>& label, CoarseningScheme scheme,
                            const std::function<std::string(const std::vector<OpId>&)>& name_of) {
  return contract_groups(g, label, name_of, "group",
                         fmt::format("coarse graph ({})", coarsening_scheme_name(scheme)));
}

std::vector<int> colocrl_groups(const Graph& g) {
  ContractingDag dag(g);
  // Operators are visited in topological order; a merge can lower the out-degree of the merged
  // node's predecessors (two of their successors became one), so they are visited again.
  std::queue<int> work;
  std::vector<std::uint8_t> queued(g.num_operators(), 1);
  for (OpId op : g.topological_order()) work.push(op);
  std::vector<int> preds;
  while (!work.empty()) {
    const int u = work.front();
    work.pop();
    queued[u] = 0;
    if (!dag.alive(u) || dag.successors(u).size() != 1) continue;
    const int v = dag.successors(u).front().first;
    dag.try_contract(u, v, v);  // out-degree one: always acyclic
    for (const auto& e : dag.predecessors(v))
      if (!queued[e.first] && dag.successors(e.first).size() == 1) {
        queued[e.first] = 1;
        work.push(e.first);
      }
  }
  return dag.node_of_every_operator();
}

std::vector<int> placeto_groups(const Graph& g, int target) {
  ContractingDag dag(g);
  // Min-heap of (coarse compute, id); an entry is stale once its node has merged again.
  using Entry = std::tuple<double, int, int>;  // compute, node, version
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  std::vector<int> version(g.num_operators(), 0);
  for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) heap.emplace(dag.compute(i), i, 0);
  // Neighbours by decreasing bytes, then increasing id.
  auto by_bytes = [](const Adjacency& adj) {
    Adjacency sorted = adj;
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
    return sorted;
  };
  while (dag.alive_count() > target && !heap.empty()) {
    const auto [cost, u, ver] = heap.top();
    heap.pop();
    if (!dag.alive(u) || ver != version[u]) continue;
    int merged = -1;
    // The successor earliest in topological order is always safe, so this finds one whenever
    // u has successors; the others are tried first when they carry more bytes.
    for (const auto& [v, bytes] : by_bytes(dag.successors(u)))
      if (dag.try_contract(u, v, v)) {
        merged = v;
        break;
      }
    if (merged < 0)
      for (const auto& [p, bytes] : by_bytes(dag.predecessors(u)))
        if (dag.try_contract(p, u, p)) {
          merged = p;
          break;
        }
    if (merged < 0) {
      // u has no neighbour left: its weak component is this one node. It joins the cheapest other
      // node (the heap's next live entry; every live node but u has one), so that the target is
      // reached on graphs of many components too, not stopped at their number.
      while (!heap.empty() && (!dag.alive(std::get<1>(heap.top())) || std::get<2>(heap.top()) != version[std::get<1>(heap.top())]))
        heap.pop();
      if (heap.empty()) break;
      merged = std::get<1>(heap.top());
      heap.pop();
      dag.merge_isolated(u, merged);
    }
    heap.emplace(dag.compute(merged), merged, ++version[merged]);
  }
  return dag.node_of_every_operator();
}

std::vector<int> spotlight_groups(const Graph& g) {
  const auto n = static_cast<OpId>(g.num_operators());
  std::unordered_map<std::string, int> key_index;
  std::vector<int> key(n);
  for (OpId i = 0; i < n; ++i)
    key[i] = key_index.emplace(two_level_prefix(g.op(i).name), static_cast<int>(key_index.size())).first->second;
  const int num_keys = static_cast<int>(key_index.size());

  // Groups on a cycle of the grouped graph are those in a strongly connected component of more
  // than one group.
  using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Digraph q(num_keys);
  for (const Tensor& t : g.tensors())
    if (key[t.src] != key[t.dst]) boost::add_edge(key[t.src], key[t.dst], q);
  std::vector<int> component(num_keys);
  const int num_components = boost::strong_components(q, component.data());
  if (num_components == num_keys) return key;
  std::vector<int> component_size(num_components, 0);
  for (int k = 0; k < num_keys; ++k) ++component_size[component[k]];

  // Split those groups into runs: take a topological order that keeps emitting operators of the
  // group it is in while any is ready (otherwise the earliest ready in the graph's own order),
  // and cut each offending group wherever another group's operator comes in between. Every run
  // is an interval of one topological order, so runs cannot form a cycle among themselves, and
  // the untouched groups were on no cycle to begin with: the result is acyclic.
  std::vector<int> position(n);
  const auto topo = g.topological_order();
  for (std::size_t k = 0; k < topo.size(); ++k) position[topo[k]] = static_cast<int>(k);
  using Ready = std::priority_queue<int, std::vector<int>, std::greater<int>>;  // by position
  Ready ready;
  std::vector<Ready> ready_in_group(num_keys);
  std::vector<int> waiting(n);
  std::vector<std::uint8_t> emitted(n, 0);
  auto release = [&](OpId op) {
    ready.push(position[op]);
    ready_in_group[key[op]].push(position[op]);
  };
  for (OpId i = 0; i < n; ++i)
    if ((waiting[i] = static_cast<int>(g.in_edges(i).size())) == 0) release(i);
  auto pop_unemitted = [&](Ready& r) {
    while (!r.empty() && emitted[topo[r.top()]]) r.pop();
    if (r.empty()) return -1;
    const int op = topo[r.top()];
    r.pop();
    return op;
  };
  std::vector<int> label(key);
  int current_key = -1, next_label = num_keys;
  for (OpId done = 0; done < n; ++done) {
    int op = current_key >= 0 ? pop_unemitted(ready_in_group[current_key]) : -1;
    if (op < 0) op = pop_unemitted(ready);
    emitted[op] = 1;
    if (key[op] != current_key) {
      current_key = key[op];
      if (component_size[component[current_key]] > 1) ++next_label;  // a new run of a split group
    }
    if (component_size[component[key[op]]] > 1) label[op] = next_label - 1;
    for (EdgeId e : g.out_edges(op))
      if (--waiting[g.tensor(e).dst] == 0) release(g.tensor(e).dst);
  }
  return label;
}

}  // namespace

std::string two_level_prefix(std::string_view name) {
  const auto first = name.find('/');
  if (first == std::string_view::npos) return std::string(name);
  const auto second = name.find('/', first + 1);
  return std::string(second == std::string_view::npos ? name : name.substr(0, second));
}

Coarsening coarsen(const Graph& graph, const CoarseningConfig& config) {
  switch (config.scheme) {
    case CoarseningScheme::ColocRL:
      return build_coarsening(graph, colocrl_groups(graph), config.scheme,
                              [&](const std::vector<OpId>& m) { return lowest_member_name(graph, m); });
    case CoarseningScheme::PlaceTo:
      if (config.target < 1)
        throw std::invalid_argument(fmt::format("placeto coarsening needs a target of at least 1, got {}", config.target));
      return build_coarsening(graph, placeto_groups(graph, config.target), config.scheme,
                              [&](const std::vector<OpId>& m) { return lowest_member_name(graph, m); });
    case CoarseningScheme::SpotLight:
      return build_coarsening(graph, spotlight_groups(graph), config.scheme,
                              [&](const std::vector<OpId>& m) { return two_level_prefix(graph.op(m.front()).name); });
  }
  throw std::invalid_argument("unknown coarsening scheme");
}

std::vector<DeviceId> expand_placement(const Coarsening& coarsening, std::span<const DeviceId> coarse_placement) {
  if (coarse_placement.size() != coarsening.coarse.num_operators())
    throw std::invalid_argument(fmt::format("a coarse placement needs {} entries, got {}",
                                            coarsening.coarse.num_operators(), coarse_placement.size()));
  std::vector<DeviceId> placement(coarsening.group_of.size());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = coarse_placement[coarsening.group_of[i]];
  return placement;
}

std::string_view coarsening_scheme_name(CoarseningScheme scheme) {
  switch (scheme) {
    case CoarseningScheme::ColocRL: return "colocrl";
    case CoarseningScheme::PlaceTo: return "placeto";
    case CoarseningScheme::SpotLight: return "spotlight";
  }
  return "?";
}

std::optional<CoarseningScheme> parse_coarsening_scheme(std::string_view name) {
  for (auto s : {CoarseningScheme::ColocRL, CoarseningScheme::PlaceTo, CoarseningScheme::SpotLight})
    if (coarsening_scheme_name(s) == name) return s;
  return std::nullopt;
}

std::vector<std::string> coarsening_scheme_names() { return {"colocrl", "placeto", "spotlight"}; }

}  // namespace placesim
