// Optimal operation fusion (§5.1.3, eqs. 4-6): Kernighan's dynamic program over the CPD-TOPO
// sequence, and the coarse graph of its clusters.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "placement/strategies/celeritas/celeritas.h"

namespace placesim::celeritas {

Fusion optimal_fusion(const Graph& graph, std::span<const OpId> sequence, const MeanCommCost& comm,
                      const FusionConfig& config) {
  const auto n = static_cast<std::int32_t>(graph.num_operators());
  if (static_cast<std::int32_t>(sequence.size()) != n)
    throw std::invalid_argument("optimal_fusion: the sequence must list every operator once");
  if (config.exploration_range < 1) throw std::invalid_argument("optimal_fusion: the exploration range must be >= 1");
  std::vector<std::int32_t> pos(n, -1);
  for (std::int32_t k = 0; k < n; ++k) pos[sequence[k]] = k;

  // Per position k: the positions its tensors go to (sorted) and the suffix sums of their costs,
  // so "cost of v_k's tensors to positions >= j" is one binary search.
  std::vector<std::int32_t> first(n + 1, 0);
  for (std::int32_t k = 0; k < n; ++k) first[k + 1] = first[k] + static_cast<std::int32_t>(graph.out_edges(sequence[k]).size());
  std::vector<std::pair<std::int32_t, double>> out(first[n]);
  for (std::int32_t k = 0; k < n; ++k) {
    auto* row = out.data() + first[k];
    std::int32_t m = 0;
    for (EdgeId e : graph.out_edges(sequence[k])) {
      const Tensor& t = graph.tensor(e);
      if (pos[t.dst] <= k) throw std::invalid_argument("optimal_fusion: the sequence is not a topological order");
      row[m++] = {pos[t.dst], comm(t.bytes)};
    }
    std::sort(row, row + m, [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::int32_t i = m - 2; i >= 0; --i) row[i].second += row[i + 1].second;  // suffix sums
  }
  const auto cost_from_to_at_least = [&](std::int32_t k, std::int32_t j) {
    const auto* begin = out.data() + first[k];
    const auto* end = out.data() + first[k + 1];
    const auto* it = std::lower_bound(begin, end, j, [](const auto& e, std::int32_t p) { return e.first < p; });
    return it == end ? 0.0 : it->second;
  };

  // S[j]: the least cut cost of v_1..v_j split into clusters (breakpoint before position j);
  // P[j]: where the last of those clusters starts.
  std::vector<double> S(n + 1, 0.0);
  std::vector<std::int32_t> P(n + 1, 0);
  for (std::int32_t j = 1; j <= n; ++j) {
    double best = std::numeric_limits<double>::infinity();
    std::int32_t best_i = j - 1;
    double cost = 0, memory = 0;  // cost(i, j) and the memory of v_i..v_{j-1}, grown as i goes down
    std::int32_t cluster_class = -1;  // the one colocation class v_i..v_{j-1} may hold
    const std::int32_t lowest = std::max(0, j - config.exploration_range);
    for (std::int32_t i = j - 1; i >= lowest; --i) {
      const Operator& op = graph.op(sequence[i]);
      memory += op.memory_bytes;
      if (i < j - 1 && memory > config.cluster_memory_bytes) break;  // a lone operator is always allowed
      if (op.colocation_class >= 0) {
        if (cluster_class >= 0 && op.colocation_class != cluster_class) break;
        cluster_class = op.colocation_class;
      }
      cost += cost_from_to_at_least(i, j);  // eq. 5, built from the other end
      const double candidate = S[i] + cost;
      if (candidate <= best) {  // ties: the longer cluster
        best = candidate;
        best_i = i;
      }
    }
    S[j] = best;
    P[j] = best_i;
  }

  Fusion f;
  for (std::int32_t j = n; j > 0; j = P[j]) f.starts.push_back(P[j]);
  std::reverse(f.starts.begin(), f.starts.end());
  f.cluster_of.assign(n, 0);
  for (std::int32_t c = 0; c < f.num_clusters(); ++c) {
    const std::int32_t end = c + 1 < f.num_clusters() ? f.starts[c + 1] : n;
    for (std::int32_t k = f.starts[c]; k < end; ++k) f.cluster_of[sequence[k]] = c;
  }
  f.cut_cost = S[n];
  return f;
}

double fusion_cut_cost(const Graph& graph, std::span<const std::int32_t> cluster_of, const MeanCommCost& comm) {
  double total = 0;
  for (const Tensor& t : graph.tensors())
    if (cluster_of[t.src] != cluster_of[t.dst]) total += comm(t.bytes);
  return total;
}

Coarsening contract_fusion(const Graph& graph, const Fusion& fusion) {
  const std::vector<int> label(fusion.cluster_of.begin(), fusion.cluster_of.end());
  // Runs of a topological order: acyclic by Lemma 2, as contract_groups requires.
  return contract_groups(
      graph, label, [&](const std::vector<OpId>& members) { return graph.op(members.front()).name; }, "cluster",
      "celeritas coarse graph");
}

}  // namespace placesim::celeritas
