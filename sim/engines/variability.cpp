#include "sim/engines/variability.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <stdexcept>

namespace placesim {

namespace {

constexpr double kLeastFactor = 0.5;  // a draw this far below 1 is an outlier the normal invents

}  // namespace

VariabilityDraw draw_variability(const Variability& v, int num_devices, const Graph& graph) {
  std::mt19937_64 rng(v.seed);
  std::normal_distribution<double> z(0.0, 1.0);
  VariabilityDraw d;
  d.gpu_slowdown.assign(static_cast<std::size_t>(num_devices), 1.0);
  d.op_factor.assign(graph.num_operators(), 1.0);
  if (v.gpu_speed_cv > 0)
    for (double& f : d.gpu_slowdown) f = std::max(kLeastFactor, 1.0 + v.gpu_speed_cv * z(rng));
  if (v.kernel_jitter_cv > 0)
    for (OpId op = 0; op < static_cast<OpId>(graph.num_operators()); ++op)
      if (!graph.op(op).communication && graph.op(op).compute_s > 0)
        d.op_factor[static_cast<std::size_t>(op)] = std::max(kLeastFactor, 1.0 + v.kernel_jitter_cv * z(rng));
  for (const SlowGpu& slow : v.slow_gpus) {
    if (slow.gpu < 0 || slow.gpu >= num_devices || !(slow.slowdown > 0))
      throw std::invalid_argument(fmt::format("a slow GPU {} x {}: expected a GPU of the cluster's {} and a positive slowdown",
                                              slow.gpu, slow.slowdown, num_devices));
    d.gpu_slowdown[static_cast<std::size_t>(slow.gpu)] *= slow.slowdown;
  }
  return d;
}

Cluster perturbed_cluster(const Cluster& cluster, const VariabilityDraw& draw) {
  Cluster out = cluster;
  for (DeviceId g = 0; g < cluster.num_devices(); ++g)
    out.set_compute_speed(g, cluster.device(g).compute_speed / draw.gpu_slowdown[static_cast<std::size_t>(g)]);
  return out;
}

Graph perturbed_graph(const Graph& graph, const VariabilityDraw& draw) {
  Graph out = graph;
  for (OpId op = 0; op < static_cast<OpId>(graph.num_operators()); ++op)
    if (draw.op_factor[static_cast<std::size_t>(op)] != 1.0)
      out.set_compute_s(op, graph.op(op).compute_s * draw.op_factor[static_cast<std::size_t>(op)]);
  return out;
}

Spread spread_of(std::span<const double> samples) {
  Spread s;
  if (samples.empty()) return s;
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  for (double x : samples) s.mean += x;
  s.mean /= static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double sum = 0;
    for (double x : samples) sum += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sum / static_cast<double>(samples.size() - 1));
  }
  return s;
}

}  // namespace placesim
