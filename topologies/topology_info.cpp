#include "topologies/topology_info.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <tuple>

#include "sim/core/units.h"

namespace placesim {
namespace {

bool close(double a, double b) { return a == b || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

// Max flow from the nodes of servers [0, half) to those of [half, servers) over the links that
// `use` accepts. Capacities are whole kB/s (push-relabel wants exact arithmetic).
template <class Use>
double half_to_half_max_flow(const Cluster& c, int servers, Use use) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  constexpr double kUnit = 1e3;
  const auto num_nodes = static_cast<int>(c.nodes().size());
  FlowGraph g(num_nodes + 2);
  const int source = num_nodes, sink = num_nodes + 1;
  auto capacity = boost::get(boost::edge_capacity, g);
  auto reverse = boost::get(boost::edge_reverse, g);
  auto add = [&](int a, int b, std::int64_t cap) {
    const auto e = boost::add_edge(a, b, g).first;
    const auto r = boost::add_edge(b, a, g).first;
    capacity[e] = cap;
    capacity[r] = 0;
    reverse[e] = r;
    reverse[r] = e;
  };
  std::int64_t total = 0;
  bool any = false;
  for (const Link& l : c.links()) {
    if (l.from < 0 || l.to < 0 || !use(l)) continue;
    const auto cap = static_cast<std::int64_t>(std::llround(l.bandwidth / kUnit));
    add(l.from, l.to, cap);
    total += cap;
    any = true;
  }
  if (!any) return 0;
  const int half = servers / 2;
  for (int v = 0; v < num_nodes; ++v) {
    const TopologyNode& node = c.nodes()[v];
    if (node.server < 0 || node.kind == NodeKind::Switch) continue;
    if (node.server < half) add(source, v, total + 1);
    else add(v, sink, total + 1);
  }
  return static_cast<double>(boost::push_relabel_max_flow(g, source, sink)) * kUnit;
}

std::string server_range(int first, int last) {
  return first == last ? fmt::format("server {}", first) : fmt::format("servers {}-{}", first, last);
}

}  // namespace

TopologyInfo describe_topology(const Cluster& c) {
  TopologyInfo info;
  info.gpus = c.num_devices();
  info.servers = c.num_servers();
  for (const Link& l : c.links()) (l.logical ? info.logical_links : info.physical_links)++;

  // Group the ordered pairs by their view, exactly first, then merging values within 1e-9.
  // Pairs with one route id have one view, and neighbours often share it (the GPUs of a server):
  // a pair is looked up only when its route differs from the last pair's.
  std::map<std::pair<double, double>, BandwidthLevel> exact;
  BandwidthLevel* level = nullptr;
  std::int64_t level_route = 0;
  auto count = [&](DeviceId a, DeviceId b, long pairs) {
    const std::int64_t route = c.route_id(a, b);
    if (level == nullptr || route != level_route) {
      info.max_paths = std::max(info.max_paths, c.num_paths(a, b));
      auto [it, fresh] = exact.try_emplace({-c.bandwidth(a, b), c.latency(a, b)});
      if (fresh) it->second = {c.bandwidth(a, b), c.latency(a, b), 0, a, b};
      level = &it->second;
      level_route = route;
    }
    level->pairs += pairs;
  };
  if (c.views_by_server()) {
    // Every GPU pair within a server, and between two servers one pair standing for all of theirs:
    // servers x servers routes, not GPUs x GPUs (16,384 GPUs: 4 million, not 268).
    std::vector<std::vector<DeviceId>> by_server(static_cast<std::size_t>(info.servers));
    for (DeviceId g = 0; g < info.gpus; ++g) by_server[static_cast<std::size_t>(c.device(g).server)].push_back(g);
    for (const auto& gpus : by_server)
      for (const DeviceId a : gpus)
        for (const DeviceId b : gpus)
          if (a != b) count(a, b, 1);
    for (const auto& from : by_server)
      for (const auto& to : by_server)
        if (&from != &to && !from.empty() && !to.empty())
          count(from.front(), to.front(), static_cast<long>(from.size() * to.size()));
  } else {
    for (DeviceId a = 0; a < info.gpus; ++a)
      for (DeviceId b = 0; b < info.gpus; ++b)
        if (a != b) count(a, b, 1);
  }
  for (const auto& [key, found] : exact) {
    if (!info.levels.empty() && close(info.levels.back().bandwidth, found.bandwidth) &&
        close(info.levels.back().latency, found.latency))
      info.levels.back().pairs += found.pairs;
    else
      info.levels.push_back(found);
  }

  if (info.servers >= 2) {
    info.bisection_bandwidth = half_to_half_max_flow(c, info.servers, [](const Link& l) { return !l.logical; });
    if (info.logical_links > 0)
      info.allocated_bisection = half_to_half_max_flow(c, info.servers, [](const Link& l) { return l.logical; });
  }
  return info;
}

std::string format_topology_info(const Cluster& c, const TopologyInfo& info) {
  std::ostringstream out;
  out << fmt::format("cluster           {}\n", c.description);
  if (!c.fabric.type.empty()) out << fmt::format("fabric            {}\n", c.fabric.type);
  // GPU memory and speed, grouped.
  std::map<std::pair<double, double>, int> kinds;
  for (const Device& d : c.devices()) ++kinds[{d.memory_bytes, d.compute_speed}];
  std::string gpus;
  for (const auto& [kind, count] : kinds)
    gpus += fmt::format("{}{} x {}{}", gpus.empty() ? "" : ", ", count, format_bytes(kind.first),
                        kind.second == 1.0 ? "" : fmt::format(" at speed x{}", kind.second));
  out << fmt::format("GPUs              {} in {} server{} ({})\n", info.gpus, info.servers, info.servers == 1 ? "" : "s", gpus);
  out << fmt::format("links             {} one-way links{}\n", info.physical_links,
                     info.logical_links ? fmt::format(" + {} per-destination queues (rate caps)", info.logical_links) : "");
  out << fmt::format("paths per pair    up to {}{}\n", info.max_paths,
                     info.max_paths > 1 ? " (a transfer is split into one sub-flow per path)" : "");
  out << "bandwidth levels between GPU pairs (a lone transfer takes latency + bytes / bandwidth):\n";
  for (const BandwidthLevel& l : info.levels)
    out << fmt::format("  {:<14} latency {:<10} {:>9} ordered pairs, e.g. {} -> {}\n",
                       l.bandwidth > 0 ? format_bandwidth(l.bandwidth) : "none", format_duration(l.latency), l.pairs,
                       c.device(l.example_src).name, c.device(l.example_dst).name);
  if (info.servers >= 2) {
    const int half = info.servers / 2;
    const std::string cut = fmt::format("{} -> {}", server_range(0, half - 1), server_range(half, info.servers - 1));
    if (info.bisection_bandwidth > 0)
      out << fmt::format("bisection         {} ({}, max flow over the physical links, one direction)\n",
                         format_bandwidth(info.bisection_bandwidth), cut);
    else
      out << "bisection         unknown (the cluster records no node graph)\n";
    if (info.logical_links > 0)
      out << fmt::format("allocated across  {} (the same cut, summed over the allocation's queues)\n",
                         format_bandwidth(info.allocated_bisection));
  }
  out << fmt::format("oversubscription  {}\n",
                     c.fabric.oversubscription > 0 ? fmt::format("{:.4g}:1", c.fabric.oversubscription) : "unknown");
  for (const std::string& note : c.fabric.notes) out << fmt::format("                  {}\n", note);
  return out.str();
}

std::string topology_dot(const Cluster& c) {
  std::ostringstream out;
  auto id = [](int node) { return fmt::format("n{}", node); };
  out << "digraph cluster {\n  rankdir=BT;\n  node [fontsize=10];\n  edge [fontsize=8];\n";
  out << fmt::format("  label=\"{}\";\n", c.description);
  const auto nodes = c.nodes();
  std::map<int, std::vector<int>> by_server;
  for (int v = 0; v < static_cast<int>(nodes.size()); ++v) {
    if (nodes[v].kind == NodeKind::Switch) {
      out << fmt::format("  {} [label=\"{}\", shape=box, style=filled, fillcolor=lightgrey];\n", id(v), nodes[v].name);
    } else {
      by_server[nodes[v].server].push_back(v);
    }
  }
  for (const auto& [server, members] : by_server) {
    out << fmt::format("  subgraph cluster_server{} {{\n    label=\"server{}\";\n", server, server);
    for (int v : members)
      out << fmt::format("    {} [label=\"{}\", shape={}];\n", id(v), nodes[v].name,
                         nodes[v].kind == NodeKind::Gpu ? "ellipse" : "box");
    out << "  }\n";
  }
  // One edge per cable: a link with a reverse twin of equal bandwidth is drawn once, both ways.
  using Key = std::tuple<int, int, double, bool>;
  std::map<Key, int> remaining;
  for (const Link& l : c.links())
    if (l.from >= 0 && l.to >= 0) ++remaining[{l.from, l.to, l.bandwidth, l.logical}];
  for (const Link& l : c.links()) {
    if (l.from < 0 || l.to < 0) continue;
    int& mine = remaining[{l.from, l.to, l.bandwidth, l.logical}];
    if (mine == 0) continue;  // drawn already, as the twin of an earlier link
    --mine;
    // Queues are per direction (an allocation is not symmetric): each is drawn on its own.
    auto twin = remaining.find({l.to, l.from, l.bandwidth, l.logical});
    const bool both = !l.logical && twin != remaining.end() && twin->second > 0;
    if (both) --twin->second;
    out << fmt::format("  {} -> {} [{}label=\"{}{}\"{}];\n", id(l.from), id(l.to), both ? "dir=both, " : "",
                       l.logical ? "queue " : "", format_bandwidth(l.bandwidth),
                       l.logical ? ", style=dashed, constraint=false" : "");
  }
  out << "}\n";
  return out.str();
}

}  // namespace placesim
