// The `placeto` strategy: the policy network places the (coarsened) graph; see placeto.h.
// Torch-free: parsing options and listing the strategy cost nothing; the policy (PlacetoPolicy)
// loads the LibTorch plugin when place() makes it or when a `policy` file is read.
#include <filesystem>
#include <fmt/format.h>

#include "placement/strategies/placeto/placeto.h"
#include "placement/strategies/placeto/placeto_policy.h"
#include "sim/core/errors.h"

namespace placesim {

namespace {

class Placeto : public Strategy {
 public:
  explicit Placeto(PlacetoConfig config) : Strategy("placeto"), config_(std::move(config)) {}
  const PlacetoConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) override {
    PlacetoEnv env(graph, cluster, config_.env, common_options().cost_model);
    const bool pretrained = !config_.policy.empty();
    PlacetoPolicy policy = pretrained ? PlacetoPolicy::load(config_.policy, config_.policy_file, config_.policy_field)
                                      : PlacetoPolicy({cluster.num_devices(), config_.hidden, config_.message_passing_steps},
                                                      config_.seed);
    if (policy.config().num_devices != cluster.num_devices())
      throw InputError(config_.policy_file, config_.policy_field,
                       fmt::format("the policy places on {} GPUs but the cluster has {}", policy.config().num_devices,
                                   cluster.num_devices()));
    const int episodes = pretrained ? config_.fine_tune_episodes : config_.episodes;
    std::vector<PlacetoBest> best;
    if (episodes > 0) {
      PlacetoTrainConfig train;
      train.episodes = policy.episodes_done() + episodes;
      train.learning_rate = config_.learning_rate;
      train.learning_rate_final = config_.learning_rate / 10;
      train.entropy = config_.entropy;
      train.entropy_final = config_.entropy / 10;
      train.seed = config_.seed;
      PlacetoEnv* envs[] = {&env};
      policy.train(envs, train, {}, &best);
    }
    // The policy's own episode (most likely GPU at every step); training may have seen better.
    std::vector<DeviceId> coarse = policy.place(env);
    const double policy_cost = env.cost(coarse);
    const double policy_latency = env.latency(coarse);
    bool from_training = false;
    if (!best.empty() && !best[0].placement.empty() && best[0].cost < policy_cost) {
      coarse = best[0].placement;
      from_training = true;
    }
    PlacementResult r;
    r.placement = env.expand(coarse);
    r.details["coarse_operators"] = env.num_nodes();
    r.details["steps"] = env.num_steps();
    r.details["episodes_trained_here"] = episodes;
    r.details["policy_episodes"] = policy.episodes_done();
    r.details["policy_latency_s"] = policy_latency;
    r.details["chosen"] = from_training ? "best state seen while training" : "policy episode";
    r.details["coarse_latency_s"] = env.latency(coarse);
    return r;
  }

  PlacetoConfig config_;
};

// A relative policy path is relative to the scenario file, like the scenario's other paths.
std::string resolve_policy_path(const std::string& policy, const std::string& scenario_file) {
  const std::filesystem::path p(policy);
  if (p.is_absolute() || scenario_file.empty() || !std::filesystem::is_regular_file(scenario_file)) return policy;
  const std::filesystem::path beside = std::filesystem::path(scenario_file).parent_path() / p;
  return std::filesystem::exists(beside) ? beside.string() : policy;
}

}  // namespace

OptionSchema<PlacetoConfig> placeto_schema() {
  OptionSchema<PlacetoConfig> s;
  s.add({"policy", "text", "policy file from `placesim placeto train`, relative to the scenario", "unset", {},
         "policy.pt"},
        [](const YamlFields& f, std::string_view key, PlacetoConfig& c) {
          const std::string given = f.string(key);
          if (given.empty()) throw_field_error(f, key, "expected a policy file name");
          c.policy_file = f.file();
          c.policy_field = f.field(key);
          c.policy = resolve_policy_path(given, f.file());
          // Read it now, so a missing or broken file is reported when the scenario is loaded.
          PlacetoPolicy::load(c.policy, c.policy_file, c.policy_field);
        });
  s.count("episodes", &PlacetoConfig::episodes, "training episodes on the graph when there is no policy", 0, 1'000'000,
          "2");
  s.count("fine_tune_episodes", &PlacetoConfig::fine_tune_episodes,
          "training episodes on the graph after loading the policy", 0, 1'000'000, "2");
  s.count("seed", &PlacetoConfig::seed, "random seed (network initialisation and training)", 0, 1L << 62, "7");
  add_placeto_env_options(s);
  s.count("hidden", &PlacetoConfig::hidden, "network width when training here", 1, 1024, "8");
  s.count("message_passing_steps", &PlacetoConfig::message_passing_steps,
          "message-passing rounds of the graph embedding when training here", 0, 64, "2");
  s.number("learning_rate", &PlacetoConfig::learning_rate, "learning rate at the start (decays linearly to a tenth)",
           Range::positive(), "0.001");
  s.number("entropy", &PlacetoConfig::entropy, "entropy bonus at the start (decays linearly to a tenth)",
           Range::non_negative(), "0");
  s.check([](const YamlFields& f, PlacetoConfig& c) {
    if (c.policy.empty() && f.has("fine_tune_episodes"))
      throw_field_error(f, "fine_tune_episodes",
                        "fine-tuning needs a `policy` file (without one, `episodes` trains on the graph)");
  });
  return s;
}

StrategyInfo placeto_strategy_info() {
  return strategy_info<Placeto>(
      "placeto",
      "Placeto (Addanki et al. 2019): a graph-embedding policy network visits the merge-and-colocate groups and moves "
      "each to a GPU; zero-shot from a trained policy file, fine-tuned, or trained on the graph (LibTorch)",
      placeto_schema(), {.searches = true, .portfolio = PortfolioUse::AfterIt});
}

}  // namespace placesim
