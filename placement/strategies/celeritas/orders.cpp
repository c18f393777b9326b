// Celeritas's orders: tlevel / blevel / cpath, DFS-TOPO and CPD-TOPO (§4.2.2, §5.1.3).
#include <algorithm>

#include "placement/strategies/celeritas/celeritas.h"

namespace placesim::celeritas {

MeanCommCost::MeanCommCost(const Cluster& cluster) {
  // Pairs without any bandwidth are left out: they would make every cost infinite.
  int pairs = 0;
  for (DeviceId a = 0; a < cluster.num_devices(); ++a)
    for (DeviceId b = 0; b < cluster.num_devices(); ++b) {
      if (a == b || !cluster.reachable(a, b)) continue;
      latency_s += cluster.latency(a, b);
      inv_bandwidth += 1.0 / cluster.bandwidth(a, b);
      ++pairs;
    }
  if (pairs > 0) {
    latency_s /= pairs;
    inv_bandwidth /= pairs;
  }
}

Levels compute_levels(const Graph& graph, const MeanCommCost& comm) {
  const std::size_t n = graph.num_operators();
  Levels lv;
  lv.tlevel.assign(n, 0.0);
  lv.blevel.assign(n, 0.0);
  lv.cpath.assign(n, 0.0);
  const auto topo = graph.topological_order();
  for (OpId v : topo)
    for (EdgeId e : graph.in_edges(v)) {
      const Tensor& t = graph.tensor(e);
      lv.tlevel[v] = std::max(lv.tlevel[v], lv.tlevel[t.src] + graph.op(t.src).compute_s + comm(t.bytes));
    }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId v = *it;
    double below = 0;
    for (EdgeId e : graph.out_edges(v)) {
      const Tensor& t = graph.tensor(e);
      below = std::max(below, lv.blevel[t.dst] + comm(t.bytes));
    }
    lv.blevel[v] = graph.op(v).compute_s + below;
  }
  for (std::size_t v = 0; v < n; ++v) lv.cpath[v] = lv.tlevel[v] + lv.blevel[v];
  return lv;
}

std::vector<OpId> keyed_dfs_topo_order(const Graph& graph, std::span<const double> key) {
  const auto n = static_cast<OpId>(graph.num_operators());
  // Pushed in this order, so the last pushed -- the largest key, then the lowest id -- is on top.
  const auto push_order = [&](OpId a, OpId b) { return key[a] != key[b] ? key[a] < key[b] : a > b; };
  std::vector<std::int32_t> pending(n);
  std::vector<OpId> stack, ready, order;
  order.reserve(n);
  for (OpId v = 0; v < n; ++v) {
    pending[v] = static_cast<std::int32_t>(graph.in_edges(v).size());
    if (pending[v] == 0) stack.push_back(v);
  }
  std::sort(stack.begin(), stack.end(), push_order);
  while (!stack.empty()) {
    const OpId v = stack.back();
    stack.pop_back();
    order.push_back(v);
    ready.clear();
    for (EdgeId e : graph.out_edges(v)) {
      const OpId child = graph.tensor(e).dst;
      if (--pending[child] == 0) ready.push_back(child);  // parallel tensors: ready after the last one
    }
    std::sort(ready.begin(), ready.end(), push_order);
    stack.insert(stack.end(), ready.begin(), ready.end());
  }
  return order;
}

std::vector<OpId> dfs_topo_order(const Graph& graph) {
  const std::vector<double> none(graph.num_operators(), 0.0);
  return keyed_dfs_topo_order(graph, none);
}

std::vector<OpId> cpd_topo_order(const Graph& graph, const MeanCommCost& comm) {
  return keyed_dfs_topo_order(graph, compute_levels(graph, comm).cpath);
}

}  // namespace placesim::celeritas
