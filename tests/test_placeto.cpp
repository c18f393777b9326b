// Placeto: the MDP (placeto_env.h), placeto-greedy, and -- when built with LibTorch -- the policy
// network, its training, checkpoints, the `placeto` strategy and `placesim placeto train`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

#include "placement/strategies/placeto/placeto.h"
#include "tools/placeto_cli.h"
#include "placement/strategies/placeto/placeto_env.h"
#include "placement/strategies/placeto/placeto_policy.h"
#include "placement/framework/strategy.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

// 20 GB/s and 100 kB tensors: every cross-GPU transfer of Fig. 3.1 takes exactly 5 us.
constexpr double kBw = 20e9;
constexpr double kBytes = 5e-6 * kBw;

std::unique_ptr<Strategy> make(const std::string& name, const std::string& yaml) {
  return make_strategy(name, YAML::Load(yaml), "s.yaml", "strategies[0]");
}

std::string option_error(const std::string& name, const std::string& yaml) {
  return testutil::input_error_message([&] { make(name, yaml); });
}

// a -> b, 1 s each, 6 GB each, joined by a 1 GB tensor; GPUs of 8 GB joined at 1 GB/s.
// Together: 2 s and 12 GB on one GPU (overflow 4/8 = 0.5); apart: 1 + 1 + 1 = 3 s, no overflow.
Graph memory_chain() {
  Graph g;
  g.add_operator({"a", "op", 1.0, 6e9});
  g.add_operator({"b", "op", 1.0, 6e9});
  g.add_tensor(0, 1, 1e9);
  g.finalize("memory chain");
  return g;
}

// f1 -> f2 -> loss -> b2 -> b1 with f_i and b_i in colocation class i, and an unclassed x
// hanging off f1. Topological order f1, f2, x, loss, b2, b1 (or x earlier).
Graph classed_graph() {
  Graph g;
  const OpId f1 = g.add_operator({"f1", "op", 1e-4, 0, 0});
  const OpId f2 = g.add_operator({"f2", "op", 1e-4, 0, 1});
  const OpId x = g.add_operator({"x", "op", 1e-4, 0});
  const OpId loss = g.add_operator({"loss", "op", 1e-4, 0});
  const OpId b2 = g.add_operator({"b2", "op", 1e-4, 0, 1});
  const OpId b1 = g.add_operator({"b1", "op", 1e-4, 0, 0});
  g.add_tensor(f1, f2, 1e6);
  g.add_tensor(f1, x, 1e6);
  g.add_tensor(f2, loss, 1e6);
  g.add_tensor(loss, b2, 1e6);
  g.add_tensor(b2, b1, 1e6);
  g.finalize("classed graph");
  return g;
}

}  // namespace

TEST(PlacetoEnv, StepsVisitColocationClassesOnceInTopologicalOrder) {
  const Graph g = classed_graph();
  const Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacetoEnv env(g, c, {});
  ASSERT_EQ(env.num_nodes(), 6);  // below the coarsening target: nothing merges
  // Units: {f1, b1}, {f2, b2}, {x}, {loss}: four steps; f1's class comes first (f1 is the root).
  ASSERT_EQ(env.num_steps(), 4);
  EXPECT_EQ(env.coarse().op(env.step_node(0)).name, "f1");
  std::vector<std::string> first_members;
  for (OpId v : env.step_members(0)) first_members.push_back(env.coarse().op(v).name);
  EXPECT_EQ(first_members, (std::vector<std::string>{"f1", "b1"}));
  std::vector<int> seen(6, 0);
  for (int t = 0; t < env.num_steps(); ++t)
    for (OpId v : env.step_members(t)) ++seen[v];
  EXPECT_EQ(seen, std::vector<int>(6, 1));
  // Reachability: f1 reaches everything else; x and f2 are parallel.
  for (OpId v = 1; v < 6; ++v) EXPECT_TRUE(env.reaches(0, v));
  EXPECT_FALSE(env.reaches(2, 1));
  EXPECT_FALSE(env.reaches(1, 2));
  EXPECT_FALSE(env.reaches(5, 0));
}

TEST(PlacetoEnv, FeaturesFollowThePaper) {
  // Fig. 3.1 on 2 GPUs: mean run time (5 + 10 + 5) / 3 us; A's output 2 x 100 kB at 20 GB/s = 10 us.
  const Graph g = testutil::fig31_graph(kBytes);
  const Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacetoEnv env(g, c, {});
  ASSERT_EQ(PlacetoEnv::num_features(2), 6);
  std::vector<float> x;
  const std::vector<DeviceId> p = {0, 1, 0};
  env.features(p, 1, x);  // step 1 moves B (topological order A, B, C)
  ASSERT_EQ(x.size(), 18u);
  const double unit = 20e-6 / 3;
  EXPECT_NEAR(x[0], std::log1p(5e-6 / unit), 1e-6);    // A's run time
  EXPECT_NEAR(x[1], std::log1p(10e-6 / unit), 1e-6);   // A's output time
  EXPECT_NEAR(x[6 + 0], std::log1p(10e-6 / unit), 1e-6);  // B's run time
  EXPECT_EQ(x[6 + 1], 0.0f);                              // B has no output
  // One-hot GPU, visited, current: A on GPU 0 visited; B on GPU 1 current; C on GPU 0 neither.
  EXPECT_EQ((std::vector<float>(x.begin() + 2, x.begin() + 6)), (std::vector<float>{1, 0, 1, 0}));
  EXPECT_EQ((std::vector<float>(x.begin() + 8, x.begin() + 12)), (std::vector<float>{0, 1, 0, 1}));
  EXPECT_EQ((std::vector<float>(x.begin() + 14, x.begin() + 18)), (std::vector<float>{1, 0, 0, 0}));
}

TEST(PlacetoEnv, CostIsRelativeLatencyPlusMemoryPenalty) {
  const Graph g = memory_chain();
  const Cluster c = testutil::dedicated_mesh(2, 1e9, 0.0, 8e9);
  PlacetoEnv env(g, c, {});
  EXPECT_DOUBLE_EQ(env.reference_latency(), 2.0);
  // Together: 2 s / 2 s + 2 x (12 - 8) / 8 = 2. Apart: 3 s / 2 s = 1.5.
  EXPECT_NEAR(env.cost(std::vector<DeviceId>{0, 0}), 2.0, 1e-12);
  EXPECT_NEAR(env.cost(std::vector<DeviceId>{0, 1}), 1.5, 1e-12);
  // Threshold 0.5 (M = 4 GB): apart, each GPU is (6 - 4) / 8 = 0.25 over: 1.5 + 2 x 0.25 = 2.
  PlacetoEnvConfig tight;
  tight.memory_threshold = 0.5;
  PlacetoEnv tight_env(g, c, tight);
  EXPECT_NEAR(tight_env.cost(std::vector<DeviceId>{0, 1}), 2.0, 1e-12);
}

TEST(PlacetoGreedy, Fig31FindsTheOptimum) {
  // From all on GPU 0 (20 us): A on GPU 1 would give 25 us (B and C wait 5 us for A's outputs),
  // so A stays; B on GPU 1 gives 20 us (a tie: the lower GPU stays); C on GPU 1 gives 15 us
  // (A 0-5, B 5-15 on GPU 0, C 10-15 on GPU 1), the two-GPU optimum.
  const Graph g = testutil::fig31_graph(kBytes);
  const Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacetoEnv env(g, c, {});
  const auto p = placeto_greedy_episode(env);
  EXPECT_EQ(p, (std::vector<DeviceId>{0, 0, 1}));
  EXPECT_NEAR(env.latency(p), 15e-6, 1e-15);
}

TEST(PlacetoGreedy, MemoryPenaltySplitsWhatDoesNotFit) {
  // See memory_chain: with the penalty, moving a away (1.5) beats staying (2); without it,
  // staying (1) beats moving (1.5).
  const Graph g = memory_chain();
  const Cluster c = testutil::dedicated_mesh(2, 1e9, 0.0, 8e9);
  auto fits = make("placeto-greedy", "{portfolio: false}");
  const auto split = fits->place(g, c).placement;
  EXPECT_NE(split[0], split[1]);
  // Blind to memory, the search keeps both together (2 s) on one GPU they overflow;
  // Strategy::place then returns the portfolio's best placement that fits instead, and says so.
  auto ignores = make("placeto-greedy", "{memory_penalty: 0, portfolio: false}");
  const PlacementResult blind = ignores->place(g, c);
  ASSERT_TRUE(blind.details.contains("memory_fallback")) << blind.details.dump();
  EXPECT_DOUBLE_EQ(blind.details["memory_fallback"]["own_latency_s"].get<double>(), 2.0);
  EXPECT_NE(blind.placement[0], blind.placement[1]);
}

TEST(PlacetoGreedy, BeatsRandomOnRealGraphs) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  for (const char* file : {"quickp/small.json", "msr-fiddle/gnmt_training.json"}) {
    SCOPED_TRACE(file);
    const Graph g = load_graph(testutil::shared_graphs() + "/" + file).graph;
    const Cluster c = testutil::nvlink_servers(4);
    auto s = make("placeto-greedy", "{}");
    const PlacementResult r = s->place(g, c);
    const double greedy = Evaluator(g, c).latency(r.placement);
    EXPECT_LT(greedy, mean_random_latency(g, c, 20, 3));
    // Never worse than where it starts: everything on one GPU (plus no memory overflow there).
    EXPECT_LE(greedy, Evaluator(g, c).latency(std::vector<DeviceId>(g.num_operators(), 0)) * (1 + 1e-9));
  }
}

TEST(PlacetoGreedy, OptionsAreValidated) {
  EXPECT_NE(option_error("placeto-greedy", "{coarsen_target: 0}").find("options.coarsen_target"), std::string::npos);
  EXPECT_NE(option_error("placeto-greedy", "{passes: 0}").find("options.passes"), std::string::npos);
  EXPECT_NE(option_error("placeto-greedy", "{memory_penalty: -1}").find("options.memory_penalty"), std::string::npos);
  EXPECT_NE(option_error("placeto-greedy", "{memory_threshold: 1.5}").find("options.memory_threshold"),
            std::string::npos);
  EXPECT_NE(option_error("placeto-greedy", "{episodes: 3}").find("episodes"), std::string::npos);
  EXPECT_EQ(option_error("placeto-greedy", "{coarsen_target: 16, passes: 2}"), "");
}

TEST(PlacetoGraphs, FamilyAndSpecs) {
  const Graph a = placeto_family_graph(3), b = placeto_family_graph(3), c = placeto_family_graph(4);
  EXPECT_EQ(to_placesim_json(a), to_placesim_json(b));
  EXPECT_NE(to_placesim_json(a), to_placesim_json(c));
  const auto graphs = placeto_training_graphs({"synthetic:2-4", "synthetic:9"});
  ASSERT_EQ(graphs.size(), 4u);
  EXPECT_EQ(graphs[0].name, "synthetic:2");
  EXPECT_EQ(graphs[3].name, "synthetic:9");
  EXPECT_EQ(to_placesim_json(graphs[1].graph), to_placesim_json(a));
  for (const char* bad : {"synthetic:5-2", "synthetic:x", "zoo:nonsense", "no/such/file.json"}) {
    EXPECT_INPUT_ERROR(placeto_training_graphs({bad}), "", "--graphs") << bad;
  }
}

#ifdef PLACESIM_HAVE_TORCH

namespace {

fs::path temp_dir(const std::string& name) { return testutil::fresh_temp_dir("placeto-" + name); }

// Two independent 1 s operators on two GPUs: 2 s on one GPU, 1 s when apart. The policy sees
// the step (current/visited flags) and where the first one went (one-hot), so it can learn to
// put the second one elsewhere.
Graph two_independent_ops() {
  Graph g;
  g.add_operator({"p", "op", 1.0, 0});
  g.add_operator({"q", "op", 1.0, 0});
  g.finalize("two ops");
  return g;
}

double fraction_split(const PlacetoPolicy& policy, PlacetoEnv& env, int samples) {
  int split = 0;
  for (int s = 0; s < samples; ++s) {
    const auto p = policy.sample(env, 1000 + s);
    split += p[0] != p[1];
  }
  return static_cast<double>(split) / samples;
}

}  // namespace

TEST(PlacetoPolicy, ReinforceLearnsToSplitIndependentWork) {
  const Graph g = two_independent_ops();
  const Cluster c = testutil::dedicated_mesh(2, kBw);
  PlacetoEnv env(g, c, {});
  PlacetoPolicy policy({2, 16, 2}, 5);
  const double before = fraction_split(policy, env, 200);
  PlacetoTrainConfig train;
  train.episodes = 150;
  PlacetoEnv* envs[] = {&env};
  policy.train(envs, train);
  const double after = fraction_split(policy, env, 200);
  // An untrained softmax splits about half the time; the trained one nearly always.
  EXPECT_GT(after, 0.9) << "before training: " << before;
  EXPECT_GT(after, before + 0.2);
  EXPECT_NEAR(env.latency(policy.place(env)), 1.0, 1e-12);
  EXPECT_EQ(policy.episodes_done(), 150);
}

TEST(PlacetoPolicy, CheckpointResumesExactly) {
  const fs::path dir = temp_dir("resume");
  const Graph g1 = placeto_family_graph(1), g2 = placeto_family_graph(2);
  const Cluster c = testutil::nvlink_servers(4);
  PlacetoEnvConfig env_config;
  env_config.coarsen_target = 16;
  PlacetoEnv e1(g1, c, env_config), e2(g2, c, env_config);
  PlacetoEnv* envs[] = {&e1, &e2};
  PlacetoTrainConfig train;
  train.episodes = 10;
  train.baseline_window = 3;

  PlacetoPolicy straight({4, 16, 2}, 7);
  straight.train(envs, train);

  // The same run, interrupted at episode 7 (the callback throws, as a kill would stop it); the
  // file holds the checkpoint of episode 5.
  PlacetoPolicy interrupted({4, 16, 2}, 7);
  train.checkpoint_path = (dir / "interrupted.pt").string();
  train.checkpoint_every = 5;
  struct Stop {};
  EXPECT_THROW(interrupted.train(envs, train,
                                 [](const PlacetoEpisodeLog& log) {
                                   if (log.episode == 7) throw Stop{};
                                 }),
               Stop);
  PlacetoPolicy resumed = PlacetoPolicy::load(train.checkpoint_path);
  EXPECT_EQ(resumed.episodes_done(), 5);
  EXPECT_EQ(resumed.optimizer_steps(), 5);
  resumed.train(envs, train);
  EXPECT_EQ(resumed.episodes_done(), 10);
  EXPECT_EQ(resumed.optimizer_steps(), 10);
  // Same episodes, same baselines, same Adam moments: the same weights as the straight run.
  EXPECT_EQ(resumed.flat_parameters(), straight.flat_parameters());
  EXPECT_NE(resumed.flat_parameters(), PlacetoPolicy({4, 16, 2}, 7).flat_parameters());
  fs::remove_all(dir);
}

TEST(PlacetoPolicy, GeneralisesToUnseenGraphsOfTheFamily) {
  // Tiny version of bench_placeto: train on 4 generated graphs, place 3 unseen ones. On 4 GPUs of
  // 2 NVLink servers the family's 8 MB tensors take 160-400 us to move against ~100 us operators:
  // random placement is about 3x slower than one GPU, and even placeto-greedy gains only ~5% over
  // one GPU at 16 groups. An untrained policy is near-uniform, so its sampled episodes are about
  // as bad as random; training must make the sampled episodes of unseen graphs much better (the
  // policy learnt to keep communicating groups together), and its most likely episode must beat
  // random and come within 15% of placeto-greedy.
  const Cluster c = testutil::nvlink_servers(4);
  PlacetoEnvConfig env_config;
  env_config.coarsen_target = 16;
  std::vector<Graph> train_graphs, test_graphs;
  for (std::uint64_t s = 1; s <= 4; ++s) train_graphs.push_back(placeto_family_graph(s));
  for (std::uint64_t s = 101; s <= 103; ++s) test_graphs.push_back(placeto_family_graph(s));
  std::vector<std::unique_ptr<PlacetoEnv>> envs;
  std::vector<PlacetoEnv*> ptrs;
  for (const Graph& g : train_graphs) {
    envs.push_back(std::make_unique<PlacetoEnv>(g, c, env_config));
    ptrs.push_back(envs.back().get());
  }
  const PlacetoPolicy untrained({4, 16, 3}, 1);
  PlacetoPolicy policy({4, 16, 3}, 1);
  PlacetoTrainConfig train;
  train.episodes = 60;
  policy.train(ptrs, train);
  double trained = 0, greedy = 0, random = 0, trained_sampled = 0, untrained_sampled = 0;
  for (const Graph& g : test_graphs) {
    PlacetoEnv env(g, c, env_config);
    Evaluator ev(g, c);
    trained += ev.latency(env.expand(policy.place(env)));
    greedy += ev.latency(env.expand(placeto_greedy_episode(env)));
    random += mean_random_latency(g, c, 20, 11);
    for (std::uint64_t s = 0; s < 5; ++s) {
      trained_sampled += ev.latency(env.expand(policy.sample(env, s))) / 5;
      untrained_sampled += ev.latency(env.expand(untrained.sample(env, s))) / 5;
    }
  }
  EXPECT_LT(trained_sampled, 0.6 * untrained_sampled);
  EXPECT_LT(trained, random);
  EXPECT_LT(trained, 1.15 * greedy);
}

TEST(PlacetoStrategy, PolicyFileZeroShotAndOptions) {
  const fs::path dir = temp_dir("strategy");
  const Graph g = testutil::fig31_graph(kBytes);
  const Cluster c2 = testutil::dedicated_mesh(2, kBw);
  PlacetoPolicy policy({2, 8, 1}, 3);
  const std::string path = (dir / "p.pt").string();
  policy.save(path);

  // Zero-shot through the strategy equals the policy's own episode.
  auto s = make("placeto", "{policy: " + path + ", portfolio: false}");
  const auto r = s->place(g, c2);
  PlacetoEnv env(g, c2, {});
  EXPECT_EQ(r.placement, env.expand(policy.place(env)));
  EXPECT_EQ(r.details["policy_episodes"], 0);

  // Fine-tuning continues the policy's episode count.
  auto tuned = make("placeto", "{policy: " + path + ", fine_tune_episodes: 3, portfolio: false}");
  EXPECT_EQ(tuned->place(g, c2).details["policy_episodes"], 3);

  // A 2-GPU policy on a 4-GPU cluster is an input error naming the option.
  EXPECT_INPUT_ERROR(s->place(g, testutil::dedicated_mesh(4, kBw)), "", "options.policy")
      << "accepted a 2-GPU policy on 4 GPUs";
  EXPECT_NE(option_error("placeto", "{policy: " + (dir / "missing.pt").string() + "}").find("options.policy"),
            std::string::npos);
  EXPECT_NE(option_error("placeto", "{fine_tune_episodes: 2}").find("options.fine_tune_episodes"), std::string::npos);
  EXPECT_NE(option_error("placeto", "{episodes: -1}").find("options.episodes"), std::string::npos);
  EXPECT_NE(option_error("placeto", "{learning_rate: 0}").find("options.learning_rate"), std::string::npos);
  EXPECT_NE(option_error("placeto", "{hidden: 0}").find("options.hidden"), std::string::npos);
  EXPECT_NE(option_error("placeto", "{coarsen_target: 0}").find("options.coarsen_target"), std::string::npos);
  EXPECT_NE(option_error("placeto", "{polcy: x}").find("polcy"), std::string::npos);
  fs::remove_all(dir);
}

namespace {

// A launch that trains loads LibTorch: about a second.
using testutil::run_cli;

int run_cli_with_plugin(const std::string& plugin, const std::string& args, std::string& output) {
  return run_cli(args, output, "PLACESIM_TORCH_PLUGIN=" + plugin + " ");
}

}  // namespace

TEST(PlacetoCli, TrainWritesAPolicyAndResumes) {
  const fs::path dir = temp_dir("cli");
  const std::string out = (dir / "policy.pt").string();
  std::string output;
  const std::string common = " --graphs synthetic:1-2 --gpus 2 --coarsen-target 12 --hidden 8 --log-every 1 --out " + out;
  ASSERT_EQ(run_cli("placeto train --episodes 4 --checkpoint-every 2" + common, output), 0) << output;
  EXPECT_NE(output.find("episode      4/4"), std::string::npos) << output;
  EXPECT_NE(output.find("mean reward"), std::string::npos) << output;
  EXPECT_NE(output.find("best"), std::string::npos) << output;
  EXPECT_EQ(PlacetoPolicy::load(out).episodes_done(), 4);
  ASSERT_EQ(run_cli("placeto train --episodes 6 --resume" + common, output), 0) << output;
  EXPECT_NE(output.find("resuming " + out + " at episode 4 of 6"), std::string::npos) << output;
  EXPECT_EQ(output.find("episode      4/"), std::string::npos) << "episodes 1-4 must not run again:\n" << output;
  EXPECT_EQ(PlacetoPolicy::load(out).episodes_done(), 6);
  EXPECT_EQ(PlacetoPolicy::load(out).optimizer_steps(), 6);
  fs::remove_all(dir);
}

TEST(PlacetoCli, ResumingAPolicyForOtherGpusIsAnInputError) {
  const fs::path dir = temp_dir("cli-gpus");
  const std::string out = (dir / "policy.pt").string();
  PlacetoPolicy({2, 8, 1}, 1).save(out);
  std::string output;
  EXPECT_EQ(run_cli("placeto train --episodes 2 --resume --gpus 4 --graphs synthetic:1 --out " + out, output), 2);
  EXPECT_NE(output.find("--gpus"), std::string::npos) << output;
  EXPECT_NE(output.find("places on 2 GPUs, not 4"), std::string::npos) << output;
  fs::remove_all(dir);
}

// LibTorch is a plugin (placesim_torch) loaded when a policy is first made. Pointing
// PLACESIM_TORCH_PLUGIN at a file that does not exist shows when that happens: listing the
// strategies (which builds the registry with placeto in it) must not try; training must, and must
// fail with an input error naming the path it tried.
TEST(PlacetoPlugin, ListingStrategiesDoesNotLoadIt) {
  std::string output;
  ASSERT_EQ(run_cli_with_plugin("/nonexistent/libplacesim_torch.so", "strategies", output), 0) << output;
  EXPECT_NE(output.find("placeto-greedy"), std::string::npos) << output;
  EXPECT_NE(output.find("fine_tune_episodes"), std::string::npos) << "placeto is not listed:\n" << output;
}

TEST(PlacetoPlugin, UnloadablePluginIsAnInputErrorNamingIt) {
  const fs::path dir = temp_dir("plugin");
  std::string output;
  EXPECT_EQ(run_cli_with_plugin("/nonexistent/libplacesim_torch.so",
                                "placeto train --episodes 1 --graphs synthetic:1 --out " + (dir / "p.pt").string(),
                                output),
            2);
  EXPECT_NE(output.find("error: /nonexistent/libplacesim_torch.so: cannot load the plugin"), std::string::npos)
      << output;
  EXPECT_NE(output.find("PLACESIM_TORCH_PLUGIN"), std::string::npos) << output;
  EXPECT_FALSE(fs::exists(dir / "p.pt"));
  fs::remove_all(dir);
}

#endif  // PLACESIM_HAVE_TORCH
