// SimGrid engine wall time for one training iteration (each run forks a child, as the CLI does).
// Targets: VGG-16 on 8 GPUs under 0.5 s; a synthetic 100,000-operator graph under 5 s
// and under 1 GiB (the child's peak RSS is reported as `child_max_rss_MiB`).
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>
#include <random>
#include <sys/resource.h>

#include "sim/models/builtin_graphs.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/engines/simgrid_engine.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using benchutil::shared_graph;

// Contiguous blocks of the topological order (a pipeline-like split) with every 16th operator
// moved to a random GPU, so there is both pipeline traffic and contention.
std::vector<DeviceId> mixed_placement(const Graph& g, int gpus) {
  std::mt19937 rng(3);
  std::vector<DeviceId> p(g.num_operators());
  auto topo = g.topological_order();
  for (std::size_t k = 0; k < topo.size(); ++k) {
    p[topo[k]] = static_cast<DeviceId>(k * gpus / topo.size());
    if (k % 16 == 0) p[topo[k]] = static_cast<DeviceId>(rng() % gpus);
  }
  return p;
}

void run_simgrid(benchmark::State& state, const Graph& g, int gpus) {
  NvlinkServersConfig cfg;
  cfg.gpus = gpus;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("bench");
  auto p = mixed_placement(g, gpus);
  Evaluator ev(g, c);
  Schedule s = ev.schedule(p);
  double latency = 0;
  for (auto _ : state) latency = simulate(g, c, p, s.device_order).latency;
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  state.counters["child_max_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["operators"] = static_cast<double>(g.num_operators());
  state.counters["simgrid_over_evaluator"] = latency / s.latency;
}

void BM_SimgridVgg8Gpus(benchmark::State& state) {
  const std::string path = shared_graph("quickp/vgg.json");
  if (path.empty()) {
    state.SkipWithError("../shared/graphs/quickp/vgg.json is absent");
    return;
  }
  static const Graph g = load_graph(path).graph;
  run_simgrid(state, g, 8);
}
BENCHMARK(BM_SimgridVgg8Gpus)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_SimgridSynthetic100k(benchmark::State& state) {
  SyntheticGraphConfig cfg;
  cfg.layers = 4551;  // 100,116 operators
  static const Graph g = synthetic_training_graph(cfg);
  run_simgrid(state, g, 8);
}
BENCHMARK(BM_SimgridSynthetic100k)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
