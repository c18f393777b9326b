#include "placement/strategies/mcmc/mcmc.h"
#include "placement/framework/portfolio.h"
#include "placement/stages/refine/refine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <random>

#include "placement/framework/placement_units.h"
#include "placement/strategies/round_robin/round_robin.h"
#include "placement/strategies/single_device/single_device.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"

namespace placesim {

namespace {

// Uniform in (0, 1]: the Metropolis threshold takes its logarithm.
double uniform_open0(std::mt19937_64& rng) { return static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53; }
std::uint64_t below(std::mt19937_64& rng, std::uint64_t k) { return rng() % k; }

}  // namespace

PlacementResult Mcmc::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  if (common_options().cost_model != CostModelKind::Flow) return search(graph, cluster, deadline);
  // Searching the flow model, MCMC is never worse under it than its list search: the list chain
  // (the same seed and steps, at most a quarter of the time) runs first, and its answer is kept
  // where the flow model prices it better (a placement that fits before one that does not).
  Mcmc list(config_);
  StrategyCommonOptions common = common_options();
  common.cost_model = CostModelKind::List;
  list.set_common_options(common);
  const PlacementResult candidate = list.search(graph, cluster, deadline.portion(0.25));
  PlacementResult r = search(graph, cluster, deadline);
  CostModel flow = make_cost_model(graph, cluster);
  const double own = flow.latency(r.placement), listed = flow.latency(candidate.placement);
  const bool own_fits = fits_memory(graph, cluster, r.placement), listed_fits = fits_memory(graph, cluster, candidate.placement);
  const bool keep_list = listed_fits != own_fits ? listed_fits : listed < own;
  r.details["list_search"] = {{"flow_latency_s", listed}, {"fits", listed_fits}, {"kept", keep_list}};
  if (keep_list) r.placement = candidate.placement;
  return r;
}

PlacementResult Mcmc::search(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  const auto n = graph.num_operators();
  const int num_devices = cluster.num_devices();
  std::mt19937_64 rng(config_.seed);
  const PlacementUnits units = build_placement_units(graph);

  CostModel cost_model = make_cost_model(graph, cluster);
  std::vector<DeviceId> current(n, best_single_device(graph, cluster));  // single-device's GPU
  nlohmann::json portfolio_report = nlohmann::json::object();
  std::string start = std::string(enum_name<McmcConfig::Init>(kMcmcInitNames, config_.init));
  if (config_.init == McmcConfig::Init::Portfolio) {
    const std::vector<PortfolioCandidate> candidates =
        run_portfolio(graph, cluster, deadline, cost_model, "mcmc", portfolio_report);
    if (const PortfolioCandidate* best = best_fitting(candidates)) {
      current = best->placement;
      start = best->name;
    } else {
      start = "single-device (no portfolio placement fits)";
    }
  } else if (config_.init == McmcConfig::Init::RoundRobin) {
    current = RoundRobin(RoundRobinConfig{}).place(graph, cluster).placement;
  } else if (config_.init == McmcConfig::Init::Random) {
    for (std::int32_t k = 0; k < units.count(); ++k) {
      const auto d = static_cast<DeviceId>(below(rng, num_devices));
      for (OpId i : units.members_of(k)) current[i] = d;
    }
  }

  // The chain gets what is left but the polish's share.
  const Deadline chain_deadline = deadline.portion(1 - config_.polish_share);

  // cost = latency * memory factor; overflow is tracked per GPU and updated by each move.
  std::vector<double> memory = device_memory(graph, current, num_devices);
  auto overflow_bytes = [&] {
    double over = 0;
    for (int d = 0; d < num_devices; ++d) over += std::max(0.0, memory[d] - cluster.device(d).memory_bytes);
    return over;
  };
  const double total_memory = graph.total_memory();
  auto memory_factor = [&](double over) {
    return total_memory > 0 ? 1.0 + config_.memory_penalty * over / total_memory : 1.0;
  };

  const double initial_latency = cost_model.latency(current);
  double current_latency = initial_latency;
  double current_cost = initial_latency * memory_factor(overflow_bytes());
  std::vector<DeviceId> best = current;
  double best_latency = current_latency, best_cost = current_cost;
  long best_step = 0;

  // Which list a proposal draws from: zero-compute units weigh zero_compute_weight each.
  const double zero_mass = config_.zero_compute_weight * static_cast<double>(units.zero_compute.size());
  const double computing_mass = static_cast<double>(units.computing.size());
  const double zero_share = zero_mass + computing_mass > 0 ? zero_mass / (zero_mass + computing_mass) : 0.0;
  const bool can_move = num_devices > 1 && zero_mass + computing_mass > 0;
  const bool greedy = std::isinf(config_.beta);

  long steps = 0, accepted = 0, stopped_early = 0;
  bool timed_out = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  for (; can_move && steps < config_.steps; ++steps) {
    if (chain_deadline.expired()) {
      timed_out = true;
      break;
    }
    const bool pick_zero = units.computing.empty() || (zero_share > 0 && uniform_open0(rng) <= zero_share);
    const auto& pool = pick_zero ? units.zero_compute : units.computing;
    const std::int32_t unit = pool[below(rng, pool.size())];
    const auto members = units.members_of(unit);
    const DeviceId from = current[members[0]];
    auto to = static_cast<DeviceId>(below(rng, num_devices - 1));
    if (to >= from) ++to;

    // Metropolis: accept iff u <= exp(-beta * delta), i.e. cost <= current * (1 - ln(u) / beta).
    const double threshold = greedy ? current_cost : current_cost * (1.0 - std::log(uniform_open0(rng)) / config_.beta);
    for (OpId i : members) current[i] = to;
    memory[from] -= units.memory[unit];
    memory[to] += units.memory[unit];
    const double factor = memory_factor(overflow_bytes());
    // Any latency L with L * factor <= threshold is <= this cutoff (the margin absorbs rounding
    // of the division), so the cutoff only ever drops proposals that would be rejected.
    const double latency = config_.cutoff ? cost_model.latency_with_cutoff(current, threshold / factor * (1 + 1e-12))
                                          : cost_model.latency(current);
    stopped_early += std::isinf(latency);
    const double cost = latency * factor;
    if (cost <= threshold) {
      ++accepted;
      current_latency = latency;
      current_cost = cost;
      if (cost < best_cost) {
        best = current;
        best_cost = cost;
        best_latency = latency;
        best_step = steps + 1;
      }
    } else {
      for (OpId i : members) current[i] = from;
      memory[from] += units.memory[unit];
      memory[to] -= units.memory[unit];
    }
  }
  const double seconds = elapsed();

  PlacementResult r;
  r.placement = std::move(best);
  const std::vector<double> best_memory = device_memory(graph, r.placement, num_devices);
  double best_overflow = 0;
  for (int d = 0; d < num_devices; ++d) best_overflow += std::max(0.0, best_memory[d] - cluster.device(d).memory_bytes);
  r.details = {
      {"init", std::string(enum_name<McmcConfig::Init>(kMcmcInitNames, config_.init))},
      {"start", start},
      {"beta", greedy ? nlohmann::json("inf") : nlohmann::json(config_.beta)},
      {"steps", steps},
      {"accepted", accepted},
      {"stopped_by", timed_out ? "time_limit" : "steps"},
      {"steps_per_second", seconds > 0 ? static_cast<double>(steps) / seconds : 0.0},
      {"evaluations_cut_off", stopped_early},
      {"initial_latency_s", initial_latency},
      {"best_latency_s", best_latency},
      {"best_cost_s", best_cost},
      {"best_step", best_step},
      {"best_memory_overflow_bytes", best_overflow},
      {"final_latency_s", current_latency},
      {"final_cost_s", current_cost},
      {"proposable_units", units.computing.size() + units.zero_compute.size()},
  };
  if (config_.init == McmcConfig::Init::Portfolio) {
    r.details["portfolio"] = std::move(portfolio_report);
    r.facts.warm_start = start;
  }
  if (config_.polish_share > 0 && can_move) {
    // Its share of the search in evaluations too: a chain of `steps` proposals is followed by at
    // most steps * share / (1 - share) candidates (5,000 steps at 0.2: 1,250), and at least 320
    // (20 rounds of 16, what it takes to say it converged).
    const double budget = static_cast<double>(config_.steps) * config_.polish_share / (1 - config_.polish_share);
    const long max_evaluations = budget >= 9e18 ? std::numeric_limits<long>::max() : std::max(320L, std::lround(budget));
    polish_answer(graph, cluster, deadline, cost_model.kind(), r, max_evaluations);
  }
  if (cost_model.kind() == CostModelKind::Flow) {
    r.details["flow_runs"] = cost_model.flow_runs();
    r.details["settled_by_list_schedule"] = cost_model.settled_by_list();
  }
  return r;
}

OptionSchema<McmcConfig> mcmc_schema() {
  OptionSchema<McmcConfig> s;
  s.choice<McmcConfig::Init>("init", &McmcConfig::init, kMcmcInitNames, "the chain's start");
  Range beta = Range::positive();
  beta.allow_infinity = true;
  s.number("beta", &McmcConfig::beta, "inverse temperature on the relative latency change, inf for greedy", beta, "50");
  s.add({"greedy", "flag", "accept only moves that are not worse (beta inf)", "false", {}, "true"},
        [](const YamlFields& f, std::string_view key, McmcConfig& c) {
          if (!f.boolean_or(key, false)) return;
          if (f.has("beta")) throw_field_error(f, "beta", "greedy: true means beta inf; drop one of the two");
          c.beta = std::numeric_limits<double>::infinity();
        });
  s.count("steps", &McmcConfig::steps, "proposals", 0, std::numeric_limits<long>::max(), "100");
  s.count("seed", &McmcConfig::seed, "random seed", 0, std::numeric_limits<long>::max(), "7");
  s.number("memory_penalty", &McmcConfig::memory_penalty, "cost factor per overflowing fraction of operator memory",
           Range::non_negative(), "0");
  s.number("zero_compute_weight", &McmcConfig::zero_compute_weight,
           "relative chance of proposing a zero-compute operator", Range::non_negative(), "1");
  s.flag("cutoff", &McmcConfig::cutoff, "stop evaluating a proposal once it cannot be accepted (same result, faster)");
  s.number("polish", &McmcConfig::polish_share,
           "share of the search (time left after the portfolio; steps) kept for a greedy local search from the chain's best "
           "(placement/stages/refine; it also stops after 20 rounds without a better one); 0: off, the chain's best",
           Range::closed(0, 0.9), "0");
  return s;
}

StrategyInfo mcmc_strategy_info() {
  return strategy_info<Mcmc>("mcmc",
                             "Metropolis search moving one operator (or colocation class) at a time; returns the best "
                             "placement seen",
                             mcmc_schema(), {.searches = true});
}

}  // namespace placesim
