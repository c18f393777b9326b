#include "topologies/fat_tree.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

Cluster make_fat_tree(const FatTreeConfig& cfg, const ConfigSource& src) {
  require_count(src, "k", cfg.k, 2, 64);
  if (cfg.k % 2 != 0)
    src.fail("k", fmt::format("k must be even (each switch has k ports, half down and half up), got {}", cfg.k));
  const int half = cfg.k / 2;
  const long slots = static_cast<long>(cfg.k) * cfg.k * cfg.k / 4;
  const int servers = cfg.servers == 0 ? static_cast<int>(std::min<long>(slots, kMaxClusterGpus)) : cfg.servers;
  require_count(src, "servers", servers, 1, kMaxClusterGpus);
  if (servers > slots)
    src.fail("servers", fmt::format("a k={} fat-tree holds {} servers (k^3/4), not {}", cfg.k, slots, servers));
  FatTreeConfig full = cfg;
  full.servers = servers;
  validate_servers(full, src, static_cast<long>(servers) * cfg.gpus_per_server);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  const double agg_bw = cfg.aggregation_bandwidth > 0 ? cfg.aggregation_bandwidth : cfg.nic_bandwidth;
  const double core_bw = cfg.core_bandwidth > 0 ? cfg.core_bandwidth : agg_bw;
  if (cfg.aggregation_bandwidth != 0) require_positive(src, "aggregation_bandwidth", cfg.aggregation_bandwidth);
  if (cfg.core_bandwidth != 0) require_positive(src, "core_bandwidth", cfg.core_bandwidth);
  require_latency(src, "aggregation_latency", cfg.aggregation_latency);
  require_latency(src, "core_latency", cfg.core_latency);

  Cluster c;
  const Servers s = add_servers(c, full, uniform_servers(full));
  const int edges = (servers + half - 1) / half;   // edge switches with servers
  const int pods = (edges + half - 1) / half;      // pods with servers
  auto pod_of_edge = [&](int e) { return e / half; };

  std::vector<int> edge_node(edges), agg_node(static_cast<std::size_t>(pods) * half), core_node;
  for (int e = 0; e < edges; ++e)
    edge_node[e] = c.add_node({fmt::format("edge{}.{}", pod_of_edge(e), e % half), NodeKind::Switch, -1});
  for (int p = 0; p < pods; ++p)
    for (int i = 0; i < half; ++i) agg_node[p * half + i] = c.add_node({fmt::format("agg{}.{}", p, i), NodeKind::Switch, -1});
  if (pods > 1)
    for (int i = 0; i < half; ++i)
      for (int j = 0; j < half; ++j) core_node.push_back(c.add_node({fmt::format("core{}.{}", i, j), NodeKind::Switch, -1}));

  std::vector<int> edge_of_server(servers);
  for (int srv = 0; srv < servers; ++srv) edge_of_server[srv] = edge_node[srv / half];
  const Nics nics = add_single_nics(c, s, edge_of_server, cfg.nic_bandwidth, cfg.nic_latency);
  // edge_up[e][i]: edge e -> aggregation i of its pod; edge_down[e][i]: back.
  std::vector<std::vector<int>> edge_up(edges, std::vector<int>(half)), edge_down = edge_up;
  for (int e = 0; e < edges; ++e)
    for (int i = 0; i < half; ++i) {
      const int agg = agg_node[pod_of_edge(e) * half + i];
      edge_up[e][i] = add_cable_link(c, edge_node[e], agg, agg_bw, cfg.aggregation_latency);
      edge_down[e][i] = add_cable_link(c, agg, edge_node[e], agg_bw, cfg.aggregation_latency);
    }
  // agg_up[p][i*half+j]: aggregation i of pod p -> core (i, j); agg_down: back.
  std::vector<std::vector<int>> agg_up(pods, std::vector<int>(half * half, -1)), agg_down = agg_up;
  if (pods > 1)
    for (int p = 0; p < pods; ++p)
      for (int i = 0; i < half; ++i)
        for (int j = 0; j < half; ++j) {
          agg_up[p][i * half + j] = add_cable_link(c, agg_node[p * half + i], core_node[i * half + j], core_bw, cfg.core_latency);
          agg_down[p][i * half + j] = add_cable_link(c, core_node[i * half + j], agg_node[p * half + i], core_bw, cfg.core_latency);
        }

  // The paths between edge switches ea != eb through aggregation i (and core column j).
  auto path_between = [&](int ea, int eb, int i, int j) {
    const int pa = pod_of_edge(ea), pb = pod_of_edge(eb);
    if (pa == pb) return std::vector<int>{edge_up[ea][i], edge_down[eb][i]};
    return std::vector<int>{edge_up[ea][i], agg_up[pa][i * half + j], agg_down[pb][i * half + j], edge_down[eb][i]};
  };
  // Middle stages, built once per edge pair (ECMP) or per source edge and destination (static).
  std::vector<int> middle(static_cast<std::size_t>(edges) * (cfg.ecmp ? edges : servers), -1);
  auto middle_stage = [&](int ea, int eb, int dst) {
    int& id = middle[static_cast<std::size_t>(ea) * (cfg.ecmp ? edges : servers) + (cfg.ecmp ? eb : dst)];
    if (id >= 0) return id;
    std::vector<RoutePath> paths;
    if (cfg.ecmp) {
      const int columns = pod_of_edge(ea) == pod_of_edge(eb) ? 1 : half;
      for (int i = 0; i < half; ++i)
        for (int j = 0; j < columns; ++j) paths.push_back({path_between(ea, eb, i, j), 1.0 / (half * columns)});
    } else {
      paths.push_back({path_between(ea, eb, dst % half, (dst / half) % half), 1.0});  // d-mod-k
    }
    return id = c.add_path_set(std::move(paths));
  };
  for (int a = 0; a < servers; ++a)
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      const int ea = a / half, eb = b / half;
      const int route = ea == eb ? c.add_route({nics.up_stage[a], nics.down_stage[b]})
                                 : c.add_route({nics.up_stage[a], middle_stage(ea, eb, b), nics.down_stage[b]});
      use_server_route(c, s, a, b, route);
    }

  c.description = fmt::format("fat-tree k={}: {} in {} of {} pods, NIC {}, aggregation {}, core {}, {}", cfg.k,
                              servers_phrase(cfg, servers), pods, cfg.k, format_bandwidth(cfg.nic_bandwidth),
                              format_bandwidth(agg_bw), format_bandwidth(core_bw), cfg.ecmp ? "ECMP" : "static d-mod-k routing");
  c.fabric.type = "fat-tree";
  // Per tier, the capacity below a switch over the capacity above it (k/2 ports each way).
  const double edge_ratio = cfg.nic_bandwidth / agg_bw, agg_ratio = agg_bw / core_bw;
  c.fabric.oversubscription = std::max({1.0, edge_ratio, edge_ratio * agg_ratio});
  c.fabric.notes.push_back(fmt::format("tiers: edge uplinks {}, aggregation uplinks {} (nominal, full tree)", ratio(edge_ratio),
                                       ratio(agg_ratio)));
  c.fabric.notes.push_back(
      cfg.ecmp ? fmt::format("routing: ECMP, every transfer split into equal sub-flows over all shortest paths ({} within a "
                             "pod, {} between pods)",
                             half, half * half)
               : "routing: static, one path per server pair (d-mod-k on the destination, as SimGrid's FatTreeZone)");
  note_overrides(c, cfg);
  finish_cluster(c, "fat-tree", cfg, src.file.empty() ? "fat-tree cluster" : src.file);
  return c;
}

TopologyType fat_tree_topology() {
  using C = FatTreeConfig;
  OptionSchema<C> s;
  s.count("k", &C::k, "switch radix, even: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 core switches", 2, 1024, "6");
  s.check([](const YamlFields& f, C& c) {
    if (c.k % 2 != 0)
      throw_field_error(f, "k", fmt::format("k must be even (each switch has k ports, half down and half up), got {}", c.k));
    if (f.has("servers")) return;
    const long slots = static_cast<long>(c.k) * c.k * c.k / 4;
    if (slots > kMaxClusterGpus)
      throw_field_error(f, "k", fmt::format("a full k={} fat-tree has {} servers, more than placesim handles ({}): give `servers:`",
                                            c.k, slots, kMaxClusterGpus));
    c.servers = static_cast<int>(slots);
  });
  s.include(gpu_servers_schema<GpuServersConfig>("a full tree, k^3/4"));
  s.bandwidth("nic_bandwidth", &C::nic_bandwidth, "server <-> edge switch, each direction", "25GB/s");
  s.duration("nic_latency", &C::nic_latency, "latency of each NIC link", Range::non_negative(), "5us");
  s.bandwidth("aggregation_bandwidth", &C::aggregation_bandwidth, "edge <-> aggregation links", "5GB/s", "the NIC's");
  s.duration("aggregation_latency", &C::aggregation_latency, "edge <-> aggregation latency", Range::non_negative(), "5us");
  s.bandwidth("core_bandwidth", &C::core_bandwidth, "aggregation <-> core links", "2GB/s", "the aggregation tier's");
  s.duration("core_latency", &C::core_latency, "aggregation <-> core latency", Range::non_negative(), "5us");
  s.flag("ecmp", &C::ecmp, "split each transfer over all shortest paths (false: static d-mod-k routing)");
  return topology_type<C>("fat-tree", {}, "k-ary three-tier fat-tree, ECMP or static routing", s, make_fat_tree);
}

}  // namespace placesim
