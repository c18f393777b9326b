// Evaluator throughput: evaluations per second of the fast list-scheduling evaluator.
// Target: >= 2,000 evaluations/s on VGG-16 (3,704 operators) placed on 4 GPUs, one core.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>
#include <random>

#include "sim/models/builtin_graphs.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using benchutil::shared_graph;

std::vector<DeviceId> random_placement(const Graph& g, int gpus, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<DeviceId> p(g.num_operators());
  for (auto& d : p) d = static_cast<DeviceId>(rng() % gpus);
  return p;
}

void run_evaluator(benchmark::State& state, const Graph& g, int gpus) {
  NvlinkServersConfig cfg;
  cfg.gpus = gpus;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("bench");
  Evaluator ev(g, c);
  auto p = random_placement(g, gpus, 7);
  double sink = 0;
  for (auto _ : state) {
    sink += ev.latency(p);
    benchmark::DoNotOptimize(sink);
  }
  state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["operators"] = static_cast<double>(g.num_operators());
}

void BM_EvaluatorVgg4Gpus(benchmark::State& state) {
  const std::string path = shared_graph("quickp/vgg.json");
  if (path.empty()) {
    state.SkipWithError("../shared/graphs/quickp/vgg.json is absent");
    return;
  }
  static const Graph g = load_graph(path).graph;
  run_evaluator(state, g, 4);
}
BENCHMARK(BM_EvaluatorVgg4Gpus)->Unit(benchmark::kMicrosecond);

void BM_EvaluatorAlexnet4Gpus(benchmark::State& state) {
  const std::string path = shared_graph("quickp/alexnet.json");
  if (path.empty()) {
    state.SkipWithError("../shared/graphs/quickp/alexnet.json is absent");
    return;
  }
  static const Graph g = load_graph(path).graph;
  run_evaluator(state, g, 4);
}
BENCHMARK(BM_EvaluatorAlexnet4Gpus)->Unit(benchmark::kMicrosecond);

void BM_EvaluatorSynthetic(benchmark::State& state) {
  SyntheticGraphConfig cfg;
  cfg.layers = static_cast<int>(state.range(0));
  const Graph g = synthetic_training_graph(cfg);
  run_evaluator(state, g, 8);
}
BENCHMARK(BM_EvaluatorSynthetic)->Arg(64)->Arg(4551)->Unit(benchmark::kMillisecond);

}  // namespace
