// Baechi's shared machinery: placement groups (colocation + co-placement), the memory ledger, and
// m-TOPO, which needs nothing else.
#include <algorithm>
#include <boost/pending/disjoint_sets.hpp>

#include "placement/strategies/baechi/baechi.h"

namespace placesim::baechi {

Groups make_groups(const Graph& graph, bool coplace, double coplace_limit_bytes) {
  const auto n = static_cast<OpId>(graph.num_operators());
  boost::disjoint_sets_with_storage<> sets(static_cast<std::size_t>(n));
  std::vector<OpId> class_first(graph.num_colocation_classes(), -1);
  for (OpId op = 0; op < n; ++op) {
    const int c = graph.op(op).colocation_class;
    if (c < 0) continue;
    if (class_first[c] < 0)
      class_first[c] = op;
    else
      sets.union_set(class_first[c], op);
  }
  Groups groups;
  if (coplace) {
    // Memory per set, so that co-placement (a heuristic) never makes a group no GPU can hold:
    // on a layer chain "only consumer" links every layer, and with colocation classes that pair
    // each layer's forward and backward operators the whole model became one group.
    std::vector<double> set_bytes(static_cast<std::size_t>(n), 0.0);
    for (OpId op = 0; op < n; ++op) set_bytes[sets.find_set(op)] += graph.op(op).memory_bytes;
    for (OpId op = 0; op < n; ++op) {
      // Exactly one distinct consumer (parallel tensors to it count once, as in Baechi's DiGraph).
      OpId successor = -1;
      bool single = true;
      for (EdgeId e : graph.out_edges(op)) {
        const OpId dst = graph.tensor(e).dst;
        if (successor < 0) {
          successor = dst;
        } else if (dst != successor) {
          single = false;
          break;
        }
      }
      if (successor < 0 || !single) continue;
      const auto a = sets.find_set(op), b = sets.find_set(successor);
      if (a == b) continue;
      const double merged = set_bytes[a] + set_bytes[b];
      if (merged > coplace_limit_bytes) {
        ++groups.coplace_skipped_for_memory;
        continue;
      }
      sets.link(a, b);
      set_bytes[sets.find_set(a)] = merged;
      ++groups.coplaced_merges;
    }
  }
  // Dense numbering by first member in topological order, so groups are numbered deterministically.
  std::vector<std::int32_t> of_root(n, -1);
  groups.of_op.assign(n, -1);
  for (OpId op : graph.topological_order()) {
    const auto root = static_cast<OpId>(sets.find_set(op));
    if (of_root[root] < 0) {
      of_root[root] = groups.count();
      groups.size.push_back(0);
      groups.memory_bytes.push_back(0.0);
    }
    const std::int32_t g = of_root[root];
    groups.of_op[op] = g;
    ++groups.size[g];
    groups.memory_bytes[g] += graph.op(op).memory_bytes;
  }
  return groups;
}

MemoryLedger::MemoryLedger(const Cluster& cluster, const Groups& groups, double memory_fraction)
    : groups_(groups), used_(cluster.num_devices(), 0.0), group_device_(groups.count(), -1) {
  for (const Device& d : cluster.devices()) budget_.push_back(d.memory_bytes * memory_fraction);
}

void MemoryLedger::place(std::int32_t group, DeviceId d) {
  group_device_[group] = d;
  used_[d] += groups_.memory_bytes[group];
}

DeviceId MemoryLedger::most_free() const {
  DeviceId best = 0;
  for (DeviceId d = 1; d < static_cast<DeviceId>(used_.size()); ++d)
    if (budget_[d] - used_[d] > budget_[best] - used_[best]) best = d;
  return best;
}

TopoPlacement topo_placement(const Graph& graph, const Cluster& cluster, const Groups& groups,
                             double memory_fraction, bool uniform) {
  const int gpus = cluster.num_devices();
  MemoryLedger ledger(cluster, groups, memory_fraction);
  TopoPlacement out;
  out.fill_limit.assign(ledger.budget().begin(), ledger.budget().end());
  if (uniform) {
    const double largest = groups.count() ? *std::max_element(groups.memory_bytes.begin(), groups.memory_bytes.end()) : 0;
    const double share = graph.total_memory() / gpus + largest;
    for (double& limit : out.fill_limit) limit = std::min(limit, share);
  }
  const auto fits_limit = [&](std::int32_t g, DeviceId d) {
    return ledger.used()[d] + groups.memory_bytes[g] <= out.fill_limit[d];
  };
  out.placement.assign(graph.num_operators(), 0);
  DeviceId current = 0;
  for (OpId op : graph.topological_order()) {
    const std::int32_t g = groups.of_op[op];
    if (ledger.device_of_group(g) < 0) {
      while (current + 1 < gpus && !fits_limit(g, current)) ++current;
      if (fits_limit(g, current)) {
        ledger.place(g, current);
      } else {
        ledger.place(g, ledger.most_free());
        ++out.memory_fallbacks;
      }
    }
    out.placement[op] = ledger.device_of_group(g);
  }
  out.device_memory.assign(ledger.used().begin(), ledger.used().end());
  return out;
}

}  // namespace placesim::baechi
