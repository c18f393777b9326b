#include "sim/plans/plan_run.h"

#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/core/units.h"

namespace placesim {

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

PlanRun simulate_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                      const PlanRunOptions& options) {
  PlanRun run;
  run.detail = options.detail.value_or(CollectiveDetail::Messages);
  if (options.seeds < 1 || (options.seeds > 1 && !options.variability.random()))
    throw std::invalid_argument("more than one seed needs variability (a per-GPU speed or per-kernel jitter cv above 0)");
  const FoldMode fold_mode = options.variability.any() ? FoldMode::Full : options.fold;
  // With variability no two GPUs run alike: no replica stands for another.
  const auto say_why_full = [&] {
    if (options.variability.any() && options.fold != FoldMode::Full)
      run.fold.reason = "the full graph: with variability (--gpu-speed-cv, --kernel-jitter-cv, --slow-gpu) GPUs no longer run alike";
  };
  run.fold = choose_fold(workload, plan, cluster, run.detail, fold_mode);
  say_why_full();
  if (!options.detail && run.fold.chosen.operators > kMessagesAutoMaxOperators) {
    run.notes.push_back(fmt::format("collectives condensed: message by message the graph would hold about {:.3g} million "
                                    "operators (above {:.0f} million; --collectives messages to keep them)",
                                    run.fold.chosen.operators / 1e6, kMessagesAutoMaxOperators / 1e6));
    run.detail = CollectiveDetail::Condensed;
    run.fold = choose_fold(workload, plan, cluster, run.detail, fold_mode);
    say_why_full();
  }
  const double available = options.available_bytes > 0 ? options.available_bytes : available_memory_bytes();
  if (available > 0 && run.fold.chosen.bytes > 0.8 * available)
    throw GraphTooLarge(fmt::format(
        "the {} would hold about {:.3g} million operators and {:.3g} million tensors, about {} in memory, and this machine has "
        "{} available{}",
        run.fold.replicas == plan.dp ? "full graph" : "folded graph", run.fold.chosen.operators / 1e6,
        run.fold.chosen.tensors / 1e6, format_bytes(run.fold.chosen.bytes), format_bytes(available),
        run.fold.replicas == plan.dp && options.fold == FoldMode::Full ? ": leave out --full-graph to fold its replicas"
        : run.detail == CollectiveDetail::Messages                      ? ": --collectives condensed makes it smaller"
                                                                        : ""));
  if (options.engines) {
    run.engines = *options.engines;
  } else {
    run.engines = EngineSet::of({kEvaluator, kFlow, kSimGrid});
    // SimGrid sends each transfer of a folded graph once per copy.
    const double work = run.fold.chosen.operators + run.fold.chosen.tensors * (run.fold.copies - 1);
    if (work > kSimGridAutoMaxOperators) {
      run.engines = EngineSet::of({kEvaluator, kFlow});
      run.notes.push_back(fmt::format("simgrid left out: about {:.3g} million operators and transfers (every copy's), above the "
                                      "{:.0f} million it runs by default (--engine simgrid or all to run it)",
                                      work / 1e6, kSimGridAutoMaxOperators / 1e6));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  run.compiled = compile_plan(workload, plan, cluster, run.detail, run.fold.replicas);
  run.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!options.variability.any()) {
    run.runs = run_engines(run.compiled.graph, cluster, run.engines, options.order);
  } else {
    // Each seed's draws on a copy of the graph and the cluster; the first seed's run is kept.
    const ExecutionGraph& g = run.compiled.graph;
    for (int s = 0; s < options.seeds; ++s) {
      Variability v = options.variability;
      v.seed += static_cast<std::uint64_t>(s);
      const VariabilityDraw draw = draw_variability(v, cluster.num_devices(), g.graph);
      const Cluster slowed = perturbed_cluster(cluster, draw);
      const Graph jittered = perturbed_graph(g.graph, draw);
      PlacedGraph placed(jittered, g.placement);
      placed.plan = g.plan.get();
      EngineRuns ran = run_engines(placed, slowed, run.engines, options.order);
      // Every seed runs the same engines, in registry order.
      if (s == 0)
        for (const EngineRun& r : ran.runs) run.seed_latencies.push_back({r.engine, {}});
      for (std::size_t k = 0; k < ran.runs.size(); ++k) run.seed_latencies[k].second.push_back(ran.runs[k].latency);
      if (s == 0) run.runs = std::move(ran);
    }
  }
  for (const EngineRun& r : run.runs.runs)
    if (r.schedule) run.breakdown.emplace_back(r.engine, time_breakdown(run.compiled.graph.graph, run.compiled.graph.placement, *r.schedule, r.latency));
  return run;
}

}  // namespace placesim
