#pragma once
// Graphs, placements and clusters with contention in them, shared by the fabric cross-checks
// (test_topologies.cpp, test_flow_engine.cpp) and the cost model's tests (test_cost_model.cpp).
#include <algorithm>
#include <fmt/format.h>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"
#include "topologies/registry.h"

namespace placesim::testutil {

// A random DAG with heavy enough tensors that transfers overlap and share links.
inline Graph random_dag(std::mt19937& rng, int n) {
  Graph g;
  std::uniform_real_distribution<double> compute(1e-6, 50e-6), bytes(1e3, 4e6);
  for (int i = 0; i < n; ++i) g.add_operator({"op" + std::to_string(i), "op", (rng() % 10 == 0) ? 0.0 : compute(rng), 1e6});
  for (int i = 1; i < n; ++i) {
    const int inputs = 1 + static_cast<int>(rng() % 3);
    std::vector<int> used;
    for (int k = 0; k < inputs; ++k) {
      const int src = static_cast<int>(rng() % i);
      if (std::find(used.begin(), used.end(), src) != used.end()) continue;
      used.push_back(src);
      g.add_tensor(src, i, (rng() % 8 == 0) ? 0.0 : bytes(rng));
    }
  }
  g.finalize("random");
  return g;
}

// Mostly a random GPU, sometimes an input's: many flows, on many routes at once.
inline std::vector<DeviceId> random_placement(std::mt19937& rng, const Graph& g, const Cluster& c) {
  std::vector<DeviceId> p(g.num_operators(), 0);
  for (OpId i = 0; i < static_cast<OpId>(p.size()); ++i) {
    auto in = g.in_edges(i);
    p[i] = (in.empty() || rng() % 4 != 0) ? static_cast<DeviceId>(rng() % c.num_devices()) : p[g.tensor(in[0]).src];
  }
  return p;
}

// Every registered fabric at its defaults and with each key set to its documented example (the
// fabric-wide cross-checks of the evaluator's view, the flow engine and the cost model all use it).
// What a fabric needs besides its defaults: spine-leaf a size; a fat-tree spanning two pods; a
// multi-NIC core only with pods; a rail-optimized fabric two units (spines), and pods for its core.
inline std::vector<std::pair<std::string, std::string>> registry_variants() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const TopologyType& t : topology_registry()) {
    auto base = [&](const std::string& key) -> std::string {
      if (t.name == "spine-leaf" && key != "servers" && key != "leaves") return "servers: 4, ";
      if (t.name == "fat-tree" && key == "nics_per_server") return "servers: 6, gpus_per_server: 2, ";
      if (t.name == "fat-tree" && key != "servers") return "servers: 6, gpus_per_server: 1, ";
      if (t.name == "multi-nic" && key.rfind("core_", 0) == 0) return "servers_per_pod: 2, ";
      if (t.name == "rail-optimized" && (key.rfind("core_", 0) == 0 || key == "units_per_pod"))
        return key == "units_per_pod" ? "servers_per_unit: 2, " : "servers_per_unit: 1, units_per_pod: 2, ";
      if (t.name == "rail-optimized" && key != "servers_per_unit") return "servers_per_unit: 2, ";
      return "";
    };
    out.emplace_back(t.name, fmt::format("{{type: {}, {}}}", t.name, base("")));
    for (const OptionDoc& o : t.options)
      out.emplace_back(t.name, fmt::format("{{type: {}, {}{}: {}}}", t.name, base(o.key), o.key, o.example));
  }
  return out;
}

}  // namespace placesim::testutil
