#pragma once
// Graphs built into the binary, so that scenarios and tests run with nothing outside the
// repository: the papers' toy examples and a synthetic training-graph generator.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

// Thesis Fig. 3.1: A (5 us) feeds B (10 us) and C (5 us); each tensor takes 5 us at `bandwidth`.
Graph fig31_graph(double bandwidth = 20e9);

// A synthetic training iteration with the shape of real ones: `layers` blocks of `branches`
// parallel chains of `ops_per_branch` operators (an Inception-like fork/join), the mirrored
// backward pass (one gradient operator per forward operator, reading its forward activation),
// and one optimizer update per weighted operator. Compute times are heavy-tailed (log-normal
// around `mean_compute_s`, a third of the operators near zero, as in profiled graphs); tensor sizes
// log-normal around `mean_tensor_bytes`. Deterministic for a given seed.
struct SyntheticGraphConfig {
  int layers = 8;
  int branches = 3;
  int ops_per_branch = 2;
  double mean_compute_s = 100e-6;
  double mean_tensor_bytes = 8e6;
  double mean_memory_bytes = 32e6;
  std::uint64_t seed = 1;
};
Graph synthetic_training_graph(const SyntheticGraphConfig& config);

// The number of operators synthetic_training_graph produces for a config.
std::size_t synthetic_operator_count(const SyntheticGraphConfig& config);

}  // namespace placesim
