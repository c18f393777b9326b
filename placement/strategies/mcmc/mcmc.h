#pragma once
#include <cstdint>
#include <limits>

#include "placement/framework/strategy.h"

namespace placesim {

// Markov chain Monte Carlo placement search (FlexFlow / TopoOpt; QuickP ICC'25 section V-D and
// the thesis section 5.3 use it as a baseline).
//
// The chain starts from a placement -- by default the best that fits of the warm-start portfolio
// (placement/framework/portfolio.h: m-TOPO, single-device, HEFT, m-ETF, METIS, by the chain's cost model), so that
// the search never returns worse than the cheap answers; `init: single-device` is the
// thesis's start, which the paper reproductions pin -- and at each step proposes moving one unit -- an
// operator, or a whole colocation class -- to a random other GPU. With
//   cost(p)  = latency(p) * (1 + memory_penalty * overflow(p) / total operator memory),
//   overflow = sum over GPUs of max(0, memory placed - GPU memory),
//   delta    = (cost(new) - cost(current)) / cost(current)
// the move is accepted with probability min(1, exp(-beta * delta)) (Metropolis). delta is
// relative, so beta does not depend on the graph's time scale: beta = 5000 accepts a move 0.02%
// worse with probability 1/e. beta = inf (or greedy: true) accepts only moves that are not worse
// (equal-cost moves are accepted, as in the limit of Metropolis). The lowest-cost placement seen
// is returned.
//
// Defaults (measured with bench_mcmc's graphs, AlexNet and VGG-16 on 4 QuickP GPUs, 25,000
// steps): one move changes the latency of a thousand-operator graph by well under 1%, so beta = 50
// accepts almost everything and the chain drifts away from its start (best AlexNet 98.8 ms,
// VGG-16 120.4 ms with all operators proposed alike, against 102.8 / 122.3 ms on one GPU);
// beta = 5000 with zero-compute operators proposed a tenth as often reaches 77.6 / 91.4 ms
// (seed 2: 77.1 / 93.6; greedy: 81.5 / 94.4; beta 1000: 78.1 / 99.9; beta 20000: 77.2 / 91.7).
//
// Each step is one evaluator run, made cheaper by an exact early exit: the uniform draw u is taken
// before evaluating, so the largest acceptable cost, cost(current) * (1 - ln(u) / beta), is known
// in advance and the evaluator stops as soon as the schedule proves the proposal exceeds it
// (Evaluator::latency_with_cutoff). The chain is identical with and without the cutoff. The saving
// is small on profiled graphs: a rejected move is usually only slightly worse, and the compute-only
// bounds prove it late (on VGG-16, after ~89% of the operators are scheduled): 25,000 steps take
// ~5% less time on VGG-16, ~1% on AlexNet. Re-scheduling from the first affected operator would
// need checkpoints inside the evaluator.
//
// Operators with no compute and no tensor to or from another unit cannot change the latency
// (they run in zero time at the lowest priority), so they are never proposed.
struct McmcConfig {
  enum class Init { Portfolio, SingleDevice, RoundRobin, Random };
  // The thesis starts the chain on one GPU; `portfolio` starts it from the warm-start portfolio's
  // best, and results name that start (SearchFacts::warm_start).
  Init init = Init::SingleDevice;
  double beta = 5000;                    // inverse temperature on relative cost; inf = greedy
  long steps = 25000;                    // proposals
  std::uint64_t seed = 1;
  double memory_penalty = 10;            // cost factor per unit of overflow fraction
  // Relative probability of proposing a unit with zero compute (but with tensors) against one
  // that computes: profiled graphs are mostly zero-time bookkeeping operators (87% of VGG-16).
  double zero_compute_weight = 0.1;
  bool cutoff = true;                    // stop hopeless evaluations early (same chain, faster)
  // Share of the search kept for a greedy local search (placement/stages/refine) from the chain's best:
  // the chain wanders at its temperature, the polish takes every move down it finds, until 20
  // rounds in a row find none. Its share of the time left after the portfolio, and at most
  // max(320, steps * share / (1 - share)) candidates. 0: off (the chain's best, as published).
  double polish_share = 0.2;
  bool operator==(const McmcConfig&) const = default;
};
// The strategy's `time_limit` (wall time of the whole call) also ends the chain; the same seed
// gives the same placement only while the step budget, not the time, ends it (the report says which).

inline constexpr EnumName<McmcConfig::Init> kMcmcInitNames[] = {
    {McmcConfig::Init::Portfolio, "portfolio"},
    {McmcConfig::Init::SingleDevice, "single-device"},
    {McmcConfig::Init::RoundRobin, "round-robin"},
    {McmcConfig::Init::Random, "random"},
};

class Mcmc : public Strategy {
 public:
  explicit Mcmc(McmcConfig config) : Strategy("mcmc"), config_(config) {}
  const McmcConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  // One chain (and its polish) under the strategy's own cost model.
  PlacementResult search(const Graph& graph, const Cluster& cluster, const Deadline& deadline);
  McmcConfig config_;
};

OptionSchema<McmcConfig> mcmc_schema();
StrategyInfo mcmc_strategy_info();

}  // namespace placesim
