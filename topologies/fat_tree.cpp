#include "topologies/fat_tree.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

namespace {

// Fat-tree routes: servers under one edge switch go NIC to NIC; the others cross a middle stage
// between their edge switches, a generated path set: all shortest paths with ECMP (k/2 within a
// pod, (k/2)^2 between pods, each through aggregation i and core column j), or the one that
// d-mod-k picks for the destination server (i = dst mod k/2, j = (dst / (k/2)) mod k/2).
class FatTreeRouting final : public ServerRouting {
 public:
  bool routes_by_server() const override { return nics_.per_server == 1; }  // one NIC per server
  bool views_by_server() const override { return true; }  // every NIC alike, one middle per server pair
  struct Tiers {
    int half = 0, edges = 0;
    bool ecmp = true;
    // edge_up[e][i]: edge e -> aggregation i of its pod; agg_up[p][i*half+j]: aggregation i of
    // pod p -> core (i, j); the down links back.
    std::vector<std::vector<int>> edge_up, edge_down, agg_up, agg_down;
  };

  FatTreeRouting(Servers layout, const Nics& nics, Tiers tiers)
      : ServerRouting(std::move(layout)), nics_(nics), t_(std::move(tiers)) {
    if (t_.half >= 2 && t_.edges >= 2) one_pod_class_ = classes_++;
    if (t_.edges > t_.half) two_pod_class_ = classes_++;
  }

  std::int32_t generated_num_paths(std::int64_t set) const override {
    const Middle m = middle_of(set);
    if (!t_.ecmp) return 1;
    return same_pod(m) ? t_.half : t_.half * t_.half;
  }

  double append_generated_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const override {
    const Middle m = middle_of(set);
    if (!t_.ecmp) {
      append_path(m, m.pick % t_.half, m.pick / t_.half, links);
      return 1.0;
    }
    const int columns = same_pod(m) ? 1 : t_.half;
    append_path(m, k / columns, k % columns, links);
    return 1.0 / (t_.half * columns);
  }

  // Every link of a tier has the tier's bandwidth and latency, so middles within a pod are alike,
  // and so are middles between pods.
  std::int32_t generated_class(std::int64_t set) const override {
    return same_pod(middle_of(set)) ? one_pod_class_ : two_pod_class_;
  }
  std::vector<std::int64_t> generated_class_representatives() const override {
    std::vector<std::int64_t> sets;
    if (one_pod_class_ >= 0) sets.push_back(middle_set(0, 1, 0));
    if (two_pod_class_ >= 0) sets.push_back(middle_set(0, t_.half, 0));
    return sets;
  }

 protected:
  Route between(DeviceId src, int sa, int sb, DeviceId dst) const override {
    Route r;
    const std::int64_t nics = static_cast<std::int64_t>(servers().count) * nics_.per_server;
    const int na = nics_.of(servers(), sa, src), nb = nics_.of(servers(), sb, dst);
    r.id = na * nics + nb;
    const int ea = sa / t_.half, eb = sb / t_.half;
    r.stages[0] = nics_.up_stage[na];
    if (ea == eb) {
      r.num_stages = 2;
      r.stages[1] = nics_.down_stage[nb];
    } else {
      r.num_stages = 3;
      r.stages[1] = middle_set(ea, eb, sb);
      r.stages[2] = nics_.down_stage[nb];
    }
    return r;
  }
  std::int64_t num_routes_between() const override {
    const std::int64_t nics = static_cast<std::int64_t>(servers().count) * nics_.per_server;
    return nics * nics;
  }

 private:
  struct Middle {
    int ea, eb, pick;  // pick: static routing's choice, dst mod (k/2)^2
  };
  // Middles per edge pair (ECMP), or per edge pair and pick (static).
  std::int64_t middle_set(int ea, int eb, int dst) const {
    const std::int64_t pair = static_cast<std::int64_t>(ea) * t_.edges + eb;
    return generated_set(t_.ecmp ? pair : pair * t_.half * t_.half + dst % (t_.half * t_.half));
  }
  Middle middle_of(std::int64_t set) const {
    std::int64_t k = generated_index(set);
    int pick = 0;
    if (!t_.ecmp) {
      pick = static_cast<int>(k % (t_.half * t_.half));
      k /= t_.half * t_.half;
    }
    return {static_cast<int>(k / t_.edges), static_cast<int>(k % t_.edges), pick};
  }
  bool same_pod(const Middle& m) const { return m.ea / t_.half == m.eb / t_.half; }
  // The path between edge switches ea != eb through aggregation i (and core column j).
  void append_path(const Middle& m, int i, int j, std::vector<int>& links) const {
    const int pa = m.ea / t_.half, pb = m.eb / t_.half;
    links.push_back(t_.edge_up[m.ea][i]);
    if (pa != pb) {
      links.push_back(t_.agg_up[pa][i * t_.half + j]);
      links.push_back(t_.agg_down[pb][i * t_.half + j]);
    }
    links.push_back(t_.edge_down[m.eb][i]);
  }

  Nics nics_;
  Tiers t_;
  std::int32_t classes_ = 0, one_pod_class_ = -1, two_pod_class_ = -1;
};

}  // namespace

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
  require_nics_divide(src, cfg.nics_per_server, cfg.gpus_per_server);
  const double server_bw = cfg.nics_per_server * cfg.nic_bandwidth;  // a server's NICs together
  const double agg_bw = cfg.aggregation_bandwidth > 0 ? cfg.aggregation_bandwidth : server_bw;
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
  const Nics nics = add_server_nics(c, s, edge_of_server, cfg.nics_per_server, cfg.nic_bandwidth, cfg.nic_latency);
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

  c.set_routing(std::make_shared<FatTreeRouting>(s, nics, FatTreeRouting::Tiers{half, edges, cfg.ecmp, edge_up, edge_down, agg_up, agg_down}));

  c.description = fmt::format("fat-tree k={}: {} in {} of {} pods, {}, aggregation {}, core {}, {}", cfg.k,
                              servers_phrase(cfg, servers), pods, cfg.k, nics_phrase(cfg.nics_per_server, cfg.nic_bandwidth),
                              format_bandwidth(agg_bw), format_bandwidth(core_bw), cfg.ecmp ? "ECMP" : "static d-mod-k routing");
  c.fabric.type = "fat-tree";
  // Per tier, the capacity below a switch over the capacity above it (k/2 ports each way).
  const double edge_ratio = server_bw / agg_bw, agg_ratio = agg_bw / core_bw;
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
    if (slots * c.gpus_per_server > kMaxClusterGpus)
      throw_field_error(f, "k", fmt::format("a full k={} fat-tree has {} servers of {} GPUs, more than placesim handles ({} GPUs): "
                                            "give `servers:`",
                                            c.k, slots, c.gpus_per_server, kMaxClusterGpus));
    c.servers = static_cast<int>(slots);
  });
  s.include(gpu_servers_schema<GpuServersConfig>("a full tree, k^3/4"));
  s.bandwidth("nic_bandwidth", &C::nic_bandwidth, "server <-> edge switch, each NIC and direction", "25GB/s");
  s.count("nics_per_server", &C::nics_per_server,
          "NICs per server, each serving gpus_per_server / nics_per_server GPUs (8: one per GPU of a DGX); divides gpus_per_server", 1,
          64, "2");
  s.duration("nic_latency", &C::nic_latency, "latency of each NIC link", Range::non_negative(), "5us");
  s.bandwidth("aggregation_bandwidth", &C::aggregation_bandwidth, "edge <-> aggregation links", "5GB/s", "a server's NICs together");
  s.duration("aggregation_latency", &C::aggregation_latency, "edge <-> aggregation latency", Range::non_negative(), "5us");
  s.bandwidth("core_bandwidth", &C::core_bandwidth, "aggregation <-> core links", "2GB/s", "the aggregation tier's");
  s.duration("core_latency", &C::core_latency, "aggregation <-> core latency", Range::non_negative(), "5us");
  s.flag("ecmp", &C::ecmp, "split each transfer over all shortest paths (false: static d-mod-k routing)");
  return topology_type<C>("fat-tree", {}, "k-ary three-tier fat-tree, ECMP or static routing", s, make_fat_tree);
}

}  // namespace placesim
