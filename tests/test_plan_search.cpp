// `placesim search` (placement/planners/search/plan_search.h): its lower bound derived by hand, the search against a
// brute force of the same space on the flow engine, and every printed command re-run by the CLI.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "placement/planners/search/plan_search.h"
#include "tools/search_cli.h"

using namespace placesim;

namespace {

// Four blocks of forward 1 ms, backward 2 ms, an optimizer step of 0.5 ms each.
LayerModel four_blocks() {
  LayerModel m;
  m.name = "toy";
  for (int b = 0; b < 4; ++b) {
    m.layers.push_back({fmt::format("block{}", b), 1e-3, 2e-3, 0, 0, 0});
    m.layers.back().optimizer_s = 0.5e-3;
  }
  return m;
}

// Llama-2 7B at sequence 4,096 on 8 DGX H100s (64 GPUs), a global batch of 64, over a space small
// enough to simulate whole: tp 1-8, pp 1, 2, 4, micro-batch size 1 or 2, no or full
// recomputation, sequence parallelism on or off, ZeRO 0 or the distributed optimizer.
SearchRequest seven_b_on_64(const std::filesystem::path& dir) {
  const auto cluster = dir / "cluster.yaml";
  std::ofstream(cluster) << "cluster: {preset: dgx-h100, servers: 8}\n";
  SearchRequest r;
  r.base.model = "llama2-7b";
  r.base.cluster = cluster.string();
  r.global_batch = 64;
  r.space.tp = {1, 2, 4, 8};
  r.space.pp = {1, 2, 4};
  r.space.cp = {1};
  r.space.virtual_stages = {1};
  r.space.micro_batch_size = {1, 2};
  r.space.recompute = {"none", "full"};
  r.space.optimizer = {"none", "distributed"};
  r.space.tp_comm_overlap = {"off"};
  return r;
}

}  // namespace

// 2 stages of 2 blocks, 3 micro-batches: each rank computes 3 x (2 + 4) = 18 ms; rank 1 starts
// after stage 0's first forwards (2 ms) and stage 0 ends with the last micro-batch's backward
// (4 ms) after it, then its optimizer step (1 ms): 2 + 18 + 4 + 1 = 25 ms, which is also 1F1B's
// ideal (m + pp - 1) x 6 ms + 1 ms. The floor is one rank's 18 ms.
TEST(Search, LowerBoundOfATwoStagePipelineByHand) {
  const LayerModel m = four_blocks();
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 3;
  const ComputeBounds b = compute_lower_bound(m, plan, {0, 2});
  EXPECT_NEAR(b.lower_bound, 25e-3, 1e-12);
  EXPECT_NEAR(b.floor, 18e-3, 1e-12);
  // ZeRO 1 over 4 replicas: each updates a quarter (0.25 ms).
  plan.zero = 1;
  plan.dp = 4;
  EXPECT_NEAR(compute_lower_bound(m, plan, {0, 2}).lower_bound, 24.25e-3, 1e-12);
  // One stage: 3 x 12 ms + 2 ms of the optimizer (ZeRO 0).
  ParallelPlan one;
  one.micro_batches = 3;
  EXPECT_NEAR(compute_lower_bound(m, one, {0}).lower_bound, 38e-3, 1e-12);
}

// The search (the best estimates simulated, then every candidate whose bound is below the best)
// finds the brute force's best: every fitting candidate simulated. Every simulated time is at
// least its bound.
TEST(Search, ExhaustiveSearchFindsTheBruteForcesBest) {
  const auto dir = testutil::fresh_temp_dir("search_exact");
  SearchRequest brute = seven_b_on_64(dir);
  brute.top = 100000;
  const SearchResult all = search_plans(brute);
  ASSERT_GT(all.fitting, 10);
  ASSERT_EQ(all.simulated, all.fitting);
  EXPECT_TRUE(all.proven());
  EXPECT_EQ(all.bound_violations, 0);
  for (const SearchCandidate& c : all.ranked) EXPECT_GE(c.iteration_s, c.lower_bound_s * (1 - 1e-9)) << plan_command(c.args, "flow");

  SearchRequest search = seven_b_on_64(dir);
  search.top = 3;
  search.exhaustive = true;
  search.threads = 2;
  const SearchResult found = search_plans(search);
  EXPECT_TRUE(found.proven());
  EXPECT_LT(found.simulated, all.simulated);  // the bound prunes
  ASSERT_FALSE(found.ranked.empty());
  EXPECT_EQ(found.ranked.front().iteration_s, all.ranked.front().iteration_s);
  EXPECT_EQ(plan_command(found.ranked.front().args, "flow"), plan_command(all.ranked.front().args, "flow"));
  // Without --exhaustive: the top 3 only, and how many could still beat them said.
  search.exhaustive = false;
  const SearchResult quick = search_plans(search);
  EXPECT_EQ(quick.simulated, 3);
  EXPECT_GE(quick.ranked.front().iteration_s, all.ranked.front().iteration_s);
  if (quick.ranked.front().iteration_s > all.ranked.front().iteration_s) {
    EXPECT_GT(quick.unproven, 0);
  }
}

// Each plan `search --json` prints re-runs with its command at the same time (1e-9).
TEST(Search, EveryPrintedCommandRerunsAtTheSameTime) {
  const auto dir = testutil::fresh_temp_dir("search_rerun");
  SearchRequest r = seven_b_on_64(dir);
  r.top = 3;
  r.space.pp = {1, 2};
  const SearchResult result = search_plans(r);
  const nlohmann::json j = nlohmann::json::parse(search_json(result, "flow"));
  ASSERT_EQ(j["plans"].size(), 3u);
  for (const auto& plan : j["plans"]) {
    std::string command = plan["command"].get<std::string>();
    ASSERT_EQ(command.rfind("placesim plan ", 0), 0u) << command;
    std::string output;
    // The text on stderr left out: the object alone.
    ASSERT_EQ(testutil::run_command("(" + std::string(PLACESIM_CLI_PATH) + command.substr(8) + " --json 2>/dev/null)", output), 0)
        << command << "\n" << output;
    const nlohmann::json ran = nlohmann::json::parse(output);
    EXPECT_NEAR(ran["iteration_s"]["flow"].get<double>(), plan["iteration_s"].get<double>(), 1e-9 * plan["iteration_s"].get<double>())
        << command;
    EXPECT_NEAR(ran["mfu"]["flow"].get<double>(), plan["mfu"].get<double>(), 1e-9) << command;
  }
}

// Under a framework's profile the candidates are the framework's plans (DeepSpeed: no
// interleaving, ZeRO with its pipeline rule, reductions after the backward, the even split; NeMo:
// sequence parallelism wherever tp > 1), and each command, which says the framework, re-runs at
// the same time.
TEST(Search, AFrameworksPlansAreTheOnesItRuns) {
  const auto dir = testutil::fresh_temp_dir("search_framework");
  SearchRequest r = seven_b_on_64(dir);
  r.space.pp = {1, 2};
  r.space.virtual_stages.clear();
  r.space.optimizer.clear();
  r.space.sequence_parallel = {};
  r.top = 2;
  r.base.framework = "deepspeed";
  const SearchResult ds = search_plans(r);
  ASSERT_FALSE(ds.ranked.empty());
  for (const SearchCandidate& c : ds.ranked) {
    EXPECT_EQ(c.args.virtual_stages, 1);
    EXPECT_FALSE(c.args.distributed_optimizer);
    EXPECT_TRUE(c.args.no_overlap_grad_reduce);
    EXPECT_EQ(c.args.stage_split, "even");
    if (c.args.pp > 1) {
      EXPECT_LE(c.args.zero, 1);
    }
  }
  r.base.framework = "nemo";
  const SearchResult nemo = search_plans(r);
  ASSERT_FALSE(nemo.ranked.empty());
  for (const SearchCandidate& c : nemo.ranked) EXPECT_EQ(c.args.sequence_parallel, c.args.tp > 1) << plan_command(c.args, "flow");
  // What the framework does not run is counted, and the counts add up.
  EXPECT_GT(nemo.framework_excluded, 0);
  EXPECT_EQ(nemo.enumerated, nemo.framework_excluded + nemo.invalid + nemo.over_memory + nemo.fitting);
  for (const SearchResult* result : {&ds, &nemo}) {
    const SearchCandidate& best = result->ranked.front();
    const std::string command = plan_command(best.args, "flow");
    EXPECT_NE(command.find(" --framework " + best.args.framework), std::string::npos) << command;
    std::string output;
    ASSERT_EQ(testutil::run_command("(" + std::string(PLACESIM_CLI_PATH) + command.substr(8) + " --json 2>/dev/null)", output), 0)
        << command << "\n" << output;
    const nlohmann::json ran = nlohmann::json::parse(output);
    EXPECT_NEAR(ran["iteration_s"]["flow"].get<double>(), best.iteration_s, 1e-9 * best.iteration_s) << command;
  }
}

// The GPU order is a knob: both orders enumerated (twice the candidates of pipelined plans), the
// plan's GPUs as gpus_in_order lays them out, and a tp-dp-pp command re-runs at the same time.
TEST(Search, TheGpuOrderIsAKnob) {
  const auto dir = testutil::fresh_temp_dir("search_order");
  SearchRequest r = seven_b_on_64(dir);
  r.space.tp = {8};
  r.space.pp = {2};
  r.space.micro_batch_size = {1};
  r.space.recompute = {"none"};
  r.space.optimizer = {"none"};
  r.space.sequence_parallel = {"off"};
  r.top = 2;
  const SearchResult one = search_plans(r);
  r.space.gpu_order = {"tp-pp-dp", "tp-dp-pp"};
  const SearchResult both = search_plans(r);
  EXPECT_EQ(both.enumerated, 2 * one.enumerated);
  bool saw_tp_dp_pp = false;
  for (const SearchCandidate& c : both.ranked) {
    if (c.args.gpu_order != "tp-dp-pp") continue;
    saw_tp_dp_pp = true;
    const ParallelPlan plan = plan_from_args(c.args, "command line", "--schedule", "--gradient-algorithm");
    EXPECT_EQ(plan.gpus, gpus_in_order(8, 2, c.args.dp, GpuOrder::TpDpPp));
    const std::string command = plan_command(c.args, "flow");
    EXPECT_NE(command.find(" --gpu-order tp-dp-pp"), std::string::npos) << command;
    std::string output;
    ASSERT_EQ(testutil::run_command("(" + std::string(PLACESIM_CLI_PATH) + command.substr(8) + " --json 2>/dev/null)", output), 0)
        << command << "\n" << output;
    EXPECT_NEAR(nlohmann::json::parse(output)["iteration_s"]["flow"].get<double>(), c.iteration_s, 1e-9 * c.iteration_s) << command;
  }
  EXPECT_TRUE(saw_tp_dp_pp);
}

// The CSV: a header and a row per simulated plan, with its command.
TEST(Search, CsvHasARowPerSimulatedPlan) {
  const auto dir = testutil::fresh_temp_dir("search_csv");
  SearchRequest r = seven_b_on_64(dir);
  r.top = 2;
  r.space.tp = {4, 8};
  r.space.pp = {1};
  const SearchResult result = search_plans(r);
  const std::string csv = search_csv(result, "flow");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("rank,iteration_s,tokens_per_s_per_gpu,mfu,", 0), 0u);
  EXPECT_NE(csv.find("\"placesim plan --model llama2-7b"), std::string::npos);
}

TEST(Search, RefusesMoreGpusThanTheClusterHas) {
  const auto dir = testutil::fresh_temp_dir("search_bad");
  SearchRequest r = seven_b_on_64(dir);
  r.gpus = 128;
  EXPECT_TRUE(testutil::input_error_matches([&] { search_plans(r); }, "search_plans", "--gpus", {"the cluster has 64 GPUs, asked for 128"}));
}

namespace placesim {
namespace {

TEST(PlanSearch, ThePlanCommandQuotesPathsForTheShell) {
  PlanArgs a;
  a.model_file = "my models/gpt 's.yaml";
  a.cluster = "/data/c.yaml";
  const std::string cmd = plan_command(a, "flow");
  EXPECT_NE(cmd.find(" --model-file 'my models/gpt '\\''s.yaml'"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find(" --cluster /data/c.yaml "), std::string::npos) << cmd;
}

}  // namespace
}  // namespace placesim
