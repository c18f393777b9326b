// Routes on demand: every fabric's routing, computed from its structure when
// asked, gives what the fabric builders stored per GPU pair before -- the same paths, shares,
// latencies and bandwidths, and the same pairs sharing a route -- and so the same results in every
// engine; the per-pair copy of the view agrees with the view computed from the route; 16,384-GPU
// fabrics build.
#include <gtest/gtest.h>

#include <any>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/engines/simgrid_engine.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"
#include "topologies/topology_info.h"

using namespace placesim;

namespace {

// A cluster with the GPUs and links of `built` (so the same link ids) whose routes are stored in
// a table, made as the fabric builders made them before routes were computed on demand: the
// functions below are those builders' route loops, with links found by name.
class Reference {
 public:
  explicit Reference(const Cluster& built) {
    for (const Device& d : built.devices()) cluster.add_device(d);
    for (const Link& l : built.links()) link_id_[l.name] = cluster.add_link(l);
    // Fabrics number GPUs server by server.
    for (DeviceId g = 0; g < built.num_devices(); ++g)
      if (g == 0 || built.device(g).server != built.device(g - 1).server) first_gpu.push_back(g);
    first_gpu.push_back(built.num_devices());
  }

  int link(const std::string& name) const {
    const auto it = link_id_.find(name);
    if (it == link_id_.end()) throw std::logic_error("reference: no link " + name);
    return it->second;
  }
  int one_link_stage(const std::string& name) { return cluster.add_path_set({RoutePath{{link(name)}, 1.0}}); }
  int servers() const { return static_cast<int>(first_gpu.size()) - 1; }

  // add_servers: GPU a's up link, then GPU b's down link, a route per pair of one server.
  void intra_server_routes() {
    std::vector<int> up, down;
    for (int g = 0; g < cluster.num_devices(); ++g) {
      up.push_back(one_link_stage(fmt::format("gpu{}-nvlink-up", g)));
      down.push_back(one_link_stage(fmt::format("gpu{}-nvlink-down", g)));
    }
    for (int srv = 0; srv < servers(); ++srv)
      for (int a = first_gpu[srv]; a < first_gpu[srv + 1]; ++a)
        for (int b = first_gpu[srv]; b < first_gpu[srv + 1]; ++b)
          if (a != b) cluster.use_route(a, b, cluster.add_route({up[a], down[b]}));
  }
  void use_server_route(int sa, int sb, int route) {
    for (int a = first_gpu[sa]; a < first_gpu[sa + 1]; ++a)
      for (int b = first_gpu[sb]; b < first_gpu[sb + 1]; ++b) cluster.use_route(a, b, route);
  }
  // add_single_nics' stages, or add_server_nics' (server * per_server + i).
  void single_nics() { server_nics(1); }
  void server_nics(int per_server) {
    nics_per_server = per_server;
    for (int srv = 0; srv < servers(); ++srv)
      for (int i = 0; i < per_server; ++i) {
        const std::string nic = per_server == 1 ? "nic" : fmt::format("nic{}", i);
        nic_up.push_back(one_link_stage(fmt::format("server{}-{}-up", srv, nic)));
        nic_down.push_back(one_link_stage(fmt::format("server{}-{}-down", srv, nic)));
      }
  }
  // Between servers sa and sb, each GPU pair through its own NICs: make(NIC of a, NIC of b) gives
  // the route, one per NIC pair.
  void use_nic_routes(int sa, int sb, const std::function<int(int, int)>& make) {
    std::map<std::pair<int, int>, int> routes;
    auto nic_of = [&](int srv, int g) {
      return srv * nics_per_server + (g - first_gpu[srv]) / ((first_gpu[srv + 1] - first_gpu[srv]) / nics_per_server);
    };
    for (int a = first_gpu[sa]; a < first_gpu[sa + 1]; ++a)
      for (int b = first_gpu[sb]; b < first_gpu[sb + 1]; ++b) {
        const std::pair<int, int> nics{nic_of(sa, a), nic_of(sb, b)};
        auto [it, fresh] = routes.try_emplace(nics, -1);
        if (fresh) it->second = make(nics.first, nics.second);
        cluster.use_route(a, b, it->second);
      }
  }
  int nics_per_server = 1;

  Cluster cluster;
  std::vector<int> first_gpu;  // per server, plus one past the end
  std::vector<int> nic_up, nic_down;

 private:
  std::map<std::string, int> link_id_;
};

void switch_routes(Reference& r) {
  r.single_nics();
  for (int a = 0; a < r.servers(); ++a)
    for (int b = 0; b < r.servers(); ++b)
      if (a != b) r.use_server_route(a, b, r.cluster.add_route({r.nic_up[a], r.nic_down[b]}));
}

void fat_tree_routes(Reference& r, const FatTreeConfig& cfg) {
  r.server_nics(cfg.nics_per_server);
  const int half = cfg.k / 2, servers = r.servers();
  auto pod_of_edge = [&](int e) { return e / half; };
  auto edge = [&](int e) { return fmt::format("edge{}.{}", pod_of_edge(e), e % half); };
  auto agg = [&](int p, int i) { return fmt::format("agg{}.{}", p, i); };
  auto core = [&](int i, int j) { return fmt::format("core{}.{}", i, j); };
  auto cable = [&](const std::string& from, const std::string& to) { return r.link(from + "-to-" + to); };
  auto path_between = [&](int ea, int eb, int i, int j) {
    const int pa = pod_of_edge(ea), pb = pod_of_edge(eb);
    if (pa == pb) return std::vector<int>{cable(edge(ea), agg(pa, i)), cable(agg(pb, i), edge(eb))};
    return std::vector<int>{cable(edge(ea), agg(pa, i)), cable(agg(pa, i), core(i, j)), cable(core(i, j), agg(pb, i)),
                            cable(agg(pb, i), edge(eb))};
  };
  std::map<std::pair<int, int>, int> middle;
  auto middle_stage = [&](int ea, int eb, int dst) {
    const auto [it, fresh] = middle.try_emplace({ea, cfg.ecmp ? eb : dst}, -1);
    if (!fresh) return it->second;
    std::vector<RoutePath> paths;
    if (cfg.ecmp) {
      const int columns = pod_of_edge(ea) == pod_of_edge(eb) ? 1 : half;
      for (int i = 0; i < half; ++i)
        for (int j = 0; j < columns; ++j) paths.push_back({path_between(ea, eb, i, j), 1.0 / (half * columns)});
    } else {
      paths.push_back({path_between(ea, eb, dst % half, (dst / half) % half), 1.0});
    }
    return it->second = r.cluster.add_path_set(std::move(paths));
  };
  for (int a = 0; a < servers; ++a)
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      const int ea = a / half, eb = b / half;
      r.use_nic_routes(a, b, [&](int na, int nb) {
        return ea == eb ? r.cluster.add_route({r.nic_up[na], r.nic_down[nb]})
                        : r.cluster.add_route({r.nic_up[na], middle_stage(ea, eb, b), r.nic_down[nb]});
      });
    }
}

void spine_leaf_routes(Reference& r, const SpineLeafConfig& cfg) {
  r.server_nics(cfg.nics_per_server);
  const int servers = r.servers();
  auto up = [&](int l, int j) { return r.link(fmt::format("leaf{}-to-spine{}", l, j)); };
  auto down = [&](int l, int j) { return r.link(fmt::format("spine{}-to-leaf{}", j, l)); };
  std::map<std::tuple<int, int, int>, int> middle;
  auto middle_stage = [&](int la, int lb, int dst) {
    const int pick = cfg.ecmp ? 0 : dst % cfg.spines;
    const auto [it, fresh] = middle.try_emplace({la, lb, pick}, -1);
    if (!fresh) return it->second;
    std::vector<RoutePath> paths;
    if (cfg.ecmp)
      for (int j = 0; j < cfg.spines; ++j) paths.push_back({{up(la, j), down(lb, j)}, 1.0 / cfg.spines});
    else
      paths.push_back({{up(la, pick), down(lb, pick)}, 1.0});
    return it->second = r.cluster.add_path_set(std::move(paths));
  };
  for (int a = 0; a < servers; ++a)
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      const int la = a / cfg.servers_per_leaf, lb = b / cfg.servers_per_leaf;
      r.use_nic_routes(a, b, [&](int na, int nb) {
        return la == lb ? r.cluster.add_route({r.nic_up[na], r.nic_down[nb]})
                        : r.cluster.add_route({r.nic_up[na], middle_stage(la, lb, b), r.nic_down[nb]});
      });
    }
}

void rail_only_routes(Reference& r, const RailOnlyConfig& cfg) {
  const int rails = cfg.gpus_per_server;
  std::vector<std::vector<int>> up(r.servers(), std::vector<int>(rails)), down = up;
  for (int srv = 0; srv < r.servers(); ++srv)
    for (int j = 0; j < rails; ++j) {
      up[srv][j] = r.one_link_stage(fmt::format("server{}-rail{}-up", srv, j));
      down[srv][j] = r.one_link_stage(fmt::format("server{}-rail{}-down", srv, j));
    }
  for (int a = 0; a < r.servers(); ++a)
    for (int b = 0; b < r.servers(); ++b) {
      if (a == b) continue;
      for (int j = 0; j < rails; ++j) {
        const int route = r.cluster.add_route({up[a][j], down[b][j]});
        for (int g = r.first_gpu[a]; g < r.first_gpu[a + 1]; ++g) r.cluster.use_route(g, r.first_gpu[b] + j, route);
      }
    }
}

// Rail-optimized: every GPU pair's stages written out (NIC up, or PXN's NVLink up and relay; the
// middle between two leaves; NIC down), pairs with the same stages sharing one route.
void rail_optimized_routes(Reference& r, const RailOptimizedConfig& cfg) {
  const int rails = cfg.gpus_per_server / cfg.gpus_per_nic, servers = r.servers();
  const int units = (servers + cfg.servers_per_unit - 1) / cfg.servers_per_unit;
  const int per_pod = cfg.units_per_pod > 0 ? cfg.units_per_pod : units;
  const int pods = (units + per_pod - 1) / per_pod, cores = pods > 1 ? cfg.core_switches : 1;
  auto leaf = [&](int u, int rail) { return fmt::format("su{}-leaf{}", u, rail); };
  // ECMP: the spine tier as one node per pod and the core tier as one node (aggregate links).
  auto spine = [&](int p, int i) {
    const std::string name = cfg.ecmp ? "spines" : fmt::format("spine{}", i);
    return pods > 1 ? fmt::format("pod{}-{}", p, name) : name;
  };
  auto core = [&](int i, int j) { return cfg.ecmp ? std::string("core") : fmt::format("core{}.{}", i, j); };
  auto cable = [&](const std::string& from, const std::string& to) { return r.link(from + "-to-" + to); };
  std::vector<int> up, down, gpu_up, relay;
  for (int srv = 0; srv < servers; ++srv)
    for (int j = 0; j < rails; ++j) {
      up.push_back(r.one_link_stage(fmt::format("server{}-nic{}-up", srv, j)));
      down.push_back(r.one_link_stage(fmt::format("server{}-nic{}-down", srv, j)));
    }
  for (int g = 0; g < r.cluster.num_devices(); ++g) {
    const int srv = r.cluster.device(g).server, rail = (g - r.first_gpu[srv]) / cfg.gpus_per_nic;
    gpu_up.push_back(r.one_link_stage(fmt::format("gpu{}-nvlink-up", g)));
    relay.push_back(r.cluster.add_path_set(
        {RoutePath{{r.link(fmt::format("gpu{}-nvlink-down", g)), r.link(fmt::format("server{}-nic{}-up", srv, rail))}, 1.0}}));
  }
  std::map<std::tuple<int, int, int>, int> middle;
  auto middle_stage = [&](int ua, int ra, int ub, int rb, int dst) {
    const int pa = ua / per_pod, pb = ub / per_pod;
    const int pick = cfg.ecmp ? 0 : dst % (pa == pb ? cfg.spines : cfg.spines * cores);
    const auto [it, fresh] = middle.try_emplace({ua * rails + ra, ub * rails + rb, pick}, -1);
    if (!fresh) return it->second;
    const std::string la = leaf(ua, ra), lb = leaf(ub, rb);
    std::vector<RoutePath> paths;
    for (int i = 0; i < (cfg.ecmp ? 1 : cfg.spines); ++i)
      for (int j = 0; j < (pa == pb || cfg.ecmp ? 1 : cores); ++j) {
        if (!cfg.ecmp && (i != pick % cfg.spines || j != pick / cfg.spines)) continue;
        if (pa == pb) paths.push_back({{cable(la, spine(pa, i)), cable(spine(pb, i), lb)}, 1.0});
        else
          paths.push_back({{cable(la, spine(pa, i)), cable(spine(pa, i), core(i, j)), cable(core(i, j), spine(pb, i)),
                            cable(spine(pb, i), lb)},
                           1.0});
      }
    return it->second = r.cluster.add_path_set(std::move(paths));
  };
  std::map<std::vector<int>, int> routes;
  for (DeviceId a = 0; a < r.cluster.num_devices(); ++a)
    for (DeviceId b = 0; b < r.cluster.num_devices(); ++b) {
      const int sa = r.cluster.device(a).server, sb = r.cluster.device(b).server;
      if (sa == sb) continue;
      const int local_b = b - r.first_gpu[sb];
      const int ra = (a - r.first_gpu[sa]) / cfg.gpus_per_nic, rb = local_b / cfg.gpus_per_nic;
      const int out = cfg.pxn ? rb : ra;
      std::vector<int> stages;
      if (cfg.pxn && ra != rb) stages = {gpu_up[a], relay[r.first_gpu[sa] + local_b]};
      else stages = {up[sa * rails + out]};
      const int ua = sa / cfg.servers_per_unit, ub = sb / cfg.servers_per_unit;
      if (ua != ub || out != rb) stages.push_back(middle_stage(ua, out, ub, rb, sb));
      stages.push_back(down[sb * rails + rb]);
      auto [it, fresh] = routes.try_emplace(stages, -1);
      if (fresh) it->second = r.cluster.add_route(stages);
      r.cluster.use_route(a, b, it->second);
    }
}

void multi_nic_routes(Reference& r, const MultiNicConfig& cfg) {
  const int d = cfg.nics_per_server, servers = cfg.servers;
  const BandwidthAllocation allocation =
      cfg.allocation ? *cfg.allocation : BandwidthAllocation::uniform(servers, d * cfg.link_bandwidth);
  const int per_pod = cfg.servers_per_pod > 0 ? cfg.servers_per_pod : servers;
  const int pods = (servers + per_pod - 1) / per_pod;
  const int cores = pods > 1 ? cfg.core_switches : 0;
  auto switch_name = [&](int p, int i) { return pods > 1 ? fmt::format("pod{}-switch{}", p, i) : fmt::format("switch{}", i); };
  auto core_up = [&](int p, int i, int k) { return r.link(fmt::format("{}-to-core{}.{}", switch_name(p, i), i, k)); };
  auto core_down = [&](int p, int i, int k) { return r.link(fmt::format("core{}.{}-to-{}", i, k, switch_name(p, i))); };
  for (int a = 0; a < servers; ++a) {
    const auto queues = pack_nic_queues(allocation, a, d, cfg.link_bandwidth);
    for (int b = 0; b < servers; ++b) {
      if (a == b) continue;
      if (queues[b].empty()) {
        for (int x = r.first_gpu[a]; x < r.first_gpu[a + 1]; ++x)
          for (int y = r.first_gpu[b]; y < r.first_gpu[b + 1]; ++y) r.cluster.set_unreachable(x, y);
        continue;
      }
      double total = 0;
      for (const NicQueue& q : queues[b]) total += q.rate;
      const int pa = a / per_pod, pb = b / per_pod;
      std::vector<RoutePath> paths;
      for (const NicQueue& q : queues[b]) {
        const int queue = r.link(fmt::format("server{}-nic{}-queue-to-server{}", a, q.nic, b));
        const int up = r.link(fmt::format("server{}-nic{}-up", a, q.nic)), down = r.link(fmt::format("server{}-nic{}-down", b, q.nic));
        if (pa == pb) {
          paths.push_back({{queue, up, down}, q.rate / total});
        } else {
          for (int k = 0; k < cores; ++k)
            paths.push_back({{queue, up, core_up(pa, q.nic, k), core_down(pb, q.nic, k), down}, q.rate / (total * cores)});
        }
      }
      r.use_server_route(a, b, r.cluster.add_route({r.cluster.add_path_set(std::move(paths))}));
    }
  }
}

void full_mesh_routes(Reference& r) {
  const int n = r.cluster.num_devices();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) r.cluster.set_route(a, b, {r.link(fmt::format("gpu{}-to-gpu{}", a, b))});
}

// The explicit construction of a cluster a fabric builder made (from its recipe).
Cluster reference_of(const Cluster& built) {
  Reference r(built);
  const std::string& type = built.recipe->type;
  const std::any& config = built.recipe->config;
  if (type == "full-mesh") {
    full_mesh_routes(r);
  } else {
    r.intra_server_routes();
    if (type == "non-blocking" || type == "nvlink-servers") switch_routes(r);
    else if (type == "fat-tree") fat_tree_routes(r, std::any_cast<const FatTreeConfig&>(config));
    else if (type == "spine-leaf") spine_leaf_routes(r, std::any_cast<const SpineLeafConfig&>(config));
    else if (type == "rail-only") rail_only_routes(r, std::any_cast<const RailOnlyConfig&>(config));
    else if (type == "rail-optimized") rail_optimized_routes(r, std::any_cast<const RailOptimizedConfig&>(config));
    else if (type == "multi-nic") multi_nic_routes(r, std::any_cast<const MultiNicConfig&>(config));
    else throw std::logic_error("reference: no explicit construction of " + type);
  }
  r.cluster.finalize("reference");
  return std::move(r.cluster);
}

bool same_doubles(double a, double b) { return a == b; }  // exact: infinities included

// The first difference between the two clusters' routes of src -> dst, or "".
std::string route_difference(const Cluster& built, const Cluster& ref, DeviceId a, DeviceId b) {
  const std::string pair = fmt::format("{} -> {}: ", a, b);
  if (built.reachable(a, b) != ref.reachable(a, b)) return pair + "reachability";
  if (!same_doubles(built.latency(a, b), ref.latency(a, b))) return pair + fmt::format("latency {} vs {}", built.latency(a, b), ref.latency(a, b));
  if (!same_doubles(built.bandwidth(a, b), ref.bandwidth(a, b)))
    return pair + fmt::format("bandwidth {} vs {}", built.bandwidth(a, b), ref.bandwidth(a, b));
  if (built.num_paths(a, b) != ref.num_paths(a, b)) return pair + "number of paths";
  if (built.route(a, b) != ref.route(a, b)) return pair + "first path";
  const std::vector<RoutePath> p = built.paths(a, b), q = ref.paths(a, b);
  if (p.size() != q.size()) return pair + "paths";
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (p[k].links != q[k].links) return pair + fmt::format("links of path {}", k);
    if (!same_doubles(p[k].share, q[k].share)) return pair + fmt::format("share of path {}: {} vs {}", k, p[k].share, q[k].share);
  }
  return "";
}

// Every pair (or those that `sample` accepts) routes alike in both, and pairs share a route in
// one exactly when they do in the other (the engines' path classes are per route).
template <class Sample>
std::string routes_difference(const Cluster& built, const Cluster& ref, Sample sample) {
  if (built.num_devices() != ref.num_devices()) return "GPUs";
  if (built.all_pairs_reachable() != ref.all_pairs_reachable()) return "all_pairs_reachable";
  std::map<std::int64_t, std::int64_t> to_ref, to_built;
  for (DeviceId a = 0; a < built.num_devices(); ++a)
    for (DeviceId b = 0; b < built.num_devices(); ++b) {
      if (a == b) continue;
      if (sample(a, b))
        if (std::string d = route_difference(built, ref, a, b); !d.empty()) return d;
      const std::int64_t x = built.route_id(a, b), y = ref.route_id(a, b);
      if ((x < 0) != (y < 0)) return fmt::format("{} -> {}: reachability", a, b);
      if (x < 0) continue;
      if (to_ref.try_emplace(x, y).first->second != y || to_built.try_emplace(y, x).first->second != x)
        return fmt::format("{} -> {}: shares its route with other pairs than before", a, b);
    }
  return "";
}

std::string routes_difference(const Cluster& built, const Cluster& ref) {
  return routes_difference(built, ref, [](DeviceId, DeviceId) { return true; });
}

// Small instances of every fabric, with the shapes their routes distinguish (partial pods and
// leaves, one-edge pods, k/2 = 3 for shares that are not powers of two, static routing,
// striped, unreachable and pod-crossing multi-NIC pairs).
std::vector<std::string> small_instances() {
  std::vector<std::string> out = {
      "{type: fat-tree, k: 4, gpus_per_server: 2, nic_latency: 1us, aggregation_bandwidth: 5GB/s, aggregation_latency: 2us, "
      "core_bandwidth: 3GB/s, core_latency: 3us, nvlink_latency: 1us}",
      "{type: fat-tree, k: 4, servers: 11, gpus_per_server: 1, ecmp: false, core_latency: 1us}",
      "{type: fat-tree, k: 6, servers: 20, gpus_per_server: 2, aggregation_bandwidth: 7GB/s, core_latency: 3us}",
      "{type: fat-tree, k: 6, servers: 20, gpus_per_server: 2, ecmp: false, aggregation_latency: 3us}",
      "{type: fat-tree, k: 2, gpus_per_server: 2}",
      "{type: fat-tree, k: 4, servers: 7, gpus_per_server: 4, nics_per_server: 2, core_latency: 1us}",
      "{type: fat-tree, k: 4, servers: 7, gpus_per_server: 4, nics_per_server: 4, ecmp: false}",
      "{type: spine-leaf, servers: 5, servers_per_leaf: 2, spines: 2, gpus_per_server: 4, nics_per_server: 2, ecmp: false}",
      "{type: spine-leaf, servers: 5, servers_per_leaf: 2, spines: 3, oversubscription: 3, uplink_latency: 1us}",
      "{type: spine-leaf, servers: 5, servers_per_leaf: 2, spines: 3, ecmp: false, gpus_per_server: 3}",
      "{type: spine-leaf, leaves: 4, servers: 5, servers_per_leaf: 2, spines: 1}",
      "{type: rail-only, servers: 3, gpus_per_server: 3, nic_latency: 2us}",
      "{type: rail-only, servers: 1, gpus_per_server: 4}",
      "{type: non-blocking, servers: 3, gpus_per_server: 2, server_overrides: [{server: 1, gpu_speed: 2}]}",
      "{type: nvlink-servers, gpus: 7, gpus_per_server: 3, ethernet_latency: 1us}",
      "{type: multi-nic, servers: 4, nics_per_server: 2, gpus_per_server: 2}",
      "{type: multi-nic, servers: 4, nics_per_server: 2, servers_per_pod: 2, core_switches: 2, core_latency: 1us}",
      "{type: multi-nic, servers: 4, nics_per_server: 2, link_bandwidth: 10GB/s, allocation: [[0, 15GB/s, 5GB/s, 0], "
      "[10GB/s, 0, 10GB/s, 0], [20GB/s, 0, 0, 0], [5GB/s, 5GB/s, 5GB/s, 0]]}",
      "{type: full-mesh, gpus: 5, latency: 1us}",
      "{type: rail-optimized, servers: 5, gpus_per_server: 4, servers_per_unit: 2, spines: 3, nic_latency: 1us, "
      "switch_latency: 100ns, nvlink_latency: 0.5us, oversubscription: 2}",
      "{type: rail-optimized, servers: 5, gpus_per_server: 4, gpus_per_nic: 2, servers_per_unit: 2, units_per_pod: 2, spines: 2, "
      "core_switches: 3, core_latency: 1us, ecmp: false}",
      "{type: rail-optimized, servers: 4, gpus_per_server: 2, servers_per_unit: 1, units_per_pod: 2, spines: 3, core_switches: 2, "
      "pxn: false, uplink_latency: 1us, core_bandwidth: 7GB/s}",
      "{type: rail-optimized, servers: 3, gpus_per_server: 3, servers_per_unit: 2, ecmp: false, pxn: false}",
  };
  for (const auto& [type, yaml] : testutil::registry_variants()) out.push_back(yaml);
  return out;
}

Cluster build(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "routes.yaml"); }

}  // namespace

TEST(Routes, EveryFabricRoutesAsItsExplicitConstructionDid) {
  for (const std::string& yaml : small_instances()) {
    const Cluster built = build(yaml);
    const Cluster ref = reference_of(built);
    EXPECT_EQ(routes_difference(built, ref), "") << yaml;
  }
}

TEST(Routes, EveryEngineGivesTheExplicitConstructionsResults) {
  std::mt19937 rng(7);
  for (const std::string& yaml : small_instances()) {
    const Cluster built = build(yaml);
    const Cluster ref = reference_of(built);
    const Graph g = testutil::random_dag(rng, 40);
    const std::vector<DeviceId> p = testutil::random_placement(rng, g, built);
    const Schedule s = Evaluator(g, built).schedule(p);
    EXPECT_EQ(s.latency, Evaluator(g, ref).latency(p)) << yaml;
    FlowEngine flow(g, built), ref_flow(g, ref);
    EXPECT_EQ(flow.latency(p), ref_flow.latency(p)) << yaml;
    EXPECT_EQ(flow.replay_latency(p, s.device_order), ref_flow.replay_latency(p, s.device_order)) << yaml;
    if (!built.all_pairs_reachable()) continue;  // SimGrid refuses a transfer that never arrives
    const SimulationResult a = simulate(g, built, p, s.device_order), b = simulate(g, ref, p, s.device_order);
    EXPECT_EQ(a.latency, b.latency) << yaml;
    EXPECT_EQ(a.subflows.size(), b.subflows.size()) << yaml;
  }
}

TEST(Routes, TheKeptViewIsTheViewOfTheRoute) {
  for (const std::string& yaml : small_instances()) {
    const Cluster c = build(yaml);
    ASSERT_LE(c.num_devices(), Cluster::kDenseViewMaxGpus);
    for (DeviceId a = 0; a < c.num_devices(); ++a)
      for (DeviceId b = 0; b < c.num_devices(); ++b) {
        const PairView kept = c.view(a, b), computed = c.route_view(a, b);
        ASSERT_TRUE(same_doubles(kept.latency, computed.latency) && same_doubles(kept.inv_bandwidth, computed.inv_bandwidth))
            << yaml << " " << a << " -> " << b;
      }
    // A restricted cluster (the portfolio confines strategies to a server so) sees its GPUs' views.
    std::vector<DeviceId> some;
    for (DeviceId d = c.num_devices() - 1; d >= 0; d -= 2) some.push_back(d);
    const Cluster r = c.restricted_to(some);
    for (std::size_t a = 0; a < some.size(); ++a)
      for (std::size_t b = 0; b < some.size(); ++b) {
        const auto x = static_cast<DeviceId>(a), y = static_cast<DeviceId>(b);
        ASSERT_EQ(r.paths(x, y).size(), c.paths(some[a], some[b]).size()) << yaml;
        ASSERT_TRUE(same_doubles(r.latency(x, y), c.latency(some[a], some[b])) &&
                    same_doubles(r.bandwidth(x, y), c.bandwidth(some[a], some[b])))
            << yaml;
      }
  }
}

// Above kDenseViewMaxGpus the view is computed per call: the same doubles as the explicit
// construction kept per pair, for every pair, and the same routes on a sample.
TEST(Routes, AboveTheKeptViewEveryPairMatchesTheExplicitConstruction) {
  for (const char* yaml : {"{type: fat-tree, k: 16, servers: 257, gpus_per_server: 8, aggregation_bandwidth: 7GB/s, core_latency: 1us}",
                           "{type: spine-leaf, servers: 257, servers_per_leaf: 16, spines: 6, gpus_per_server: 8, ecmp: false}",
                           "{type: rail-only, servers: 257, gpus_per_server: 8}",
                           "{type: rail-optimized, servers: 257, gpus_per_server: 8, servers_per_unit: 32, units_per_pod: 4, "
                           "spines: 4, core_switches: 2, switch_latency: 130ns}"}) {
    const Cluster built = build(yaml);
    ASSERT_GT(built.num_devices(), Cluster::kDenseViewMaxGpus);
    const Cluster ref = reference_of(built);
    for (DeviceId a = 0; a < built.num_devices(); ++a)
      for (DeviceId b = 0; b < built.num_devices(); ++b)
        ASSERT_TRUE(same_doubles(built.transfer_time(a, b, 3e6, 2), ref.transfer_time(a, b, 3e6, 2))) << yaml << a << " -> " << b;
    EXPECT_EQ(routes_difference(built, ref, [](DeviceId a, DeviceId b) { return (a * 7 + b * 13) % 97 == 0; }), "") << yaml;
  }
}

TEST(Routes, SixteenThousandGpusBuild) {
  for (const char* yaml : {"{type: fat-tree, k: 32, servers: 2048, gpus_per_server: 8}",
                           "{type: fat-tree, k: 42, servers: 16384, gpus_per_server: 1, ecmp: false}",
                           "{type: spine-leaf, servers: 2048, servers_per_leaf: 16, spines: 16, gpus_per_server: 8}",
                           "{type: rail-only, servers: 2048, gpus_per_server: 8}",
                           "{type: rail-optimized, servers: 2048, gpus_per_server: 8, units_per_pod: 8, spines: 32}",
                           "{type: non-blocking, servers: 2048, gpus_per_server: 8}",
                           "{type: nvlink-servers, gpus: 16384, gpus_per_server: 8}"}) {
    const Cluster c = build(yaml);
    EXPECT_EQ(c.num_devices(), 16384) << yaml;
    EXPECT_TRUE(c.all_pairs_reachable()) << yaml;
    // The first and last GPUs are in different pods, leaves or servers; the paths' shares and the
    // view agree with the paths (to rounding: the view adds the stages' latencies).
    const std::vector<RoutePath> paths = c.paths(0, 16383);
    ASSERT_EQ(static_cast<int>(paths.size()), c.num_paths(0, 16383)) << yaml;
    double shares = 0, latency = 0;
    for (const RoutePath& p : paths) {
      shares += p.share;
      double l = 0;
      for (int id : p.links) l += c.link(id).latency;
      latency = std::max(latency, l);
    }
    EXPECT_NEAR(shares, 1.0, 1e-12) << yaml;
    EXPECT_NEAR(c.latency(0, 16383), latency, 1e-15) << yaml;
    EXPECT_GT(c.bandwidth(0, 16383), 0) << yaml;
    const std::vector<DeviceId> one_server = {8, 9, 10, 11, 12, 13, 14, 15};
    EXPECT_EQ(c.restricted_to(one_server).num_devices(), 8) << yaml;
  }
}

TEST(Routes, LimitsNameWhatGrows) {
  EXPECT_INPUT_ERROR(build("{type: non-blocking, servers: 32769, gpus_per_server: 8}"), "servers",
                     "262152 GPUs is more than placesim handles (262144)");
  EXPECT_INPUT_ERROR(build("{type: fat-tree, k: 128, gpus_per_server: 2}"), "k",
                     "a full k=128 fat-tree has 524288 servers of 2 GPUs, more than placesim handles (262144 GPUs)");
  EXPECT_EQ(build("{type: fat-tree, k: 32, gpus_per_server: 2}").num_devices(), 16384);  // a full k=32 tree
  EXPECT_INPUT_ERROR(build("{type: multi-nic, servers: 1025, gpus_per_server: 4}"), "servers",
                     "4100 GPUs is more than a multi-nic cluster takes (4096");
  EXPECT_INPUT_ERROR(build("{type: full-mesh, gpus: 2048}"), "gpus", "at most 1024 GPUs");
}

TEST(Routes, TopologyInfoCountsEveryPair) {
  for (const std::string& yaml : small_instances()) {
    const Cluster c = build(yaml);
    const TopologyInfo info = describe_topology(c);
    long pairs = 0;
    int max_paths = 0;
    for (const BandwidthLevel& l : info.levels) pairs += l.pairs;
    for (DeviceId a = 0; a < c.num_devices(); ++a)
      for (DeviceId b = 0; b < c.num_devices(); ++b) max_paths = std::max(max_paths, c.num_paths(a, b));
    EXPECT_EQ(pairs, static_cast<long>(c.num_devices()) * (c.num_devices() - 1)) << yaml;
    EXPECT_EQ(info.max_paths, max_paths) << yaml;
  }
}
