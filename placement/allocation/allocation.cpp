#include "placement/allocation/allocation.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <stdexcept>

namespace placesim {

namespace {

// Per server, its GPUs in device order.
std::vector<std::vector<DeviceId>> gpus_by_server(const Cluster& cluster) {
  std::vector<std::vector<DeviceId>> out(static_cast<std::size_t>(cluster.num_servers()));
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) out[static_cast<std::size_t>(cluster.device(d).server)].push_back(d);
  return out;
}

}  // namespace

ServerGroups server_groups(const Cluster& cluster) {
  const std::vector<std::vector<DeviceId>> gpus = gpus_by_server(cluster);
  const int n = static_cast<int>(gpus.size());
  ServerGroups out;
  out.group_of_server.assign(static_cast<std::size_t>(n), 0);
  if (n <= 1) {
    out.count = n;
    return out;
  }
  const std::span<const TopologyNode> nodes = cluster.nodes();
  std::map<std::set<int>, int> group_of_key;
  for (int s = 0; s < n; ++s) {
    // GPU k of this server to GPU k of another: the first switch each path enters (its rail's
    // leaf on a rail-optimized fabric, the server's leaf elsewhere).
    const int t = (s + n / 2) % n == s ? (s + 1) % n : (s + n / 2) % n;
    std::set<int> key;
    for (std::size_t k = 0; k < gpus[static_cast<std::size_t>(s)].size(); ++k) {
      const auto& there = gpus[static_cast<std::size_t>(t)];
      if (there.empty()) break;
      const DeviceId a = gpus[static_cast<std::size_t>(s)][k], b = there[std::min(k, there.size() - 1)];
      if (!cluster.reachable(a, b)) continue;
      for (const RoutePath& p : cluster.paths(a, b))
        for (int l : p.links) {
          const int to = cluster.link(l).to;
          if (to >= 0 && static_cast<std::size_t>(to) < nodes.size() && nodes[static_cast<std::size_t>(to)].kind == NodeKind::Switch) {
            key.insert(to);
            break;
          }
        }
    }
    const auto [it, fresh] = group_of_key.try_emplace(key, static_cast<int>(group_of_key.size()));
    out.group_of_server[static_cast<std::size_t>(s)] = it->second;
  }
  out.count = static_cast<int>(group_of_key.size());
  return out;
}

std::vector<int> free_servers(const AllocationContext& context) {
  std::vector<int> out;
  for (std::size_t s = 0; s < context.owner.size(); ++s)
    if (context.owner[s] < 0) out.push_back(static_cast<int>(s));
  return out;
}

std::vector<std::vector<int>> free_servers_by_group(const AllocationContext& context) {
  std::vector<std::vector<int>> out(static_cast<std::size_t>(context.groups.count));
  for (int s : free_servers(context)) out[static_cast<std::size_t>(context.groups.group_of_server[static_cast<std::size_t>(s)])].push_back(s);
  return out;
}

std::string allocation_problem(const Cluster& cluster, std::span<const JobRequest> requests, std::string& field_out) {
  const std::vector<std::vector<DeviceId>> gpus = gpus_by_server(cluster);
  std::map<DeviceId, std::size_t> taken;
  long total = 0;
  for (std::size_t j = 0; j < requests.size(); ++j) {
    const JobRequest& r = requests[j];
    field_out = r.field;
    if (!r.explicit_gpus.empty()) {
      for (DeviceId g : r.explicit_gpus) {
        if (g < 0 || g >= cluster.num_devices())
          return fmt::format("job '{}': GPU {} is not in the cluster (GPUs 0-{})", r.name, g, cluster.num_devices() - 1);
        const auto [it, fresh] = taken.try_emplace(g, j);
        if (!fresh)
          return it->second == j ? fmt::format("job '{}': GPU {} is listed twice", r.name, g)
                                 : fmt::format("job '{}': GPU {} is job '{}''s too; jobs share links, not GPUs", r.name, g,
                                               requests[it->second].name);
      }
      total += static_cast<long>(r.explicit_gpus.size());
      continue;
    }
    if (r.gpus < 1) return fmt::format("job '{}': expected a GPU count >= 1 or a list of GPUs", r.name);
    // Whole servers: every server as large as the first.
    const std::size_t per_server = gpus.front().size();
    if (std::any_of(gpus.begin(), gpus.end(), [&](const auto& g) { return g.size() != per_server; }))
      return fmt::format("job '{}': a GPU count needs servers of one size; this cluster's differ, so list the GPUs", r.name);
    if (r.gpus % static_cast<int>(per_server) != 0)
      return fmt::format("job '{}': {} GPUs is not a whole number of servers ({} GPUs each); give a multiple of {} or "
                         "a list of GPUs", r.name, r.gpus, per_server, per_server);
    total += r.gpus;
    if (total > cluster.num_devices())
      return total == r.gpus ? fmt::format("job '{}' asks for {} GPUs, and the cluster has {}", r.name, r.gpus, cluster.num_devices())
                             : fmt::format("job '{}' asks for {} GPUs, and {} remain of the cluster's {} after the jobs before it",
                                           r.name, r.gpus, cluster.num_devices() - (total - r.gpus), cluster.num_devices());
  }
  if (total > cluster.num_devices()) {
    field_out = "jobs";
    return fmt::format("the jobs ask for {} GPUs, and the cluster has {}", total, cluster.num_devices());
  }
  // Counts take whole servers, which the GPU lists (placed first) may have taken parts of.
  std::set<int> touched;
  for (const auto& [g, j] : taken) touched.insert(cluster.device(g).server);
  long free = static_cast<long>(gpus.size() - touched.size()), needed = 0;
  for (const JobRequest& r : requests) {
    if (!r.explicit_gpus.empty()) continue;
    needed += r.gpus / static_cast<long>(gpus.front().size());
    if (needed > free) {
      field_out = r.field;
      return fmt::format("job '{}' needs {} whole servers, and {} of the cluster's {} are left by the GPU lists (which "
                         "hold GPUs of {} servers) and the jobs before it", r.name, r.gpus / static_cast<long>(gpus.front().size()),
                         free - (needed - r.gpus / static_cast<long>(gpus.front().size())), gpus.size(), touched.size());
    }
  }
  field_out.clear();
  return "";
}

std::vector<std::vector<DeviceId>> allocate_gpus(const Cluster& cluster, std::span<const JobRequest> requests,
                                                 const AllocationPolicyInfo& policy, std::uint64_t seed) {
  const std::vector<std::vector<DeviceId>> gpus = gpus_by_server(cluster);
  const ServerGroups groups = server_groups(cluster);
  std::vector<int> owner(gpus.size(), -1);
  std::vector<std::vector<DeviceId>> out(requests.size());
  for (std::size_t j = 0; j < requests.size(); ++j) {
    if (requests[j].explicit_gpus.empty()) continue;
    out[j] = requests[j].explicit_gpus;
    for (DeviceId g : out[j]) owner[static_cast<std::size_t>(cluster.device(g).server)] = static_cast<int>(j);
  }
  const AllocationContext context{cluster, groups, owner, seed};
  for (std::size_t j = 0; j < requests.size(); ++j) {
    if (!requests[j].explicit_gpus.empty()) continue;
    const int servers = requests[j].gpus / static_cast<int>(gpus.front().size());
    const auto free = static_cast<int>(free_servers(context).size());
    if (free < servers)
      throw std::invalid_argument(fmt::format("job '{}' needs {} whole servers and {} are free (the GPU lists before it "
                                              "took parts of the others)", requests[j].name, servers, free));
    for (int s : policy.pick(context, servers, static_cast<int>(j))) {
      if (owner.at(static_cast<std::size_t>(s)) >= 0)
        throw std::logic_error(fmt::format("allocation policy {} gave job '{}' server {}, which is taken", policy.name, requests[j].name, s));
      owner[static_cast<std::size_t>(s)] = static_cast<int>(j);
      for (DeviceId g : gpus[static_cast<std::size_t>(s)]) out[j].push_back(g);
    }
  }
  return out;
}

}  // namespace placesim
