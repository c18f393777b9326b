// The event engines behind the Engine interface (sim/engines/engine.h): the evaluator, the flow
// engine and SimGrid. Each adapter only maps an EngineRequest onto its engine's own entry points.
#include "sim/engines/builtin_engines.h"

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/engines/simgrid_engine.h"

namespace placesim {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

const std::vector<std::vector<OpId>>& fixed_order(const EngineRequest& r, std::string_view engine) {
  if (!r.order) throw std::invalid_argument(std::string(engine) + ": a fixed queue needs a per-GPU order");
  return *r.order;
}

// A folded graph's network: the request's, or computed here (`own` keeps it).
const FoldedNetwork* network_of(const PlacedGraph& g, const Cluster& c, const EngineRequest& r, std::optional<FoldedNetwork>& own) {
  if (!g.fold) return nullptr;
  if (r.network) return r.network;
  own = fold_network(g.graph, g.placement, *g.fold, c);
  return &*own;
}

class EvaluatorEngine final : public Engine {
 public:
  EngineRun run(const PlacedGraph& g, const Cluster& c, const EngineRequest& r) const override {
    const auto t0 = std::chrono::steady_clock::now();
    EngineRun out;
    std::optional<FoldedNetwork> own;
    if (const FoldedNetwork* network = network_of(g, c, r, own))
      out.schedule = r.queue == GpuQueue::Fixed ? replay_order(g.graph, c, *network, g.placement, fixed_order(r, kEvaluator))
                                                : Evaluator(g.graph, c, *network).schedule(g.placement, r.queue);
    else
      out.schedule = r.queue == GpuQueue::Fixed ? replay_order(g.graph, c, g.placement, fixed_order(r, kEvaluator))
                                                : Evaluator(g.graph, c).schedule(g.placement, r.queue);
    out.latency = out.schedule->latency;
    out.wall_s = seconds_since(t0);
    return out;
  }
};

class FlowEngineAdapter final : public Engine {
 public:
  EngineRun run(const PlacedGraph& g, const Cluster& c, const EngineRequest& r) const override {
    const auto t0 = std::chrono::steady_clock::now();
    EngineRun out;
    std::optional<FoldedNetwork> own;
    const FoldedNetwork* network = network_of(g, c, r, own);
    FlowEngine flow = network ? FlowEngine(g.graph, c, *network) : FlowEngine(g.graph, c);
    out.schedule = r.queue == GpuQueue::Fixed ? flow.replay(g.placement, fixed_order(r, kFlow))
                                              : flow.schedule(g.placement, r.queue);
    out.latency = out.schedule->latency;
    out.wall_s = seconds_since(t0);
    return out;
  }
};

// Each GPU's operators in topological order: what SimGrid's first-come-first-served actors are
// given (they use its membership and length only; a topological order cannot deadlock).
std::vector<std::vector<OpId>> operators_by_gpu(const PlacedGraph& g, int gpus) {
  std::vector<std::vector<OpId>> out(static_cast<std::size_t>(gpus));
  const std::vector<std::uint8_t> communication = communication_steps(g.graph);
  for (OpId op : g.graph.topological_order())
    if (communication.empty() || !communication[op]) out[g.placement[op]].push_back(op);
  return out;
}

class SimGridEngineAdapter final : public Engine {
 public:
  EngineRun run(const PlacedGraph& g, const Cluster& c, const EngineRequest& r) const override {
    if (r.queue == GpuQueue::Rank) throw std::invalid_argument("simgrid: no rank queue (run it in the scheduler's order)");
    EngineRun out;
    const std::vector<std::vector<OpId>> own =
        r.queue == GpuQueue::Fcfs ? operators_by_gpu(g, c.num_devices()) : std::vector<std::vector<OpId>>{};
    SimulationResult result =
        simulate(g.graph, c, g.placement, r.queue == GpuQueue::Fcfs ? own : fixed_order(r, kSimGrid), r.queue, g.fold);
    out.latency = result.latency;
    out.wall_s = result.wall_seconds;
    Schedule timeline;
    timeline.latency = result.latency;
    timeline.start = result.start;
    timeline.finish = result.finish;
    out.schedule = std::move(timeline);
    out.network = std::move(result);
    return out;
  }
};

}  // namespace

EngineInfo evaluator_engine() {
  EngineInfo info;
  info.name = std::string(kEvaluator);
  info.description =
      "the list schedule, contention-free: a transfer takes latency + bytes / bandwidth of its route (QuickP, HeteroG)";
  info.queues = {GpuQueue::Rank, GpuQueue::Fcfs, GpuQueue::Fixed};
  info.make = [] { return std::make_unique<EvaluatorEngine>(); };
  return info;
}

EngineInfo flow_engine() {
  EngineInfo info;
  info.name = std::string(kFlow);
  info.description = "every transfer a flow sharing its links max-min fair, as SimGrid's CM02 model, in process";
  info.queues = {GpuQueue::Rank, GpuQueue::Fcfs, GpuQueue::Fixed};
  info.make = [] { return std::make_unique<FlowEngineAdapter>(); };
  return info;
}

EngineInfo simgrid_engine() {
  EngineInfo info;
  info.name = std::string(kSimGrid);
  info.description = "the same on SimGrid (CM02), in a forked child: flows, sub-flows and link use recorded";
  info.queues = {GpuQueue::Fcfs, GpuQueue::Fixed};
  info.make = [] { return std::make_unique<SimGridEngineAdapter>(); };
  return info;
}

}  // namespace placesim
