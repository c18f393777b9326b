#include "topologies/nvlink_servers.h"

#include <fmt/format.h>

#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

Cluster make_nvlink_servers(const NvlinkServersConfig& config, const ConfigSource& src) {
  require_count(src, "gpus", config.gpus, 1, kMaxClusterGpus);
  require_count(src, "gpus_per_server", config.gpus_per_server, 1, kMaxClusterGpus);
  require_positive(src, "ethernet_bandwidth", config.ethernet_bandwidth);
  require_latency(src, "ethernet_latency", config.ethernet_latency);
  GpuServersConfig cfg;
  cfg.servers = (config.gpus + config.gpus_per_server - 1) / config.gpus_per_server;
  cfg.gpus_per_server = config.gpus_per_server;
  cfg.nvlink_bandwidth = config.nvlink_bandwidth;
  cfg.nvlink_latency = config.nvlink_latency;
  cfg.gpu_memory = config.gpu_memory;
  validate_servers(cfg, src, config.gpus);
  std::vector<int> per_server(cfg.servers, cfg.gpus_per_server);
  per_server.back() = config.gpus - (cfg.servers - 1) * cfg.gpus_per_server;  // the last one may be partly filled

  Cluster c;
  c.description = fmt::format("{} GPU{} in {} server{} of {} (NVLink {}), servers on a non-blocking switch ({})",
                              config.gpus, config.gpus == 1 ? "" : "s", cfg.servers, cfg.servers == 1 ? "" : "s",
                              config.gpus_per_server,
                              format_bandwidth(config.nvlink_bandwidth), format_bandwidth(config.ethernet_bandwidth));
  const Servers s = add_servers(c, cfg, per_server);
  const int sw = c.add_node({"switch", NodeKind::Switch, -1});
  const Nics nics = add_single_nics(c, s, std::vector<int>(s.count, sw), config.ethernet_bandwidth, config.ethernet_latency);
  c.set_routing(std::make_shared<SwitchRouting>(s, nics.up_stage, nics.down_stage));
  c.fabric.type = "nvlink-servers";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: one path per pair (NIC up, switch, NIC down)");
  finish_cluster(c, "nvlink-servers", config, src.file.empty() ? "nvlink-servers cluster" : src.file);
  return c;
}

TopologyType nvlink_servers_topology() {
  using C = NvlinkServersConfig;
  OptionSchema<C> s;
  s.count("gpus", &C::gpus, "GPUs in all; the last server may be partly filled", 1, kMaxClusterGpus, "3");
  s.count("gpus_per_server", &C::gpus_per_server, "GPUs in each server", 1, kMaxClusterGpus, "4");
  s.bandwidth("nvlink_bandwidth", &C::nvlink_bandwidth, "NVLink bandwidth per GPU, each direction", "100GB/s");
  s.duration("nvlink_latency", &C::nvlink_latency, "NVLink latency", Range::non_negative(), "1us");
  s.bandwidth("ethernet_bandwidth", &C::ethernet_bandwidth, "NIC bandwidth per server, each direction", "10GB/s");
  s.duration("ethernet_latency", &C::ethernet_latency, "latency of each NIC link", Range::non_negative(), "5us");
  s.bytes("gpu_memory", &C::gpu_memory, "memory of each GPU", "8GiB");
  return topology_type<C>("nvlink-servers", {"quickp"},
                          "the QuickP setup: servers of NVLink GPUs on one Ethernet switch, counted in GPUs", s,
                          make_nvlink_servers);
}

}  // namespace placesim
