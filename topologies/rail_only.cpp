#include "topologies/rail_only.h"

#include <fmt/format.h>

#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

namespace {

// Rail-only routes: to the GPU of rank j on another server over rail j, whichever GPU sends (one
// route per server pair and rail).
class RailRouting final : public ServerRouting {
 public:
  // up[srv][j], down[srv][j]: one-link path sets of server srv's NIC on rail j.
  RailRouting(Servers layout, std::vector<std::vector<int>> up, std::vector<std::vector<int>> down)
      : ServerRouting(std::move(layout)), up_(std::move(up)), down_(std::move(down)) {}

 protected:
  Route between(DeviceId, int sa, int sb, DeviceId dst) const override {
    const int rail = dst - servers().first_gpu[sb];
    Route r;
    r.id = (static_cast<std::int64_t>(sa) * servers().count + sb) * rails() + rail;
    r.num_stages = 2;
    r.stages[0] = up_[sa][rail];
    r.stages[1] = down_[sb][rail];
    return r;
  }
  std::int64_t num_routes_between() const override {
    return static_cast<std::int64_t>(servers().count) * servers().count * rails();
  }

 private:
  std::int64_t rails() const { return static_cast<std::int64_t>(up_.front().size()); }
  std::vector<std::vector<int>> up_, down_;
};

}  // namespace

Cluster make_rail_only(const RailOnlyConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  const int rails = cfg.gpus_per_server;
  Cluster c;
  const Servers s = add_servers(c, cfg, uniform_servers(cfg));
  std::vector<int> rail_node(rails);
  for (int j = 0; j < rails; ++j) rail_node[j] = c.add_node({fmt::format("rail{}", j), NodeKind::Switch, -1});
  // up[srv][j], down[srv][j]: one-link path sets of server srv's NIC on rail j.
  std::vector<std::vector<int>> up(s.count, std::vector<int>(rails)), down = up;
  for (int srv = 0; srv < s.count; ++srv)
    for (int j = 0; j < rails; ++j) {
      const int u = c.add_link({fmt::format("server{}-rail{}-up", srv, j), cfg.nic_bandwidth, cfg.nic_latency, s.node[srv], rail_node[j]});
      const int d = c.add_link({fmt::format("server{}-rail{}-down", srv, j), cfg.nic_bandwidth, cfg.nic_latency, rail_node[j], s.node[srv]});
      up[srv][j] = c.add_path_set({RoutePath{{u}, 1.0}});
      down[srv][j] = c.add_path_set({RoutePath{{d}, 1.0}});
    }
  c.set_routing(std::make_shared<RailRouting>(s, std::move(up), std::move(down)));
  c.description = fmt::format("rail-only: {}, {} rails of {} NICs ({} each)", servers_phrase(cfg, s.count), rails, s.count,
                              format_bandwidth(cfg.nic_bandwidth));
  c.fabric.type = "rail-only";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: to the GPU of rank j on another server over rail j (PXN), one path per pair");
  note_overrides(c, cfg);
  finish_cluster(c, "rail-only", cfg, src.file.empty() ? "rail-only cluster" : src.file);
  return c;
}

TopologyType rail_only_topology() {
  using C = RailOnlyConfig;
  OptionSchema<C> s = gpu_servers_schema<C>();
  s.bandwidth("nic_bandwidth", &C::nic_bandwidth, "bandwidth of each GPU's NIC, each direction", "50GB/s");
  s.duration("nic_latency", &C::nic_latency, "latency of each NIC link", Range::non_negative(), "5us");
  return topology_type<C>("rail-only", {}, "one NIC per GPU, NIC j of every server on rail switch j, no spine", s, make_rail_only);
}

}  // namespace placesim
