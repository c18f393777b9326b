// The `placeto` strategy: the policy network places the (coarsened) graph; see placeto.h.
// Torch-free: parsing options and listing the strategy cost nothing; the policy (PlacetoPolicy)
// loads the LibTorch plugin when place() makes it or when a `policy` file is read.
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "placement/placeto/placeto.h"
#include "placement/placeto/placeto_policy.h"
#include "sim/errors.h"

namespace placesim {

namespace {

class Placeto : public Strategy {
 public:
  Placeto(PlacetoConfig config, std::string file, std::string policy_field)
      : config_(std::move(config)), file_(std::move(file)), policy_field_(std::move(policy_field)) {}

  PlacementResult place(const Graph& graph, const Cluster& cluster) override {
    PlacetoEnv env(graph, cluster, config_.env);
    const bool pretrained = !config_.policy.empty();
    PlacetoPolicy policy = pretrained ? PlacetoPolicy::load(config_.policy, file_, policy_field_)
                                      : PlacetoPolicy({cluster.num_devices(), config_.hidden, config_.message_passing_steps},
                                                      config_.seed);
    if (policy.config().num_devices != cluster.num_devices())
      throw InputError(file_, policy_field_,
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
    r.report["coarse_operators"] = env.num_nodes();
    r.report["steps"] = env.num_steps();
    r.report["episodes_trained_here"] = episodes;
    r.report["policy_episodes"] = policy.episodes_done();
    r.report["policy_latency_s"] = policy_latency;
    r.report["chosen"] = from_training ? "best state seen while training" : "policy episode";
    r.report["coarse_latency_s"] = env.latency(coarse);
    return r;
  }

 private:
  PlacetoConfig config_;
  std::string file_, policy_field_;
};

// A relative policy path is relative to the scenario file, like the scenario's other paths.
std::string resolve_policy_path(const std::string& policy, const std::string& scenario_file) {
  const std::filesystem::path p(policy);
  if (p.is_absolute() || scenario_file.empty() || !std::filesystem::is_regular_file(scenario_file)) return policy;
  const std::filesystem::path beside = std::filesystem::path(scenario_file).parent_path() / p;
  return std::filesystem::exists(beside) ? beside.string() : policy;
}

long bounded_integer(const YamlFields& options, const char* key, long fallback, long lo, long hi) {
  const long v = options.integer_or(key, fallback);
  if (v < lo || v > hi)
    throw InputError(options.file(), options.field(key), fmt::format("expected an integer in [{}, {}]", lo, hi));
  return v;
}

double positive_number(const YamlFields& options, const char* key, double fallback, bool allow_zero) {
  const double v = options.number_or(key, fallback);
  if (!(allow_zero ? v >= 0 : v > 0) || !std::isfinite(v))
    throw InputError(options.file(), options.field(key), allow_zero ? "expected a number >= 0" : "expected a number > 0");
  return v;
}

}  // namespace

StrategyInfo placeto_strategy_info() {
  return {"placeto",
          "Placeto (Addanki et al. 2019): a graph-embedding policy network visits the merge-and-colocate groups and "
          "moves each to a GPU; zero-shot from a trained policy file, fine-tuned, or trained on the graph (LibTorch)",
          "policy (none): policy file from `placesim placeto train`, relative to the scenario; episodes (4): training "
          "episodes on the graph when there is no policy; fine_tune_episodes (0): training episodes on the graph after "
          "loading the policy; seed (1); coarsen_target (32): op groups after merge-and-colocate; hidden (16) and "
          "message_passing_steps (3): network size when training here; learning_rate (0.01); entropy (0.02): entropy "
          "bonus at the start (both decay linearly to a tenth); memory_penalty (2): cost per unit of relative memory "
          "overflow; memory_threshold (1): usable fraction of GPU memory",
          [](const YamlFields& options) {
            options.allow_only({"policy", "episodes", "fine_tune_episodes", "seed", "coarsen_target", "hidden",
                                "message_passing_steps", "learning_rate", "entropy", "memory_penalty",
                                "memory_threshold"});
            PlacetoConfig cfg;
            cfg.env = placeto_env_config_from_options(options, cfg.env);
            cfg.episodes = static_cast<int>(bounded_integer(options, "episodes", cfg.episodes, 0, 1000000));
            cfg.fine_tune_episodes =
                static_cast<int>(bounded_integer(options, "fine_tune_episodes", cfg.fine_tune_episodes, 0, 1000000));
            cfg.seed = static_cast<std::uint64_t>(bounded_integer(options, "seed", 1, 0, 1L << 62));
            cfg.hidden = static_cast<int>(bounded_integer(options, "hidden", cfg.hidden, 1, 1024));
            cfg.message_passing_steps =
                static_cast<int>(bounded_integer(options, "message_passing_steps", cfg.message_passing_steps, 0, 64));
            cfg.learning_rate = positive_number(options, "learning_rate", cfg.learning_rate, false);
            cfg.entropy = positive_number(options, "entropy", cfg.entropy, true);
            std::string policy_field;
            if (options.has("policy")) {
              policy_field = options.field("policy");
              const std::string given = options.string("policy");
              if (given.empty()) throw InputError(options.file(), policy_field, "expected a policy file name");
              cfg.policy = resolve_policy_path(given, options.file());
              // Read it now, so a missing or broken file is reported when the scenario is loaded.
              PlacetoPolicy::load(cfg.policy, options.file(), policy_field);
            } else if (options.has("fine_tune_episodes")) {
              throw InputError(options.file(), options.field("fine_tune_episodes"),
                               "fine-tuning needs a `policy` file (without one, `episodes` trains on the graph)");
            }
            return std::make_unique<Placeto>(cfg, options.file(), policy_field);
          }};
}

}  // namespace placesim
