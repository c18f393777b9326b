#pragma once
// Placeto (Addanki et al., NeurIPS 2019) as two strategies over one MDP (placeto_env.h):
//
//  * placeto         the policy network (graph embedding + policy head, placeto_policy.h) places
//                    the graph zero-shot from a trained policy file, after optional fine-tuning on
//                    it, or trains from scratch on it. Needs LibTorch: registered only when the
//                    build has it (PLACESIM_HAVE_TORCH), which it loads only when it places a
//                    graph or reads a policy file (placeto_policy.h).
//  * placeto-greedy  the same episodes with a one-step lookahead instead of the network: each
//                    step puts its unit on the GPU that gives the lowest cost. No LibTorch.
#include <cstdint>
#include <string>
#include <string_view>

#include "placement/strategies/placeto/placeto_env.h"
#include "placement/framework/strategy.h"

namespace placesim {

// PlacetoEnvConfig (placeto_env.h) has no operator== of its own; the configs below compare it.
inline bool operator==(const PlacetoEnvConfig& a, const PlacetoEnvConfig& b) {
  return a.coarsen_target == b.coarsen_target && a.memory_penalty == b.memory_penalty &&
         a.memory_threshold == b.memory_threshold;
}

// The options both strategies share (coarsen_target, memory_penalty, memory_threshold), read into
// Config::env; defaults come from Config{}.env (placeto's coarsen_target is 32, placeto-greedy's 256).
template <class Config>
void add_placeto_env_options(OptionSchema<Config>& s) {
  const PlacetoEnvConfig d = Config{}.env;
  // The policy embeds every node at every step and pools over node sets: keep the graph small.
  s.add({"coarsen_target", "count", "op groups after merge-and-colocate", std::to_string(d.coarsen_target), {},
         d.coarsen_target == 16 ? "8" : "16"},
        [](const YamlFields& f, std::string_view key, Config& c) {
          c.env.coarsen_target = static_cast<int>(parse_count_option(f, key, 1, 2048));
        });
  s.add({"memory_penalty", "number", "cost per unit of relative memory overflow", default_text_number(d.memory_penalty),
         {}, "0"},
        [](const YamlFields& f, std::string_view key, Config& c) {
          c.env.memory_penalty = parse_number_option(f, key, Range::non_negative());
        });
  s.add({"memory_threshold", "number", "usable fraction of GPU memory", default_text_number(d.memory_threshold), {},
         "0.5"},
        [](const YamlFields& f, std::string_view key, Config& c) {
          c.env.memory_threshold = parse_number_option(f, key, Range{0, 1, true, false});
        });
}

struct PlacetoGreedyConfig {
  // 256 groups: at 64, lowest-cost-first merging leaves groups too coarse to split the zoo's
  // BERT-base, FNet-base (evaluator: equal to single-device) or Inception-v3 (-0.7%); at 256 every
  // zoo model gains 2.5-32% over single-device on 4 nvlink-servers GPUs, for well under a second.
  PlacetoEnvConfig env = {.coarsen_target = 256};
  int passes = 1;  // sweeps over the steps; the first starts from every unit on GPU 0
  bool operator==(const PlacetoGreedyConfig&) const = default;
};

class PlacetoGreedy : public Strategy {
 public:
  explicit PlacetoGreedy(PlacetoGreedyConfig config = {}) : Strategy("placeto-greedy"), config_(config) {}
  const PlacetoGreedyConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  PlacetoGreedyConfig config_;
};

OptionSchema<PlacetoGreedyConfig> placeto_greedy_schema();
StrategyInfo placeto_greedy_strategy_info();

// Options of the `placeto` strategy (the network's own sizes come from the policy file, or
// from `hidden` and `message_passing_steps` when training from scratch).
// Defaults are cheap (the typed strategy suite runs every strategy 28 times): an episode costs
// about 16 ms of CPU at 32 groups and 16 hidden units, 60 ms at 64 groups (reference BLAS).
struct PlacetoConfig {
  PlacetoEnvConfig env = {.coarsen_target = 32};
  std::string policy;          // policy file written by `placesim placeto train`; empty: train here
  // Where `policy` was given (scenario file, field), for errors about the file; set with it.
  std::string policy_file, policy_field;
  int episodes = 4;            // training episodes on the graph when there is no policy file
  int fine_tune_episodes = 0;  // training episodes on the graph after loading the policy
  // What place() returns: the policy's own episode (most likely GPU at every step), or the best
  // state seen while training or fine-tuning on the graph when that one is better.
  std::uint64_t seed = 1;
  int hidden = 16;
  int message_passing_steps = 3;
  double learning_rate = 0.01;
  double entropy = 0.02;
  bool operator==(const PlacetoConfig&) const = default;
};

// The keys of `placeto`. Parsing `policy` resolves it against the scenario's folder and reads the
// file (so a missing or broken one is reported when the scenario is loaded).
OptionSchema<PlacetoConfig> placeto_schema();
// Registered only when the build has LibTorch (PLACESIM_HAVE_TORCH).
StrategyInfo placeto_strategy_info();

}  // namespace placesim
