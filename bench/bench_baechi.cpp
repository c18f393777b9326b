// Placement time of Baechi's placers (m-TOPO, m-ETF, m-SCT) on VGG-16 (3,704 operators), 4 GPUs.
// Target (issue #5): well under a second each, one core. m-SCT's time includes its LP (CLP).
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>

#include "placement/baechi/baechi.h"
#include "sim/graph_io.h"
#include "topologies/cluster_config.h"

using namespace placesim;

namespace {

using benchutil::shared_graph;

void run_baechi(benchmark::State& state, BaechiMethod method) {
  const std::string path = shared_graph("quickp/vgg.json");
  if (path.empty()) {
    state.SkipWithError("../shared/graphs/quickp/vgg.json is absent");
    return;
  }
  static const Graph g = load_graph(path).graph;
  NvlinkServersConfig cfg;
  cfg.gpus = 4;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("bench");
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
