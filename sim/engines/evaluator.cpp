#include "sim/engines/evaluator.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "sim/core/errors.h"
#include "sim/engines/folded_network.h"

namespace placesim {

namespace {
constexpr std::int32_t kFinish = 0;
constexpr std::int32_t kReady = 1;

// Per-GPU min-heaps of ready operators: GpuQueue::Rank keys them by priority position (0 = highest
// rank), GpuQueue::Fcfs by (arrival of the last input, operator id).
struct Lower {
  bool operator()(std::int32_t a, std::int32_t b) const { return a > b; }
};
}  // namespace

Evaluator::Evaluator(const Graph& graph, const Cluster& cluster)
    : graph_(graph), cluster_(cluster), rank_(computation_rank(graph)) {
  const auto n = static_cast<std::int32_t>(graph.num_operators());
  // Priority 0 is the highest rank (rank_priority_order breaks ties).
  by_priority_ = rank_priority_order(graph, rank_);
  priority_.resize(n);
  for (std::int32_t k = 0; k < n; ++k) priority_[by_priority_[k]] = k;

  // Heterogeneous GPUs run compute_s / compute_speed: the bounds assume every operator on the
  // fastest GPU (critical path) and perfect sharing of the work by speed (work per device).
  double total_speed = 0;
  for (const Device& dev : cluster.devices()) {
    max_speed_ = std::max(max_speed_, dev.compute_speed);
    total_speed += dev.compute_speed;
  }
  bounds_.critical_path = n ? *std::max_element(rank_.begin(), rank_.end()) / max_speed_ : 0.0;
  bounds_.work_per_device = total_speed > 0 ? graph.total_compute() / total_speed : 0.0;
  bounds_.memory_per_device = cluster.num_devices() > 0 ? graph.total_memory() / cluster.num_devices() : 0.0;

  communication_ = communication_steps(graph);

  const int d = cluster.num_devices();
  ready_.assign(d, {});
  for (auto& heap : ready_) heap.reserve(16);
  events_.reserve(n + 1);
  pending_inputs_.resize(n);
  inputs_arrive_.resize(n);
  start_.resize(n);
  finish_.resize(n);
  device_busy_.resize(d);
  device_touched_.resize(d);
  touched_.reserve(d);
}

Evaluator::Evaluator(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network) : Evaluator(graph, cluster) {
  network_ = &network;
}

void Evaluator::prepare_folded(std::span<const DeviceId> placement) {
  const auto tensors = graph_.tensors();
  folded_time_.resize(tensors.size());
  for (std::size_t e = 0; e < tensors.size(); ++e)
    folded_time_[e] =
        folded_transfer_time(*network_, cluster_, placement[tensors[e].src], route_destination(tensors[e], placement), tensors[e]).seconds;
}

double Evaluator::latency(std::span<const DeviceId> placement) {
  return run<GpuQueue::Rank>(placement, nullptr, std::numeric_limits<double>::infinity());
}

double Evaluator::latency_with_cutoff(std::span<const DeviceId> placement, double cutoff) {
  return run<GpuQueue::Rank>(placement, nullptr, cutoff);
}

double Evaluator::latency_with_order(std::span<const DeviceId> placement, double cutoff,
                                     std::vector<std::vector<OpId>>& order) {
  return run<GpuQueue::Rank>(placement, nullptr, cutoff, &order);
}

Schedule Evaluator::schedule(std::span<const DeviceId> placement, GpuQueue queue) {
  if (queue == GpuQueue::Fixed) throw std::invalid_argument("Evaluator::schedule: a fixed order is replay_order's");
  Schedule s;
  if (queue == GpuQueue::Fcfs) {
    fcfs_ready_.resize(cluster_.num_devices());
    run<GpuQueue::Fcfs>(placement, &s, std::numeric_limits<double>::infinity());
  } else {
    run<GpuQueue::Rank>(placement, &s, std::numeric_limits<double>::infinity());
  }
  return s;
}

template <GpuQueue P>
void Evaluator::push_ready(int d, OpId op) {
  if constexpr (P == GpuQueue::Rank) {
    auto& heap = ready_[d];
    heap.push_back(priority_[op]);
    std::push_heap(heap.begin(), heap.end(), Lower{});
  } else {
    auto& heap = fcfs_ready_[d];
    heap.emplace_back(inputs_arrive_[op], op);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  }
}

template <GpuQueue P>
OpId Evaluator::pop_ready(int d) {
  if constexpr (P == GpuQueue::Rank) {
    auto& heap = ready_[d];
    std::pop_heap(heap.begin(), heap.end(), Lower{});
    const OpId op = by_priority_[heap.back()];
    heap.pop_back();
    return op;
  } else {
    auto& heap = fcfs_ready_[d];
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const OpId op = heap.back().second;
    heap.pop_back();
    return op;
  }
}

template <GpuQueue P>
double Evaluator::run(std::span<const DeviceId> placement, Schedule* out, double cutoff,
                      std::vector<std::vector<OpId>>* order) {
  const auto n = static_cast<std::int32_t>(graph_.num_operators());
  const int num_devices = cluster_.num_devices();
  const auto tensors = graph_.tensors();
  constexpr double kOverCutoff = std::numeric_limits<double>::infinity();
  // time + rank sums a path in another order than the schedule does: the slack keeps rounding
  // from ever rejecting a schedule whose makespan is exactly `cutoff` (infinity stays infinity).
  const double rank_cutoff = cutoff + 1e-9 * std::fabs(cutoff);

  // Events are ordered by time; at equal times finishes come first, then by priority, so that
  // everything that happens at one instant is known before any idle GPU picks its next operator
  // (so the order among events of one instant changes nothing, whatever the policy).
  auto later = [&](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time > b.time;
    if (a.kind != b.kind) return a.kind > b.kind;
    return priority_[a.op] > priority_[b.op];
  };

  events_.clear();
  touched_.clear();
  if constexpr (P == GpuQueue::Rank)
    for (auto& heap : ready_) heap.clear();
  else
    for (auto& heap : fcfs_ready_) heap.clear();
  std::fill(device_busy_.begin(), device_busy_.end(), 0);
  std::fill(device_touched_.begin(), device_touched_.end(), 0);
  const bool communication = !communication_.empty();
  if (network_) prepare_folded(placement);
  // A communication step whose inputs have all arrived at `t` completes at `t`, as a finish event.
  auto communicate = [&](OpId op, double t) {
    start_[op] = finish_[op] = t;
    events_.push_back({t, kFinish, op});
    std::push_heap(events_.begin(), events_.end(), later);
  };
  for (OpId i = 0; i < n; ++i) {
    pending_inputs_[i] = static_cast<std::int32_t>(graph_.in_edges(i).size());
    inputs_arrive_[i] = 0.0;
    if (pending_inputs_[i] == 0) {
      if (communication && communication_[i]) communicate(i, 0.0);
      else push_ready<P>(placement[i], i);
    }
  }
  if (out) {
    out->device_order.assign(num_devices, {});
    out->busy.assign(num_devices, 0.0);
    order = &out->device_order;
  } else if (order) {
    order->resize(num_devices);
    for (auto& list : *order) list.clear();  // keeps the capacity: no allocation once warm
  }

  // Returns false when the operator it starts proves the makespan exceeds `cutoff`.
  auto dispatch = [&](int d, double now) {
    if (device_busy_[d] || ready_empty<P>(d)) return true;
    const OpId op = pop_ready<P>(d);
    start_[op] = now;
    finish_[op] = now + cluster_.compute_time(d, graph_.op(op).compute_s);
    if (finish_[op] > cutoff || now + rank_[op] / max_speed_ > rank_cutoff) return false;
    device_busy_[d] = 1;
    events_.push_back({finish_[op], kFinish, op});
    std::push_heap(events_.begin(), events_.end(), later);
    if (order) (*order)[d].push_back(op);
    return true;
  };

  for (int d = 0; d < num_devices; ++d)
    if (!dispatch(d, 0.0)) return kOverCutoff;
  double makespan = 0.0;
  while (!events_.empty()) {
    const double now = events_.front().time;
    // Apply every event at `now`, remembering which GPUs may have work to pick up.
    while (!events_.empty() && events_.front().time == now) {
      std::pop_heap(events_.begin(), events_.end(), later);
      const Event ev = events_.back();
      events_.pop_back();
      if (ev.kind == kFinish) {
        const DeviceId d = placement[ev.op];
        if (!communication || !communication_[ev.op]) {
          device_busy_[d] = 0;
          touch(d);
        } else if (now > cutoff) {
          return kOverCutoff;  // compute is checked when it starts; a communication step here
        }
        makespan = std::max(makespan, now);
        for (EdgeId e : graph_.out_edges(ev.op)) {
          const OpId j = tensors[e].dst;
          const double arrive = now + (network_ ? folded_time_[e] : cluster_.transfer_time(d, placement[j], tensors[e]));
          inputs_arrive_[j] = std::max(inputs_arrive_[j], arrive);
          if (--pending_inputs_[j] == 0) {
            if (communication && communication_[j]) {
              communicate(j, inputs_arrive_[j]);
            } else if (inputs_arrive_[j] <= now) {
              push_ready<P>(placement[j], j);
              touch(placement[j]);
            } else {
              if (inputs_arrive_[j] + rank_[j] / max_speed_ > rank_cutoff) return kOverCutoff;
              events_.push_back({inputs_arrive_[j], kReady, j});
              std::push_heap(events_.begin(), events_.end(), later);
            }
          }
        }
      } else {
        push_ready<P>(placement[ev.op], ev.op);
        touch(placement[ev.op]);
      }
    }
    // Only a GPU that became idle or received ready work at `now` can start something. (Scanning
    // every GPU at every instant made a long chain on thousands of GPUs cost operators x GPUs.)
    // The order does not matter: events are ordered by (time, kind, priority), a total order.
    for (const std::int32_t d : touched_) {
      device_touched_[d] = 0;
      if (!device_busy_[d] && !ready_empty<P>(d) && !dispatch(d, now)) return kOverCutoff;
    }
    touched_.clear();
  }

  if (out) {
    out->latency = makespan;
    out->start = start_;
    out->finish = finish_;
    // Compute time per GPU: by operator id under rank priority; under FCFS in the order each GPU ran
    // its operators, the sum replay_order makes (the two sums can differ in the last bit).
    if constexpr (P == GpuQueue::Fcfs) {
      for (int d = 0; d < num_devices; ++d)
        for (OpId op : out->device_order[d]) out->busy[d] += cluster_.compute_time(d, graph_.op(op).compute_s);
    } else {
      for (OpId i = 0; i < n; ++i)
        out->busy[placement[i]] += cluster_.compute_time(placement[i], graph_.op(i).compute_s);
    }
    out->memory = device_memory(graph_, placement, num_devices);
  }
  return makespan;
}

void check_device_order(const Graph& graph, int num_devices, std::span<const DeviceId> placement,
                        const std::vector<std::vector<OpId>>& device_order) {
  const auto n = static_cast<std::int64_t>(graph.num_operators());
  if (static_cast<std::int64_t>(placement.size()) != n)
    throw std::invalid_argument(
        fmt::format("placement has {} entries but the graph has {} operators", placement.size(), n));
  for (std::int64_t i = 0; i < n; ++i)
    if (placement[i] < 0 || placement[i] >= num_devices)
      throw std::invalid_argument(fmt::format("operator '{}' is placed on GPU {}, but the cluster has GPUs 0..{}",
                                              graph.op(static_cast<OpId>(i)).name, placement[i], num_devices - 1));
  if (static_cast<int>(device_order.size()) > num_devices)
    throw std::invalid_argument(
        fmt::format("device_order has {} entries but the cluster has {} GPUs", device_order.size(), num_devices));

  // Each operator is listed once, by the GPU it is placed on. `blockers` counts, per operator,
  // its inputs plus its predecessor in its GPU's order; a topological pass over those edges
  // finishes iff the order cannot deadlock (durations are finite, so only the structure matters).
  std::vector<std::int32_t> listed(n, 0), blockers(n, 0);
  std::vector<OpId> next_on_device(n, -1);
  for (int d = 0; d < static_cast<int>(device_order.size()); ++d) {
    const auto& order = device_order[d];
    for (std::size_t k = 0; k < order.size(); ++k) {
      const OpId op = order[k];
      if (op < 0 || op >= n)
        throw std::invalid_argument(fmt::format("device_order of GPU {} lists operator id {}, which does not exist", d, op));
      if (placement[op] != d)
        throw std::invalid_argument(fmt::format("device_order of GPU {} lists operator '{}', which is placed on GPU {}",
                                                d, graph.op(op).name, placement[op]));
      if (graph.op(op).communication)
        throw std::invalid_argument(fmt::format(
            "device_order of GPU {} lists operator '{}', a communication step, which runs in no GPU's order", d,
            graph.op(op).name));
      if (++listed[op] > 1)
        throw std::invalid_argument(fmt::format("operator '{}' appears more than once in device_order", graph.op(op).name));
      if (k + 1 < order.size()) next_on_device[op] = order[k + 1];
      if (k > 0) ++blockers[op];
    }
  }
  for (std::int64_t i = 0; i < n; ++i) {
    if (listed[i] == 0 && !graph.op(static_cast<OpId>(i)).communication)
      throw std::invalid_argument(fmt::format("operator '{}' is missing from device_order of GPU {}",
                                              graph.op(static_cast<OpId>(i)).name, placement[i]));
    blockers[i] += static_cast<std::int32_t>(graph.in_edges(static_cast<OpId>(i)).size());
  }
  std::vector<OpId> ready;
  ready.reserve(n);
  for (OpId i = 0; i < n; ++i)
    if (blockers[i] == 0) ready.push_back(i);
  std::size_t done = 0;
  while (done < ready.size()) {
    const OpId op = ready[done++];
    for (EdgeId e : graph.out_edges(op))
      if (--blockers[graph.tensor(e).dst] == 0) ready.push_back(graph.tensor(e).dst);
    if (next_on_device[op] >= 0 && --blockers[next_on_device[op]] == 0) ready.push_back(next_on_device[op]);
  }
  if (static_cast<std::int64_t>(done) == n) return;

  // Name the culprit: the first operator of a GPU that never runs has had its GPU predecessor
  // run, so it waits for an input whose producer never runs.
  std::vector<std::uint8_t> ran(n, 0);
  for (OpId op : ready) ran[op] = 1;
  for (int d = 0; d < static_cast<int>(device_order.size()); ++d) {
    const auto stuck = std::find_if(device_order[d].begin(), device_order[d].end(), [&](OpId op) { return !ran[op]; });
    if (stuck == device_order[d].end()) continue;
    for (EdgeId e : graph.in_edges(*stuck))
      if (const OpId src = graph.tensor(e).src; !ran[src])
        throw std::invalid_argument(fmt::format(
            "device_order deadlocks: operator '{}' on GPU {} waits for '{}' on GPU {}, which can never run before it "
            "({} of {} operators can run)",
            graph.op(*stuck).name, d, graph.op(src).name, placement[src], done, n));
  }
  throw std::invalid_argument(fmt::format("device_order deadlocks: only {} of {} operators can run", done, n));
}

namespace {
// replay_order with each transfer's time from `transfer_time(tensor)`.
template <class TransferTime>
Schedule replay_order_timed(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                            const std::vector<std::vector<OpId>>& device_order, const TransferTime& transfer_time) {
  check_device_order(graph, cluster.num_devices(), placement, device_order);
  std::vector<double> compute(graph.num_operators()), transfer(graph.num_tensors());
  for (OpId i = 0; i < static_cast<OpId>(compute.size()); ++i)
    compute[i] = cluster.compute_time(placement[i], graph.op(i).compute_s);
  for (EdgeId e = 0; e < static_cast<EdgeId>(transfer.size()); ++e) transfer[e] = transfer_time(graph.tensor(e));
  return replay_order_with_costs(graph, cluster.num_devices(), placement, device_order, compute, transfer);
}
}  // namespace

Schedule replay_order(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                      const std::vector<std::vector<OpId>>& device_order) {
  return replay_order_timed(graph, cluster, placement, device_order,
                            [&](const Tensor& t) { return cluster.transfer_time(placement[t.src], placement[t.dst], t); });
}

Schedule replay_order(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network,
                      std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>& device_order) {
  return replay_order_timed(graph, cluster, placement, device_order, [&](const Tensor& t) {
    return folded_transfer_time(network, cluster, placement[t.src], route_destination(t, placement), t).seconds;
  });
}

Schedule replay_order_with_costs(const Graph& graph, int num_devices, std::span<const DeviceId> placement,
                                 const std::vector<std::vector<OpId>>& device_order, std::span<const double> compute,
                                 std::span<const double> transfer) {
  const auto n = static_cast<std::int32_t>(graph.num_operators());
  // The order adds an edge from each operator to its successor on the same GPU; a topological
  // pass over data plus order edges gives every start time.
  std::vector<OpId> next_on_device(n, -1);
  std::vector<std::int32_t> waiting(n, 0);
  for (const auto& order : device_order)
    for (std::size_t k = 0; k + 1 < order.size(); ++k) {
      next_on_device[order[k]] = order[k + 1];
      ++waiting[order[k + 1]];
    }
  for (OpId i = 0; i < n; ++i) waiting[i] += static_cast<std::int32_t>(graph.in_edges(i).size());

  Schedule s;
  s.start.assign(n, 0.0);
  s.finish.assign(n, 0.0);
  s.device_order = device_order;
  s.device_order.resize(num_devices);
  s.busy.assign(num_devices, 0.0);
  std::vector<double> ready_at(n, 0.0);
  std::vector<OpId> queue;
  queue.reserve(n);
  for (OpId i = 0; i < n; ++i)
    if (waiting[i] == 0) queue.push_back(i);
  auto release = [&](OpId j, double t) {
    ready_at[j] = std::max(ready_at[j], t);
    if (--waiting[j] == 0) queue.push_back(j);
  };
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const OpId op = queue[head];
    s.start[op] = ready_at[op];
    s.finish[op] = s.start[op] + compute[op];
    s.latency = std::max(s.latency, s.finish[op]);
    s.busy[placement[op]] += compute[op];
    if (next_on_device[op] >= 0) release(next_on_device[op], s.finish[op]);
    for (EdgeId e : graph.out_edges(op)) release(graph.tensor(e).dst, s.finish[op] + transfer[e]);
  }
  if (static_cast<std::int32_t>(queue.size()) < n)
    throw std::invalid_argument(fmt::format("device_order deadlocks: only {} of {} operators can run", queue.size(), n));
  s.memory = device_memory(graph, placement, num_devices);
  return s;
}

std::vector<double> device_memory(const Graph& graph, std::span<const DeviceId> placement, int num_devices) {
  std::vector<double> mem(num_devices, 0.0);
  for (std::size_t i = 0; i < placement.size(); ++i) mem[placement[i]] += graph.op(static_cast<OpId>(i)).memory_bytes;
  return mem;
}

void validate_placement(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                        const std::string& who) {
  if (placement.size() != graph.num_operators())
    throw InputError(who, "placement",
                     fmt::format("expected one GPU per operator ({}), got {}", graph.num_operators(), placement.size()));
  std::vector<DeviceId> class_device(graph.num_colocation_classes(), -1);
  for (std::size_t i = 0; i < placement.size(); ++i) {
    const Operator& op = graph.op(static_cast<OpId>(i));
    if (placement[i] < 0 || placement[i] >= cluster.num_devices())
      throw InputError(who, fmt::format("placement of '{}'", op.name),
                       fmt::format("GPU {} does not exist (cluster has {} GPUs)", placement[i], cluster.num_devices()));
    if (op.colocation_class >= 0) {
      DeviceId& d = class_device[op.colocation_class];
      if (d < 0) d = placement[i];
      else if (d != placement[i])
        throw InputError(who, fmt::format("placement of '{}'", op.name),
                         fmt::format("colocation class {} is split across GPUs {} and {}", op.colocation_class, d, placement[i]));
    }
  }
}

}  // namespace placesim
