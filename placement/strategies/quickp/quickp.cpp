// QuickP: the strategy -- coarsening (Algorithm 1 or 2), the integer program P2 (p2.cpp) and,
// on a multi-NIC cluster, the bandwidth allocation P3 (bandwidth.cpp).

#include "placement/strategies/quickp/quickp.h"

#include "placement/strategies/quickp/bandwidth.h"
#include "placement/framework/portfolio.h"
#include "placement/stages/refine/refine.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <chrono>
#include <limits>
#include <numeric>
#include <set>
#include <string>

#include <memory>
#include <optional>
#include <yaml-cpp/yaml.h>

#include "sim/engines/evaluator.h"
#include "sim/config/yaml_fields.h"
#include "topologies/registry.h"

namespace placesim {

namespace {

// P2 posed on the graph as given, with the evaluator's durations: nothing fused or grouped, no
// colocation class (P2 orders a unit's operators topologically), no parallel tensors (P2 merges
// them), every GPU at speed 1 (P2 uses compute_s as is).
bool p2_is_exact(const Graph& graph, const Cluster& cluster, const Coarsening& fused, const Colocation& groups) {
  if (fused.coarse.num_operators() != graph.num_operators() || groups.num_groups > 0 ||
      graph.num_colocation_classes() > 0)
    return false;
  for (const Device& d : cluster.devices())
    if (d.compute_speed != 1.0) return false;
  std::set<std::pair<OpId, OpId>> edges;
  for (const Tensor& t : graph.tensors())
    if (!edges.insert({t.src, t.dst}).second) return false;
  return true;
}

// The whole problem's lower bound and QuickP's status for the answer, into the report. `cluster`
// is the one the answer is measured on.
void report_status(const Graph& graph, const Cluster& cluster, const QuickPPass& pass, double mip_gap,
                   PlacementResult& r) {
  Evaluator evaluator(graph, cluster);
  const LowerBounds bounds = evaluator.lower_bounds();
  const double latency = evaluator.latency(r.placement);
  const QuickPStatus status =
      quickp_status(pass.p2_status, latency, bounds.best(), pass.p2_exact, pass.p2_bound, mip_gap);
  r.details["status"] = std::string(enum_name(std::span<const EnumName<QuickPStatus>>(kQuickPStatusNames), status));
  r.details["evaluator_latency_s"] = latency;
  r.details["lower_bound_s"] = bounds.best();
  r.details["lower_bound_critical_path_s"] = bounds.critical_path;
  r.details["lower_bound_work_s"] = bounds.work_per_device;
  r.details["lower_bound_memory_per_gpu_bytes"] = bounds.memory_per_device;
  r.details["gap_to_lower_bound"] = latency > 0 ? std::max(0.0, (latency - bounds.best()) / latency) : 0.0;
}

}  // namespace

PlacementResult QuickP::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  // The cheap answers first: they take little time, and QuickP never returns worse.
  nlohmann::json portfolio_report = nlohmann::json::object();
  CostModel cost = make_cost_model(graph, cluster);
  std::vector<PortfolioCandidate> candidates =
      common_options().portfolio ? run_portfolio(graph, cluster, deadline, cost, "quickp", portfolio_report) : std::vector<PortfolioCandidate>{};
  const MultiNicConfig* multi_nic = config_.bandwidth_allocation ? multi_nic_config_of(cluster) : nullptr;
  // P2 and P3 get what is left but the polish's share.
  const Deadline own = deadline.portion(1 - config_.polish_share);
  // P2 gets what is left; with P3 to follow, half of it (each later re-placement half of the rest).
  QuickPPass pass = place_once(graph, cluster, own, multi_nic ? 0.5 : 1.0);
  PlacementResult r = pass.result;
  const bool p2_answer = pass.p2_status != P2Status::Infeasible && fits_memory(graph, cluster, r.placement);
  if (config_.bandwidth_allocation && !multi_nic) r.details["allocation"] = "not a multi-NIC cluster: nothing to allocate";
  double own_latency = p2_answer ? cost.latency(r.placement) : std::numeric_limits<double>::infinity();
  std::optional<Cluster> allocated;
  if (multi_nic && p2_answer) {
    bool first = true;  // the first placement on the cluster as given is the one just found
    const P3Result p3 = solve_p3(
        graph, cluster, *multi_nic,
        [&](const Cluster& c) {
          if (first) {
            first = false;
            return r.placement;
          }
          QuickPPass again = place_once(graph, c, own, 0.5);
          // An infeasible P2 proposes nothing: the alternation keeps what it has.
          return again.p2_status == P2Status::Infeasible ? r.placement : again.result.placement;
        },
        config_.allocation_rounds,
        AllocationOptions{.acceptance = common_options().cost_model, .stop = own.end()},
        [&] { return own.bounded() && own.remaining() < 0.05 * own.limit(); });
    r.placement = p3.placement;
    r.bandwidth_allocation = p3.allocation;
    nlohmann::json rows = nlohmann::json::array();
    for (int s = 0; s < p3.allocation.servers(); ++s) {
      nlohmann::json row = nlohmann::json::array();
      for (int t = 0; t < p3.allocation.servers(); ++t) row.push_back(p3.allocation(s, t));
      rows.push_back(std::move(row));
    }
    r.details["allocation"] = std::move(rows);
    r.details["latency_uniform_s"] = p3.initial_latency;
    r.details["latency_s"] = p3.latency;
    r.details["allocation_rounds"] = p3.rounds;
    r.details["allocation_accepted"] = p3.accepted;
    own_latency = p3.latency;
    allocated = with_bandwidth_allocation(cluster, p3.allocation, "quickp");
    // P2's answers were for one allocation each: what it proved is about the reduced problem at best.
    pass.p2_exact = false;
  }
  // With no answer of its own that fits, QuickP falls back, as every search strategy does, on the
  // portfolio's best placement that fits, and says so (memory_fallback).
  const bool fallback = !p2_answer && !common_options().portfolio;
  if (fallback) candidates = run_portfolio(graph, cluster, deadline, cost, "quickp", portfolio_report, true);
  // The best of QuickP's own answer and the portfolio's, by the cost model; only placements that fit.
  portfolio_report["quickp"] = p2_answer ? nlohmann::json(own_latency) : nlohmann::json("P2 infeasible");
  const PortfolioCandidate* best = nullptr;
  for (const PortfolioCandidate& c : candidates)
    if (c.fits && c.latency < own_latency * (1 - 1e-12) && (!best || c.latency < best->latency)) best = &c;
  if (!p2_answer && !best)
    throw std::runtime_error(fmt::format(
        "quickp: P2 is infeasible (no placement of its {} units fits in GPU memory) and no strategy of the warm-start "
        "portfolio found a placement that fits",
        r.details.value("units", 0)));
  if (best) {
    r.placement = best->placement;
    r.bandwidth_allocation.reset();
    allocated.reset();
    if (fallback) {
      r.facts.memory_fallback = best->name;
      r.details["memory_fallback"] = std::move(portfolio_report);
    }
  }
  if (common_options().portfolio) {
    r.details["portfolio"] = std::move(portfolio_report);
    r.facts.portfolio_winner = best ? best->name : std::string("quickp");
  }
  if (config_.polish_share > 0)
    polish_answer(graph, allocated ? *allocated : cluster, deadline, common_options().cost_model, r);
  report_status(graph, allocated ? *allocated : cluster, pass, config_.p2.mip_gap, r);
  return r;
}

QuickPPass QuickP::place_once(const Graph& graph, const Cluster& cluster, const Deadline& deadline,
                              double share) const {
  const auto t0 = std::chrono::steady_clock::now();
  const double alpha = config_.alpha_s ? *config_.alpha_s : fusion_threshold(graph, config_.alpha_percentile);
  const double beta = config_.beta_s ? *config_.beta_s : 2 * alpha;
  Coarsening fused;
  Colocation groups;
  int rounds = 0, expanded = 0, splits = 0;
  // Memory always: a unit larger than a GPU leaves P2 nothing to place it on.
  UnitLimits limits = unit_limits(graph, cluster);
  if (!config_.unit_limits) limits = UnitLimits{0, limits.max_memory, std::numeric_limits<double>::infinity()};
  const double bandwidth = colocation_bandwidth(cluster);
  if (config_.coarsening == QuickPCoarsening::Algorithm2) {
    IterativeReduction red = iterative_fusion_colocation(graph, alpha, beta, bandwidth, limits);
    fused = std::move(red.fused);
    groups = std::move(red.groups);
    rounds = red.rounds;
    expanded = red.expanded;
    splits = red.splits;
  } else {
    if (config_.fusion) {
      fused = fuse_operators(graph, alpha, limits);
    } else {
      fused.coarse = graph;
      fused.group_of.resize(graph.num_operators());
      std::iota(fused.group_of.begin(), fused.group_of.end(), 0);
    }
    if (config_.colocation) groups = split_groups(fused.coarse, colocate(fused.coarse, bandwidth), bandwidth, limits, &splits);
    else groups.group_of.assign(fused.coarse.num_operators(), -1);
  }
  const double fusion_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t pairs = Reachability(fused.coarse).count_parallelizable_pairs();
  // The solver gets what is left of the call's time limit (at least a moment, to return its warm start).
  P2Options p2 = config_.p2;
  // A hair is kept back for what follows the solve (expanding the placement, the report).
  p2.time_limit_s = deadline.bounded() ? std::max(1e-3, deadline.remaining() * share - 0.02) : 1e9;
  const P2Solution s = solve_p2(fused.coarse, cluster, groups, p2);

  QuickPPass pass;
  pass.p2_status = s.status;
  pass.p2_bound = s.best_bound;
  pass.p2_exact = p2_is_exact(graph, cluster, fused, groups);
  PlacementResult& r = pass.result;
  r.placement = expand_placement(fused, s.placement);
  r.details["operators"] = graph.num_operators();
  r.details["fused_operators"] = fused.coarse.num_operators();
  r.details["units"] = s.units;
  r.details["alpha_s"] = alpha;
  r.details["groups"] = groups.num_groups;
  r.details["group_splits"] = splits;
  r.details["coarsening"] = config_.coarsening == QuickPCoarsening::Algorithm2 ? "algorithm2" : "algorithm1";
  if (config_.coarsening == QuickPCoarsening::Algorithm2) {
    r.details["beta_s"] = beta;
    r.details["rounds"] = rounds;
    r.details["expanded"] = expanded;
  }
  if (fused.coarse.num_operators() != graph.num_operators() || groups.num_groups > 0)
    r.details["reduced"] = {{"operators", graph.num_operators()},
                           {"fused_operators", fused.coarse.num_operators()},
                           {"units", s.units},
                           {"groups", groups.num_groups}};
  r.details["parallelizable_pairs"] = pairs;
  r.details["ordering_pairs"] = s.ordering_pairs;
  r.details["columns"] = s.columns;
  r.details["rows"] = s.rows;
  if (s.model_incomplete) r.details["model"] = "stopped at the time limit before it was complete: not solved";
  r.details["fusion_seconds"] = fusion_seconds;
  r.details["solver_seconds"] = s.seconds;
  r.details["warm_start_seconds"] = s.warm_start_seconds;
  r.details["model_seconds"] = s.model_seconds;
  r.details["gap"] = s.gap;
  r.details["objective_s"] = s.objective;
  r.details["best_bound_s"] = s.best_bound;
  r.details["nodes"] = s.nodes;
  r.details["warm_started"] = s.warm_started;
  if (s.warm_started) r.details["warm_start_s"] = s.warm_start_objective;
  r.details["p2_status"] = std::string(p2_status_name(s.status));
  return pass;
}

OptionSchema<QuickPConfig> quickp_schema() {
  using C = QuickPConfig;
  OptionSchema<C> s;
  const Range finite_non_negative = Range::non_negative();
  s.optional_duration("alpha", &C::alpha_s, "fusion threshold (seconds, or with a unit)", finite_non_negative, "1ms",
                      "the alpha_percentile of the non-zero compute times");
  s.number("alpha_percentile", &C::alpha_percentile,
           "fusion threshold as this percentile of the non-zero compute times, when alpha is unset", Range::closed(0, 1), "0.5");
  s.choice<QuickPCoarsening>("coarsening", &C::coarsening, kQuickPCoarseningNames,
                             "algorithm1 = ICC fusion then co-location; algorithm2 = the thesis's iterative fusion and "
                             "co-location with WCC expansion");
  s.optional_duration("beta", &C::beta_s, "algorithm2's co-location threshold", finite_non_negative, "1ms", "2 alpha");
  s.flag("fusion", &C::fusion, "algorithm1: fuse operators (ICC Algorithm 1)");
  s.flag("colocation", &C::colocation, "algorithm1: co-locate by eq. 7");
  s.flag("unit_limits", &C::unit_limits,
         "keep at least one placement unit per GPU, none above the smallest GPU's memory or its share of the work "
         "(false: the papers' fusion and co-location as published)");
  s.add({"mip_gap", "number", "relative gap at which the solver stops", default_text_number(P2Options{}.mip_gap), {}, "0.2"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.mip_gap = parse_number_option(f, key, Range{0, 1, false, true});
        });
  s.add({"max_nodes", "count", "branch-and-bound node limit, deterministic (0: none; raise it for better placements)",
         std::to_string(P2Options{}.max_nodes), {}, "1"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.max_nodes = static_cast<int>(std::min<long>(parse_count_option(f, key, 0, std::numeric_limits<long>::max()), 2000000000));
        });
  s.add({"warm_start", "flag", "start from the better of single-device and HEFT", "true", {}, "false"},
        [](const YamlFields& f, std::string_view key, C& c) { c.p2.warm_start = f.boolean_or(key, c.p2.warm_start); });
  s.add({"write_model", "text", "write the model to this path (.mps for MPS, else LP)", "unset", {}, "model.lp"},
        [](const YamlFields& f, std::string_view key, C& c) { c.p2.write_model = f.string(key); });
  s.add({"cuts", "flag", "add CBC's cut generators and primal heuristics", "false", {}, "true"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.cuts_and_heuristics = f.boolean_or(key, c.p2.cuts_and_heuristics);
        });
  s.flag("bandwidth_allocation", &C::bandwidth_allocation,
         "on a multi-NIC cluster also choose the per-destination allocation b(s,t) (thesis P3, by alternating placement "
         "and an allocation LP)");
  s.count("allocation_rounds", &C::allocation_rounds, "alternations of P3 at most", 1, 100, "1");
  s.number("polish", &C::polish_share,
           "share of the time left after the portfolio kept for a local search from the best placement found "
           "(placement/stages/refine; it also stops after 20 rounds without a better one); 0: off, the papers' QuickP",
           Range::closed(0, 0.9), "0");
  return s;
}

StrategyInfo quickp_strategy_info() {
  // The time limit covers fusion and the solver, which returns its best placement when it runs out
  // (not deterministic: use max_nodes for that).
  return strategy_info<QuickP>(
      "quickp",
      "QuickP (ICC 2025): operator fusion (Algorithm 1), co-location (eq. 7), then the integer program P2 with CBC",
      quickp_schema(),
      {.time_limit_default = 60.0, .searches = true, .portfolio = PortfolioUse::Own});
}

}  // namespace placesim
