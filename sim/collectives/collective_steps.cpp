#include "sim/collectives/collective_steps.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

std::string collective_steps_problem(const CollectiveSpec& spec, const Cluster& cluster) {
  if (std::string why = collective_problem(spec, cluster); !why.empty()) return why;
  for (const CollectivePhase& phase : collective_shape(spec, cluster))
    if (std::holds_alternative<TreePhase>(phase.shape))
      return fmt::format("{} by {} pipelines its chunks across steps, which the step model (ranks in lockstep) cannot "
                         "express; run it message by message",
                         enum_name<CollectiveOp>(kCollectiveOpNames, spec.op),
                         enum_name<CollectiveAlgorithm>(collective_algorithm_names(), spec.algorithm));
  return "";
}

std::vector<CollectiveStep> collective_steps(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_steps_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  const int c = spec.chunks;
  std::vector<CollectiveStep> steps;
  for (const CollectivePhase& phase : collective_shape(spec, cluster)) {
    // A ring phase is one step of every ring's messages, repeated steps x chunks times; an exchange
    // one step of its messages, repeated chunks times. Each message is 1/c of its piece.
    CollectiveStep step{phase.name, {}, c};
    double piece = spec.bytes;
    if (const auto* ring = std::get_if<RingPhase>(&phase.shape)) {
      step.repeats = std::int64_t{ring->steps} * c;
      piece /= ring->divisor;
    } else {
      piece /= std::get<ExchangePhase>(phase.shape).divisor;
    }
    for_each_pair(phase, [&](int from, int to) {
      step.messages.push_back({spec.group[static_cast<std::size_t>(from)], spec.group[static_cast<std::size_t>(to)], piece / c});
    });
    if (!step.messages.empty() && step.repeats > 0) steps.push_back(std::move(step));
  }
  return steps;
}

ExecutionGraph step_graph(const CollectiveStep& step) {
  ExecutionGraph g;
  std::map<DeviceId, OpId> send, receive;
  auto node = [&](std::map<DeviceId, OpId>& ops, DeviceId gpu, const char* what) {
    auto [it, added] = ops.try_emplace(gpu, -1);
    if (added)
      it->second = g.add_communication_step(fmt::format("gpu{}.{}", gpu, what), gpu);
    return it->second;
  };
  for (const CollectiveMessage& m : step.messages)
    g.graph.add_tensor(node(send, m.src, "send"), node(receive, m.dst, "receive"), m.bytes);
  g.graph.finalize(fmt::format("collective step '{}'", step.what));
  return g;
}

EngineRuns run_collective_steps(const CollectiveSpec& spec, const Cluster& cluster, EngineSet which) {
  EngineRuns total;
  for (std::string_view name : which.engines()) total.runs.push_back({std::string(name), 0.0, 0.0, {}, {}});
  // Steps equal to an earlier one (hierarchical's two intra-server phases) reuse its times.
  std::vector<std::pair<const CollectiveStep*, EngineRuns>> done;
  const std::vector<CollectiveStep> steps = collective_steps(spec, cluster);
  for (const CollectiveStep& step : steps) {
    const auto earlier =
        std::find_if(done.begin(), done.end(), [&](const auto& d) { return d.first->messages == step.messages; });
    EngineRuns one;
    if (earlier != done.end()) {
      one = earlier->second;
      for (EngineRun& r : one.runs) r.wall_s = 0;
    } else {
      // A step's operators are communication steps, in no GPU's queue: the order does not matter.
      one = run_engines(step_graph(step), cluster, which, RunOrder::Fcfs);
      for (EngineRun& r : one.runs) r.schedule.reset(), r.network.reset();
      done.emplace_back(&step, one);
    }
    const auto repeats = static_cast<double>(step.repeats);
    for (std::size_t k = 0; k < one.runs.size(); ++k) {
      total.runs[k].latency += repeats * one.runs[k].latency;
      total.runs[k].wall_s += one.runs[k].wall_s;
    }
  }
  return total;
}

}  // namespace placesim
