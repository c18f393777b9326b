// GPU allocation for several jobs (placement/allocation/): the server groups each fabric has, what
// each policy picks on a cluster small enough to check by hand, and the requests refused.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "placement/allocation/allocation.h"
#include "test_util.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

Cluster cluster_of(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "test.yaml", "cluster"); }

// 3 leaves of 4 servers of 2 GPUs each: servers 0-3 under leaf 0, 4-7 under leaf 1, 8-11 under leaf 2.
Cluster three_leaves() {
  return cluster_of("{type: spine-leaf, servers: 12, servers_per_leaf: 4, spines: 2, gpus_per_server: 2, "
                    "nic_bandwidth: 12.5GB/s, oversubscription: 2}");
}

std::vector<int> servers_of(const Cluster& c, const std::vector<DeviceId>& gpus) {
  std::vector<int> out;
  for (DeviceId g : gpus)
    if (out.empty() || out.back() != c.device(g).server) out.push_back(c.device(g).server);
  return out;
}

std::vector<std::vector<int>> allocate(const Cluster& c, const std::string& policy, std::vector<JobRequest> requests,
                                       std::uint64_t seed = 1) {
  std::vector<std::vector<int>> out;
  for (const auto& gpus : allocate_gpus(c, requests, allocation_registry().get(policy, "", ""), seed))
    out.push_back(servers_of(c, gpus));
  return out;
}

TEST(Allocation, ServerGroupsAreTheLeavesOrTheScalableUnits) {
  EXPECT_EQ(server_groups(three_leaves()).group_of_server, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  // A k = 4 fat-tree: two servers under each edge switch.
  const ServerGroups fat = server_groups(cluster_of("{type: fat-tree, k: 4, gpus_per_server: 1, nic_bandwidth: 12.5GB/s}"));
  EXPECT_EQ(fat.count, 8);
  EXPECT_EQ(fat.group_of_server[0], fat.group_of_server[1]);
  EXPECT_NE(fat.group_of_server[1], fat.group_of_server[2]);
  // DGX H100 SuperPOD: 32 servers per scalable unit, each server's 8 GPUs on the unit's 8 rail leaves.
  const ServerGroups pod = server_groups(cluster_of("{preset: dgx-h100, servers: 64}"));
  EXPECT_EQ(pod.count, 2);
  EXPECT_EQ(pod.group_of_server[31], 0);
  EXPECT_EQ(pod.group_of_server[32], 1);
}

TEST(Allocation, EachPolicyPicksTheServersItSays) {
  const Cluster c = three_leaves();
  // Job a: 3 servers, then job b: 2 servers.
  const std::vector<JobRequest> jobs{{"a", 6, {}, "jobs[0].gpus"}, {"b", 4, {}, "jobs[1].gpus"}};
  EXPECT_EQ(allocate(c, "packed", jobs), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4}}));
  // One server of each leaf in turn.
  EXPECT_EQ(allocate(c, "spread", jobs), (std::vector<std::vector<int>>{{0, 4, 8}, {1, 5}}));
  // a fits in one leaf: leaf 0 (all leaves tie); b does not fit leaf 0's one free server: leaf 1.
  EXPECT_EQ(allocate(c, "topology-aware", jobs), (std::vector<std::vector<int>>{{0, 1, 2}, {4, 5}}));
  // Best fit: a job that fits what is left of a leaf goes there (it loads no uplink), keeping
  // the free leaf whole for the job after it. Jobs of 1, 3 and 4 servers: {0}, {1, 2, 3}, {4-7}.
  EXPECT_EQ(allocate(c, "topology-aware", {{"a", 2, {}, ""}, {"b", 6, {}, ""}, {"c", 8, {}, ""}}),
            (std::vector<std::vector<int>>{{0}, {1, 2, 3}, {4, 5, 6, 7}}));
  // A job larger than a leaf takes whole free leaves first.
  EXPECT_EQ(allocate(c, "topology-aware", {{"a", 2, {}, ""}, {"big", 16, {}, ""}}),
            (std::vector<std::vector<int>>{{0}, {4, 5, 6, 7, 8, 9, 10, 11}}));
  // random: a seeded draw, the same each time, other seeds other servers; never a server twice.
  const auto drawn = allocate(c, "random", jobs, 3);
  EXPECT_EQ(drawn, allocate(c, "random", jobs, 3));
  EXPECT_NE(drawn, allocate(c, "random", jobs, 4));
  std::set<int> seen;
  for (const auto& job : drawn)
    for (int s : job) EXPECT_TRUE(seen.insert(s).second) << s;
  EXPECT_EQ(seen.size(), 5u);
}

TEST(Allocation, ExplicitListsComeFirstAndPoliciesFillWholeServersAroundThem) {
  const Cluster c = three_leaves();
  // Job x holds GPU 1 (half of server 0): packed starts at server 1.
  const auto gpus = allocate_gpus(c, std::vector<JobRequest>{{"a", 4, {}, ""}, {"x", 0, {1}, ""}},
                                  allocation_registry().get("packed", "", ""), 1);
  EXPECT_EQ(gpus[0], (std::vector<DeviceId>{2, 3, 4, 5}));
  EXPECT_EQ(gpus[1], (std::vector<DeviceId>{1}));
}

TEST(Allocation, RequestsThatCannotBeMetAreRefusedNamingTheJob) {
  const Cluster c = three_leaves();
  auto problem = [&](std::vector<JobRequest> jobs) {
    std::string field;
    const std::string why = allocation_problem(c, jobs, field);
    return field + ": " + why;
  };
  EXPECT_EQ(problem({{"a", 16, {}, "jobs[0].gpus"}, {"b", 10, {}, "jobs[1].gpus"}}),
            "jobs[1].gpus: job 'b' asks for 10 GPUs, and 8 remain of the cluster's 24 after the jobs before it");
  EXPECT_EQ(problem({{"a", 3, {}, "jobs[0].gpus"}}),
            "jobs[0].gpus: job 'a': 3 GPUs is not a whole number of servers (2 GPUs each); give a multiple of 2 or a list of GPUs");
  EXPECT_EQ(problem({{"a", 0, {0, 1}, "jobs[0].gpus"}, {"b", 0, {1, 2}, "jobs[1].gpus"}}),
            "jobs[1].gpus: job 'b': GPU 1 is job 'a''s too; jobs share links, not GPUs");
  EXPECT_EQ(problem({{"a", 0, {0, 0}, "jobs[0].gpus"}}), "jobs[0].gpus: job 'a': GPU 0 is listed twice");
  EXPECT_EQ(problem({{"a", 0, {24}, "jobs[0].gpus"}}), "jobs[0].gpus: job 'a': GPU 24 is not in the cluster (GPUs 0-23)");
  EXPECT_EQ(problem({{"a", 24, {}, "jobs[0].gpus"}, {"b", 0, {23}, "jobs[1].gpus"}}), "jobs: the jobs ask for 25 GPUs, and the cluster has 24");
  // GPU 0 and GPU 2 are parts of servers 0 and 1: 10 whole servers are left, not 11.
  EXPECT_EQ(problem({{"x", 0, {0, 2}, "jobs[0].gpus"}, {"a", 22, {}, "jobs[1].gpus"}}),
            "jobs[1].gpus: job 'a' needs 11 whole servers, and 10 of the cluster's 12 are left by the GPU lists (which hold "
            "GPUs of 2 servers) and the jobs before it");
}

}  // namespace
}  // namespace placesim
