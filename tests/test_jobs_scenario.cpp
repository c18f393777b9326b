// A scenario of jobs (scenarios/runner/jobs.h): one record per job and allocation policy with
// alone_latency, shared_latency and slowdown, resumed as any scenario, and the bad inputs refused
// in one line naming the job and the field.
#include <filesystem>
#include <fstream>
#include <set>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "test_util.h"

namespace placesim {
namespace {

namespace fs = std::filesystem;

// 8 servers of 2 GPUs, two leaves of 4 under one spine, 4:1 oversubscribed: a leaf's uplink
// carries a quarter of its servers' NICs.
constexpr const char* kCluster =
    "cluster: {type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 1, gpus_per_server: 2, nvlink_bandwidth: 150GB/s, "
    "nic_bandwidth: 100Gbps, oversubscription: 4, gpu_memory: 80GiB}\n";
// A placement (a BERT replicated on 4 GPUs) and a plan (Llama 2 7B on 8 GPUs).
constexpr const char* kJobs =
    "jobs:\n"
    "  - name: bert\n"
    "    graph: {model: bert-base, layers: 2, style: fused, gpu: rtx3070}\n"
    "    strategy: {name: single-device, data_parallel: 4}\n"
    "    gpus: 4\n"
    "  - name: llama\n"
    "    workload: {model: llama2-7b, micro_batch_size: 1, gpu: h100}\n"
    "    planner: {name: megatron, options: {tp: 2, pp: 2, dp: 2, micro_batches: 4}}\n"
    "    gpus: 8\n";

std::vector<nlohmann::json> records_in(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Runs the plan into dir/out, without progress lines (resume: the points missing only).
SweepSummary run_into(const fs::path& dir, const SweepPlan& plan, bool resume = false) {
  SweepOptions options;
  options.output = (dir / "out").string();
  options.progress = false;
  options.resume = resume;
  std::ostringstream log;
  return run_sweep(plan, options, log);
}

TEST(JobsScenario, EachJobHasARecordPerAllocationWithItsSlowdown) {
  const fs::path dir = testutil::fresh_temp_dir("jobs");
  std::ofstream(dir / "s.yaml") << kCluster << kJobs << "allocation: [packed, random]\nsimulation: {engine: flow, trace: false}\n";
  const SweepPlan plan = load_sweep((dir / "s.yaml").string());
  ASSERT_EQ(plan.points.size(), 2u);
  EXPECT_EQ(plan.points[0].key, "allocation=packed rep=0");
  const SweepSummary summary = run_into(dir, plan);
  EXPECT_EQ(summary.ok, 4u);
  const auto records = records_in(summary.results_file);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0]["key"], "allocation=packed rep=0 job=bert");
  EXPECT_EQ(records[1]["key"], "allocation=packed rep=0 job=llama");
  for (const auto& r : records) {
    ASSERT_EQ(r["status"], "ok") << r.dump();
    const auto& report = r["strategy_report"];
    const double alone = report["alone_latency"], shared = report["shared_latency"], slowdown = report["slowdown"];
    EXPECT_GT(alone, 0);
    EXPECT_NEAR(slowdown, shared / alone, 1e-12);
    EXPECT_GE(slowdown, 1.0 - 1e-9);  // the fabric shared is never faster than alone
    EXPECT_NEAR(r["flow_latency"].get<double>(), shared, 1e-12);
    EXPECT_EQ(report["shared"]["engine"], "flow");
  }
  // Packed: bert on servers 0-1, llama on 2-5, so llama crosses leaf 0's uplink and bert stays
  // under it: they never meet, and nobody slows.
  EXPECT_EQ(records[0]["gpus"], 4);
  EXPECT_EQ(records[0]["strategy_report"]["shared"]["gpus"], nlohmann::json({0, 1, 2, 3}));
  EXPECT_EQ(records[1]["strategy_report"]["shared"]["gpus"], nlohmann::json({4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_TRUE(records[0]["strategy_report"]["shared"]["links_met"].empty());
  EXPECT_DOUBLE_EQ(records[0]["strategy_report"]["slowdown"].get<double>(), 1.0);
  // bert, shorter, repeats its iteration over llama's.
  EXPECT_GT(records[0]["strategy_report"]["shared"]["iterations"].get<int>(), 1);
  EXPECT_TRUE(fs::exists(dir / "out" / "plan-packed-llama.json"));
  EXPECT_TRUE(fs::exists(dir / "out" / "placement-packed-bert.json"));

  // The report prints the jobs table and draws the slowdown by job and allocation.
  std::string report;
  ASSERT_EQ(testutil::run_cli("report " + (dir / "out").string(), report), 0) << report;
  EXPECT_NE(report.find(" GPUs iterations     alone (ms)    shared (ms)  slowdown"), std::string::npos) << report;
  EXPECT_NE(report.find("plot: wrote " + (dir / "out" / "report" / "slowdown.png").string()), std::string::npos) << report;
  EXPECT_TRUE(fs::exists(dir / "out" / "report" / "iteration_by_allocation.png"));

  // Resumed, nothing is left to run; a lost job record reruns its allocation only.
  EXPECT_EQ(run_into(dir, plan, /*resume=*/true).skipped, 2u);
  {
    std::ofstream out(summary.results_file, std::ios::trunc);
    for (std::size_t i = 0; i < 3; ++i) out << records[i].dump() << "\n";
  }
  const SweepSummary resumed = run_into(dir, plan, /*resume=*/true);
  EXPECT_EQ(resumed.skipped, 1u);
  EXPECT_EQ(resumed.ok, 1u);  // the job missing; its partner's record stays as it was
  EXPECT_EQ(records_in(summary.results_file).size(), 4u);
  fs::remove_all(dir);
}

TEST(JobsScenario, WithoutAllocationPacksAndAJobThatCannotRunIsNamedInTheOthersRecords) {
  const fs::path dir = testutil::fresh_temp_dir("jobs-without");
  // Llama 2 7B unsharded on one GPU per replica cannot fit 80 GiB: infeasible, never run; bert
  // runs without it, and its record says so. No `allocation:`: packed.
  std::ofstream(dir / "s.yaml") << kCluster
                                << "jobs:\n"
                                   "  - name: bert\n"
                                   "    graph: {model: bert-base, layers: 2, style: fused, gpu: rtx3070}\n"
                                   "    strategy: {name: single-device, data_parallel: 2}\n"
                                   "    gpus: [6, 7, 14, 15]\n"
                                   "  - name: big\n"
                                   "    workload: {model: llama2-7b, micro_batch_size: 1, gpu: h100}\n"
                                   "    planner: {name: megatron, options: {tp: 1, pp: 1, dp: 2, micro_batches: 1}}\n"
                                   "    gpus: 2\n"
                                   "simulation: {engine: flow, trace: false}\n";
  const SweepPlan plan = load_sweep((dir / "s.yaml").string());
  ASSERT_EQ(plan.points.size(), 1u);
  EXPECT_EQ(plan.points[0].key, "allocation=packed rep=0");
  const SweepSummary summary = run_into(dir, plan);
  EXPECT_EQ(summary.ok, 1u);
  EXPECT_EQ(summary.infeasible, 1u);
  const auto records = records_in(summary.results_file);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["status"], "infeasible");
  const auto& shared = records[0]["strategy_report"]["shared"];
  ASSERT_TRUE(shared.contains("without")) << shared.dump();
  EXPECT_EQ(shared["without"][0]["job"], "big");
  EXPECT_EQ(shared["without"][0]["status"], "infeasible");
  // The placement file in the whole cluster's GPUs: the first replica's, GPUs 6 and 7.
  const auto placement = nlohmann::json::parse(std::ifstream(dir / "out" / "placement-packed-bert.json"));
  std::set<int> used;
  for (const auto& [op, gpu] : placement["placement"].items()) used.insert(gpu.get<int>());
  EXPECT_FALSE(used.empty());
  for (int g : used) EXPECT_TRUE(g == 6 || g == 7) << g;
  // Lower bounds over the job's 4 GPUs, not the cluster's 16: the memory bound is the job's
  // operators' memory over 4.
  double total = 0;
  for (const auto& m : records[0]["memory_per_gpu"]) total += m.get<double>();
  EXPECT_GT(total, 0);
  EXPECT_NEAR(records[0]["lower_bound_memory_per_gpu"].get<double>(), total / 4, total * 1e-12);
  fs::remove_all(dir);
}

TEST(JobsScenario, AJobChosenAgainstTheOthersLoadAvoidsTheLinksTheyFill) {
  const fs::path dir = testutil::fresh_temp_dir("jobs-against");
  // 8 one-GPU servers, two leaves of 4 under one spine, 4:1: each leaf's uplink carries one NIC's
  // 12.5 GB/s. The background job's data-parallel ring goes 0 -> 4 -> 1 -> 5: every hop crosses
  // the uplinks, which it fills. m-etf places BERT on GPUs 2 (leaf 0) and 6 (leaf 1): alone it
  // splits the graph over both, whose tensors then queue behind the ring; against the others'
  // load (the uplinks left at 5% or so) it keeps the graph on one GPU, and is faster shared.
  std::ofstream(dir / "s.yaml")
      << "cluster: {type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 1, gpus_per_server: 1, nic_bandwidth: 100Gbps, "
         "oversubscription: 4, gpu_memory: 16GiB}\n"
         "jobs:\n"
         "  - {name: background, workload: {model: gpt2, micro_batch_size: 1, gpu: h100}, planner: {name: megatron, options: {dp: 4}}, gpus: [0, 4, 1, 5]}\n"
         "  - {name: placed, graph: {model: bert-base, layers: 4, style: fused, gpu: rtx3070}, strategy: m-etf, gpus: [2, 6], against_others: true}\n"
         "simulation: {engine: flow, trace: false}\n";
  const SweepSummary summary = run_into(dir, load_sweep((dir / "s.yaml").string()));
  const auto records = records_in(summary.results_file);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_FALSE(records[0]["strategy_report"]["shared"].contains("against_others"));
  const auto& report = records[1]["strategy_report"];
  ASSERT_TRUE(report["shared"].contains("against_others")) << report.dump();
  const auto& against = report["shared"]["against_others"];
  EXPECT_GT(against["links_degraded"].get<int>(), 0);
  EXPECT_TRUE(against["beats_choosing_alone"].get<bool>()) << against.dump();
  EXPECT_LT(against["shared_latency"].get<double>(), report["shared_latency"].get<double>());
  EXPECT_DOUBLE_EQ(report["shared_latency_against_others"].get<double>(), against["shared_latency"].get<double>());
  // Alone, the split placement uses both GPUs; against the load, one.
  auto gpus_of = [&](const std::string& file) {
    std::set<int> used;
    const nlohmann::json placement = nlohmann::json::parse(std::ifstream(dir / "out" / file));  // (kept: the loop views it)
    for (const auto& [op, gpu] : placement["placement"].items()) used.insert(gpu.get<int>());
    return used;
  };
  EXPECT_EQ(gpus_of("placement-packed-placed.json"), (std::set<int>{2, 6}));
  EXPECT_EQ(gpus_of(against["placement_file"].get<std::string>()).size(), 1u);
  // One job adapted: nothing more to run together.
  EXPECT_FALSE(report["shared"].contains("all_adapted"));
  fs::remove_all(dir);
}

TEST(JobsScenario, EveryAdaptedChoiceRunsTogetherToo) {
  // The same background and two m-etf jobs, on GPUs 2, 6 and 3, 7, both chosen against the
  // others' load: each keeps its graph on one GPU, so run together the two send nothing across
  // the servers (each as fast as alone), and the background, its uplinks its own again, gains.
  const fs::path dir = testutil::fresh_temp_dir("jobs-all-adapted");
  std::ofstream(dir / "s.yaml")
      << "cluster: {type: spine-leaf, servers: 8, servers_per_leaf: 4, spines: 1, gpus_per_server: 1, nic_bandwidth: 100Gbps, "
         "oversubscription: 4, gpu_memory: 16GiB}\n"
         "jobs:\n"
         "  - {name: background, workload: {model: gpt2, micro_batch_size: 1, gpu: h100}, planner: {name: megatron, options: {dp: 4}}, gpus: [0, 4, 1, 5]}\n"
         "  - {name: a, graph: {model: bert-base, layers: 4, style: fused, gpu: rtx3070}, strategy: m-etf, gpus: [2, 6], against_others: true}\n"
         "  - {name: b, graph: {model: bert-base, layers: 4, style: fused, gpu: rtx3070}, strategy: m-etf, gpus: [3, 7], against_others: true}\n"
         "simulation: {engine: flow, trace: false}\n";
  const SweepSummary summary = run_into(dir, load_sweep((dir / "s.yaml").string()));
  const auto records = records_in(summary.results_file);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    const auto& shared = r["strategy_report"]["shared"];
    ASSERT_TRUE(shared.contains("all_adapted")) << r.dump();
    EXPECT_EQ(shared["all_adapted"]["jobs_adapted"], (nlohmann::json{"a", "b"}));
  }
  const auto& background = records[0]["strategy_report"];
  EXPECT_LT(background["shared"]["all_adapted"]["shared_latency"].get<double>(), background["shared_latency"].get<double>());
  for (int j : {1, 2}) {
    const auto& shared = records[j]["strategy_report"]["shared"];
    EXPECT_NEAR(shared["all_adapted"]["slowdown"].get<double>(), 1.0, 1e-9) << records[j].dump();
    EXPECT_NEAR(shared["all_adapted"]["shared_latency"].get<double>(), shared["against_others"]["alone_latency"].get<double>(), 1e-12);
  }
  fs::remove_all(dir);
}

std::string error_of(const std::string& yaml) {
  const auto e = testutil::input_error_of([&] { plan_sweep(YAML::Load(yaml), "s.yaml"); });
  return e ? std::string(e->what()) : std::string("no error");
}

TEST(JobsScenario, BadInputsAreRefusedNamingTheJobAndField) {
  const std::string jobs = kJobs;
  auto with_gpus = [&](const std::string& bert, const std::string& llama) {
    std::string j = jobs;
    j.replace(j.find("gpus: 4"), 7, "gpus: " + bert);
    j.replace(j.find("gpus: 8"), 7, "gpus: " + llama);
    return std::string(kCluster) + j;
  };
  EXPECT_NE(error_of(with_gpus("4", "14")).find("jobs[1].gpus (line 10): job 'llama' asks for 14 GPUs, and 12 remain"),
            std::string::npos)
      << error_of(with_gpus("4", "14"));
  EXPECT_NE(error_of(with_gpus("[0-3]", "[2, 3, 4, 5]")).find("job 'llama': GPU 2 is job 'bert''s too"), std::string::npos)
      << error_of(with_gpus("[0-3]", "[2, 3, 4, 5]"));
  EXPECT_NE(error_of(with_gpus("3", "8")).find("3 GPUs is not a whole number of servers"), std::string::npos);
  EXPECT_NE(error_of(std::string(kCluster) + jobs + "allocation: packd\n").find("unknown allocation policy 'packd'; did you mean 'packed'?"),
            std::string::npos)
      << error_of(std::string(kCluster) + jobs + "allocation: packd\n");
  EXPECT_NE(error_of(std::string(kCluster) + jobs + "strategies: [metis]\n").find("remove the top-level 'strategies'"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kCluster) + "graph: {builtin: fig3.1}\nstrategies: [metis]\nallocation: packed\n")
                .find("allocation policies place the jobs of `jobs:`"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kCluster) + jobs + "simulation: {engine: estimate}\n").find("choose evaluator"), std::string::npos);
  std::string graph_planned = jobs;
  graph_planned.replace(graph_planned.find("strategy:"), 9, "planner:");
  EXPECT_NE(error_of(std::string(kCluster) + graph_planned).find("jobs[0].planner (line 5): a graph is placed by a 'strategy'"),
            std::string::npos)
      << error_of(std::string(kCluster) + graph_planned);
  EXPECT_NE(error_of(std::string(kCluster) + "jobs: []\n").find("expected a non-empty list of jobs"), std::string::npos);
  // The strategy axis of a scenario of jobs names allocation policies.
  EXPECT_NE(error_of(std::string(kCluster) + jobs + "sweep: {strategy: [metis]}\n")
                .find("'metis' is neither a label in allocation nor an allocation policy"),
            std::string::npos)
      << error_of(std::string(kCluster) + jobs + "sweep: {strategy: [metis]}\n");
  EXPECT_EQ(error_of(std::string(kCluster) + jobs + "sweep: {strategy: [topology-aware]}\n"), "no error");
  EXPECT_NE(error_of(std::string(kCluster) + jobs + "allocation: [{name: random, seed: 7}]\nsimulation: {seeds: [1, 2]}\n")
                .find("allocation[0] (line 11): allocation 'random' has a seed of its own, which simulation.seeds would replace"),
            std::string::npos)
      << error_of(std::string(kCluster) + jobs + "allocation: [{name: random, seed: 7}]\nsimulation: {seeds: [1, 2]}\n");
  EXPECT_NE(error_of(with_gpus("[0, 2]", "14")).find("job 'llama' needs 7 whole servers, and 6 of the cluster's 8 are left"),
            std::string::npos)
      << error_of(with_gpus("[0, 2]", "14"));
  EXPECT_NE(error_of(with_gpus("[0-99999999]", "8")).find("GPU 99999999 is not in the cluster (GPUs 0-15)"), std::string::npos);
}

}  // namespace
}  // namespace placesim
