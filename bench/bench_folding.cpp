// Plans at the scale of today's training runs, end to end as `placesim plan --engine flow` runs
// them (simulate_plan: the fold chosen, the graph compiled, the flow engine), with the operators
// simulated and the process's peak memory. First argument, the plan:
//   0  GPT-3 175B on 3,072 A100s ({preset: dgx-a100, servers: 384}): tp 8, pp 8, v 6, dp 48,
//      global batch 6,144, bf16, sequence parallelism, distributed optimizer, selective
//      recomputation (targets: 30 s, 2 GiB)
//   1  the same on 12,288 A100s (servers: 1,536, dp 192) (60 s, 4 GiB)
//   2  Llama 3 405B on 16,384 H100s ({preset: dgx-h100, servers: 2,048}): tp 8, pp 16, v 4,
//      dp 128, global batch 2,048, sequence 8,192, no recomputation, sequence parallelism,
//      distributed optimizer (60 s, 4 GiB)
//   3  the same on 131,072 H100s (servers: 16,384, dp 1,024, global batch 16,384) (10 min, 16 GiB)
// Second argument: 0 folded as `plan` folds by default, 1 the full graph (--full-graph).
// Peak memory is the process's: run one case per process (--benchmark_filter), as
// docs/parallelism.md ("Speed at scale") does.
#include <benchmark/benchmark.h>

#include <chrono>
#include <fmt/format.h>
#include <string>
#include <yaml-cpp/yaml.h>

#include "bench/bench_util.h"
#include "sim/models/gpu.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/plan_run.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

struct ScaleCase {
  const char* label;
  bool llama;  // Llama 3 405B (else the zoo's GPT-3 175B)
  int servers, pp, virtual_stages, dp;
  long global_batch;
};

constexpr ScaleCase kCases[] = {
    {"GPT-3 175B, 3,072 A100s", false, 384, 8, 6, 48, 6144},
    {"GPT-3 175B, 12,288 A100s", false, 1536, 8, 6, 192, 6144},
    {"Llama 3 405B, 16,384 H100s", true, 2048, 16, 4, 128, 2048},
    {"Llama 3 405B, 131,072 H100s", true, 16384, 16, 4, 1024, 16384},
};

void BM_PlanAtScale(benchmark::State& state) {
  const ScaleCase& k = kCases[state.range(0)];
  const bool full = state.range(1) == 1;
  models::LayerZooOptions o;
  o.gpu = k.llama ? "h100" : "a100";
  o.precision = models::Precision::Bf16;
  o.recompute = k.llama ? models::Recompute::None : models::Recompute::Selective;
  o.sequence_parallel = true;
  const LayerWorkload w =
      k.llama ? models::build_layer_model(models::model_from_yaml(YAML::Load("{family: llama, name: llama3.1-405b, layers: 126, "
                                                                            "hidden: 16384, heads: 128, kv_heads: 8, ffn_hidden: "
                                                                            "53248, vocab: 128256, sequence: 8192}"),
                                                                 "bench"),
                                          o, {8})
              : models::build_layer_model("gpt3-175b", o, {8});
  const Cluster cluster = cluster_from_yaml(
      YAML::Load(fmt::format("{{preset: {}, servers: {}}}", k.llama ? "dgx-h100" : "dgx-a100", k.servers)), "bench");
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = k.pp;
  plan.virtual_stages = k.virtual_stages;
  plan.dp = k.dp;
  plan.micro_batches = static_cast<int>(k.global_batch / k.dp);
  plan.zero = 1;
  plan.overlap_param_gather = true;
  plan.sequence_parallel = true;
  plan.blocking_sends = true;
  if (const std::string why = plan_problem(w, plan, cluster); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  PlanRunOptions options;
  options.engines = EngineSet::of({kFlow});
  options.fold = full ? FoldMode::Full : FoldMode::Auto;
  PlanRun run;
  for (auto _ : state) {
    try {
      run = simulate_plan(w, plan, cluster, options);
    } catch (const GraphTooLarge& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
  state.counters["simulated_s"] = *run.runs.latency(kFlow);
  state.counters["operators"] = static_cast<double>(run.compiled.graph.graph.num_operators());
  state.counters["tensors"] = static_cast<double>(run.compiled.graph.graph.num_tensors());
  state.counters["copies"] = run.fold.copies;
  state.counters["exact"] = run.fold.exact;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(std::string(k.label) + (full ? ", full graph" : ", folded"));
}

}  // namespace

BENCHMARK(BM_PlanAtScale)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({2, 1})
    ->Args({3, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
