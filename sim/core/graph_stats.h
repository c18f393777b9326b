#pragma once
// Summary statistics of a computation graph (`placesim graph info FILE`) and weakly connected
// components.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

// One decade of operator compute time. Buckets, in order: exactly 0, (0, 1us), [1us, 10us),
// [10us, 100us), [100us, 1ms), [1ms, 10ms), [10ms, 100ms), [100ms, 1s), [1s, inf).
struct ComputeBucket {
  std::string label;        // e.g. "[1us, 10us)"
  double lower_s = 0;       // inclusive, except the (0, 1us) bucket whose lower bound 0 is excluded
  double upper_s = 0;       // exclusive; infinity for the last bucket, 0 for the zero bucket
  std::size_t count = 0;    // operators in the bucket
  double compute_s = 0;     // their total compute time
  double share = 0;         // compute_s / total compute (0 when the graph computes nothing)
};

struct GraphStats {
  std::size_t operators = 0;
  std::size_t tensors = 0;
  double total_compute_s = 0;
  double total_tensor_bytes = 0;
  double total_memory_bytes = 0;
  // Longest compute-only path: no placement can finish an iteration faster.
  double critical_path_s = 0;
  // Most operators with non-zero compute running at the same moment in the ASAP schedule with
  // unlimited GPUs and free communication (each operator starts when all its predecessors have
  // finished; intervals are half-open, so one finishing at t and another starting at t do not
  // overlap). More GPUs than this can never all be busy at once.
  std::size_t max_parallelism = 0;
  // total_compute_s / critical_path_s: the mean number of busy GPUs in that schedule, an upper
  // bound on the speed-up of any placement over one GPU (0 when the critical path is 0).
  double average_parallelism = 0;
  std::size_t weakly_connected_components = 0;
  std::size_t largest_component_operators = 0;
  int colocation_classes = 0;
  std::vector<ComputeBucket> compute_histogram;  // the nine decade buckets above, always all present
};

// `g` must be finalized.
GraphStats compute_stats(const Graph& g);

// A readable multi-line report (ends with a newline).
std::string format_stats(const GraphStats& stats);

// Component id of every operator, ignoring edge direction; ids are dense and numbered in order of
// each component's lowest operator id.
std::vector<std::int32_t> weakly_connected_component_ids(const Graph& g);

// A new finalized graph holding only the largest weakly connected component (ties: the one with
// the lowest operator id), keeping operator and tensor order. Colocation classes that survive are
// renumbered densely, preserving their order. The QuickP code does this to its graphs; placesim
// does it only when asked.
Graph largest_weakly_connected_component(const Graph& g);

}  // namespace placesim
