// Fabric build cost and one simulated iteration on a 1,024-GPU fat-tree: k = 16, 256
// servers of 4 GPUs (4 of the 16 pods), every tier 100 Gb/s, ECMP (64 equal-cost paths between
// pods) or static d-mod-k routing.
//
//   BM_FatTree1024Cluster    make_fat_tree + finalize: time, and heap held by the Cluster
//                            (`cluster_MiB`, glibc mallinfo2) with its path sets and 1M-pair view
//   BM_FatTree1024Vgg/ecmp   one iteration of VGG-16 (QuickP profile, 3,704 operators) dealt
//                            round-robin over the 1,024 GPUs, in SimGrid: the forked child's
//                            platform build time (`platform_s`) and size, flows, sub-flows,
//                            wall time, and the child's peak RSS (`child_max_rss_MiB`, the
//                            largest child so far: run one benchmark per process to attribute it)
//
//   BM_FullMeshCluster/gpus  make_full_mesh (a dedicated link per ordered GPU pair): time, the
//                            process's peak RSS while building (`peak_rss_MiB`, VmHWM reset before)
//                            and its links and routes. 4,096 GPUs once took 107 s and
//                            6.9 GB in `placesim run`; full-mesh now takes at most 1,024 GPUs
//                            (kMaxFullMeshGpus) and the 4,096 case reports the refusal.
//
//   BM_BuildCluster/fabric/gpus  building a cluster of servers of 8 GPUs (0 non-blocking switch,
//                            1 fat-tree k=32 ECMP, 2 spine-leaf of 16 servers per leaf and 16 spines
//                            ECMP, 3 rail-only) with 4,096 or 16,384 GPUs: wall time (median of
//                            the repetitions), the process's peak RSS while building
//                            (`peak_rss_MiB`: VmHWM, reset before, to `rss_before_MiB`) and the
//                            heap the Cluster holds (`cluster_MiB`, glibc mallinfo2, mapped blocks
//                            included), then one transfer_time per GPU pair
//                            of a sample (`sample_s`: the first GPU to every GPU and back).
//
//   ./build/bench_topology --benchmark_filter=BM_FatTree1024Vgg/1
//   ./build/bench_topology --benchmark_filter=BM_BuildCluster
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <malloc.h>
#include <sys/resource.h>

#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "sim/engines/simgrid_engine.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

using benchutil::shared_graph;

FatTreeConfig fat_tree_1024(bool ecmp) {
  FatTreeConfig cfg;
  cfg.k = 16;
  cfg.servers = 256;
  cfg.gpus_per_server = 4;
  cfg.nic_bandwidth = 12.5e9;  // 100 Gb/s
  cfg.nic_latency = 1e-6;
  cfg.aggregation_latency = 1e-6;
  cfg.core_latency = 1e-6;
  cfg.ecmp = ecmp;
  return cfg;
}

// Heap in use: small blocks plus those glibc maps on their own (large vectors, such as per-pair tables).
double heap_mib() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks + m.hblkhd) / (1024.0 * 1024.0);
}

// Resets the process's peak RSS (VmHWM) to its current RSS, after giving freed memory back.
void reset_peak_rss() {
  malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
}

double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

void BM_FatTree1024Cluster(benchmark::State& state) {
  double mib = 0;
  for (auto _ : state) {
    const double before = heap_mib();
    Cluster c = make_fat_tree(fat_tree_1024(state.range(0) != 0));
    c.finalize("bench");
    mib = heap_mib() - before;
    benchmark::DoNotOptimize(c.bandwidth(0, 1023));
    state.counters["routes"] = c.num_routes();
    state.counters["links"] = static_cast<double>(c.links().size());
  }
  state.counters["cluster_MiB"] = mib;
}
BENCHMARK(BM_FatTree1024Cluster)->Arg(1)->Arg(0)->ArgName("ecmp")->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_FullMeshCluster(benchmark::State& state) {
  double peak = 0;
  for (auto _ : state) {
    reset_peak_rss();
    FullMeshConfig cfg;
    cfg.gpus = static_cast<int>(state.range(0));
    try {
      Cluster c = make_full_mesh(cfg);
      benchmark::DoNotOptimize(c.bandwidth(0, cfg.gpus - 1));
      state.counters["routes"] = c.num_routes();
      state.counters["links"] = static_cast<double>(c.links().size());
    } catch (const InputError& e) {
      state.SkipWithError(e.what());
      break;
    }
    peak = std::max(peak, peak_rss_mib());
  }
  state.counters["peak_rss_MiB"] = peak;
}
BENCHMARK(BM_FullMeshCluster)->ArgName("gpus")->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);

// A cluster of `gpus` GPUs in servers of 8 on the given fabric (see the header).
Cluster build_cluster(int fabric, int gpus) {
  constexpr int kGpusPerServer = 8;
  const int servers = gpus / kGpusPerServer;
  switch (fabric) {
    case 0: {
      NonBlockingConfig cfg;
      cfg.servers = servers;
      cfg.gpus_per_server = kGpusPerServer;
      return make_non_blocking(cfg);
    }
    case 1: {
      FatTreeConfig cfg;
      cfg.k = 32;
      cfg.servers = servers;
      cfg.gpus_per_server = kGpusPerServer;
      return make_fat_tree(cfg);
    }
    case 2: {
      SpineLeafConfig cfg;
      cfg.servers = servers;
      cfg.gpus_per_server = kGpusPerServer;
      cfg.servers_per_leaf = 16;
      cfg.spines = 16;
      return make_spine_leaf(cfg);
    }
    default: {
      RailOnlyConfig cfg;
      cfg.servers = servers;
      cfg.gpus_per_server = kGpusPerServer;
      return make_rail_only(cfg);
    }
  }
}

void BM_BuildCluster(benchmark::State& state) {
  const int fabric = static_cast<int>(state.range(0)), gpus = static_cast<int>(state.range(1));
  double peak = 0, held = 0, sample_s = 0, rss_before = 0;
  for (auto _ : state) {
    reset_peak_rss();
    rss_before = peak_rss_mib();
    const double before = heap_mib();
    try {
      Cluster c = build_cluster(fabric, gpus);
      held = heap_mib() - before;
      peak = peak_rss_mib();
      state.PauseTiming();
      const auto start = std::chrono::steady_clock::now();
      double sum = 0;
      for (DeviceId d = 1; d < c.num_devices(); ++d) sum += c.transfer_time(0, d, 1e6) + c.transfer_time(d, 0, 1e6);
      benchmark::DoNotOptimize(sum);
      sample_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      state.counters["links"] = static_cast<double>(c.links().size());
      state.ResumeTiming();
    } catch (const InputError& e) {
      state.SkipWithError(e.what());
      break;
    }
  }
  state.counters["peak_rss_MiB"] = peak;
  state.counters["rss_before_MiB"] = rss_before;
  state.counters["cluster_MiB"] = held;
  state.counters["sample_s"] = sample_s;
}
BENCHMARK(BM_BuildCluster)
    ->ArgNames({"fabric", "gpus"})
    ->ArgsProduct({{0, 1, 2, 3}, {4096, 16384}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5);

// Operators dealt out to the GPUs in turn, in topological order, colocation classes kept together
// (what the round-robin strategy does): nearly every tensor crosses GPUs, most cross servers.
std::vector<DeviceId> round_robin(const Graph& g, int gpus) {
  std::vector<DeviceId> p(g.num_operators());
  std::vector<DeviceId> class_gpu(g.num_colocation_classes(), -1);
  DeviceId next = 0;
  for (OpId op : g.topological_order()) {
    const int cls = g.op(op).colocation_class;
    DeviceId d = cls >= 0 && class_gpu[cls] >= 0 ? class_gpu[cls] : next;
    if (d == next) next = (next + 1) % gpus;
    if (cls >= 0) class_gpu[cls] = d;
    p[op] = d;
  }
  return p;
}

void BM_FatTree1024Vgg(benchmark::State& state) {
  const std::string path = shared_graph("quickp/vgg.json");
  if (path.empty()) {
    state.SkipWithError("../shared/graphs/quickp/vgg.json is absent");
    return;
  }
  static const Graph g = load_graph(path).graph;
  Cluster c = make_fat_tree(fat_tree_1024(state.range(0) != 0));
  c.finalize("bench");
  const auto p = round_robin(g, c.num_devices());
  Evaluator ev(g, c);
  Schedule s = ev.schedule(p);
  SimulationResult r;
  for (auto _ : state) r = simulate(g, c, p, s.device_order);
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  state.counters["child_max_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
  state.counters["platform_s"] = r.platform_seconds;
  state.counters["platform_hosts"] = static_cast<double>(r.platform_hosts);
  state.counters["platform_links"] = static_cast<double>(r.platform_links);
  state.counters["flows"] = static_cast<double>(r.flows.size());
  state.counters["subflows"] = static_cast<double>(r.subflows.size());
  state.counters["simgrid_ms"] = r.latency * 1e3;
  state.counters["evaluator_ms"] = s.latency * 1e3;
}
BENCHMARK(BM_FatTree1024Vgg)->Arg(1)->Arg(0)->ArgName("ecmp")->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
