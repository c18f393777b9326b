#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "placement/strategies/mcmc/mcmc.h"
#include "placement/strategies/single_device/single_device.h"
#include "sim/engines/evaluator.h"
#include "tests/test_util.h"

using namespace placesim;

namespace {

// GPUs with the given speeds and memories, each pair joined by its own 10 GB/s link.
Cluster gpus(const std::vector<double>& speeds, const std::vector<double>& memories) {
  Cluster c;
  for (std::size_t i = 0; i < speeds.size(); ++i)
    c.add_device({"gpu" + std::to_string(i), static_cast<int>(i), memories[i], speeds[i]});
  const int n = static_cast<int>(speeds.size());
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b)
      if (a != b) c.set_route(a, b, {c.add_link({"l" + std::to_string(a) + "_" + std::to_string(b), 10e9, 0})});
  c.finalize("speeds and memories");
  return c;
}

// A chain of three operators, 10 us + 20 us + 30 us of compute, 4 GB resident each (12 GB in all).
Graph chain() {
  Graph g;
  g.add_operator({"a", "op", 10e-6, 4e9});
  g.add_operator({"b", "op", 20e-6, 4e9});
  g.add_operator({"c", "op", 30e-6, 4e9});
  g.add_tensor(0, 1, 1e6);
  g.add_tensor(1, 2, 1e6);
  g.finalize("chain");
  return g;
}

DeviceId placed_on(const PlacementResult& r) {
  for (DeviceId d : r.placement) EXPECT_EQ(d, r.placement[0]);
  return r.placement.at(0);
}

}  // namespace

TEST(SingleDevice, UsesTheFastestGpuThatHoldsTheGraph) {
  // Speeds 1, 3, 2, 3 with 16 GB each: GPUs 1 and 3 are fastest; the tie goes to GPU 1. The
  // chain's 60 us of work take 60 / 3 = 20 us there, against 60 us on GPU 0.
  const Graph g = chain();
  const Cluster c = gpus({1, 3, 2, 3}, {16e9, 16e9, 16e9, 16e9});
  const PlacementResult r = SingleDevice().place(g, c);
  EXPECT_EQ(placed_on(r), 1);
  EXPECT_EQ(r.details["device"], 1);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 20e-6, 1e-15);
}

TEST(SingleDevice, SkipsAFastGpuTooSmallForTheGraph) {
  // The graph needs 12 GB: GPU 1 (speed 3, 8 GB) cannot hold it, so GPU 2 (speed 2, 16 GB):
  // 60 / 2 = 30 us.
  const Graph g = chain();
  const Cluster c = gpus({1, 3, 2, 1}, {16e9, 8e9, 16e9, 16e9});
  const PlacementResult r = SingleDevice().place(g, c);
  EXPECT_EQ(placed_on(r), 2);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 30e-6, 1e-15);
}

TEST(SingleDevice, NoGpuHoldsTheGraphUsesTheFastest) {
  // 12 GB on 8 GB GPUs: none holds it, so the fastest (GPU 2, speed 2), which is out of memory.
  const Graph g = chain();
  const Cluster c = gpus({1, 1, 2}, {8e9, 8e9, 8e9});
  EXPECT_EQ(placed_on(SingleDevice().place(g, c)), 2);
}

TEST(SingleDevice, ExplicitDeviceWins) {
  const Graph g = chain();
  const Cluster c = gpus({1, 3}, {16e9, 16e9});
  SingleDeviceConfig config;
  config.device = 0;
  EXPECT_EQ(placed_on(SingleDevice(config).place(g, c)), 0);
  EXPECT_EQ(placed_on(testutil::make_strategy_from_yaml("single-device", "device: 0")->place(g, c)), 0);
  EXPECT_EQ(placed_on(testutil::make_strategy_from_yaml("single-device", "{}")->place(g, c)), 1);
}

TEST(SingleDevice, McmcStartsWhereSingleDevicePlaces) {
  // With no steps, MCMC's answer is its single-device start: the fast GPU 1 (20 us).
  const Graph g = chain();
  const Cluster c = gpus({1, 3}, {16e9, 16e9});
  McmcConfig config;
  config.steps = 0;
  config.init = McmcConfig::Init::SingleDevice;
  const PlacementResult r = Mcmc(config).place(g, c);
  EXPECT_NEAR(Evaluator(g, c).latency(r.placement), 20e-6, 1e-15);
}
