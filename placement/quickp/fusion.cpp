// QuickP graph reduction: parallelizable pairs, operator fusion (ICC Algorithm 1), co-location (eq. 7).

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <tuple>
#include <unordered_set>

#include "placement/quickp/quickp.h"
#include "placement/union_find.h"

namespace placesim {

Reachability::Reachability(const Graph& g) : n_(g.num_operators()), words_((g.num_operators() + 63) / 64) {
  rows_.assign(n_ * words_, 0);
  const auto topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId i = *it;
    std::uint64_t* row = rows_.data() + static_cast<std::size_t>(i) * words_;
    for (EdgeId e : g.out_edges(i)) {
      const OpId j = g.tensor(e).dst;
      const std::uint64_t* succ = rows_.data() + static_cast<std::size_t>(j) * words_;
      for (std::size_t w = 0; w < words_; ++w) row[w] |= succ[w];
      row[j >> 6] |= std::uint64_t{1} << (j & 63);
    }
  }
}

std::uint64_t Reachability::count_parallelizable_pairs() const {
  // In a DAG each comparable pair is reachable in exactly one direction, so it is counted once.
  std::uint64_t comparable = 0;
  for (std::uint64_t w : rows_) comparable += static_cast<std::uint64_t>(std::popcount(w));
  return static_cast<std::uint64_t>(n_) * (n_ - (n_ > 0 ? 1 : 0)) / 2 - comparable;
}

std::vector<std::pair<OpId, OpId>> parallelizable_pairs(const Graph& g) {
  const Reachability reach(g);
  std::vector<std::pair<OpId, OpId>> out;
  const auto n = static_cast<OpId>(g.num_operators());
  for (OpId i = 0; i < n; ++i)
    for (OpId j = i + 1; j < n; ++j)
      if (reach.parallelizable(i, j)) out.emplace_back(i, j);
  return out;
}

double fusion_threshold(const Graph& g, double percentile) {
  std::vector<double> times;
  for (const Operator& op : g.operators())
    if (op.compute_s > 0) times.push_back(op.compute_s);
  if (times.empty()) return 0.0;
  std::sort(times.begin(), times.end());
  // Nearest rank: the smallest value with at least `percentile` of the values at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(percentile * static_cast<double>(times.size())));
  return times[std::clamp<std::size_t>(rank, 1, times.size()) - 1];
}

namespace {

// Neighbour -> summed bytes, sorted by neighbour.
using Adjacency = std::vector<std::pair<int, double>>;

void add_bytes(Adjacency& adj, int node, double bytes) {
  auto it = std::lower_bound(adj.begin(), adj.end(), node, [](const auto& e, int x) { return e.first < x; });
  if (it != adj.end() && it->first == node) it->second += bytes;
  else adj.insert(it, {node, bytes});
}

void remove_node(Adjacency& adj, int node) {
  auto it = std::lower_bound(adj.begin(), adj.end(), node, [](const auto& e, int x) { return e.first < x; });
  if (it != adj.end() && it->first == node) adj.erase(it);
}

// The fused graph of a labelling (label = surviving node per operator); a fused operator is
// named after its lowest-id member.
Coarsening build_fused(const Graph& g, const std::vector<int>& label) {
  return contract_groups(
      g, label, [&](const std::vector<OpId>& members) { return g.op(members.front()).name; }, "fused",
      "quickp fused graph");
}

}  // namespace

Coarsening fuse_operators(const Graph& g, double alpha) {
  const auto n = static_cast<int>(g.num_operators());
  std::vector<Adjacency> out(n), in(n);
  std::vector<double> compute(n);
  std::vector<std::uint8_t> alive(n, 1);
  std::vector<int> parent(n);
  for (int i = 0; i < n; ++i) {
    compute[i] = g.op(i).compute_s;
    parent[i] = i;
  }
  for (const Tensor& t : g.tensors()) {
    add_bytes(out[t.src], t.dst, t.bytes);
    add_bytes(in[t.dst], t.src, t.bytes);
  }
  auto should_fuse = [&](int i, int j) {
    const std::size_t out_i = out[i].size(), in_j = in[j].size();
    if (out_i >= 2 && in_j >= 2) return false;
    if (out_i == 1 && in_j == 1) return true;
    return (compute[i] <= alpha && out_i == 1) || (compute[j] <= alpha && in_j == 1);
  };
  // j fuses into i: i keeps its id; i's position in a topological order stays valid because every
  // fused edge has out-degree(i) == 1 or in-degree(j) == 1 (no other path i ~> j, Theorem 2).
  auto fuse = [&](int i, int j) {
    remove_node(out[i], j);
    remove_node(in[j], i);
    for (const auto& [y, bytes] : out[j]) {
      remove_node(in[y], j);
      add_bytes(in[y], i, bytes);
      add_bytes(out[i], y, bytes);
    }
    for (const auto& [y, bytes] : in[j]) {
      remove_node(out[y], j);
      add_bytes(out[y], i, bytes);
      add_bytes(in[i], y, bytes);
    }
    Adjacency().swap(out[j]);
    Adjacency().swap(in[j]);
    compute[i] += compute[j];
    alive[j] = 0;
    parent[j] = i;
  };
  const auto topo = g.topological_order();
  for (bool changed = true; changed;) {
    changed = false;
    for (OpId i : topo) {
      if (!alive[i]) continue;
      // Re-read the successor list after each fusion: it changes.
      for (std::size_t k = 0; k < out[i].size();) {
        const int j = out[i][k].first;
        if (should_fuse(i, j)) {
          fuse(i, j);
          changed = true;
          k = 0;
        } else {
          ++k;
        }
      }
    }
  }
  std::vector<int> label(n);
  for (int i = 0; i < n; ++i) {
    int x = i;
    while (parent[x] != x) x = parent[x];
    label[i] = x;
  }
  return build_fused(g, label);
}

double colocation_bandwidth(const Cluster& cluster) {
  const int k = cluster.num_devices();
  if (k <= 1) return std::numeric_limits<double>::infinity();
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (DeviceId a = 0; a < k; ++a)
    for (DeviceId b = 0; b < k; ++b)
      if (a != b) {
        lo = std::min(lo, cluster.bandwidth(a, b));
        hi = std::max(hi, cluster.bandwidth(a, b));
      }
  return cluster.num_servers() <= 1 ? hi : lo;
}

Colocation colocate(const Graph& g, double bandwidth) {
  const auto n = static_cast<int>(g.num_operators());
  // Successors with the summed bytes of the tensors to each.
  std::vector<Adjacency> succ(n);
  for (const Tensor& t : g.tensors()) add_bytes(succ[t.src], t.dst, t.bytes);
  auto comm = [&](double bytes) { return std::isinf(bandwidth) ? 0.0 : bytes / bandwidth; };
  std::vector<double> rank(n, 0.0);
  const auto topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    double best = 0;
    for (const auto& [j, bytes] : succ[*it]) best = std::max(best, rank[j] + comm(bytes));
    rank[*it] = g.op(*it).compute_s + best;
  }
  UnionFind uf(n);
  std::vector<std::uint8_t> grouped(n, 0);
  for (int i = 0; i < n; ++i) {
    if (succ[i].size() < 2) continue;
    int pick = -1;
    double best = -1;
    for (const auto& [j, bytes] : succ[i])  // sorted by id: ties keep the lowest
      if (rank[j] + comm(bytes) > best) {
        best = rank[j] + comm(bytes);
        pick = j;
      }
    uf.join(i, pick);
    grouped[i] = grouped[pick] = 1;
  }
  Colocation c;
  c.group_of.assign(n, -1);
  std::vector<int> id_of_root(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!grouped[i]) continue;
    const int r = uf.find(i);
    if (id_of_root[r] < 0) id_of_root[r] = c.num_groups++;
    c.group_of[i] = id_of_root[r];
  }
  return c;
}

}  // namespace placesim
