// mcmc-plan (placement/planners/mcmc_plan): the chain never returns worse than its start, its estimate is
// NEST's estimate of the plan it returns, it reaches nest's optimum on small models, its plans
// compile, and the seed decides the chain.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "placement/planners/mcmc_plan/mcmc_plan.h"
#include "placement/planners/nest/nest.h"
#include "tests/layer_test_models.h"
#include "tests/test_util.h"

using namespace placesim;
using testutil::random_moe_workload;
using testutil::random_workload;
using testutil::two_servers;

TEST(McmcPlan, ReachesNestsOptimumOnSmallModelsAndNeverReturnsWorseThanItsStart) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    SCOPED_TRACE(trial);
    const LayerWorkload w = random_workload(rng, 6);
    const Cluster cluster = two_servers(trial % 2 ? 1e12 : 2e9);
    McmcPlanConfig config;
    config.micro_batches = 16;
    config.seed = trial + 1;
    config.reduction = trial % 3 == 2 ? NestReduction::PerLayer : trial % 3 == 1 ? NestReduction::Overlapped : NestReduction::Stage;  // each objective
    const McmcPlanSearch chain = mcmc_plan_search(w, cluster, config);
    EXPECT_LE(chain.estimate.time_per_batch, chain.start_estimate.time_per_batch);
    EXPECT_GT(chain.accepted, 0);
    // The reported estimate is the estimate of the returned plan, which fits.
    const NestEstimate again =
        nest_estimate(w.by_tensor_parallel.at(chain.plan.tp), chain.plan, NestNetwork::aware(cluster), config.reduction);
    EXPECT_TRUE(again.fits);
    EXPECT_DOUBLE_EQ(again.time_per_batch, chain.estimate.time_per_batch);
    // nest's DP is exact on the default GPU order; the chain may also reorder GPUs, so it can
    // only tie or beat it, and on a space this small 20,000 steps find the optimum.
    NestConfig nest_config;
    nest_config.micro_batches = config.micro_batches;
    nest_config.reduction = config.reduction;
    const NestSearch optimum = nest_search(w, cluster, nest_config, true);
    ASSERT_TRUE(optimum.why_none.empty());
    EXPECT_LE(chain.estimate.time_per_batch, optimum.estimate.time_per_batch * (1 + 1e-9));
  }
}

TEST(McmcPlan, PlansCompileAndTheSeedDecidesTheChain) {
  std::mt19937 rng(3);
  const LayerWorkload w = random_workload(rng, 8);
  const Cluster cluster = two_servers(1e12, 100e9, 1e9);
  auto planner = make_planner("mcmc-plan", YAML::Load("{steps: 3000, seed: 5, micro_batches: 32}"), "t.yaml",
                              "strategies[0]");
  const PlanResult a = planner->plan(w, cluster);  // Planner::plan checks the plan compiles
  const PlanResult b = planner->plan(w, cluster);
  EXPECT_EQ(plan_to_json(a.plan), plan_to_json(b.plan));
  EXPECT_EQ(a.details["exact"], false);
  EXPECT_EQ(a.details["steps"], 3000);
  EXPECT_EQ(a.plan.gpus.size(), static_cast<std::size_t>(a.plan.tp * a.plan.pp * a.plan.dp));
}

TEST(McmcPlan, AModelThatFitsNowhereIsRefused) {
  std::mt19937 rng(1);
  const LayerWorkload w = random_workload(rng, 4);
  EXPECT_THROW(mcmc_plan_search(w, two_servers(1e6), {}), InfeasibleProblem);
}

TEST(McmcPlan, TheTimeLimitStopsTheChain) {
  std::mt19937 rng(2);
  const LayerWorkload w = random_workload(rng, 6);
  McmcPlanConfig config;
  config.steps = std::numeric_limits<long>::max();
  const McmcPlanSearch chain = mcmc_plan_search(w, two_servers(1e12), config, Deadline(0.05));
  EXPECT_TRUE(chain.stopped_by_time);
  EXPECT_GT(chain.steps, 0);
}

// A model whose experts the plan spreads (built for ep 1, 4 experts per layer): the chain
// searches the expert width as nest does, reaching nest's optimum (ep > 1 here), and max_ep 1
// keeps the experts whole.
TEST(McmcPlan, SearchesTheExpertWidthOfAModelWhoseExpertsItSpreads) {
  std::mt19937 rng(1);
  const LayerWorkload moe = random_moe_workload(rng, 5);
  const Cluster cluster = two_servers(1e12);
  McmcPlanConfig config;
  config.micro_batches = 16;
  const McmcPlanSearch chain = mcmc_plan_search(moe, cluster, config);
  NestConfig nest_config;
  nest_config.micro_batches = 16;
  const NestSearch optimum = nest_search(moe, cluster, nest_config, true);
  ASSERT_TRUE(optimum.why_none.empty());
  ASSERT_GT(optimum.plan.ep, 1);
  EXPECT_GT(chain.plan.ep, 1);
  EXPECT_EQ(plan_problem(moe.by_tensor_parallel.at(1), chain.plan, cluster), "");
  EXPECT_LE(chain.estimate.time_per_batch, optimum.estimate.time_per_batch * (1 + 1e-9));
  const auto experts = std::find(mcmc_plan_move_names().begin(), mcmc_plan_move_names().end(), std::string("experts")) -
                       mcmc_plan_move_names().begin();
  EXPECT_GT(chain.taken[experts], 0);
  // The estimate it reports is the plan's.
  EXPECT_DOUBLE_EQ(nest_estimate(moe.by_tensor_parallel.at(1), chain.plan, NestNetwork::aware(cluster)).time_per_batch,
                   chain.estimate.time_per_batch);
  config.max_ep = 1;
  EXPECT_EQ(mcmc_plan_search(moe, cluster, config).plan.ep, 1);
}
