#include "placement/strategies/placeto/placeto_env.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>

#include "placement/strategies/single_device/single_device.h"
#include "sim/models/builtin_graphs.h"

namespace placesim {

PlacetoEnv::PlacetoEnv(const Graph& graph, const Cluster& cluster, const PlacetoEnvConfig& config,
                       CostModelKind cost_model)
    : coarsening_(coarsen(graph, {CoarseningScheme::PlaceTo, config.coarsen_target})),
      cluster_(cluster),
      config_(config) {
  const Graph& g = coarsening_.coarse;
  const int n = num_nodes();
  cost_model_ = std::make_unique<CostModel>(g, cluster_, cost_model);

  // Units: a coarse colocation class, or one unclassed node; ordered by their first node in
  // topological order.
  std::vector<std::vector<OpId>> class_members(g.num_colocation_classes());
  std::vector<std::vector<OpId>> units;
  for (OpId v : g.topological_order()) {
    const int cls = g.op(v).colocation_class;
    if (cls < 0) {
      units.push_back({v});
    } else {
      if (class_members[cls].empty()) units.push_back({});  // placeholder at the class's first node
      class_members[cls].push_back(v);
    }
  }
  {
    std::vector<std::uint8_t> class_done(class_members.size(), 0);
    std::size_t next = 0;
    for (OpId v : g.topological_order()) {
      const int cls = g.op(v).colocation_class;
      if (cls < 0) {
        ++next;
      } else if (!class_done[cls]) {
        class_done[cls] = 1;
        units[next++] = class_members[cls];
      }
    }
  }
  step_first_.push_back(0);
  step_of_.assign(n, 0);
  for (const auto& unit : units) {
    for (OpId v : unit) {
      step_of_[v] = static_cast<std::int32_t>(step_first_.size()) - 1;
      step_nodes_.push_back(v);
    }
    step_first_.push_back(static_cast<std::int32_t>(step_nodes_.size()));
  }

  // Scale-free static features: run time and output transfer time over the slowest GPU pair, in
  // units of the mean node run time.
  double slowest_bandwidth = std::numeric_limits<double>::infinity();
  for (DeviceId a = 0; a < cluster_.num_devices(); ++a)
    for (DeviceId b = 0; b < cluster_.num_devices(); ++b)
      if (a != b && cluster_.reachable(a, b)) slowest_bandwidth = std::min(slowest_bandwidth, cluster_.bandwidth(a, b));
  const double mean_compute = n > 0 ? g.total_compute() / n : 0.0;
  const double time_unit = mean_compute > 0 ? mean_compute : 1.0;
  run_time_feature_.resize(n);
  output_feature_.resize(n);
  for (OpId v = 0; v < n; ++v) {
    double out_bytes = 0;
    for (EdgeId e : g.out_edges(v)) out_bytes += g.tensor(e).bytes;
    const double out_time = std::isfinite(slowest_bandwidth) ? out_bytes / slowest_bandwidth : 0.0;
    run_time_feature_[v] = std::log1p(g.op(v).compute_s / time_unit);
    output_feature_[v] = std::log1p(out_time / time_unit);
  }

  // Reachability, in reverse topological order: v reaches its children and what they reach.
  reach_.assign(static_cast<std::size_t>(n) * n, 0);
  const auto topo = g.topological_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    const OpId v = *it;
    std::uint8_t* row = reach_.data() + static_cast<std::size_t>(v) * n;
    for (EdgeId e : g.out_edges(v)) {
      const OpId c = g.tensor(e).dst;
      row[c] = 1;
      const std::uint8_t* crow = reach_.data() + static_cast<std::size_t>(c) * n;
      for (int u = 0; u < n; ++u) row[u] |= crow[u];
    }
  }

  // The single-GPU schedule runs every node one after another, on single-device's GPU.
  const double total = cluster_.compute_time(best_single_device(g, cluster_), g.total_compute());
  reference_latency_ = total > 0 ? total : 1.0;
  memory_used_.assign(cluster_.num_devices(), 0.0);
}

void PlacetoEnv::features(std::span<const DeviceId> placement, int step, std::vector<float>& out) const {
  const int n = num_nodes(), d = num_devices(), f = num_features(d);
  out.assign(static_cast<std::size_t>(n) * f, 0.0f);
  for (OpId v = 0; v < n; ++v) {
    float* row = out.data() + static_cast<std::size_t>(v) * f;
    row[0] = static_cast<float>(run_time_feature_[v]);
    row[1] = static_cast<float>(output_feature_[v]);
    row[2 + placement[v]] = 1.0f;
    row[2 + d] = step_of_[v] < step ? 1.0f : 0.0f;
    row[3 + d] = step_of_[v] == step ? 1.0f : 0.0f;
  }
}

double PlacetoEnv::cost(std::span<const DeviceId> placement) {
  const Graph& g = coarse();
  std::fill(memory_used_.begin(), memory_used_.end(), 0.0);
  for (OpId v = 0; v < num_nodes(); ++v) memory_used_[placement[v]] += g.op(v).memory_bytes;
  double overflow = 0;  // of the fullest GPU, relative to its capacity
  for (DeviceId dev = 0; dev < num_devices(); ++dev) {
    const double capacity = cluster_.device(dev).memory_bytes;
    if (capacity <= 0) continue;
    overflow = std::max(overflow, (memory_used_[dev] - config_.memory_threshold * capacity) / capacity);
  }
  const double latency = cost_model_->latency(placement);
  return latency / reference_latency_ + config_.memory_penalty * std::max(0.0, overflow);
}

std::vector<DeviceId> placeto_greedy_episode(PlacetoEnv& env, int passes) {
  std::vector<DeviceId> placement = env.initial_placement();
  for (int pass = 0; pass < passes; ++pass) {
    for (int t = 0; t < env.num_steps(); ++t) {
      DeviceId best_device = placement[env.step_node(t)];
      double best_cost = std::numeric_limits<double>::infinity();
      for (DeviceId d = 0; d < env.num_devices(); ++d) {
        env.apply(t, d, placement);
        const double c = env.cost(placement);
        if (c < best_cost) {
          best_cost = c;
          best_device = d;
        }
      }
      env.apply(t, best_device, placement);
    }
  }
  return placement;
}

Graph placeto_family_graph(std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 17);
  SyntheticGraphConfig config;
  config.layers = 2 + static_cast<int>(rng() % 4);
  config.branches = 1 + static_cast<int>(rng() % 3);
  config.ops_per_branch = 1 + static_cast<int>(rng() % 3);
  config.seed = seed;
  return synthetic_training_graph(config);
}

double mean_random_latency(const Graph& graph, const Cluster& cluster, int samples, unsigned seed) {
  Evaluator evaluator(graph, cluster);
  std::mt19937 rng(seed);
  const auto random_gpu = [&] { return static_cast<DeviceId>(rng() % static_cast<unsigned>(cluster.num_devices())); };
  std::vector<DeviceId> class_device(graph.num_colocation_classes());
  std::vector<DeviceId> placement(graph.num_operators());
  double sum = 0;
  for (int s = 0; s < samples; ++s) {
    for (auto& d : class_device) d = random_gpu();
    for (OpId v = 0; v < static_cast<OpId>(placement.size()); ++v) {
      const int cls = graph.op(v).colocation_class;
      placement[v] = cls >= 0 ? class_device[cls] : random_gpu();
    }
    sum += evaluator.latency(placement);
  }
  return sum / samples;
}

}  // namespace placesim
