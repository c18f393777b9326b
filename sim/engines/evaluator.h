#pragma once
// The fast evaluator: the cost model that search strategies call millions of times.
//
// It list-schedules a placed graph as QuickP and HeteroG evaluate placements: operator priority is
// its computation rank (own time plus the largest rank among successors); each GPU runs one
// operator at a time, and whenever it is idle it starts the highest-priority operator whose inputs
// have all arrived; a cross-GPU tensor arrives latency + bytes / bandwidth after its producer
// finishes (alpha-beta view of the cluster, no contention) and transfers overlap computation.
// An operator therefore starts at max(finish of the previous operator on its GPU, arrival of its
// last input) -- the same rule the SimGrid engine follows, which is what makes the two comparable.
// schedule() can also pick first come, first served instead of by rank (GpuQueue::Fcfs).
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"
#include "sim/engines/gpu_queue.h"

namespace placesim {

struct Schedule {
  double latency = 0;                          // makespan of the iteration, seconds
  std::vector<double> start, finish;           // per operator, seconds
  std::vector<std::vector<OpId>> device_order; // per GPU, operators in the order they ran
  std::vector<double> busy;                    // per GPU, seconds spent computing
  std::vector<double> memory;                  // per GPU, bytes of the operators placed there
};

// Lower bounds of the whole problem (any placement of the graph on the cluster).
struct LowerBounds {
  double critical_path = 0;    // seconds: longest compute-only path, at the fastest GPU's speed
  double work_per_device = 0;  // seconds: total compute / total GPU speed
  // Bytes: total memory / number of GPUs, the least peak memory per GPU of any placement (when it
  // exceeds the smallest GPU's capacity, some GPUs must hold more than their share).
  double memory_per_device = 0;
  // The latency bound: max(critical path, work per device).
  double best() const { return critical_path > work_per_device ? critical_path : work_per_device; }
};

struct FoldedNetwork;  // sim/engines/folded_network.h

class Evaluator {
 public:
  Evaluator(const Graph& graph, const Cluster& cluster);
  // A folded graph (sim/core/folding.h): each transfer takes its slowest sub-orbit's time
  // (folded_transfer_time). `network` must outlive the evaluator.
  Evaluator(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network);

  // Iteration latency of a placement. After the first call it allocates nothing.
  double latency(std::span<const DeviceId> placement);
  // latency(placement) if it is <= cutoff, else +infinity, found early: the schedule stops as
  // soon as an operator finishes after `cutoff`, or starts (or has its inputs arrive) at a time t
  // with t + rank > cutoff (its rank is a compute-only path still ahead, so the makespan is at
  // least t + rank; this bound gets a 1e-9 relative slack against rounding in the rank sums).
  // Either proves makespan > cutoff, so a search that only asks "is it below a threshold?"
  // (Metropolis acceptance) gets the same answers as from latency(), sooner.
  double latency_with_cutoff(std::span<const DeviceId> placement, double cutoff);
  // latency_with_cutoff that also fills `order` (per GPU, operators in the order they ran;
  // complete only when the result is finite), reusing its capacity: the flow cost model replays
  // this order under contention (sim/engines/cost_model.h).
  double latency_with_order(std::span<const DeviceId> placement, double cutoff, std::vector<std::vector<OpId>>& order);
  // The full schedule of a placement (allocates its result), with GPUs picking by `queue` (Rank or
  // Fcfs; a fixed order is replay_order's). Throws std::invalid_argument for GpuQueue::Fixed.
  Schedule schedule(std::span<const DeviceId> placement, GpuQueue queue = GpuQueue::Rank);

  LowerBounds lower_bounds() const { return bounds_; }
  std::span<const double> rank() const { return rank_; }

 private:
  // The event loop, one instance per priority policy (so the rank loop pays nothing for FCFS).
  // cutoff = +infinity for a full run; see latency_with_cutoff.
  // `order`, when given, receives the per-GPU order (out->device_order when out is given).
  template <GpuQueue P>
  double run(std::span<const DeviceId> placement, Schedule* out, double cutoff,
             std::vector<std::vector<OpId>>* order = nullptr);
  // The per-GPU queues of ready operators under policy P: which one an idle GPU starts. Always
  // inlined: the rank loop is the hot path of every search.
  template <GpuQueue P>
  [[gnu::always_inline]] inline void push_ready(int d, OpId op);
  template <GpuQueue P>
  [[gnu::always_inline]] inline OpId pop_ready(int d);
  template <GpuQueue P>
  bool ready_empty(int d) const {
    return P == GpuQueue::Rank ? ready_[d].empty() : fcfs_ready_[d].empty();
  }

  const Graph& graph_;
  const Cluster& cluster_;
  const FoldedNetwork* network_ = nullptr;
  // Folded: per tensor, its transfer's time (for the placement of the last run's folded setup).
  std::vector<double> folded_time_;
  void prepare_folded(std::span<const DeviceId> placement);
  std::vector<double> rank_;
  std::vector<std::int32_t> priority_;  // position of each operator in decreasing-rank order
  LowerBounds bounds_;
  double max_speed_ = 0;  // of the fastest GPU: turns compute-only ranks into time bounds
  // communication_steps(graph): completed when their inputs have arrived, without their GPU;
  // empty for the search graphs.
  std::vector<std::uint8_t> communication_;
  // Workspace reused across calls.
  struct Event {
    double time;
    std::int32_t kind;  // 0: an operator finishes, 1: an operator's inputs have all arrived
    std::int32_t op;
  };
  std::vector<Event> events_;
  std::vector<std::vector<std::int32_t>> ready_;  // per GPU: heap of priorities (GpuQueue::Rank)
  std::vector<std::vector<std::pair<double, OpId>>> fcfs_ready_;  // per GPU: heap of (arrival, op) (GpuQueue::Fcfs)
  std::vector<std::int32_t> pending_inputs_;
  std::vector<double> inputs_arrive_, start_, finish_;
  std::vector<std::uint8_t> device_busy_;
  // GPUs that became idle or got ready work at the current instant (each listed once).
  std::vector<std::int32_t> touched_;
  std::vector<std::uint8_t> device_touched_;
  void touch(DeviceId d) {
    if (!device_touched_[d]) {
      device_touched_[d] = 1;
      touched_.push_back(d);
    }
  }
  std::vector<OpId> by_priority_;
};

// Replays a fixed per-GPU order without contention: each operator starts at
// max(finish of its predecessor on the GPU, arrival of its last input). With the evaluator's own
// order this reproduces Evaluator::schedule exactly; with another order it evaluates that order.
// Throws std::invalid_argument if the order deadlocks (is inconsistent with the graph).
Schedule replay_order(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                      const std::vector<std::vector<OpId>>& device_order);
// The same for a folded graph, each transfer at its slowest sub-orbit's time.
Schedule replay_order(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network,
                      std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>& device_order);

// The same replay with durations given instead of the cluster's: compute[i] for operator i on its
// GPU, transfer[e] from the finish of tensor e's producer to its arrival at the consumer, in any one
// unit of time (a strategy's own cost model may count microseconds or merge parallel tensors).
// replay_order is this with the cluster's durations after check_device_order; here the order is
// not checked beyond a deadlock (std::invalid_argument), so it must list every operator once, on
// its GPU (a topological order split by GPU does), communication steps excepted: listed, they
// would be run in the GPU's order.
Schedule replay_order_with_costs(const Graph& graph, int num_devices, std::span<const DeviceId> placement,
                                 const std::vector<std::vector<OpId>>& device_order, std::span<const double> compute,
                                 std::span<const double> transfer);

// Checks that `device_order` lists every operator exactly once, on the GPU it is placed on (but
// no communication step: those run in no GPU's order), and
// that the order cannot deadlock (an operator waiting, directly or through other GPUs, for an
// operator ordered after it). Throws std::invalid_argument naming the operators involved.
void check_device_order(const Graph& graph, int num_devices, std::span<const DeviceId> placement,
                        const std::vector<std::vector<OpId>>& device_order);

// Bytes of operator memory placed on each GPU: the papers' memory model (ICC eq. 2).
std::vector<double> device_memory(const Graph& graph, std::span<const DeviceId> placement, int num_devices);

// Throws InputError if the placement has the wrong size, names a GPU that does not exist, or
// splits a colocation class. `who` names the strategy or file for the message.
void validate_placement(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                        const std::string& who);

}  // namespace placesim
