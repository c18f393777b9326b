#include "placement/strategies/metis/metis_strategy.h"

#include <metis.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>


namespace placesim {

namespace {

constexpr double kMaxWeight = 1e6;       // the heaviest vertex or edge
constexpr double kMaxTotalWeight = 1e9;  // the sum of one constraint (or of the CSR edge weights)
constexpr int kSwapPolishMaxGpus = 32;   // pairwise-swap polish of the hierarchical mapping up to here

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

// The partition `config.method` asks for (kway, recursive, or the better of the two by edge cut).
Partition partition(MetisGraph& m, const MetisConfig& config, idx_t k) {
  if (k == 1) {
    Partition p;
    p.part.assign(m.num_vertices(), 0);
    p.method = "one part";
    return p;
  }
  if (m.num_vertices() <= k) {
    Partition p;
    p.part.resize(m.num_vertices());
    std::iota(p.part.begin(), p.part.end(), 0);
    p.method = "one vertex per part";
    return p;
  }
  if (config.method != MetisConfig::Method::Best)
    return run_metis(m, config, k, config.method == MetisConfig::Method::Recursive);
  Partition p = run_metis(m, config, k, false);
  Partition rec = run_metis(m, config, k, true);
  return rec.edge_cut < p.edge_cut ? rec : p;
}

// The subgraph of the vertices in `keep` (renumbered in that order), edges to the others dropped.
MetisGraph induced_subgraph(const MetisGraph& m, std::span<const idx_t> keep) {
  std::vector<idx_t> index(m.num_vertices(), -1);
  MetisGraph sub;
  for (std::size_t j = 0; j < keep.size(); ++j) {
    index[keep[j]] = static_cast<idx_t>(j);
    sub.compute.push_back(m.compute[keep[j]]);
    sub.memory.push_back(m.memory[keep[j]]);
  }
  sub.xadj.push_back(0);
  for (idx_t v : keep) {
    for (idx_t e = m.xadj[v]; e < m.xadj[v + 1]; ++e)
      if (index[m.adjncy[e]] >= 0) {
        sub.adjncy.push_back(index[m.adjncy[e]]);
        sub.adjwgt.push_back(m.adjwgt[e]);
      }
    sub.xadj.push_back(static_cast<idx_t>(sub.adjncy.size()));
  }
  sub.adjncy.push_back(0);  // the spare slot (build_metis_graph)
  sub.adjwgt.push_back(1);
  return sub;
}

// A vertex with more compute than its share (what is left, over the parts left) cannot be
// balanced, and METIS's recursive bisection then asks a one-vertex side for several parts (it
// prints "You are trying to partition a graph into too many parts!" on standard output and
// balances the rest badly). Each such vertex, heaviest first, gets a part of its own, and METIS
// splits the others among the remaining parts.
Partition partition_heavy_apart(MetisGraph& m, const MetisConfig& config, idx_t k) {
  const idx_t nv = m.num_vertices();
  if (nv <= k) return partition(m, config, k);  // one vertex per part: nothing to balance
  std::vector<idx_t> order(nv);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](idx_t a, idx_t b) { return m.compute[a] > m.compute[b]; });
  double rest = std::accumulate(m.compute.begin(), m.compute.end(), 0.0);
  idx_t parts = k;
  std::vector<idx_t> heavy;
  for (idx_t v : order) {
    if (parts <= 1 || !(m.compute[v] > rest / static_cast<double>(parts))) break;
    heavy.push_back(v);
    rest -= m.compute[v];
    --parts;
  }
  if (heavy.empty()) return partition(m, config, k);
  std::vector<bool> is_heavy(nv, false);
  for (idx_t v : heavy) is_heavy[v] = true;
  std::vector<idx_t> others;
  for (idx_t v = 0; v < nv; ++v)
    if (!is_heavy[v]) others.push_back(v);
  MetisGraph sub = induced_subgraph(m, others);
  Partition inner = partition(sub, config, parts);
  Partition p;
  p.part.assign(nv, 0);
  for (std::size_t h = 0; h < heavy.size(); ++h) p.part[heavy[h]] = static_cast<idx_t>(h);
  for (std::size_t j = 0; j < others.size(); ++j)
    p.part[others[j]] = static_cast<idx_t>(heavy.size()) + inner.part[j];
  p.edge_cut = inner.edge_cut;
  p.method = heavy.size() == 1
                 ? fmt::format("{}, 1 vertex heavier than its share on a part of its own", inner.method)
                 : fmt::format("{}, {} vertices heavier than their share on parts of their own", inner.method, heavy.size());
  return p;
}

// ----- Hierarchical mapping for k > 8 (see the header) --------------------------------------

// Symmetric traffic between parts as adjacency lists: w = the summed lone transfer time the
// traffic would take over a link of the given class (bytes / bandwidth + tensors x latency).
struct PartGraph {
  struct Arc {
    int to;
    double bytes, tensors;
  };
  std::vector<std::vector<Arc>> adj;
};

PartGraph part_graph(const PartTraffic& traffic) {
  PartGraph g;
  g.adj.resize(traffic.parts);
  for (const PartTraffic::Flow& f : traffic.flows) {
    if (f.src == f.dst || f.bytes <= 0) continue;
    g.adj[f.src].push_back({f.dst, f.bytes, f.tensors});
    g.adj[f.dst].push_back({f.src, f.bytes, f.tensors});
  }
  return g;
}

// A GPU-pair class: the view of the worse direction of an unordered pair.
struct LinkClass {
  double inv_bandwidth, latency;
};

// The topology's bandwidth levels as a tree: the root holds every GPU, each node's children are
// the groups its GPUs fall into when only pairs of a better class are joined, leaves are GPUs.
struct GpuTree {
  struct Node {
    std::vector<int> children;  // node ids; empty for a leaf
    std::vector<DeviceId> gpus; // the GPUs under the node, ascending
    LinkClass link{0, 0};       // class of the pairs that join its children
  };
  std::vector<Node> nodes;  // nodes[0] is the root
};

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a), b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

GpuTree gpu_tree(const Cluster& cluster) {
  const int k = cluster.num_devices();
  // Distinct classes of unordered pairs (equal to 1e-9 relative), best (fastest) first.
  const auto close = [](double a, double b) {
    return a == b || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));  // a == b: infinities
  };
  std::vector<LinkClass> classes;
  std::vector<std::uint8_t> class_of(static_cast<std::size_t>(k) * (k - 1) / 2);
  const auto find_class = [&](const LinkClass& c) {
    for (std::size_t i = 0; i < classes.size(); ++i)
      if (close(classes[i].inv_bandwidth, c.inv_bandwidth) && close(classes[i].latency, c.latency)) return i;
    classes.push_back(c);
    return classes.size() - 1;
  };
  // Pair (a, b), a < b, is at index a * k - a * (a + 1) / 2 + (b - a - 1). Tiles of 64 x 64 keep
  // the reads of both directions (rows a and b of the pair tables) in cache.
  const auto pair_index = [k](std::size_t a, std::size_t b) { return a * k - a * (a + 1) / 2 + (b - a - 1); };
  std::size_t last = 0;
  constexpr int kTile = 64;
  for (int a0 = 0; a0 < k; a0 += kTile)
    for (int b0 = a0; b0 < k; b0 += kTile)
      for (DeviceId a = a0; a < std::min(a0 + kTile, k); ++a)
        for (DeviceId b = std::max(a + 1, b0); b < std::min(b0 + kTile, k); ++b) {
          const LinkClass c{std::max(1.0 / cluster.bandwidth(a, b), 1.0 / cluster.bandwidth(b, a)),
                            std::max(cluster.latency(a, b), cluster.latency(b, a))};
          if (classes.empty() || !close(classes[last].inv_bandwidth, c.inv_bandwidth) ||
              !close(classes[last].latency, c.latency))
            last = find_class(c);
          // More than 256 classes (no regular fabric has them): the rest share the 256th.
          class_of[pair_index(a, b)] = static_cast<std::uint8_t>(std::min<std::size_t>(last, 255));
        }
  std::size_t pair = 0;
  std::vector<std::size_t> order(classes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return std::tie(classes[x].inv_bandwidth, classes[x].latency) < std::tie(classes[y].inv_bandwidth, classes[y].latency);
  });
  std::vector<int> rank_of(256, static_cast<int>(order.size()) - 1);
  for (std::size_t r = 0; r < order.size(); ++r) rank_of[order[r]] = static_cast<int>(r);

  // Level by level, best class first: the groups (union-find roots) after joining the pairs of
  // classes up to that level. groups_at[l][gpu] = group representative.
  const int levels = static_cast<int>(order.size());
  // One sweep of the class table per level (levels are few).
  UnionFind uf(k);
  std::vector<std::vector<int>> groups_at;
  // The last level joins every GPU (the root) and is never split on: it is not computed.
  for (int l = 0; l + 1 < levels; ++l) {
    pair = 0;
    for (DeviceId a = 0; a < k; ++a)
      for (DeviceId b = a + 1; b < k; ++b, ++pair)
        if (rank_of[class_of[pair]] == l) uf.join(a, b);
    std::vector<int> g(k);
    for (DeviceId d = 0; d < k; ++d) g[d] = uf.find(d);
    groups_at.push_back(std::move(g));
  }

  // Build the tree top-down: a node at level l (its GPUs share a group at level l) splits into its
  // groups at level l - 1; levels where it does not split are skipped. Leaves are single GPUs.
  GpuTree tree;
  struct Pending {
    int node, level;
  };
  tree.nodes.push_back({});
  tree.nodes[0].gpus.resize(k);
  std::iota(tree.nodes[0].gpus.begin(), tree.nodes[0].gpus.end(), 0);
  std::vector<Pending> stack{{0, levels - 1}};
  while (!stack.empty()) {
    auto [id, level] = stack.back();
    stack.pop_back();
    if (tree.nodes[id].gpus.size() <= 1) continue;
    // Find the highest level below `level` at which the node's GPUs fall into several groups.
    std::vector<std::vector<DeviceId>> parts;
    int split = level;
    for (; split >= 0; --split) {
      parts.clear();
      if (split == 0) {
        for (DeviceId d : tree.nodes[id].gpus) parts.push_back({d});
      } else {
        const std::vector<int>& g = groups_at[split - 1];
        std::map<int, std::size_t> index;
        for (DeviceId d : tree.nodes[id].gpus) {
          auto [it, fresh] = index.emplace(g[d], parts.size());
          if (fresh) parts.emplace_back();
          parts[it->second].push_back(d);
        }
      }
      if (parts.size() > 1) break;
    }
    tree.nodes[id].link = classes[order[std::max(split, 0)]];
    for (auto& gpus : parts) {
      const int child = static_cast<int>(tree.nodes.size());
      tree.nodes.push_back({});
      tree.nodes.back().gpus = std::move(gpus);
      tree.nodes[id].children.push_back(child);
      stack.push_back({child, split - 1});
    }
  }
  return tree;
}

// Splits `parts` into groups of the given sizes so that little traffic crosses groups: each group
// grows from the unassigned part with the most traffic, taking the part most connected to it,
// then pairs of parts in different groups are swapped while that lowers the crossing traffic.
std::vector<std::vector<int>> split_parts(const PartGraph& pg, const std::vector<int>& parts,
                                          const std::vector<std::size_t>& sizes, const LinkClass& link,
                                          std::vector<int>& local, std::vector<double>& scratch) {
  const int n = static_cast<int>(parts.size());
  const int m = static_cast<int>(sizes.size());
  for (int i = 0; i < n; ++i) local[parts[i]] = i;
  const auto weight = [&](const PartGraph::Arc& a) { return a.bytes * link.inv_bandwidth + a.tensors * link.latency; };
  std::vector<double> total(n, 0);
  for (int i = 0; i < n; ++i)
    for (const auto& a : pg.adj[parts[i]])
      if (local[a.to] >= 0) total[i] += weight(a);

  std::vector<int> group(n, -1);
  std::vector<double> conn(n, 0);
  for (int c = 0; c < m; ++c) {
    std::fill(conn.begin(), conn.end(), 0.0);
    for (std::size_t taken = 0; taken < sizes[c]; ++taken) {
      int best = -1;
      for (int i = 0; i < n; ++i) {
        if (group[i] >= 0) continue;
        if (best < 0 || conn[i] > conn[best] || (conn[i] == conn[best] && total[i] > total[best])) best = i;
      }
      group[best] = c;
      for (const auto& a : pg.adj[parts[best]])
        if (const int j = local[a.to]; j >= 0) conn[j] += weight(a);
    }
  }

  // Refinement: conn_to[i * m + g] = traffic between part i and group g.
  std::vector<double> conn_to(static_cast<std::size_t>(n) * m, 0.0);
  for (int i = 0; i < n; ++i)
    for (const auto& a : pg.adj[parts[i]])
      if (const int j = local[a.to]; j >= 0) conn_to[static_cast<std::size_t>(i) * m + group[j]] += weight(a);
  std::vector<std::vector<int>> members(m);
  for (int i = 0; i < n; ++i) members[group[i]].push_back(i);
  const auto move = [&](int i, int from, int to) {
    for (const auto& a : pg.adj[parts[i]])
      if (const int j = local[a.to]; j >= 0) {
        conn_to[static_cast<std::size_t>(j) * m + from] -= weight(a);
        conn_to[static_cast<std::size_t>(j) * m + to] += weight(a);
      }
    group[i] = to;
  };
  for (int pass = 0; pass < 8 && m > 1; ++pass) {
    bool improved = false;
    for (int i = 0; i < n; ++i) {
      if (pg.adj[parts[i]].empty()) continue;
      const int a = group[i];
      const double* ci = &conn_to[static_cast<std::size_t>(i) * m];
      int b = -1;
      for (int g = 0; g < m; ++g)
        if (g != a && (b < 0 || ci[g] > ci[b])) b = g;
      if (ci[b] - ci[a] <= 0) continue;
      for (const auto& arc : pg.adj[parts[i]])
        if (const int j = local[arc.to]; j >= 0) scratch[j] += weight(arc);
      int best_q = -1;
      double best_gain = 1e-12 * (total[i] + 1e-300);
      for (int q : members[b]) {
        const double* cq = &conn_to[static_cast<std::size_t>(q) * m];
        const double gain = (ci[b] - ci[a]) + (cq[a] - cq[b]) - 2 * scratch[q];
        if (gain > best_gain) {
          best_gain = gain;
          best_q = q;
        }
      }
      for (const auto& arc : pg.adj[parts[i]])
        if (const int j = local[arc.to]; j >= 0) scratch[j] = 0;
      if (best_q < 0) continue;
      move(i, a, b);
      move(best_q, b, a);
      std::replace(members[a].begin(), members[a].end(), i, best_q);
      std::replace(members[b].begin(), members[b].end(), best_q, i);
      improved = true;
    }
    if (!improved) break;
  }
  std::vector<std::vector<int>> out(m);
  for (int i = 0; i < n; ++i) out[group[i]].push_back(parts[i]);
  for (int i = 0; i < n; ++i) local[parts[i]] = -1;
  return out;
}

std::vector<DeviceId> hierarchical_mapping(const PartTraffic& traffic, const Cluster& cluster) {
  const int k = traffic.parts;
  const PartGraph pg = part_graph(traffic);
  const GpuTree tree = gpu_tree(cluster);
  std::vector<DeviceId> device(k, -1);
  std::vector<int> local(k, -1);
  std::vector<double> scratch(k, 0.0);
  std::vector<std::pair<int, std::vector<int>>> stack;
  std::vector<int> all(k);
  std::iota(all.begin(), all.end(), 0);
  stack.emplace_back(0, std::move(all));
  while (!stack.empty()) {
    auto [id, parts] = std::move(stack.back());
    stack.pop_back();
    const GpuTree::Node& node = tree.nodes[id];
    if (node.children.empty()) {
      device[parts[0]] = node.gpus[0];
      continue;
    }
    std::vector<std::size_t> sizes;
    for (int c : node.children) sizes.push_back(tree.nodes[c].gpus.size());
    std::vector<std::vector<int>> groups = split_parts(pg, parts, sizes, node.link, local, scratch);
    for (std::size_t c = 0; c < node.children.size(); ++c) stack.emplace_back(node.children[c], std::move(groups[c]));
  }
  return device;
}

}  // namespace

void PartTraffic::add(int src, int dst, double bytes, double count) {
  if (src == dst || bytes <= 0) return;
  flows.push_back({src, dst, bytes, count});
}

void PartTraffic::merge() {
  std::sort(flows.begin(), flows.end(), [](const Flow& x, const Flow& y) { return std::tie(x.src, x.dst) < std::tie(y.src, y.dst); });
  std::size_t out = 0;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (out > 0 && flows[out - 1].src == flows[i].src && flows[out - 1].dst == flows[i].dst) {
      flows[out - 1].bytes += flows[i].bytes;
      flows[out - 1].tensors += flows[i].tensors;
    } else {
      flows[out++] = flows[i];
    }
  }
  flows.resize(out);
}

double mapping_cost(const PartTraffic& traffic, std::span<const DeviceId> device_of_part, const Cluster& cluster) {
  double cost = 0;
  for (const PartTraffic::Flow& f : traffic.flows) {
    if (f.src == f.dst || f.bytes <= 0) continue;
    const DeviceId a = device_of_part[f.src], b = device_of_part[f.dst];
    if (a == b) continue;
    cost += f.tensors * cluster.latency(a, b) + f.bytes / cluster.bandwidth(a, b);
  }
  return cost;
}

std::vector<DeviceId> map_parts_to_devices(const PartTraffic& traffic_in, const Cluster& cluster) {
  const int k = traffic_in.parts;
  if (k != cluster.num_devices())
    throw std::invalid_argument(fmt::format("map_parts_to_devices: {} parts for {} GPUs", k, cluster.num_devices()));
  PartTraffic traffic = traffic_in;
  traffic.merge();  // sorted by (src, dst): costs sum in the same order whatever the input order
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
  std::vector<DeviceId> tree = hierarchical_mapping(traffic, cluster);
  if (const double c = mapping_cost(traffic, tree, cluster); c < best_cost) {
    best_cost = c;
    best = std::move(tree);
  }
  // Up to 32 GPUs: pairwise swaps, first improvement, until none helps (bounded).
  if (k <= kSwapPolishMaxGpus) {
    for (int round = 0; round < 2 * k; ++round) {
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
  } else {
    part = partition_heavy_apart(m, config_, k);
  }

  PartTraffic traffic;
  traffic.parts = k;
  for (const Tensor& t : graph.tensors())
    traffic.add(part.part[m.vertex_of[t.src]], part.part[m.vertex_of[t.dst]], t.bytes);
  traffic.merge();
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
  r.details["method"] = part.method;
  r.details["metis_vertices"] = nv;
  r.details["metis_edge_cut"] = part.edge_cut;
  r.details["edge_cut_bytes"] = cut_bytes;
  r.details["gpu_compute_s"] = gpu_compute;
  r.details["gpu_memory_bytes"] = gpu_memory;
  r.details["compute_imbalance"] = mean > 0 ? *std::max_element(gpu_compute.begin(), gpu_compute.end()) / mean : 1.0;
  r.details["mapping_transfer_s"] = mapping_cost(traffic, device_of_part, cluster);
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
