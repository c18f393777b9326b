#include "topologies/rail_optimized.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

namespace {

// The fabric's shape and its links, as the routing reads them.
struct RailTiers {
  int rails = 1, gpus_per_nic = 1, servers_per_unit = 1;
  int leaves = 0, leaves_per_pod = 0, pods = 1, spines = 1;
  int cores = 1;  // core switches per spine plane; 1 with a single pod (no core tier)
  bool ecmp = true, pxn = true;
  // Per server and rail (srv * rails + r): one-link path sets of the NIC's up and down links.
  std::vector<int> nic_up, nic_down;
  // Per GPU, with PXN: its NVLink down link then its NIC's up link (the relay's second stage).
  std::vector<int> relay_out;
  // leaf_up[l][i]: leaf l -> spine i of its pod; leaf_down[l][i]: back. With ECMP one entry each:
  // the leaf's aggregate link to its pod's spine tier.
  std::vector<std::vector<int>> leaf_up, leaf_down;
  // spine_up[p][i * cores + j]: spine i of pod p -> core (i, j); spine_down: back. With ECMP one
  // entry each: the pod's aggregate link to the core tier.
  std::vector<std::vector<int>> spine_up, spine_down;
};

// Routes: [NIC up] or, relayed by PXN, [sender's NVLink up][relay GPU's NVLink down + NIC up];
// then the middle between two leaves (a generated path set) unless one leaf serves both NICs;
// then [the destination's NIC down].
class RailOptimizedRouting final : public ServerRouting {
 public:
  RailOptimizedRouting(Servers layout, RailTiers tiers) : ServerRouting(std::move(layout)), t_(std::move(tiers)) {
    if (std::min(t_.leaves, t_.leaves_per_pod) >= 2) same_pod_class_ = classes_++;
    if (t_.pods > 1) cross_pod_class_ = classes_++;
  }

  // One path between two leaves: ECMP's spine tier is an aggregate link per leaf and direction
  // (add_switches); static routing picks one spine (and core).
  std::int32_t generated_num_paths(std::int64_t) const override { return 1; }

  double append_generated_path(std::int64_t set, std::int32_t, std::vector<int>& links) const override {
    const Middle m = middle_of(set);
    const bool one_pod = same_pod(m);
    const int spine = t_.ecmp ? 0 : m.pick % t_.spines;
    const int core = t_.ecmp ? 0 : m.pick / t_.spines;
    links.push_back(t_.leaf_up[m.la][spine]);
    if (!one_pod) {
      links.push_back(t_.spine_up[m.la / t_.leaves_per_pod][spine * t_.cores + core]);
      links.push_back(t_.spine_down[m.lb / t_.leaves_per_pod][spine * t_.cores + core]);
    }
    links.push_back(t_.leaf_down[m.lb][spine]);
    return 1.0;
  }

  // Every link of a tier has the tier's bandwidth and latency: middles within a pod are alike,
  // and so are middles between pods.
  std::int32_t generated_class(std::int64_t set) const override {
    return same_pod(middle_of(set)) ? same_pod_class_ : cross_pod_class_;
  }
  std::vector<std::int64_t> generated_class_representatives() const override {
    std::vector<std::int64_t> sets;
    if (same_pod_class_ >= 0) sets.push_back(middle_set(0, 1, 0));
    if (cross_pod_class_ >= 0) sets.push_back(middle_set(0, t_.leaves_per_pod, 0));
    return sets;
  }

 protected:
  Route between(DeviceId src, int sa, int sb, DeviceId dst) const override {
    const std::int64_t S = servers().count, R = t_.rails;
    const int local_src = src - servers().first_gpu[sa], local_dst = dst - servers().first_gpu[sb];
    const int rail_src = local_src / t_.gpus_per_nic, rail_dst = local_dst / t_.gpus_per_nic;
    const bool relay = t_.pxn && rail_src != rail_dst;
    const int rail_out = t_.pxn ? rail_dst : rail_src;
    Route r;
    if (relay) {  // one route per sending GPU, destination server and destination rank
      r.id = S * S * R * R + (static_cast<std::int64_t>(src) * S + sb) * gpus() + local_dst;
      r.stages[r.num_stages++] = servers().gpu_up_stage[src];
      r.stages[r.num_stages++] = t_.relay_out[servers().first_gpu[sa] + local_dst];
    } else {  // one route per server pair and pair of rails
      r.id = ((sa * S + sb) * R + rail_out) * R + rail_dst;
      r.stages[r.num_stages++] = t_.nic_up[sa * R + rail_out];
    }
    const int la = leaf_of(sa, rail_out), lb = leaf_of(sb, rail_dst);
    if (la != lb) r.stages[r.num_stages++] = middle_set(la, lb, sb);
    r.stages[r.num_stages++] = t_.nic_down[sb * R + rail_dst];
    return r;
  }
  std::int64_t num_routes_between() const override {
    const std::int64_t S = servers().count, R = t_.rails;
    return S * S * R * R + static_cast<std::int64_t>(servers().first_gpu.back()) * S * gpus();
  }

 private:
  struct Middle {
    int la, lb, pick;  // pick: static routing's choice
  };
  std::int64_t gpus() const { return servers().gpus(0); }  // every server has as many
  int leaf_of(int server, int rail) const { return server / t_.servers_per_unit * t_.rails + rail; }
  bool same_pod(const Middle& m) const { return m.la / t_.leaves_per_pod == m.lb / t_.leaves_per_pod; }
  // Static picks: dst mod spines within a pod, dst mod (spines x cores) between pods.
  std::int64_t picks() const { return static_cast<std::int64_t>(t_.spines) * t_.cores; }
  std::int64_t middle_set(int la, int lb, int dst) const {
    const std::int64_t pair = static_cast<std::int64_t>(la) * t_.leaves + lb;
    if (t_.ecmp) return generated_set(pair);
    const bool one_pod = la / t_.leaves_per_pod == lb / t_.leaves_per_pod;
    return generated_set(pair * picks() + dst % (one_pod ? t_.spines : picks()));
  }
  Middle middle_of(std::int64_t set) const {
    std::int64_t k = generated_index(set);
    int pick = 0;
    if (!t_.ecmp) {
      pick = static_cast<int>(k % picks());
      k /= picks();
    }
    return {static_cast<int>(k / t_.leaves), static_cast<int>(k % t_.leaves), pick};
  }

  RailTiers t_;
  std::int32_t classes_ = 0, same_pod_class_ = -1, cross_pod_class_ = -1;
};

// The sizes every part of the builder needs.
struct Shape {
  int servers = 0, rails = 0, units = 0, units_per_pod = 0, pods = 0, cores = 1;
  double uplink = 0, core = 0;               // bandwidths
  double leaf_ratio = 1, spine_ratio = 1;    // downlink : uplink capacity per tier
};

Shape validate(const RailOptimizedConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  require_count(src, "gpus_per_nic", cfg.gpus_per_nic, 1, cfg.gpus_per_server);
  if (cfg.gpus_per_server % cfg.gpus_per_nic != 0)
    src.fail("gpus_per_nic", fmt::format("expected a divisor of gpus_per_server ({}): every NIC serves as many GPUs, got {}",
                                         cfg.gpus_per_server, cfg.gpus_per_nic));
  require_count(src, "servers_per_unit", cfg.servers_per_unit, 1, kMaxClusterGpus);
  if (cfg.units_per_pod != 0) require_count(src, "units_per_pod", cfg.units_per_pod, 1, kMaxClusterGpus);
  require_count(src, "spines", cfg.spines, 1, 1024);
  require_count(src, "core_switches", cfg.core_switches, 1, 1024);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  require_latency(src, "switch_latency", cfg.switch_latency);
  require_latency(src, "uplink_latency", cfg.uplink_latency);
  require_latency(src, "core_latency", cfg.core_latency);
  Shape s;
  s.servers = cfg.servers;
  s.rails = cfg.gpus_per_server / cfg.gpus_per_nic;
  s.units = (cfg.servers + cfg.servers_per_unit - 1) / cfg.servers_per_unit;
  s.units_per_pod = cfg.units_per_pod == 0 ? s.units : cfg.units_per_pod;
  s.pods = (s.units + s.units_per_pod - 1) / s.units_per_pod;
  s.cores = s.pods > 1 ? cfg.core_switches : 1;
  if (cfg.uplink_bandwidth != 0) {
    require_positive(src, "uplink_bandwidth", cfg.uplink_bandwidth);
    s.uplink = cfg.uplink_bandwidth;
  } else {
    require_positive(src, "oversubscription", cfg.oversubscription, "a ratio");
    s.uplink = cfg.servers_per_unit * cfg.nic_bandwidth / (cfg.spines * cfg.oversubscription);
  }
  s.leaf_ratio = cfg.servers_per_unit * cfg.nic_bandwidth / (cfg.spines * s.uplink);
  // A spine of a full pod has one link from each of its units_per_pod x rails leaves.
  const double spine_down = static_cast<double>(s.units_per_pod) * s.rails * s.uplink;
  if (cfg.core_bandwidth != 0) require_positive(src, "core_bandwidth", cfg.core_bandwidth);
  s.core = cfg.core_bandwidth != 0 ? cfg.core_bandwidth : spine_down / cfg.core_switches;
  s.spine_ratio = spine_down / (cfg.core_switches * s.core);
  const long tier_links = cfg.ecmp ? 1 : cfg.spines;  // ECMP: one aggregate per leaf (add_switches)
  const long links = 2L * s.units * s.rails * tier_links + 2L * s.pods * tier_links * (cfg.ecmp ? 1 : cfg.core_switches);
  if (links > 8L * 1024 * 1024)
    src.fail("spines", fmt::format("{} switch-to-switch links is more than placesim builds (8 Mi): fewer spines or core switches",
                                   links));
  return s;
}

// NIC links (server node to its unit's rail leaf) and, with PXN, every GPU's relay stage.
void add_nics(Cluster& c, const RailOptimizedConfig& cfg, const Servers& s, const std::vector<int>& leaf_node, RailTiers& t) {
  std::vector<int> up_link(static_cast<std::size_t>(s.count) * t.rails);
  for (int srv = 0; srv < s.count; ++srv)
    for (int r = 0; r < t.rails; ++r) {
      const int leaf = leaf_node[srv / cfg.servers_per_unit * t.rails + r];
      const int up = c.add_link({fmt::format("server{}-nic{}-up", srv, r), cfg.nic_bandwidth, cfg.nic_latency + cfg.switch_latency,
                                 s.node[srv], leaf});
      const int down = c.add_link({fmt::format("server{}-nic{}-down", srv, r), cfg.nic_bandwidth, cfg.nic_latency, leaf, s.node[srv]});
      up_link[srv * t.rails + r] = up;
      t.nic_up.push_back(c.add_path_set({RoutePath{{up}, 1.0}}));
      t.nic_down.push_back(c.add_path_set({RoutePath{{down}, 1.0}}));
    }
  if (!cfg.pxn || t.rails == 1) return;
  // GPU g's NVLink down link is link 2g + 1: add_servers adds each GPU's up then down link first.
  for (int g = 0; g < static_cast<int>(s.server_of.size()); ++g) {
    const int srv = s.server_of[g], rail = (g - s.first_gpu[srv]) / cfg.gpus_per_nic;
    if (c.link(2 * g + 1).name != fmt::format("gpu{}-nvlink-down", g))
      throw std::logic_error("rail-optimized: add_servers no longer adds the NVLink links first");
    t.relay_out.push_back(c.add_path_set({RoutePath{{2 * g + 1, up_link[srv * t.rails + rail]}, 1.0}}));
  }
}

// Leaves, spines and cores with the links between them. With ECMP (adaptive routing: a transfer's
// packets spread evenly over the spines) every spine carries the same share of a leaf's traffic,
// so the tier is one aggregate link per leaf and direction (spines x uplink bandwidth) to a node
// standing for the pod's spines, and one per pod and direction (spines x cores x core bandwidth)
// to a node standing for the core tier. The capacities are those of the separate links; what the
// aggregate adds is that a transfer is one flow from its NIC on, as a NIC serves its queue pairs,
// rather than one sub-flow per spine, each taking a flow's share of the NIC.
std::vector<int> add_switches(Cluster& c, const RailOptimizedConfig& cfg, const Shape& sh, RailTiers& t) {
  std::vector<int> leaf_node;
  for (int u = 0; u < sh.units; ++u)
    for (int r = 0; r < sh.rails; ++r) leaf_node.push_back(c.add_node({fmt::format("su{}-leaf{}", u, r), NodeKind::Switch, -1}));
  const int spines = cfg.ecmp ? 1 : cfg.spines, cores = cfg.ecmp ? 1 : sh.cores;
  const double uplink = cfg.ecmp ? cfg.spines * sh.uplink : sh.uplink;
  const double core = cfg.ecmp ? static_cast<double>(cfg.spines) * sh.cores * sh.core : sh.core;
  std::vector<std::vector<int>> spine_node(sh.pods);
  for (int p = 0; p < sh.pods; ++p)
    for (int i = 0; i < spines; ++i) {
      const std::string spine = cfg.ecmp ? "spines" : fmt::format("spine{}", i);
      spine_node[p].push_back(
          c.add_node({sh.pods > 1 ? fmt::format("pod{}-{}", p, spine) : spine, NodeKind::Switch, -1}));
    }
  const double hop = cfg.switch_latency;
  t.leaf_up.assign(t.leaves, std::vector<int>(spines));
  t.leaf_down = t.leaf_up;
  for (int l = 0; l < t.leaves; ++l)
    for (int i = 0; i < spines; ++i) {
      const int spine = spine_node[l / t.leaves_per_pod][i];
      t.leaf_up[l][i] = add_cable_link(c, leaf_node[l], spine, uplink, cfg.uplink_latency + hop);
      t.leaf_down[l][i] = add_cable_link(c, spine, leaf_node[l], uplink, cfg.uplink_latency + hop);
    }
  if (sh.pods == 1) return leaf_node;
  std::vector<int> core_node;
  for (int i = 0; i < spines; ++i)
    for (int j = 0; j < cores; ++j)
      core_node.push_back(c.add_node({cfg.ecmp ? std::string("core") : fmt::format("core{}.{}", i, j), NodeKind::Switch, -1}));
  t.spine_up.assign(sh.pods, std::vector<int>(core_node.size()));
  t.spine_down = t.spine_up;
  for (int p = 0; p < sh.pods; ++p)
    for (int i = 0; i < spines; ++i)
      for (int j = 0; j < cores; ++j) {
        const int k = i * cores + j;
        t.spine_up[p][k] = add_cable_link(c, spine_node[p][i], core_node[k], core, cfg.core_latency + hop);
        t.spine_down[p][k] = add_cable_link(c, core_node[k], spine_node[p][i], core, cfg.core_latency + hop);
      }
  return leaf_node;
}

void describe(Cluster& c, const RailOptimizedConfig& cfg, const Shape& sh) {
  const double oversubscription = std::max(sh.leaf_ratio, sh.leaf_ratio * (sh.pods > 1 ? sh.spine_ratio : 1.0));
  const auto plural = [](int n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); };
  c.description = fmt::format(
      "rail-optimized: {}, {} of {} ({} per NIC), {} of {} servers, {} of {} spine{}{}, uplinks {} ({} oversubscribed), {}{}",
      servers_phrase(cfg, sh.servers), plural(sh.rails, "rail", "rails"), format_bandwidth(cfg.nic_bandwidth),
      plural(cfg.gpus_per_nic, "GPU", "GPUs"), plural(sh.units, "unit", "units"), cfg.servers_per_unit,
      plural(sh.pods, "pod", "pods"), cfg.spines, cfg.spines == 1 ? "" : "s",
      sh.pods > 1 ? fmt::format(", {} core switch{} per spine plane ({} each)", sh.cores, sh.cores == 1 ? "" : "es",
                                format_bandwidth(sh.core))
                  : "",
      format_bandwidth(sh.uplink), ratio(oversubscription), cfg.ecmp ? "ECMP" : "static routing", cfg.pxn ? ", PXN" : "");
  c.fabric.type = "rail-optimized";
  c.fabric.oversubscription = oversubscription;
  c.fabric.notes.push_back(
      cfg.pxn ? "routing: PXN: to a GPU on another rail, NVLink to the sender's GPU of the destination's local rank, then out "
                "of that GPU's NIC; to the sender's rail, out of its own NIC"
              : "routing: out of the sender's own NIC, in through the destination's (another rail: through the spines)");
  c.fabric.notes.push_back("routing: NICs on one rail leaf (same unit and rail) go NIC -> leaf -> NIC; others cross the spines");
  if (cfg.ecmp)
    c.fabric.notes.push_back(fmt::format(
        "routing: ECMP (adaptive routing), transfers between leaves spread evenly over the {} spines{}: one aggregate link per "
        "leaf and direction to its pod's spine tier{}, a transfer one flow",
        cfg.spines, sh.pods > 1 ? fmt::format(" and {} cores", cfg.spines * sh.cores) : "",
        sh.pods > 1 ? ", one per pod and direction to the core tier" : ""));
  else
    c.fabric.notes.push_back("routing: static, spine = destination server mod spines (core = (destination / spines) mod core_switches)");
  c.fabric.notes.push_back(sh.pods > 1 ? fmt::format("tiers: leaf uplinks {}, spine uplinks {}", ratio(sh.leaf_ratio), ratio(sh.spine_ratio))
                                       : fmt::format("tiers: leaf uplinks {}, no core (one pod)", ratio(sh.leaf_ratio)));
  c.fabric.notes.push_back(fmt::format("latency: NVLink {} per link, NIC {} per NIC link, {} per switch crossed",
                                       format_duration(cfg.nvlink_latency), format_duration(cfg.nic_latency),
                                       format_duration(cfg.switch_latency)));
}

}  // namespace

Cluster make_rail_optimized(const RailOptimizedConfig& cfg, const ConfigSource& src) {
  const Shape sh = validate(cfg, src);
  Cluster c;
  const Servers s = add_servers(c, cfg, uniform_servers(cfg));
  RailTiers t;
  t.rails = sh.rails;
  t.gpus_per_nic = cfg.gpus_per_nic;
  t.servers_per_unit = cfg.servers_per_unit;
  t.leaves = sh.units * sh.rails;
  t.leaves_per_pod = sh.units_per_pod * sh.rails;
  t.pods = sh.pods;
  t.spines = cfg.spines;
  t.cores = sh.cores;
  t.ecmp = cfg.ecmp;
  t.pxn = cfg.pxn;
  const std::vector<int> leaf_node = add_switches(c, cfg, sh, t);
  add_nics(c, cfg, s, leaf_node, t);
  c.set_routing(std::make_shared<RailOptimizedRouting>(s, std::move(t)));
  describe(c, cfg, sh);
  note_overrides(c, cfg);
  finish_cluster(c, "rail-optimized", cfg, src.file.empty() ? "rail-optimized cluster" : src.file);
  return c;
}

TopologyType rail_optimized_topology() {
  using C = RailOptimizedConfig;
  OptionSchema<C> s = gpu_servers_schema<C>();
  s.count("gpus_per_nic", &C::gpus_per_nic, "GPUs sharing one NIC and rail (2: one NIC per GPU pair); divides gpus_per_server", 1,
          1 << 20, "2");
  s.count("servers_per_unit", &C::servers_per_unit,
          "servers of a scalable unit: NIC r of each is wired to the unit's rail-r leaf (DGX SuperPOD: 32 DGX H100, 20 DGX A100)",
          1, 1 << 20, "2");
  s.count("units_per_pod", &C::units_per_pod,
          "scalable units under one set of spines (0: all of them, two tiers; fewer: pods joined by a core tier)", 0, 1 << 20, "1");
  s.count("spines", &C::spines, "spine switches per pod; each leaf has one uplink to each", 1, 1024, "4");
  s.count("core_switches", &C::core_switches,
          "core switches per spine plane: spine i of every pod links to each core of plane i (with several pods)", 1, 1024, "2");
  s.bandwidth("nic_bandwidth", &C::nic_bandwidth, "bandwidth of each NIC, each direction", "50GB/s");
  s.duration("nic_latency", &C::nic_latency, "latency of each NIC link (a transfer pays the sender's and the receiver's)",
             Range::non_negative(), "1us");
  s.duration("switch_latency", &C::switch_latency, "port-to-port latency of every switch a transfer crosses",
             Range::non_negative(), "130ns");
  s.bandwidth("uplink_bandwidth", &C::uplink_bandwidth, "each leaf <-> spine link", "5GB/s", "from oversubscription");
  s.add({"oversubscription", "ratio",
         "leaf downlink : uplink capacity, 4 or '4:1' (when uplink_bandwidth is not given): each uplink gets servers_per_unit x "
         "nic_bandwidth / (spines x ratio)",
         "1:1", {}, "4:1"},
        [](const YamlFields& f, std::string_view key, C& c) { c.oversubscription = parse_oversubscription(f, key); });
  s.check([](const YamlFields& f, C&) {
    if (f.has("uplink_bandwidth") && f.has("oversubscription"))
      throw_field_error(f, "oversubscription", "give either uplink_bandwidth or oversubscription (which sizes the uplinks), not both");
  });
  s.duration("uplink_latency", &C::uplink_latency, "leaf <-> spine cable latency", Range::non_negative(), "1us");
  s.bandwidth("core_bandwidth", &C::core_bandwidth, "each spine <-> core link", "5GB/s",
              "non-blocking: a full pod's leaf uplinks into a spine over core_switches");
  s.duration("core_latency", &C::core_latency, "spine <-> core cable latency", Range::non_negative(), "1us");
  s.flag("ecmp", &C::ecmp,
         "adaptive routing: spread transfers between leaves evenly over every spine (and core), the tier one aggregate link per "
         "leaf (false: static, spine = destination mod spines)");
  s.flag("pxn", &C::pxn,
         "NCCL's PXN: to a GPU on another rail, cross NVLink to the sender's GPU on that rail and leave through its NIC (false: "
         "out of the sender's own NIC, through the spines)");
  return topology_type<C>("rail-optimized", {}, "DGX SuperPOD fabric: one NIC per GPU, rail leaves per scalable unit, spines, core; PXN",
                          s, make_rail_optimized);
}

}  // namespace placesim
