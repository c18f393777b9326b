#pragma once
// The warm-start portfolio: the fast strategies (m-TOPO, single-device, HEFT, m-ETF, METIS),
// and HEFT and METIS again on the GPUs of one server (the fastest) when there are several, run through the registry with what is left of the caller's time and measured by the caller's
// cost model, so that a search strategy can start from, or fall back to, the best cheap answer
// and never return worse. QuickP keeps the best of them beside its own; MCMC starts its chain
// from it (`init: portfolio`); Strategy::place falls back to it when a search ends out of memory.
#include <nlohmann/json.hpp>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "placement/framework/strategy.h"
#include "sim/engines/cost_model.h"

namespace placesim {

struct PortfolioCandidate {
  std::string name;
  std::vector<DeviceId> placement;
  double latency = std::numeric_limits<double>::infinity();  // the cost model's
  bool fits = false;                                         // in every GPU's memory
};

// Runs each portfolio strategy; `report` gets its latency, "out of memory", "failed: ..." or
// "skipped: out of time" under its name. `caller` names the strategy in error messages. The
// first (m-TOPO's memory fill, linear time) runs even out of time when `first_even_out_of_time`.
std::vector<PortfolioCandidate> run_portfolio(const Graph& graph, const Cluster& cluster, const Deadline& deadline,
                                              CostModel& cost, const std::string& caller, nlohmann::json& report,
                                              bool first_even_out_of_time = false);

// The fastest candidate that fits, or nullptr.
const PortfolioCandidate* best_fitting(std::span<const PortfolioCandidate> candidates);

// The strategy itself, the warm-start portfolio around it taken off (for reading its config).
const Strategy& own_strategy(const Strategy& s);

bool fits_memory(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement);

// A strategy with the warm-start portfolio around it, made by the registry (with_warm_start):
//  - compare (PortfolioUse::AfterIt with `portfolio: true`): the better, by the strategy's cost
//    model, of its answer (when it fits) and the portfolio's best that fits; SearchFacts names the
//    winner, and the candidates' latencies are in the details under `portfolio`;
//  - memory fallback (search strategies): an answer over some GPU's memory is replaced by the
//    portfolio's best that fits (m-TOPO's fill first: one exists whenever a simple fill does), said
//    in SearchFacts::memory_fallback and under `memory_fallback` in the details.
// A replaced answer's details move under `own_answer`. The portfolio runs at most once per call.
class WarmStartPortfolio final : public Strategy {
 public:
  WarmStartPortfolio(std::unique_ptr<Strategy> inner, bool compare, bool memory_fallback);
  const Strategy& inner() const { return *inner_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  std::unique_ptr<Strategy> inner_;
  bool compare_, memory_fallback_;
};

}  // namespace placesim
