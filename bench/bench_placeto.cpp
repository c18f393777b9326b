// Placeto: placeto-greedy's search time on the real graphs, the cost of one training episode,
// and a generalisation experiment: a policy trained on a family of generated
// graphs (placeto_family_graph, seeds 1-16, 32 groups each, 4 GPUs of 2 NVLink servers) places
// unseen graphs of the family (seeds 101-108) zero-shot; counters give its latency relative to
// random placement, to one GPU and to placeto-greedy (means over the unseen graphs).
//
//   ./build/bench_placeto --benchmark_filter=Generalisation
//
// Measured (2 shared cores, reference BLAS, hidden 16, k = 3):
//   episodes  train   placeto/random  placeto/single GPU  placeto/greedy (mean, worst)
//         0    0 s       0.33            1.007               1.11, 1.37
//       300    7 s       0.31            0.966               1.06, 1.21
//      1000   23 s       0.31            0.938               1.03, 1.17
// So after 1000 episodes the zero-shot policy is 3x faster than random placement, 6% faster than
// one GPU, and within 5% of placeto-greedy on average (17% on the worst unseen graph); greedy
// evaluates every GPU at every step, the policy evaluates nothing.
#include <benchmark/benchmark.h>

#include "bench/bench_util.h"

#include <chrono>
#include <memory>
#include <random>

#include "placement/strategies/placeto/placeto_env.h"
#include "placement/strategies/placeto/placeto_policy.h"
#include "sim/engines/evaluator.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

Cluster gpus(int n) {
  NvlinkServersConfig cfg;
  cfg.gpus = n;
  return make_nvlink_servers(cfg);
}


void greedy_on(benchmark::State& state, const char* file) {
  const Graph* g = benchutil::shared_graph_or_skip(state, file);
  if (!g) return;
  const Cluster c = gpus(4);
  PlacetoEnvConfig config;
  config.coarsen_target = static_cast<int>(state.range(0));
  double latency = 0;
  for (auto _ : state) {
    PlacetoEnv env(*g, c, config);
    latency = env.latency(placeto_greedy_episode(env));
  }
  state.counters["latency_ms"] = latency * 1e3;
  state.counters["single_gpu_ms"] = Evaluator(*g, c).latency(std::vector<DeviceId>(g->num_operators(), 0)) * 1e3;
}

void BM_PlacetoGreedyVgg(benchmark::State& state) { greedy_on(state, "quickp/vgg.json"); }
BENCHMARK(BM_PlacetoGreedyVgg)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

void BM_PlacetoGreedyGnmt(benchmark::State& state) { greedy_on(state, "msr-fiddle/gnmt_training.json"); }
BENCHMARK(BM_PlacetoGreedyGnmt)->Arg(64)->Unit(benchmark::kMillisecond);

#ifdef PLACESIM_HAVE_TORCH

// Wall time of one training episode (rollout, replay, Adam step): args are groups, hidden units.
void BM_PlacetoTrainingEpisode(benchmark::State& state) {
  const Graph g = placeto_family_graph(1000);
  const Cluster c = gpus(4);
  PlacetoEnvConfig config;
  config.coarsen_target = static_cast<int>(state.range(0));
  PlacetoEnv env(g, c, config);
  PlacetoEnv* envs[] = {&env};
  PlacetoPolicy policy({4, static_cast<int>(state.range(1)), 3}, 1);
  PlacetoTrainConfig train;
  for (auto _ : state) {
    train.episodes = policy.episodes_done() + 1;
    policy.train(envs, train);
  }
  state.counters["groups"] = env.num_nodes();
  state.counters["steps"] = env.num_steps();
}
BENCHMARK(BM_PlacetoTrainingEpisode)->Args({32, 16})->Args({32, 32})->Args({64, 16})->Args({64, 32})->Unit(benchmark::kMillisecond);

void BM_PlacetoGeneralisation(benchmark::State& state) {
  const int episodes = static_cast<int>(state.range(0));
  const Cluster c = gpus(4);
  PlacetoEnvConfig config;
  config.coarsen_target = 32;
  std::vector<Graph> train_graphs, test_graphs;
  for (std::uint64_t s = 1; s <= 16; ++s) train_graphs.push_back(placeto_family_graph(s));
  for (std::uint64_t s = 101; s <= 108; ++s) test_graphs.push_back(placeto_family_graph(s));
  double train_s = 0, vs_random = 0, vs_greedy = 0, vs_single = 0, worst_vs_greedy = 0;
  for (auto _ : state) {
    std::vector<std::unique_ptr<PlacetoEnv>> envs;
    std::vector<PlacetoEnv*> ptrs;
    for (const Graph& g : train_graphs) {
      envs.push_back(std::make_unique<PlacetoEnv>(g, c, config));
      ptrs.push_back(envs.back().get());
    }
    PlacetoPolicy policy({4, 16, 3}, 1);
    PlacetoTrainConfig train;
    train.episodes = episodes;
    const auto t0 = std::chrono::steady_clock::now();
    policy.train(ptrs, train);
    train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    vs_random = vs_greedy = vs_single = worst_vs_greedy = 0;
    for (const Graph& g : test_graphs) {
      PlacetoEnv env(g, c, config);
      Evaluator ev(g, c);
      const double placeto = ev.latency(env.expand(policy.place(env)));
      const double greedy = ev.latency(env.expand(placeto_greedy_episode(env)));
      const double random = mean_random_latency(g, c, 50, 5);
      const double single = ev.latency(std::vector<DeviceId>(g.num_operators(), 0));
      vs_random += placeto / random / test_graphs.size();
      vs_greedy += placeto / greedy / test_graphs.size();
      vs_single += placeto / single / test_graphs.size();
      worst_vs_greedy = std::max(worst_vs_greedy, placeto / greedy);
    }
  }
  state.counters["episodes"] = episodes;
  state.counters["train_s"] = train_s;
  state.counters["placeto_over_random"] = vs_random;   // mean over the unseen graphs; < 1 is better
  state.counters["placeto_over_greedy"] = vs_greedy;
  state.counters["worst_over_greedy"] = worst_vs_greedy;
  state.counters["placeto_over_single_gpu"] = vs_single;
}
BENCHMARK(BM_PlacetoGeneralisation)->Arg(0)->Arg(300)->Arg(1000)->Iterations(1)->Unit(benchmark::kSecond);

#endif  // PLACESIM_HAVE_TORCH

}  // namespace
