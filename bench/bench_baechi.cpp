// Placement time of Baechi's placers (m-TOPO, m-ETF, m-SCT) on VGG-16 (3,704 operators), 4 GPUs.
// Target: well under a second each, one core. m-SCT's time includes its LP (CLP).
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>

#include "placement/strategies/baechi/baechi.h"
#include "sim/io/graph_io.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {


void run_baechi(benchmark::State& state, BaechiMethod method) {
  const Graph* vgg = benchutil::shared_graph_or_skip(state, "quickp/vgg.json");
  if (!vgg) return;
  const Graph& g = *vgg;
  NvlinkServersConfig cfg;
  cfg.gpus = 4;
  const Cluster c = make_nvlink_servers(cfg);
  Baechi strategy(method, {});
  for (auto _ : state) {
    PlacementResult r = strategy.place(g, c);
    benchmark::DoNotOptimize(r.placement.data());
  }
  state.counters["operators"] = static_cast<double>(g.num_operators());
}

void BM_MTopoVgg4Gpus(benchmark::State& state) { run_baechi(state, BaechiMethod::Topo); }
void BM_MEtfVgg4Gpus(benchmark::State& state) { run_baechi(state, BaechiMethod::Etf); }
void BM_MSctVgg4Gpus(benchmark::State& state) { run_baechi(state, BaechiMethod::Sct); }
BENCHMARK(BM_MTopoVgg4Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MEtfVgg4Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_MSctVgg4Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
