#include "topologies/fabrics.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "sim/errors.h"
#include "sim/units.h"
#include "topologies/cluster_config.h"

namespace placesim {

void ConfigSource::fail(const std::string& key, const std::string& what) const { throw InputError(file, name(key), what); }

namespace {

void require_positive(const ConfigSource& src, const std::string& key, double value, const char* what = "a bandwidth") {
  if (!(value > 0) || !std::isfinite(value))
    src.fail(key, fmt::format("expected {} greater than zero, got {}", what, value));
}

void require_latency(const ConfigSource& src, const std::string& key, double value) {
  if (!(value >= 0) || !std::isfinite(value)) src.fail(key, fmt::format("expected a non-negative latency, got {}", value));
}

void require_count(const ConfigSource& src, const std::string& key, long value, long min, long max) {
  if (value < min || value > max) src.fail(key, fmt::format("expected a whole number from {} to {}, got {}", min, max, value));
}

// The servers of a fabric: GPUs joined by NVLink, one Server node per server (its NVSwitch and
// NICs), and the routes between GPUs of one server.
struct Servers {
  int count = 0;
  std::vector<int> first_gpu;  // per server, plus one past the end
  std::vector<int> node;       // per server: its Server node
  int gpus(int s) const { return first_gpu[s + 1] - first_gpu[s]; }
};

void validate_servers(const GpuServersConfig& cfg, const ConfigSource& src, long total_gpus) {
  require_count(src, "gpus_per_server", cfg.gpus_per_server, 1, kMaxClusterGpus);
  require_positive(src, "nvlink_bandwidth", cfg.nvlink_bandwidth);
  require_latency(src, "nvlink_latency", cfg.nvlink_latency);
  require_positive(src, "gpu_memory", cfg.gpu_memory, "a memory size");
  require_positive(src, "gpu_speed", cfg.gpu_speed, "a relative compute speed");
  if (total_gpus > kMaxClusterGpus)
    src.fail("servers", fmt::format("{} GPUs is more than placesim handles ({}: the pairwise view is quadratic)", total_gpus,
                                    kMaxClusterGpus));
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
// server nodes and the intra-server routes: GPU a's up link, then GPU b's down link.
Servers add_servers(Cluster& c, const GpuServersConfig& cfg, const std::vector<int>& gpus_per_server) {
  Servers s;
  s.count = static_cast<int>(gpus_per_server.size());
  s.first_gpu.assign(1, 0);
  for (int g : gpus_per_server) s.first_gpu.push_back(s.first_gpu.back() + g);
  std::vector<double> memory(s.count, cfg.gpu_memory), speed(s.count, cfg.gpu_speed);
  for (const ServerOverride& o : cfg.overrides) {
    if (o.gpu_memory > 0) memory[o.server] = o.gpu_memory;
    if (o.gpu_speed > 0) speed[o.server] = o.gpu_speed;
  }
  for (int srv = 0; srv < s.count; ++srv) s.node.push_back(c.add_node({fmt::format("server{}", srv), NodeKind::Server, srv}));
  std::vector<int> up_stage, down_stage;
  for (int srv = 0; srv < s.count; ++srv)
    for (int g = s.first_gpu[srv]; g < s.first_gpu[srv + 1]; ++g) {
      c.add_device({fmt::format("gpu{}", g), srv, memory[srv], speed[srv]});
      const int node = c.add_node({fmt::format("gpu{}", g), NodeKind::Gpu, srv});
      const int up = c.add_link({fmt::format("gpu{}-nvlink-up", g), cfg.nvlink_bandwidth, cfg.nvlink_latency, node, s.node[srv]});
      const int down = c.add_link({fmt::format("gpu{}-nvlink-down", g), cfg.nvlink_bandwidth, cfg.nvlink_latency, s.node[srv], node});
      up_stage.push_back(c.add_path_set({RoutePath{{up}, 1.0}}));
      down_stage.push_back(c.add_path_set({RoutePath{{down}, 1.0}}));
    }
  for (int srv = 0; srv < s.count; ++srv)
    for (int a = s.first_gpu[srv]; a < s.first_gpu[srv + 1]; ++a)
      for (int b = s.first_gpu[srv]; b < s.first_gpu[srv + 1]; ++b)
        if (a != b) c.use_route(a, b, c.add_route({up_stage[a], down_stage[b]}));
  return s;
}

// Every GPU pair of servers sa -> sb follows `route`.
void use_server_route(Cluster& c, const Servers& s, int sa, int sb, int route) {
  for (int a = s.first_gpu[sa]; a < s.first_gpu[sa + 1]; ++a)
    for (int b = s.first_gpu[sb]; b < s.first_gpu[sb + 1]; ++b) c.use_route(a, b, route);
}

std::vector<int> uniform_servers(const GpuServersConfig& cfg) { return std::vector<int>(cfg.servers, cfg.gpus_per_server); }

std::string servers_phrase(const GpuServersConfig& cfg, int servers) {
  return fmt::format("{} servers x {} GPUs (NVLink {})", servers, cfg.gpus_per_server, format_bandwidth(cfg.nvlink_bandwidth));
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

// The NIC links of a one-NIC server to its switch: "server<s>-nic-up" and "-down".
struct Nics {
  std::vector<int> up_stage, down_stage;  // per server: a one-link path set
};

Nics add_single_nics(Cluster& c, const Servers& s, const std::vector<int>& switch_of_server, double bandwidth, double latency) {
  Nics n;
  for (int srv = 0; srv < s.count; ++srv) {
    const int up = c.add_link({fmt::format("server{}-nic-up", srv), bandwidth, latency, s.node[srv], switch_of_server[srv]});
    const int down = c.add_link({fmt::format("server{}-nic-down", srv), bandwidth, latency, switch_of_server[srv], s.node[srv]});
    n.up_stage.push_back(c.add_path_set({RoutePath{{up}, 1.0}}));
    n.down_stage.push_back(c.add_path_set({RoutePath{{down}, 1.0}}));
  }
  return n;
}

std::string ratio(double r) { return fmt::format("{:.4g}:1", r); }

}  // namespace

// ---------------------------------------------------------------------------------------------

Cluster make_non_blocking(const NonBlockingConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  require_positive(src, "nic_bandwidth", cfg.nic_bandwidth);
  require_latency(src, "nic_latency", cfg.nic_latency);
  Cluster c;
  const Servers s = add_servers(c, cfg, uniform_servers(cfg));
  const int sw = c.add_node({"switch", NodeKind::Switch, -1});
  const Nics nics = add_single_nics(c, s, std::vector<int>(s.count, sw), cfg.nic_bandwidth, cfg.nic_latency);
  for (int a = 0; a < s.count; ++a)
    for (int b = 0; b < s.count; ++b)
      if (a != b) use_server_route(c, s, a, b, c.add_route({nics.up_stage[a], nics.down_stage[b]}));
  c.description = fmt::format("non-blocking switch: {}, one {} NIC each", servers_phrase(cfg, s.count),
                              format_bandwidth(cfg.nic_bandwidth));
  c.fabric.type = "non-blocking";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: one path per pair (NIC up, switch, NIC down)");
  note_overrides(c, cfg);
  return c;
}

Cluster make_nvlink_servers(const NvlinkServersConfig& config) {
  ConfigSource src;
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
  c.description = fmt::format("{} GPUs in {} servers of {} (NVLink {}), servers on a non-blocking switch ({})",
                              config.gpus, cfg.servers, config.gpus_per_server,
                              format_bandwidth(config.nvlink_bandwidth), format_bandwidth(config.ethernet_bandwidth));
  const Servers s = add_servers(c, cfg, per_server);
  const int sw = c.add_node({"switch", NodeKind::Switch, -1});
  const Nics nics = add_single_nics(c, s, std::vector<int>(s.count, sw), config.ethernet_bandwidth, config.ethernet_latency);
  for (int a = 0; a < s.count; ++a)
    for (int b = 0; b < s.count; ++b)
      if (a != b) use_server_route(c, s, a, b, c.add_route({nics.up_stage[a], nics.down_stage[b]}));
  c.fabric.type = "nvlink-servers";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: one path per pair (NIC up, switch, NIC down)");
  c.finalize("nvlink-servers cluster");  // callers get a usable cluster; finalize is idempotent
  return c;
}

// ---------------------------------------------------------------------------------------------

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
  const double agg_bw = cfg.aggregation_bandwidth > 0 ? cfg.aggregation_bandwidth : cfg.nic_bandwidth;
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
  const Nics nics = add_single_nics(c, s, edge_of_server, cfg.nic_bandwidth, cfg.nic_latency);
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

  // The paths between edge switches ea != eb through aggregation i (and core column j).
  auto path_between = [&](int ea, int eb, int i, int j) {
    const int pa = pod_of_edge(ea), pb = pod_of_edge(eb);
    if (pa == pb) return std::vector<int>{edge_up[ea][i], edge_down[eb][i]};
    return std::vector<int>{edge_up[ea][i], agg_up[pa][i * half + j], agg_down[pb][i * half + j], edge_down[eb][i]};
  };
  // Middle stages, built once per edge pair (ECMP) or per source edge and destination (static).
  std::vector<int> middle(static_cast<std::size_t>(edges) * (cfg.ecmp ? edges : servers), -1);
  auto middle_stage = [&](int ea, int eb, int dst) {
    int& id = middle[static_cast<std::size_t>(ea) * (cfg.ecmp ? edges : servers) + (cfg.ecmp ? eb : dst)];
    if (id >= 0) return id;
    std::vector<RoutePath> paths;
    if (cfg.ecmp) {
      const int columns = pod_of_edge(ea) == pod_of_edge(eb) ? 1 : half;
      for (int i = 0; i < half; ++i)
        for (int j = 0; j < columns; ++j) paths.push_back({path_between(ea, eb, i, j), 1.0 / (half * columns)});
    } else {
      paths.push_back({path_between(ea, eb, dst % half, (dst / half) % half), 1.0});  // d-mod-k
    }
    return id = c.add_path_set(std::move(paths));
  };
  for (int a = 0; a < servers; ++a)
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      const int ea = a / half, eb = b / half;
      const int route = ea == eb ? c.add_route({nics.up_stage[a], nics.down_stage[b]})
                                 : c.add_route({nics.up_stage[a], middle_stage(ea, eb, b), nics.down_stage[b]});
      use_server_route(c, s, a, b, route);
    }

  c.description = fmt::format("fat-tree k={}: {} in {} of {} pods, NIC {}, aggregation {}, core {}, {}", cfg.k,
                              servers_phrase(cfg, servers), pods, cfg.k, format_bandwidth(cfg.nic_bandwidth),
                              format_bandwidth(agg_bw), format_bandwidth(core_bw), cfg.ecmp ? "ECMP" : "static d-mod-k routing");
  c.fabric.type = "fat-tree";
  // Per tier, the capacity below a switch over the capacity above it (k/2 ports each way).
  const double edge_ratio = cfg.nic_bandwidth / agg_bw, agg_ratio = agg_bw / core_bw;
  c.fabric.oversubscription = std::max({1.0, edge_ratio, edge_ratio * agg_ratio});
  c.fabric.notes.push_back(fmt::format("tiers: edge uplinks {}, aggregation uplinks {} (nominal, full tree)", ratio(edge_ratio),
                                       ratio(agg_ratio)));
  c.fabric.notes.push_back(
      cfg.ecmp ? fmt::format("routing: ECMP, every transfer split into equal sub-flows over all shortest paths ({} within a "
                             "pod, {} between pods)",
                             half, half * half)
               : "routing: static, one path per server pair (d-mod-k on the destination, as SimGrid's FatTreeZone)");
  note_overrides(c, cfg);
  return c;
}

// ---------------------------------------------------------------------------------------------

Cluster make_spine_leaf(const SpineLeafConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers_per_leaf", cfg.servers_per_leaf, 1, kMaxClusterGpus);
  require_count(src, "spines", cfg.spines, 1, 1024);
  if (cfg.leaves != 0) require_count(src, "leaves", cfg.leaves, 1, kMaxClusterGpus);
  const int servers = cfg.servers == 0 ? cfg.leaves * cfg.servers_per_leaf : cfg.servers;
  if (servers == 0) src.fail("servers", "give the number of servers or of leaves");
  require_count(src, "servers", servers, 1, kMaxClusterGpus);
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
  double uplink = cfg.uplink_bandwidth;
  if (uplink != 0) {
    require_positive(src, "uplink_bandwidth", uplink);
  } else {
    require_positive(src, "oversubscription", cfg.oversubscription, "a ratio");
    uplink = cfg.servers_per_leaf * cfg.nic_bandwidth / (cfg.spines * cfg.oversubscription);
  }
  const double oversubscription = cfg.servers_per_leaf * cfg.nic_bandwidth / (cfg.spines * uplink);

  Cluster c;
  const Servers s = add_servers(c, full, uniform_servers(full));
  std::vector<int> leaf_node(leaves), spine_node(cfg.spines);
  for (int l = 0; l < leaves; ++l) leaf_node[l] = c.add_node({fmt::format("leaf{}", l), NodeKind::Switch, -1});
  for (int j = 0; j < cfg.spines; ++j) spine_node[j] = c.add_node({fmt::format("spine{}", j), NodeKind::Switch, -1});
  std::vector<int> leaf_of_server(servers);
  for (int srv = 0; srv < servers; ++srv) leaf_of_server[srv] = leaf_node[srv / cfg.servers_per_leaf];
  const Nics nics = add_single_nics(c, s, leaf_of_server, cfg.nic_bandwidth, cfg.nic_latency);
  std::vector<std::vector<int>> up(leaves, std::vector<int>(cfg.spines)), down = up;
  for (int l = 0; l < leaves; ++l)
    for (int j = 0; j < cfg.spines; ++j) {
      up[l][j] = add_cable_link(c, leaf_node[l], spine_node[j], uplink, cfg.uplink_latency);
      down[l][j] = add_cable_link(c, spine_node[j], leaf_node[l], uplink, cfg.uplink_latency);
    }
  // Middle stages per leaf pair: all spines (ECMP) or the one the destination picks (static).
  const int choices = cfg.ecmp ? 1 : cfg.spines;
  std::vector<int> middle(static_cast<std::size_t>(leaves) * leaves * choices, -1);
  auto middle_stage = [&](int la, int lb, int dst) {
    const int pick = cfg.ecmp ? 0 : dst % cfg.spines;
    int& id = middle[(static_cast<std::size_t>(la) * leaves + lb) * choices + pick];
    if (id >= 0) return id;
    std::vector<RoutePath> paths;
    if (cfg.ecmp)
      for (int j = 0; j < cfg.spines; ++j) paths.push_back({{up[la][j], down[lb][j]}, 1.0 / cfg.spines});
    else
      paths.push_back({{up[la][pick], down[lb][pick]}, 1.0});
    return id = c.add_path_set(std::move(paths));
  };
  for (int a = 0; a < servers; ++a)
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      const int la = a / cfg.servers_per_leaf, lb = b / cfg.servers_per_leaf;
      const int route = la == lb ? c.add_route({nics.up_stage[a], nics.down_stage[b]})
                                 : c.add_route({nics.up_stage[a], middle_stage(la, lb, b), nics.down_stage[b]});
      use_server_route(c, s, a, b, route);
    }

  c.description = fmt::format("spine-leaf: {} on {} leaves of {}, {} spines, NIC {}, uplinks {} ({} oversubscribed), {}",
                              servers_phrase(cfg, servers), leaves, cfg.servers_per_leaf, cfg.spines,
                              format_bandwidth(cfg.nic_bandwidth), format_bandwidth(uplink), ratio(oversubscription),
                              cfg.ecmp ? "ECMP" : "static routing");
  c.fabric.type = "spine-leaf";
  c.fabric.oversubscription = oversubscription;
  c.fabric.notes.push_back(cfg.ecmp ? fmt::format("routing: ECMP, transfers between leaves split into {} equal sub-flows, one per spine",
                                                  cfg.spines)
                                    : "routing: static, spine = destination server mod spines");
  note_overrides(c, cfg);
  return c;
}

// ---------------------------------------------------------------------------------------------

BandwidthAllocation BandwidthAllocation::uniform(int servers, double egress) {
  BandwidthAllocation a(servers);
  for (int s = 0; s < servers; ++s)
    for (int t = 0; t < servers; ++t)
      if (s != t) a.set(s, t, egress / (servers - 1));
  return a;
}

double BandwidthAllocation::row_sum(int s) const {
  double sum = 0;
  for (int t = 0; t < servers_; ++t) sum += (*this)(s, t);
  return sum;
}

void BandwidthAllocation::validate(int servers, double egress_limit, const std::string& source, const std::string& field) const {
  if (servers_ != servers)
    throw InputError(source, field, fmt::format("expected a {} x {} matrix (one row per server), got {} rows", servers, servers, servers_));
  for (int s = 0; s < servers_; ++s) {
    const std::string row = fmt::format("{}[{}]", field, s);
    for (int t = 0; t < servers_; ++t) {
      const double v = (*this)(s, t);
      if (!(v >= 0) || !std::isfinite(v))
        throw InputError(source, row, fmt::format("b({},{}) must be a finite bandwidth >= 0, got {}", s, t, v));
      if (s == t && v != 0) throw InputError(source, row, fmt::format("b({0},{0}) must be 0: a server does not send to itself", s));
    }
    const double sum = row_sum(s);
    if (sum > egress_limit * (1 + 1e-9))
      throw InputError(source, row,
                       fmt::format("server {} is given {} of egress in total, more than its NICs' {} (d * b)", s,
                                   format_bandwidth(sum), format_bandwidth(egress_limit)));
  }
}

std::vector<std::vector<NicQueue>> pack_nic_queues(const BandwidthAllocation& allocation, int s, int nics,
                                                   double link_bandwidth) {
  const int servers = allocation.servers();
  std::vector<std::vector<NicQueue>> queues(servers);
  // Slivers below this are not worth a queue (and would be sub-flows of a few bytes): a NIC
  // with less room left is skipped, a remainder that small joins the destination's last queue.
  const double sliver = 1e-6 * link_bandwidth;
  int nic = 0;
  double room = link_bandwidth;
  for (int offset = 1; offset < servers; ++offset) {
    const int t = (s + offset) % servers;
    double need = allocation(s, t);
    if (!(need > 0)) continue;
    while (need > 0) {
      if (room <= sliver && nic + 1 < nics) {
        ++nic;
        room = link_bandwidth;
      }
      double take = std::min(need, room);
      if (need - take <= sliver || nic + 1 == nics) take = need;  // the remainder stays here
      if (take <= 0) take = need;
      if (!queues[t].empty() && queues[t].back().nic == nic) queues[t].back().rate += take;
      else queues[t].push_back({nic, take});
      need -= take;
      room -= take;
    }
  }
  return queues;
}

Cluster make_multi_nic(const MultiNicConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  require_count(src, "nics_per_server", cfg.nics_per_server, 1, 64);
  require_positive(src, "link_bandwidth", cfg.link_bandwidth);
  return make_multi_nic(cfg, BandwidthAllocation::uniform(cfg.servers, cfg.nics_per_server * cfg.link_bandwidth), src);
}

Cluster make_multi_nic(const MultiNicConfig& cfg, const BandwidthAllocation& allocation, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxClusterGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  require_count(src, "nics_per_server", cfg.nics_per_server, 1, 64);
  require_positive(src, "link_bandwidth", cfg.link_bandwidth);
  require_latency(src, "link_latency", cfg.link_latency);
  const int d = cfg.nics_per_server;
  const int servers = cfg.servers;
  const double egress = d * cfg.link_bandwidth;
  allocation.validate(servers, egress, src.file, src.name("allocation"));
  if (cfg.servers_per_pod != 0) require_count(src, "servers_per_pod", cfg.servers_per_pod, 1, kMaxClusterGpus);
  const int per_pod = cfg.servers_per_pod > 0 ? cfg.servers_per_pod : servers;
  const int pods = (servers + per_pod - 1) / per_pod;
  require_count(src, "core_switches", cfg.core_switches, 1, 1024);
  const double core_bw = cfg.core_bandwidth > 0 ? cfg.core_bandwidth : cfg.link_bandwidth;
  if (cfg.core_bandwidth != 0) require_positive(src, "core_bandwidth", cfg.core_bandwidth);
  require_latency(src, "core_latency", cfg.core_latency);
  const int cores = pods > 1 ? cfg.core_switches : 0;

  Cluster c;
  const Servers s = add_servers(c, cfg, uniform_servers(cfg));
  // switch_node[p*d+i]: switch i of pod p; core_node[i*cores+k]: core k of plane i.
  std::vector<int> switch_node(static_cast<std::size_t>(pods) * d), core_node(static_cast<std::size_t>(d) * cores);
  for (int p = 0; p < pods; ++p)
    for (int i = 0; i < d; ++i)
      switch_node[p * d + i] = c.add_node({pods > 1 ? fmt::format("pod{}-switch{}", p, i) : fmt::format("switch{}", i), NodeKind::Switch, -1});
  for (int i = 0; i < d; ++i)
    for (int k = 0; k < cores; ++k) core_node[i * cores + k] = c.add_node({fmt::format("core{}.{}", i, k), NodeKind::Switch, -1});
  std::vector<std::vector<int>> nic_up(servers, std::vector<int>(d)), nic_down = nic_up;
  for (int srv = 0; srv < servers; ++srv)
    for (int i = 0; i < d; ++i) {
      const int sw = switch_node[(srv / per_pod) * d + i];
      nic_up[srv][i] = c.add_link({fmt::format("server{}-nic{}-up", srv, i), cfg.link_bandwidth, cfg.link_latency, s.node[srv], sw});
      nic_down[srv][i] = c.add_link({fmt::format("server{}-nic{}-down", srv, i), cfg.link_bandwidth, cfg.link_latency, sw, s.node[srv]});
    }
  // core_up[(p*d+i)*cores+k]: switch i of pod p -> core k of plane i; core_down: back.
  std::vector<int> core_up(static_cast<std::size_t>(pods) * d * cores), core_down = core_up;
  for (int p = 0; p < pods; ++p)
    for (int i = 0; i < d; ++i)
      for (int k = 0; k < cores; ++k) {
        core_up[(p * d + i) * cores + k] = add_cable_link(c, switch_node[p * d + i], core_node[i * cores + k], core_bw, cfg.core_latency);
        core_down[(p * d + i) * cores + k] = add_cable_link(c, core_node[i * cores + k], switch_node[p * d + i], core_bw, cfg.core_latency);
      }

  int stripes = 0, striped_pairs = 0;
  for (int a = 0; a < servers; ++a) {
    const auto queues = pack_nic_queues(allocation, a, d, cfg.link_bandwidth);
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      if (queues[b].empty()) {
        for (int x = s.first_gpu[a]; x < s.first_gpu[a + 1]; ++x)
          for (int y = s.first_gpu[b]; y < s.first_gpu[b + 1]; ++y) c.set_unreachable(x, y);
        continue;
      }
      double total = 0;
      for (const NicQueue& q : queues[b]) total += q.rate;
      const int pa = a / per_pod, pb = b / per_pod;
      std::vector<RoutePath> paths;
      for (const NicQueue& q : queues[b]) {
        const int queue = c.add_link({fmt::format("server{}-nic{}-queue-to-server{}", a, q.nic, b), q.rate, 0.0, s.node[a], s.node[b], true});
        if (pa == pb) {
          paths.push_back({{queue, nic_up[a][q.nic], nic_down[b][q.nic]}, q.rate / total});
        } else {
          for (int k = 0; k < cores; ++k)
            paths.push_back({{queue, nic_up[a][q.nic], core_up[(pa * d + q.nic) * cores + k],
                              core_down[(pb * d + q.nic) * cores + k], nic_down[b][q.nic]},
                             q.rate / (total * cores)});
        }
      }
      stripes += static_cast<int>(queues[b].size());
      striped_pairs += queues[b].size() > 1;
      use_server_route(c, s, a, b, c.add_route({c.add_path_set(std::move(paths))}));
    }
  }

  // Is it the uniform allocation?
  bool uniform = true;
  for (int a = 0; a < servers && uniform; ++a)
    for (int b = 0; b < servers; ++b)
      if (a != b && std::abs(allocation(a, b) - egress / (servers - 1)) > 1e-9 * egress) uniform = false;
  c.description = fmt::format("multi-NIC: {}, {} NICs of {} each (egress {}), {} allocation{}", servers_phrase(cfg, servers), d,
                              format_bandwidth(cfg.link_bandwidth), format_bandwidth(egress), uniform ? "uniform" : "explicit",
                              pods > 1 ? fmt::format(", pods of {} joined by {} core switches per NIC plane ({})", per_pod, cores,
                                                     format_bandwidth(core_bw))
                                       : "");
  c.fabric.type = "multi-nic";
  c.fabric.oversubscription = pods > 1 ? std::max(1.0, per_pod * cfg.link_bandwidth / (cores * core_bw)) : 1.0;
  c.fabric.notes.push_back(fmt::format("allocation: {}{}", uniform ? "uniform, b(s,t) = d*b/(servers-1) = " : "explicit",
                                       uniform && servers > 1 ? format_bandwidth(egress / (servers - 1)) : ""));
  c.fabric.notes.push_back(fmt::format("queues: {} per-NIC destination queues; {} server pairs striped over several NICs", stripes,
                                       striped_pairs));
  if (pods > 1)
    c.fabric.notes.push_back(fmt::format("routing: stripes between pods split into {} equal sub-flows, one per core switch", cores));
  note_overrides(c, cfg);
  return c;
}

}  // namespace placesim
