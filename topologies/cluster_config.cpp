#include "topologies/cluster_config.h"

#include <charconv>
#include <fmt/format.h>

#include "sim/errors.h"
#include "sim/units.h"
#include "sim/yaml_fields.h"

namespace placesim {

Cluster make_full_mesh(const FullMeshConfig& config) {
  Cluster c;
  c.description = fmt::format("{} GPUs, full mesh of dedicated {} links", config.gpus, format_bandwidth(config.bandwidth));
  c.fabric.type = "full-mesh";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: a dedicated one-way link per ordered GPU pair");
  for (int g = 0; g < config.gpus; ++g) {
    c.add_device({fmt::format("gpu{}", g), g, config.gpu_memory});
    c.add_node({fmt::format("gpu{}", g), NodeKind::Gpu, g});
  }
  for (int a = 0; a < config.gpus; ++a)
    for (int b = 0; b < config.gpus; ++b)
      if (a != b)
        c.set_route(a, b, {c.add_link({fmt::format("gpu{}-to-gpu{}", a, b), config.bandwidth, config.latency, a, b})});
  c.finalize("full-mesh cluster");  // callers get a usable cluster; finalize is idempotent
  return c;
}

namespace {

int positive_int(const YamlFields& f, std::string_view key, long fallback, long max = 1 << 20) {
  const long v = f.integer_or(key, fallback);
  if (v <= 0 || v > max)
    throw InputError(f.file(), f.field(key), fmt::format("expected a whole number from 1 to {}, got {}", max, v));
  return static_cast<int>(v);
}

double positive_bytes(const YamlFields& f, std::string_view key, double fallback) {
  const double v = f.bytes_or(key, fallback);
  if (!(v > 0)) throw InputError(f.file(), f.field(key), "expected a positive memory size");
  return v;
}

double positive_number(const YamlFields& f, std::string_view key, double fallback) {
  const double v = f.number_or(key, fallback);
  if (!(v > 0)) throw InputError(f.file(), f.field(key), fmt::format("expected a number greater than zero, got {}", v));
  return v;
}

// Errors from the builders name "<path>.<key>", with the line when the key is in the mapping.
ConfigSource yaml_source(const YamlFields& f) {
  return {f.file(), [&f](const std::string& key) {
            return f.has(key) ? f.field(key) : (f.path().empty() ? key : f.path() + "." + key);
          }};
}

// The keys every server-based fabric shares.
#define PLACESIM_SERVER_KEYS "type", "servers", "gpus_per_server", "nvlink_bandwidth", "nvlink_latency", "gpu_memory", \
                             "gpu_speed", "server_overrides"

void parse_servers(const YamlFields& f, GpuServersConfig& cfg) {
  cfg.servers = positive_int(f, "servers", cfg.servers);
  cfg.gpus_per_server = positive_int(f, "gpus_per_server", cfg.gpus_per_server);
  cfg.nvlink_bandwidth = f.bandwidth_or("nvlink_bandwidth", cfg.nvlink_bandwidth);
  cfg.nvlink_latency = f.duration_or("nvlink_latency", cfg.nvlink_latency);
  cfg.gpu_memory = positive_bytes(f, "gpu_memory", cfg.gpu_memory);
  cfg.gpu_speed = positive_number(f, "gpu_speed", cfg.gpu_speed);
  if (!f.has("server_overrides")) return;
  const YAML::Node list = f.node("server_overrides");
  if (!list.IsSequence())
    throw InputError(f.file(), f.field("server_overrides"),
                     "expected a list such as [{server: 3, gpu_memory: 80GiB}, {servers: [4, 5], gpu_speed: 2}]");
  for (std::size_t i = 0; i < list.size(); ++i) {
    YamlFields o(list[i], f.file(), fmt::format("{}.server_overrides[{}]", f.path(), i));
    o.allow_only({"server", "servers", "gpu_memory", "gpu_speed"});
    if (o.has("server") == o.has("servers"))
      throw InputError(f.file(), o.path(), "expected exactly one of 'server' (a server index) or 'servers' (a list of them)");
    if (!o.has("gpu_memory") && !o.has("gpu_speed"))
      throw InputError(f.file(), o.path(), "expected gpu_memory and/or gpu_speed to override");
    ServerOverride base;
    base.gpu_memory = o.has("gpu_memory") ? positive_bytes(o, "gpu_memory", 0) : 0;
    base.gpu_speed = o.has("gpu_speed") ? positive_number(o, "gpu_speed", 0) : 0;
    std::vector<YAML::Node> indices;
    if (o.has("server")) {
      indices.push_back(o.node("server"));
    } else {
      const YAML::Node servers = o.node("servers");
      if (!servers.IsSequence()) throw InputError(f.file(), o.field("servers"), "expected a list of server indices");
      for (const auto& s : servers) indices.push_back(s);
    }
    for (const YAML::Node& n : indices) {
      const std::string text = n.IsScalar() ? n.Scalar() : "";
      long v = -1;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < 0)
        throw InputError(f.file(), o.field(o.has("server") ? "server" : "servers"),
                         fmt::format("expected a server index (0, 1, ...), got '{}'", text));
      if (v >= cfg.servers)
        throw InputError(f.file(), o.field(o.has("server") ? "server" : "servers"),
                         fmt::format("server {} does not exist (servers are 0..{})", v, cfg.servers - 1));
      ServerOverride one = base;
      one.server = static_cast<int>(v);
      cfg.overrides.push_back(one);
    }
  }
}

// "4", "4:1" or "1.5" -> the ratio.
double parse_ratio(const YamlFields& f, std::string_view key, double fallback) {
  if (!f.has(key)) return fallback;
  const std::string text = f.string(key);
  const auto colon = text.find(':');
  auto number = [&](std::string_view s) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !(v > 0) || !std::isfinite(v))
      throw InputError(f.file(), f.field(key), fmt::format("expected a positive ratio such as 4 or '4:1', got '{}'", text));
    return v;
  };
  if (colon == std::string::npos) return number(text);
  return number(std::string_view(text).substr(0, colon)) / number(std::string_view(text).substr(colon + 1));
}

}  // namespace

BandwidthAllocation allocation_from_yaml(const YAML::Node& node, int servers, double egress, const std::string& file,
                                         const std::string& field) {
  if (node.IsScalar()) {
    if (node.Scalar() == "uniform") return BandwidthAllocation::uniform(servers, egress);
    throw InputError(file, field, fmt::format("expected 'uniform' or a matrix (one row per server), got '{}'", node.Scalar()));
  }
  if (!node.IsSequence() || static_cast<int>(node.size()) != servers)
    throw InputError(file, field,
                     fmt::format("expected 'uniform' or {} rows (one per server) of {} bandwidths each, such as "
                                 "[0, 20GB/s, 10GB/s, 10GB/s]",
                                 servers, servers));
  BandwidthAllocation a(servers);
  for (int s = 0; s < servers; ++s) {
    const std::string row_field = fmt::format("{}[{}] (line {})", field, s, node[s].Mark().line + 1);
    const YAML::Node row = node[s];
    if (!row.IsSequence() || static_cast<int>(row.size()) != servers)
      throw InputError(file, row_field, fmt::format("expected a row of {} bandwidths, one per destination server", servers));
    for (int t = 0; t < servers; ++t) {
      const std::string entry_field = fmt::format("{}[{}][{}] (line {})", field, s, t, row[t].Mark().line + 1);
      if (!row[t].IsScalar()) throw InputError(file, entry_field, "expected a bandwidth such as 20GB/s, or 0");
      const std::string text = row[t].Scalar();
      double v = 0;
      if (text != "-" && text != "0") v = parse_bandwidth(text, file, entry_field);
      a.set(s, t, v);
    }
  }
  a.validate(servers, egress, file, field);
  return a;
}

Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  const std::string type = f.string("type");
  const ConfigSource src = yaml_source(f);
  Cluster c;
  if (type == "nvlink-servers" || type == "quickp") {
    f.allow_only({"type", "gpus", "gpus_per_server", "nvlink_bandwidth", "nvlink_latency", "ethernet_bandwidth",
                  "ethernet_latency", "gpu_memory"});
    NvlinkServersConfig cfg;
    cfg.gpus = positive_int(f, "gpus", cfg.gpus, kMaxClusterGpus);
    cfg.gpus_per_server = positive_int(f, "gpus_per_server", cfg.gpus_per_server);
    cfg.nvlink_bandwidth = f.bandwidth_or("nvlink_bandwidth", cfg.nvlink_bandwidth);
    cfg.nvlink_latency = f.duration_or("nvlink_latency", cfg.nvlink_latency);
    cfg.ethernet_bandwidth = f.bandwidth_or("ethernet_bandwidth", cfg.ethernet_bandwidth);
    cfg.ethernet_latency = f.duration_or("ethernet_latency", cfg.ethernet_latency);
    cfg.gpu_memory = positive_bytes(f, "gpu_memory", cfg.gpu_memory);
    c = make_nvlink_servers(cfg);
  } else if (type == "full-mesh") {
    f.allow_only({"type", "gpus", "bandwidth", "latency", "gpu_memory"});
    FullMeshConfig cfg;
    cfg.gpus = positive_int(f, "gpus", cfg.gpus, kMaxClusterGpus);
    cfg.bandwidth = f.bandwidth_or("bandwidth", cfg.bandwidth);
    cfg.latency = f.duration_or("latency", cfg.latency);
    cfg.gpu_memory = positive_bytes(f, "gpu_memory", cfg.gpu_memory);
    c = make_full_mesh(cfg);
  } else if (type == "non-blocking") {
    f.allow_only({PLACESIM_SERVER_KEYS, "nic_bandwidth", "nic_latency"});
    NonBlockingConfig cfg;
    parse_servers(f, cfg);
    cfg.nic_bandwidth = f.bandwidth_or("nic_bandwidth", cfg.nic_bandwidth);
    cfg.nic_latency = f.duration_or("nic_latency", cfg.nic_latency);
    c = make_non_blocking(cfg, src);
  } else if (type == "fat-tree") {
    f.allow_only({PLACESIM_SERVER_KEYS, "k", "nic_bandwidth", "nic_latency", "aggregation_bandwidth", "aggregation_latency",
                  "core_bandwidth", "core_latency", "ecmp"});
    FatTreeConfig cfg;
    cfg.k = positive_int(f, "k", cfg.k, 1024);
    if (cfg.k % 2 != 0)
      throw InputError(file, f.field("k"), fmt::format("k must be even (each switch has k ports, half down and half up), got {}", cfg.k));
    if (!f.has("servers")) {
      const long slots = static_cast<long>(cfg.k) * cfg.k * cfg.k / 4;
      if (slots > kMaxClusterGpus)
        throw InputError(file, f.field("k"),
                         fmt::format("a full k={} fat-tree has {} servers, more than placesim handles ({}): give `servers:`",
                                     cfg.k, slots, kMaxClusterGpus));
      cfg.servers = static_cast<int>(slots);
    }
    parse_servers(f, cfg);
    cfg.nic_bandwidth = f.bandwidth_or("nic_bandwidth", cfg.nic_bandwidth);
    cfg.nic_latency = f.duration_or("nic_latency", cfg.nic_latency);
    cfg.aggregation_bandwidth = f.bandwidth_or("aggregation_bandwidth", 0.0);
    cfg.aggregation_latency = f.duration_or("aggregation_latency", 0.0);
    cfg.core_bandwidth = f.bandwidth_or("core_bandwidth", 0.0);
    cfg.core_latency = f.duration_or("core_latency", 0.0);
    cfg.ecmp = f.boolean_or("ecmp", true);
    c = make_fat_tree(cfg, src);
  } else if (type == "spine-leaf") {
    f.allow_only({PLACESIM_SERVER_KEYS, "servers_per_leaf", "spines", "leaves", "nic_bandwidth", "nic_latency",
                  "uplink_bandwidth", "oversubscription", "uplink_latency", "ecmp"});
    SpineLeafConfig cfg;
    cfg.servers_per_leaf = positive_int(f, "servers_per_leaf", cfg.servers_per_leaf);
    cfg.spines = positive_int(f, "spines", cfg.spines, 1024);
    cfg.leaves = f.has("leaves") ? positive_int(f, "leaves", 1) : 0;
    if (!f.has("servers")) {
      if (!f.has("leaves")) throw InputError(file, path.empty() ? "servers" : path + ".servers", "give `servers:` or `leaves:`");
      cfg.servers = cfg.leaves * cfg.servers_per_leaf;
    }
    parse_servers(f, cfg);
    cfg.nic_bandwidth = f.bandwidth_or("nic_bandwidth", cfg.nic_bandwidth);
    cfg.nic_latency = f.duration_or("nic_latency", cfg.nic_latency);
    if (f.has("uplink_bandwidth") && f.has("oversubscription"))
      throw InputError(file, f.field("oversubscription"),
                       "give either uplink_bandwidth or oversubscription (which sizes the uplinks), not both");
    cfg.uplink_bandwidth = f.bandwidth_or("uplink_bandwidth", 0.0);
    cfg.oversubscription = parse_ratio(f, "oversubscription", 1.0);
    cfg.uplink_latency = f.duration_or("uplink_latency", 0.0);
    cfg.ecmp = f.boolean_or("ecmp", true);
    c = make_spine_leaf(cfg, src);
  } else if (type == "multi-nic") {
    f.allow_only({PLACESIM_SERVER_KEYS, "nics_per_server", "link_bandwidth", "link_latency", "allocation",
                  "servers_per_pod", "core_switches", "core_bandwidth", "core_latency"});
    MultiNicConfig cfg;
    parse_servers(f, cfg);
    cfg.nics_per_server = positive_int(f, "nics_per_server", cfg.nics_per_server, 64);
    cfg.link_bandwidth = f.bandwidth_or("link_bandwidth", cfg.link_bandwidth);
    cfg.link_latency = f.duration_or("link_latency", cfg.link_latency);
    cfg.servers_per_pod = f.has("servers_per_pod") ? positive_int(f, "servers_per_pod", 1) : 0;
    cfg.core_switches = positive_int(f, "core_switches", cfg.core_switches, 1024);
    cfg.core_bandwidth = f.bandwidth_or("core_bandwidth", 0.0);
    cfg.core_latency = f.duration_or("core_latency", 0.0);
    if (!cfg.servers_per_pod)
      for (const char* key : {"core_switches", "core_bandwidth", "core_latency"})
        if (f.has(key)) throw InputError(file, f.field(key), "only clusters with pods (servers_per_pod) have a core");
    const BandwidthAllocation allocation =
        f.has("allocation") ? allocation_from_yaml(f.node("allocation"), cfg.servers, cfg.nics_per_server * cfg.link_bandwidth,
                                                   file, path.empty() ? "allocation" : path + ".allocation")
                            : BandwidthAllocation::uniform(cfg.servers, cfg.nics_per_server * cfg.link_bandwidth);
    c = make_multi_nic(cfg, allocation, src);
  } else {
    const std::vector<std::string> types = {"nvlink-servers", "quickp", "full-mesh", "non-blocking", "fat-tree", "spine-leaf",
                                            "multi-nic"};
    std::string hint = nearest_word(type, types);
    throw InputError(file, f.field("type"),
                     fmt::format("unknown cluster type '{}'{} (valid: nvlink-servers, quickp, full-mesh, non-blocking, "
                                 "fat-tree, spine-leaf, multi-nic)",
                                 type, hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  c.finalize(file);
  return c;
}
#undef PLACESIM_SERVER_KEYS

Cluster load_cluster_file(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  if (root.IsMap() && root["cluster"]) return cluster_from_yaml(root["cluster"], path, "cluster");
  return cluster_from_yaml(root, path, "");
}

}  // namespace placesim
