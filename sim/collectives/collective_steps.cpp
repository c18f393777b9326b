#include "sim/collectives/collective_steps.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

namespace placesim {

std::string collective_steps_problem(const CollectiveSpec& spec, const Cluster& cluster) {
  if (std::string why = collective_problem(spec, cluster); !why.empty()) return why;
  using A = CollectiveAlgorithm;
  const bool chain = spec.algorithm == A::Ring && (spec.op == CollectiveOp::Broadcast || spec.op == CollectiveOp::Reduce);
  if (spec.algorithm == A::Tree || chain)
    return fmt::format("{} by {} pipelines its chunks across steps, which the step model (ranks in lockstep) cannot "
                       "express; run it message by message",
                       enum_name<CollectiveOp>(kCollectiveOpNames, spec.op),
                       enum_name<CollectiveAlgorithm>(kCollectiveAlgorithmNames, spec.algorithm));
  return "";
}

std::vector<CollectiveStep> collective_steps(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_steps_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  using A = CollectiveAlgorithm;
  using Op = CollectiveOp;
  const int n = static_cast<int>(spec.group.size());
  const int c = spec.chunks;
  const double S = spec.bytes;
  std::vector<CollectiveStep> steps;
  // Rings over rank lists, all at once: each rank sends `piece` / c to the next, steps x c times.
  auto rings = [&](const std::vector<std::vector<int>>& orders, std::int64_t ring_steps, double piece, std::string what) {
    CollectiveStep step{std::move(what), {}, ring_steps * c};
    for (const auto& order : orders) {
      const auto m = order.size();
      if (m < 2) continue;
      for (std::size_t i = 0; i < m; ++i)
        step.messages.push_back({spec.group[order[i]], spec.group[order[(i + 1) % m]], piece / c});
    }
    if (!step.messages.empty() && ring_steps > 0) steps.push_back(std::move(step));
  };
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[r] = r;

  switch (spec.algorithm) {
    case A::Ring:
      rings({all}, spec.op == Op::AllReduce ? 2 * (n - 1) : n - 1, S / n, "ring");
      break;
    case A::HalvingDoubling: {
      const int log_n = static_cast<int>(std::bit_width(static_cast<unsigned>(n))) - 1;
      auto exchange = [&](int distance, double bytes, const char* phase) {
        CollectiveStep step{fmt::format("{} distance {}", phase, distance), {}, c};
        for (int r = 0; r < n; ++r) step.messages.push_back({spec.group[r], spec.group[r ^ distance], bytes / c});
        steps.push_back(std::move(step));
      };
      if (spec.op != Op::AllGather)
        for (int i = 1; i <= log_n; ++i) exchange(n >> i, S / std::ldexp(1.0, i), "halving");
      if (spec.op != Op::ReduceScatter)
        for (int i = 1; i <= log_n; ++i) exchange(1 << (i - 1), S * std::ldexp(1.0, i - 1) / n, "doubling");
      break;
    }
    case A::Direct: {
      CollectiveStep step{"direct", {}, static_cast<std::int64_t>(spec.op == Op::AllReduce ? 2 : 1) * c};
      step.messages.reserve(static_cast<std::size_t>(n) * (n - 1));
      for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
          if (q != r) step.messages.push_back({spec.group[r], spec.group[q], S / n / c});
      steps.push_back(std::move(step));
      break;
    }
    case A::Hierarchical:
    case A::MultiLevel: {
      // As sim/collectives/collectives.cpp: ring reduce-scatters from the server up, the top level's ring
      // all-reduce, ring all-gathers back down.
      const auto levels = collective_levels(spec, cluster);
      for (const LevelPhase& p : level_phases(levels, S))
        rings(levels[p.level], p.steps, p.piece,
              fmt::format("level {} {}", p.level, enum_name<CollectiveOp>(kCollectiveOpNames, p.op)));
      break;
    }
    case A::Tree: break;  // refused above
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
