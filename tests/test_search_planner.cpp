// The search as a scenario's planner (placement/planners/search/search_planner.h): its plan is the
// search's best, run on the model the search built for it at the same time; a per-layer workload
// is refused with the reason; a scenario sweeping the NIC bandwidth records the plan chosen at
// each point, and `placesim report` tabulates them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "placement/framework/planner.h"
#include "placement/planners/search/plan_search.h"
#include "placement/planners/search/search_planner.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

const char* kSpace = "{global_batch: 32, tp: [1, 2, 4], pp: [1, 2], cp: [1], virtual_stages: [1], micro_batch_size: [1, 2], "
                     "recompute: [none, full], optimizer: [none, distributed], tp_comm_overlap: [off], top: 4}";

Cluster two_dgx_h100() { return cluster_from_yaml(YAML::Load("{preset: dgx-h100, servers: 2}"), "c.yaml"); }

ModelSource llama_7b() {
  ModelSource s;
  s.model = "llama2-7b";
  s.zoo.sequence = 2048;
  return s;
}

}  // namespace

// The planner's plan and model are the search's best: the same degrees, and simulated as the
// search simulated it, the same time to 1e-9.
TEST(SearchPlanner, ItsPlanIsTheSearchsBest) {
  const Cluster cluster = two_dgx_h100();
  const std::unique_ptr<Planner> planner = make_planner("search", YAML::Load(kSpace), "s.yaml", "strategies[0]");
  planner->set_model_source(llama_7b());
  const LayerWorkload given = models::build_layer_model("llama2-7b", llama_7b().zoo, models::layer_zoo_widths("llama2-7b"), "s.yaml");
  const PlanResult planned = planner->plan(given, cluster);
  ASSERT_TRUE(planned.workload.has_value());

  SearchRequest r;
  r.base.model = "llama2-7b";
  r.base.sequence = 2048;
  r.base.cluster = "CLUSTER.yaml";
  r.global_batch = 32;
  r.top = 4;
  r.space.tp = {1, 2, 4};
  r.space.pp = {1, 2};
  r.space.cp = {1};
  r.space.virtual_stages = {1};
  r.space.micro_batch_size = {1, 2};
  r.space.recompute = {"none", "full"};
  r.space.optimizer = {"none", "distributed"};
  r.space.tp_comm_overlap = {"off"};
  const SearchResult found = search_plans(r, cluster);
  ASSERT_FALSE(found.ranked.empty());
  const SearchCandidate& best = found.ranked.front();
  EXPECT_EQ(planned.plan.tp, best.args.tp);
  EXPECT_EQ(planned.plan.pp, best.args.pp);
  EXPECT_EQ(planned.plan.dp, best.args.dp * best.args.cp);
  EXPECT_EQ(planned.plan.stage_starts, best.stage_starts);
  EXPECT_EQ(planned.workload->at(best.args.tp, "t", "tp").micro_batch, best.args.micro_batch_size);
  const PlanRun run = simulate_plan(*planned.workload, planned.plan, cluster, plan_run_options(best.args, "t"));
  EXPECT_NEAR(run.runs.runs.front().latency, best.iteration_s, 1e-9 * best.iteration_s);
  EXPECT_EQ(planned.details["best"]["tp"], best.args.tp);
  EXPECT_EQ(planned.details["simulated"], found.simulated);
  EXPECT_EQ(planned.details["ranked"].size(), found.ranked.size());
}

TEST(SearchPlanner, NeedsAModelAndAGlobalBatch) {
  const Cluster cluster = two_dgx_h100();
  const std::unique_ptr<Planner> planner = make_planner("search", YAML::Load(kSpace), "s.yaml", "strategies[0]");
  const LayerWorkload given = models::build_layer_model("llama2-7b", llama_7b().zoo, models::layer_zoo_widths("llama2-7b"), "s.yaml");
  try {
    planner->plan(given, cluster);  // no model source: a per-layer workload file
    FAIL() << "expected the planner to refuse a workload without its model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("must be a model"), std::string::npos) << e.what();
  }
  EXPECT_INPUT_ERROR(make_planner("search", YAML::Load("{top: 3}"), "s.yaml", "strategies[0]"), "strategies[0].options.global_batch",
                     "required");
  EXPECT_INPUT_ERROR(make_planner("search", YAML::Load("{global_batch: 8, recompute: [some]}"), "s.yaml", "strategies[0]"),
                     "strategies[0].options.recompute", "expected one of none, selective, full");
  EXPECT_INPUT_ERROR(make_planner("search", YAML::Load("{global_batch: 8, tp: [0]}"), "s.yaml", "strategies[0]"),
                     "strategies[0].options.tp", "whole number");
}

// End to end: a sweep of the NIC bandwidth, the search at each point; each record's flow time is
// the time the search found for its best plan, and the report's table names the plan per point.
TEST(SearchPlanner, AScenarioSweepsTheNetworkAndReportsThePlanPerPoint) {
  const auto dir = testutil::fresh_temp_dir("search-planner");
  std::ofstream(dir / "s.yaml") << "name: s\n"
                                   "workload: {model: llama2-7b, sequence: 2048, gpu: h100}\n"
                                   "cluster: {preset: dgx-h100, servers: 2}\n"
                                   "strategies:\n"
                                   "  - {name: search, options: "
                                << kSpace
                                << "}\n"
                                   "sweep:\n"
                                   "  cluster.nic_bandwidth: [6.25GB/s, 50GB/s]\n"
                                   "simulation: {engine: flow}\n"
                                   "output: out\n";
  std::string output;
  ASSERT_EQ(testutil::run_cli("run " + (dir / "s.yaml").string() + " --output " + (dir / "out").string(), output), 0) << output;
  std::ifstream in(dir / "out" / "results.jsonl");
  int records = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json r = nlohmann::json::parse(line);
    ASSERT_TRUE(r["strategy_report"].contains("best")) << line;
    const double searched = r["strategy_report"]["best"]["iteration_s"];
    EXPECT_NEAR(r["flow_latency"].get<double>(), searched, 1e-9 * searched);
    ++records;
  }
  EXPECT_EQ(records, 2);
  ASSERT_EQ(testutil::run_cli("report " + (dir / "out").string() + " --no-plots", output), 0) << output;
  EXPECT_NE(output.find("the plan the search chose at each point"), std::string::npos) << output;
  EXPECT_NE(output.find("cluster.nic_bandwidth=6.25 GB/s"), std::string::npos) << output;
}
