// QuickP graph reduction: parallelizable pairs, operator fusion (ICC Algorithm 1), co-location (eq. 7).

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "placement/strategies/quickp/quickp.h"
#include "placement/framework/union_find.h"

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

// A unit of this compute and memory stays within the limits (a hair of slack against rounding).
bool within(const UnitLimits& l, double work, double memory) {
  return work <= l.max_work * (1 + 1e-9) && memory <= l.max_memory * (1 + 1e-12);
}

// The fused graph of a labelling (label = surviving node per operator); a fused operator is
// named after its lowest-id member.
Coarsening build_fused(const Graph& g, const std::vector<int>& label) {
  return contract_groups(
      g, label, [&](const std::vector<OpId>& members) { return g.op(members.front()).name; }, "fused",
      "quickp fused graph");
}

}  // namespace

Coarsening fuse_operators(const Graph& g, double alpha, const UnitLimits& limits) {
  const auto n = static_cast<int>(g.num_operators());
  std::vector<Adjacency> out(n), in(n);
  std::vector<double> compute(n), memory(n);
  std::vector<std::int32_t> cls(n);  // colocation class of each fused operator (-1: none)
  std::vector<std::uint8_t> alive(n, 1);
  int num_alive = n;
  std::vector<int> parent(n);
  for (int i = 0; i < n; ++i) {
    compute[i] = g.op(i).compute_s;
    memory[i] = g.op(i).memory_bytes;
    cls[i] = g.op(i).colocation_class;
    parent[i] = i;
  }
  for (const Tensor& t : g.tensors()) {
    add_bytes(out[t.src], t.dst, t.bytes);
    add_bytes(in[t.dst], t.src, t.bytes);
  }
  auto should_fuse = [&](int i, int j) {
    const std::size_t out_i = out[i].size(), in_j = in[j].size();
    if (out_i >= 2 && in_j >= 2) return false;
    if (num_alive <= limits.min_units || !within(limits, compute[i] + compute[j], memory[i] + memory[j])) return false;
    // With unit limits, never join two colocation classes: joined classes are one unit for P2, and
    // on graphs with classes (msr-fiddle's colorClass) the joins chain until one unit is left.
    if (limits.min_units > 1 && cls[i] >= 0 && cls[j] >= 0 && cls[i] != cls[j]) return false;
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
    memory[i] += memory[j];
    if (cls[i] < 0) cls[i] = cls[j];
    --num_alive;
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

UnitLimits unit_limits(const Graph& g, const Cluster& cluster) {
  UnitLimits l;
  const int k = cluster.num_devices();
  l.min_units = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), g.num_operators()));
  if (k <= 1) return l;
  l.max_memory = std::numeric_limits<double>::infinity();
  for (const Device& d : cluster.devices()) l.max_memory = std::min(l.max_memory, d.memory_bytes);
  l.max_work = g.total_compute() / k;
  return l;
}

Colocation split_groups(const Graph& g, const Colocation& groups, double bandwidth, const UnitLimits& limits,
                        int* splits) {
  const auto n = static_cast<int>(g.num_operators());
  const auto topo = g.topological_order();
  std::vector<int> pos(n);
  for (int q = 0; q < n; ++q) pos[topo[q]] = q;
  // Compute-only head (longest path into i) and rank (from i, p_i included) for the loss of a cut.
  std::vector<double> head(n, 0.0), rank(n, 0.0);
  for (OpId i : topo)
    for (EdgeId e : g.in_edges(i)) head[i] = std::max(head[i], head[g.tensor(e).src] + g.op(g.tensor(e).src).compute_s);
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    double best = 0;
    for (EdgeId e : g.out_edges(*it)) best = std::max(best, rank[g.tensor(e).dst]);
    rank[*it] = g.op(*it).compute_s + best;
  }
  auto comm = [&](double bytes) { return std::isinf(bandwidth) || bandwidth <= 0 ? 0.0 : bytes / bandwidth; };

  std::vector<std::vector<OpId>> members(groups.num_groups);
  for (OpId i : topo)
    if (groups.group_of[i] >= 0) members[groups.group_of[i]].push_back(i);
  Colocation out;
  out.group_of.assign(n, -1);
  std::vector<std::vector<OpId>> pieces;
  int cuts = 0;
  for (const auto& m : members) {
    const int size = static_cast<int>(m.size());
    std::unordered_map<OpId, int> index;
    for (int q = 0; q < size; ++q) index[m[q]] = q;
    // Edges inside the group: (from index, to index, longest path through it once it crosses GPUs).
    struct Inner {
      int a, b;
      double through;
    };
    std::vector<Inner> inner;
    for (int q = 0; q < size; ++q)
      for (EdgeId e : g.out_edges(m[q]))
        if (auto it = index.find(g.tensor(e).dst); it != index.end())
          inner.push_back({q, it->second, head[m[q]] + g.op(m[q]).compute_s + comm(g.tensor(e).bytes) + rank[g.tensor(e).dst]});
    std::sort(inner.begin(), inner.end(), [](const Inner& x, const Inner& y) { return x.a < y.a; });
    int lo = 0;
    while (lo < size) {
      // The longest prefix of m[lo..] within the limits (at least one member: an operator alone
      // is never split).
      double work = 0, memory = 0;
      int hi = lo;
      while (hi < size && within(limits, work + g.op(m[hi]).compute_s, memory + g.op(m[hi]).memory_bytes)) {
        work += g.op(m[hi]).compute_s;
        memory += g.op(m[hi]).memory_bytes;
        ++hi;
      }
      if (hi == size) {
        pieces.emplace_back(m.begin() + lo, m.end());
        break;
      }
      hi = std::max(hi, lo + 1);
      // Cut before index p in (lo, hi]: the cut that lengthens the critical path least (the
      // longest path through an edge it makes cross GPUs); ties: the later cut (fewer pieces).
      using Entry = std::pair<double, int>;  // (through, to index)
      std::priority_queue<Entry> open;
      std::size_t next = std::lower_bound(inner.begin(), inner.end(), lo, [](const Inner& x, int v) { return x.a < v; }) -
                         inner.begin();
      int best_p = hi;
      double best_loss = std::numeric_limits<double>::infinity();
      for (int p = lo + 1; p <= hi; ++p) {
        while (next < inner.size() && inner[next].a < p) {
          open.push({inner[next].through, inner[next].b});
          ++next;
        }
        while (!open.empty() && open.top().second < p) open.pop();
        const double loss = open.empty() ? -std::numeric_limits<double>::infinity() : open.top().first;
        if (loss <= best_loss) {
          best_loss = loss;
          best_p = p;
        }
      }
      pieces.emplace_back(m.begin() + lo, m.begin() + best_p);
      ++cuts;
      lo = best_p;
    }
  }
  // Never fewer units than the limits ask: dissolve the largest pieces into single operators.
  int units = n;
  for (const auto& p : pieces) units -= static_cast<int>(p.size()) - 1;
  std::vector<std::size_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pieces[a].size() > pieces[b].size(); });
  for (std::size_t q = 0; q < order.size() && units < limits.min_units; ++q) {
    units += static_cast<int>(pieces[order[q]].size()) - 1;
    pieces[order[q]].clear();
    ++cuts;
  }
  // Groups numbered in the order of their lowest operator; a piece of one operator is no group.
  std::vector<int> piece_of(n, -1);
  for (std::size_t q = 0; q < pieces.size(); ++q)
    if (pieces[q].size() >= 2)
      for (OpId i : pieces[q]) piece_of[i] = static_cast<int>(q);
  std::vector<int> id(pieces.size(), -1);
  for (int i = 0; i < n; ++i)
    if (piece_of[i] >= 0) {
      if (id[piece_of[i]] < 0) id[piece_of[i]] = out.num_groups++;
      out.group_of[i] = id[piece_of[i]];
    }
  if (splits) *splits = cuts;
  return out;
}

}  // namespace placesim
