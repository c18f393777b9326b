#pragma once
// Variability: GPUs of one model and kernels are not equally fast, and the slowest participant
// sets every synchronisation (a tensor-parallel collective, a pipeline hand-over, the gradient
// reductions). Two seeded distributions perturb a placed graph before it runs:
// - per GPU, persistent over the iteration: its compute takes f_g times as long, f_g = 1 + cv Z
//   (Z standard normal, f_g at least 0.5). Sinha et al. (SC 2022, "Not all GPUs are created
//   equal") measured 8% average (22% at most) performance variation among GPUs of one SKU in
//   five clusters, outliers 1.5x slower than the median: the range of 1,000 draws is about 6.5 cv,
//   so cv = 0.03 spreads 1,000 GPUs over about 20%;
// - per operator run: its time times 1 + cv Z (at least 0.5), independently (no published
//   figure fixed here: the default is none).
// Draws come from std::mt19937_64(seed) in a fixed order (the GPUs by id, then the compute
// operators by id), through libstdc++'s normal distribution: the same seed gives the same bits.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"

namespace placesim {

// A straggler: a GPU whose compute takes `slowdown` times as long (thermal throttling, a bad
// HBM stack, a noisy neighbour: MegaScale's stragglers), on top of any draw.
struct SlowGpu {
  DeviceId gpu = 0;
  double slowdown = 1;
};

struct Variability {
  double gpu_speed_cv = 0;    // per GPU (above); 0: every GPU at its nominal speed
  double kernel_jitter_cv = 0;  // per operator run; 0: none
  std::uint64_t seed = 1;
  std::vector<SlowGpu> slow_gpus;  // fixed stragglers (no seed needed)
  bool any() const { return gpu_speed_cv > 0 || kernel_jitter_cv > 0 || !slow_gpus.empty(); }
  bool random() const { return gpu_speed_cv > 0 || kernel_jitter_cv > 0; }
};

// The draws of one seed: each GPU's slowdown f_g (its compute_speed divided by it) and each
// operator's factor (1 for communication steps).
struct VariabilityDraw {
  std::vector<double> gpu_slowdown;  // per GPU of the cluster
  std::vector<double> op_factor;     // per operator of the graph
};
// Throws std::invalid_argument for a slow GPU the cluster lacks or a slowdown that is not positive.
VariabilityDraw draw_variability(const Variability& v, int num_devices, const Graph& graph);

// The cluster with each GPU's speed divided by its slowdown, and the graph with each compute
// operator's time times its factor.
Cluster perturbed_cluster(const Cluster& cluster, const VariabilityDraw& draw);
Graph perturbed_graph(const Graph& graph, const VariabilityDraw& draw);

// Mean, standard deviation (over the samples, n - 1), least and largest of a sample.
struct Spread {
  double mean = 0, stddev = 0, min = 0, max = 0;
};
Spread spread_of(std::span<const double> samples);

}  // namespace placesim
