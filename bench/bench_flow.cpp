// The flow engine (sim/engines/flow_engine.h) against the SimGrid engine, wall time for one training
// iteration in the same per-GPU order (the evaluator's, `simulation.order: scheduler`), side by
// side in one run (target: the flow engine at least 20x faster):
//   - VGG-16 (../shared/graphs/quickp/vgg.json, else the model zoo's vgg16) on 8 GPUs of a k=4
//     fat-tree (servers of 2 GPUs, 100 Gb/s NICs, ECMP);
//   - BERT-base (model zoo) on 16 GPUs of a 4:1 spine-leaf (servers of 4 GPUs, 100 Gb/s NICs).
// Each benchmark reports the other engine's latency beside its own (`flow_over_simgrid` must be 1
// to 1e-6). The SimGrid engine forks a child per run, as the CLI does; the flow engine runs in
// process with warm buffers, as a search calls it.
//
// Medians measured on 2 shared cores (2026-11-24): VGG-16 1.84 ms (flow) vs 306 ms (SimGrid),
// 166x; BERT-base 7.86 ms vs 1,508 ms, 192x.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <random>
#include <yaml-cpp/yaml.h>

#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/models/zoo.h"
#include "sim/engines/simgrid_engine.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

struct Case {
  Graph graph;
  Cluster cluster;
  std::vector<DeviceId> placement;
  std::vector<std::vector<OpId>> order;
};

// Contiguous blocks of the topological order (a pipeline split), every 16th operator moved to a
// random GPU: pipeline traffic and contention, as bench_simgrid.cpp places its graphs.
std::vector<DeviceId> mixed_placement(const Graph& g, int gpus) {
  std::mt19937 rng(3);
  std::vector<DeviceId> p(g.num_operators());
  std::vector<DeviceId> class_gpu(g.num_colocation_classes(), -1);
  auto topo = g.topological_order();
  for (std::size_t k = 0; k < topo.size(); ++k) {
    DeviceId d = static_cast<DeviceId>(k * gpus / topo.size());
    if (k % 16 == 0) d = static_cast<DeviceId>(rng() % gpus);
    const Operator& op = g.op(topo[k]);
    if (op.colocation_class >= 0) {
      if (class_gpu[op.colocation_class] < 0) class_gpu[op.colocation_class] = d;
      d = class_gpu[op.colocation_class];
    }
    p[topo[k]] = d;
  }
  return p;
}

Case make_case(Graph g, const char* cluster_yaml) {
  Case c{std::move(g), cluster_from_yaml(YAML::Load(cluster_yaml), "bench"), {}, {}};
  c.placement = mixed_placement(c.graph, c.cluster.num_devices());
  Evaluator ev(c.graph, c.cluster);
  c.order = ev.schedule(c.placement).device_order;
  return c;
}

models::ModelConfig zoo(const char* model) {
  models::ModelConfig m;
  m.model = model;
  return models::resolve_model_config(m);
}

const Case& vgg_case() {
  static const Case c = [] {
    const std::string path = benchutil::shared_graph("quickp/vgg.json");
    Graph g = path.empty() ? models::zoo_graph(zoo("vgg16")) : load_graph(path).graph;
    return make_case(std::move(g), "{type: fat-tree, k: 4, servers: 4, gpus_per_server: 2, nic_bandwidth: 100Gbps, "
                                   "gpu_memory: 100TB}");
  }();
  return c;
}

const Case& bert_case() {
  static const Case c = make_case(models::zoo_graph(zoo("bert-base")),
                                  "{type: spine-leaf, leaves: 2, servers_per_leaf: 2, spines: 2, gpus_per_server: 4, "
                                  "nic_bandwidth: 100Gbps, oversubscription: 4, gpu_memory: 100TB}");
  return c;
}

void run_flow(benchmark::State& state, const Case& c) {
  FlowEngine flow(c.graph, c.cluster);
  double latency = flow.replay_latency(c.placement, c.order);  // warm-up: buffers and routes
  for (auto _ : state) {
    latency = flow.replay_latency(c.placement, c.order);
    benchmark::DoNotOptimize(latency);
  }
  state.counters["operators"] = static_cast<double>(c.graph.num_operators());
  state.counters["latency_ms"] = latency * 1e3;
  state.counters["solves"] = static_cast<double>(flow.solves());
  state.counters["paths_per_solve"] =
      flow.solves() ? static_cast<double>(flow.solved_classes()) / static_cast<double>(flow.solves()) : 0.0;
}

void run_simgrid(benchmark::State& state, const Case& c) {
  double latency = 0;
  for (auto _ : state) latency = simulate(c.graph, c.cluster, c.placement, c.order).latency;
  FlowEngine flow(c.graph, c.cluster);
  state.counters["operators"] = static_cast<double>(c.graph.num_operators());
  state.counters["latency_ms"] = latency * 1e3;
  state.counters["flow_over_simgrid"] = flow.replay_latency(c.placement, c.order) / latency;
}

void BM_FlowVgg16FatTree8Gpus(benchmark::State& s) { run_flow(s, vgg_case()); }
void BM_SimgridVgg16FatTree8Gpus(benchmark::State& s) { run_simgrid(s, vgg_case()); }
void BM_FlowBertBaseSpineLeaf16Gpus(benchmark::State& s) { run_flow(s, bert_case()); }
void BM_SimgridBertBaseSpineLeaf16Gpus(benchmark::State& s) { run_simgrid(s, bert_case()); }

// Repetitions give medians (--benchmark_report_aggregates_only=true prints only the aggregates).
BENCHMARK(BM_FlowVgg16FatTree8Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_SimgridVgg16FatTree8Gpus)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5);
BENCHMARK(BM_FlowBertBaseSpineLeaf16Gpus)->Unit(benchmark::kMillisecond)->Repetitions(5);
BENCHMARK(BM_SimgridBertBaseSpineLeaf16Gpus)->Unit(benchmark::kMillisecond)->Iterations(3)->Repetitions(5);

}  // namespace
