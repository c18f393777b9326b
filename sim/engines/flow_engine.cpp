#include "sim/engines/flow_engine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace placesim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int32_t kFinish = 0;
constexpr std::int32_t kSend = 1;
// SimGrid counts payloads in whole units; the SimGrid engine uses 1/65536 byte
// (kPayloadUnitsPerByte in sim/engines/simgrid_engine.cpp). Sizes are rounded alike here.
constexpr double kPayloadUnitsPerByte = 65536.0;
// SimGrid's surf/precision as the SimGrid engine sets it: an action whose date is within this of
// the clock (seconds) finishes at the clock (double_equals in the lazy action heaps).
constexpr double kTimePrecision = 1e-12;

struct Lower {
  bool operator()(std::int32_t a, std::int32_t b) const { return a > b; }
};
}  // namespace

FlowEngine::FlowEngine(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network) : FlowEngine(graph, cluster) {
  network_ = &network;
  link_bandwidth_ = network.class_bandwidth;
  const std::size_t num_links = link_bandwidth_.size();
  active_.assign(num_links, {});
  link_mark_.assign(num_links, 0);
  link_cap_.resize(num_links);
  link_count_.resize(num_links);
}

FlowEngine::FlowEngine(const Graph& graph, const Cluster& cluster)
    : graph_(graph), cluster_(cluster) {
  const auto n = static_cast<std::int32_t>(graph.num_operators());
  communication_ = communication_steps(graph);

  const auto num_links = cluster.links().size();
  link_bandwidth_.resize(num_links);
  for (std::size_t l = 0; l < num_links; ++l) link_bandwidth_[l] = cluster.link(static_cast<int>(l)).bandwidth;
  active_.resize(num_links);
  link_mark_.assign(num_links, 0);
  link_cap_.resize(num_links);
  link_count_.resize(num_links);

  const int d = cluster.num_devices();
  pending_inputs_.resize(n);
  device_busy_.resize(d);
  device_touched_.resize(d);
  touched_.reserve(d);
  cursor_.resize(d);
  flow_of_edge_.resize(graph.num_tensors());
  // events_ grows as it needs: it holds what is running or waiting out a latency, far fewer than
  // the operators (reserving one per operator took 16 bytes each at 6,144 GPUs' 31 M).
}

// The evaluator's priorities (the same order, from the same function), computed on the first run
// that dispatches by them: FCFS and fixed orders never read them.
void FlowEngine::ensure_priorities() {
  if (!by_priority_.empty() || graph_.num_operators() == 0) return;
  by_priority_ = rank_priority_order(graph_, computation_rank(graph_));
  priority_.resize(by_priority_.size());
  for (std::int32_t k = 0; k < static_cast<std::int32_t>(by_priority_.size()); ++k) priority_[by_priority_[k]] = k;
}

double FlowEngine::latency(std::span<const DeviceId> placement) {
  return run<GpuQueue::Rank>(placement, nullptr, nullptr);
}

Schedule FlowEngine::schedule(std::span<const DeviceId> placement, GpuQueue queue) {
  if (queue == GpuQueue::Fixed) throw std::invalid_argument("FlowEngine::schedule: a fixed order is replay's");
  Schedule s;
  if (queue == GpuQueue::Fcfs) run<GpuQueue::Fcfs>(placement, nullptr, &s);
  else run<GpuQueue::Rank>(placement, nullptr, &s);
  return s;
}

Schedule FlowEngine::replay(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>& device_order) {
  check_device_order(graph_, cluster_.num_devices(), placement, device_order);
  Schedule s;
  run<GpuQueue::Fixed>(placement, &device_order, &s);
  return s;
}

double FlowEngine::replay_latency(std::span<const DeviceId> placement,
                                  const std::vector<std::vector<OpId>>& device_order) {
  return run<GpuQueue::Fixed>(placement, &device_order, nullptr);
}

double FlowEngine::replay_latency_with_cutoff(std::span<const DeviceId> placement,
                                              const std::vector<std::vector<OpId>>& device_order, double cutoff) {
  return run<GpuQueue::Fixed>(placement, &device_order, nullptr, cutoff);
}

FlowEngine::RoutePaths FlowEngine::ensure_route(std::int64_t route, DeviceId src, DeviceId dst) {
  const auto [it, fresh] = route_paths_.try_emplace(route, RoutePaths{static_cast<std::int32_t>(paths_.size()), 0});
  if (!fresh) return it->second;
  const std::vector<RoutePath> paths = cluster_.paths(src, dst);  // once per route, ever
  it->second.num_paths = static_cast<std::int32_t>(paths.size());
  for (const RoutePath& p : paths) {
    paths_.push_back({static_cast<std::int32_t>(path_links_.size()), static_cast<std::int32_t>(p.links.size()), p.share});
    path_links_.insert(path_links_.end(), p.links.begin(), p.links.end());
    path_weights_.resize(path_links_.size(), 1.0);
  }
  classes_.resize(paths_.size(), PathClass{0, 0, 0, kInf, 0, 0, -1});
  targets_.resize(paths_.size());
  class_used_.resize(paths_.size(), 0);
  return it->second;
}

FlowEngine::RoutePaths FlowEngine::ensure_sub_orbit(std::int32_t s) {
  const auto [it, fresh] = route_paths_.try_emplace(s, RoutePaths{static_cast<std::int32_t>(paths_.size()), 0});
  if (!fresh) return it->second;
  const FoldedNetwork::SubOrbit& orbit = network_->sub_orbits[static_cast<std::size_t>(s)];
  it->second.num_paths = static_cast<std::int32_t>(orbit.paths.size());
  for (const FoldedNetwork::Path& p : orbit.paths) {
    paths_.push_back({static_cast<std::int32_t>(path_links_.size()), static_cast<std::int32_t>(p.links.size()), p.share});
    for (const FoldedNetwork::WeightedLink& w : p.links) {
      path_links_.push_back(w.link_class);
      path_weights_.push_back(w.weight);
    }
  }
  classes_.resize(paths_.size(), PathClass{0, 0, 0, kInf, 0, 0, -1});
  targets_.resize(paths_.size());
  class_used_.resize(paths_.size(), 0);
  return it->second;
}

void FlowEngine::add_flows(EdgeId e, DeviceId a, DeviceId b) {
  const Tensor& t = graph_.tensor(e);
  const auto lead = static_cast<std::int32_t>(flows_.size());
  std::int32_t num_subs = flows_.empty() ? 0 : flows_.back().first_sub + flows_.back().num_subs;
  auto add = [&](const RoutePaths& paths, double alpha) {
    flows_.push_back({e, num_subs, paths.num_paths, paths.num_paths, alpha, paths.first_path, lead, 0, 0});
    num_subs += paths.num_paths;
  };
  if (!network_) {
    add(ensure_route(cluster_.route_id(a, b), a, b), cluster_.transfer_alpha(a, b, t));
  } else {
    const FoldedNetwork::RouteSpan* span = network_->find(a, b);
    if (!span) throw std::logic_error("flow engine: a folded transfer whose route its network lacks");
    for (std::int32_t k = 0; k < span->count; ++k) {
      const FoldedNetwork::SubOrbit& s = network_->sub_orbits[static_cast<std::size_t>(span->first + k)];
      add(ensure_sub_orbit(span->first + k), cluster_.transfer_alpha(s.src, s.dst, t));
    }
  }
  flows_[lead].num_flows = flows_[lead].flows_left = static_cast<std::int32_t>(flows_.size()) - lead;
}

// One flow per cross-GPU tensor with bytes, its sub-flows laid out flow by flow.
void FlowEngine::prepare_flows(std::span<const DeviceId> placement) {
  for (const std::int32_t c : used_classes_) {
    classes_[c] = PathClass{0, 0, 0, kInf, 0, 0, -1};
    targets_[c].clear();
    class_used_[c] = 0;
  }
  used_classes_.clear();
  flows_.clear();
  unreachable_ = false;
  const auto tensors = graph_.tensors();
  // Sized once rather than grown by doubling: at thousands of GPUs the flows are tens of millions.
  std::size_t crossing = 0;
  for (const Tensor& t : tensors) crossing += placement[t.src] != route_destination(t, placement) && t.bytes > 0;
  flows_.reserve(crossing);
  for (EdgeId e = 0; e < static_cast<EdgeId>(tensors.size()); ++e) {
    const Tensor& t = tensors[e];
    const DeviceId a = placement[t.src], b = route_destination(t, placement);
    flow_of_edge_[e] = -1;
    if (a == b || !(t.bytes > 0)) continue;
    if (cluster_.route_id(a, b) < 0) {  // never arrives
      unreachable_ = true;
      flow_of_edge_[e] = -2;
      continue;
    }
    flow_of_edge_[e] = static_cast<std::int32_t>(flows_.size());
    add_flows(e, a, b);
  }
  const std::int32_t num_subs = flows_.empty() ? 0 : flows_.back().first_sub + flows_.back().num_subs;
  subs_.resize(num_subs);
  for (std::int32_t f = 0; f < static_cast<std::int32_t>(flows_.size()); ++f) {
    const Flow& flow = flows_[f];
    const Tensor& t = tensors[flow.edge];
    const std::int32_t first_path = flow.first_path;
    for (std::int32_t k = 0; k < flow.num_subs; ++k) {
      Sub& s = subs_[flow.first_sub + k];
      const double units = std::round(flow.num_subs == 1 ? t.bytes * kPayloadUnitsPerByte
                                                         : t.bytes * paths_[first_path + k].share * kPayloadUnitsPerByte);
      s.bytes = std::max(1.0, units) / kPayloadUnitsPerByte;
      s.path = first_path + k;
      s.flow = f;
    }
  }
}

// Brings what each sub-flow of the class has sent up to `now`, at its current rate.
void FlowEngine::advance(std::int32_t cls, double now) {
  PathClass& c = classes_[cls];
  c.sent += c.rate * (now - c.last);
  c.last = now;
}

// The class's next finish at its current rate (its first target; `sent` is up to date).
void FlowEngine::set_finish(std::int32_t cls) {
  PathClass& c = classes_[cls];
  const double left = targets_[cls].front().first - c.sent;
  c.finish = left > 0 ? c.last + left / c.rate : c.last;
  heap_update(cls);
}

void FlowEngine::start_flow(std::int32_t flow, double now) {
  const Flow& f = flows_[flow];
  for (std::int32_t s = f.first_sub; s < f.first_sub + f.num_subs; ++s) {
    const std::int32_t cls = subs_[s].path;
    PathClass& c = classes_[cls];
    if (!class_used_[cls]) {
      class_used_[cls] = 1;
      used_classes_.push_back(cls);
    }
    if (c.count == 0) {
      c.sent = 0;
      c.rate = 0;
      c.last = now;
    } else {
      advance(cls, now);
    }
    auto& heap = targets_[cls];
    heap.emplace_back(c.sent + subs_[s].bytes, s);
    std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    const PathRec& p = paths_[cls];
    for (std::int32_t k = 0; k < p.num_links; ++k) {
      const std::int32_t l = path_links_[p.first_link + k];
      if (c.count == 0) active_[l].push_back(cls);
      dirty_links_.push_back(l);
    }
    // Joining a running class: if it is now the class's first to finish, the class's key must say
    // so (at the current rate, until this instant's solve) before any finish of this instant.
    if (c.count++ > 0 && heap.front().second == s) set_finish(cls);
  }
}

std::int32_t FlowEngine::finish_subflow(std::int32_t cls, double now) {
  PathClass& c = classes_[cls];
  auto& heap = targets_[cls];
  std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
  const std::int32_t s = heap.back().second;
  heap.pop_back();
  --c.count;
  const PathRec& p = paths_[cls];
  for (std::int32_t k = 0; k < p.num_links; ++k) {
    const std::int32_t l = path_links_[p.first_link + k];
    if (c.count == 0) {
      auto& list = active_[l];
      *std::find(list.begin(), list.end(), cls) = list.back();
      list.pop_back();
    }
    dirty_links_.push_back(l);
  }
  if (c.count == 0) {
    heap_remove(cls);
    c.rate = 0;
    c.finish = kInf;
  } else {
    // The others keep their rate until the solve at the end of this instant: the next one may
    // also be due now.
    advance(cls, now);
    set_finish(cls);
  }
  return s;
}

// Max-min fair rates for the connected component(s) of the dirty links: bring every class's sent
// bytes to `now` at its old rate, then progressive filling with equal weights per sub-flow (the
// bottleneck share is a link's remaining capacity over its unfixed sub-flows; every class of a
// link at the smallest share is fixed at that share), then new finish times.
void FlowEngine::solve(double now) {
  if (dirty_links_.empty()) return;
  ++epoch_;
  comp_links_.clear();
  comp_classes_.clear();
  for (const std::int32_t l : dirty_links_)
    if (link_mark_[l] != epoch_) {
      link_mark_[l] = epoch_;
      comp_links_.push_back(l);
    }
  dirty_links_.clear();
  for (std::size_t i = 0; i < comp_links_.size(); ++i) {
    for (const std::int32_t cls : active_[comp_links_[i]]) {
      PathClass& c = classes_[cls];
      if (c.mark == epoch_) continue;
      c.mark = epoch_;
      comp_classes_.push_back(cls);
      const PathRec& p = paths_[cls];
      for (std::int32_t k = 0; k < p.num_links; ++k) {
        const std::int32_t m = path_links_[p.first_link + k];
        if (link_mark_[m] != epoch_) {
          link_mark_[m] = epoch_;
          comp_links_.push_back(m);
        }
      }
    }
  }
  if (comp_classes_.empty()) return;
  ++solves_;
  solved_classes_ += static_cast<std::int64_t>(comp_classes_.size());

  for (const std::int32_t cls : comp_classes_) {
    advance(cls, now);
    classes_[cls].rate = -1;  // unfixed
  }
  for (const std::int32_t l : comp_links_) {
    link_cap_[l] = link_bandwidth_[l];
    link_count_[l] = 0;
  }
  // Whole numbers of weighted sub-flows: exact in any order of summation.
  for (const std::int32_t cls : comp_classes_) {
    const PathRec& p = paths_[cls];
    for (std::int32_t k = 0; k < p.num_links; ++k)
      link_count_[path_links_[p.first_link + k]] += classes_[cls].count * path_weights_[p.first_link + k];
  }
  std::size_t unfixed = comp_classes_.size();
  while (unfixed > 0) {
    double share = kInf;
    for (const std::int32_t l : comp_links_)
      if (link_count_[l] > 0) share = std::min(share, link_cap_[l] / link_count_[l]);
    saturated_.clear();
    for (const std::int32_t l : comp_links_)
      if (link_count_[l] > 0 && link_cap_[l] / link_count_[l] == share) saturated_.push_back(l);
    for (const std::int32_t l : saturated_)
      for (const std::int32_t cls : active_[l]) {
        PathClass& c = classes_[cls];
        if (c.rate >= 0) continue;
        c.rate = share;
        --unfixed;
        const PathRec& p = paths_[cls];
        for (std::int32_t k = 0; k < p.num_links; ++k) {
          const std::int32_t m = path_links_[p.first_link + k];
          const double weight = path_weights_[p.first_link + k];
          link_cap_[m] = std::max(0.0, link_cap_[m] - share * c.count * weight);
          link_count_[m] -= c.count * weight;
        }
      }
  }
  for (const std::int32_t cls : comp_classes_) set_finish(cls);
}

// --- the indexed heap of class finish times ------------------------------------------------------

void FlowEngine::heap_up(std::int32_t pos) {
  const std::int32_t s = heap_[pos];
  const double key = classes_[s].finish;
  while (pos > 0) {
    const std::int32_t parent = (pos - 1) / 2;
    if (!(classes_[heap_[parent]].finish > key)) break;
    heap_[pos] = heap_[parent];
    classes_[heap_[pos]].heap_pos = pos;
    pos = parent;
  }
  heap_[pos] = s;
  classes_[s].heap_pos = pos;
}

void FlowEngine::heap_down(std::int32_t pos) {
  const std::int32_t s = heap_[pos];
  const double key = classes_[s].finish;
  const auto size = static_cast<std::int32_t>(heap_.size());
  for (;;) {
    std::int32_t child = 2 * pos + 1;
    if (child >= size) break;
    if (child + 1 < size && classes_[heap_[child + 1]].finish < classes_[heap_[child]].finish) ++child;
    if (!(classes_[heap_[child]].finish < key)) break;
    heap_[pos] = heap_[child];
    classes_[heap_[pos]].heap_pos = pos;
    pos = child;
  }
  heap_[pos] = s;
  classes_[s].heap_pos = pos;
}

void FlowEngine::heap_update(std::int32_t s) {
  if (classes_[s].heap_pos < 0) {
    heap_.push_back(s);
    heap_up(static_cast<std::int32_t>(heap_.size()) - 1);
  } else {
    heap_up(classes_[s].heap_pos);
    heap_down(classes_[s].heap_pos);
  }
}

void FlowEngine::heap_remove(std::int32_t s) {
  const std::int32_t pos = classes_[s].heap_pos;
  if (pos < 0) return;
  classes_[s].heap_pos = -1;
  const std::int32_t last = heap_.back();
  heap_.pop_back();
  if (last == s) return;
  heap_[pos] = last;
  classes_[last].heap_pos = pos;
  heap_up(pos);
  heap_down(classes_[last].heap_pos);
}

// --- the event loop ------------------------------------------------------------------------------

namespace {
bool event_later(const auto& a, const auto& b) { return a.time > b.time; }
}  // namespace

void FlowEngine::push_event(Event event) {
  events_.push_back(event);
  std::push_heap(events_.begin(), events_.end(), event_later<Event, Event>);
}

template <GpuQueue M>
void FlowEngine::reset_run(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>* order,
                           Schedule* out) {
  const int num_devices = cluster_.num_devices();
  placement_ = placement;
  order_ = order;
  out_ = out;
  solves_ = 0;
  solved_classes_ = 0;
  makespan_ = 0;
  finished_ = 0;
  prepare_flows(placement);
  events_.clear();
  heap_.clear();
  dirty_links_.clear();
  touched_.clear();
  for (auto& list : active_) list.clear();
  std::fill(device_busy_.begin(), device_busy_.end(), 0);
  std::fill(device_touched_.begin(), device_touched_.end(), 0);
  if constexpr (M == GpuQueue::Rank) {
    ready_.resize(num_devices);
    for (auto& heap : ready_) heap.clear();
  } else if constexpr (M == GpuQueue::Fcfs) {
    fcfs_ready_.resize(num_devices);
    for (auto& heap : fcfs_ready_) heap.clear();
  } else {
    std::fill(cursor_.begin(), cursor_.end(), 0);
  }
  // assign, not fill: a schedule written last run took these vectors with it.
  start_.assign(graph_.num_operators(), kInf);
  finish_.assign(graph_.num_operators(), kInf);
  if constexpr (M == GpuQueue::Rank) ensure_priorities();
  if (out) {
    out->device_order.assign(num_devices, {});
    out->busy.assign(num_devices, 0.0);
  }
}

template <GpuQueue M>
void FlowEngine::make_ready(OpId op, double now) {
  if (!communication_.empty() && communication_[op]) {
    // A communication step completes now, without its GPU.
    start_[op] = now;
    push_event({now, kFinish, op});
    return;
  }
  const DeviceId d = placement_[op];
  if constexpr (M == GpuQueue::Rank) {
    ready_[d].push_back(priority_[op]);
    std::push_heap(ready_[d].begin(), ready_[d].end(), Lower{});
  } else if constexpr (M == GpuQueue::Fcfs) {
    fcfs_ready_[d].emplace_back(now, op);
    std::push_heap(fcfs_ready_[d].begin(), fcfs_ready_[d].end(), std::greater<>{});
  }
  touch(d);
}

void FlowEngine::touch(DeviceId d) {
  if (!device_touched_[d]) {
    device_touched_[d] = 1;
    touched_.push_back(d);
  }
}

template <GpuQueue M>
OpId FlowEngine::next_op(int d) {
  if constexpr (M == GpuQueue::Rank) {
    auto& heap = ready_[d];
    if (heap.empty()) return -1;
    std::pop_heap(heap.begin(), heap.end(), Lower{});
    const OpId op = by_priority_[heap.back()];
    heap.pop_back();
    return op;
  } else if constexpr (M == GpuQueue::Fcfs) {
    auto& heap = fcfs_ready_[d];
    if (heap.empty()) return -1;
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const OpId op = heap.back().second;
    heap.pop_back();
    return op;
  } else {
    if (d >= static_cast<int>(order_->size())) return -1;
    const auto& list = (*order_)[d];
    if (cursor_[d] >= list.size() || pending_inputs_[list[cursor_[d]]] > 0) return -1;
    return list[cursor_[d]++];
  }
}

template <GpuQueue M>
void FlowEngine::dispatch(int d, double now) {
  if (device_busy_[d]) return;
  const OpId op = next_op<M>(d);
  if (op < 0) return;
  device_busy_[d] = 1;
  start_[op] = now;
  finish_[op] = now + cluster_.compute_time(d, graph_.op(op).compute_s);
  push_event({finish_[op], kFinish, op});
  if (out_) out_->device_order[d].push_back(op);
}

template <GpuQueue M>
void FlowEngine::finish_op(OpId op, double now) {
  finish_[op] = now;
  ++finished_;
  makespan_ = std::max(makespan_, now);
  if (communication_.empty() || !communication_[op]) {
    device_busy_[placement_[op]] = 0;
    touch(placement_[op]);
  }
  const auto tensors = graph_.tensors();
  for (EdgeId e : graph_.out_edges(op)) {
    const std::int32_t flow = flow_of_edge_[e];
    if (flow == -1) {
      deliver<M>(tensors[e].dst, now);
    } else if (flow >= 0) {
      for (std::int32_t f = flow; f < flow + flows_[flow].num_flows; ++f) {
        if (flows_[f].alpha > 0) push_event({now + flows_[f].alpha, kSend, f});
        else start_flow(f, now);
      }
    }
  }
}

// Everything due at `now` (within SimGrid's time precision) happens at `now`, until nothing more
// is: operators finish, latencies pass, sub-flows end. Once the clock is large (1e9 s) `now +
// kTimePrecision` rounds to `now`; the horizon is then the next double above it, so that what is
// due at `now` itself still happens and time always advances.
template <GpuQueue M>
void FlowEngine::happen(double now) {
  const double horizon = std::max(now + kTimePrecision, std::nextafter(now, kInf));
  const auto tensors = graph_.tensors();
  bool progress = true;
  while (progress) {
    progress = false;
    while (!events_.empty() && events_.front().time < horizon) {
      std::pop_heap(events_.begin(), events_.end(), event_later<Event, Event>);
      const Event ev = events_.back();
      events_.pop_back();
      progress = true;
      if (ev.kind == kFinish) finish_op<M>(ev.id, now);
      else start_flow(ev.id, now);
    }
    while (!heap_.empty() && classes_[heap_.front()].finish < horizon) {
      const std::int32_t s = finish_subflow(heap_.front(), now);
      progress = true;
      Flow& f = flows_[subs_[s].flow];
      if (--f.subs_left == 0 && --flows_[f.lead].flows_left == 0) deliver<M>(tensors[f.edge].dst, now);
    }
  }
}

template <GpuQueue M>
void FlowEngine::write_schedule(Schedule& out) {
  const auto n = static_cast<OpId>(graph_.num_operators());
  out.latency = makespan_;
  // Moved, not copied: at thousands of GPUs a copy is 16 bytes per operator held twice.
  out.start = std::move(start_);
  out.finish = std::move(finish_);
  if constexpr (M == GpuQueue::Rank) {
    for (OpId i = 0; i < n; ++i) out.busy[placement_[i]] += cluster_.compute_time(placement_[i], graph_.op(i).compute_s);
  } else {
    for (int d = 0; d < cluster_.num_devices(); ++d)
      for (OpId op : out.device_order[d]) out.busy[d] += cluster_.compute_time(d, graph_.op(op).compute_s);
  }
  out.memory = device_memory(graph_, placement_, cluster_.num_devices());
}

template <GpuQueue M>
double FlowEngine::run(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>* order,
                       Schedule* out, double cutoff) {
  const auto n = static_cast<std::int32_t>(graph_.num_operators());
  reset_run<M>(placement, order, out);
  // The caller's placement, order and output are borrowed for this run only: nothing keeps them
  // once it returns (early, past the cutoff, too).
  struct Release {
    FlowEngine& engine;
    ~Release() {
      engine.placement_ = {};
      engine.order_ = nullptr;
      engine.out_ = nullptr;
    }
  } release{*this};
  for (OpId i = 0; i < n; ++i) {
    pending_inputs_[i] = static_cast<std::int32_t>(graph_.in_edges(i).size());
    if (pending_inputs_[i] == 0) make_ready<M>(i, 0.0);
  }
  touched_.clear();
  std::fill(device_touched_.begin(), device_touched_.end(), 0);
  for (int d = 0; d < cluster_.num_devices(); ++d) dispatch<M>(d, 0.0);

  for (;;) {
    const double t_event = events_.empty() ? kInf : events_.front().time;
    const double t_flow = heap_.empty() ? kInf : classes_[heap_.front()].finish;
    const double now = std::min(t_event, t_flow);
    if (now == kInf) break;
    if (now > cutoff) return kInf;  // something still finishes after the cutoff
    // GPUs pick their next operator only once all that happens now is known, then the touched
    // rates are solved.
    happen<M>(now);
    for (const std::int32_t d : touched_) {
      device_touched_[d] = 0;
      dispatch<M>(d, now);
    }
    touched_.clear();
    solve(now);
  }

  if (finished_ < n) makespan_ = kInf;  // a tensor between unreachable GPUs never arrived
  if (out) write_schedule<M>(*out);
  return makespan_;
}

}  // namespace placesim
