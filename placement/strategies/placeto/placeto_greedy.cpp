#include "placement/strategies/placeto/placeto.h"

namespace placesim {

PlacementResult PlacetoGreedy::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  PlacetoEnv env(graph, cluster, config_.env, common_options().cost_model);
  const std::vector<DeviceId> coarse = placeto_greedy_episode(env, config_.passes);
  PlacementResult r;
  r.placement = env.expand(coarse);
  r.details["coarse_operators"] = env.num_nodes();
  r.details["steps"] = env.num_steps();
  r.details["coarse_latency_s"] = env.latency(coarse);
  r.details["cost"] = env.cost(coarse);
  return r;
}

OptionSchema<PlacetoGreedyConfig> placeto_greedy_schema() {
  OptionSchema<PlacetoGreedyConfig> s;
  add_placeto_env_options(s);
  s.count("passes", &PlacetoGreedyConfig::passes, "sweeps over the groups", 1, 100, "2");
  return s;
}

StrategyInfo placeto_greedy_strategy_info() {
  return strategy_info<PlacetoGreedy>(
      "placeto-greedy",
      "Placeto's episode (merge-and-colocate groups visited in topological order) with a one-step lookahead on the "
      "cost model instead of the policy network",
      placeto_greedy_schema(), {.searches = true, .portfolio = PortfolioUse::AfterIt});
}

}  // namespace placesim
