#include "sim/collectives/collective_steps.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/nccl.h"

namespace placesim {

std::string collective_steps_problem(const CollectiveSpec& spec, const Cluster& cluster) {
  return collective_problem(spec, cluster);
}

std::vector<CollectiveStep> collective_steps(const CollectiveSpec& tuned, const Cluster& cluster) {
  if (const std::string why = collective_steps_problem(tuned, cluster); !why.empty()) throw std::invalid_argument(why);
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
  std::vector<CollectiveStep> steps;
  for (const CollectivePhase& phase : collective_shape(spec, cluster)) {
    // A ring phase is one step of every ring's messages, repeated steps x chunks times; an exchange
    // one step of its messages, repeated chunks times; a tree phase one step of every edge,
    // repeated hops + chunks - 1 times. Each message is 1/c of its piece.
    int c = spec.chunks;
    CollectiveStep step{phase.name, {}, c};
    double piece = spec.bytes;
    if (const auto* ring = std::get_if<RingPhase>(&phase.shape)) {
      step.repeats = std::int64_t{ring->steps} * c;
      piece /= ring->divisor;
    } else if (const auto* tree = std::get_if<TreePhase>(&phase.shape)) {
      piece /= tree->divisor;
      c = tree_chunks(spec, cluster, piece);
      if (cluster.nccl) {
        // NCCL's pipeline (closed_form.cpp): the fill, one chunk hop by hop along the deepest path,
        // then c - 1 steps of every edge at once with the latency hidden by the chunks in flight.
        int hop = 0;
        for (const auto& [from, to] : tree_fill_path(*tree)) {
          const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
          const MessageCost cost = nccl_message_cost(spec, cluster, a, b);
          const double bytes = piece / c * cost.wire_factor * in_server_scale(*tree, cluster, a, b);
          steps.push_back({fmt::format("{}.fill{}", phase.name, ++hop), {{a, b, bytes, cost.overhead_s}}, 1});
        }
        step.repeats = c - 1;
        for_each_pair(phase, [&](int from, int to) {
          const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
          const double wire = nccl_message_cost(spec, cluster, a, b).wire_factor * in_server_scale(*tree, cluster, a, b);
          step.messages.push_back({a, b, piece / c * wire, 0.0});
        });
        if (step.repeats > 0) steps.push_back(std::move(step));
        continue;
      }
      const int depth = tree_depth(*tree);
      step.repeats = std::int64_t{(tree->up ? depth : 0) + (tree->down ? depth : 0)} + c - 1;
    } else {
      piece /= std::get<ExchangePhase>(phase.shape).divisor;
    }
    const auto* tree = std::get_if<TreePhase>(&phase.shape);
    const auto* ring = std::get_if<RingPhase>(&phase.shape);
    const double ring_overhead = ring ? nccl_ring_overhead(spec, cluster, *ring) : 0.0;
    for_each_pair(phase, [&](int from, int to) {
      const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
      const MessageCost cost = nccl_message_cost(spec, cluster, a, b);
      const double scale = tree ? in_server_scale(*tree, cluster, a, b) : 1.0;
      step.messages.push_back({a, b, piece / c * cost.wire_factor * scale, ring ? ring_overhead : cost.overhead_s});
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
    g.graph.add_tensor(node(send, m.src, "send"), node(receive, m.dst, "receive"), m.bytes, false, 1, m.overhead_s);
  g.graph.finalize(fmt::format("collective step '{}'", step.what));
  return g;
}

// The evaluator gives each message of a step its time alone, but the step's messages share links:
// no step ends before its busiest link has carried every byte crossing it, a message's latency
// after it began. Without this floor the evaluator's NVLS-tree on 64 DGX H100s ran at 1,111 GB/s
// of bus bandwidth through 400 GB/s of NICs per server (each GPU's NIC carries two trees' edges).
double busiest_link_time(const CollectiveStep& step, const Cluster& cluster) {
  std::unordered_map<int, double> load;
  double alpha = 0;
  for (const CollectiveMessage& m : step.messages) {
    if (m.src == m.dst || m.bytes <= 0) continue;
    alpha = std::max(alpha, cluster.latency(m.src, m.dst) + m.overhead_s);
    for (const RoutePath& path : cluster.paths(m.src, m.dst))
      for (int l : path.links) load[l] += path.share * m.bytes;
  }
  double busiest = 0;
  for (const auto& [l, bytes] : load) busiest = std::max(busiest, bytes / cluster.link(l).bandwidth);
  return alpha + busiest;
}

EngineRuns run_collective_steps(const CollectiveSpec& tuned, const Cluster& cluster, EngineSet which) {
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
  const double base = spec.bytes > 0 ? nccl_base_latency(spec, cluster) : 0.0;
  EngineRuns total;
  for (std::string_view name : which.engines()) total.runs.push_back({std::string(name), base, 0.0, {}, {}});
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
      for (EngineRun& r : one.runs) {
        r.schedule.reset(), r.network.reset();
        if (r.engine == kEvaluator) r.latency = std::max(r.latency, busiest_link_time(step, cluster));
      }
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
