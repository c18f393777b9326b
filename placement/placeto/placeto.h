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

#include "placement/placeto/placeto_env.h"
#include "placement/strategy.h"

namespace placesim {

struct PlacetoGreedyConfig {
  PlacetoEnvConfig env;
  int passes = 1;  // sweeps over the steps; the first starts from every unit on GPU 0
};

class PlacetoGreedy : public Strategy {
 public:
  explicit PlacetoGreedy(PlacetoGreedyConfig config) : config_(config) {}
  PlacementResult place(const Graph& graph, const Cluster& cluster) override;

 private:
  PlacetoGreedyConfig config_;
};

StrategyInfo placeto_greedy_strategy_info();

// Options of the `placeto` strategy (the network's own sizes come from the policy file, or
// from `hidden` and `message_passing_steps` when training from scratch).
// Defaults are cheap (the typed strategy suite runs every strategy 28 times): an episode costs
// about 16 ms of CPU at 32 groups and 16 hidden units, 60 ms at 64 groups (reference BLAS).
struct PlacetoConfig {
  PlacetoEnvConfig env = {.coarsen_target = 32};
  std::string policy;          // policy file written by `placesim placeto train`; empty: train here
  int episodes = 4;            // training episodes on the graph when there is no policy file
  int fine_tune_episodes = 0;  // training episodes on the graph after loading the policy
  // What place() returns: the policy's own episode (most likely GPU at every step), or the best
  // state seen while training or fine-tuning on the graph when that one is better.
  std::uint64_t seed = 1;
  int hidden = 16;
  int message_passing_steps = 3;
  double learning_rate = 0.01;
  double entropy = 0.02;
};

// Registered only when the build has LibTorch (PLACESIM_HAVE_TORCH).
StrategyInfo placeto_strategy_info();

// Reads the options shared by both strategies (coarsen_target, memory_penalty,
// memory_threshold); errors name options.<key>.
PlacetoEnvConfig placeto_env_config_from_options(const YamlFields& options, const PlacetoEnvConfig& defaults);

}  // namespace placesim
