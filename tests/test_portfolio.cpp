// The warm-start portfolio (placement/framework/portfolio.h): the fast strategies, and HEFT and METIS again
// on the fastest server's GPUs.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "placement/framework/portfolio.h"
#include "sim/engines/evaluator.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

// The diamond A -> {B, C} -> D: A and D 1 ms, B and C 10 ms, every tensor 100 MB (2 ms on
// NVLink at 50 GB/s, 5 ms on Ethernet at 20 GB/s).
Graph diamond() {
  Graph g;
  g.add_operator({"A", "op", 1e-3, 0});
  g.add_operator({"B", "op", 10e-3, 0});
  g.add_operator({"C", "op", 10e-3, 0});
  g.add_operator({"D", "op", 1e-3, 0});
  g.add_tensor(0, 1, 100e6);
  g.add_tensor(0, 2, 100e6);
  g.add_tensor(1, 3, 100e6);
  g.add_tensor(2, 3, 100e6);
  g.finalize("diamond");
  return g;
}

std::vector<PortfolioCandidate> portfolio(const Graph& g, const Cluster& c, nlohmann::json& report) {
  CostModel cost(g, c, CostModelKind::List);
  return run_portfolio(g, c, Deadline{}, cost, "test", report);
}

const PortfolioCandidate& candidate(const std::vector<PortfolioCandidate>& all, const std::string& name) {
  for (const PortfolioCandidate& c : all)
    if (c.name == name) return c;
  throw std::runtime_error("no portfolio candidate " + name);
}

}  // namespace

TEST(Portfolio, OneServerMetisKeepsTheDiamondOnNvlink) {
  // Two servers of two GPUs. METIS on all four GPUs gives each operator a part, and two of the
  // four tensors must cross Ethernet: A 0-1; B and C start at 3 and 6 (one over NVLink, one over
  // Ethernet) and end at 13 and 16; D waits for the later input, 16 + 2 or 13 + 5, and ends at 19.
  // On server 0's two GPUs METIS balances {A, B} against {C, D} (or {A, C} against {B, D}):
  // A 0-1, B 1-11 beside it, C 3-13 after a 2 ms NVLink transfer, D 13-14.
  const Graph g = diamond();
  const Cluster c = testutil::nvlink_servers(4);
  nlohmann::json report;
  const auto all = portfolio(g, c, report);
  const PortfolioCandidate& one = candidate(all, "metis on server 0");
  EXPECT_NEAR(one.latency, 14e-3, 1e-12);
  EXPECT_NEAR(candidate(all, "metis").latency, 19e-3, 1e-12);
  for (DeviceId d : one.placement) EXPECT_LT(d, 2);
  EXPECT_NEAR(report["metis on server 0"].get<double>(), 14e-3, 1e-12);
  EXPECT_TRUE(report.contains("heft on server 0"));
  EXPECT_TRUE(best_fitting(all)->latency <= 14e-3 + 1e-12);
}

TEST(Portfolio, OneServerRunsGoToTheFastestServerAndSkipOneGpuServers) {
  YAML::Node node = YAML::Load(
      "{type: non-blocking, servers: 3, gpus_per_server: 2, server_overrides: [{server: 1, gpu_speed: 3}]}");
  const Cluster c = cluster_from_yaml(node, "test.yaml");
  const Graph g = diamond();
  nlohmann::json report;
  const auto all = portfolio(g, c, report);
  for (const char* name : {"heft on server 1", "metis on server 1"})
    for (DeviceId d : candidate(all, name).placement) EXPECT_TRUE(d == 2 || d == 3) << name;
  EXPECT_FALSE(report.contains("metis on server 0"));
  // One GPU per server: nothing to confine to.
  nlohmann::json mesh_report;
  portfolio(g, testutil::dedicated_mesh(4, 20e9), mesh_report);
  for (const auto& [name, value] : mesh_report.items()) EXPECT_EQ(name.find(" on server "), std::string::npos) << name;
}
