#pragma once
// Which GPUs each job of a shared cluster gets (a scenario's `jobs:`, scenarios/runner/jobs.h).
// A job asks for a count of GPUs, which a policy fills with whole servers (a job keeps its
// servers' NVLink to itself, as schedulers such as Slurm hand out nodes), or for an explicit GPU
// list. The policies form a registry, one file each, like the strategies: a new policy is a file
// here and a line in registry.cpp.
//
// Policies see the servers grouped by the switches their NICs connect to (server_groups): a leaf
// of a spine-leaf, an edge switch of a fat-tree, a scalable unit's rail leaves of a rail-optimized
// fabric. Traffic between servers of one group stays below the group's uplinks.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/registry.h"

namespace placesim {

// Servers grouped by the set of switches their GPUs' traffic to other servers enters first.
struct ServerGroups {
  std::vector<int> group_of_server;
  int count = 0;
};
ServerGroups server_groups(const Cluster& cluster);

// What a policy sees when it picks a job's servers.
struct AllocationContext {
  const Cluster& cluster;
  const ServerGroups& groups;
  std::span<const int> owner;  // per server, the job holding it (some of its GPUs), or -1
  std::uint64_t seed = 0;      // the policy's `seed` (random)
};

struct AllocationPolicyInfo : RegistryEntry {
  // `servers` servers free in `context.owner` for job `job` (at least that many are free), in the
  // order the job's GPUs take them.
  std::function<std::vector<int>(const AllocationContext& context, int servers, int job)> pick;
};
const Registry<AllocationPolicyInfo>& allocation_registry();

AllocationPolicyInfo packed_allocation();
AllocationPolicyInfo spread_allocation();
AllocationPolicyInfo random_allocation();
AllocationPolicyInfo topology_aware_allocation();

// One job's request: `gpus` GPUs by the policy, or the GPUs of `explicit_gpus`.
struct JobRequest {
  std::string name;
  int gpus = 0;
  std::vector<DeviceId> explicit_gpus;
  std::string field;  // "jobs[1].gpus", for messages
};

// Why the requests cannot be met on the cluster whatever the policy, or "": a GPU listed twice or
// by two jobs or not in the cluster, a count that is not whole servers, more GPUs than the cluster
// has. `field` of the message's job is set in `field_out`.
std::string allocation_problem(const Cluster& cluster, std::span<const JobRequest> requests, std::string& field_out);

// Each job's GPUs: the explicit lists first, then the counted jobs in order, each by the policy
// on the servers no other job holds. Throws std::invalid_argument naming the job when the free
// whole servers are too few (explicit lists took parts of servers).
std::vector<std::vector<DeviceId>> allocate_gpus(const Cluster& cluster, std::span<const JobRequest> requests,
                                                 const AllocationPolicyInfo& policy, std::uint64_t seed);

// Helpers for policies: the free servers, in index order; per group, its free servers.
std::vector<int> free_servers(const AllocationContext& context);
std::vector<std::vector<int>> free_servers_by_group(const AllocationContext& context);

}  // namespace placesim
