#include "topologies/non_blocking.h"

#include <fmt/format.h>

#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

Cluster make_non_blocking(const NonBlockingConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  Cluster c;
  const Servers s = add_servers(c, cfg, uniform_servers(cfg));
  const int sw = c.add_node({"switch", NodeKind::Switch, -1});
  const Nics nics = add_single_nics(c, s, std::vector<int>(s.count, sw), cfg.nic_bandwidth, cfg.nic_latency);
  c.set_routing(std::make_shared<SwitchRouting>(s, nics.up_stage, nics.down_stage));
  c.description = fmt::format("non-blocking switch: {}, one {} NIC each", servers_phrase(cfg, s.count),
                              format_bandwidth(cfg.nic_bandwidth));
  c.fabric.type = "non-blocking";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: one path per pair (NIC up, switch, NIC down)");
  note_overrides(c, cfg);
  finish_cluster(c, "non-blocking", cfg, src.file.empty() ? "non-blocking cluster" : src.file);
  return c;
}

TopologyType non_blocking_topology() {
  OptionSchema<NonBlockingConfig> s = gpu_servers_schema<NonBlockingConfig>();
  s.bandwidth("nic_bandwidth", &NonBlockingConfig::nic_bandwidth, "NIC bandwidth per server, each direction", "10GB/s");
  s.duration("nic_latency", &NonBlockingConfig::nic_latency, "latency of each NIC link (a transfer crosses two)",
             Range::non_negative(), "5us");
  return topology_type<NonBlockingConfig>("non-blocking", {}, "servers on one non-blocking switch, one NIC each", s,
                                          make_non_blocking);
}

}  // namespace placesim
