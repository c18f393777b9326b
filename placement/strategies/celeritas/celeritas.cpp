// The `order-place` and `celeritas` strategies: fusion, coarse placement, options and reports.
#include "placement/strategies/celeritas/celeritas.h"

#include <algorithm>

#include "sim/engines/evaluator.h"

namespace placesim {

PlacementResult Celeritas::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  using namespace celeritas;
  PlacementResult r;
  const MeanCommCost comm(cluster);
  double smallest_budget = cluster.device(0).memory_bytes;
  for (const Device& d : cluster.devices()) smallest_budget = std::min(smallest_budget, d.memory_bytes);
  smallest_budget *= config_.memory_fraction;

  FusionConfig fusion_config;
  fusion_config.exploration_range = config_.exploration_range;
  fusion_config.cluster_memory_bytes = config_.cluster_memory_fraction * smallest_budget;
  const std::vector<OpId> sequence = cpd_topo_order(graph, comm);
  const Fusion fusion = optimal_fusion(graph, sequence, comm, fusion_config);
  const Coarsening coarse = contract_fusion(graph, fusion);
  const std::vector<OpId> coarse_order = cpd_topo_order(coarse.coarse, comm);  // Algorithm 2, line 1

  const CoarsePlacement ordered = order_place(coarse.coarse, cluster, coarse_order, config_.memory_fraction);
  const CoarsePlacement* chosen = &ordered;
  CoarsePlacement adjusted;
  if (config_.adjust) {
    adjusted = adjusting_placement(coarse.coarse, cluster, coarse_order, config_.memory_fraction);
    chosen = &adjusted;
    r.details["moves"] = adjusted.moves;
    r.details["schedule_makespan_s"] = adjusted.schedule_makespan_s;
  }
  r.placement = expand_placement(coarse, chosen->placement);
  if (config_.adjust && config_.keep_better) {
    // Algorithm 2's guarantee is about its own block schedule; the runner measures the fine
    // placement, so keep Order-Place's when the cost model (`cost_model`) says it is faster.
    std::vector<DeviceId> order_fine = expand_placement(coarse, ordered.placement);
    CostModel cost = make_cost_model(graph, cluster);
    const double adjusting_s = cost.latency(r.placement);
    const double order_s = cost.latency(order_fine);
    r.details["cost_model_latency_s"] = {{"adjusting", adjusting_s}, {"order_place", order_s}};
    if (order_s < adjusting_s) {
      r.placement = std::move(order_fine);
      chosen = &ordered;
    }
    r.details["chosen"] = chosen == &ordered ? "order-place" : "adjusting";
  }
  r.details["operators"] = graph.num_operators();
  r.details["clusters"] = fusion.num_clusters();
  r.details["coarse_tensors"] = coarse.coarse.num_tensors();
  r.details["fusion_cut_cost_s"] = fusion.cut_cost;
  r.details["cluster_memory_limit_bytes"] = fusion_config.cluster_memory_bytes;
  r.details["memory_fallbacks"] = chosen->memory_fallbacks;
  r.details["memory_budget_bytes"] = chosen->budget;
  r.details["device_memory_bytes"] = device_memory(graph, r.placement, cluster.num_devices());
  return r;
}

OptionSchema<CeleritasConfig> order_place_schema() {
  OptionSchema<CeleritasConfig> s;
  const Range fraction{0, 1, true, false};  // (0, 1]
  s.count("exploration_range", &CeleritasConfig::exploration_range, "R, the most operators fused into one cluster", 1,
          1'000'000, "2");
  s.number("cluster_memory_fraction", &CeleritasConfig::cluster_memory_fraction,
           "M, a cluster's memory limit as a share of the smallest GPU budget", fraction, "0.5");
  s.number("memory_fraction", &CeleritasConfig::memory_fraction, "share of each GPU's memory the placer may fill",
           fraction, "0.5");
  return s;
}

OptionSchema<CeleritasConfig> celeritas_schema() {
  OptionSchema<CeleritasConfig> s = order_place_schema();
  s.flag("keep_better", &CeleritasConfig::keep_better,
         "keep Order-Place's placement when the evaluator finds it faster");
  return s;
}

namespace {

// The order-place strategy: Celeritas without Adjusting Placement (and so without keep_better).
class OrderPlace : public Celeritas {
 public:
  explicit OrderPlace(CeleritasConfig config) : Celeritas(without_adjusting(config)) {}

 private:
  static CeleritasConfig without_adjusting(CeleritasConfig config) {
    config.adjust = false;
    config.keep_better = false;
    return config;
  }
};

}  // namespace

StrategyInfo order_place_strategy_info() {
  return strategy_info<OrderPlace>(
      "order-place", "Celeritas Order-Place: fuse runs of the CPD-TOPO order, fill the GPUs one after another in that order",
      order_place_schema());
}

StrategyInfo celeritas_strategy_info() {
  return strategy_info<Celeritas>(
      "celeritas", "Celeritas: fuse runs of the CPD-TOPO order, then Adjusting Placement (earliest start with insertion)",
      celeritas_schema(), {.searches = true, .portfolio = PortfolioUse::AfterIt});
}

}  // namespace placesim
