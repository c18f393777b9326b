// METIS placement time: the whole place() call (graph conversion, partitioning, part-to-GPU
// mapping) on VGG-16 (3,704 operators) on 4 GPUs in 2 NVLink servers.
// Target (issue #5): under 50 ms (Placeto's paper reports 0.6 s for its graph-partitioning baseline).
// Run: ./bench_metis --benchmark_repetitions=5 and read the median.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>

#include "placement/metis/metis_strategy.h"
#include "sim/graph_io.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {


void run_metis(benchmark::State& state, MetisConfig::Method method) {
  const Graph* vgg = benchutil::shared_graph_or_skip(state, "quickp/vgg.json");
  if (!vgg) return;
  const Graph& g = *vgg;
  NvlinkServersConfig cfg;
  cfg.gpus = 4;
  const Cluster c = make_nvlink_servers(cfg);
  MetisConfig mc;
  mc.method = method;
  MetisStrategy strategy(mc);
  for (auto _ : state) {
    PlacementResult r = strategy.place(g, c);
    benchmark::DoNotOptimize(r.placement.data());
  }
  state.counters["operators"] = static_cast<double>(g.num_operators());
}

void BM_MetisVgg4Gpus(benchmark::State& state) { run_metis(state, MetisConfig::Method::Best); }
BENCHMARK(BM_MetisVgg4Gpus)->Unit(benchmark::kMillisecond);

void BM_MetisKwayVgg4Gpus(benchmark::State& state) { run_metis(state, MetisConfig::Method::Kway); }
BENCHMARK(BM_MetisKwayVgg4Gpus)->Unit(benchmark::kMillisecond);

void BM_MetisRecursiveVgg4Gpus(benchmark::State& state) { run_metis(state, MetisConfig::Method::Recursive); }
BENCHMARK(BM_MetisRecursiveVgg4Gpus)->Unit(benchmark::kMillisecond);

}  // namespace
