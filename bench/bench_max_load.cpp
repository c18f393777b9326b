// max-load (placement/strategies/max_load) on the msr-fiddle training graphs of Tarnawski et al. (NeurIPS
// 2020), 2 and 4 GPUs of 16 GiB. Target: under 0.5 s each for BERT-3 and GNMT.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"
#include "placement/strategies/max_load/max_load.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

void run_max_load(benchmark::State& state, const char* graph) {
  const Graph* g = benchutil::shared_graph_or_skip(state, graph);
  if (!g) return;
  NvlinkServersConfig cfg;
  cfg.gpus = static_cast<int>(state.range(0));
  cfg.gpu_memory = 16.0 * (1ull << 30);
  const Cluster c = make_nvlink_servers(cfg);
  MaxLoadSplit split;
  for (auto _ : state) {
    split = max_load_split(*g, c, {});
    benchmark::ClobberMemory();
  }
  state.counters["operators"] = static_cast<double>(g->num_operators());
  state.counters["units"] = split.units;
  state.counters["downsets"] = static_cast<double>(split.downsets);
  state.counters["max_stage_load_ms"] = split.max_stage_load * 1e3;
}

void BM_MaxLoadBert3(benchmark::State& state) { run_max_load(state, "msr-fiddle/bert_l-3_training.json"); }
void BM_MaxLoadGnmt(benchmark::State& state) { run_max_load(state, "msr-fiddle/gnmt_training.json"); }
void BM_MaxLoadResnet50(benchmark::State& state) { run_max_load(state, "msr-fiddle/resnet50_training.json"); }
BENCHMARK(BM_MaxLoadBert3)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MaxLoadGnmt)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MaxLoadResnet50)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
