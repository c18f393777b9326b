#include "placement/portfolio.h"

#include <algorithm>
#include <memory>
#include <yaml-cpp/yaml.h>

#include "sim/evaluator.h"
#include "sim/yaml_fields.h"

namespace placesim {

namespace {
// Called by name through the registry: the strategies that call the portfolio do not know them.
// m-TOPO first: the memory fill that finds a placement that fits whenever a simple one exists.
constexpr const char* kPortfolio[] = {"m-topo", "single-device", "heft", "m-etf", "metis"};
}  // namespace

bool fits_memory(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement) {
  const std::vector<double> mem = device_memory(graph, placement, cluster.num_devices());
  for (DeviceId d = 0; d < cluster.num_devices(); ++d)
    if (mem[d] > cluster.device(d).memory_bytes) return false;
  return true;
}

std::vector<PortfolioCandidate> run_portfolio(const Graph& graph, const Cluster& cluster, const Deadline& deadline,
                                              CostModel& cost, const std::string& caller, nlohmann::json& report,
                                              bool first_even_out_of_time) {
  std::vector<PortfolioCandidate> out;
  for (const char* name : kPortfolio) {
    const bool first = name == kPortfolio[0];
    const StrategyInfo* info = nullptr;
    for (const StrategyInfo& i : strategy_registry())
      if (i.name == name) info = &i;
    if (!info) continue;
    if (deadline.expired() && !(first && first_even_out_of_time)) {
      report[name] = "skipped: out of time";
      continue;
    }
    try {
      std::unique_ptr<Strategy> s = info->make(YamlFields(YAML::Node(YAML::NodeType::Map), caller, "portfolio"));
      if (deadline.bounded() && !first) s->set_time_limit(std::max(1e-3, deadline.remaining()));
      PortfolioCandidate c;
      c.name = name;
      c.placement = s->place(graph, cluster).placement;
      c.latency = cost.latency(c.placement);
      c.fits = fits_memory(graph, cluster, c.placement);
      report[name] = c.fits ? nlohmann::json(c.latency) : nlohmann::json("out of memory");
      out.push_back(std::move(c));
    } catch (const std::exception& e) {
      report[name] = std::string("failed: ") + e.what();
    }
  }
  return out;
}

const PortfolioCandidate* best_fitting(std::span<const PortfolioCandidate> candidates) {
  const PortfolioCandidate* best = nullptr;
  for (const PortfolioCandidate& c : candidates)
    if (c.fits && (!best || c.latency < best->latency)) best = &c;
  return best;
}

}  // namespace placesim
