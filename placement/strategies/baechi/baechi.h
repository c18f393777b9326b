#pragma once
#include <chrono>
// Baechi's memory-constrained placers (Jeon et al., "Baechi: fast device placement of machine
// learning graphs", SoCC 2020): m-TOPO, m-ETF and m-SCT, as the Celeritas paper describes them
// (sections 2 and 6.2) and as the authors' code (github.com/beomyeol/baechi, placer/) does them.
//
// Shared machinery, used by all three:
//
//  * Placement groups (co-placement). Operators of one colocation class form a group. On top of
//    that Baechi co-places "when the output of an operator is consumed only by another operator"
//    (CoplacementGrouper in placer/grouper.py): an operator with exactly one distinct successor
//    joins its successor's group, with no condition on the successor's in-degree. The rule is
//    applied to the operator graph, so one pass reaches Baechi's fixpoint. Celeritas (§5.1.2)
//    summarises Baechi as "limiting the merged node's indegree or outdegree to 1, which avoids
//    loops": that is Baechi's operator *fusion* inside a group (FusedOpPlacer: fuse u -> v when
//    out-degree(u) == 1 or in-degree(v) == 1). Fusion only coarsens the scheduling of operators
//    that are already co-placed, so placesim does not fuse: its placers schedule operators one by
//    one and a group's members simply follow the group's GPU. That also makes group-level cycles
//    (which Baechi has to detect and break) harmless here.
//  * Memory accounting (the papers' static model: the sum of the memory of the operators placed
//    on a GPU). A group is charged in full, its total memory, when its first operator is placed;
//    its other operators then go to the same GPU at no further charge. The budget of GPU d is
//    memory_fraction x its capacity (Baechi's --placer_memory_fraction).
//  * Best effort: a group that fits no GPU goes to the GPU with the most free memory (Celeritas
//    §6.2's best-effort rule; Baechi itself raises an error). Each such group is one "memory
//    fallback" in the report; the runner flags the resulting OOM.
//
// The placers:
//
//  * m-TOPO walks Kahn's FIFO topological order (Graph::topological_order, Baechi's
//    assign_topo_order) and fills GPU 0, then GPU 1, ...: a group goes to the current GPU if it
//    fits under that GPU's fill limit, otherwise the walk moves on to the next GPU and never comes
//    back. With `uniform` (Baechi's default m_topo) the fill limit is
//    min(budget, total memory / #GPUs + largest group memory): the added largest group guarantees
//    that the last GPU can take whatever is left (each GPU left behind holds more than
//    total / #GPUs). Without it the limit is the budget, so GPUs fill up one after the other.
//    Baechi adds the largest *operator* memory; with groups placed as units the largest group is
//    what keeps that guarantee. A graph with no operator memory therefore lands on GPU 0.
//  * m-ETF is earliest-task-first list scheduling (Hwang et al. 1989): repeatedly, among the ready
//    operators and the GPUs with room for them, the pair with the earliest start time is scheduled,
//    start = max(GPU free, data ready on that GPU), data ready = max over inputs of
//    producer finish + Cluster::transfer_time. Ties go to the higher computation rank, then to the
//    lower operator id, then the lower GPU. GPUs run operators in the order they are scheduled (no
//    insertion into idle gaps), as in Baechi. An operator takes Cluster::compute_time(d, compute_s)
//    on GPU d (compute_s / the GPU's speed).
//  * m-SCT is m-ETF with the favourite-child rule of the SCT algorithm (Hanen & Munier), as Baechi's
//    SCTDevice does it. A linear program (below) picks at most one favourite child per operator.
//    When GPU d's last operator i has a favourite child f that is ready, not yet placed elsewhere,
//    fits on d, and can start on d no later than on any other GPU, d is reserved for f: d runs f
//    as soon as f can start on d, and meanwhile only "urgent" operators, those whose inputs have
//    arrived on every GPU they may use by the time d would start them. (Baechi's urgent_ts is the
//    latest schedule time over the GPUs, which also waits for busy GPUs to free up; placesim
//    keeps only its data-ready part, so each GPU's urgent operators sit in a queue keyed by a time
//    fixed when they become ready.) At equal times an urgent operator goes first, as in Baechi.
//
// The SCT linear program (Baechi's FavoriteChildLPSolver, solved here with COIN-OR CLP), over the
// operator graph with parallel tensors merged into one edge with their summed bytes:
//   minimise w subject to
//     s_i + p_i + c_ij x_ij <= s_j   for every edge i -> j
//     s_i + p_i <= w                 for every operator
//     sum_j x_ij >= out-degree(i) - 1, sum_i x_ij >= in-degree(j) - 1
//     0 <= x <= 1, s >= 0
//   with p the mean over GPUs of Cluster::compute_time and c_ij = bytes / mean bandwidth + mean latency (means over the
//   ordered GPU pairs; zero-byte tensors cost nothing, as everywhere in placesim). An edge whose x
//   is below `threshold` (0.5: plain rounding; Baechi's command-line default is 0.1) marks a
//   favourite child. Rounding can give an operator two favourites (or a child two favourite
//   parents); edges are then accepted greedily by increasing x (ties: larger c, lower operator
//   ids), and the rejected ones are counted as rounding conflicts.
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "placement/framework/strategy.h"

namespace placesim {

namespace baechi {

// Operators that must share a GPU: colocation classes plus Baechi's co-placement rule.
struct Groups {
  std::vector<std::int32_t> of_op;   // group of each operator, numbered by first member in topological order
  std::vector<double> memory_bytes;  // per group: total memory of its operators
  std::vector<std::int32_t> size;    // per group: number of operators
  int coplaced_merges = 0;           // merges made by the co-placement rule (not by colocation classes)
  int coplace_skipped_for_memory = 0;  // co-placement merges left out: the group would exceed the limit
  int count() const { return static_cast<int>(size.size()); }
};
// Colocation classes, then (with `coplace`) each operator joined to its only consumer unless the
// merged group would hold more than `coplace_limit_bytes` (the smallest GPU's budget).
Groups make_groups(const Graph& graph, bool coplace,
                   double coplace_limit_bytes = std::numeric_limits<double>::infinity());

// Per GPU: what the placer may fill and what it has filled, charging groups as units.
class MemoryLedger {
 public:
  MemoryLedger(const Cluster& cluster, const Groups& groups, double memory_fraction);
  DeviceId device_of_group(std::int32_t group) const { return group_device_[group]; }
  bool fits(std::int32_t group, DeviceId d) const { return used_[d] + groups_.memory_bytes[group] <= budget_[d]; }
  // Places the group on d and charges its whole memory there.
  void place(std::int32_t group, DeviceId d);
  // The GPU with the most free budget (lowest index on ties): the best-effort choice.
  DeviceId most_free() const;
  std::span<const double> used() const { return used_; }
  std::span<const double> budget() const { return budget_; }

 private:
  const Groups& groups_;
  std::vector<double> budget_, used_;
  std::vector<DeviceId> group_device_;
};

// The favourite child of every operator (-1: none), from the SCT linear program.
struct SctLp {
  std::vector<OpId> favourite;     // per operator
  std::vector<double> x;           // per tensor: the LP value of its (merged) edge
  std::vector<double> comm_s;      // per tensor: c of its (merged) edge, seconds
  double objective_s = 0;          // the LP's makespan w, seconds
  double solve_seconds = 0;        // wall time of building and solving the LP
  bool optimal = false;            // CLP proved optimality (otherwise no favourites are used)
  bool stopped_at_time_limit = false;  // the deadline stopped CLP
  int rows = 0, columns = 0;
  int favourite_children = 0;
  int rounding_conflicts = 0;
};
// CLP stops at `stop` (then no favourite children: plain m-ETF).
SctLp solve_sct_lp(const Graph& graph, const Cluster& cluster, double threshold,
                   std::chrono::steady_clock::time_point stop = std::chrono::steady_clock::time_point::max());

// The m-ETF / m-SCT list schedule (favourite empty: m-ETF).
struct EtfSchedule {
  std::vector<DeviceId> placement;
  std::vector<double> start, finish;  // per operator, seconds
  std::vector<OpId> order;            // operators in the order they were scheduled
  double makespan = 0;
  int memory_fallbacks = 0;           // groups placed on a GPU without room for them
  int favourite_children_on_parent_gpu = 0;
  std::vector<double> device_memory;  // per GPU, bytes charged
};
EtfSchedule etf_schedule(const Graph& graph, const Cluster& cluster, const Groups& groups,
                         double memory_fraction, std::span<const OpId> favourite = {});

// Every operator back to back on one GPU: the fastest (lowest index on ties) whose budget holds
// the whole graph's memory; device -1 when none does. No transfers, so its makespan is the sum of
// the operators' times there (Cluster::compute_time).
struct OneGpuSchedule {
  DeviceId device = -1;
  double makespan = 0;
};
OneGpuSchedule one_gpu_schedule(const Graph& graph, const Cluster& cluster, double memory_fraction);

struct TopoPlacement {
  std::vector<DeviceId> placement;
  std::vector<double> fill_limit;     // per GPU, bytes
  std::vector<double> device_memory;  // per GPU, bytes charged
  int memory_fallbacks = 0;           // groups that fit under no GPU's fill limit
};
TopoPlacement topo_placement(const Graph& graph, const Cluster& cluster, const Groups& groups,
                             double memory_fraction, bool uniform);

}  // namespace baechi

struct BaechiConfig {
  double memory_fraction = 1.0;  // share of each GPU's memory the placer may fill, (0, 1]
  bool coplace = true;           // apply Baechi's co-placement rule on top of colocation classes
  bool uniform = true;           // m-TOPO: fill limit total / #GPUs + largest group (else capacity)
  double threshold = 0.5;        // m-SCT: an edge with x below this marks a favourite child, (0, 1]
  bool operator==(const BaechiConfig&) const = default;
};

enum class BaechiMethod { Topo, Etf, Sct };

// The registry name of each method.
inline constexpr EnumName<BaechiMethod> kBaechiMethodNames[] = {
    {BaechiMethod::Topo, "m-topo"},
    {BaechiMethod::Etf, "m-etf"},
    {BaechiMethod::Sct, "m-sct"},
};

// m-ETF and m-SCT keep the better of their own schedule and the one-GPU schedule (ties: one GPU),
// by makespan, when the graph fits one GPU and the list schedule needed no memory fallback. The
// list schedule's communication term (an input's transfer time in the data-ready time) is right,
// but the start-time rule cannot see the transfers its choices cause later: operators without
// inputs (constants, variables, input batches) can start at once on any idle GPU, so at t = 0 they
// are spread over the idle GPUs, and with them the placement groups they open, whatever the
// bandwidth; every tensor they feed to the rest of the graph then crosses the network (BERT, 4
// layers, 4 GPUs at 10 Gb/s: 431 ms against 65 ms on one GPU, and the same placement at 400 Gb/s).
// Comparing with one GPU makes the answer follow the bandwidth: one GPU while transfers cost more
// than the parallelism gains, the spread schedule once the links are fast enough.
//
// report: groups, colocation_classes, coplaced_merges, largest_group_ops, largest_group_bytes,
// memory_fallbacks, device_memory_bytes, memory_limit_bytes; m-ETF/m-SCT add schedule_makespan_s
// (of the placement returned), etf_makespan_s (the list schedule's), one_gpu_makespan_s (when the
// graph fits a GPU) and kept ("etf" or "one-gpu");
// m-SCT adds lp {solve_seconds, objective_s, optimal, rows, columns, favourite_children,
// rounding_conflicts} and favourite_children_on_parent_gpu.
class Baechi : public Strategy {
 public:
  Baechi(BaechiMethod method, BaechiConfig config)
      : Strategy(std::string(enum_name<BaechiMethod>(kBaechiMethodNames, method))), method_(method), config_(config) {}
  BaechiMethod method() const { return method_; }
  const BaechiConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  BaechiMethod method_;
  BaechiConfig config_;
};

// Each method's keys: memory_fraction and coplace, plus uniform (m-TOPO) or threshold (m-SCT).
OptionSchema<BaechiConfig> baechi_schema(BaechiMethod method);
StrategyInfo m_topo_strategy_info();
StrategyInfo m_etf_strategy_info();
StrategyInfo m_sct_strategy_info();

}  // namespace placesim
