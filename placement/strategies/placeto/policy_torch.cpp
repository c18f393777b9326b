// Placeto's policy network and REINFORCE training in LibTorch (see placeto_policy.h): the
// plugin module placesim_torch, loaded by placeto_policy.cpp through placesim_torch_plugin().
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <random>

#include "placement/strategies/placeto/placeto_plugin.h"
#include "sim/core/errors.h"

namespace placesim {

namespace {

using torch::nn::Linear;

// The activation of every layer. The paper uses ReLU; here plain ReLU units died within a few
// Adam steps on small graphs (the output stopped depending on the state, so nothing could be
// learned any more), so a leaky ReLU keeps a gradient everywhere.
torch::Tensor act(const torch::Tensor& x) { return torch::leaky_relu(x, 0.1); }

// Format of the policy file; bumped when the layout changes.
constexpr std::int64_t kPolicyFileVersion = 1;

struct PlacetoNetImpl : torch::nn::Module {
  PlacetoNetImpl(std::int64_t features, std::int64_t devices, std::int64_t hidden, std::int64_t steps)
      : message_passing_steps(steps) {
    input = register_module("input", Linear(features, hidden));
    td_f = register_module("td_f", Linear(hidden, hidden));
    td_g = register_module("td_g", Linear(hidden, hidden));
    bu_f = register_module("bu_f", Linear(hidden, hidden));
    bu_g = register_module("bu_g", Linear(hidden, hidden));
    for (int i = 0; i < 3; ++i) {
      // Pool summaries are `hidden` wide (not 2 x hidden like z): l_i runs on every node of every
      // state, the largest product of the network, and CPU time matters here.
      pool_l[i] = register_module(fmt::format("pool{}_l", i), Linear(2 * hidden, hidden));
      pool_h[i] = register_module(fmt::format("pool{}_h", i), Linear(hidden, hidden));
    }
    head1 = register_module("head1", Linear(5 * hidden, hidden));
    head2 = register_module("head2", Linear(hidden, devices));
  }

  // x: [B, N, F] raw features of B states of one graph; parents/children: sparse [N, N]
  // adjacency (row v has a 1 at each parent/child of v); sets: [3, N, N], row c of set i the
  // scaled indicator of the ancestors / descendants / parallel nodes of c; current: [B] int64.
  // Returns log-probabilities over the GPUs, [B, D].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& parents, const torch::Tensor& children,
                        const torch::Tensor& sets, const torch::Tensor& current) {
    const torch::Tensor h = act(input->forward(x));
    const torch::Tensor z = torch::cat({propagate(h, parents, td_f, td_g), propagate(h, children, bu_f, bu_g)}, -1);
    const std::int64_t batch = z.size(0), width = z.size(2);
    std::vector<torch::Tensor> parts;
    parts.push_back(z.gather(1, current.view({batch, 1, 1}).expand({batch, 1, width})).squeeze(1));
    for (int i = 0; i < 3; ++i) {
      const torch::Tensor mask = sets[i].index_select(0, current);  // [B, N]
      const torch::Tensor pooled = torch::bmm(mask.unsqueeze(1), act(pool_l[i]->forward(z))).squeeze(1);
      parts.push_back(act(pool_h[i]->forward(pooled)));
    }
    const torch::Tensor y = act(head1->forward(torch::cat(parts, -1)));
    return torch::log_softmax(head2->forward(y), -1);
  }

  // k rounds of t_v <- t_v + g(sum over neighbours u of f(t_u)), with shared weights. The sparse
  // product takes all B states at once: [N, N] x [N, B * H].
  torch::Tensor propagate(const torch::Tensor& h, const torch::Tensor& adjacency, Linear& f, Linear& g) const {
    const std::int64_t batch = h.size(0), nodes = h.size(1), hidden = h.size(2);
    torch::Tensor t = h;
    for (std::int64_t k = 0; k < message_passing_steps; ++k) {
      const torch::Tensor messages = act(f->forward(t)).transpose(0, 1).reshape({nodes, batch * hidden});
      const torch::Tensor summed = torch::mm(adjacency, messages).reshape({nodes, batch, hidden}).transpose(0, 1);
      t = t + act(g->forward(summed));
    }
    return t;
  }

  std::int64_t message_passing_steps;
  Linear input{nullptr}, td_f{nullptr}, td_g{nullptr}, bu_f{nullptr}, bu_g{nullptr};
  Linear pool_l[3] = {Linear{nullptr}, Linear{nullptr}, Linear{nullptr}};
  Linear pool_h[3] = {Linear{nullptr}, Linear{nullptr}, Linear{nullptr}};
  Linear head1{nullptr}, head2{nullptr};
};
TORCH_MODULE(PlacetoNet);

// The graph structure of an environment as tensors, built once per call.
struct GraphTensors {
  torch::Tensor parents, children, sets;
};

GraphTensors graph_tensors(const PlacetoEnv& env) {
  const Graph& g = env.coarse();
  const std::int64_t n = env.num_nodes();
  std::vector<std::int64_t> rows, cols;
  for (const Tensor& t : g.tensors()) {
    rows.push_back(t.dst);  // row dst, column src: the parents of dst
    cols.push_back(t.src);
  }
  const auto edges = static_cast<std::int64_t>(rows.size());
  auto adjacency = [&](const std::vector<std::int64_t>& r, const std::vector<std::int64_t>& c) {
    torch::Tensor index = torch::empty({2, edges}, torch::kInt64);
    for (std::int64_t e = 0; e < edges; ++e) {
      index[0][e] = r[e];
      index[1][e] = c[e];
    }
    return torch::sparse_coo_tensor(index, torch::ones({edges}), {n, n}).coalesce();
  };
  GraphTensors out;
  out.parents = adjacency(rows, cols);
  out.children = adjacency(cols, rows);
  std::vector<float> sets(static_cast<std::size_t>(3 * n * n), 0.0f);
  const float scale = 1.0f / static_cast<float>(std::max<std::int64_t>(n, 1));
  for (OpId c = 0; c < n; ++c)
    for (OpId u = 0; u < n; ++u) {
      if (u == c) continue;
      const int set = env.reaches(u, c) ? 0 : env.reaches(c, u) ? 1 : 2;
      sets[static_cast<std::size_t>((set * n + c) * n + u)] = scale;
    }
  out.sets = torch::from_blob(sets.data(), {3, n, n}, torch::kFloat32).clone();
  return out;
}

std::uint64_t episode_seed(std::uint64_t seed, std::uint64_t episode) {
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL ^ (episode + 0x632BE59BD9B4E019ULL);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  return x ^ (x >> 29);
}

// One episode's trajectory.
struct Rollout {
  std::vector<float> features;      // [T, N, F]
  std::vector<std::int64_t> current, actions;
  std::vector<double> costs;        // R(p_0) ... R(p_T)
  std::vector<DeviceId> placement;  // final
  PlacetoBest best;                 // best state of the episode
};

torch::Tensor scalar_tensor(std::int64_t v) { return torch::full({1}, v, torch::kInt64); }
std::int64_t read_scalar(torch::serialize::InputArchive& archive, const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<std::int64_t>();
}

class TorchPolicyModel final : public PlacetoPolicyModel {
 public:
  TorchPolicyModel(const PlacetoNetConfig& c, std::uint64_t seed) : config_(c) {
    torch::set_num_threads(1);  // the machine is shared; the matrices are small anyway
    torch::manual_seed(seed);
    net_ = PlacetoNet(PlacetoEnv::num_features(c.num_devices), c.num_devices, c.hidden, c.message_passing_steps);
    optimizer_ = std::make_unique<torch::optim::Adam>(net_->parameters(), torch::optim::AdamOptions(0.01));
  }
  static std::unique_ptr<PlacetoPolicyModel> load(const std::string& path, const std::string& file,
                                                  const std::string& field);

  void save(const std::string& path) const override;
  const PlacetoNetConfig& config() const override { return config_; }
  int episodes_done() const override { return episodes_done_; }
  void train(std::span<PlacetoEnv* const> envs, const PlacetoTrainConfig& config,
             const std::function<void(const PlacetoEpisodeLog&)>& on_episode,
             std::vector<PlacetoBest>* best) override;
  std::vector<DeviceId> place(PlacetoEnv& env) const override {
    return rollout(env, graph_tensors(env), nullptr, false).placement;
  }
  std::vector<DeviceId> sample(PlacetoEnv& env, std::uint64_t seed) const override {
    std::mt19937_64 rng(seed);
    return rollout(env, graph_tensors(env), &rng, false).placement;
  }
  std::vector<float> flat_parameters() const override;
  std::int64_t optimizer_steps() const override;

 private:
  PlacetoNetConfig config_;
  // mutable: a forward pass without gradients (place, sample) leaves the weights as they are.
  mutable PlacetoNet net_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  int episodes_done_ = 0;
  // Per graph of the last training set: the returns of its recent episodes, for the baselines.
  std::vector<std::deque<std::vector<double>>> returns_;

  // Plays one episode; `rng` samples actions, or nullptr takes the most likely ones.
  Rollout rollout(PlacetoEnv& env, const GraphTensors& gt, std::mt19937_64* rng, bool keep_features) const {
    torch::NoGradGuard no_grad;
    const int n = env.num_nodes(), d = env.num_devices(), f = PlacetoEnv::num_features(d);
    Rollout r;
    r.placement = env.initial_placement();
    r.costs.push_back(env.cost(r.placement));
    r.best = {r.placement, r.costs.back(), 0};
    std::vector<float> state;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int t = 0; t < env.num_steps(); ++t) {
      env.features(r.placement, t, state);
      const torch::Tensor x = torch::from_blob(state.data(), {1, n, f}, torch::kFloat32);
      const torch::Tensor cur = torch::full({1}, static_cast<std::int64_t>(env.step_node(t)), torch::kInt64);
      const torch::Tensor logp = net_->forward(x, gt.parents, gt.children, gt.sets, cur);
      const float* lp = logp.data_ptr<float>();
      DeviceId action = 0;
      if (rng) {
        const double u = unit(*rng);
        double acc = 0;
        action = d - 1;
        for (DeviceId k = 0; k < d; ++k) {
          acc += std::exp(static_cast<double>(lp[k]));
          if (u < acc) {
            action = k;
            break;
          }
        }
      } else {
        for (DeviceId k = 1; k < d; ++k)
          if (lp[k] > lp[action]) action = k;
      }
      if (keep_features) r.features.insert(r.features.end(), state.begin(), state.end());
      r.current.push_back(env.step_node(t));
      r.actions.push_back(action);
      env.apply(t, action, r.placement);
      r.costs.push_back(env.cost(r.placement));
      if (r.costs.back() < r.best.cost) r.best = {r.placement, r.costs.back(), 0};
    }
    r.best.latency = env.latency(r.best.placement);
    return r;
  }
};

void TorchPolicyModel::save(const std::string& path) const {
  torch::serialize::OutputArchive archive;
  archive.write("placeto_version", scalar_tensor(kPolicyFileVersion));
  archive.write("placeto_devices", scalar_tensor(config_.num_devices));
  archive.write("placeto_hidden", scalar_tensor(config_.hidden));
  archive.write("placeto_message_passing_steps", scalar_tensor(config_.message_passing_steps));
  archive.write("placeto_episodes_done", scalar_tensor(episodes_done_));
  torch::serialize::OutputArchive net_archive, optimizer_archive, baseline_archive;
  net_->save(net_archive);
  optimizer_->save(optimizer_archive);
  archive.write("net", net_archive);
  archive.write("optimizer", optimizer_archive);
  // Baselines: per graph, its recent returns as one [episodes, steps] tensor of doubles.
  archive.write("placeto_baseline_graphs", scalar_tensor(static_cast<std::int64_t>(returns_.size())));
  for (std::size_t gi = 0; gi < returns_.size(); ++gi) {
    const auto& history = returns_[gi];
    const std::int64_t steps = history.empty() ? 0 : static_cast<std::int64_t>(history.front().size());
    torch::Tensor t = torch::zeros({static_cast<std::int64_t>(history.size()), steps}, torch::kFloat64);
    for (std::size_t e = 0; e < history.size(); ++e)
      for (std::int64_t s = 0; s < steps; ++s) t[e][s] = history[e][s];
    baseline_archive.write(std::to_string(gi), t);
  }
  archive.write("baselines", baseline_archive);
  const std::string tmp = path + ".tmp";
  try {
    archive.save_to(tmp);
    std::filesystem::rename(tmp, path);
  } catch (const std::exception& e) {
    throw InputError(path, "", std::string("cannot write the policy file: ") + e.what());
  }
}

std::unique_ptr<PlacetoPolicyModel> TorchPolicyModel::load(const std::string& path, const std::string& file,
                                                           const std::string& field) {
  const std::string where = file.empty() ? path : file;  // PlacetoPolicy::load checked that `path` exists
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    const std::int64_t version = read_scalar(archive, "placeto_version");
    if (version != kPolicyFileVersion)
      throw InputError(where, field, fmt::format("policy file '{}' has version {}, expected {}", path, version,
                                                 kPolicyFileVersion));
    PlacetoNetConfig config;
    config.num_devices = static_cast<int>(read_scalar(archive, "placeto_devices"));
    config.hidden = static_cast<int>(read_scalar(archive, "placeto_hidden"));
    config.message_passing_steps = static_cast<int>(read_scalar(archive, "placeto_message_passing_steps"));
    auto impl = std::make_unique<TorchPolicyModel>(config, 0);
    impl->episodes_done_ = static_cast<int>(read_scalar(archive, "placeto_episodes_done"));
    torch::serialize::InputArchive net_archive, optimizer_archive, baseline_archive;
    archive.read("net", net_archive);
    impl->net_->load(net_archive);
    archive.read("optimizer", optimizer_archive);
    impl->optimizer_->load(optimizer_archive);
    archive.read("baselines", baseline_archive);
    const std::int64_t graphs = read_scalar(archive, "placeto_baseline_graphs");
    impl->returns_.resize(graphs);
    for (std::int64_t gi = 0; gi < graphs; ++gi) {
      torch::Tensor t;
      baseline_archive.read(std::to_string(gi), t);
      for (std::int64_t e = 0; e < t.size(0); ++e) {
        std::vector<double> row(t.size(1));
        for (std::int64_t s = 0; s < t.size(1); ++s) row[s] = t[e][s].item<double>();
        impl->returns_[gi].push_back(std::move(row));
      }
    }
    return impl;
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(where, field, fmt::format("cannot read policy file '{}': {}", path, e.what()));
  }
}

void TorchPolicyModel::train(std::span<PlacetoEnv* const> envs, const PlacetoTrainConfig& config,
                             const std::function<void(const PlacetoEpisodeLog&)>& on_episode,
                             std::vector<PlacetoBest>* best) {
  if (envs.empty()) throw std::invalid_argument("placeto training needs at least one graph");
  TorchPolicyModel& m = *this;
  for (PlacetoEnv* env : envs)
    if (env->num_devices() != m.config_.num_devices)
      throw std::invalid_argument(fmt::format("the policy places on {} GPUs but a training cluster has {}",
                                              m.config_.num_devices, env->num_devices()));
  torch::set_num_threads(1);
  std::vector<GraphTensors> tensors;
  for (PlacetoEnv* env : envs) tensors.push_back(graph_tensors(*env));
  // Baselines belong to one training set: a different set (fine-tuning on a new graph) starts afresh.
  bool same_set = m.returns_.size() == envs.size();
  for (std::size_t gi = 0; same_set && gi < envs.size(); ++gi)
    same_set = m.returns_[gi].empty() || m.returns_[gi].front().size() == static_cast<std::size_t>(envs[gi]->num_steps());
  if (!same_set) m.returns_.assign(envs.size(), {});
  if (best) {
    best->resize(envs.size());
    for (std::size_t gi = 0; gi < envs.size(); ++gi)
      if ((*best)[gi].placement.empty()) (*best)[gi].cost = std::numeric_limits<double>::infinity();
  }
  std::vector<double> best_latency(envs.size(), std::numeric_limits<double>::infinity());
  std::deque<double> recent_rewards;

  const double span = std::max(1, config.episodes - 1);
  while (m.episodes_done_ < config.episodes) {
    const int episode = m.episodes_done_;
    std::mt19937_64 rng(episode_seed(config.seed, static_cast<std::uint64_t>(episode)));
    const std::size_t gi = rng() % envs.size();
    PlacetoEnv& env = *envs[gi];
    const Rollout r = m.rollout(env, tensors[gi], &rng, true);
    const int steps = env.num_steps();

    // Returns from each step and their baselines (the mean over the graph's recent episodes; the
    // first episode of a graph has none, so its advantages are zero).
    std::vector<double> returns(steps), advantages(steps);
    for (int t = 0; t < steps; ++t) returns[t] = r.costs[t] - r.costs[steps];
    auto& history = m.returns_[gi];
    for (int t = 0; t < steps; ++t) {
      double b = returns[t];
      if (!history.empty()) {
        b = 0;
        for (const auto& h : history) b += h[t];
        b /= static_cast<double>(history.size());
      }
      advantages[t] = returns[t] - b;
    }
    history.push_back(returns);
    while (static_cast<int>(history.size()) > std::max(1, config.baseline_window)) history.pop_front();

    const double progress = std::min(1.0, episode / span);
    const double lr = config.learning_rate + (config.learning_rate_final - config.learning_rate) * progress;
    const double entropy_weight = config.entropy + (config.entropy_final - config.entropy) * progress;
    for (auto& group : m.optimizer_->param_groups())
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);

    if (steps > 0) {
      const int n = env.num_nodes(), f = PlacetoEnv::num_features(env.num_devices());
      const torch::Tensor x =
          torch::from_blob(const_cast<float*>(r.features.data()), {steps, n, f}, torch::kFloat32).clone();
      const torch::Tensor cur = torch::tensor(r.current, torch::kInt64);
      const torch::Tensor act = torch::tensor(r.actions, torch::kInt64);
      const torch::Tensor adv = torch::tensor(advantages, torch::kFloat64).to(torch::kFloat32);
      const GraphTensors& gt = tensors[gi];
      const torch::Tensor logp = m.net_->forward(x, gt.parents, gt.children, gt.sets, cur);
      const torch::Tensor chosen = logp.gather(1, act.view({steps, 1})).squeeze(1);
      const torch::Tensor entropy = -(logp.exp() * logp).sum(1);
      const torch::Tensor loss = -(chosen * adv).mean() - entropy_weight * entropy.mean();
      m.optimizer_->zero_grad();
      loss.backward();
      m.optimizer_->step();
    }
    ++m.episodes_done_;

    const double latency = env.latency(r.placement);
    best_latency[gi] = std::min({best_latency[gi], r.best.latency, latency});
    if (best && r.best.cost < (*best)[gi].cost) (*best)[gi] = r.best;
    const double reward = r.costs.front() - r.costs.back();
    recent_rewards.push_back(reward);
    if (recent_rewards.size() > 10) recent_rewards.pop_front();
    if (on_episode) {
      PlacetoEpisodeLog log;
      log.episode = m.episodes_done_;
      log.graph = static_cast<int>(gi);
      log.reward = reward;
      for (double v : recent_rewards) log.mean_reward += v / static_cast<double>(recent_rewards.size());
      log.latency = latency;
      log.best_latency = best_latency[gi];
      on_episode(log);
    }
    // Counted over the policy's life, so a resumed run checkpoints where the first run would have.
    if (config.checkpoint_every > 0 && !config.checkpoint_path.empty() && m.episodes_done_ % config.checkpoint_every == 0)
      save(config.checkpoint_path);
  }
  if (!config.checkpoint_path.empty()) save(config.checkpoint_path);
}

std::vector<float> TorchPolicyModel::flat_parameters() const {
  std::vector<float> out;
  for (const auto& p : net_->parameters()) {
    const torch::Tensor c = p.detach().contiguous().view(-1);
    out.insert(out.end(), c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
  return out;
}

std::int64_t TorchPolicyModel::optimizer_steps() const {
  for (const auto& [key, state] : optimizer_->state())
    return static_cast<const torch::optim::AdamParamState&>(*state).step();
  return 0;
}

}  // namespace

extern "C" const PlacetoTorchPlugin* placesim_torch_plugin() {
  static const PlacetoTorchPlugin plugin{
      .create = [](const PlacetoNetConfig& config, std::uint64_t seed) -> std::unique_ptr<PlacetoPolicyModel> {
        return std::make_unique<TorchPolicyModel>(config, seed);
      },
      .load = &TorchPolicyModel::load,
  };
  return &plugin;
}

}  // namespace placesim
