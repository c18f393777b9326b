// The m-ETF / m-SCT list-scheduling core (see baechi.h for the rules).
//
// Cost: every ready operator is pushed once into the queue of each GPU that can take it, with its
// data-ready time there (O(in-degree x GPUs) to compute). A GPU's candidate is the top of its
// queue, so a step costs O(GPUs x (GPUs + log V)) and the whole schedule
// O(V x GPUs x (GPUs + log V) + E x GPUs). Entries that became invalid (operator scheduled, its
// group placed elsewhere, or the GPU filled up) are dropped lazily when they reach a top: all three
// conditions only ever turn true, so a dropped entry never has to come back.
#include <algorithm>
#include <stdexcept>

#include "placement/strategies/baechi/baechi.h"

namespace placesim::baechi {
namespace {

// One GPU's ready operators, keyed by the time they could start there (data ready, or urgent for
// m-SCT) and identified by their priority position (lower = higher computation rank). Entries
// whose time has passed the GPU's clock move to a priority heap; the clock only moves forward.
class ReadyQueue {
 public:
  struct Entry {
    double time;
    std::int32_t pos;
  };
  void push(double time, std::int32_t pos) {
    pending_.push_back({time, pos});
    std::push_heap(pending_.begin(), pending_.end(), later);
  }
  void advance(double now) {
    while (!pending_.empty() && pending_.front().time <= now) {
      std::pop_heap(pending_.begin(), pending_.end(), later);
      due_.push_back(pending_.back().pos);
      pending_.pop_back();
      std::push_heap(due_.begin(), due_.end(), std::greater<>());
    }
  }
  bool has_due() const { return !due_.empty(); }
  std::int32_t due_top() const { return due_.front(); }
  void pop_due() {
    std::pop_heap(due_.begin(), due_.end(), std::greater<>());
    due_.pop_back();
  }
  bool has_pending() const { return !pending_.empty(); }
  const Entry& pending_top() const { return pending_.front(); }
  void pop_pending() {
    std::pop_heap(pending_.begin(), pending_.end(), later);
    pending_.pop_back();
  }

 private:
  static bool later(const Entry& a, const Entry& b) { return a.time != b.time ? a.time > b.time : a.pos > b.pos; }
  std::vector<Entry> pending_;
  std::vector<std::int32_t> due_;  // min-heap of priority positions
};

struct Candidate {
  double time = 0;
  std::int32_t pos = -1;  // -1: none
  bool favourite = false; // a reserved GPU's favourite child (wins ties at equal time)
};

class EtfScheduler {
 public:
  EtfScheduler(const Graph& graph, const Cluster& cluster, const Groups& groups, double memory_fraction,
               std::span<const OpId> favourite)
      : graph_(graph),
        cluster_(cluster),
        groups_(groups),
        ledger_(cluster, groups, memory_fraction),
        favourite_(favourite),
        gpus_(cluster.num_devices()),
        n_(static_cast<OpId>(graph.num_operators())) {}

  EtfSchedule run() {
    const std::vector<double> rank = computation_rank(graph_);
    op_at_.resize(n_);
    for (OpId op = 0; op < n_; ++op) op_at_[op] = op;
    std::stable_sort(op_at_.begin(), op_at_.end(), [&](OpId a, OpId b) { return rank[a] > rank[b]; });
    pos_of_.resize(n_);
    for (std::int32_t p = 0; p < n_; ++p) pos_of_[op_at_[p]] = p;

    parent_.assign(n_, -1);
    for (OpId op = 0; op < static_cast<OpId>(favourite_.size()); ++op)
      if (favourite_[op] >= 0) parent_[favourite_[op]] = op;

    remaining_.resize(n_);
    scheduled_.assign(n_, 0);
    live_.assign(n_, 0);
    ready_time_.assign(static_cast<std::size_t>(n_) * gpus_, 0.0);
    gpu_free_.assign(gpus_, 0.0);
    last_.assign(gpus_, -1);
    queues_.assign(gpus_, {});
    if (sct()) urgent_queues_.assign(gpus_, {});
    out_.placement.assign(n_, -1);
    out_.start.assign(n_, 0.0);
    out_.finish.assign(n_, 0.0);

    for (OpId op = 0; op < n_; ++op) remaining_[op] = static_cast<std::int32_t>(graph_.in_edges(op).size());
    for (OpId op = 0; op < n_; ++op)
      if (remaining_[op] == 0) make_ready(op);

    int done = 0, empty_rounds = 0;
    while (done < n_) {
      Candidate best;
      DeviceId best_gpu = -1;
      for (DeviceId d = 0; d < gpus_; ++d) {
        const Candidate c = candidate(d);
        if (c.pos >= 0 && (best.pos < 0 || better(c, best))) {
          best = c;
          best_gpu = d;
        }
      }
      if (best.pos < 0) {
        // Only possible right after a best-effort rescue pushed into a GPU already looked at.
        if (++empty_rounds > 1) throw std::logic_error("m-ETF: no ready operator although some are unscheduled");
        continue;
      }
      empty_rounds = 0;
      schedule(op_at_[best.pos], best_gpu, best.time);
      ++done;
    }
    out_.device_memory.assign(ledger_.used().begin(), ledger_.used().end());
    return std::move(out_);
  }

 private:
  bool sct() const { return !favourite_.empty(); }
  double& ready_at(OpId op, DeviceId d) { return ready_time_[static_cast<std::size_t>(op) * gpus_ + d]; }

  static bool better(const Candidate& a, const Candidate& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.favourite != b.favourite) return a.favourite;
    return a.pos < b.pos;  // equal: the lower GPU, visited first, keeps it
  }

  bool valid(OpId op, DeviceId d) const {
    if (scheduled_[op]) return false;
    const std::int32_t g = groups_.of_op[op];
    const DeviceId placed = ledger_.device_of_group(g);
    return placed == d || (placed < 0 && ledger_.fits(g, d));
  }

  void make_ready(OpId op) {
    double urgent = 0;
    live_[op] = 0;
    for (DeviceId d = 0; d < gpus_; ++d) {
      double t = 0;
      for (EdgeId e : graph_.in_edges(op)) {
        const Tensor& tensor = graph_.tensor(e);
        t = std::max(t, out_.finish[tensor.src] + cluster_.transfer_time(out_.placement[tensor.src], d, tensor.bytes));
      }
      ready_at(op, d) = t;
      if (valid(op, d)) {
        queues_[d].push(t, pos_of_[op]);
        ++live_[op];
        urgent = std::max(urgent, t);
      }
    }
    if (live_[op] == 0) {
      rescue(op);
    } else if (sct()) {
      for (DeviceId d = 0; d < gpus_; ++d)
        if (valid(op, d)) urgent_queues_[d].push(urgent, pos_of_[op]);
    }
  }

  // The operator is in no GPU's queue any more: its group is placed elsewhere already, or fits
  // nowhere (best effort: the GPU with the most free memory).
  void rescue(OpId op) {
    const std::int32_t g = groups_.of_op[op];
    DeviceId d = ledger_.device_of_group(g);
    if (d < 0) {
      d = ledger_.most_free();
      ledger_.place(g, d);
      ++out_.memory_fallbacks;
    }
    queues_[d].push(ready_at(op, d), pos_of_[op]);
    live_[op] = 1;
    if (sct()) urgent_queues_[d].push(ready_at(op, d), pos_of_[op]);
  }

  void drop(OpId op) {
    if (!scheduled_[op] && --live_[op] == 0) rescue(op);
  }

  // The best valid entry of a queue at the GPU's clock; invalid tops are dropped on the way.
  Candidate best_of(ReadyQueue& q, DeviceId d, bool counts_live) {
    const double now = gpu_free_[d];
    q.advance(now);
    while (q.has_due()) {
      const std::int32_t pos = q.due_top();
      if (valid(op_at_[pos], d)) return {now, pos, false};
      q.pop_due();
      if (counts_live) drop(op_at_[pos]);
    }
    while (q.has_pending()) {
      const ReadyQueue::Entry e = q.pending_top();
      if (valid(op_at_[e.pos], d)) return {std::max(now, e.time), e.pos, false};
      q.pop_pending();
      if (counts_live) drop(op_at_[e.pos]);
    }
    return {};
  }

  Candidate candidate(DeviceId d) {
    if (sct()) {
      if (const OpId f = reserved_for(d); f >= 0) {
        const Candidate fav{std::max(gpu_free_[d], ready_at(f, d)), pos_of_[f], true};
        const Candidate urgent = best_of(urgent_queues_[d], d, false);
        return urgent.pos >= 0 && urgent.time <= fav.time ? urgent : fav;
      }
    }
    return best_of(queues_[d], d, true);
  }

  // m-SCT: the favourite child GPU d waits for, or -1.
  OpId reserved_for(DeviceId d) {
    const OpId parent = last_[d];
    if (parent < 0) return -1;
    const OpId f = favourite_[parent];
    if (f < 0 || remaining_[f] != 0 || !valid(f, d)) return -1;
    const double here = std::max(gpu_free_[d], ready_at(f, d));
    for (DeviceId other = 0; other < gpus_; ++other)
      if (other != d && valid(f, other) && std::max(gpu_free_[other], ready_at(f, other)) < here) return -1;
    return f;
  }

  void schedule(OpId op, DeviceId d, double start) {
    const std::int32_t g = groups_.of_op[op];
    if (ledger_.device_of_group(g) < 0) ledger_.place(g, d);
    scheduled_[op] = 1;
    out_.order.push_back(op);
    out_.placement[op] = d;
    out_.start[op] = start;
    out_.finish[op] = start + cluster_.compute_time(d, graph_.op(op).compute_s);
    out_.makespan = std::max(out_.makespan, out_.finish[op]);
    gpu_free_[d] = out_.finish[op];
    last_[d] = op;
    if (parent_[op] >= 0 && out_.placement[parent_[op]] == d) ++out_.favourite_children_on_parent_gpu;
    for (EdgeId e : graph_.out_edges(op)) {
      const OpId next = graph_.tensor(e).dst;
      if (--remaining_[next] == 0) make_ready(next);
    }
  }

  const Graph& graph_;
  const Cluster& cluster_;
  const Groups& groups_;
  MemoryLedger ledger_;
  std::span<const OpId> favourite_;
  const int gpus_;
  const OpId n_;

  std::vector<OpId> op_at_;           // priority position -> operator
  std::vector<std::int32_t> pos_of_;  // operator -> priority position
  std::vector<OpId> parent_;          // favourite parent of each operator, or -1
  std::vector<std::int32_t> remaining_;  // inputs not yet scheduled
  std::vector<std::uint8_t> scheduled_;
  std::vector<std::int32_t> live_;    // regular-queue entries of a ready, unscheduled operator
  std::vector<double> ready_time_;    // operator x GPU: data-ready time there
  std::vector<double> gpu_free_;
  std::vector<OpId> last_;            // last operator scheduled on each GPU
  std::vector<ReadyQueue> queues_, urgent_queues_;
  EtfSchedule out_;
};

}  // namespace

EtfSchedule etf_schedule(const Graph& graph, const Cluster& cluster, const Groups& groups, double memory_fraction,
                         std::span<const OpId> favourite) {
  return EtfScheduler(graph, cluster, groups, memory_fraction, favourite).run();
}

}  // namespace placesim::baechi
