#pragma once
// One plan simulated as `placesim plan`, a scenario's plan point and Python's placesim.plan run
// it: the graph folded where it can be (sim/plans/plan_folding.h), its collectives and engines
// chosen by its size when not asked for, and a graph that would not fit in this machine's memory
// refused before it is built.
#include <optional>
#include <stdexcept>
#include <string>

#include "sim/engines/engine.h"
#include "sim/engines/variability.h"
#include "sim/plans/plan_breakdown.h"
#include "sim/plans/plan_folding.h"

namespace placesim {

// Above this many operators (and, folded, transfers of every copy, which SimGrid sends each),
// `auto` engines leave SimGrid out (it runs some 200,000 operators a second where the flow engine
// runs millions: bench/bench_plans.cpp); above the second, `auto` collectives condense the ring
// phases (message by message, a ring of n ranks is n^2 operators).
inline constexpr double kSimGridAutoMaxOperators = 2e6;
inline constexpr double kMessagesAutoMaxOperators = 5e6;

struct PlanRunOptions {
  std::optional<CollectiveDetail> detail;  // unset: auto (messages, condensed above kMessagesAutoMaxOperators)
  FoldMode fold = FoldMode::Auto;
  std::optional<EngineSet> engines;  // unset: auto (evaluator, flow, and simgrid up to kSimGridAutoMaxOperators)
  RunOrder order = RunOrder::Fcfs;
  double available_bytes = 0;  // the memory the graph may take; 0: what this machine has available
  // Seeded per-GPU speed and per-kernel jitter (sim/engines/variability.h), run for `seeds` seeds
  // from variability.seed: every replica is built (GPUs no longer run alike, so nothing folds).
  Variability variability;
  int seeds = 1;
};

struct PlanRun {
  FoldChoice fold;
  CollectiveDetail detail = CollectiveDetail::Messages;
  EngineSet engines;
  // Why a default was what it was, one line each: "collectives condensed: ...", "simgrid left out: ...".
  std::vector<std::string> notes;
  CompiledPlan compiled;
  double compile_s = 0;
  EngineRuns runs;
  // Where each engine's iteration went (sim/plans/plan_breakdown.h), for the engines that
  // scheduled operators (the estimate prices the plan without a schedule).
  std::vector<std::pair<std::string, TimeBreakdown>> breakdown;
  // With variability: per engine, the iteration time of each seed (runs and breakdown are the
  // first seed's).
  std::vector<std::pair<std::string, std::vector<double>>> seed_latencies;
};

// The graph would not fit in memory: what() is the one line that says so (its estimated
// operators, tensors and bytes, and what the machine has).
class GraphTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The plan (checked: plan_problem is "") compiled and run. Throws GraphTooLarge before building a
// graph that would not fit.
PlanRun simulate_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                      const PlanRunOptions& options);

// The bytes this machine has available now (/proc/meminfo's MemAvailable; 0 when unknown).
double available_memory_bytes();

}  // namespace placesim
