#include "topologies/multi_nic.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

using namespace fabric;

namespace {

// Multi-NIC routes between servers: one stage, the stripes of the source's queue for the
// destination (each server pair has queue links of its own, so a table of server pairs).
class MultiNicRouting final : public ServerRouting {
 public:
  // pair_stage[a * servers + b]: the path set from server a to server b, -1 without bandwidth.
  MultiNicRouting(Servers layout, std::vector<std::int32_t> pair_stage)
      : ServerRouting(std::move(layout)), pair_stage_(std::move(pair_stage)) {
    const int n = servers().count;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b && pair_stage_[static_cast<std::size_t>(a) * n + b] < 0) all_pairs_reachable_ = false;
  }
  bool all_pairs_reachable() const override { return all_pairs_reachable_; }

 protected:
  Route between(DeviceId, int sa, int sb, DeviceId) const override {
    Route r;
    const std::int64_t pair = static_cast<std::int64_t>(sa) * servers().count + sb;
    if (pair_stage_[pair] < 0) return r;
    r.id = pair;
    r.num_stages = 1;
    r.stages[0] = pair_stage_[pair];
    return r;
  }
  std::int64_t num_routes_between() const override { return static_cast<std::int64_t>(pair_stage_.size()); }

 private:
  std::vector<std::int32_t> pair_stage_;
  bool all_pairs_reachable_ = true;
};

}  // namespace

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

Cluster make_multi_nic(const MultiNicConfig& config, const BandwidthAllocation& allocation, const ConfigSource& src) {
  MultiNicConfig cfg = config;
  cfg.allocation = allocation;
  return make_multi_nic(cfg, src);
}

Cluster make_multi_nic(const MultiNicConfig& cfg, const ConfigSource& src) {
  require_count(src, "servers", cfg.servers, 1, kMaxMultiNicGpus);
  require_count(src, "nics_per_server", cfg.nics_per_server, 1, 64);
  require_positive(src, "link_bandwidth", cfg.link_bandwidth);
  const BandwidthAllocation allocation =
      cfg.allocation ? *cfg.allocation : BandwidthAllocation::uniform(cfg.servers, cfg.nics_per_server * cfg.link_bandwidth);
  require_count(src, "servers", cfg.servers, 1, kMaxMultiNicGpus);
  validate_servers(cfg, src, static_cast<long>(cfg.servers) * cfg.gpus_per_server);
  if (static_cast<long>(cfg.servers) * cfg.gpus_per_server > kMaxMultiNicGpus)
    src.fail("servers", fmt::format("{} GPUs is more than a multi-nic cluster takes ({}: every server pair has queues of its own, "
                                    "links in proportion to the square of the servers)",
                                    static_cast<long>(cfg.servers) * cfg.gpus_per_server, kMaxMultiNicGpus));
  require_count(src, "nics_per_server", cfg.nics_per_server, 1, 64);
  require_positive(src, "link_bandwidth", cfg.link_bandwidth);
  require_latency(src, "link_latency", cfg.link_latency);
  const int d = cfg.nics_per_server;
  const int servers = cfg.servers;
  const double egress = d * cfg.link_bandwidth;
  allocation.validate(servers, egress, src.file, src.name("allocation"));
  if (cfg.servers_per_pod != 0) require_count(src, "servers_per_pod", cfg.servers_per_pod, 1, kMaxMultiNicGpus);
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
  std::vector<std::int32_t> pair_stage(static_cast<std::size_t>(servers) * servers, -1);
  for (int a = 0; a < servers; ++a) {
    const auto queues = pack_nic_queues(allocation, a, d, cfg.link_bandwidth);
    for (int b = 0; b < servers; ++b) {
      if (a == b || queues[b].empty()) continue;  // no queue: unreachable
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
      pair_stage[static_cast<std::size_t>(a) * servers + b] = c.add_path_set(std::move(paths));
    }
  }
  c.set_routing(std::make_shared<MultiNicRouting>(s, std::move(pair_stage)));

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
  finish_cluster(c, "multi-nic", cfg, src.file.empty() ? "multi-nic cluster" : src.file);
  return c;
}

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
      if (text != "-" && text != "0") {
        refuse_bare_quantity(text, "bandwidth", "25Gbps or 20GB/s", file, entry_field);
        v = parse_bandwidth(text, file, entry_field);
      }
      a.set(s, t, v);
    }
  }
  a.validate(servers, egress, file, field);
  return a;
}

const MultiNicConfig* multi_nic_config_of(const Cluster& cluster) {
  if (!cluster.recipe || cluster.recipe->type != "multi-nic") return nullptr;
  return std::any_cast<MultiNicConfig>(&cluster.recipe->config);
}

TopologyType multi_nic_topology() {
  using C = MultiNicConfig;
  OptionSchema<C> s = gpu_servers_schema<C>();
  s.count("nics_per_server", &C::nics_per_server, "NICs per server (d); NIC i is wired to switch i", 1, 64, "3");
  s.bandwidth("link_bandwidth", &C::link_bandwidth, "bandwidth of each NIC (b), each direction", "10GB/s");
  s.duration("link_latency", &C::link_latency, "latency of each NIC link", Range::non_negative(), "5us");
  s.count("servers_per_pod", &C::servers_per_pod, "servers per pod (0: one pod); pods are joined by a core", 1, 1 << 20, "2");
  s.count("core_switches", &C::core_switches, "core switches per NIC plane (with pods)", 1, 1024, "2");
  s.bandwidth("core_bandwidth", &C::core_bandwidth, "pod switch <-> core switch links (with pods)", "5GB/s", "the NIC link's");
  s.duration("core_latency", &C::core_latency, "pod switch <-> core latency (with pods)", Range::non_negative(), "5us");
  // Read after every other key: the matrix is checked against servers and the egress d*b.
  s.add({"allocation", "matrix", "b(s,t): uniform, or one row per server of bandwidths ('0' or '-' for none)", "uniform", {},
         "[[0, 20GB/s, 10GB/s, 10GB/s], [10GB/s, 0, 20GB/s, 10GB/s], [10GB/s, 10GB/s, 0, 20GB/s], [20GB/s, 10GB/s, 10GB/s, 0]]"},
        [](const YamlFields&, std::string_view, C&) {});
  s.check([](const YamlFields& f, C& c) {
    if (!c.servers_per_pod)
      for (const char* key : {"core_switches", "core_bandwidth", "core_latency"})
        if (f.has(key)) throw_field_error(f, key, "only clusters with pods (servers_per_pod) have a core");
    if (f.has("allocation") && !(f.node("allocation").IsScalar() && f.node("allocation").Scalar() == "uniform"))
      c.allocation = allocation_from_yaml(f.node("allocation"), c.servers, c.nics_per_server * c.link_bandwidth, f.file(),
                                          f.path().empty() ? "allocation" : f.path() + ".allocation");
    else if (f.has("allocation"))
      allocation_from_yaml(f.node("allocation"), c.servers, c.nics_per_server * c.link_bandwidth, f.file(),
                           f.path().empty() ? "allocation" : f.path() + ".allocation");
  });
  return topology_type<C>("multi-nic", {}, "TopoOpt-style servers with several NICs and a per-destination bandwidth allocation",
                          s, make_multi_nic);
}

}  // namespace placesim
