#include "placement/strategies/heft/heft.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace placesim {

namespace {

struct Busy {
  double start, finish;
};

// Earliest start >= ready for a `duration`-long operator on a GPU whose busy intervals are sorted
// (by start, hence by finish: they never overlap).
double earliest_start(const std::vector<Busy>& busy, double ready, double duration, bool insertion) {
  if (!insertion) return busy.empty() ? ready : std::max(ready, busy.back().finish);
  auto it = std::upper_bound(busy.begin(), busy.end(), ready, [](double t, const Busy& b) { return t < b.finish; });
  double t = ready;
  for (; it != busy.end(); ++it) {
    if (t + duration <= it->start) return t;
    t = std::max(t, it->finish);
  }
  return t;
}

void insert_busy(std::vector<Busy>& busy, Busy b) {
  auto it = std::upper_bound(busy.begin(), busy.end(), b, [](const Busy& x, const Busy& y) {
    return x.start < y.start || (x.start == y.start && x.finish < y.finish);
  });
  busy.insert(it, b);
}

}  // namespace

HeftSchedule heft_schedule(const Graph& graph, const Cluster& cluster, const HeftConfig& config) {
  const std::size_t n = graph.num_operators();
  const int k = cluster.num_devices();
  HeftSchedule s;
  s.placement.assign(n, 0);
  s.start.assign(n, 0);
  s.finish.assign(n, 0);
  s.rank.assign(n, 0);

  // Mean time factor over GPUs: w(i) = compute_s x mean over GPUs of 1 / speed (the mean of
  // Cluster::compute_time). Mean communication cost per tensor over ordered GPU pairs (the
  // paper's: mean latency + bytes / mean bandwidth).
  double mean_inv_speed = 0;
  for (DeviceId d = 0; d < k; ++d) mean_inv_speed += cluster.compute_time(d, 1.0);
  mean_inv_speed = k > 0 ? mean_inv_speed / k : 1.0;
  double mean_latency = 0, mean_bandwidth = 0;
  if (k > 1) {
    for (DeviceId a = 0; a < k; ++a)
      for (DeviceId b = 0; b < k; ++b)
        if (a != b) {
          mean_latency += cluster.latency(a, b);
          mean_bandwidth += cluster.bandwidth(a, b);
        }
    const double pairs = static_cast<double>(k) * (k - 1);
    mean_latency /= pairs;
    mean_bandwidth /= pairs;
  }
  const auto mean_comm = [&](double bytes) { return k > 1 && bytes > 0 ? mean_latency + bytes / mean_bandwidth : 0.0; };

  const auto topo = graph.topological_order();
  std::vector<std::size_t> topo_pos(n);
  for (std::size_t i = 0; i < topo.size(); ++i) topo_pos[topo[i]] = i;
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    double best_succ = 0;
    for (EdgeId e : graph.out_edges(*it)) {
      const Tensor& t = graph.tensor(e);
      best_succ = std::max(best_succ, mean_comm(t.bytes) + s.rank[t.dst]);
    }
    s.rank[*it] = graph.op(*it).compute_s * mean_inv_speed + best_succ;
  }
  s.order.assign(topo.begin(), topo.end());
  std::stable_sort(s.order.begin(), s.order.end(), [&](OpId a, OpId b) { return s.rank[a] > s.rank[b]; });

  // Memory each class needs on the GPU its first member picks.
  std::vector<double> class_memory(graph.num_colocation_classes(), 0);
  for (const Operator& op : graph.operators())
    if (op.colocation_class >= 0) class_memory[op.colocation_class] += op.memory_bytes;
  std::vector<DeviceId> class_device(graph.num_colocation_classes(), -1);
  std::vector<double> used_memory(k, 0);
  std::vector<std::vector<Busy>> busy(k);
  std::vector<double> candidate_start(k);
  std::vector<char> allowed(k);

  for (OpId op : s.order) {
    const Operator& o = graph.op(op);
    const bool follows = o.colocation_class >= 0 && class_device[o.colocation_class] >= 0;
    const double need = o.colocation_class >= 0 ? class_memory[o.colocation_class] : o.memory_bytes;
    if (follows) {
      std::fill(allowed.begin(), allowed.end(), 0);
      allowed[class_device[o.colocation_class]] = 1;
    } else {
      bool any_fits = false;
      for (DeviceId d = 0; d < k; ++d) {
        allowed[d] = !config.memory_aware || used_memory[d] + need <= cluster.device(d).memory_bytes;
        any_fits = any_fits || allowed[d];
      }
      if (!any_fits) {
        std::fill(allowed.begin(), allowed.end(), 1);
        s.memory_overflow = true;
      }
    }
    DeviceId best = -1;
    double best_finish = std::numeric_limits<double>::infinity();
    for (DeviceId d = 0; d < k; ++d) {
      if (!allowed[d]) continue;
      double ready = 0;
      for (EdgeId e : graph.in_edges(op)) {
        const Tensor& t = graph.tensor(e);
        ready = std::max(ready, s.finish[t.src] + cluster.transfer_time(s.placement[t.src], d, t.bytes));
      }
      const double w = cluster.compute_time(d, o.compute_s);
      const double start = earliest_start(busy[d], ready, w, config.insertion);
      // The first allowed GPU is taken even when its finish is infinite (its only inputs come
      // over a pair the cluster cannot reach, say): every operator gets a GPU.
      if (best < 0 || start + w < best_finish) {
        best_finish = start + w;
        best = d;
        candidate_start[d] = start;
      }
    }
    s.placement[op] = best;
    s.start[op] = candidate_start[best];
    s.finish[op] = best_finish;
    s.makespan = std::max(s.makespan, best_finish);
    insert_busy(busy[best], {s.start[op], best_finish});
    if (!follows) {
      used_memory[best] += need;
      if (o.colocation_class >= 0) class_device[o.colocation_class] = best;
    }
  }
  if (!config.memory_aware) {
    for (DeviceId d = 0; d < k; ++d) s.memory_overflow = s.memory_overflow || used_memory[d] > cluster.device(d).memory_bytes;
  }
  return s;
}

PlacementResult Heft::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  HeftSchedule s = heft_schedule(graph, cluster, config_);
  PlacementResult r;
  r.placement = std::move(s.placement);
  r.details["heft_makespan_s"] = s.makespan;
  r.details["memory_overflow"] = s.memory_overflow;
  return r;
}

OptionSchema<HeftConfig> heft_schema() {
  OptionSchema<HeftConfig> s;
  s.flag("insertion", &HeftConfig::insertion,
         "start operators in idle gaps (false: only after a GPU's last operator)");
  s.flag("memory_aware", &HeftConfig::memory_aware,
         "skip GPUs that would run out of memory while another has room");
  return s;
}

StrategyInfo heft_strategy_info() {
  return strategy_info<Heft>(
      "heft", "HEFT list scheduling: upward rank, insertion-based earliest-finish-time GPU choice, memory-aware",
      heft_schema());
}

}  // namespace placesim
