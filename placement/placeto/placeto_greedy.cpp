#include <fmt/format.h>

#include "placement/placeto/placeto.h"
#include "sim/errors.h"

namespace placesim {

PlacetoEnvConfig placeto_env_config_from_options(const YamlFields& options, const PlacetoEnvConfig& defaults) {
  PlacetoEnvConfig env = defaults;
  const long target = options.integer_or("coarsen_target", defaults.coarsen_target);
  // The policy embeds every node at every step and pools over node sets: keep the graph small.
  if (target < 1 || target > 2048)
    throw InputError(options.file(), options.field("coarsen_target"), "expected an integer in [1, 2048]");
  env.coarsen_target = static_cast<int>(target);
  env.memory_penalty = options.number_or("memory_penalty", defaults.memory_penalty);
  if (!(env.memory_penalty >= 0))
    throw InputError(options.file(), options.field("memory_penalty"), "expected a number >= 0");
  env.memory_threshold = options.number_or("memory_threshold", defaults.memory_threshold);
  if (!(env.memory_threshold > 0 && env.memory_threshold <= 1))
    throw InputError(options.file(), options.field("memory_threshold"), "expected a fraction in (0, 1]");
  return env;
}

PlacementResult PlacetoGreedy::place(const Graph& graph, const Cluster& cluster) {
  PlacetoEnv env(graph, cluster, config_.env);
  const std::vector<DeviceId> coarse = placeto_greedy_episode(env, config_.passes);
  PlacementResult r;
  r.placement = env.expand(coarse);
  r.report["coarse_operators"] = env.num_nodes();
  r.report["steps"] = env.num_steps();
  r.report["coarse_latency_s"] = env.latency(coarse);
  r.report["cost"] = env.cost(coarse);
  return r;
}

StrategyInfo placeto_greedy_strategy_info() {
  return {"placeto-greedy",
          "Placeto's episode (merge-and-colocate groups visited in topological order) with a one-step lookahead on the "
          "evaluator instead of the policy network",
          "coarsen_target (64): op groups after merge-and-colocate; passes (1): sweeps over the groups; "
          "memory_penalty (2): cost per unit of relative memory overflow; memory_threshold (1): usable fraction of GPU "
          "memory",
          [](const YamlFields& options) {
            options.allow_only({"coarsen_target", "passes", "memory_penalty", "memory_threshold"});
            PlacetoGreedyConfig cfg;
            cfg.env = placeto_env_config_from_options(options, cfg.env);
            const long passes = options.integer_or("passes", cfg.passes);
            if (passes < 1 || passes > 100)
              throw InputError(options.file(), options.field("passes"), "expected an integer in [1, 100]");
            cfg.passes = static_cast<int>(passes);
            return std::make_unique<PlacetoGreedy>(cfg);
          }};
}

}  // namespace placesim
