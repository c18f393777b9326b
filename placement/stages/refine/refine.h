#pragma once
// `refine:`, a local search any strategy's placement can go through, as `coarsen:` is
// a step in front of any strategy. It is a stage, not a registered strategy: the runner
// (scenarios/runner/runner.cpp) calls it on what the strategy returned.
//
// It moves placement units (placement/framework/placement_units.h: a colocation class as a whole, or a lone
// operator; units that cannot change the latency are left alone) to lower the cost model's latency
// (sim/engines/cost_model.h: `cost_model`, else the strategy's own, which is list for strategies that do
// not search). Each round:
//  1. draws `batch` candidates, serially, from one RNG seeded by `seed`: with probability
//     `swap_fraction` a swap of two units on different GPUs, else a move of one unit to another GPU
//     (half the time the GPU of one of its graph neighbours, else a uniform one). A unit that
//     computes is drawn ten times as often as one that only passes tensors on (MCMC's
//     zero_compute_weight, placement/strategies/mcmc/mcmc.h: profiled graphs are mostly bookkeeping);
//  2. drops the candidates that would make some GPU's memory overflow grow (see below);
//  3. evaluates the rest in parallel (oneTBB, at most `threads` threads), each on its own copy of
//     the placement with the change applied, with latency_with_cutoff(copy, current latency):
//     only an improvement matters, and a worse candidate is settled early;
//  4. applies the candidate of lowest latency if it is strictly lower than the current one (ties:
//     the first drawn).
// Candidates and the choice depend only on the seed and the latencies, so the result is the same
// for any number of threads (unless `time_limit` ends the search, which depends on the machine).
//
// It stops when `steps` candidates were evaluated, when `time_limit` has passed (wall; checked
// before each candidate: the rest of a round is skipped once it has passed), or after `patience`
// rounds in a row without an improvement ("converged"; also when nothing can move: one GPU, or no
// unit that matters). Only strictly better placements
// are taken, so the result is never worse than the start under the chosen cost model.
//
// Memory: a candidate is dropped when a GPU it adds bytes to would end over its capacity. So a
// placement that fits keeps fitting, and in one that does not, no GPU's overflow ever grows (a GPU
// over capacity only takes a unit in a swap that gives away at least as many bytes). Compared in
// bytes as placed (device_memory), recomputed after each applied change.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "placement/framework/strategy.h"
#include "sim/core/cluster.h"
#include "sim/engines/cost_model.h"
#include "sim/core/graph.h"
#include "sim/config/options.h"

namespace placesim {

struct RefineConfig {
  long steps = 2000;          // candidate evaluations at most
  double time_limit_s = 10;   // wall time of the stage; +infinity: unbounded
  std::optional<CostModelKind> cost_model;  // unset: the strategy's own
  int batch = 16;             // candidates drawn and evaluated per round
  int threads = 0;            // evaluating threads; 0 (or more than the machine has): all hardware threads
  double swap_fraction = 0.3; // share of candidates that swap two units (the rest move one)
  int patience = 20;          // rounds in a row without an improvement before it stops
  std::uint64_t seed = 1;
  bool operator==(const RefineConfig&) const = default;
};

// The `refine:` mapping of a scenario's strategy entry (scenarios/README.md).
OptionSchema<RefineConfig> refine_schema();

enum class RefineStop { Steps, TimeLimit, Converged };
inline constexpr EnumName<RefineStop> kRefineStopNames[] = {
    {RefineStop::Steps, "steps"},
    {RefineStop::TimeLimit, "time_limit"},
    {RefineStop::Converged, "converged"},
};

struct RefineResult {
  std::vector<DeviceId> placement;
  double start_latency = 0;  // of the start, under `cost_model`
  double latency = 0;        // of `placement`, under `cost_model`; <= start_latency
  long evaluations = 0;      // candidates evaluated (dropped ones are not)
  long rounds = 0;
  long improvements = 0;     // candidates applied
  RefineStop stopped_by = RefineStop::Converged;
  double seconds = 0;        // wall time of the call
  int threads = 0;           // the evaluating threads it was allowed (at most the machine's)
  CostModelKind cost_model = CostModelKind::List;
};

// Refines `start` (a valid placement of `graph` on `cluster`); `inherited` is the cost model used
// when config.cost_model is unset. Throws std::invalid_argument if `start` has the wrong size.
RefineResult refine_placement(const Graph& graph, const Cluster& cluster, std::vector<DeviceId> start,
                              const RefineConfig& config, CostModelKind inherited);

// The polish a search strategy ends with (QuickP's and MCMC's `polish`): refine_placement from
// answer.placement under `cost_model`, until 20 rounds in a row find nothing better, `deadline`
// is near (a hair is kept for the caller's report) or `max_evaluations` candidates were
// evaluated. Records answer.details["polish"] (refine_report, or "no time left") and keeps the
// polished placement when it is better.
void polish_answer(const Graph& graph, const Cluster& cluster, const Deadline& deadline, CostModelKind cost_model,
                   PlacementResult& answer, long max_evaluations = std::numeric_limits<long>::max());

// The result as the runner reports it under strategy_report.refine.
nlohmann::json refine_report(const RefineResult& result);

}  // namespace placesim
