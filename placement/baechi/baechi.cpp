// The three Baechi strategies: options, reports and registration.
#include "placement/baechi/baechi.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/errors.h"

namespace placesim {

PlacementResult Baechi::place(const Graph& graph, const Cluster& cluster) {
  const baechi::Groups groups = baechi::make_groups(graph, config_.coplace);
  PlacementResult r;
  r.report["groups"] = groups.count();
  r.report["colocation_classes"] = graph.num_colocation_classes();
  r.report["coplaced_merges"] = groups.coplaced_merges;
  if (groups.count() > 0) {
    const auto largest = std::max_element(groups.memory_bytes.begin(), groups.memory_bytes.end());
    r.report["largest_group_bytes"] = *largest;
    r.report["largest_group_ops"] = *std::max_element(groups.size.begin(), groups.size.end());
  }
  std::vector<double> budget;
  for (const Device& d : cluster.devices()) budget.push_back(d.memory_bytes * config_.memory_fraction);

  if (method_ == BaechiMethod::Topo) {
    baechi::TopoPlacement topo =
        baechi::topo_placement(graph, cluster, groups, config_.memory_fraction, config_.uniform);
    r.placement = std::move(topo.placement);
    r.report["memory_fallbacks"] = topo.memory_fallbacks;
    r.report["memory_limit_bytes"] = topo.fill_limit;
    r.report["device_memory_bytes"] = topo.device_memory;
    return r;
  }

  std::vector<OpId> favourite;
  if (method_ == BaechiMethod::Sct) {
    baechi::SctLp lp = baechi::solve_sct_lp(graph, cluster, config_.threshold);
    r.report["lp"] = {{"solve_seconds", lp.solve_seconds}, {"objective_s", lp.objective_s},
                      {"optimal", lp.optimal},           {"rows", lp.rows},
                      {"columns", lp.columns},           {"favourite_children", lp.favourite_children},
                      {"rounding_conflicts", lp.rounding_conflicts}};
    if (!lp.optimal) r.report["note"] = "the SCT LP was not solved to optimality: no favourite children (plain m-ETF)";
    favourite = std::move(lp.favourite);
  }
  baechi::EtfSchedule s = baechi::etf_schedule(graph, cluster, groups, config_.memory_fraction, favourite);
  r.placement = std::move(s.placement);
  r.report["schedule_makespan_s"] = s.makespan;
  r.report["memory_fallbacks"] = s.memory_fallbacks;
  r.report["memory_limit_bytes"] = budget;
  r.report["device_memory_bytes"] = s.device_memory;
  if (method_ == BaechiMethod::Sct) r.report["favourite_children_on_parent_gpu"] = s.favourite_children_on_parent_gpu;
  return r;
}

namespace {

constexpr const char* kCommonOptions =
    "memory_fraction (1.0): share of each GPU's memory the placer may fill, in (0, 1]; "
    "coplace (true): co-place an operator with its only consumer (Baechi's co-placement)";

BaechiConfig parse_common(const YamlFields& options) {
  BaechiConfig cfg;
  cfg.memory_fraction = options.number_or("memory_fraction", cfg.memory_fraction);
  if (!(cfg.memory_fraction > 0 && cfg.memory_fraction <= 1))
    throw InputError(options.file(), options.field("memory_fraction"),
                     fmt::format("expected a fraction in (0, 1], got {}", cfg.memory_fraction));
  cfg.coplace = options.boolean_or("coplace", cfg.coplace);
  return cfg;
}

}  // namespace

StrategyInfo m_topo_strategy_info() {
  return {"m-topo", "Baechi m-TOPO: fill the GPUs one after another in topological order, under a memory limit",
          std::string(kCommonOptions) +
              "; uniform (true): fill each GPU up to total memory / #GPUs + the largest group, else up to its budget",
          [](const YamlFields& options) {
            options.allow_only({"memory_fraction", "coplace", "uniform"});
            BaechiConfig cfg = parse_common(options);
            cfg.uniform = options.boolean_or("uniform", cfg.uniform);
            return std::make_unique<Baechi>(BaechiMethod::Topo, cfg);
          }};
}

StrategyInfo m_etf_strategy_info() {
  return {"m-etf", "Baechi m-ETF: earliest-start-time list scheduling on the GPUs with room", kCommonOptions,
          [](const YamlFields& options) {
            options.allow_only({"memory_fraction", "coplace"});
            return std::make_unique<Baechi>(BaechiMethod::Etf, parse_common(options));
          }};
}

StrategyInfo m_sct_strategy_info() {
  return {"m-sct", "Baechi m-SCT: m-ETF that keeps each operator's LP-chosen favourite child on its GPU",
          std::string(kCommonOptions) + "; threshold (0.5): an edge whose LP value is below it marks a favourite child",
          [](const YamlFields& options) {
            options.allow_only({"memory_fraction", "coplace", "threshold"});
            BaechiConfig cfg = parse_common(options);
            cfg.threshold = options.number_or("threshold", cfg.threshold);
            if (!(cfg.threshold > 0 && cfg.threshold <= 1))
              throw InputError(options.file(), options.field("threshold"),
                               fmt::format("expected a value in (0, 1], got {}", cfg.threshold));
            return std::make_unique<Baechi>(BaechiMethod::Sct, cfg);
          }};
}

}  // namespace placesim
