#pragma once
// Placeto's policy (section 2.2) and its REINFORCE training (appendix A.1, A.7), behind a
// torch-free interface: only placement/strategies/placeto/*_torch.cpp include LibTorch, and those files make
// the plugin module placesim_torch, built only when PLACESIM_HAVE_TORCH is defined. The first
// PlacetoPolicy made or loaded in a process loads the plugin (and LibTorch with it, ~0.6 s) from
// beside the executable or from lib/placesim when installed (sim/config/data_dir.h); the environment
// variable PLACESIM_TORCH_PLUGIN overrides its path. When it
// cannot be loaded (or the build has no LibTorch), making a policy throws an InputError naming the
// plugin's path and why.
//
// Network, per state of an episode (raw features x_v of every node, placeto_env.h), H hidden units:
//   h_v = act(W_in x_v)                                                     (H)
//   top-down, k times:  t_v <- t_v + act(g_td(sum over parents u of act(f_td(t_u))))   (shared weights)
//   bottom-up, k times: b_v <- b_v + act(g_bu(sum over children u of act(f_bu(b_u))))  (shared weights)
//   z_v = [t_v, b_v]                                                        (2H)
//   for the current node c and each set S of {nodes reaching c, nodes c reaches, the others}:
//     s_S = act(h_S((1/|V|) sum over u in S of act(l_S(z_u))))    (H; 1/|V|: one scale for any size)
//   pi(. | state) = softmax(W_2 act(W_1 [z_c, s_anc, s_desc, s_par]))   over the GPUs
// f, g, l, h are single-layer networks (appendix A.7); act is a leaky ReLU (slope 0.1) rather than
// the paper's ReLU, whose units died within a few Adam steps in our tests. The residual update
// keeps a node's own features through the k rounds.
//
// Training: REINFORCE with intermediate rewards r_t = R(p_t) - R(p_{t+1}), so the return from step
// t is R(p_t) - R(p_T); the baseline of step t is the mean return at step t over the last
// `baseline_window` episodes of the same graph (appendix A.7); an entropy bonus decays linearly
// from `entropy` to `entropy_final`, the Adam learning rate from `learning_rate` to
// `learning_rate_final`, both over the policy's whole life (episode / (episodes - 1)), so
// fine-tuning a policy trained for N episodes runs near the final rates. One Adam step per episode
// (the loss is the mean over the steps).
// Episodes are sampled from a generator seeded by (seed, episode), so a run resumed from a
// checkpoint makes exactly the choices the uninterrupted run would have made.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "placement/strategies/placeto/placeto_env.h"

namespace placesim {

struct PlacetoNetConfig {
  int num_devices = 2;
  int hidden = 16;
  int message_passing_steps = 3;  // k
};

struct PlacetoTrainConfig {
  int episodes = 100;  // total: training stops when the policy has seen this many episodes
  double learning_rate = 0.01;
  double learning_rate_final = 0.001;
  double entropy = 0.02;
  double entropy_final = 0.001;
  int baseline_window = 10;   // past episodes per graph in the step baselines
  std::uint64_t seed = 1;
  int checkpoint_every = 0;   // episodes between checkpoints; 0: none
  std::string checkpoint_path;
};

struct PlacetoEpisodeLog {
  int episode = 0;              // 1-based, counted over the policy's whole life
  int graph = 0;                // index into the environments
  double reward = 0;            // R(p_0) - R(p_T): the episode's summed reward
  double mean_reward = 0;       // over the last (up to) 10 episodes
  double latency = 0;           // of the episode's final placement, seconds
  double best_latency = 0;      // best seen on this graph so far (any state of any episode)
};

// The best placement seen on one graph while training (any state of any episode, by cost).
struct PlacetoBest {
  std::vector<DeviceId> placement;  // coarse
  double cost = 0;
  double latency = 0;
};

class PlacetoPolicyModel;  // placeto_plugin.h: what the plugin implements

class PlacetoPolicy {
 public:
  // A fresh network; weights initialised from `seed`.
  PlacetoPolicy(const PlacetoNetConfig& config, std::uint64_t seed);
  // Reads a policy file (a checkpoint: weights, optimizer state, episode count, baselines).
  // Throws InputError naming `file` and `field` when it cannot be read.
  static PlacetoPolicy load(const std::string& path, const std::string& file = "", const std::string& field = "");
  PlacetoPolicy(PlacetoPolicy&&) noexcept;
  PlacetoPolicy& operator=(PlacetoPolicy&&) noexcept;
  ~PlacetoPolicy();

  // Writes the policy file atomically (a temporary file renamed over `path`).
  void save(const std::string& path) const;

  const PlacetoNetConfig& config() const;
  int episodes_done() const;

  // Trains until config.episodes episodes are done, sampling a graph per episode. `best`, if
  // given, has one entry per environment and keeps the best placement seen there.
  void train(std::span<PlacetoEnv* const> envs, const PlacetoTrainConfig& config,
             const std::function<void(const PlacetoEpisodeLog&)>& on_episode = {},
             std::vector<PlacetoBest>* best = nullptr);

  // One episode taking the most likely GPU at every step (no sampling); the coarse placement.
  std::vector<DeviceId> place(PlacetoEnv& env) const;
  // The same episode, sampling every action from the policy with `seed`.
  std::vector<DeviceId> sample(PlacetoEnv& env, std::uint64_t seed) const;

  // All weights, flattened (for tests comparing two policies).
  std::vector<float> flat_parameters() const;
  // Adam's step count (for tests checking that optimizer state survives a checkpoint).
  std::int64_t optimizer_steps() const;

 private:
  explicit PlacetoPolicy(std::unique_ptr<PlacetoPolicyModel> model);
  std::unique_ptr<PlacetoPolicyModel> model_;
};

}  // namespace placesim
