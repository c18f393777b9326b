#include "topologies/spine_leaf.h"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

namespace {

// Spine-leaf routes: servers under one leaf go NIC to NIC; the others cross a middle stage
// between their leaves, a generated path set: through every spine with ECMP, or through the one
// the destination server picks (dst mod spines).
class SpineLeafRouting final : public ServerRouting {
 public:
  bool routes_by_server() const override { return nics_.per_server == 1; }  // one NIC per server
  bool views_by_server() const override { return true; }  // every NIC alike, one middle per server pair
  // up[l][j]: leaf l -> spine j; down[l][j]: spine j -> leaf l.
  SpineLeafRouting(Servers layout, const Nics& nics, int servers_per_leaf, int leaves, bool ecmp,
                   std::vector<std::vector<int>> up, std::vector<std::vector<int>> down)
      : ServerRouting(std::move(layout)),
        nics_(nics),
        servers_per_leaf_(servers_per_leaf),
        leaves_(leaves),
        spines_(static_cast<int>(up.front().size())),
        ecmp_(ecmp),
        up_(std::move(up)),
        down_(std::move(down)) {}

  std::int32_t generated_num_paths(std::int64_t) const override { return ecmp_ ? spines_ : 1; }

  double append_generated_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const override {
    std::int64_t m = generated_index(set);
    int spine = k;
    if (!ecmp_) {
      spine = static_cast<int>(m % spines_);
      m /= spines_;
    }
    links.push_back(up_[m / leaves_][spine]);
    links.push_back(down_[m % leaves_][spine]);
    return ecmp_ ? 1.0 / spines_ : 1.0;
  }

  // Every uplink has the same bandwidth and latency: all middles are alike.
  std::int32_t generated_class(std::int64_t) const override { return 0; }
  std::vector<std::int64_t> generated_class_representatives() const override {
    if (leaves_ < 2) return {};
    return {middle_set(0, 1, 0)};
  }

 protected:
  Route between(DeviceId src, int sa, int sb, DeviceId dst) const override {
    Route r;
    const std::int64_t nics = static_cast<std::int64_t>(servers().count) * nics_.per_server;
    const int na = nics_.of(servers(), sa, src), nb = nics_.of(servers(), sb, dst);
    r.id = na * nics + nb;
    const int la = sa / servers_per_leaf_, lb = sb / servers_per_leaf_;
    r.stages[0] = nics_.up_stage[na];
    if (la == lb) {
      r.num_stages = 2;
      r.stages[1] = nics_.down_stage[nb];
    } else {
      r.num_stages = 3;
      r.stages[1] = middle_set(la, lb, sb);
      r.stages[2] = nics_.down_stage[nb];
    }
    return r;
  }
  std::int64_t num_routes_between() const override {
    const std::int64_t nics = static_cast<std::int64_t>(servers().count) * nics_.per_server;
    return nics * nics;
  }

 private:
  // Middles per leaf pair (ECMP), or per leaf pair and the destination's spine (static).
  std::int64_t middle_set(int la, int lb, int dst) const {
    const std::int64_t pair = static_cast<std::int64_t>(la) * leaves_ + lb;
    return generated_set(ecmp_ ? pair : pair * spines_ + dst % spines_);
  }

  Nics nics_;
  int servers_per_leaf_, leaves_, spines_;
  bool ecmp_;
  std::vector<std::vector<int>> up_, down_;
};

}  // namespace

Cluster make_spine_leaf(const SpineLeafConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers_per_leaf", cfg.servers_per_leaf, 1, kMaxClusterGpus);
  require_count(src, "spines", cfg.spines, 1, 1024);
  if (cfg.leaves != 0) require_count(src, "leaves", cfg.leaves, 1, kMaxClusterGpus);
  if (cfg.servers == 0 && cfg.leaves == 0) src.fail("servers", "give the number of servers or of leaves");
  // Without `servers` the count comes from the leaves: an error names them, not a key never set.
  const long derived = static_cast<long>(cfg.leaves) * cfg.servers_per_leaf;
  if (cfg.servers == 0 && derived > kMaxClusterGpus)
    src.fail("leaves", fmt::format("{} leaves of {} servers make {} servers, more than placesim handles ({})", cfg.leaves,
                                   cfg.servers_per_leaf, derived, kMaxClusterGpus));
  if (cfg.servers != 0) require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  const int servers = cfg.servers != 0 ? cfg.servers : static_cast<int>(derived);
  const int leaves = cfg.leaves != 0 ? cfg.leaves : (servers + cfg.servers_per_leaf - 1) / cfg.servers_per_leaf;
  if (servers > static_cast<long>(leaves) * cfg.servers_per_leaf)
    src.fail("servers", fmt::format("{} leaves of {} servers hold {} servers, not {}", leaves, cfg.servers_per_leaf,
                                    leaves * cfg.servers_per_leaf, servers));
  SpineLeafConfig full = cfg;
  full.servers = servers;
  validate_servers(full, src, static_cast<long>(servers) * cfg.gpus_per_server);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  require_latency(src, "uplink_latency", cfg.uplink_latency);
  require_nics_divide(src, cfg.nics_per_server, cfg.gpus_per_server);
  const double server_bw = cfg.nics_per_server * cfg.nic_bandwidth;  // a server's NICs together
  double uplink = cfg.uplink_bandwidth;
  if (uplink != 0) {
    require_positive(src, "uplink_bandwidth", uplink);
  } else {
    require_positive(src, "oversubscription", cfg.oversubscription, "a ratio");
    uplink = cfg.servers_per_leaf * server_bw / (cfg.spines * cfg.oversubscription);
  }
  const double oversubscription = cfg.servers_per_leaf * server_bw / (cfg.spines * uplink);

  Cluster c;
  const Servers s = add_servers(c, full, uniform_servers(full));
  std::vector<int> leaf_node(leaves), spine_node(cfg.spines);
  for (int l = 0; l < leaves; ++l) leaf_node[l] = c.add_node({fmt::format("leaf{}", l), NodeKind::Switch, -1});
  for (int j = 0; j < cfg.spines; ++j) spine_node[j] = c.add_node({fmt::format("spine{}", j), NodeKind::Switch, -1});
  std::vector<int> leaf_of_server(servers);
  for (int srv = 0; srv < servers; ++srv) leaf_of_server[srv] = leaf_node[srv / cfg.servers_per_leaf];
  const Nics nics = add_server_nics(c, s, leaf_of_server, cfg.nics_per_server, cfg.nic_bandwidth, cfg.nic_latency);
  std::vector<std::vector<int>> up(leaves, std::vector<int>(cfg.spines)), down = up;
  for (int l = 0; l < leaves; ++l)
    for (int j = 0; j < cfg.spines; ++j) {
      up[l][j] = add_cable_link(c, leaf_node[l], spine_node[j], uplink, cfg.uplink_latency);
      down[l][j] = add_cable_link(c, spine_node[j], leaf_node[l], uplink, cfg.uplink_latency);
    }
  c.set_routing(std::make_shared<SpineLeafRouting>(s, nics, cfg.servers_per_leaf, leaves, cfg.ecmp, up, down));

  c.description = fmt::format("spine-leaf: {} on {} leaves of {}, {} spine{}, {}, uplinks {} ({} oversubscribed), {}",
                              servers_phrase(cfg, servers), leaves, cfg.servers_per_leaf, cfg.spines, cfg.spines == 1 ? "" : "s",
                              nics_phrase(cfg.nics_per_server, cfg.nic_bandwidth), format_bandwidth(uplink), ratio(oversubscription),
                              cfg.ecmp ? "ECMP" : "static routing");
  c.fabric.type = "spine-leaf";
  c.fabric.oversubscription = oversubscription;
  c.fabric.notes.push_back(cfg.ecmp ? fmt::format("routing: ECMP, transfers between leaves split into {} equal sub-flows, one per spine",
                                                  cfg.spines)
                                    : "routing: static, spine = destination server mod spines");
  note_overrides(c, cfg);
  finish_cluster(c, "spine-leaf", cfg, src.file.empty() ? "spine-leaf cluster" : src.file);
  return c;
}

TopologyType spine_leaf_topology() {
  using C = SpineLeafConfig;
  OptionSchema<C> s;
  s.count("servers_per_leaf", &C::servers_per_leaf, "servers under each leaf switch", 1, 1 << 20, "2");
  s.count("spines", &C::spines, "spine switches; each leaf has one uplink to each", 1, 1024, "4");
  s.count("leaves", &C::leaves, "leaf switches (0: as many as the servers need)", 1, 1 << 20, "3");
  s.check([](const YamlFields& f, C& c) {
    if (f.has("servers")) return;
    if (!f.has("leaves"))
      throw InputError(f.file(), f.path().empty() ? "servers" : f.path() + ".servers", "give `servers:` or `leaves:`");
    const long servers = static_cast<long>(c.leaves) * c.servers_per_leaf;
    if (servers > kMaxClusterGpus)
      throw_field_error(f, "leaves", fmt::format("{} leaves of {} servers make {} servers, more than placesim handles ({})",
                                                 c.leaves, c.servers_per_leaf, servers, kMaxClusterGpus));
    c.servers = static_cast<int>(servers);
  });
  s.include(gpu_servers_schema<GpuServersConfig>("leaves x servers_per_leaf"));
  s.bandwidth("nic_bandwidth", &C::nic_bandwidth, "server <-> leaf, each NIC and direction", "25GB/s");
  s.count("nics_per_server", &C::nics_per_server,
          "NICs per server, each serving gpus_per_server / nics_per_server GPUs (8: one per GPU of a DGX); divides gpus_per_server", 1,
          64, "2");
  s.duration("nic_latency", &C::nic_latency, "latency of each NIC link", Range::non_negative(), "5us");
  s.bandwidth("uplink_bandwidth", &C::uplink_bandwidth, "each leaf <-> spine link", "5GB/s", "from oversubscription");
  s.add({"oversubscription", "ratio", "leaf downlink : uplink capacity, 4 or '4:1' (when uplink_bandwidth is not given)", "1:1",
         {}, "4:1"},
        [](const YamlFields& f, std::string_view key, C& c) { c.oversubscription = parse_oversubscription(f, key); });
  s.check([](const YamlFields& f, C&) {
    if (f.has("uplink_bandwidth") && f.has("oversubscription"))
      throw_field_error(f, "oversubscription", "give either uplink_bandwidth or oversubscription (which sizes the uplinks), not both");
  });
  s.duration("uplink_latency", &C::uplink_latency, "leaf <-> spine latency", Range::non_negative(), "5us");
  s.flag("ecmp", &C::ecmp, "split transfers between leaves over every spine (false: spine = destination mod spines)");
  return topology_type<C>("spine-leaf", {}, "leaves of servers under spines, uplinks sized by an oversubscription ratio", s,
                          make_spine_leaf);
}

}  // namespace placesim
