// Placement time of Celeritas (CPD-TOPO, fusion DP, Adjusting Placement, and the evaluator check
// of keep_better) and of Order-Place on the zoo Transformer as the paper ran it (§6.2.1: 12 layers
// per stack, 16 heads, 2048 wide, batch 256): about 30,600 operators, on 4 GPUs in two NVLink
// servers. The paper took 95 s on its 36,352-node Transformer (Table 4); target here: under 2 s.
#include <benchmark/benchmark.h>

#include "placement/strategies/celeritas/celeritas.h"
#include "sim/models/zoo.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

const Graph& transformer_12_layers() {
  static const Graph graph = [] {
    models::ModelConfig config;
    config.model = "transformer";
    config.layers = 12;
    config.heads = 16;
    config.hidden = 2048;
    config.batch = 256;
    return models::zoo_graph(config);
  }();
  return graph;
}

void run(benchmark::State& state, bool adjust) {
  const Graph& g = transformer_12_layers();
  NvlinkServersConfig cfg;
  cfg.gpus = 4;
  const Cluster c = make_nvlink_servers(cfg);
  CeleritasConfig config;
  config.adjust = adjust;
  config.keep_better = adjust;
  Celeritas strategy(config);
  int clusters = 0;
  for (auto _ : state) {
    PlacementResult r = strategy.place(g, c);
    benchmark::DoNotOptimize(r.placement.data());
    clusters = r.details["clusters"].get<int>();
  }
  state.counters["operators"] = static_cast<double>(g.num_operators());
  state.counters["clusters"] = clusters;
}

void BM_CeleritasTransformer12x4Gpus(benchmark::State& state) { run(state, true); }
void BM_OrderPlaceTransformer12x4Gpus(benchmark::State& state) { run(state, false); }
BENCHMARK(BM_CeleritasTransformer12x4Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_OrderPlaceTransformer12x4Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5)->ReportAggregatesOnly(true);

}  // namespace
