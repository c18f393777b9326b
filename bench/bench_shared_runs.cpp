// Several jobs on one fabric (sim/engines/shared_runs.h): the wall time of run_jobs_together on the
// flow engine, for k jobs of 64 GPUs (8 DGX H100 servers each, on a 1,024-GPU SuperPOD with 4:1
// leaf uplinks), each a 256 MiB all-to-all (direct: every rank to every other at once, as an
// expert layer's) over servers two per unit, so its flows cross the spines and the jobs meet there. A shared run is each job alone, then all together: its cost should grow
// with the jobs (about 2k single runs), not faster. Counters: operators of the shared graph and the
// first job's slowdown.
//
// Medians of 3, measured on 2 shared cores (2026-12-03), side by side in one run: 2 jobs 20.6 ms,
// 4 jobs 54.0 ms, 8 jobs 104 ms (2.6x, then 1.9x per doubling). The uplinks hold 2 and 4 jobs'
// all-to-alls (slowdown 1); 8 jobs' fill them and the first slows 1.71x.
#include <benchmark/benchmark.h>

#include <yaml-cpp/yaml.h>

#include "sim/collectives/collectives.h"
#include "sim/engines/shared_runs.h"
#include "topologies/registry.h"

using namespace placesim;

namespace {

void BM_SharedRun(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  const Cluster cluster = cluster_from_yaml(YAML::Load("{preset: dgx-h100, servers: 128, oversubscription: 4}"), "bench", "cluster");
  // Job j: servers j, j + 16, j + 32, ... (8 servers, two per unit), all their GPUs.
  std::vector<ExecutionGraph> graphs;
  for (int j = 0; j < jobs; ++j) {
    CollectiveSpec spec;
    spec.op = CollectiveOp::AllToAll;
    spec.algorithm = CollectiveAlgorithm::Direct;
    spec.bytes = 256.0 * 1024 * 1024;
    for (int s = 0; s < 8; ++s)
      for (int g = 0; g < 8; ++g) spec.group.push_back((j + s * 16) * 8 + g);
    graphs.push_back(collective_graph(spec, cluster));
  }
  std::vector<JobGraph> list;
  for (int j = 0; j < jobs; ++j) list.push_back({"job" + std::to_string(j), &graphs[j].graph, graphs[j].placement});
  double operators = 0, slowdown = 0;
  for (auto _ : state) {
    const SharedRun run = run_jobs_together(list, cluster, EngineSet::of({kFlow}), RunOrder::Scheduler);
    operators = static_cast<double>(run.graph.num_operators());
    slowdown = run.jobs.front().find(kFlow)->slowdown();
    benchmark::DoNotOptimize(run.window);
  }
  state.counters["operators"] = operators;
  state.counters["slowdown"] = slowdown;
}
BENCHMARK(BM_SharedRun)->Arg(2)->Arg(4)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
