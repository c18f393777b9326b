// Variability (sim/engines/variability.h) through simulate_plan: the same seed gives the same
// bits, and the expected iteration follows the expected maximum of the draws, derived by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_run.h"
#include "tests/test_util.h"

namespace placesim {
namespace {

constexpr double ms = 1e-3;

// n replicas of one layer (f = 1 ms, b = 2 ms), nothing to send or reduce: each GPU computes
// 3 ms and the iteration is the slowest GPU's, 3 ms x max_g f_g.
LayerWorkload one_layer() {
  LayerModel m;
  m.name = "one layer";
  m.layers.push_back({"l0", 1 * ms, 2 * ms, 0, 0, 0});
  LayerWorkload w;
  w.name = w.source = "one layer";
  w.by_tensor_parallel[1] = m;
  return w;
}

PlanRun run(int replicas, const Variability& v, int seeds) {
  ParallelPlan plan;
  plan.dp = replicas;
  PlanRunOptions o;
  o.engines = EngineSet::of({kEvaluator, kFlow});
  o.variability = v;
  o.seeds = seeds;
  return simulate_plan(one_layer(), plan, testutil::dedicated_mesh(replicas, 10e9), o);
}

TEST(Variability, TheSameSeedGivesTheSameBits) {
  const Variability v{0.05, 0.02, 7, {}};
  const PlanRun a = run(4, v, 3), b = run(4, v, 3);
  ASSERT_EQ(a.seed_latencies.size(), 2u);
  EXPECT_EQ(a.seed_latencies, b.seed_latencies);
  EXPECT_NE(a.seed_latencies[0].second[0], a.seed_latencies[0].second[1]);  // seeds 7 and 8 differ
  EXPECT_EQ(a.seed_latencies[0].second, a.seed_latencies[1].second);        // both engines: no communication
  EXPECT_EQ(a.runs.runs[0].latency, a.seed_latencies[0].second[0]);        // the run kept is the first seed's
}

// E[max of n standard normals]: 0 for 1, 1/sqrt(pi) for 2, and 1.02938 and 1.42360 for 4 and 8
// (tabulated order statistics; 3 would be 3/(2 sqrt(pi))).
// Over 2,000 seeds the mean iteration is 3 ms (1 + cv E[max]) to within its standard error
// (about 0.003 ms here): the expected iteration grows with the GPUs as the expected maximum does.
TEST(Variability, TheExpectedIterationIsTheExpectedSlowestGpu) {
  const double cv = 0.05;
  const std::pair<int, double> cases[] = {{1, 0.0}, {2, 1 / std::sqrt(M_PI)}, {4, 1.02938}, {8, 1.42360}};
  double previous = 0;
  for (const auto& [n, expected_max] : cases) {
    const PlanRun r = run(n, Variability{cv, 0, 1, {}}, 2000);
    const Spread s = spread_of(r.seed_latencies[0].second);
    EXPECT_NEAR(s.mean, 3 * ms * (1 + cv * expected_max), 0.01 * ms) << n << " GPUs";
    EXPECT_GT(s.mean, previous);
    previous = s.mean;
  }
}

// Kernel jitter on one GPU: F and B each times 1 + cv Z, so the iteration's mean is 3 ms and its
// standard deviation cv sqrt(1^2 + 2^2) ms.
TEST(Variability, KernelJitterAddsItsVariance) {
  const PlanRun r = run(1, Variability{0, 0.05, 1, {}}, 2000);
  const Spread s = spread_of(r.seed_latencies[0].second);
  EXPECT_NEAR(s.mean, 3 * ms, 0.01 * ms);
  EXPECT_NEAR(s.stddev, 0.05 * std::sqrt(5.0) * ms, 0.05 * 0.05 * std::sqrt(5.0) * ms);
}

TEST(Variability, SeedsWithoutVariabilityAreRefused) {
  EXPECT_THROW(run(2, Variability{}, 4), std::invalid_argument);
}


// A straggler: 1F1B on 2 stages of one layer (f = 1 ms, b = 2 ms), 2 micro-batches, no
// activations to send, stage 1's GPU 1.25x slower (f 1.25, b 2.5 ms). By hand: stage 0 F0 0-1,
// F1 1-2; stage 1 F0 1-2.25, B0 2.25-4.75; stage 0 B0 4.75-6.75; stage 1 F1 4.75-6, B1 6-8.5;
// stage 0 B1 8.5-10.5: 10.5 ms, where both at speed take (m + pp - 1) x 3 = 9 ms.
TEST(Variability, ASlowGpuInATwoStagePipelineByHand) {
  LayerModel model;
  model.name = "two layers";
  for (int l = 0; l < 2; ++l) model.layers.push_back({fmt::format("l{}", l), 1e-3, 2e-3, 0, 0, 0});
  LayerWorkload workload;
  workload.name = "two layers";
  workload.by_tensor_parallel[1] = model;
  const Cluster cluster = testutil::dedicated_mesh(2, 10e9);
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 2;
  PlanRunOptions options;
  options.engines = EngineSet::of({kEvaluator, kFlow, kSimGrid});
  const PlanRun even = simulate_plan(workload, plan, cluster, options);
  for (const EngineRun& r : even.runs.runs) EXPECT_NEAR(r.latency, 9e-3, 1e-9) << r.engine;
  options.variability.slow_gpus = {{1, 1.25}};
  const PlanRun slowed = simulate_plan(workload, plan, cluster, options);
  for (const EngineRun& r : slowed.runs.runs) EXPECT_NEAR(r.latency, 10.5e-3, 1e-9) << r.engine;
  for (const auto& [engine, b] : slowed.breakdown) EXPECT_NEAR(b.total(), 10.5e-3, 1e-9) << engine;
  options.variability.slow_gpus = {{2, 1.25}};
  EXPECT_THROW(simulate_plan(workload, plan, cluster, options), std::invalid_argument);
}

}  // namespace
}  // namespace placesim
