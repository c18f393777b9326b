// A collective's checks and the fabric's levels; the algorithms are in algorithms.cpp, their
// views in message_graph.cpp, collective_steps.cpp and closed_form.cpp.
#include "sim/collectives/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

std::string collective_problem(const CollectiveSpec& spec, const Cluster& cluster) {
  const std::size_t n = spec.group.size();
  const std::string op(enum_name<CollectiveOp>(kCollectiveOpNames, spec.op));
  const std::string alg(enum_name<CollectiveAlgorithm>(collective_algorithm_names(), spec.algorithm));
  if (n < 2) return fmt::format("a collective needs at least 2 GPUs, the group has {}", n);
  std::vector<char> seen(static_cast<std::size_t>(cluster.num_devices()), 0);
  for (DeviceId d : spec.group) {
    if (d < 0 || d >= cluster.num_devices())
      return fmt::format("GPU {} is not in the cluster (it has {} GPUs)", d, cluster.num_devices());
    if (seen[static_cast<std::size_t>(d)]++) return fmt::format("GPU {} is in the group twice", cluster.device(d).name);
  }
  if (!(spec.bytes >= 0) || !std::isfinite(spec.bytes)) return fmt::format("bytes must be >= 0, got {}", spec.bytes);
  if (spec.chunks < 1) return fmt::format("chunks must be >= 1, got {}", spec.chunks);
  // A condensed ring phase's flow counts its latencies in 32 bits (Tensor::latencies).
  if (spec.detail == CollectiveDetail::Condensed && 2.0 * static_cast<double>(n) * spec.chunks > 2e9)
    return fmt::format("condensed, a ring of {} GPUs in {} chunks pays more path latencies per flow than placesim counts "
                       "(2 x GPUs x chunks must stay below 2e9)",
                       n, spec.chunks);
  if ((spec.op == CollectiveOp::Broadcast || spec.op == CollectiveOp::Reduce) &&
      (spec.root < 0 || spec.root >= static_cast<int>(n)))
    return fmt::format("the root must be a rank of the group (0 to {}), got {}", n - 1, spec.root);
  if (spec.channels < 1 || spec.channels > 64) return fmt::format("channels must be 1 to 64, got {}", spec.channels);
  if (spec.tuned) {  // nccl_tuned checks each algorithm it considers
    if (!cluster.all_pairs_reachable())
      for (DeviceId a : spec.group)
        for (DeviceId b : spec.group)
          if (!cluster.reachable(a, b))
            return fmt::format("{} cannot reach {} in this cluster", cluster.device(a).name, cluster.device(b).name);
    return "";
  }
  if (!collective_supports(spec.op, spec.algorithm))
    return fmt::format("{} has no algorithm `{}`; it has: {}", op, alg, collective_algorithms_of(spec.op));
  const CollectiveAlgorithmInfo& algorithm = collective_algorithm(spec.algorithm);
  if (algorithm.power_of_two && !std::has_single_bit(n))
    return fmt::format("{} needs a power-of-two group, this one has {} GPUs (ring or direct take any)", alg, n);
  if (algorithm.nvls && !cluster.nvlink_sharp)
    return fmt::format("{} needs NVSwitches that reduce (nvlink_sharp: true, as the dgx-h100 preset has)", alg);
  if (algorithm.nvls && algorithm.across_servers) {
    const std::vector<std::vector<int>> servers = ranks_by_server(spec, cluster);
    if (servers.size() < 2)
      return fmt::format("{} runs across servers (NCCL runs it on two or more); this group is in one server: use nvls", alg);
    if (std::string why = uneven_servers_problem(servers, alg); !why.empty()) return why;
    if (spec.pin_channels && spec.channels != static_cast<int>(servers.front().size()))
      return fmt::format("{} runs one slice per GPU of a server: {} channels here, not {}", alg, servers.front().size(),
                         spec.channels);
  } else if (algorithm.nvls) {
    for (DeviceId d : spec.group)
      if (cluster.device(d).server != cluster.device(spec.group.front()).server)
        return fmt::format("{} runs inside one server; {} and {} are in servers {} and {}", alg,
                           cluster.device(spec.group.front()).name, cluster.device(d).name,
                           cluster.device(spec.group.front()).server, cluster.device(d).server);
  }
  if (!cluster.all_pairs_reachable())
    for (DeviceId a : spec.group)
      for (DeviceId b : spec.group)
        if (!cluster.reachable(a, b))
          return fmt::format("{} cannot reach {} in this cluster", cluster.device(a).name, cluster.device(b).name);
  // (After reachability: multi-level's tiers are the routes' hops.)
  if (algorithm.levels) {
    try {
      collective_levels(spec, cluster);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  }
  return "";
}

std::vector<std::vector<int>> ranks_by_server(const CollectiveSpec& spec, const Cluster& cluster) {
  std::map<int, std::vector<int>> by_server;
  for (std::size_t r = 0; r < spec.group.size(); ++r) by_server[cluster.device(spec.group[r]).server].push_back(static_cast<int>(r));
  std::vector<std::vector<int>> out;
  for (auto& [server, ranks] : by_server) out.push_back(std::move(ranks));
  return out;
}

std::string uneven_servers_problem(const std::vector<std::vector<int>>& servers, std::string_view algorithm) {
  for (const auto& s : servers)
    if (s.size() != servers.front().size())
      return fmt::format("{} needs the same number of the group's GPUs in every server; they hold {} and {}", algorithm,
                         servers.front().size(), s.size());
  return "";
}

std::vector<std::vector<std::vector<int>>> collective_levels(const CollectiveSpec& spec, const Cluster& cluster) {
  const std::string name(enum_name<CollectiveAlgorithm>(collective_algorithm_names(), spec.algorithm));
  const std::vector<std::vector<int>> servers = ranks_by_server(spec, cluster);
  if (const std::string why = uneven_servers_problem(servers, name); !why.empty()) throw std::invalid_argument(why);
  std::vector<std::vector<std::vector<int>>> levels{servers};
  // A group's ranks in canonical order: its children's, in order (a server's: rank order).
  std::vector<std::vector<int>> groups = servers;
  auto rings_over = [](const std::vector<std::vector<int>>& children) {
    std::vector<std::vector<int>> rings(children.front().size());
    for (const auto& child : children)
      for (std::size_t j = 0; j < child.size(); ++j) rings[j].push_back(child[j]);
    return rings;
  };
  if (spec.algorithm == CollectiveAlgorithm::Hierarchical) {
    if (servers.size() > 1) levels.push_back(rings_over(servers));
    return levels;
  }
  // Multi-level: tiers of servers by the hops between them (their first GPUs'), nested.
  const std::size_t N = servers.size();
  std::vector<std::vector<std::size_t>> hops(N, std::vector<std::size_t>(N, 0));
  std::set<std::size_t> distances;
  for (std::size_t a = 0; a < N; ++a)
    for (std::size_t b = 0; b < N; ++b)
      if (a != b) {
        hops[a][b] = cluster.route(spec.group[servers[a].front()], spec.group[servers[b].front()]).size();
        distances.insert(hops[a][b]);
      }
  // Per tier, which group each server is in: servers within `d` hops of each other, which must be
  // every pair of the group (else the fabric is not a tree of tiers for this group).
  std::vector<int> group_of(N);
  std::iota(group_of.begin(), group_of.end(), 0);  // tier 0: each server alone
  for (std::size_t d : distances) {
    std::vector<int> next(N, -1);
    int count = 0;
    for (std::size_t a = 0; a < N; ++a) {
      if (next[a] >= 0) continue;
      for (std::size_t b = a; b < N; ++b)
        if (next[b] < 0 && (b == a || hops[a][b] <= d)) next[b] = count;
      ++count;
    }
    // A group is its first server and every server within d hops of it.
    auto server = [&](std::size_t x) { return cluster.device(spec.group[servers[x].front()]).server; };
    auto hops_text = [](std::size_t h) { return fmt::format("{} hop{}", h, h == 1 ? "" : "s"); };
    auto first_of = [&](std::size_t x) {
      std::size_t r = 0;
      while (next[r] != next[x]) ++r;
      return r;
    };
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < N; ++b) {
        if (hops[a][b] != hops[b][a])
          throw std::invalid_argument(fmt::format(
              "multi-level needs routes of equal length both ways: server {} reaches server {} in {} and is reached in "
              "{}, so the fabric has no tiers for this group",
              server(a), server(b), hops_text(hops[a][b]), hops_text(hops[b][a])));
        if (a == b || (next[a] == next[b]) == (hops[a][b] <= d)) continue;
        if (next[a] == next[b])
          throw std::invalid_argument(fmt::format(
              "multi-level needs nested tiers: servers {} and {} are both within {} of server {}, but {} from each "
              "other, so no tier at {} holds the three (the fabric's tiers do not nest for this group)",
              server(a), server(b), hops_text(d), server(first_of(a)), hops_text(hops[a][b]), hops_text(d)));
        // The group formed first took one of them and not the other, which was free then.
        const std::size_t x = first_of(a) < first_of(b) ? a : b, y = x == a ? b : a;
        throw std::invalid_argument(fmt::format(
            "multi-level needs nested tiers: servers {} and {} are {} apart, but server {} is within {} of server {} and "
            "server {} is not (it is {} away), so no tier at {} holds the three (the fabric's tiers do not nest for this "
            "group)",
            server(x), server(y), hops_text(hops[a][b]), server(x), hops_text(d), server(first_of(x)), server(y),
            hops_text(hops[first_of(x)][y]), hops_text(d)));
      }
    // The groups of the previous tier under each new group, in order of their first server.
    std::map<int, std::vector<int>> children;  // new group -> previous groups
    std::vector<char> listed(N, 0);
    for (std::size_t a = 0; a < N; ++a)
      if (!listed[group_of[a]]) {
        listed[group_of[a]] = 1;
        children[next[a]].push_back(group_of[a]);
      }
    const std::size_t k = children.begin()->second.size();
    for (const auto& [g, kids] : children)
      if (kids.size() != k)
        throw std::invalid_argument(fmt::format(
            "multi-level needs the same number of groups under every group of a tier; at {} hops one holds {}, another {}",
            d, k, kids.size()));
    std::vector<std::vector<int>> merged;
    std::vector<std::vector<int>> level;
    for (const auto& [g, kids] : children) {
      std::vector<std::vector<int>> parts;
      for (int kid : kids) parts.push_back(groups[static_cast<std::size_t>(kid)]);
      for (auto& ring : rings_over(parts)) level.push_back(std::move(ring));
      std::vector<int> all;
      for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
      merged.push_back(std::move(all));
    }
    if (k > 1) levels.push_back(std::move(level));
    groups = std::move(merged);  // indexed by the new tier's group ids, 0 .. count - 1 in order
    group_of = std::move(next);
  }
  return levels;
}

}  // namespace placesim
