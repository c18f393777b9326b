#include "sim/core/graph_stats.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <utility>

#include "sim/core/units.h"

namespace placesim {

namespace {

struct UnionFind {
  std::vector<std::int32_t> parent;
  explicit UnionFind(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  std::int32_t root(std::int32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  // The smaller id becomes the root, so a component's root is its lowest operator.
  void unite(std::int32_t a, std::int32_t b) {
    a = root(a);
    b = root(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

std::vector<ComputeBucket> empty_histogram() {
  std::vector<ComputeBucket> h;
  h.push_back({"0", 0, 0});
  h.push_back({"(0, 1us)", 0, 1e-6});
  const char* names[] = {"1us", "10us", "100us", "1ms", "10ms", "100ms", "1s"};
  const double bounds[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  for (int k = 0; k + 1 < 7; ++k)
    h.push_back({fmt::format("[{}, {})", names[k], names[k + 1]), bounds[k], bounds[k + 1]});
  h.push_back({">= 1s", 1.0, INFINITY});
  return h;
}

std::size_t bucket_of(double compute_s) {
  if (compute_s == 0) return 0;
  if (compute_s < 1e-6) return 1;
  const double bounds[] = {1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  std::size_t k = 2;
  for (double b : bounds) {
    if (compute_s < b) return k;
    ++k;
  }
  return k;  // >= 1s
}

}  // namespace

std::vector<std::int32_t> weakly_connected_component_ids(const Graph& g) {
  const std::size_t n = g.num_operators();
  UnionFind uf(n);
  for (const Tensor& t : g.tensors()) uf.unite(t.src, t.dst);
  std::vector<std::int32_t> id(n, -1), of_root(n, -1);
  std::int32_t next = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::int32_t r = uf.root(static_cast<std::int32_t>(i));
    if (of_root[r] < 0) of_root[r] = next++;
    id[i] = of_root[r];
  }
  return id;
}

Graph largest_weakly_connected_component(const Graph& g) {
  std::vector<std::int32_t> component = weakly_connected_component_ids(g);
  Graph out;
  if (component.empty()) {
    out.finalize("largest weakly connected component");
    return out;
  }
  std::vector<std::size_t> size(*std::max_element(component.begin(), component.end()) + 1, 0);
  for (std::int32_t c : component) ++size[c];
  // max_element returns the first maximum, i.e. the component with the lowest operator.
  const std::int32_t keep = static_cast<std::int32_t>(std::max_element(size.begin(), size.end()) - size.begin());

  std::vector<std::int32_t> class_used(g.num_colocation_classes(), 0);
  for (std::size_t i = 0; i < g.num_operators(); ++i)
    if (component[i] == keep && g.op(static_cast<OpId>(i)).colocation_class >= 0) class_used[g.op(static_cast<OpId>(i)).colocation_class] = 1;
  std::vector<std::int32_t> new_class(class_used.size(), -1);
  std::int32_t next_class = 0;
  for (std::size_t c = 0; c < class_used.size(); ++c)
    if (class_used[c]) new_class[c] = next_class++;

  std::vector<OpId> new_id(g.num_operators(), -1);
  for (std::size_t i = 0; i < g.num_operators(); ++i) {
    if (component[i] != keep) continue;
    Operator o = g.op(static_cast<OpId>(i));
    if (o.colocation_class >= 0) o.colocation_class = new_class[o.colocation_class];
    new_id[i] = out.add_operator(std::move(o));
  }
  for (const Tensor& t : g.tensors())
    if (component[t.src] == keep) out.add_tensor(new_id[t.src], new_id[t.dst], t.bytes, t.gradient, t.latencies, t.overhead_s);
  out.finalize("largest weakly connected component");
  return out;
}

GraphStats compute_stats(const Graph& g) {
  GraphStats s;
  s.operators = g.num_operators();
  s.tensors = g.num_tensors();
  s.total_compute_s = g.total_compute();
  s.total_tensor_bytes = g.total_tensor_bytes();
  s.total_memory_bytes = g.total_memory();
  s.critical_path_s = critical_path(g);
  s.average_parallelism = s.critical_path_s > 0 ? s.total_compute_s / s.critical_path_s : 0;
  s.colocation_classes = g.num_colocation_classes();

  std::vector<std::int32_t> component = weakly_connected_component_ids(g);
  if (!component.empty()) {
    std::vector<std::size_t> size(*std::max_element(component.begin(), component.end()) + 1, 0);
    for (std::int32_t c : component) ++size[c];
    s.weakly_connected_components = size.size();
    s.largest_component_operators = *std::max_element(size.begin(), size.end());
  }

  s.compute_histogram = empty_histogram();
  for (const Operator& o : g.operators()) {
    ComputeBucket& b = s.compute_histogram[bucket_of(o.compute_s)];
    ++b.count;
    b.compute_s += o.compute_s;
  }
  for (ComputeBucket& b : s.compute_histogram) b.share = s.total_compute_s > 0 ? b.compute_s / s.total_compute_s : 0;

  // ASAP schedule, then a sweep over start/finish events of the non-zero operators. At equal
  // times finishes (-1) sort before starts (+1): intervals are half-open.
  std::vector<double> finish(g.num_operators(), 0);
  std::vector<std::pair<double, int>> events;
  for (OpId u : g.topological_order()) {
    double start = 0;
    for (EdgeId e : g.in_edges(u)) start = std::max(start, finish[g.tensor(e).src]);
    finish[u] = start + g.op(u).compute_s;
    if (finish[u] > start) {  // not just compute > 0: a tiny compute can vanish when added to a late start
      events.emplace_back(start, +1);
      events.emplace_back(finish[u], -1);
    }
  }
  std::sort(events.begin(), events.end());
  std::int64_t running = 0, most = 0;
  for (const auto& [time, delta] : events) {
    running += delta;
    most = std::max(most, running);
  }
  s.max_parallelism = static_cast<std::size_t>(most);
  return s;
}

std::string format_stats(const GraphStats& s) {
  std::string out;
  out += fmt::format("operators              {}\n", s.operators);
  out += fmt::format("tensors                {}\n", s.tensors);
  out += fmt::format("total compute          {}\n", format_duration(s.total_compute_s));
  out += fmt::format("critical path          {}\n", format_duration(s.critical_path_s));
  out += fmt::format("average parallelism    {:.2f}  (total compute / critical path)\n", s.average_parallelism);
  out += fmt::format("max parallelism        {}  (non-zero operators at once, ASAP schedule, free communication)\n",
                     s.max_parallelism);
  out += fmt::format("total tensor bytes     {}\n", format_bytes(s.total_tensor_bytes));
  out += fmt::format("total operator memory  {}\n", format_bytes(s.total_memory_bytes));
  out += fmt::format("weak components        {}  (largest: {} operators)\n", s.weakly_connected_components,
                     s.largest_component_operators);
  out += fmt::format("colocation classes     {}\n", s.colocation_classes);
  out += "compute time per operator:\n";
  out += fmt::format("  {:<16} {:>9} {:>12} {:>7}\n", "bucket", "operators", "compute", "share");
  for (const ComputeBucket& b : s.compute_histogram)
    out += fmt::format("  {:<16} {:>9} {:>12} {:>6.1f}%\n", b.label, b.count, format_duration(b.compute_s), 100 * b.share);
  return out;
}

}  // namespace placesim
