#include "sim/core/execution_graph.h"

#include <chrono>

#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/engines/simgrid_engine.h"

namespace placesim {

OpId ExecutionGraph::add(Operator op, DeviceId gpu) {
  const OpId id = graph.add_operator(std::move(op));
  placement.push_back(gpu);
  return id;
}

EngineRuns run_engines(const ExecutionGraph& g, const Cluster& cluster, EngineChoice which) {
  EngineRuns runs;
  auto seconds_since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::optional<Schedule> order;
  if (which.evaluator) {
    const auto t0 = std::chrono::steady_clock::now();
    order = Evaluator(g.graph, cluster).schedule(g.placement);
    runs.evaluator = order->latency;
    runs.evaluator_wall_s = seconds_since(t0);
  }
  if (which.flow) {
    const auto t0 = std::chrono::steady_clock::now();
    runs.flow = FlowEngine(g.graph, cluster).schedule(g.placement, Priority::Fcfs).latency;
    runs.flow_wall_s = seconds_since(t0);
  }
  if (which.simgrid) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!order) order = Evaluator(g.graph, cluster).schedule(g.placement);
    runs.simgrid = simulate(g.graph, cluster, g.placement, order->device_order, GpuQueue::Fcfs).latency;
    runs.simgrid_wall_s = seconds_since(t0);
  }
  return runs;
}

}  // namespace placesim
