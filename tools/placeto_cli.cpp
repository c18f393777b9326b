#include "placeto_cli.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <limits>
#include <memory>

#include "placement/strategies/placeto/placeto_env.h"
#include "placement/strategies/placeto/placeto_policy.h"
#include "sim/core/errors.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"
#include "sim/config/options.h"
#include "sim/core/units.h"
#include "topologies/nvlink_servers.h"

namespace placesim {

namespace {

std::uint64_t parse_seed(const std::string& text, const std::string& field, const std::string& spec) {
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError("command line", field, fmt::format("'{}': expected a seed (a non-negative integer), got '{}'", spec, text));
}

// Numeric flags say what they expect in words, as every placesim flag does (tools/cli_conventions.h;
// CLI11's own Range says "Value two not in range 1 to 1024").
CLI::Validator whole_number(long long min, long long max = std::numeric_limits<long long>::max()) {
  const std::string description =
      max == std::numeric_limits<long long>::max() ? fmt::format("N >= {}", min) : fmt::format("{}..{}", min, max);
  return CLI::Validator([min, max](std::string& text) { return whole_number_problem(text, min, max); }, description);
}
CLI::Validator number_in(const Range& range) {
  return CLI::Validator([range](std::string& text) { return number_problem(text, range); }, range.describe());
}

struct TrainArgs {
  std::vector<std::string> graphs;
  int gpus = 4;
  int episodes = 100;
  std::string out;
  bool resume = false;
  int checkpoint_every = 10;
  int log_every = 10;
  std::uint64_t seed = 1;
  int coarsen_target = 32;
  int hidden = 16;
  int message_passing_steps = 3;
  double learning_rate = 0.01;
  double entropy = 0.02;
};

int cmd_train(const TrainArgs& a) {
#ifndef PLACESIM_HAVE_TORCH
  throw InputError("command line", "placeto train", "this placesim was built without LibTorch (install libtorch-dev and rebuild)");
#else
  std::vector<NamedGraph> graphs = placeto_training_graphs(a.graphs);
  NvlinkServersConfig cluster_config;
  cluster_config.gpus = a.gpus;
  const Cluster cluster = make_nvlink_servers(cluster_config);
  PlacetoEnvConfig env_config;
  env_config.coarsen_target = a.coarsen_target;
  std::vector<std::unique_ptr<PlacetoEnv>> envs;
  std::vector<PlacetoEnv*> env_ptrs;
  for (const NamedGraph& g : graphs) {
    envs.push_back(std::make_unique<PlacetoEnv>(g.graph, cluster, env_config));
    env_ptrs.push_back(envs.back().get());
    std::cout << fmt::format("graph {}: {} operators -> {} groups, {} steps, single-GPU latency {}\n", g.name,
                             g.graph.num_operators(), envs.back()->num_nodes(), envs.back()->num_steps(),
                             format_duration(envs.back()->reference_latency()));
  }

  const bool resuming = a.resume && std::filesystem::exists(a.out);
  PlacetoPolicy policy = resuming ? PlacetoPolicy::load(a.out, a.out, "")
                                  : PlacetoPolicy({a.gpus, a.hidden, a.message_passing_steps}, a.seed);
  if (policy.config().num_devices != a.gpus)
    throw InputError(a.out, "--gpus", fmt::format("the policy in the file places on {} GPUs, not {}",
                                                  policy.config().num_devices, a.gpus));
  if (resuming)
    std::cout << fmt::format("resuming {} at episode {} of {}\n", a.out, policy.episodes_done(), a.episodes);
  else if (a.resume)
    std::cout << fmt::format("{} does not exist yet: starting afresh\n", a.out);

  PlacetoTrainConfig train;
  train.episodes = a.episodes;
  train.learning_rate = a.learning_rate;
  train.learning_rate_final = a.learning_rate / 10;
  train.entropy = a.entropy;
  train.entropy_final = a.entropy / 10;
  train.seed = a.seed;
  train.checkpoint_every = a.checkpoint_every;
  train.checkpoint_path = a.out;
  const auto t0 = std::chrono::steady_clock::now();
  policy.train(env_ptrs, train, [&](const PlacetoEpisodeLog& log) {
    if (a.log_every > 0 && (log.episode % a.log_every == 0 || log.episode == a.episodes))
      std::cout << fmt::format("episode {:>6}/{}  graph {:<16} reward {:+.4f}  mean reward {:+.4f}  latency {}  best {}\n",
                               log.episode, a.episodes, graphs[log.graph].name, log.reward, log.mean_reward,
                               format_duration(log.latency), format_duration(log.best_latency))
                << std::flush;
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("trained to episode {} in {:.1f} s; policy written to {}\n", policy.episodes_done(), seconds,
                           a.out);
  for (std::size_t gi = 0; gi < envs.size(); ++gi) {
    PlacetoEnv& env = *envs[gi];
    const double policy_latency = env.latency(policy.place(env));
    const double greedy_latency = env.latency(placeto_greedy_episode(env));
    std::cout << fmt::format("  {:<16} policy {}  placeto-greedy {}  single GPU {}\n", graphs[gi].name,
                             format_duration(policy_latency), format_duration(greedy_latency),
                             format_duration(env.reference_latency()));
  }
  return 0;
#endif
}

}  // namespace

std::vector<NamedGraph> placeto_training_graphs(const std::vector<std::string>& specs, const std::string& field) {
  std::vector<NamedGraph> out;
  for (const std::string& spec : specs) {
    if (spec.starts_with("synthetic:")) {
      const std::string range = spec.substr(10);
      const std::size_t dash = range.find('-');
      const std::uint64_t first = parse_seed(range.substr(0, dash), field, spec);
      const std::uint64_t last = dash == std::string::npos ? first : parse_seed(range.substr(dash + 1), field, spec);
      if (last < first || last - first >= 10000)
        throw InputError("command line", field, fmt::format("'{}': expected a seed range A-B with A <= B and at most 10000 seeds", spec));
      for (std::uint64_t s = first; s <= last; ++s) out.push_back({fmt::format("synthetic:{}", s), placeto_family_graph(s)});
    } else if (spec.starts_with("zoo:")) {
      models::ModelConfig config;
      config.model = spec.substr(4);
      if (!models::find_zoo_model(config.model))
        throw InputError("command line", field, fmt::format("'{}': unknown zoo model (models: {})", spec, models::zoo_model_names()));
      out.push_back({spec, models::zoo_graph(config)});
    } else if (std::filesystem::is_regular_file(spec)) {
      out.push_back({std::filesystem::path(spec).stem().string(), load_graph(spec).graph});
    } else {
      throw InputError("command line", field,
                       fmt::format("'{}' is neither a graph file nor synthetic:SEED[-SEED] nor zoo:MODEL", spec));
    }
  }
  if (out.empty()) throw InputError("command line", field, "expected at least one graph");
  return out;
}

void add_placeto_commands(CLI::App& app) {
  auto* placeto = app.add_subcommand("placeto", "Placeto: train graph-embedding placement policies");
  placeto->require_subcommand(1);
  auto args = std::make_shared<TrainArgs>();
  auto* train = placeto->add_subcommand("train", "train a policy over a set of graphs and write the policy file");
  train->add_option("--graphs", args->graphs, "graph files, synthetic:SEED[-SEED] (generated family), zoo:MODEL")
      ->required();
  train->add_option("--gpus", args->gpus, "GPUs (NVLink servers of 2)")->check(whole_number(1, 1024));
  train->add_option("--episodes", args->episodes, "total training episodes")->required()->check(whole_number(1, 100000000));
  train->add_option("--out", args->out, "policy file to write (and to resume from)")->required();
  train->add_flag("--resume", args->resume, "continue the training saved in --out");
  train->add_option("--checkpoint-every", args->checkpoint_every, "episodes between checkpoints (0: only at the end)")
      ->check(whole_number(0, 100000000));
  train->add_option("--log-every", args->log_every, "episodes between progress lines")->check(whole_number(0, 100000000));
  train->add_option("--seed", args->seed, "seed of the weights and of the episodes")->check(whole_number(0));
  train->add_option("--coarsen-target", args->coarsen_target, "op groups after merge-and-colocate")
      ->check(whole_number(1, 2048));
  train->add_option("--hidden", args->hidden, "hidden units")->check(whole_number(1, 1024));
  train->add_option("--message-passing-steps", args->message_passing_steps, "k")->check(whole_number(0, 64));
  train->add_option("--learning-rate", args->learning_rate, "Adam's initial rate (decays linearly to a tenth)")
      ->check(number_in(Range::positive()));
  train->add_option("--entropy", args->entropy, "initial entropy bonus (decays linearly to a tenth)")
      ->check(number_in(Range::non_negative()));
  // Runs inside CLI11's parse; errors end as one line and exit code 2 (bad input) or 1.
  train->callback([args] {
    int code = 0;
    try {
      code = cmd_train(*args);
    } catch (const InputError& e) {
      std::cerr << "error: " << e.what() << "\n";
      code = 2;
    } catch (const std::exception& e) {
      std::cerr << "placesim: internal error: " << e.what() << "\n";
      code = 1;
    }
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace placesim
