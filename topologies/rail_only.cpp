#include "topologies/rail_only.h"

#include <fmt/format.h>

#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

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
  for (int a = 0; a < s.count; ++a)
    for (int b = 0; b < s.count; ++b) {
      if (a == b) continue;
      for (int j = 0; j < rails; ++j) {  // to the rank-j GPU of server b: rail j
        const int route = c.add_route({up[a][j], down[b][j]});
        for (int g = s.first_gpu[a]; g < s.first_gpu[a + 1]; ++g) c.use_route(g, s.first_gpu[b] + j, route);
      }
    }
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
