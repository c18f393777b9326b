#include "sim/core/graph.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <fmt/format.h>

#include "sim/core/errors.h"

namespace placesim {

Graph::Graph(const Graph& other)
    : ops_(other.ops_),
      tensors_(other.tensors_),
      out_offsets_(other.out_offsets_),
      in_offsets_(other.in_offsets_),
      out_edges_(other.out_edges_),
      in_edges_(other.in_edges_),
      topo_(other.topo_),
      names_indexed_(other.names_indexed_),
      num_classes_(other.num_classes_),
      finalized_(other.finalized_) {
  if (other.by_name_.empty()) return;
  by_name_.reserve(ops_.size());
  for (OpId i = 0; i < static_cast<OpId>(ops_.size()); ++i) by_name_.emplace(ops_[i].name, i);
}

Graph& Graph::operator=(const Graph& other) {
  if (this != &other) *this = Graph(other);
  return *this;
}

OpId Graph::add_operator(Operator op) {
  // by_name_ views the operators' names, which growing ops_ may move.
  if (!by_name_.empty()) by_name_.clear();
  ops_.push_back(std::move(op));
  finalized_ = false;
  return static_cast<OpId>(ops_.size() - 1);
}

EdgeId Graph::add_tensor(OpId src, OpId dst, double bytes, bool gradient, std::int32_t latencies, double overhead_s,
                         DeviceId route_to) {
  tensors_.push_back({src, dst, bytes, gradient, latencies, overhead_s, route_to});
  finalized_ = false;
  return static_cast<EdgeId>(tensors_.size() - 1);
}

std::optional<OpId> Graph::find(std::string_view name) const {
  if (!names_indexed_) {
    for (OpId i = 0; i < static_cast<OpId>(ops_.size()); ++i)
      if (ops_[i].name == name) return i;
    return std::nullopt;
  }
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

namespace {

// `field` names the value only when it is bad: formatting it for every operator of a graph of
// millions took a fifth of a plan's compile time.
template <class Field>
void check_value(double v, const std::string& source, Field field) {
  if (std::isfinite(v) && v >= 0) return;
  if (!std::isfinite(v)) throw InputError(source, field(), fmt::format("expected a finite number, got {}", v));
  throw InputError(source, field(), fmt::format("expected a non-negative number, got {}", v));
}

}  // namespace

void Graph::finalize(const std::string& source, bool index_names) {
  const auto n = static_cast<OpId>(ops_.size());
  by_name_.clear();
  names_indexed_ = index_names;
  if (index_names) by_name_.reserve(ops_.size());
  int max_class = -1;
  for (OpId i = 0; i < n; ++i) {
    const Operator& o = ops_[i];
    if (o.name.empty()) throw InputError(source, fmt::format("operator #{}.name", i), "expected a non-empty name");
    if (index_names && !by_name_.emplace(o.name, i).second)
      throw InputError(source, fmt::format("operator '{}'", o.name), "duplicate operator name");
    check_value(o.compute_s, source, [&] { return fmt::format("operator '{}'.compute", o.name); });
    check_value(o.memory_bytes, source, [&] { return fmt::format("operator '{}'.memory", o.name); });
    check_value(o.flops, source, [&] { return fmt::format("operator '{}'.flops", o.name); });
    if (o.communication && o.compute_s != 0)
      throw InputError(source, fmt::format("operator '{}'.compute", o.name),
                       "expected 0 for a communication step (it takes no GPU time)");
    max_class = std::max(max_class, o.colocation_class);
  }
  num_classes_ = max_class + 1;

  out_offsets_.assign(n + 1, 0);
  in_offsets_.assign(n + 1, 0);
  for (EdgeId e = 0; e < static_cast<EdgeId>(tensors_.size()); ++e) {
    const Tensor& t = tensors_[e];
    if (t.src < 0 || t.src >= n || t.dst < 0 || t.dst >= n)
      throw InputError(source, fmt::format("tensor #{}", e),
                       fmt::format("endpoint out of range ({} -> {}, graph has {} operators)", t.src, t.dst, n));
    check_value(t.bytes, source, [&] { return fmt::format("tensor '{}' -> '{}'.bytes", ops_[t.src].name, ops_[t.dst].name); });
    if (t.src == t.dst)
      throw InputError(source, fmt::format("tensor '{}' -> '{}'", ops_[t.src].name, ops_[t.dst].name),
                       "self-loop: the graph must be acyclic");
    if (t.gradient && !(t.bytes > 0))
      throw InputError(source, fmt::format("tensor '{}' -> '{}'.gradient", ops_[t.src].name, ops_[t.dst].name),
                       "a parameter gradient must have bytes > 0");
    if (t.latencies < 1)
      throw InputError(source, fmt::format("tensor '{}' -> '{}'.latencies", ops_[t.src].name, ops_[t.dst].name),
                       fmt::format("expected a whole number >= 1, got {}", t.latencies));
    if (!(t.overhead_s >= 0) || !std::isfinite(t.overhead_s))
      throw InputError(source, fmt::format("tensor '{}' -> '{}'.overhead_s", ops_[t.src].name, ops_[t.dst].name),
                       fmt::format("expected a finite number of seconds >= 0, got {}", t.overhead_s));
    ++out_offsets_[t.src + 1];
    ++in_offsets_[t.dst + 1];
  }
  for (OpId i = 0; i < n; ++i) {
    out_offsets_[i + 1] += out_offsets_[i];
    in_offsets_[i + 1] += in_offsets_[i];
  }
  out_edges_.resize(tensors_.size());
  in_edges_.resize(tensors_.size());
  {
    std::vector<std::int32_t> out_fill(out_offsets_.begin(), out_offsets_.end() - 1);
    std::vector<std::int32_t> in_fill(in_offsets_.begin(), in_offsets_.end() - 1);
    for (EdgeId e = 0; e < static_cast<EdgeId>(tensors_.size()); ++e) {
      out_edges_[out_fill[tensors_[e].src]++] = e;
      in_edges_[in_fill[tensors_[e].dst]++] = e;
    }
  }

  // Kahn's algorithm; operators are released in id order so the order is deterministic.
  topo_.clear();
  topo_.reserve(n);
  std::vector<std::int32_t> indegree(n);
  for (OpId i = 0; i < n; ++i) indegree[i] = in_offsets_[i + 1] - in_offsets_[i];
  for (OpId i = 0; i < n; ++i)
    if (indegree[i] == 0) topo_.push_back(i);
  for (std::size_t head = 0; head < topo_.size(); ++head) {
    OpId u = topo_[head];
    for (EdgeId e : out_edges(u))
      if (--indegree[tensors_[e].dst] == 0) topo_.push_back(tensors_[e].dst);
  }
  if (topo_.size() != ops_.size()) {
    // Walk backwards along unresolved in-edges from a stuck operator until one repeats: that
    // repetition closes a cycle, which we print in forward direction.
    OpId start = 0;
    while (indegree[start] == 0) ++start;
    std::vector<int> seen_at(n, -1);
    std::vector<OpId> walk;
    OpId cur = start;
    while (seen_at[cur] < 0) {
      seen_at[cur] = static_cast<int>(walk.size());
      walk.push_back(cur);
      for (EdgeId e : in_edges(cur))
        if (indegree[tensors_[e].src] > 0) { cur = tensors_[e].src; break; }
    }
    std::vector<OpId> cycle(walk.begin() + seen_at[cur], walk.end());
    std::reverse(cycle.begin(), cycle.end());
    std::string text;
    for (std::size_t k = 0; k < cycle.size() && k < 8; ++k) text += "'" + ops_[cycle[k]].name + "' -> ";
    if (cycle.size() > 8) text += "... -> ";
    text += "'" + ops_[cycle.front()].name + "'";
    throw InputError(source, fmt::format("operator '{}'", ops_[cycle.front()].name),
                     fmt::format("the graph has a cycle: {} ({} operators on it)", text, cycle.size()));
  }
  finalized_ = true;
}

void Graph::set_compute_s(OpId id, double seconds) {
  if (seconds < 0 || !std::isfinite(seconds) || ops_[id].communication)
    throw std::invalid_argument(fmt::format("operator '{}': a compute time of {} s cannot be set", ops_[id].name, seconds));
  ops_[id].compute_s = seconds;
}

double Graph::total_compute() const {
  double s = 0;
  for (const auto& o : ops_) s += o.compute_s;
  return s;
}
double Graph::total_memory() const {
  double s = 0;
  for (const auto& o : ops_) s += o.memory_bytes;
  return s;
}
double Graph::total_tensor_bytes() const {
  double s = 0;
  for (const auto& t : tensors_) s += t.bytes;
  return s;
}

std::vector<double> computation_rank(const Graph& g) {
  std::vector<double> rank(g.num_operators(), 0.0);
  auto topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    double best = 0;
    for (EdgeId e : g.out_edges(*it)) best = std::max(best, rank[g.tensor(e).dst]);
    rank[*it] = g.op(*it).compute_s + best;
  }
  return rank;
}

std::vector<std::uint8_t> communication_steps(const Graph& g) {
  std::vector<std::uint8_t> flags;
  for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i)
    if (g.op(i).communication) {
      flags.resize(g.num_operators(), 0);
      flags[i] = 1;
    }
  return flags;
}

double critical_path(const Graph& g) {
  double best = 0;
  for (double r : computation_rank(g)) best = std::max(best, r);
  return best;
}

std::vector<OpId> rank_priority_order(const Graph& g, std::span<const double> rank) {
  const auto n = static_cast<std::int32_t>(g.num_operators());
  std::vector<std::int32_t> topo_pos(n);
  const auto topo = g.topological_order();
  for (std::int32_t k = 0; k < n; ++k) topo_pos[topo[k]] = k;
  std::vector<OpId> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](OpId a, OpId b) {
    if (rank[a] != rank[b]) return rank[a] > rank[b];
    return topo_pos[a] < topo_pos[b];
  });
  return order;
}

}  // namespace placesim
