// One training iteration of GPT-3 175B (NEST's per-layer workload, ../shared/workloads/nest) with
// tp 8, pp 16, dp 8, 16 micro-batches, 1F1B and ZeRO 1 on 1,024 GPUs of a fat-tree (128 servers
// of 8 GPUs, 400 Gb/s NICs, k = 8): wall time to compile the plan into the execution graph (0)
// or to run the compiled graph on the evaluator (1), the flow engine (2) or SimGrid (3), and the
// process's peak resident memory; second argument 1: its rings condensed
// (CollectiveDetail::Condensed). Counters: the simulated iteration, operators,
// transfers, peak RSS in GiB.
//
// Measured on 2 shared cores: see docs/parallelism.md ("Speed").
#include <benchmark/benchmark.h>

#include <optional>
#include <string>

#include "bench/bench_util.h"
#include "sim/engines/engine.h"
#include "sim/core/execution_graph.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {


void BM_Gpt3Tp8Pp16Dp8(benchmark::State& state) {
  const std::string path = benchutil::shared_file("workloads/nest/gpt3.h100_spineLeaf.mbs1.json");
  if (path.empty()) {
    state.SkipWithError("../shared/workloads/nest/gpt3.h100_spineLeaf.mbs1.json is absent");
    return;
  }
  const LayerWorkload workload = load_nest_workload(path);
  FatTreeConfig cfg;
  cfg.k = 8;
  cfg.servers = 128;
  cfg.gpus_per_server = 8;
  cfg.nvlink_bandwidth = 900e9;
  cfg.nic_bandwidth = 50e9;
  cfg.nic_latency = 1e-6;
  cfg.gpu_memory = 80.0 * (1ull << 30);
  const Cluster cluster = make_fat_tree(cfg);
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 16;
  plan.dp = 8;
  plan.micro_batches = 16;
  plan.zero = 1;
  const int what = static_cast<int>(state.range(0));
  const CollectiveDetail detail = state.range(1) == 1 ? CollectiveDetail::Condensed : CollectiveDetail::Messages;
  const LayerModel& model = workload.by_tensor_parallel.at(8);
  std::optional<CompiledPlan> compiled;
  if (what > 0) compiled = compile_plan(model, plan, cluster, detail);
  double latency = 0;
  for (auto _ : state) {
    if (what == 0) {
      compiled = compile_plan(model, plan, cluster, detail);
    } else {
      const std::string_view name = what == 1 ? kEvaluator : what == 2 ? kFlow : kSimGrid;
      latency = *run_engines(compiled->graph, cluster, EngineSet::of({name}), RunOrder::Fcfs).latency(name);
    }
    benchmark::ClobberMemory();
  }
  state.counters["simulated_s"] = latency;
  state.counters["operators"] = static_cast<double>(compiled->graph.graph.num_operators());
  state.counters["transfers"] = static_cast<double>(compiled->graph.graph.num_tensors());
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(std::string(what == 0 ? "compile" : what == 1 ? "evaluator" : what == 2 ? "flow" : "simgrid") +
                 (detail == CollectiveDetail::Condensed ? ", condensed" : ""));
}

// The zoo's GPT-3 175B on the kernel model (A100, bf16, selective recomputation, sequence
// parallelism, distributed optimizer, blocking pipeline sends), tp 8 x pp 16 x dp D on {preset: dgx-a100, servers: 16 D} at
// a global batch of 64 D sequences, ring phases condensed: compile and the flow engine, end to
// end, with the peak memory: D = 24 is 3,072 GPUs (target 1 minute), D = 48 6,144 (2 minutes,
// 8 GB). Second benchmark: the 64-GPU plan of `placesim plan --model gpt3-175b` (tp 8, pp 8, 64
// micro-batches, interleaved 3) with every engine (target 15 s).
ParallelPlan plan_of_scale(int dp) {
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 16;
  plan.dp = dp;
  plan.micro_batches = 64;
  plan.zero = 1;
  plan.overlap_param_gather = true;  // Megatron's distributed optimizer, as `plan --distributed-optimizer`
  plan.sequence_parallel = true;
  plan.blocking_sends = true;  // `placesim plan`'s default, Megatron-LM's
  return plan;
}

void BM_ZooGpt3Scale(benchmark::State& state) {
  const int dp = static_cast<int>(state.range(0));
  models::LayerZooOptions o;
  o.gpu = "a100";
  o.recompute = models::Recompute::Selective;
  o.sequence_parallel = true;
  const LayerWorkload w = models::build_layer_model("gpt3-175b", o, {8});
  const Cluster cluster =
      cluster_from_yaml(YAML::Load("{preset: dgx-a100, servers: " + std::to_string(16 * dp) + "}"), "the dgx-a100 preset");
  if (const std::string why = plan_problem(w, plan_of_scale(dp), cluster); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const ParallelPlan plan = plan_of_scale(dp);
  double latency = 0, operators = 0, tensors = 0;
  for (auto _ : state) {
    const CompiledPlan c = compile_plan(w, plan, cluster, CollectiveDetail::Condensed);
    operators = static_cast<double>(c.graph.graph.num_operators());
    tensors = static_cast<double>(c.graph.graph.num_tensors());
    latency = *run_engines(c.graph, cluster, EngineSet::of({kFlow}), RunOrder::Fcfs).latency(kFlow);
  }
  state.counters["simulated_s"] = latency;
  state.counters["operators"] = operators;
  state.counters["tensors"] = tensors;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(std::to_string(8 * 16 * dp) + " GPUs, compile + flow");
}

void BM_ZooGpt3EveryEngine(benchmark::State& state) {
  models::LayerZooOptions o;
  o.gpu = "a100";
  const LayerWorkload w = models::build_layer_model("gpt3-175b", o, {8});
  const Cluster cluster = cluster_from_yaml(YAML::Load("{preset: dgx-a100, servers: 8}"), "the dgx-a100 preset");
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 8;
  plan.micro_batches = 64;
  plan.virtual_stages = 3;
  plan.blocking_sends = true;  // as `placesim plan` runs it
  double latency = 0;
  for (auto _ : state) {
    const CompiledPlan c = compile_plan(w, plan, cluster, CollectiveDetail::Condensed);
    latency = *run_engines(c.graph, cluster, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs).latency(kSimGrid);
  }
  state.counters["simulated_s"] = latency;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel("64 GPUs, compile + evaluator + flow + simgrid, condensed");
}

}  // namespace

BENCHMARK(BM_ZooGpt3Scale)->Arg(24)->Arg(48)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_ZooGpt3EveryEngine)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_Gpt3Tp8Pp16Dp8)->ArgsProduct({{0, 1, 2, 3}, {0, 1}})->Unit(benchmark::kMillisecond)->Iterations(1);
