// The megatron planner (placement/planners/megatron) and scenarios of layer-level workloads: the plan it
// writes, and a scenario run end to end against a timeline derived by hand.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "placement/planners/megatron/megatron.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/plans/parallel_plan.h"
#include "sim/models/layer_zoo.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

LayerModel blocks_between(int blocks) {
  LayerModel m;
  m.name = "toy";
  m.layers.push_back({"embedding", 0, 0, 0, 0, 0});
  m.layers.back().block = false;
  for (int b = 0; b < blocks; ++b) m.layers.push_back({fmt::format("block{}", b), 1e-3, 2e-3, 0, 0, 0});
  m.layers.push_back({"head", 1e-3, 1e-3, 0, 0, 0});
  m.layers.back().block = false;
  return m;
}

std::string parse_error(const std::string& yaml) {
  return testutil::input_error_message([&] { parse_scenario(YAML::Load(yaml), "bad.yaml"); });
}

}  // namespace

TEST(Megatron, SplitsTheBlocksEvenlyWithEmbeddingFirstAndHeadLast) {
  // 12 blocks (layers 1-12) between the embedding (0) and the head (13). Four stages take 3
  // blocks each: the first also the embedding, the last also the head. Five stages: 12 = 3 + 3 +
  // 2 + 2 + 2, the first two stages taking one more.
  const LayerModel m = blocks_between(12);
  EXPECT_EQ(megatron_stages(m, 4), (std::vector<int>{0, 4, 7, 10}));
  EXPECT_EQ(megatron_stages(m, 5), (std::vector<int>{0, 4, 7, 9, 11}));
  EXPECT_EQ(megatron_stages(m, 1), (std::vector<int>{0}));
  EXPECT_EQ(megatron_stages(m, 12).back(), 12);  // the last block and the head
  EXPECT_THROW(megatron_stages(m, 13), std::invalid_argument);
  // The zoo marks its embedding and head: GPT-2's 12 blocks on 4 stages as above.
  const LayerWorkload gpt2 = models::build_layer_model("gpt2", {}, {1});
  EXPECT_EQ(megatron_stages(gpt2.by_tensor_parallel.at(1), 4), (std::vector<int>{0, 4, 7, 10}));
}

TEST(Megatron, SplitsAsNestsManualBaselineIsWrittenAndAsItRuns) {
  // 10 blocks (layers 1-10) between the embedding (0) and the head (11), 4 stages. even: 3, 3, 2, 2
  // blocks. ceil (NEST's README): ceil(10 / 4) = 3 each, the last what remains: 3, 3, 3, 1. nest
  // (NEST's code, 3 layers per stage over every layer): layers 0-2 (the embedding and 2 blocks),
  // 3-5, 6-8 and 9-11 (2 blocks and the head).
  const LayerModel m = blocks_between(10);
  EXPECT_EQ(megatron_stages(m, 4, MegatronSplit::Even), (std::vector<int>{0, 4, 7, 9}));
  EXPECT_EQ(megatron_stages(m, 4, MegatronSplit::Ceil), (std::vector<int>{0, 4, 7, 10}));
  EXPECT_EQ(megatron_stages(m, 4, MegatronSplit::Nest), (std::vector<int>{0, 3, 6, 9}));
  // 9 blocks: ceil's 3 per stage leave the fourth stage no block; nest's 3 layers of 11 leave it 2.
  EXPECT_THROW(megatron_stages(blocks_between(9), 4, MegatronSplit::Ceil), std::invalid_argument);
  EXPECT_EQ(megatron_stages(blocks_between(9), 4, MegatronSplit::Nest), (std::vector<int>{0, 3, 6, 9}));
  // A NEST workload: layer -1 and 32 blocks, no head, on 8 stages (NEST's Llama 2 baseline). ceil
  // and even agree (4 blocks each, the embedding first); NEST's code gives the first stage the
  // embedding and 3 blocks and the last 5 blocks (layers 28-32).
  LayerModel nest_like = blocks_between(32);
  nest_like.layers.pop_back();
  const std::vector<int> even = megatron_stages(nest_like, 8, MegatronSplit::Even);
  EXPECT_EQ(even, megatron_stages(nest_like, 8, MegatronSplit::Ceil));
  EXPECT_EQ(even.back(), 29);
  const std::vector<int> nest = megatron_stages(nest_like, 8, MegatronSplit::Nest);
  EXPECT_EQ(nest, (std::vector<int>{0, 4, 8, 12, 16, 20, 24, 28}));
  // The planner writes it, with the options' assumptions and pricing on the plan.
  LayerWorkload w;
  w.name = "toy";
  w.source = "test";
  w.by_tensor_parallel.emplace(1, nest_like);
  MegatronConfig c;
  c.pp = 8;
  c.split = MegatronSplit::Nest;
  c.optimizer = Optimizer::Sgd;
  c.recompute = RecomputeCharge::Nest;
  c.nest_baseline_pricing = true;
  const PlanResult r = Megatron(c).plan(w, testutil::dedicated_mesh(8, 10e9));
  EXPECT_EQ(r.plan.stage_starts, nest);
  EXPECT_EQ(r.details["stage_layers"], (std::vector<int>{4, 4, 4, 4, 4, 4, 4, 5}));
  EXPECT_EQ(r.plan.assumptions, static_cast<const PlanAssumptions&>(c));
  EXPECT_TRUE(r.plan.nest_baseline_pricing);
  // NEST's memory model on a workload without every operator's output: refused when planned.
  c.memory_model = MemoryModel::Nest;
  EXPECT_NE(Megatron(c).options_problem(w, testutil::dedicated_mesh(8, 10e9)).find("memory_model nest"), std::string::npos);
}

TEST(Megatron, FillsTheClusterWithReplicasAndSplitsTheGlobalBatch) {
  LayerWorkload w;
  w.name = "toy";
  w.source = "test";
  w.by_tensor_parallel.emplace(1, blocks_between(4));
  const Cluster cluster = testutil::dedicated_mesh(10, 10e9);
  MegatronConfig c;
  c.pp = 2;
  c.global_micro_batches = 8;
  // dp 0: as many replicas as fit, 10 / 2 = 5; 8 micro-batches do not split over 5.
  Megatron five(c);
  try {
    five.plan(w, cluster);
    FAIL() << "8 micro-batches were split over 5 replicas";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("5 replicas"), std::string::npos) << e.what();
  }
  c.dp = 4;
  const PlanResult r = Megatron(c).plan(w, cluster);
  EXPECT_EQ(r.plan.dp, 4);
  EXPECT_EQ(r.plan.micro_batches, 2);
  EXPECT_TRUE(r.plan.gpus.empty());  // tp-pp-dp: ParallelPlan's default
  EXPECT_EQ(r.details["gpus_idle"], 2);
  EXPECT_EQ(r.details["stage_layers"], (std::vector<int>{3, 3}));
  // Megatron-LM's order: replicas next to each other, stages outermost. Replica 1's stage 0 is
  // GPU 1, its stage 1 GPU 5.
  c.order = GpuOrder::TpDpPp;
  const PlanResult lm = Megatron(c).plan(w, cluster);
  EXPECT_EQ(lm.plan.gpus, (std::vector<DeviceId>{0, 4, 1, 5, 2, 6, 3, 7}));
  c.order = GpuOrder::TpPpDp;
  c.pp = 8;  // one group of pp 8 x ep 2 needs 16 GPUs
  c.ep = 2;
  c.dp = 0;
  c.global_micro_batches = 0;
  try {
    Megatron(c).plan(w, cluster);
    FAIL() << "a 16-GPU expert group was planned on 10";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs 16 GPUs"), std::string::npos) << e.what();
  }
  c.pp = 2;
  c.ep = 1;
  c.global_micro_batches = 8;
  c.dp = 6;  // 12 GPUs
  try {
    Megatron(c).plan(w, cluster);
    FAIL() << "12 GPUs were planned on 10";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("12 GPUs, the cluster has 10"), std::string::npos) << e.what();
  }
}

TEST(Megatron, ScenarioOptionsAreCheckedWhenParsed) {
  const char* workload = "workload: {model: gpt2}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n";
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [{name: megatron, options: {zero: 4}}]")
                .find("strategies[0].options.zero"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [{name: megatron, options: {micro_batches: 2, "
                                                "global_micro_batches: 8}}]")
                .find("not both"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [{name: megatron, options: {pp: 4, micro_batches: 6, "
                                                "virtual_stages: 2}}]")
                .find("strategies[0].options.virtual_stages"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [{name: megatron, options: {pp: 4, micro_batches: 8, "
                                                "virtual_stages: 2, schedule: gpipe}}]")
                .find("must be 1f1b"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [{name: megatron, options: {zero: 1, overlap_param_gather: true, "
                                                "overlap_grad_reduce: false}}]")
                .find("strategies[0].options.overlap_grad_reduce"),
            std::string::npos);
  EXPECT_NE(parse_error(std::string(workload) + "strategies: [quickp]").find("places the operators of a graph"),
            std::string::npos);
  EXPECT_NE(parse_error("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [megatron]")
                .find("workload:"),
            std::string::npos);
  EXPECT_NE(parse_error("workload: {model: gpt-5}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [megatron]")
                .find("workload.model"),
            std::string::npos);
  EXPECT_NE(parse_error("workload: {model: gpt2, gpu: tpu}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [megatron]")
                .find("workload.gpu"),
            std::string::npos);
  EXPECT_NE(parse_error("workload: {file: w.json, mfu: 0.3}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [megatron]")
                .find("mfu"),
            std::string::npos);
}

void write_toy_workload(const fs::path& dir, int tp = 1);

// A fixed plan's options that the workload or the cluster cannot take are refused when the
// scenario is planned (exit 2), naming the strategy's options, and in a sweep the combination: each
// combination's own workload and cluster, not each value against the base it replaces.
TEST(Megatron, WhatTheWorkloadOrClusterCannotTakeIsRefusedWhenPlanned) {
  const std::string cluster = "cluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n";
  auto planned = [](const std::string& yaml, const std::string& file = "s.yaml") {
    return testutil::input_error_message([&] { plan_sweep(YAML::Load(yaml), file); });
  };
  std::string m = planned("workload: {model: gpt2}\n" + cluster + "strategies: [{name: megatron, options: {tp: 2, pp: 4}}]");
  EXPECT_NE(m.find("strategies[0].options"), std::string::npos) << m;
  EXPECT_NE(m.find("needs 8 GPUs, the cluster has 4"), std::string::npos) << m;
  m = planned("workload: {model: gpt2}\n" + cluster + "strategies: [megatron, {name: megatron, label: wide, options: {tp: 8}}]");
  EXPECT_NE(m.find("strategies[1].options"), std::string::npos) << m;
  // A sweep: 24 stages fit llama2-7b's 32 blocks, not the base's gpt2 (12); only the combination
  // that pairs them with gpt2 is refused, and named.
  const std::string sweep = "workload: {model: gpt2}\ncluster: {type: full-mesh, gpus: 24, bandwidth: 10GB/s}\n"
                            "strategies: [{name: megatron, options: {pp: 2}}]\nsweep:\n"
                            "  - strategies[megatron].options: [{pp: 24}]\n    workload: ";
  EXPECT_EQ(plan_sweep(YAML::Load(sweep + "[{model: llama2-7b}]\n"), "s.yaml").points.size(), 1u);
  m = planned(sweep + "[{model: llama2-7b}, {model: gpt2}]\n");
  EXPECT_NE(m.find("the combination "), std::string::npos) << m;
  EXPECT_NE(m.find("workload={model: gpt2}"), std::string::npos) << m;
  EXPECT_NE(m.find("24 pipeline stages for the 12 blocks of gpt2"), std::string::npos) << m;
  // Sequence parallelism splits each sequence over the tensor-parallel group.
  m = planned("workload: {model: gpt2, sequence: 1001, sequence_parallel: true}\n" + cluster +
              "strategies: [{name: megatron, options: {tp: 2, sequence_parallel: true}}]");
  EXPECT_NE(m.find("tp 2 does not divide the 1001 tokens of gpt2"), std::string::npos) << m;
  // The model's norms must be timed as the plan runs them: both sequence-parallel, or neither.
  m = planned("workload: {model: gpt2, sequence: 1000}\n" + cluster +
              "strategies: [{name: megatron, options: {tp: 2, sequence_parallel: true}}]");
  EXPECT_NE(m.find("gpt2 was built with its norms and dropouts on every token"), std::string::npos) << m;
  m = planned("workload: {model: gpt2, sequence: 1000, sequence_parallel: true}\n" + cluster +
              "strategies: [{name: megatron, options: {tp: 2}}]");
  EXPECT_NE(m.find("gpt2 was built for sequence parallelism"), std::string::npos) << m;
  m = planned("workload: {model: gpt2, sequence: 1000, sequence_parallel: true}\n" + cluster +
              "strategies: [{name: megatron, options: {pp: 2, dp: 1, stage_tp: [1, 2], micro_batches: 2}}]");
  EXPECT_NE(m.find("gpt2 was built for sequence parallelism"), std::string::npos) << m;  // every stage's model, not the first's
  EXPECT_NO_THROW(plan_sweep(YAML::Load("workload: {model: gpt2, sequence: 1000, sequence_parallel: true}\n" + cluster +
                                        "strategies: [{name: megatron, options: {tp: 2, sequence_parallel: true}}]"),
                             "s.yaml"));
  // NEST's measured workloads have no activations with sequence parallelism.
  const fs::path dir = testutil::fresh_temp_dir("megatron-parse");
  write_toy_workload(dir, 2);
  m = planned("workload: {file: toy.json}\n" + cluster + "strategies: [{name: megatron, options: {tp: 2, sequence_parallel: true}}]",
              (dir / "s.yaml").string());
  EXPECT_NE(m.find("strategies[0].options"), std::string::npos) << m;
  EXPECT_NE(m.find("gives no activations with it"), std::string::npos) << m;
  fs::remove_all(dir);
  // NEST's assumptions that the zoo's model cannot take (it gives no operator's output and no
  // NEST units), for the fixed plan and the searches alike.
  for (const std::string planner : {"megatron", "nest", "nest-unaware", "mcmc-plan"}) {
    SCOPED_TRACE(planner);
    m = planned("workload: {model: gpt2}\n" + cluster + "strategies: [{name: " + planner + ", options: {memory_model: nest}}]");
    EXPECT_NE(m.find("strategies[0].options"), std::string::npos) << m;
    EXPECT_NE(m.find("memory_model nest"), std::string::npos) << m;
    m = planned("workload: {model: gpt2}\n" + cluster + "strategies: [{name: " + planner + ", options: {compute_units: nest}}]");
    EXPECT_NE(m.find("compute_units nest"), std::string::npos) << m;
  }
}

// Two layers of forward 1 ms and backward 2 ms, 10 MB of parameters each, 10 MB of activation
// between them and 20 MB stashed per micro-batch in flight, as `dir`/toy.json, measured at
// tensor-parallel width `tp`.
void write_toy_workload(const fs::path& dir, int tp) {
  nlohmann::json layer0 = {{"id", 0}, {"fwd_s", 1e-3}, {"bwd_s", 2e-3}, {"parameter_bytes", 10e6},
                           {"stashed_bytes_without_recompute", 20e6}};
  nlohmann::json layer1 = layer0;
  layer1["id"] = 1;
  const nlohmann::json workload = {
      {"schema", "nest-workload/1"},
      {"time_unit", "s"},
      {"model", "toy"},
      {"variants",
       {{std::to_string(tp),
         {{"tensor_parallel_degree", tp},
          {"layers", {layer0, layer1}},
          {"edges", {{{"src", 0}, {"dst", 1}, {"bytes", 10e6}}}}}}}}};
  std::ofstream(dir / "toy.json") << workload.dump();
}

// The toy workload and `dir`/s.yaml: on 4 GPUs of 130 MB, a link of 10 GB/s for every ordered
// pair, megatron pp 2, dp 2, 2 micro-batches (1F1B) and GPipe pp 2, 4 micro-batches, on `engine`.
void write_toy_scenario(const fs::path& dir, const std::string& engine) {
  write_toy_workload(dir);
  std::ofstream(dir / "s.yaml") << "workload: {file: toy.json}\n"
                                   "cluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s, latency: 0s, gpu_memory: 130MB}\n"
                                   "strategies:\n"
                                   "  - {name: megatron, options: {pp: 2, dp: 2, micro_batches: 2}}\n"
                                   "  - {name: megatron, label: gpipe, options: {pp: 2, micro_batches: 4, schedule: gpipe}}\n"
                                   "simulation: {engine: "
                                << engine << "}\n";
}

// Runs `dir`/s.yaml into `dir`/out, its log into `log`.
SweepSummary run_toy_scenario(const fs::path& dir, std::ostringstream& log, bool resume = false) {
  SweepOptions options;
  options.output = (dir / "out").string();
  options.progress = false;
  options.resume = resume;
  return run_sweep(load_sweep((dir / "s.yaml").string()), options, log);
}

// results.jsonl of a run, by label.
std::map<std::string, nlohmann::json> records_by_label(const fs::path& out) {
  std::ifstream in(out / "results.jsonl");
  std::map<std::string, nlohmann::json> by_label;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    by_label[j["label"]] = j;
  }
  return by_label;
}

TEST(Megatron, AScenarioRunsThePlanOnEveryEngineAndReportsWhatDoesNotFit) {
  // Two layers of forward 1 ms and backward 2 ms, 10 MB of parameters each, 10 MB of activation
  // between them and 20 MB stashed per micro-batch in flight; four GPUs, a link of 10 GB/s for
  // every ordered pair. megatron pp 2, dp 2, 2 micro-batches, 1F1B, its sends blocking the
  // sender until they arrive (Megatron-LM's), by hand:
  //   stage 0: F0 0-1, its activation arrives at 2, so F1 2-3 (arrives at 4).
  //   stage 1: F0 2-3, B0 3-5 (gradient back at 6, which F1 waits for), F1 6-7, B1 7-9 (back at 10).
  //   stage 0: B0 6-8, B1 10-12; its 10 MB all-reduced by ring over GPUs 0 and 2: 12-13 ms.
  // (Sends beside the sender's next operator, overlap_p2p_comm: 12 ms.)
  // Memory of stage 0: 10 MB of parameters, 10 of gradients, 60 of Adam's states and two
  // micro-batches in flight, 40 MB: 120 MB. GPipe with 4 micro-batches holds all four: 160 MB
  // (152.6 MiB), more than the GPUs' 130 MB.
  const fs::path dir = testutil::fresh_temp_dir("megatron-scenario");
  write_toy_scenario(dir, "all");
  std::ostringstream log;
  const SweepSummary summary = run_toy_scenario(dir, log);
  EXPECT_EQ(summary.ok, 1u) << log.str();
  EXPECT_EQ(summary.infeasible, 1u) << log.str();
  const std::map<std::string, nlohmann::json> by_label = records_by_label(dir / "out");
  const nlohmann::json& ok = by_label.at("megatron");
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["graph"], "toy");
  EXPECT_NEAR(ok["evaluator_latency"].get<double>(), 13e-3, 1e-12);
  EXPECT_NEAR(ok["flow_latency"].get<double>(), 13e-3, 1e-12);
  EXPECT_NEAR(ok["simgrid_latency"].get<double>(), 13e-3, 1e-8);
  EXPECT_NEAR(ok["memory_per_gpu"][0].get<double>(), 120e6, 1);
  EXPECT_NEAR(ok["memory_per_gpu"][1].get<double>(), 100e6, 1);  // stage 1: one in flight
  EXPECT_EQ(ok["strategy_report"]["plan"]["dp"], 2);
  EXPECT_GT(ok["operators"].get<int>(), 8);
  EXPECT_TRUE(fs::exists(dir / "out" / ok["placement_file"].get<std::string>()));
  EXPECT_TRUE(fs::exists(dir / "out" / ok["trace_file"].get<std::string>()));
  const nlohmann::json& big = by_label.at("gpipe");
  EXPECT_EQ(big["status"], "infeasible");
  const std::string why = big["error"];
  EXPECT_NE(why.find("gpu0"), std::string::npos) << why;
  EXPECT_NE(why.find("152.6 MiB"), std::string::npos) << why;  // 160e6 bytes
  fs::remove_all(dir);
}

// simulation.collectives condensed: the same plan, its 2-replica ring all-reduce one flow each way
// of 10 MB (2 steps of 5 MB), 1 ms as before (13 ms in all); the record says how its collectives ran.
TEST(Megatron, CondensedCollectivesRunTheSamePlan) {
  const fs::path dir = testutil::fresh_temp_dir("megatron-condensed");
  write_toy_scenario(dir, "all");
  std::ostringstream log;
  run_toy_scenario(dir, log);
  const nlohmann::json messages = records_by_label(dir / "out").at("megatron");
  EXPECT_EQ(messages["collectives"], "messages");
  write_toy_scenario(dir, "all, collectives: condensed");
  run_toy_scenario(dir, log);
  const nlohmann::json ok = records_by_label(dir / "out").at("megatron");
  EXPECT_EQ(ok["status"], "ok") << log.str();
  EXPECT_EQ(ok["collectives"], "condensed");
  EXPECT_NEAR(ok["evaluator_latency"].get<double>(), 13e-3, 1e-12);
  EXPECT_NEAR(ok["flow_latency"].get<double>(), 13e-3, 1e-12);
  EXPECT_NEAR(ok["simgrid_latency"].get<double>(), 13e-3, 1e-8);
  fs::remove_all(dir);
}

// simulation.engine estimate: the same plans priced by NEST's estimate alone, no engine run. By
// hand: each stage computes 3 ms and sends 10 MB at 10 GB/s (1 ms) to its neighbour, so the
// largest stage load is 4 ms; x (m + S - 1) = 3, plus stage 0's 10 MB ring all-reduce over its 2
// replicas (1 ms): 13 ms. Memory as the engines' run reports it; GPipe still does not fit.
TEST(Megatron, EngineEstimatePricesPlansWithoutRunningThem) {
  const fs::path dir = testutil::fresh_temp_dir("megatron-estimate");
  write_toy_scenario(dir, "estimate");
  std::ostringstream log;
  const SweepSummary summary = run_toy_scenario(dir, log);
  EXPECT_EQ(summary.ok, 1u) << log.str();
  EXPECT_EQ(summary.infeasible, 1u) << log.str();
  // Read back (--resume): both points are kept as they were, none reads as failed and reruns.
  const SweepSummary again = run_toy_scenario(dir, log, /*resume=*/true);
  EXPECT_EQ(again.skipped, 2u) << log.str();
  EXPECT_EQ(again.failed, 0u) << log.str();
  const std::map<std::string, nlohmann::json> by_label = records_by_label(dir / "out");
  const nlohmann::json& ok = by_label.at("megatron");
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_FALSE(ok.contains("evaluator_latency")) << ok.dump();
  EXPECT_FALSE(ok.contains("simgrid_latency")) << ok.dump();
  EXPECT_NEAR(ok["estimate_latency"].get<double>(), 13e-3, 1e-12);
  EXPECT_NEAR(ok["memory_per_gpu"][0].get<double>(), 120e6, 1);
  EXPECT_NEAR(ok["memory_per_gpu"][1].get<double>(), 100e6, 1);
  EXPECT_EQ(by_label.at("gpipe")["status"], "infeasible");
  std::ifstream csv(dir / "out" / "results.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",ok,,,,0.013,"), std::string::npos) << text;  // no latency of any engine; the estimate
  fs::remove_all(dir);
}

TEST(Megatron, EngineEstimateIsForPlansOnly) {
  EXPECT_NE(parse_error("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [m-etf]\nsimulation: {engine: estimate}")
                .find("a graph's placements need an engine"),
            std::string::npos);
  EXPECT_NE(parse_error("workload: {model: gpt2}\ncluster: {type: full-mesh, gpus: 4, bandwidth: 10GB/s}\n"
                        "strategies: [megatron]\nsimulation: {engine: estimate}\noutput: {dir: x, chakra: true}")
                .find("no timeline for output.chakra"),
            std::string::npos);
}

TEST(Megatron, EveryOptionTakesEffect) {
  // Each key's documented example, alone, changes the config (the schema's own check that a key
  // is wired to its member).
  const OptionSchema<MegatronConfig> schema = megatron_schema();
  for (const OptionDoc& doc : schema.docs()) {
    YAML::Node node(YAML::NodeType::Map);
    node[doc.key] = YAML::Load(doc.example);
    // Sequence parallelism needs tensor parallelism: compared with the same tp without it.
    MegatronConfig base;
    if (doc.key == "sequence_parallel") node["tp"] = base.tp = 2;
    // Tensor-parallel overlap is of sequence parallelism's collectives: compared with it alone.
    if (doc.key == "tp_comm_overlap") {
      node["tp"] = base.tp = 2;
      node["sequence_parallel"] = base.sequence_parallel = true;
    }
    const MegatronConfig parsed = schema.parse(YamlFields(node, "test", "options"));
    EXPECT_NE(parsed, base) << doc.key << ": " << doc.example;
  }
  EXPECT_NE(planner_registry().find("megatron"), nullptr);
}

TEST(Megatron, StagesOfTheirOwnTensorParallelWidths) {
  // GPT-2 in 2 stages, the first at width 1 and the second at width 2: 3 GPUs a replica, so 2
  // replicas on 8 GPUs (2 idle). Stage 1 runs the zoo's width-2 layers: half the parameters per
  // GPU of its width-1 layers.
  const LayerWorkload gpt2 = models::build_layer_model("gpt2", {}, {1, 2});
  const Cluster cluster = testutil::dedicated_mesh(8, 100e9, 0.0, 80e9);
  MegatronConfig c;
  c.tp = 1;
  c.pp = 2;
  c.stage_tp = {1, 2};
  c.micro_batches = 4;
  const PlanResult r = Megatron(c).plan(gpt2, cluster);
  EXPECT_EQ(r.plan.stage_tp, (std::vector<int>{1, 2}));
  EXPECT_EQ(r.plan.dp, 2);
  EXPECT_EQ(r.details["gpus_used"], 6);
  EXPECT_EQ(r.details["gpus_idle"], 2);
  const CompiledPlan compiled = compile_plan(gpt2, r.plan, cluster);
  const int L = static_cast<int>(gpt2.by_tensor_parallel.at(1).layers.size()), second = compiled.stage_starts[1];
  double at_one = 0, at_two = 0;
  for (int l = second; l < L; ++l) {
    at_one += gpt2.by_tensor_parallel.at(1).layers[l].parameter_bytes;
    at_two += gpt2.by_tensor_parallel.at(2).layers[l].parameter_bytes;
  }
  EXPECT_LT(at_two, 0.6 * at_one);  // the blocks' matrices split in two, the norms not
  EXPECT_DOUBLE_EQ(compiled.memory[plan_gpu_index(r.plan, 1, 1, 1)].parameters, at_two);
  const Schedule run = Evaluator(compiled.graph.graph, cluster).schedule(compiled.graph.placement);
  EXPECT_GT(run.latency, 0);
  // Megatron-LM's order keeps each stage's replicas together: stage 0 on GPUs 0-1, stage 1 on 2-5.
  c.order = GpuOrder::TpDpPp;
  EXPECT_EQ(Megatron(c).plan(gpt2, cluster).plan.gpus, (std::vector<DeviceId>{0, 2, 3, 1, 4, 5}));
  // What cannot run is the options' problem, said as such.
  c.stage_tp = {1, 2, 2};
  EXPECT_EQ(Megatron(c).options_problem(gpt2, cluster), "megatron: stage_tp gives 3 widths for 2 stages");
  c.stage_tp = {1, 4};
  EXPECT_NE(Megatron(c).options_problem(gpt2, cluster).find("no tensor-parallel width 4 (stage 1)"), std::string::npos);
  // In a scenario: a list of widths, each a whole number.
  const std::string base = "workload: {model: gpt2}\ncluster: {type: full-mesh, gpus: 8, bandwidth: 100GB/s}\n";
  EXPECT_NE(parse_error(base + "strategies: [{name: megatron, options: {pp: 2, stage_tp: 2}}]\n")
                .find("strategies[0].options.stage_tp (line 3): expected a list of tensor-parallel widths"),
            std::string::npos);
  EXPECT_NE(parse_error(base + "strategies: [{name: megatron, options: {pp: 2, stage_tp: [1, 0]}}]\n")
                .find("expected whole widths from 1 to 65536, got '0'"),
            std::string::npos);
}

TEST(Megatron, SaysWhenATensorParallelGroupSpansServers) {
  // 2 servers of 4 GPUs: tp 4 fits a server; tp 8 spans both, and so does tp 4 after a 2-wide stage.
  const LayerWorkload gpt2 = models::build_layer_model("gpt2", {}, {1, 2, 4});
  NonBlockingConfig f;
  f.servers = 2;
  f.gpus_per_server = 4;
  f.gpu_memory = 80e9;
  const Cluster cluster = make_non_blocking(f);
  MegatronConfig c;
  c.tp = 4;
  c.pp = 2;
  c.dp = 1;
  EXPECT_FALSE(Megatron(c).plan(gpt2, cluster).details.contains("tensor_groups_across_servers"));
  c.tp = 2;
  c.stage_tp = {2, 4};
  const PlanResult r = Megatron(c).plan(gpt2, cluster);
  ASSERT_TRUE(r.details.contains("tensor_groups_across_servers"));
  EXPECT_EQ(r.details["tensor_groups_across_servers"],
            "1 tensor-parallel group spans servers (first: replica 0, stage 1 on servers 0, 1): their all-reduces cross the "
            "NICs");
}

TEST(Megatron, StagesOfDifferentWidthsNeedAnEngine) {
  // NEST's estimate prices one width: engine estimate refuses such a plan when the scenario is
  // checked; equal widths are the uniform plan and are priced.
  auto check = [](const std::string& widths) {
    const Scenario s = parse_scenario(
        YAML::Load("workload: {model: gpt2}\ncluster: {type: full-mesh, gpus: 8, bandwidth: 100GB/s}\n"
                   "strategies: [{name: megatron, options: {pp: 2, stage_tp: " + widths + "}}]\nsimulation: {engine: estimate}\n"),
        "w.yaml");
    const std::vector<std::size_t> all{0};
    return testutil::input_error_message([&] { check_planner_options(s, all); });
  };
  EXPECT_NE(check("[1, 2]").find("w.yaml: strategies[0].options: simulation.engine estimate: NEST's estimate prices one "
                                 "tensor-parallel width, and stage_tp gives the stages 1, 2: run the plan on an engine"),
            std::string::npos)
      << check("[1, 2]");
  EXPECT_EQ(check("[1, 1]"), "");
}

namespace {

// The default dp fills the cluster with replicas whose copies (dp x cp) form whole expert
// groups: cp 2 x ep 2 on 8 GPUs of tp 4 is one replica (dp 1, two copies), not none.
TEST(Megatron, DefaultReplicasCountTheirContextRanksForExpertGroups) {
  models::LayerZooOptions o;
  o.gpu = "h100";
  o.sequence = 4096;
  o.context_parallel = 2;
  const LayerWorkload w = models::build_layer_model("mixtral-8x7b", o, {4});
  MegatronConfig c;
  c.tp = 4;
  c.cp = 2;
  c.ep = 2;
  c.micro_batches = 1;
  const PlanResult r = Megatron(c).plan(w, testutil::dedicated_mesh(8, 100e9));
  EXPECT_EQ(r.plan.dp, 2);  // 1 replica x cp 2
  EXPECT_EQ(r.plan.ep, 2);
  EXPECT_EQ(r.details["gpus_used"], 8);
  // ep 4 needs two replicas' copies (16 GPUs): said as such on 8.
  c.ep = 4;
  try {
    Megatron(c).plan(w, testutil::dedicated_mesh(8, 100e9));
    FAIL() << "an expert group of 4 copies was planned on 8 GPUs of tp 4 x cp 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs 16 GPUs, the cluster has 8"), std::string::npos) << e.what();
  }
}

}  // namespace
