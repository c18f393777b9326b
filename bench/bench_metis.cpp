// METIS placement time: the whole place() call (graph conversion, partitioning, part-to-GPU
// mapping) on VGG-16 (3,704 operators) on 4 GPUs in 2 NVLink servers.
// Target: under 50 ms (Placeto's paper reports 0.6 s for its graph-partitioning baseline).
// Run: ./bench_metis --benchmark_repetitions=5 and read the median.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <filesystem>
#include <map>
#include <numeric>

#include "placement/strategies/metis/metis_strategy.h"
#include "sim/io/graph_io.h"
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

// ----- Parts to GPUs at scale -----------------------------------------------------------------
// The mapping of parts to GPUs on fat-trees (k = 16, servers of 4 GPUs, static routing, 1 us per
// hop, so server / edge / pod / core pairs form four levels) of 256, 1,024 and 4,096 GPUs:
//   BM_MetisDiamondFatTree/gpus   the whole place() call for a 4-operator diamond (one vertex per
//                                 part, so this is the mapping plus the graph conversion)
//   BM_MetisMappingFatTree/gpus   map_parts_to_devices on traffic where every part sends 1 MB to
//                                 the next and 0.5 MB to the part 17 ahead (ring plus chords)
// Target: well under a second at 1,024 and 4,096 GPUs (before: 1.25 s at 256, over 100 s at 1,024).
// Run: ./build/bench_metis --benchmark_filter=FatTree --benchmark_repetitions=5 and read the medians.
namespace {

const Cluster& fat_tree_of(int gpus) {
  static std::map<int, Cluster> built;
  auto it = built.find(gpus);
  if (it == built.end()) {
    FatTreeConfig cfg;
    cfg.k = 16;
    cfg.gpus_per_server = 4;
    cfg.servers = gpus / 4;
    cfg.nic_latency = cfg.aggregation_latency = cfg.core_latency = 1e-6;
    cfg.ecmp = false;
    it = built.emplace(gpus, make_fat_tree(cfg)).first;
  }
  return it->second;
}

void BM_MetisDiamondFatTree(benchmark::State& state) {
  const Cluster& c = fat_tree_of(static_cast<int>(state.range(0)));
  Graph g;
  for (const char* name : {"a", "b", "c", "d"}) g.add_operator({name, "op", 1e-3, 0});
  g.add_tensor(0, 1, 1e9);
  g.add_tensor(0, 2, 1e9);
  g.add_tensor(1, 3, 1e9);
  g.add_tensor(2, 3, 1e9);
  g.finalize("diamond");
  MetisStrategy strategy;
  for (auto _ : state) {
    PlacementResult r = strategy.place(g, c);
    benchmark::DoNotOptimize(r.placement.data());
  }
}
BENCHMARK(BM_MetisDiamondFatTree)->ArgName("gpus")->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

void BM_MetisMappingFatTree(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  const Cluster& c = fat_tree_of(k);
  PartTraffic t;
  t.parts = k;
  for (int p = 0; p < k; ++p) {
    t.add(p, (p + 1) % k, 1e6);
    t.add(p, (p + 17) % k, 5e5);
  }
  double cost = 0;
  for (auto _ : state) {
    const std::vector<DeviceId> m = map_parts_to_devices(t, c);
    benchmark::DoNotOptimize(m.data());
    cost = mapping_cost(t, m, c);
  }
  std::vector<DeviceId> identity(k);
  std::iota(identity.begin(), identity.end(), 0);
  state.counters["cost_s"] = cost;
  state.counters["identity_cost_s"] = mapping_cost(t, identity, c);
}
BENCHMARK(BM_MetisMappingFatTree)->ArgName("gpus")->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
