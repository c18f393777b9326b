#include "placement/strategies/random/random.h"

#include <limits>
#include <random>

#include "sim/engines/evaluator.h"

namespace placesim {

PlacementResult RandomPlacement::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  std::mt19937_64 rng(config_.seed);
  std::uniform_int_distribution<DeviceId> gpu(0, cluster.num_devices() - 1);
  std::vector<DeviceId> class_gpu(graph.num_colocation_classes());
  auto draw = [&] {
    for (auto& d : class_gpu) d = gpu(rng);
    std::vector<DeviceId> p(graph.num_operators());
    for (OpId op = 0; op < static_cast<OpId>(p.size()); ++op) {
      const int cls = graph.op(op).colocation_class;
      p[op] = cls >= 0 ? class_gpu[cls] : gpu(rng);
    }
    return p;
  };
  PlacementResult r;
  r.placement = draw();
  long drawn = 1;
  if (config_.samples > 1) {
    CostModel cost = make_cost_model(graph, cluster);
    double best = cost.latency(r.placement);
    for (; drawn < config_.samples && !deadline.expired(); ++drawn) {
      std::vector<DeviceId> p = draw();
      if (const double latency = cost.latency(p); latency < best) {
        best = latency;
        r.placement = std::move(p);
      }
    }
    r.details["best_latency_s"] = best;
  }
  r.details["samples"] = drawn;
  return r;
}

OptionSchema<RandomConfig> random_schema() {
  OptionSchema<RandomConfig> s;
  s.count("seed", &RandomConfig::seed, "random seed", 0, std::numeric_limits<long>::max(), "7");
  s.count("samples", &RandomConfig::samples, "draws; the best by the cost model is kept", 1, std::numeric_limits<long>::max(),
          "20");
  return s;
}

StrategyInfo random_strategy_info() {
  return strategy_info<RandomPlacement>(
      "random", "each colocation class (or lone operator) on a uniformly drawn GPU; best of `samples` draws", random_schema(),
      {.searches = true});
}

}  // namespace placesim
