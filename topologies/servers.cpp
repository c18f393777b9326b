#include "topologies/servers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

void ConfigSource::fail(const std::string& key, const std::string& what) const { throw InputError(file, name(key), what); }

namespace {

double positive_bytes(const YamlFields& f, std::string_view key, double fallback) {
  const double v = f.bytes_or(key, fallback);
  if (!(v > 0)) throw InputError(f.file(), f.field(key), "expected a positive memory size");
  return v;
}

double relative_speed(const YamlFields& f, std::string_view key, double fallback) {
  const double v = f.number_or(key, fallback);
  if (!(v > 0)) throw InputError(f.file(), f.field(key), fmt::format("expected a number greater than zero, got {}", v));
  check_ratio_range(v, f.string(key), f.file(), f.field(key));
  return v;
}

}  // namespace

void parse_server_overrides(const YamlFields& f, std::string_view, GpuServersConfig& cfg) {
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
    base.gpu_speed = o.has("gpu_speed") ? relative_speed(o, "gpu_speed", 0) : 0;
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
      if (v > (1 << 20))
        throw InputError(f.file(), o.field(o.has("server") ? "server" : "servers"),
                         fmt::format("server {} does not exist", v));
      ServerOverride one = base;
      one.server = static_cast<int>(v);
      cfg.overrides.push_back(one);
    }
  }
}

void check_server_overrides(const YamlFields& f, const GpuServersConfig& cfg) {
  if (!f.has("server_overrides")) return;
  // Walk the list again for the entry to name: cfg.overrides has one element per server index.
  const YAML::Node list = f.node("server_overrides");
  for (std::size_t i = 0; i < list.size(); ++i) {
    YamlFields o(list[i], f.file(), fmt::format("{}.server_overrides[{}]", f.path(), i));
    const std::string key = o.has("server") ? "server" : "servers";
    std::vector<YAML::Node> indices;
    if (o.has("server")) indices.push_back(o.node("server"));
    else
      for (const auto& n : o.node("servers")) indices.push_back(n);
    for (const YAML::Node& n : indices) {
      const long v = std::stol(n.Scalar());  // parse_server_overrides checked the text
      if (v >= cfg.servers)
        throw InputError(f.file(), o.field(key), fmt::format("server {} does not exist (servers are 0..{})", v, cfg.servers - 1));
    }
  }
}

namespace fabric {

void require_positive(const ConfigSource& src, const std::string& key, double value, const char* what) {
  if (!(value > 0) || !std::isfinite(value))
    src.fail(key, fmt::format("expected {} greater than zero, got {}", what, value));
}

void require_latency(const ConfigSource& src, const std::string& key, double value) {
  if (!(value >= 0) || !std::isfinite(value)) src.fail(key, fmt::format("expected a non-negative latency, got {}", value));
}

void require_count(const ConfigSource& src, const std::string& key, long value, long min, long max) {
  if (value < min || value > max) src.fail(key, fmt::format("expected a whole number from {} to {}, got {}", min, max, value));
}

void validate_servers(const GpuServersConfig& cfg, const ConfigSource& src, long total_gpus) {
  require_count(src, "gpus_per_server", cfg.gpus_per_server, 1, kMaxClusterGpus);
  require_positive(src, "nvlink_bandwidth", cfg.nvlink_bandwidth);
  require_latency(src, "nvlink_latency", cfg.nvlink_latency);
  require_positive(src, "gpu_memory", cfg.gpu_memory, "a memory size");
  require_positive(src, "gpu_speed", cfg.gpu_speed, "a relative compute speed");
  if (total_gpus > kMaxClusterGpus)
    src.fail("servers", fmt::format("{} GPUs is more than placesim handles ({})", total_gpus, kMaxClusterGpus));
  for (std::size_t i = 0; i < cfg.overrides.size(); ++i) {
    const ServerOverride& o = cfg.overrides[i];
    const std::string key = fmt::format("server_overrides[{}]", i);
    if (o.server < 0 || o.server >= cfg.servers)
      src.fail(key + ".server", fmt::format("server {} does not exist (servers are 0..{})", o.server, cfg.servers - 1));
    if (o.gpu_memory != 0) require_positive(src, key + ".gpu_memory", o.gpu_memory, "a memory size");
    if (o.gpu_speed != 0) require_positive(src, key + ".gpu_speed", o.gpu_speed, "a relative compute speed");
  }
}

// Adds GPUs (gpu<g>, numbered across servers), their NVLink up and down links in that order,
// server nodes, and the GPUs' up and down stages.
Servers add_servers(Cluster& c, const GpuServersConfig& cfg, const std::vector<int>& gpus_per_server) {
  Servers s;
  c.nvlink_sharp = cfg.nvlink_sharp;
  c.gpu_model = cfg.gpu_model;
  s.count = static_cast<int>(gpus_per_server.size());
  s.first_gpu.assign(1, 0);
  for (int g : gpus_per_server) s.first_gpu.push_back(s.first_gpu.back() + g);
  std::vector<double> memory(s.count, cfg.gpu_memory), speed(s.count, cfg.gpu_speed);
  for (const ServerOverride& o : cfg.overrides) {
    if (o.gpu_memory > 0) memory[o.server] = o.gpu_memory;
    if (o.gpu_speed > 0) speed[o.server] = o.gpu_speed;
  }
  if (cfg.collectives == CollectiveModel::Nccl) {
    c.nccl = nccl_calibrated_costs();
    c.fabric.notes.push_back("collectives: as NCCL 2.18 runs them (protocols, latencies, channels; docs/collectives.md)");
  }
  if (cfg.nvlink_sharp) c.fabric.notes.push_back("NVSwitches reduce in the switch (NVLink SHARP): NVLS all-reduce");
  for (int srv = 0; srv < s.count; ++srv) s.node.push_back(c.add_node({fmt::format("server{}", srv), NodeKind::Server, srv}));
  for (int srv = 0; srv < s.count; ++srv)
    for (int g = s.first_gpu[srv]; g < s.first_gpu[srv + 1]; ++g) {
      c.add_device({fmt::format("gpu{}", g), srv, memory[srv], speed[srv]});
      const int node = c.add_node({fmt::format("gpu{}", g), NodeKind::Gpu, srv});
      const int up = c.add_link({fmt::format("gpu{}-nvlink-up", g), cfg.nvlink_bandwidth, cfg.nvlink_latency, node, s.node[srv]});
      const int down = c.add_link({fmt::format("gpu{}-nvlink-down", g), cfg.nvlink_bandwidth, cfg.nvlink_latency, s.node[srv], node});
      s.server_of.push_back(srv);
      s.gpu_up_stage.push_back(c.add_path_set({RoutePath{{up}, 1.0}}));
      s.gpu_down_stage.push_back(c.add_path_set({RoutePath{{down}, 1.0}}));
    }
  return s;
}

ServerRouting::ServerRouting(Servers layout) : servers_(std::move(layout)) {
  for (int srv = 0; srv < servers_.count; ++srv) max_gpus_ = std::max(max_gpus_, servers_.gpus(srv));
}

Route ServerRouting::route(DeviceId src, DeviceId dst) const {
  const int sa = servers_.server_of[src], sb = servers_.server_of[dst];
  if (sa != sb) {
    Route r = between(src, sa, sb, dst);
    if (r.reachable()) r.id += static_cast<std::int64_t>(servers_.count) * max_gpus_ * max_gpus_;
    return r;
  }
  Route r;
  const std::int64_t a = src - servers_.first_gpu[sa], b = dst - servers_.first_gpu[sa];
  r.id = (static_cast<std::int64_t>(sa) * max_gpus_ + a) * max_gpus_ + b;
  r.num_stages = 2;
  r.stages[0] = servers_.gpu_up_stage[src];
  r.stages[1] = servers_.gpu_down_stage[dst];
  return r;
}

std::int64_t ServerRouting::num_routes() const {
  return static_cast<std::int64_t>(servers_.count) * max_gpus_ * max_gpus_ + num_routes_between();
}

SwitchRouting::SwitchRouting(Servers layout, std::vector<int> nic_up_stage, std::vector<int> nic_down_stage)
    : ServerRouting(std::move(layout)), nic_up_stage_(std::move(nic_up_stage)), nic_down_stage_(std::move(nic_down_stage)) {}

Route SwitchRouting::between(DeviceId, int sa, int sb, DeviceId) const {
  Route r;
  r.id = static_cast<std::int64_t>(sa) * servers().count + sb;
  r.num_stages = 2;
  r.stages[0] = nic_up_stage_[sa];
  r.stages[1] = nic_down_stage_[sb];
  return r;
}

std::int64_t SwitchRouting::num_routes_between() const {
  return static_cast<std::int64_t>(servers().count) * servers().count;
}

std::vector<int> uniform_servers(const GpuServersConfig& cfg) { return std::vector<int>(cfg.servers, cfg.gpus_per_server); }

std::string servers_phrase(const GpuServersConfig& cfg, int servers) {
  const std::string gpus = cfg.gpu_model.empty() ? (cfg.gpus_per_server == 1 ? "GPU" : "GPUs") : cfg.gpu_model;
  return fmt::format("{} server{} x {} {} (NVLink {}{})", servers, servers == 1 ? "" : "s", cfg.gpus_per_server, gpus,
                     format_bandwidth(cfg.nvlink_bandwidth), cfg.nvlink_sharp ? ", NVLink SHARP" : "");
}

void note_overrides(Cluster& c, const GpuServersConfig& cfg) {
  for (const ServerOverride& o : cfg.overrides) {
    std::string what;
    if (o.gpu_memory > 0) what += fmt::format("GPU memory {}", format_bytes(o.gpu_memory));
    if (o.gpu_speed > 0) what += fmt::format("{}compute speed x{}", what.empty() ? "" : ", ", o.gpu_speed);
    if (!what.empty()) c.fabric.notes.push_back(fmt::format("server {}: {}", o.server, what));
  }
}

// A one-way link from node `from` to node `to`, named after them.
int add_cable_link(Cluster& c, int from, int to, double bandwidth, double latency) {
  return c.add_link({fmt::format("{}-to-{}", c.nodes()[from].name, c.nodes()[to].name), bandwidth, latency, from, to});
}

Nics add_single_nics(Cluster& c, const Servers& s, const std::vector<int>& switch_of_server, double bandwidth, double latency) {
  return add_server_nics(c, s, switch_of_server, 1, bandwidth, latency);
}

Nics add_server_nics(Cluster& c, const Servers& s, const std::vector<int>& switch_of_server, int nics_per_server, double bandwidth,
                     double latency) {
  Nics n;
  n.per_server = nics_per_server;
  for (int srv = 0; srv < s.count; ++srv)
    for (int i = 0; i < nics_per_server; ++i) {
      const std::string nic = nics_per_server == 1 ? "nic" : fmt::format("nic{}", i);
      const int up = c.add_link({fmt::format("server{}-{}-up", srv, nic), bandwidth, latency, s.node[srv], switch_of_server[srv]});
      const int down = c.add_link({fmt::format("server{}-{}-down", srv, nic), bandwidth, latency, switch_of_server[srv], s.node[srv]});
      n.up_stage.push_back(c.add_path_set({RoutePath{{up}, 1.0}}));
      n.down_stage.push_back(c.add_path_set({RoutePath{{down}, 1.0}}));
    }
  return n;
}

void require_nics_divide(const ConfigSource& src, int nics_per_server, int gpus_per_server) {
  require_count(src, "nics_per_server", nics_per_server, 1, 64);
  if (gpus_per_server % nics_per_server != 0)
    src.fail("nics_per_server", fmt::format("expected a divisor of gpus_per_server ({}): every NIC serves as many GPUs, got {}",
                                            gpus_per_server, nics_per_server));
}

std::string ratio(double r) { return fmt::format("{:.4g}:1", r); }

std::string nics_phrase(int nics_per_server, double bandwidth) {
  if (nics_per_server == 1) return "NIC " + format_bandwidth(bandwidth);
  return fmt::format("{} NICs of {} per server", nics_per_server, format_bandwidth(bandwidth));
}

double parse_oversubscription(const YamlFields& f, std::string_view key) {
  const std::string text = f.string(key);
  const auto colon = text.find(':');
  auto number = [&](std::string_view s) {
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !(v > 0) || !std::isfinite(v))
      throw_field_error(f, key, fmt::format("expected a positive ratio such as 4 or '4:1', got '{}'", text));
    return v;
  };
  const double r = colon == std::string::npos
                       ? number(text)
                       : number(std::string_view(text).substr(0, colon)) / number(std::string_view(text).substr(colon + 1));
  // Uplinks are sized from it: a ratio of 1e-300 would make them infinitely fast.
  check_ratio_range(r, text, f.file(), f.field(key));
  return r;
}

}  // namespace fabric

}  // namespace placesim
