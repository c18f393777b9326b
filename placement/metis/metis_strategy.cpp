#include "placement/metis/metis_strategy.h"

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>


namespace placesim {

namespace {

constexpr double kMaxWeight = 1e6;       // the heaviest vertex or edge
constexpr double kMaxTotalWeight = 1e9;  // the sum of one constraint (or of the CSR edge weights)

// Scales non-negative values to METIS integers (see the header): one factor for all, the largest
// value to kMaxWeight unless `total_multiplicity` x the sum would exceed kMaxTotalWeight; every
// result is at least 1.
std::vector<idx_t> scale_weights(std::span<const double> values, double total_multiplicity = 1.0) {
  double max = 0, sum = 0;
  for (double v : values) {
    max = std::max(max, v);
    sum += v;
  }
  const double scale = max > 0 ? std::min(kMaxWeight / max, kMaxTotalWeight / (sum * total_multiplicity)) : 0.0;
  std::vector<idx_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    out[i] = std::max<idx_t>(1, static_cast<idx_t>(std::llround(values[i] * scale)));
  return out;
}

// The METIS input: colocation classes contracted, edges merged and symmetrised.
struct MetisGraph {
  std::vector<idx_t> vertex_of;  // per operator
  std::vector<double> compute, memory;  // per vertex
  std::vector<idx_t> xadj, adjncy, adjwgt;
  idx_t num_vertices() const { return static_cast<idx_t>(compute.size()); }
};

MetisGraph build_metis_graph(const Graph& graph) {
  MetisGraph m;
  const std::size_t n = graph.num_operators();
  m.vertex_of.resize(n);
  std::vector<idx_t> class_vertex(graph.num_colocation_classes(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    const Operator& op = graph.op(static_cast<OpId>(i));
    idx_t v;
    if (op.colocation_class >= 0 && class_vertex[op.colocation_class] >= 0) {
      v = class_vertex[op.colocation_class];
    } else {
      v = static_cast<idx_t>(m.compute.size());
      m.compute.push_back(0);
      m.memory.push_back(0);
      if (op.colocation_class >= 0) class_vertex[op.colocation_class] = v;
    }
    m.vertex_of[i] = v;
    m.compute[v] += op.compute_s;
    m.memory[v] += op.memory_bytes;
  }

  // Undirected edges (low, high, bytes), sorted so that duplicates are adjacent, then merged.
  std::vector<std::tuple<idx_t, idx_t, double>> edges;
  for (const Tensor& t : graph.tensors()) {
    const idx_t a = m.vertex_of[t.src], b = m.vertex_of[t.dst];
    if (a == b || t.bytes <= 0) continue;
    edges.emplace_back(std::min(a, b), std::max(a, b), t.bytes);
  }
  std::sort(edges.begin(), edges.end());
  std::vector<std::tuple<idx_t, idx_t, double>> merged;
  for (const auto& [a, b, bytes] : edges) {
    if (!merged.empty() && std::get<0>(merged.back()) == a && std::get<1>(merged.back()) == b)
      std::get<2>(merged.back()) += bytes;
    else
      merged.emplace_back(a, b, bytes);
  }
  std::vector<double> merged_bytes(merged.size());
  for (std::size_t e = 0; e < merged.size(); ++e) merged_bytes[e] = std::get<2>(merged[e]);
  const std::vector<idx_t> weight = scale_weights(merged_bytes, 2.0);  // CSR stores each edge twice

  const idx_t nv = m.num_vertices();
  m.xadj.assign(nv + 1, 0);
  for (const auto& [a, b, bytes] : merged) {
    ++m.xadj[a + 1];
    ++m.xadj[b + 1];
  }
  std::partial_sum(m.xadj.begin(), m.xadj.end(), m.xadj.begin());
  // One spare slot: METIS must never see a null adjacency array, even for a graph without edges.
  m.adjncy.assign(m.xadj[nv] + 1, 0);
  m.adjwgt.assign(m.xadj[nv] + 1, 1);
  std::vector<idx_t> fill(m.xadj.begin(), m.xadj.end() - 1);
  for (std::size_t e = 0; e < merged.size(); ++e) {
    const auto [a, b, bytes] = merged[e];
    m.adjncy[fill[a]] = b;
    m.adjwgt[fill[a]++] = weight[e];
    m.adjncy[fill[b]] = a;
    m.adjwgt[fill[b]++] = weight[e];
  }
  return m;
}

struct Partition {
  std::vector<idx_t> part;  // per METIS vertex
  idx_t edge_cut = 0;       // METIS's objective, in scaled units
  std::string method;
};

Partition run_metis(MetisGraph& m, const MetisConfig& config, idx_t nparts, bool recursive) {
  idx_t nv = m.num_vertices();
  idx_t ncon = config.balance_memory ? 2 : 1;
  std::vector<idx_t> vwgt;
  {
    const std::vector<idx_t> c = scale_weights(m.compute);
    if (ncon == 1) {
      vwgt = c;
    } else {
      const std::vector<idx_t> mem = scale_weights(m.memory);
      vwgt.resize(2 * c.size());
      for (std::size_t v = 0; v < c.size(); ++v) {
        vwgt[2 * v] = c[v];
        vwgt[2 * v + 1] = mem[v];
      }
    }
  }
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_UFACTOR] = config.ufactor;
  options[METIS_OPTION_SEED] = config.seed;
  options[METIS_OPTION_NCUTS] = config.ncuts;
  options[METIS_OPTION_NUMBERING] = 0;
  Partition p;
  p.part.assign(nv, 0);
  p.method = recursive ? "recursive" : "kway";
  const int status = recursive
                         ? METIS_PartGraphRecursive(&nv, &ncon, m.xadj.data(), m.adjncy.data(), vwgt.data(), nullptr,
                                                    m.adjwgt.data(), &nparts, nullptr, nullptr, options, &p.edge_cut,
                                                    p.part.data())
                         : METIS_PartGraphKway(&nv, &ncon, m.xadj.data(), m.adjncy.data(), vwgt.data(), nullptr,
                                               m.adjwgt.data(), &nparts, nullptr, nullptr, options, &p.edge_cut,
                                               p.part.data());
  if (status != METIS_OK)
    throw std::runtime_error(fmt::format("METIS_PartGraph{} failed with status {} on {} vertices, {} parts",
                                         recursive ? "Recursive" : "Kway", status, nv, nparts));
  return p;
}

// Greedy start for k > 8 (see the header).
std::vector<DeviceId> greedy_mapping(const PartTraffic& traffic, const Cluster& cluster) {
  const int k = traffic.parts;
  struct Pair {
    double weight;
    int a, b;
  };
  std::vector<Pair> part_pairs, gpu_pairs;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b) {
      part_pairs.push_back({traffic.bytes[a * k + b] + traffic.bytes[b * k + a], a, b});
      gpu_pairs.push_back({std::min(cluster.bandwidth(a, b), cluster.bandwidth(b, a)), a, b});
    }
  const auto heavier = [](const Pair& x, const Pair& y) {
    return std::tie(y.weight, x.a, x.b) < std::tie(x.weight, y.a, y.b);
  };
  std::stable_sort(part_pairs.begin(), part_pairs.end(), heavier);
  std::stable_sort(gpu_pairs.begin(), gpu_pairs.end(), heavier);

  std::vector<DeviceId> device(k, -1);
  std::vector<bool> used(k, false);
  const auto fastest_free_partner = [&](DeviceId g) {
    DeviceId best = -1;
    for (DeviceId h = 0; h < k; ++h)
      if (!used[h] && (best < 0 || std::min(cluster.bandwidth(g, h), cluster.bandwidth(h, g)) >
                                       std::min(cluster.bandwidth(g, best), cluster.bandwidth(best, g))))
        best = h;
    return best;
  };
  for (const Pair& pp : part_pairs) {
    if (pp.weight <= 0) break;
    if (device[pp.a] < 0 && device[pp.b] < 0) {
      for (const Pair& gp : gpu_pairs)
        if (!used[gp.a] && !used[gp.b]) {
          device[pp.a] = gp.a;
          device[pp.b] = gp.b;
          used[gp.a] = used[gp.b] = true;
          break;
        }
    } else if (device[pp.a] < 0 || device[pp.b] < 0) {
      const int lone = device[pp.a] < 0 ? pp.a : pp.b;
      const DeviceId h = fastest_free_partner(device[lone == pp.a ? pp.b : pp.a]);
      device[lone] = h;
      used[h] = true;
    }
  }
  for (int p = 0; p < k; ++p)
    if (device[p] < 0) {
      device[p] = static_cast<DeviceId>(std::find(used.begin(), used.end(), false) - used.begin());
      used[device[p]] = true;
    }
  return device;
}

}  // namespace

double mapping_cost(const PartTraffic& traffic, std::span<const DeviceId> device_of_part, const Cluster& cluster) {
  const int k = traffic.parts;
  double cost = 0;
  for (int p = 0; p < k; ++p)
    for (int q = 0; q < k; ++q) {
      const std::size_t pq = static_cast<std::size_t>(p) * k + q;
      if (p == q || traffic.bytes[pq] <= 0) continue;
      const DeviceId a = device_of_part[p], b = device_of_part[q];
      if (a == b) continue;
      cost += traffic.tensors[pq] * cluster.latency(a, b) + traffic.bytes[pq] / cluster.bandwidth(a, b);
    }
  return cost;
}

std::vector<DeviceId> map_parts_to_devices(const PartTraffic& traffic, const Cluster& cluster) {
  const int k = traffic.parts;
  if (k != cluster.num_devices())
    throw std::invalid_argument(fmt::format("map_parts_to_devices: {} parts for {} GPUs", k, cluster.num_devices()));
  std::vector<DeviceId> best(k);
  std::iota(best.begin(), best.end(), 0);
  double best_cost = mapping_cost(traffic, best, cluster);
  if (k <= 8) {
    std::vector<DeviceId> perm = best;
    while (std::next_permutation(perm.begin(), perm.end())) {
      const double c = mapping_cost(traffic, perm, cluster);
      if (c < best_cost) {
        best_cost = c;
        best = perm;
      }
    }
    return best;
  }
  std::vector<DeviceId> greedy = greedy_mapping(traffic, cluster);
  if (const double c = mapping_cost(traffic, greedy, cluster); c < best_cost) {
    best_cost = c;
    best = std::move(greedy);
  }
  // Pairwise swaps, first improvement, until none helps (bounded to keep large k cheap).
  for (int round = 0; round < 4 * k; ++round) {
    bool improved = false;
    for (int p = 0; p < k && !improved; ++p)
      for (int q = p + 1; q < k && !improved; ++q) {
        std::swap(best[p], best[q]);
        const double c = mapping_cost(traffic, best, cluster);
        if (c < best_cost) {
          best_cost = c;
          improved = true;
        } else {
          std::swap(best[p], best[q]);
        }
      }
    if (!improved) break;
  }
  return best;
}

PlacementResult MetisStrategy::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  const int k = cluster.num_devices();
  PlacementResult r;
  r.placement.assign(graph.num_operators(), 0);
  if (graph.num_operators() == 0) return r;

  MetisGraph m = build_metis_graph(graph);
  const idx_t nv = m.num_vertices();
  Partition part;
  if (k == 1) {
    part.part.assign(nv, 0);
    part.method = "single GPU";
  } else if (nv <= k) {
    part.part.resize(nv);
    std::iota(part.part.begin(), part.part.end(), 0);
    part.method = "one vertex per part";
  } else if (config_.method == MetisConfig::Method::Best) {
    part = run_metis(m, config_, k, false);
    Partition rec = run_metis(m, config_, k, true);
    if (rec.edge_cut < part.edge_cut) part = std::move(rec);
  } else {
    part = run_metis(m, config_, k, config_.method == MetisConfig::Method::Recursive);
  }

  PartTraffic traffic;
  traffic.parts = k;
  traffic.bytes.assign(static_cast<std::size_t>(k) * k, 0);
  traffic.tensors.assign(static_cast<std::size_t>(k) * k, 0);
  for (const Tensor& t : graph.tensors()) {
    const idx_t p = part.part[m.vertex_of[t.src]], q = part.part[m.vertex_of[t.dst]];
    if (p == q || t.bytes <= 0) continue;
    traffic.bytes[static_cast<std::size_t>(p) * k + q] += t.bytes;
    traffic.tensors[static_cast<std::size_t>(p) * k + q] += 1;
  }
  const std::vector<DeviceId> device_of_part = map_parts_to_devices(traffic, cluster);

  std::vector<double> gpu_compute(k, 0), gpu_memory(k, 0);
  for (std::size_t i = 0; i < graph.num_operators(); ++i) {
    const DeviceId d = device_of_part[part.part[m.vertex_of[i]]];
    r.placement[i] = d;
    gpu_compute[d] += graph.op(static_cast<OpId>(i)).compute_s;
    gpu_memory[d] += graph.op(static_cast<OpId>(i)).memory_bytes;
  }
  double cut_bytes = 0;
  for (const Tensor& t : graph.tensors())
    if (r.placement[t.src] != r.placement[t.dst]) cut_bytes += t.bytes;
  const double mean = graph.total_compute() / k;
  r.report["method"] = part.method;
  r.report["metis_vertices"] = nv;
  r.report["metis_edge_cut"] = part.edge_cut;
  r.report["edge_cut_bytes"] = cut_bytes;
  r.report["gpu_compute_s"] = gpu_compute;
  r.report["gpu_memory_bytes"] = gpu_memory;
  r.report["compute_imbalance"] = mean > 0 ? *std::max_element(gpu_compute.begin(), gpu_compute.end()) / mean : 1.0;
  r.report["mapping_transfer_s"] = mapping_cost(traffic, device_of_part, cluster);
  return r;
}

OptionSchema<MetisConfig> metis_schema() {
  OptionSchema<MetisConfig> s;
  s.choice<MetisConfig::Method>("method", &MetisConfig::method, kMetisMethodNames,
                                "kway, recursive, or best (both, keep the smaller cut)", "kway");
  s.count("ufactor", &MetisConfig::ufactor, "allowed imbalance, heaviest part <= (1 + ufactor/1000) x average", 1,
          1000, "100");
  s.count("seed", &MetisConfig::seed, "METIS random seed", 0, std::numeric_limits<std::int32_t>::max(), "7");
  s.count("ncuts", &MetisConfig::ncuts, "partitionings METIS tries, best kept", 1, 100, "4");
  s.flag("balance_memory", &MetisConfig::balance_memory, "also balance memory bytes (second METIS constraint)");
  return s;
}

StrategyInfo metis_strategy_info() {
  return strategy_info<MetisStrategy>(
      "metis", "METIS k-way partition (compute-balanced, min tensor-byte cut), parts mapped so heavy traffic uses fast links",
      metis_schema());
}

}  // namespace placesim
