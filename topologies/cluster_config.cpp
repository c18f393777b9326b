#include "topologies/cluster_config.h"

#include <fmt/format.h>

#include "sim/errors.h"
#include "sim/units.h"
#include "sim/yaml_fields.h"

namespace placesim {

Cluster make_nvlink_servers(const NvlinkServersConfig& config) {
  Cluster c;
  const int servers = (config.gpus + config.gpus_per_server - 1) / config.gpus_per_server;
  c.description = fmt::format("{} GPUs in {} servers of {} (NVLink {}), servers on a non-blocking switch ({})",
                              config.gpus, servers, config.gpus_per_server,
                              format_bandwidth(config.nvlink_bandwidth), format_bandwidth(config.ethernet_bandwidth));
  std::vector<int> nvl_up, nvl_down, nic_up, nic_down;
  for (int g = 0; g < config.gpus; ++g) {
    c.add_device({fmt::format("gpu{}", g), g / config.gpus_per_server, config.gpu_memory});
    nvl_up.push_back(c.add_link({fmt::format("gpu{}-nvlink-up", g), config.nvlink_bandwidth, config.nvlink_latency}));
    nvl_down.push_back(c.add_link({fmt::format("gpu{}-nvlink-down", g), config.nvlink_bandwidth, config.nvlink_latency}));
  }
  for (int s = 0; s < servers; ++s) {
    nic_up.push_back(c.add_link({fmt::format("server{}-nic-up", s), config.ethernet_bandwidth, config.ethernet_latency}));
    nic_down.push_back(c.add_link({fmt::format("server{}-nic-down", s), config.ethernet_bandwidth, config.ethernet_latency}));
  }
  for (int a = 0; a < config.gpus; ++a)
    for (int b = 0; b < config.gpus; ++b) {
      if (a == b) continue;
      const int sa = a / config.gpus_per_server, sb = b / config.gpus_per_server;
      if (sa == sb) c.set_route(a, b, {nvl_up[a], nvl_down[b]});
      else c.set_route(a, b, {nic_up[sa], nic_down[sb]});
    }
  return c;
}

Cluster make_full_mesh(const FullMeshConfig& config) {
  Cluster c;
  c.description = fmt::format("{} GPUs, full mesh of dedicated {} links", config.gpus, format_bandwidth(config.bandwidth));
  for (int g = 0; g < config.gpus; ++g) c.add_device({fmt::format("gpu{}", g), g, config.gpu_memory});
  for (int a = 0; a < config.gpus; ++a)
    for (int b = 0; b < config.gpus; ++b)
      if (a != b)
        c.set_route(a, b, {c.add_link({fmt::format("gpu{}-to-gpu{}", a, b), config.bandwidth, config.latency})});
  return c;
}

namespace {

int positive_int(const YamlFields& f, std::string_view key, long fallback, long max = 1 << 20) {
  const long v = f.integer_or(key, fallback);
  if (v <= 0 || v > max)
    throw InputError(f.file(), f.field(key), fmt::format("expected a whole number from 1 to {}, got {}", max, v));
  return static_cast<int>(v);
}

}  // namespace

Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  const std::string type = f.string("type");
  Cluster c;
  if (type == "nvlink-servers" || type == "quickp") {
    f.allow_only({"type", "gpus", "gpus_per_server", "nvlink_bandwidth", "nvlink_latency", "ethernet_bandwidth",
                  "ethernet_latency", "gpu_memory"});
    NvlinkServersConfig cfg;
    cfg.gpus = positive_int(f, "gpus", cfg.gpus);
    cfg.gpus_per_server = positive_int(f, "gpus_per_server", cfg.gpus_per_server);
    cfg.nvlink_bandwidth = f.bandwidth_or("nvlink_bandwidth", cfg.nvlink_bandwidth);
    cfg.nvlink_latency = f.duration_or("nvlink_latency", cfg.nvlink_latency);
    cfg.ethernet_bandwidth = f.bandwidth_or("ethernet_bandwidth", cfg.ethernet_bandwidth);
    cfg.ethernet_latency = f.duration_or("ethernet_latency", cfg.ethernet_latency);
    cfg.gpu_memory = f.bytes_or("gpu_memory", cfg.gpu_memory);
    if (cfg.gpu_memory <= 0) throw InputError(file, f.field("gpu_memory"), "expected a positive memory size");
    c = make_nvlink_servers(cfg);
  } else if (type == "full-mesh") {
    f.allow_only({"type", "gpus", "bandwidth", "latency", "gpu_memory"});
    FullMeshConfig cfg;
    cfg.gpus = positive_int(f, "gpus", cfg.gpus, 4096);
    cfg.bandwidth = f.bandwidth_or("bandwidth", cfg.bandwidth);
    cfg.latency = f.duration_or("latency", cfg.latency);
    cfg.gpu_memory = f.bytes_or("gpu_memory", cfg.gpu_memory);
    if (cfg.gpu_memory <= 0) throw InputError(file, f.field("gpu_memory"), "expected a positive memory size");
    c = make_full_mesh(cfg);
  } else {
    const std::vector<std::string> types = {"nvlink-servers", "quickp", "full-mesh"};
    std::string hint = nearest_word(type, types);
    throw InputError(file, f.field("type"),
                     fmt::format("unknown cluster type '{}'{} (valid: nvlink-servers, quickp, full-mesh)", type,
                                 hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  c.finalize(file);
  return c;
}

Cluster load_cluster_file(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  if (root.IsMap() && root["cluster"]) return cluster_from_yaml(root["cluster"], path, "cluster");
  return cluster_from_yaml(root, path, "");
}

}  // namespace placesim
