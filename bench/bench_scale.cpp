// Large graphs end to end. Target: a 1M-operator graph loads, is placed
// round-robin, is evaluated and has its results written in under 10 s and 2 GB.
//
//   BM_ScalePipeline/ops/shape   one pass of what `placesim run` does with such a graph and the
//                                evaluator engine, phase by phase (each a counter, in seconds):
//                                  load_s      load_graph of the placesim JSON file (written once
//                                              per process into a temporary folder, untimed)
//                                  place_s     the round-robin strategy (with its validation)
//                                  evaluate_s  measure_placement, evaluator engine
//                                  write_s     the placement file, the record's results.jsonl line,
//                                              results.json and results.csv
//                                peak_rss_MiB: the process's peak RSS during the pass (VmHWM, reset
//                                through /proc/self/clear_refs before it; the graph is not
//                                resident before the load starts).
//   BM_ScaleEvaluate/ops/gpus    the evaluator alone on the chain dealt round-robin over `gpus` GPUs
//                                (nvlink-servers, 8 per server): every instant wakes one GPU.
//   BM_ScaleGraphInfo/ops/shape  `placesim graph info`: load_graph then compute_stats, with its
//                                peak RSS.
//
// Shapes: 0 a chain (op i feeds op i+1), 1 a layered random DAG (layers of 1,000 operators, each
// fed by 2 random operators of the previous layer: 2M tensors for 1M operators).
//
//   ./build/bench_scale --benchmark_filter='BM_ScalePipeline/1000000'
#include <benchmark/benchmark.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <malloc.h>
#include <map>
#include <random>
#include <string>
#include <unistd.h>

#include "placement/framework/strategy.h"
#include "scenarios/runner/record.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/runner.h"
#include "sim/io/graph_io.h"
#include "sim/engines/evaluator.h"
#include "sim/core/graph_stats.h"
#include "sim/io/placement_io.h"
#include "topologies/fabrics.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

Graph generate(long ops, int shape) {
  Graph g;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> compute(5e-6, 2e-5);
  for (long i = 0; i < ops; ++i)
    g.add_operator({"op" + std::to_string(i), "MatMul", compute(rng), 1024.0 * static_cast<double>(1 + i % 7)});
  if (shape == 0) {
    for (long i = 1; i < ops; ++i) g.add_tensor(static_cast<OpId>(i - 1), static_cast<OpId>(i), 4096);
  } else {
    constexpr long kWidth = 1000;
    for (long i = kWidth; i < ops; ++i) {
      const long layer_start = (i / kWidth - 1) * kWidth;
      for (int k = 0; k < 2; ++k)
        g.add_tensor(static_cast<OpId>(layer_start + static_cast<long>(rng() % kWidth)), static_cast<OpId>(i), 4096);
    }
  }
  g.finalize("generated");
  return g;
}

fs::path scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("placesim-bench-scale-" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] { std::error_code ec; fs::remove_all(fs::temp_directory_path() / ("placesim-bench-scale-" + std::to_string(::getpid())), ec); });
    return d;
  }();
  return dir;
}

// The graph's JSON file, written once per process; the generated graph is freed before returning.
std::string graph_file(long ops, int shape) {
  static std::map<std::pair<long, int>, std::string> files;
  auto [it, fresh] = files.try_emplace({ops, shape});
  if (fresh) {
    it->second = (scratch_dir() / ("graph-" + std::to_string(ops) + "-" + std::to_string(shape) + ".json")).string();
    save_placesim_json(generate(ops, shape), it->second);
    malloc_trim(0);
  }
  return it->second;
}

// Peak resident set since the last reset_peak_rss(), in MiB (Linux: VmHWM of /proc/self/status).
void reset_peak_rss() {
  malloc_trim(0);
  std::ofstream("/proc/self/clear_refs") << "5";
}
double peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Cluster eight_gpus() {
  NvlinkServersConfig cfg;
  cfg.gpus = 8;
  cfg.gpus_per_server = 4;
  return make_nvlink_servers(cfg);
}

void BM_ScalePipeline(benchmark::State& state) {
  const std::string path = graph_file(state.range(0), static_cast<int>(state.range(1)));
  const Cluster cluster = eight_gpus();
  const fs::path out = scratch_dir() / "results";
  fs::create_directories(out);
  double load = 0, place = 0, evaluate = 0, write = 0, peak = 0;
  for (auto _ : state) {
    fs::remove(out / "results.jsonl");
    reset_peak_rss();
    auto t0 = std::chrono::steady_clock::now();
    LoadResult loaded = load_graph(path);
    load += seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    auto strategy = make_strategy("round-robin", YAML::Node(), "bench", "strategies[0]");
    PlacementResult placed = strategy->place(loaded.graph, cluster);
    place += seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    Measurement m = measure_placement(loaded.graph, cluster, placed.placement, EngineSet::of({kEvaluator}));
    evaluate += seconds_since(t0);

    t0 = std::chrono::steady_clock::now();
    save_placement(loaded.graph, placed.placement, (out / "placement-round-robin.json").string());
    PointRecord r;
    r.key = "strategy=round-robin rep=0";
    r.scenario = "bench";
    r.graph = fs::path(path).stem().string();
    r.gpus = cluster.num_devices();
    r.cluster = cluster.description;
    r.label = r.strategy = "round-robin";
    r.engines = EngineSet::of({kEvaluator});
    r.graph_size = PointRecord::GraphSize{loaded.graph.num_operators(), loaded.graph.num_tensors(), loaded.warnings};
    PointMeasurement pm;
    pm.search_time = placed.search_seconds;
    pm.set_latency(kEvaluator, *m.latency(kEvaluator));
    pm.bounds = m.bounds;
    pm.memory_per_gpu = m.memory;
    pm.peak_memory = m.peak_memory;
    pm.busy_per_gpu = m.evaluator_schedule()->busy;
    pm.placement_file = "placement-round-robin.json";
    r.measurement = pm;
    append_record((out / "results.jsonl").string(), r);
    write_aggregates(out.string(), {r});
    write += seconds_since(t0);
    peak = std::max(peak, peak_rss_mib());
    benchmark::DoNotOptimize(m.latency(kEvaluator));
  }
  const auto avg = benchmark::Counter::kAvgIterations;
  state.counters["load_s"] = benchmark::Counter(load, avg);
  state.counters["place_s"] = benchmark::Counter(place, avg);
  state.counters["evaluate_s"] = benchmark::Counter(evaluate, avg);
  state.counters["write_s"] = benchmark::Counter(write, avg);
  state.counters["peak_rss_MiB"] = peak;
}

void BM_ScaleEvaluate(benchmark::State& state) {
  static const LoadResult loaded = load_graph(graph_file(state.range(0), 0));
  NvlinkServersConfig cfg;
  cfg.gpus = static_cast<int>(state.range(1));
  cfg.gpus_per_server = 8;
  const Cluster cluster = make_nvlink_servers(cfg);
  auto strategy = make_strategy("round-robin", YAML::Node(), "bench", "strategies[0]");
  const PlacementResult placed = strategy->place(loaded.graph, cluster);
  Evaluator evaluator(loaded.graph, cluster);
  for (auto _ : state) benchmark::DoNotOptimize(evaluator.latency(placed.placement));
}

void BM_ScaleGraphInfo(benchmark::State& state) {
  const std::string path = graph_file(state.range(0), static_cast<int>(state.range(1)));
  double peak = 0;
  for (auto _ : state) {
    reset_peak_rss();
    LoadResult loaded = load_graph(path);
    GraphStats s = compute_stats(loaded.graph);
    benchmark::DoNotOptimize(s.max_parallelism);
    peak = std::max(peak, peak_rss_mib());
  }
  state.counters["peak_rss_MiB"] = peak;
}

void scale_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ops", "shape"});
  for (long ops : {100000L, 1000000L})
    for (int shape : {0, 1}) b->Args({ops, shape});
  b->Unit(benchmark::kSecond)->UseRealTime()->Iterations(1)->Repetitions(3);
}

}  // namespace

BENCHMARK(BM_ScalePipeline)->Apply(scale_args);
BENCHMARK(BM_ScaleGraphInfo)->Apply(scale_args);
BENCHMARK(BM_ScaleEvaluate)
    ->ArgNames({"ops", "gpus"})
    ->Args({1000000, 8})
    ->Args({1000000, 4096})
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1)
    ->Repetitions(3);
