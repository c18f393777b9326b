#pragma once
// The SimGrid engine: runs one training iteration of a placed graph on a SimGrid platform built
// in C++ from the Cluster (one SimGrid link per placesim Link, the Cluster's routes), so that
// concurrent transfers share link bandwidth.
//
// Model: CM02 with cross-traffic off and a huge TCP gamma; links carry no latency and each
// transfer first waits its route's alpha latency explicitly (SimGrid would otherwise weight
// bandwidth sharing by route latency). One actor per GPU runs its operators one at a time in the
// given order, each taking compute_s / the GPU's compute speed; an operator starts once the
// previous one on its GPU finished and all its inputs arrived. Each cross-GPU tensor with
// bytes > 0 is one flow, started when its producer finishes; a route with several paths (ECMP,
// NIC striping) splits it into one sub-flow per path carrying the path's share of the bytes, and
// the tensor has arrived when the last sub-flow has. Activities are created just in time
// (SimGrid 3.32 is quadratic in started activities).
//
// Platform: a SimGrid star zone in which every path used by a flow is a host of its own whose
// "up" route is the path's links, sending to a sink host with no links. SimGrid routes host to
// host, and this is how one pair of GPUs gets several routes (a full zone would also need a
// routing table quadratic in hosts). Only the paths that flows use are built.
//
// SimGrid allows one engine per process, so `simulate` runs it in a forked child and reads the
// result back through a pipe.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/folding.h"
#include "sim/core/graph.h"
#include "sim/engines/gpu_queue.h"

namespace placesim {

struct FlowRecord {
  EdgeId edge = 0;
  DeviceId src = 0, dst = 0;
  double bytes = 0;
  double start = 0;  // producer finish time: the transfer is requested
  double end = 0;    // the tensor has arrived at the consumer's GPU
};

// One path of a flow: the flow's route has several paths (see Cluster::paths), or this is the
// flow's only one. Sub-flows are listed flow by flow, in the order of Cluster::paths.
struct SubflowRecord {
  std::int32_t flow = 0;  // index in SimulationResult::flows
  std::int32_t path = 0;  // index in cluster.paths(src, dst)
  double bytes = 0;       // the path's share of the flow's bytes
  double end = 0;         // its last byte has arrived
};

struct LinkStats {
  double bytes = 0;   // bytes that crossed the link
  double busy_s = 0;  // time during which at least one flow crossed it
};

struct SimulationResult {
  double latency = 0;
  std::vector<double> start, finish;  // per operator
  std::vector<FlowRecord> flows;
  std::vector<SubflowRecord> subflows;
  std::vector<LinkStats> links;       // per Cluster link
  double wall_seconds = 0;            // host time the simulation took
  // The SimGrid platform (in the child): host time to build it, and its size. Hosts: one per GPU,
  // one per path a flow uses, and the sink; links: those the paths cross.
  double platform_seconds = 0;
  std::int64_t platform_hosts = 0, platform_links = 0;
};


// Runs the simulation in a forked child process. `queue` is Fixed (device_order) or Fcfs (the
// operators whose inputs have all arrived under contention, the one ready first; device_order is then
// only checked, and the order that ran can be read from the start times). Throws std::runtime_error if the child fails,
// std::invalid_argument on an invalid placement or order, or a tensor between unreachable GPUs.
// A folded graph (`fold`, sim/core/folding.h) sends each transfer's bytes once per copy, every
// copy on its own route of the cluster, and delivers them when the last copy has arrived: the
// folded network's flows as they are, not its classes (what checks the flow engine's classes).
SimulationResult simulate(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                          const std::vector<std::vector<OpId>>& device_order, GpuQueue queue = GpuQueue::Fixed,
                          const Folding* fold = nullptr);

// Runs the simulation in this process. SimGrid permits this once per process; use `simulate`.
SimulationResult simulate_in_process(const Graph& graph, const Cluster& cluster,
                                     std::span<const DeviceId> placement,
                                     const std::vector<std::vector<OpId>>& device_order,
                                     GpuQueue queue = GpuQueue::Fixed, const Folding* fold = nullptr);

}  // namespace placesim
