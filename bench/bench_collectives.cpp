// Ring all-reduce of 1 GiB on a fat-tree (servers of 8 GPUs, 100 Gb/s NICs, ECMP), per engine:
// wall time to simulate it, message by message (building the collective's execution graph, n^2
// operators), condensed (CollectiveDetail::Condensed: a flow per ring neighbour, about 4n
// operators, what plans of hundreds of replicas compile into) or step by step
// (sim/collectives/collective_steps.h: the ring's one step, its n flows sharing the fabric, run once), and the process's peak resident memory (for scale, ASTRA-sim's analytical backend takes 4.2 s and 0.35 GiB
// at 1,024 GPUs, without contention). Arguments: GPUs, engine (0 evaluator, 1 flow, 2 SimGrid)
// and, message-level graphs, 1 for condensed.
// Counters: the simulated time, operators and transfers of the graph, peak RSS in GiB.
//
// Measured on 2 shared cores: see docs/parallelism.md ("Speed").
#include <benchmark/benchmark.h>

#include <string>

#include "bench/bench_util.h"
#include "sim/engines/engine.h"
#include "sim/collectives/collective_steps.h"
#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

using namespace placesim;

namespace {

Cluster fat_tree_of(int gpus) {
  FatTreeConfig cfg;
  cfg.gpus_per_server = 8;
  cfg.servers = gpus / 8;
  cfg.k = 4;
  while (cfg.k * cfg.k * cfg.k / 4 < cfg.servers) cfg.k += 2;
  cfg.nic_bandwidth = 12.5e9;
  return make_fat_tree(cfg);
}

CollectiveSpec ring_all_reduce_1gib(int gpus) {
  CollectiveSpec spec;
  spec.op = CollectiveOp::AllReduce;
  spec.algorithm = CollectiveAlgorithm::Ring;
  for (int d = 0; d < gpus; ++d) spec.group.push_back(d);
  spec.bytes = 1024.0 * 1024 * 1024;
  return spec;
}


void BM_RingAllReduce1GiB(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int engine = static_cast<int>(state.range(1));
  const Cluster cluster = fat_tree_of(gpus);
  CollectiveSpec spec = ring_all_reduce_1gib(gpus);
  const bool condensed = state.range(2) == 1;
  if (condensed) spec.detail = CollectiveDetail::Condensed;
  double latency = 0;
  std::size_t ops = 0, transfers = 0;
  for (auto _ : state) {
    const ExecutionGraph g = collective_graph(spec, cluster);
    ops = g.graph.num_operators();
    transfers = g.graph.num_tensors();
    const std::string_view name = engine == 0 ? kEvaluator : engine == 1 ? kFlow : kSimGrid;
    latency = *run_engines(g, cluster, EngineSet::of({name}), RunOrder::Fcfs).latency(name);
    benchmark::ClobberMemory();
  }
  state.counters["simulated_s"] = latency;
  state.counters["closed_form_s"] = collective_closed_form(spec, cluster);
  state.counters["operators"] = static_cast<double>(ops);
  state.counters["transfers"] = static_cast<double>(transfers);
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(std::string(engine == 0 ? "evaluator" : engine == 1 ? "flow" : "simgrid") + (condensed ? ", condensed" : ""));
}

void BM_RingAllReduce1GiBSteps(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  const int engine = static_cast<int>(state.range(1));
  const Cluster cluster = fat_tree_of(gpus);
  const CollectiveSpec spec = ring_all_reduce_1gib(gpus);
  double latency = 0;
  for (auto _ : state) {
    const std::string_view name = engine == 0 ? kEvaluator : engine == 1 ? kFlow : kSimGrid;
    latency = *run_collective_steps(spec, cluster, EngineSet::of({name})).latency(name);
    benchmark::ClobberMemory();
  }
  state.counters["simulated_s"] = latency;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(engine == 0 ? "evaluator" : engine == 1 ? "flow" : "simgrid");
}

// NCCL's model on the dgx-h100 preset: `algorithm: auto` of 1 GiB (the tuner's closed forms, then
// the chosen algorithm's steps on the flow engine), what `placesim collective` does per size.
// Argument: servers (of 8 GPUs). Target: under 2 s at 512 servers (4,096 GPUs).
void BM_NcclAutoAllReduce1GiB(benchmark::State& state) {
  const int servers = static_cast<int>(state.range(0));
  const Cluster cluster = cluster_from_yaml(YAML::Load(fmt::format("{{preset: dgx-h100, servers: {}}}", servers)), "bench");
  CollectiveSpec spec;
  spec.op = CollectiveOp::AllReduce;
  spec.tuned = true;
  for (int g = 0; g < cluster.num_devices(); ++g) spec.group.push_back(g);
  spec.bytes = 1 << 30;
  double latency = 0;
  for (auto _ : state) {
    latency = *run_collective_steps(spec, cluster, EngineSet::of({kFlow})).latency(kFlow);
    benchmark::ClobberMemory();
  }
  state.counters["simulated_s"] = latency;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
}

}  // namespace

BENCHMARK(BM_NcclAutoAllReduce1GiB)->Arg(16)->Arg(128)->Arg(512)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_RingAllReduce1GiBSteps)
    ->ArgsProduct({{1024, 4096}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// 16,384 GPUs (routes computed on demand), without SimGrid.
BENCHMARK(BM_RingAllReduce1GiBSteps)->ArgsProduct({{16384}, {0, 1}})->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_RingAllReduce1GiB)
    ->ArgsProduct({{64, 256}, {0, 1, 2}, {0}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_RingAllReduce1GiB)->ArgsProduct({{1024}, {0, 1}, {0}})->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_RingAllReduce1GiB)
    ->ArgsProduct({{1024, 4096}, {0, 1, 2}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
