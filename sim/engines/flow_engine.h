#pragma once
// The flow engine: the evaluator's event-driven list schedule (sim/engines/evaluator.h), but every
// cross-GPU transfer is a flow that shares the links it crosses with the flows active at the same
// time -- SimGrid's network model as the SimGrid engine configures it (sim/engines/simgrid_engine.h),
// rebuilt for speed: no fork, no SimGrid, no global state, no allocation per evaluation once its
// buffers have grown (a second call with the same placement allocates nothing).
//
// The model, detail for detail as the SimGrid engine runs it:
//  - A tensor with bytes > 0 between two GPUs is a flow. It starts when its producer finishes,
//    waits its route's latency (Cluster::latency, the alpha the engine sleeps), then sends one
//    sub-flow per path of the route (Cluster::paths: ECMP, NIC striping), each carrying its
//    path's share of the bytes, rounded as SimGrid's payloads are (1/65536 byte, at least one
//    unit). The tensor has arrived when its last sub-flow has.
//  - Rates are max-min fair over the links (progressive filling). Every sub-flow has the same
//    weight: CM02 gives a variable the sharing penalty 1 when its route has no latency (the engine
//    puts no latency on links), weight-S is 0, so no penalty is added, and TCP-gamma 1e30 bounds
//    nothing; each link counts each sub-flow crossing it once (consumption weight 1). Several
//    sub-flows of one flow that share a link (ECMP paths leaving one NIC) are several variables
//    there, as in SimGrid.
//  - An event due less than 1e-12 s after the current time happens at the current time: SimGrid
//    (surf/precision 1e-12) finishes every action whose date is within that of its clock.
// Rates are recomputed only for the connected component (in the link--path graph) of the links a
// change touched: a sub-flow started or finished. Sub-flows on one path always share one rate, so
// the solve has one variable per active path (with its number of sub-flows), not per sub-flow.
//
// GPUs pick their next operator as the evaluator's do (GpuQueue::Rank, GpuQueue::Fcfs, same
// priorities and tie-breaks) but with arrivals under contention, or follow a fixed per-GPU order
// (replay). SimGrid is run in the evaluator's order (`simulation.order: scheduler`), so replay
// with that order is what agrees with it; with GpuQueue::Fcfs SimGrid applies FCFS to its own
// arrivals, which schedule(placement, GpuQueue::Fcfs) does too.
#include <cstdint>
#include <limits>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/folded_network.h"
#include "sim/core/graph.h"

namespace placesim {

class FlowEngine {
 public:
  FlowEngine(const Graph& graph, const Cluster& cluster);
  // A folded graph (sim/core/folding.h) on the classes of its network: each transfer one flow
  // per sub-orbit of its route, on weighted paths over link classes (sim/engines/folded_network.h);
  // it arrives when all have. `network` must outlive the engine.
  FlowEngine(const Graph& graph, const Cluster& cluster, const FoldedNetwork& network);

  // Iteration latency with rank priority under contention (the search's cost model). +infinity
  // when a tensor crosses between GPUs the cluster cannot reach.
  double latency(std::span<const DeviceId> placement);
  // The full schedule, GPUs picking by `queue`, Rank or Fcfs (allocates its result); a fixed order
  // is replay's. Throws std::invalid_argument for GpuQueue::Fixed.
  Schedule schedule(std::span<const DeviceId> placement, GpuQueue queue = GpuQueue::Rank);
  // Runs a fixed per-GPU order (GpuQueue::Fixed), as the SimGrid engine does. Throws
  // std::invalid_argument if the order is invalid (check_device_order).
  Schedule replay(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>& device_order);
  // The same without checking the order or building a result: allocates nothing after warm-up.
  double replay_latency(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>& device_order);
  // replay_latency if it is <= cutoff, else +infinity, found early: the run stops at the first
  // event (an operator or a transfer finishing) later than `cutoff`, which proves the makespan is.
  double replay_latency_with_cutoff(std::span<const DeviceId> placement,
                                    const std::vector<std::vector<OpId>>& device_order, double cutoff);

  // How many max-min solves the last run did, and how many path classes (the active sub-flows of
  // one path, one variable of the solve) they covered in total.
  std::int64_t solves() const { return solves_; }
  std::int64_t solved_classes() const { return solved_classes_; }

 private:
  template <GpuQueue M>
  double run(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>* order, Schedule* out,
             double cutoff = kNoCutoff);
  static constexpr double kNoCutoff = std::numeric_limits<double>::infinity();
  // The passes of run: reset the per-run state, then events (operators ready, started, finished;
  // latencies passed) until none is left.
  template <GpuQueue M>
  void reset_run(std::span<const DeviceId> placement, const std::vector<std::vector<OpId>>* order, Schedule* out);
  template <GpuQueue M>
  void make_ready(OpId op, double now);
  template <GpuQueue M>
  void deliver(OpId op, double now) {
    if (--pending_inputs_[op] == 0) make_ready<M>(op, now);
  }
  void touch(DeviceId d);
  template <GpuQueue M>
  OpId next_op(int d);  // the operator GPU d starts now, or -1
  template <GpuQueue M>
  void dispatch(int d, double now);
  template <GpuQueue M>
  void finish_op(OpId op, double now);
  template <GpuQueue M>
  void happen(double now);
  template <GpuQueue M>
  void write_schedule(Schedule& out);  // takes start_ and finish_
  void ensure_priorities();
  void prepare_flows(std::span<const DeviceId> placement);
  struct RoutePaths {
    std::int32_t first_path, num_paths;  // in paths_
  };
  // The paths of route `route` (the route of src -> dst), expanded on its first use.
  RoutePaths ensure_route(std::int64_t route, DeviceId src, DeviceId dst);
  // The weighted paths of sub-orbit `s` of the folded network, expanded on its first use.
  RoutePaths ensure_sub_orbit(std::int32_t s);
  // Appends the flow (or, folded, the flows of each sub-orbit) of tensor e from GPU a to GPU b.
  void add_flows(EdgeId e, DeviceId a, DeviceId b);
  void start_flow(std::int32_t flow, double now);
  // Finishes the class's first sub-flow; returns it.
  std::int32_t finish_subflow(std::int32_t cls, double now);
  void advance(std::int32_t cls, double now);
  void set_finish(std::int32_t cls);
  void solve(double now);
  // Indexed min-heap of class finish times.
  void heap_update(std::int32_t cls);
  void heap_remove(std::int32_t cls);
  void heap_up(std::int32_t pos);
  void heap_down(std::int32_t pos);

  const Graph& graph_;
  const Cluster& cluster_;
  const FoldedNetwork* network_ = nullptr;  // folded: links are its classes
  std::vector<std::int32_t> priority_;  // as the evaluator: position in decreasing-rank order
  std::vector<OpId> by_priority_;
  std::vector<double> link_bandwidth_;

  // Paths of the routes used so far (kept across calls), laid out route by route.
  struct PathRec {
    std::int32_t first_link, num_links;
    double share;
  };
  std::unordered_map<std::int64_t, RoutePaths> route_paths_;  // by Cluster route id (folded: by sub-orbit)
  std::vector<PathRec> paths_;
  std::vector<std::int32_t> path_links_;
  // Per entry of path_links_: how many flows the path's one stands for on that link (folded: the
  // sub-orbit's copies crossing one link of the class; else 1).
  std::vector<double> path_weights_;

  // Per evaluation (buffers reused).
  // communication_steps(graph); empty when there is none.
  std::vector<std::uint8_t> communication_;
  struct Event {
    double time;
    std::int32_t kind;  // 0: an operator finishes; 1: a flow's latency has passed, it sends
    std::int32_t id;
  };
  std::vector<Event> events_;
  void push_event(Event event);
  // The run's inputs and totals.
  std::span<const DeviceId> placement_;
  const std::vector<std::vector<OpId>>* order_ = nullptr;  // GpuQueue::Fixed: per GPU, its operators
  Schedule* out_ = nullptr;
  double makespan_ = 0;
  std::int32_t finished_ = 0;
  std::vector<std::int32_t> flow_of_edge_;  // per tensor: its (first) flow, -1 (free) or -2 (unreachable)
  struct Flow {
    EdgeId edge;
    std::int32_t first_sub, num_subs, subs_left;
    double alpha;
    std::int32_t first_path;  // its route's, in paths_
    // A folded tensor's flows (one per sub-orbit) are consecutive; the first counts those left.
    std::int32_t lead, num_flows, flows_left;
  };
  std::vector<Flow> flows_;
  struct Sub {
    double bytes;  // payload, rounded as SimGrid rounds it
    std::int32_t path, flow;
  };
  std::vector<Sub> subs_;
  // Sub-flows on the same path cross the same links, so max-min gives them the same rate at all
  // times: a path's active sub-flows form one class, solved as one variable of multiplicity
  // `count`. Its `sent` is what each of them has sent since the class began (bytes, at `rate`
  // since `last`); a sub-flow that joins at sent = s with b bytes is done at sent = s + b, so each
  // class keeps a min-heap of those targets and the engine an indexed heap of class finish times.
  struct PathClass {
    double sent, rate, last, finish;
    std::int64_t mark;  // epoch of the last solve that reached it
    std::int32_t count, heap_pos;
  };
  std::vector<PathClass> classes_;                                    // per cached path
  std::vector<std::vector<std::pair<double, std::int32_t>>> targets_;  // per cached path: (target, sub)
  std::vector<std::int32_t> used_classes_;                            // paths used by this evaluation
  std::vector<std::uint8_t> class_used_;                              // per cached path: listed there
  std::vector<std::int32_t> heap_;  // classes with active sub-flows, by finish time
  std::vector<std::vector<std::int32_t>> active_;  // per link: classes with active sub-flows crossing it
  std::vector<std::int32_t> dirty_links_;
  std::vector<std::int64_t> link_mark_;  // per link: epoch of the last solve that visited it
  std::int64_t epoch_ = 0;                // never wraps: one per solve
  std::vector<double> link_cap_;
  std::vector<double> link_count_;  // sub-flows on the link, each by its weight (whole numbers)
  std::vector<std::int32_t> comp_links_, comp_classes_, saturated_;
  bool unreachable_ = false;

  std::vector<std::int32_t> pending_inputs_;
  std::vector<double> start_, finish_;
  std::vector<std::uint8_t> device_busy_, device_touched_;
  std::vector<std::int32_t> touched_;
  std::vector<std::size_t> cursor_;  // Fixed: per GPU, next position in its order
  std::vector<std::vector<std::int32_t>> ready_;                   // Rank: per GPU, heap of priorities
  std::vector<std::vector<std::pair<double, OpId>>> fcfs_ready_;  // Fcfs: per GPU, heap of (ready, op)
  std::int64_t solves_ = 0, solved_classes_ = 0;
};

}  // namespace placesim
