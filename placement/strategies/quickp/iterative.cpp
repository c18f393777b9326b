// QuickP thesis Algorithm 2 (section 4.3): iterative fusion and co-location, then WCC expansion.

#include <algorithm>
#include <cmath>
#include <limits>

#include "placement/strategies/quickp/quickp.h"

namespace placesim {

namespace {

// Successor and predecessor sets of a graph under merging (neighbour ids, sorted).
struct MergeGraph {
  std::vector<std::vector<int>> out, in;
  std::vector<double> compute;
  std::vector<int> parent;  // j merged into parent[j]; roots are alive

  explicit MergeGraph(const Graph& g) : out(g.num_operators()), in(g.num_operators()), compute(g.num_operators()),
                                        parent(g.num_operators()) {
    for (std::size_t i = 0; i < g.num_operators(); ++i) {
      compute[i] = g.op(static_cast<OpId>(i)).compute_s;
      parent[i] = static_cast<int>(i);
    }
    for (const Tensor& t : g.tensors()) {
      insert(out[t.src], t.dst);
      insert(in[t.dst], t.src);
    }
  }
  static void insert(std::vector<int>& v, int x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it == v.end() || *it != x) v.insert(it, x);
  }
  static void erase(std::vector<int>& v, int x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it != v.end() && *it == x) v.erase(it);
  }
  // Is there a path i ~> j other than the edge (i, j)? Merging j into i would then close a cycle.
  bool other_path(int i, int j, std::vector<int>& stack, std::vector<std::uint8_t>& seen) const {
    std::fill(seen.begin(), seen.end(), 0);
    stack.clear();
    for (int y : out[i])
      if (y != j) {
        stack.push_back(y);
        seen[y] = 1;
      }
    while (!stack.empty()) {
      const int x = stack.back();
      stack.pop_back();
      if (x == j) return true;
      for (int y : out[x])
        if (!seen[y]) {
          seen[y] = 1;
          stack.push_back(y);
        }
    }
    return false;
  }
  void merge(int i, int j) {  // j into i
    erase(out[i], j);
    erase(in[j], i);
    for (int y : out[j]) {
      erase(in[y], j);
      insert(in[y], i);
      insert(out[i], y);
    }
    for (int y : in[j]) {
      erase(out[y], j);
      insert(out[y], i);
      insert(in[i], y);
    }
    std::vector<int>().swap(out[j]);
    std::vector<int>().swap(in[j]);
    compute[i] += compute[j];
    parent[j] = i;
  }
  int root(int x) const {
    while (parent[x] != x) x = parent[x];
    return x;
  }
};

// fine -> coarse of `second` after `first`.
Coarsening compose(const Coarsening& first, Coarsening second) {
  std::vector<OpId> group_of(first.group_of.size());
  for (std::size_t i = 0; i < group_of.size(); ++i) group_of[i] = second.group_of[first.group_of[i]];
  second.group_of = std::move(group_of);
  return second;
}

Coarsening identity(const Graph& g) {
  Coarsening c;
  c.coarse = g;
  c.group_of.resize(g.num_operators());
  for (std::size_t i = 0; i < g.num_operators(); ++i) c.group_of[i] = static_cast<OpId>(i);
  return c;
}

}  // namespace

Coarsening fuse_within_groups(const Graph& g, const Colocation& groups, double alpha, int* fused_edges) {
  const auto n = static_cast<int>(g.num_operators());
  MergeGraph mg(g);
  std::vector<int> stack;
  std::vector<std::uint8_t> seen(n);
  int fused = 0;
  const auto topo = g.topological_order();
  // Group of a (possibly merged) node: merging happens only inside a group, so a root keeps the
  // group of its original operator.
  auto group = [&](int x) { return groups.group_of[x]; };
  for (int grp = 0; grp < groups.num_groups; ++grp) {
    // Edges of the group in a fixed order (source in topological order, then destination id); an
    // edge is re-read from the current graph after every merge until none fuses.
    for (bool changed = true; changed;) {
      changed = false;
      for (OpId i0 : topo) {
        if (group(i0) != grp || mg.parent[i0] != i0) continue;
        for (std::size_t k = 0; k < mg.out[i0].size();) {
          const int i = i0, j = mg.out[i][k];
          if (group(j) != grp) {
            ++k;
            continue;
          }
          const bool succ_in_group =
              std::all_of(mg.out[i].begin(), mg.out[i].end(), [&](int y) { return group(y) == grp; });
          if ((succ_in_group || mg.compute[j] < alpha) && !mg.other_path(i, j, stack, seen)) {
            mg.merge(i, j);
            ++fused;
            changed = true;
            k = 0;
          } else {
            ++k;
          }
        }
      }
    }
  }
  if (fused_edges) *fused_edges = fused;
  std::vector<int> label(n);
  for (int i = 0; i < n; ++i) label[i] = mg.root(i);
  return contract_groups(
      g, label, [&](const std::vector<OpId>& members) { return g.op(members.front()).name; }, "fused",
      "quickp fused graph");
}

Colocation expand_groups(const Graph& g, const Colocation& groups, double beta, int* joined) {
  Colocation out = groups;
  int count = 0;
  for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) {
    if (groups.group_of[i] >= 0 || !(g.op(i).compute_s < beta)) continue;
    // Join the neighbouring group joined by the most bytes (ties: the lower group id), which
    // saves the most communication; neighbours are judged by the groups before expansion.
    std::vector<double> bytes_to(groups.num_groups, 0.0);
    bool any = false;
    for (EdgeId e : g.out_edges(i))
      if (const int grp = groups.group_of[g.tensor(e).dst]; grp >= 0) bytes_to[grp] += g.tensor(e).bytes, any = true;
    for (EdgeId e : g.in_edges(i))
      if (const int grp = groups.group_of[g.tensor(e).src]; grp >= 0) bytes_to[grp] += g.tensor(e).bytes, any = true;
    if (!any) continue;
    int best = -1;
    for (int grp = 0; grp < groups.num_groups; ++grp) {
      const bool neighbour = std::any_of(g.out_edges(i).begin(), g.out_edges(i).end(),
                                         [&](EdgeId e) { return groups.group_of[g.tensor(e).dst] == grp; }) ||
                             std::any_of(g.in_edges(i).begin(), g.in_edges(i).end(),
                                         [&](EdgeId e) { return groups.group_of[g.tensor(e).src] == grp; });
      if (neighbour && (best < 0 || bytes_to[grp] > bytes_to[best])) best = grp;
    }
    out.group_of[i] = best;
    ++count;
  }
  if (joined) *joined = count;
  return out;
}

IterativeReduction iterative_fusion_colocation(const Graph& g, double alpha, double beta, double bandwidth,
                                               const UnitLimits& limits) {
  IterativeReduction r;
  r.fused = identity(g);
  int cuts = 0;
  for (;;) {
    ++r.rounds;
    r.fused = compose(r.fused, fuse_operators(r.fused.coarse, alpha, limits));
    r.groups = split_groups(r.fused.coarse, colocate(r.fused.coarse, bandwidth), bandwidth, limits, &cuts);
    r.splits += cuts;
    int fused = 0;
    Coarsening within = fuse_within_groups(r.fused.coarse, r.groups, alpha, &fused);
    if (fused == 0) break;
    r.fused = compose(r.fused, std::move(within));
  }
  r.groups = split_groups(r.fused.coarse, expand_groups(r.fused.coarse, r.groups, beta, &r.expanded), bandwidth, limits,
                          &cuts);
  r.splits += cuts;
  return r;
}

}  // namespace placesim
