// The three Baechi strategies: options, reports and registration.
#include "placement/strategies/baechi/baechi.h"

#include <algorithm>
#include <chrono>

namespace placesim {

namespace baechi {

OneGpuSchedule one_gpu_schedule(const Graph& graph, const Cluster& cluster, double memory_fraction) {
  OneGpuSchedule out;
  const double memory = graph.total_memory();
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (memory > cluster.device(d).memory_bytes * memory_fraction) continue;
    double makespan = 0;
    for (const Operator& op : graph.operators()) makespan += cluster.compute_time(d, op.compute_s);
    if (out.device < 0 || makespan < out.makespan) {
      out.device = d;
      out.makespan = makespan;
    }
  }
  return out;
}

}  // namespace baechi

PlacementResult Baechi::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  double smallest_budget = std::numeric_limits<double>::infinity();
  for (const Device& d : cluster.devices()) smallest_budget = std::min(smallest_budget, d.memory_bytes * config_.memory_fraction);
  const baechi::Groups groups = baechi::make_groups(graph, config_.coplace, smallest_budget);
  PlacementResult r;
  r.details["groups"] = groups.count();
  r.details["colocation_classes"] = graph.num_colocation_classes();
  r.details["coplaced_merges"] = groups.coplaced_merges;
  r.details["coplace_skipped_for_memory"] = groups.coplace_skipped_for_memory;
  if (groups.count() > 0) {
    const auto largest = std::max_element(groups.memory_bytes.begin(), groups.memory_bytes.end());
    r.details["largest_group_bytes"] = *largest;
    r.details["largest_group_ops"] = *std::max_element(groups.size.begin(), groups.size.end());
  }
  std::vector<double> budget;
  for (const Device& d : cluster.devices()) budget.push_back(d.memory_bytes * config_.memory_fraction);

  if (method_ == BaechiMethod::Topo) {
    baechi::TopoPlacement topo =
        baechi::topo_placement(graph, cluster, groups, config_.memory_fraction, config_.uniform);
    r.placement = std::move(topo.placement);
    r.details["memory_fallbacks"] = topo.memory_fallbacks;
    r.details["memory_limit_bytes"] = topo.fill_limit;
    r.details["device_memory_bytes"] = topo.device_memory;
    return r;
  }

  std::vector<OpId> favourite;
  if (method_ == BaechiMethod::Sct) {
    // The LP gets the call's time but a twentieth (at least 50 ms) for the list schedule after it
    // (m-ETF schedules 100,000 operators in 0.03 s).
    auto stop = deadline.end();
    if (deadline.bounded())
      stop -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(std::max(0.05, deadline.remaining() / 20)));
    baechi::SctLp lp = baechi::solve_sct_lp(graph, cluster, config_.threshold, stop);
    r.details["lp"] = {{"solve_seconds", lp.solve_seconds}, {"objective_s", lp.objective_s},
                      {"optimal", lp.optimal},           {"rows", lp.rows},
                      {"columns", lp.columns},           {"favourite_children", lp.favourite_children},
                      {"rounding_conflicts", lp.rounding_conflicts}};
    if (lp.stopped_at_time_limit)
      r.details["note"] = "the time limit stopped the SCT LP: no favourite children (plain m-ETF)";
    else if (!lp.optimal)
      r.details["note"] = "the SCT LP was not solved to optimality: no favourite children (plain m-ETF)";
    favourite = std::move(lp.favourite);
  }
  baechi::EtfSchedule s = baechi::etf_schedule(graph, cluster, groups, config_.memory_fraction, favourite);
  r.details["etf_makespan_s"] = s.makespan;
  const baechi::OneGpuSchedule one = baechi::one_gpu_schedule(graph, cluster, config_.memory_fraction);
  if (one.device >= 0) r.details["one_gpu_makespan_s"] = one.makespan;
  if (one.device >= 0 && s.memory_fallbacks == 0 && one.makespan <= s.makespan) {
    r.placement.assign(graph.num_operators(), one.device);
    r.details["kept"] = "one-gpu";
    r.details["schedule_makespan_s"] = one.makespan;
    r.details["memory_fallbacks"] = 0;
    std::vector<double> memory(cluster.num_devices(), 0.0);
    memory[one.device] = graph.total_memory();
    r.details["device_memory_bytes"] = memory;
  } else {
    r.placement = std::move(s.placement);
    r.details["kept"] = "etf";
    r.details["schedule_makespan_s"] = s.makespan;
    r.details["memory_fallbacks"] = s.memory_fallbacks;
    r.details["device_memory_bytes"] = s.device_memory;
  }
  r.details["memory_limit_bytes"] = budget;
  if (method_ == BaechiMethod::Sct) r.details["favourite_children_on_parent_gpu"] = s.favourite_children_on_parent_gpu;
  return r;
}

OptionSchema<BaechiConfig> baechi_schema(BaechiMethod method) {
  OptionSchema<BaechiConfig> s;
  const Range fraction{0, 1, true, false};  // (0, 1]
  s.number("memory_fraction", &BaechiConfig::memory_fraction, "share of each GPU's memory the placer may fill",
           fraction, "0.5");
  s.flag("coplace", &BaechiConfig::coplace, "co-place an operator with its only consumer (Baechi's co-placement)");
  if (method == BaechiMethod::Topo)
    s.flag("uniform", &BaechiConfig::uniform,
           "fill each GPU up to total memory / #GPUs + the largest group, else up to its budget");
  if (method == BaechiMethod::Sct)
    s.number("threshold", &BaechiConfig::threshold, "an edge whose LP value is below it marks a favourite child",
             fraction, "0.1");
  return s;
}

namespace {

// The strategy class strategy_info builds: a Baechi of one method.
template <BaechiMethod M>
class BaechiOf : public Baechi {
 public:
  explicit BaechiOf(BaechiConfig config) : Baechi(M, config) {}
};

}  // namespace

StrategyInfo m_topo_strategy_info() {
  return strategy_info<BaechiOf<BaechiMethod::Topo>>(
      "m-topo", "Baechi m-TOPO: fill the GPUs one after another in topological order, under a memory limit",
      baechi_schema(BaechiMethod::Topo));
}

StrategyInfo m_etf_strategy_info() {
  return strategy_info<BaechiOf<BaechiMethod::Etf>>(
      "m-etf", "Baechi m-ETF: earliest-start-time list scheduling on the GPUs with room", baechi_schema(BaechiMethod::Etf));
}

StrategyInfo m_sct_strategy_info() {
  return strategy_info<BaechiOf<BaechiMethod::Sct>>(
      "m-sct", "Baechi m-SCT: m-ETF that keeps each operator's LP-chosen favourite child on its GPU",
      baechi_schema(BaechiMethod::Sct));
}

}  // namespace placesim
