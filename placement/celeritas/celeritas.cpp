// The `order-place` and `celeritas` strategies: fusion, coarse placement, options and reports.
#include "placement/celeritas/celeritas.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/errors.h"
#include "sim/evaluator.h"

namespace placesim {

PlacementResult Celeritas::place(const Graph& graph, const Cluster& cluster) {
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
    r.report["moves"] = adjusted.moves;
    r.report["schedule_makespan_s"] = adjusted.schedule_makespan_s;
  }
  r.placement = expand_placement(coarse, chosen->placement);
  if (config_.adjust && config_.keep_better) {
    // Algorithm 2's guarantee is about its own block schedule; the runner measures the fine
    // evaluator, so keep Order-Place's placement when the evaluator says it is faster.
    std::vector<DeviceId> order_fine = expand_placement(coarse, ordered.placement);
    Evaluator evaluator(graph, cluster);
    const double adjusting_s = evaluator.latency(r.placement);
    const double order_s = evaluator.latency(order_fine);
    r.report["evaluator_latency_s"] = {{"adjusting", adjusting_s}, {"order_place", order_s}};
    if (order_s < adjusting_s) {
      r.placement = std::move(order_fine);
      chosen = &ordered;
    }
    r.report["chosen"] = chosen == &ordered ? "order-place" : "adjusting";
  }
  r.report["operators"] = graph.num_operators();
  r.report["clusters"] = fusion.num_clusters();
  r.report["coarse_tensors"] = coarse.coarse.num_tensors();
  r.report["fusion_cut_cost_s"] = fusion.cut_cost;
  r.report["cluster_memory_limit_bytes"] = fusion_config.cluster_memory_bytes;
  r.report["memory_fallbacks"] = chosen->memory_fallbacks;
  r.report["memory_budget_bytes"] = chosen->budget;
  r.report["device_memory_bytes"] = device_memory(graph, r.placement, cluster.num_devices());
  return r;
}

namespace {

constexpr const char* kCommonOptions =
    "exploration_range (200): R, the most operators fused into one cluster, >= 1; "
    "cluster_memory_fraction (0.25): M, a cluster's memory limit as a share of the smallest GPU budget, in (0, 1]; "
    "memory_fraction (1.0): share of each GPU's memory the placer may fill, in (0, 1]";

CeleritasConfig parse_common(const YamlFields& options) {
  CeleritasConfig cfg;
  const long range = options.integer_or("exploration_range", cfg.exploration_range);
  if (range < 1 || range > 1'000'000)
    throw InputError(options.file(), options.field("exploration_range"),
                     fmt::format("expected an integer in [1, 1000000], got {}", range));
  cfg.exploration_range = static_cast<int>(range);
  for (auto [key, value] : {std::pair{"cluster_memory_fraction", &cfg.cluster_memory_fraction},
                            std::pair{"memory_fraction", &cfg.memory_fraction}}) {
    *value = options.number_or(key, *value);
    if (!(*value > 0 && *value <= 1))
      throw InputError(options.file(), options.field(key), fmt::format("expected a fraction in (0, 1], got {}", *value));
  }
  return cfg;
}

}  // namespace

StrategyInfo order_place_strategy_info() {
  return {"order-place",
          "Celeritas Order-Place: fuse runs of the CPD-TOPO order, fill the GPUs one after another in that order",
          kCommonOptions, [](const YamlFields& options) {
            options.allow_only({"exploration_range", "cluster_memory_fraction", "memory_fraction"});
            CeleritasConfig cfg = parse_common(options);
            cfg.adjust = false;
            cfg.keep_better = false;
            return std::make_unique<Celeritas>(cfg);
          }};
}

StrategyInfo celeritas_strategy_info() {
  return {"celeritas",
          "Celeritas: fuse runs of the CPD-TOPO order, then Adjusting Placement (earliest start with insertion)",
          std::string(kCommonOptions) +
              "; keep_better (true): keep Order-Place's placement when the evaluator finds it faster",
          [](const YamlFields& options) {
            options.allow_only({"exploration_range", "cluster_memory_fraction", "memory_fraction", "keep_better"});
            CeleritasConfig cfg = parse_common(options);
            cfg.keep_better = options.boolean_or("keep_better", cfg.keep_better);
            return std::make_unique<Celeritas>(cfg);
          }};
}

}  // namespace placesim
