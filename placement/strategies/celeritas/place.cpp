// Order-Place and Adjusting Placement (§5.2, Algorithm 2) over the coarse graph.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "placement/strategies/celeritas/celeritas.h"

namespace placesim::celeritas {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Placement units (a colocation class, or a coarse operator without one) and the memory charged
// per GPU; a unit's whole memory is charged when its first member is placed.
class Units {
 public:
  Units(const Graph& coarse, const Cluster& cluster, double memory_fraction)
      : classes_(coarse.num_colocation_classes()), used_(cluster.num_devices(), 0.0) {
    const auto n = static_cast<OpId>(coarse.num_operators());
    unit_of_.resize(n);
    memory_.assign(classes_ + n, 0.0);
    device_.assign(classes_ + n, -1);
    for (OpId v = 0; v < n; ++v) {
      const int cls = coarse.op(v).colocation_class;
      unit_of_[v] = cls >= 0 ? cls : classes_ + v;
      memory_[unit_of_[v]] += coarse.op(v).memory_bytes;
    }
    for (const Device& d : cluster.devices()) budget_.push_back(d.memory_bytes * memory_fraction);
  }
  // The GPU the operator's unit is already on, or -1.
  DeviceId placed(OpId v) const { return device_[unit_of_[v]]; }
  bool fits(OpId v, DeviceId d) const { return used_[d] + memory_[unit_of_[v]] <= budget_[d]; }
  void place(OpId v, DeviceId d) {
    device_[unit_of_[v]] = d;
    used_[d] += memory_[unit_of_[v]];
  }
  // Best effort: the GPU with the most free budget (lowest index on ties).
  DeviceId most_free() const {
    DeviceId best = 0;
    for (DeviceId d = 1; d < static_cast<DeviceId>(used_.size()); ++d)
      if (budget_[d] - used_[d] > budget_[best] - used_[best]) best = d;
    return best;
  }
  void report(CoarsePlacement& out) const {
    out.device_memory = used_;
    out.budget = budget_;
  }

 private:
  int classes_;
  std::vector<std::int32_t> unit_of_;
  std::vector<double> memory_;
  std::vector<DeviceId> device_;
  std::vector<double> used_, budget_;
};

void check_order(const Graph& coarse, std::span<const OpId> order) {
  if (order.size() != coarse.num_operators())
    throw std::invalid_argument("celeritas placement: the order must list every coarse operator once");
}

// A GPU's busy intervals, sorted and disjoint, with HEFT-style insertion.
struct Timeline {
  std::vector<std::pair<double, double>> busy;  // [start, finish)
  // Earliest t >= ready with [t, t + duration) free.
  double earliest_slot(double ready, double duration) const {
    auto it = std::upper_bound(busy.begin(), busy.end(), ready,
                               [](double t, const std::pair<double, double>& b) { return t < b.second; });
    double t = ready;
    for (; it != busy.end(); ++it) {
      if (it->first >= t + duration) return t;
      t = std::max(t, it->second);
    }
    return t;
  }
  void insert(double start, double finish) {
    // By (start, finish): a zero-length interval goes before one starting at the same time, so
    // finishes stay sorted too (earliest_slot searches them).
    const std::pair<double, double> interval{start, finish};
    busy.insert(std::upper_bound(busy.begin(), busy.end(), interval), interval);
  }
};

}  // namespace

CoarsePlacement order_place(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                            double memory_fraction) {
  check_order(coarse, order);
  Units units(coarse, cluster, memory_fraction);
  CoarsePlacement out;
  out.placement.assign(coarse.num_operators(), 0);
  DeviceId current = 0;
  for (OpId v : order) {
    DeviceId d = units.placed(v);
    if (d < 0) {
      d = current;
      while (d < cluster.num_devices() && !units.fits(v, d)) ++d;
      if (d < cluster.num_devices()) {
        current = d;
      } else {
        d = units.most_free();
        ++out.memory_fallbacks;
      }
      units.place(v, d);
    }
    out.placement[v] = d;
  }
  units.report(out);
  return out;
}

namespace {

// Algorithm 2; with `fixed` non-empty, every operator goes where `fixed` says (only the schedule
// is built, memory is charged but not checked).
CoarsePlacement adjust(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                       double memory_fraction, std::span<const DeviceId> fixed) {
  check_order(coarse, order);
  const int gpus = cluster.num_devices();
  Units units(coarse, cluster, memory_fraction);
  CoarsePlacement out;
  out.placement.assign(coarse.num_operators(), -1);
  std::vector<double>& finish = out.finish;
  out.start.assign(coarse.num_operators(), 0.0);
  finish.assign(coarse.num_operators(), 0.0);
  std::vector<Timeline> timeline(gpus);
  std::vector<double> est(gpus);

  // Eq. 7 on GPU d: inputs ready (pre_t), then the first idle slot long enough (d_ava).
  const auto earliest_start = [&](OpId v, DeviceId d) {
    double ready = 0;
    for (EdgeId e : coarse.in_edges(v)) {
      const Tensor& t = coarse.tensor(e);
      ready = std::max(ready, finish[t.src] + cluster.transfer_time(out.placement[t.src], d, t.bytes));
    }
    return timeline[d].earliest_slot(ready, cluster.compute_time(d, coarse.op(v).compute_s));
  };

  DeviceId previous = 0;  // d_k: the GPU of v_{i-1} (GPU 0 before the first operator, as Order-Place starts)
  for (OpId v : order) {
    DeviceId d = fixed.empty() ? units.placed(v) : fixed[v];  // colocation: the unit's GPU may be chosen
    if (!fixed.empty() && units.placed(v) < 0) units.place(v, d);
    if (d < 0) {
      for (DeviceId g = 0; g < gpus; ++g) est[g] = units.fits(v, g) ? earliest_start(v, g) : kInf;
      const auto best = static_cast<DeviceId>(std::min_element(est.begin(), est.end()) - est.begin());
      double back_cost = 0;  // eq. 8: the outputs sent back from d_1 to d_k
      for (EdgeId e : coarse.out_edges(v))
        back_cost = std::max(back_cost, cluster.transfer_time(best, previous, coarse.tensor(e).bytes));
      if (est[best] == kInf) {
        d = units.most_free();  // no GPU has room: best effort
        ++out.memory_fallbacks;
      } else if (est[previous] - est[best] > back_cost) {  // eq. 9 (always true when d_k is full)
        d = best;
        if (d != previous) ++out.moves;
      } else {
        d = previous;
      }
      units.place(v, d);
    }
    out.placement[v] = d;
    const double start = out.start[v] = earliest_start(v, d);
    finish[v] = start + cluster.compute_time(d, coarse.op(v).compute_s);
    timeline[d].insert(start, finish[v]);
    out.schedule_makespan_s = std::max(out.schedule_makespan_s, finish[v]);
    previous = d;
  }
  units.report(out);
  return out;
}

}  // namespace

CoarsePlacement adjusting_placement(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                                    double memory_fraction) {
  return adjust(coarse, cluster, order, memory_fraction, {});
}

CoarsePlacement schedule_coarse_placement(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                                          std::span<const DeviceId> placement) {
  if (placement.size() != coarse.num_operators())
    throw std::invalid_argument("schedule_coarse_placement: one GPU per coarse operator expected");
  return adjust(coarse, cluster, order, 1.0, placement);
}

}  // namespace placesim::celeritas
