#pragma once
// The SimGrid engine: runs one training iteration of a placed graph on a SimGrid platform built
// in C++ from the Cluster (one host per GPU, one SimGrid link per placesim Link, the Cluster's
// routes), so that concurrent transfers share link bandwidth.
//
// Model: CM02 with cross-traffic off and a huge TCP gamma; links carry no latency and each
// transfer first waits its route's alpha latency explicitly (SimGrid would otherwise weight
// bandwidth sharing by route latency). One actor per GPU runs its operators one at a time in the
// given order; an operator starts once the previous one on its GPU finished and all its inputs
// arrived. Each cross-GPU tensor with bytes > 0 is one flow, started when its producer finishes.
// Activities are created just in time (SimGrid 3.32 is quadratic in started activities).
//
// SimGrid allows one engine per process, so `simulate` runs it in a forked child and reads the
// result back through a pipe.
#include <span>
#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/graph.h"

namespace placesim {

struct FlowRecord {
  EdgeId edge = 0;
  DeviceId src = 0, dst = 0;
  double bytes = 0;
  double start = 0;  // producer finish time: the transfer is requested
  double end = 0;    // the tensor has arrived at the consumer's GPU
};

struct LinkStats {
  double bytes = 0;   // bytes that crossed the link
  double busy_s = 0;  // time during which at least one flow crossed it
};

struct SimulationResult {
  double latency = 0;
  std::vector<double> start, finish;  // per operator
  std::vector<FlowRecord> flows;
  std::vector<LinkStats> links;       // per Cluster link
  double wall_seconds = 0;            // host time the simulation took
};

// Runs the simulation in a forked child process. Throws std::runtime_error if the child fails.
SimulationResult simulate(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                          const std::vector<std::vector<OpId>>& device_order);

// Runs the simulation in this process. SimGrid permits this once per process; use `simulate`.
SimulationResult simulate_in_process(const Graph& graph, const Cluster& cluster,
                                     std::span<const DeviceId> placement,
                                     const std::vector<std::vector<OpId>>& device_order);

}  // namespace placesim
