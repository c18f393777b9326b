#pragma once
// Celeritas (Zhang et al., "Celeritas: Fast Optimizer for Large Dataflow Graphs", sections 4-5):
// order the graph so that neighbours and the critical path stay together, fuse consecutive
// operators of that order into clusters, and place the coarse graph in that order.
//
//  * DFS-TOPO and CPD-TOPO (§4.2.2, Algorithm 1): Kahn's algorithm with a stack instead of a
//    FIFO: the sources start in the queue by decreasing key, and when an operator is taken from
//    the head its children that become ready are pushed to the head by increasing key, so the
//    child with the largest key is taken next. CPD-TOPO's key is cpath = tlevel + blevel (eqs.
//    2-3, the longest compute + communication path through the operator); DFS-TOPO has no key
//    (ties everywhere): the lowest operator id goes first.
//  * Communication cost c_ij before placement (levels, fusion): the mean over ordered GPU pairs
//    of Cluster::transfer_time(bytes) (zero-byte tensors are control dependencies and cost 0).
//  * Optimal operation fusion (§5.1.3, eqs. 4-6): over the CPD-TOPO sequence v_1..v_n, choose
//    breakpoints so that every cluster is a run of consecutive operators, at most R long (the
//    exploration range) and holding at most M bytes (an operator alone is always allowed, even
//    when it is larger than M), minimising the summed cost of the tensors that leave their
//    cluster (= the cost of every tensor between two clusters). Kernighan's dynamic program:
//    S(j) = min over i in [j - R, j) of S(i) + cost(i, j), cost(i, j) = the tensors from v_i..v_{j-1}
//    to v_j..v_n; on ties the longer cluster wins. O(n R log deg).
//    placesim adds one constraint: a cluster holds operators of at most one colocation class.
//    Clusters with two classes would join them (their members must share a GPU), and in training
//    graphs, where a forward operator and its gradient share a class, the joins chain through the
//    whole graph: on the msr-fiddle graphs every operator ended up in one class, forced onto one
//    GPU whatever its memory. With the constraint the coarse classes are the graph's own.
//  * Lemma 2: runs of consecutive operators of a topological order contract to an acyclic graph
//    (every tensor goes from a run to itself or to a later run). The coarse graph is built with
//    coarsening's contract_groups (summed compute and memory, one tensor per cluster pair with
//    summed bytes, colocation classes joined through shared clusters).
//  * Placement units: a coarse colocation class is one unit (TensorFlow's rule, §6.1: where its
//    first member goes, the rest follow), charged its whole memory when its first member is
//    placed, as Baechi's ledger does; a coarse operator without a class is its own unit.
//  * Order-Place (§5.2, §6.2): coarse operators in CPD-TOPO order (of the coarse graph) fill GPU 0
//    up to its budget (memory_fraction x capacity), then GPU 1, ...; a unit that fits no GPU from
//    the current one on goes to the GPU with the most free memory (best effort, §6.3).
//  * Adjusting Placement (Algorithm 2): the same walk, but for each unit the earliest start time
//    EST(d) on every GPU with room: data ready = max over predecessors of finish + transfer time
//    from their GPU (eq. 7), and the start of the first idle slot on d at or after that time long
//    enough for the coarse operator (insertion, as HEFT); GPUs without room have EST = +inf. With
//    d_k the previous operator's GPU and d_1 the GPU of earliest EST (lowest index on ties), the
//    operator moves to d_1 if EST(d_k) - EST(d_1) > back_cost (eq. 9), back_cost = the largest
//    transfer time of its output tensors from d_1 back to d_k (eq. 8); else it stays on d_k; if no
//    GPU has room, best effort (most free memory). Order-Place's fill pointer is the special case
//    that never moves before a GPU is full.
//
// The schedule Adjusting Placement builds is its own model (coarse operators run as blocks,
// §5.2's proof is about that model); what the runner measures is the fine evaluator, so the
// strategy can also keep the better of its placement and Order-Place's by the evaluator
// (`keep_better`, report key `chosen`).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "placement/stages/coarsening/coarsening.h"
#include "placement/framework/strategy.h"
#include "sim/models/zoo.h"

namespace placesim {

namespace celeritas {

// Mean transfer time of `bytes` over the ordered GPU pairs (0 for zero bytes or one GPU).
struct MeanCommCost {
  explicit MeanCommCost(const Cluster& cluster);
  double operator()(double bytes) const { return bytes > 0 ? latency_s + bytes * inv_bandwidth : 0.0; }
  double latency_s = 0;      // mean pair latency
  double inv_bandwidth = 0;  // mean pair seconds per byte
};

struct Levels {
  std::vector<double> tlevel;  // eq. 2: longest path from a source to the operator, excluding it
  std::vector<double> blevel;  // eq. 3: longest path from the operator to a sink, including it
  std::vector<double> cpath;   // tlevel + blevel
};
// Levels with compute_s as w and comm(bytes) as c for every tensor (parallel tensors each count).
Levels compute_levels(const Graph& graph, const MeanCommCost& comm);

// The stack-based topological walk above, with a key per operator (larger key first; ties to the
// lower id). Returns the operators in order.
std::vector<OpId> keyed_dfs_topo_order(const Graph& graph, std::span<const double> key);
// DFS-TOPO: no key (lowest id first among equals).
std::vector<OpId> dfs_topo_order(const Graph& graph);
// CPD-TOPO with cpath from compute_levels(graph, comm).
std::vector<OpId> cpd_topo_order(const Graph& graph, const MeanCommCost& comm);

struct FusionConfig {
  int exploration_range = 200;         // R: at most this many operators per cluster (>= 1)
  double cluster_memory_bytes = 1e300; // M: at most this much memory per cluster (an operator alone may exceed it)
};

struct Fusion {
  std::vector<std::int32_t> cluster_of;  // per operator: its cluster (0.. in sequence order)
  std::vector<std::int32_t> starts;      // position in the sequence where each cluster starts
  double cut_cost = 0;                   // S(v_n): summed cost of the tensors between clusters
  int num_clusters() const { return static_cast<int>(starts.size()); }
};
// The DP over `sequence` (a topological order of every operator); `comm` gives each tensor's cost.
// Clusters respect R, M and the one-colocation-class rule.
Fusion optimal_fusion(const Graph& graph, std::span<const OpId> sequence, const MeanCommCost& comm,
                      const FusionConfig& config);
// Summed cost of the tensors whose ends are in different clusters (what the DP minimises).
double fusion_cut_cost(const Graph& graph, std::span<const std::int32_t> cluster_of, const MeanCommCost& comm);
// The coarse graph of a fusion (clusters named after their first operator, type "cluster").
Coarsening contract_fusion(const Graph& graph, const Fusion& fusion);

struct CoarsePlacement {
  std::vector<DeviceId> placement;     // per coarse operator
  std::vector<double> device_memory;   // per GPU, bytes charged
  std::vector<double> budget;          // per GPU, bytes the placer may fill
  int memory_fallbacks = 0;            // units placed where they did not fit
  int moves = 0;                       // Adjusting Placement: operators sent away from d_k by eq. 9
  double schedule_makespan_s = 0;      // Adjusting Placement: makespan of its own schedule
  std::vector<double> start, finish;   // Adjusting Placement: per coarse operator, in that schedule
};
// Both walk `order` (a topological order of `coarse`, normally its CPD-TOPO order).
CoarsePlacement order_place(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                            double memory_fraction);
CoarsePlacement adjusting_placement(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                                    double memory_fraction);
// Adjusting Placement's own schedule (blocks, insertion, eq. 7) of a given placement, walked in
// `order`: what its makespan would be for, e.g., Order-Place's placement.
CoarsePlacement schedule_coarse_placement(const Graph& coarse, const Cluster& cluster, std::span<const OpId> order,
                                          std::span<const DeviceId> placement);

// Celeritas's standard evaluation, step one (§4.2.1): memory = a + b x batch per operator, fitted
// by least squares on the graphs of the same model at a few small batches.
struct MemoryRegression {
  std::vector<std::string> names;       // operators present at every small batch
  std::vector<double> intercept_bytes;  // a
  std::vector<double> slope_bytes;      // b, bytes per sample
  std::vector<std::int64_t> batches;    // the small batches fitted
  double predict(std::size_t k, double batch) const { return intercept_bytes[k] + slope_bytes[k] * batch; }
};
// Builds `config` at each of `small_batches` (at least two distinct values >= 1) and fits every
// operator (matched by name). Throws InputError naming `graph.batch` on bad batches.
MemoryRegression fit_memory_regression(const models::ModelConfig& config, std::span<const std::int64_t> small_batches);
// Small batches for a target batch B: B/32, B/16, B/8 (at least 1, 2, 3).
std::vector<std::int64_t> default_small_batches(std::int64_t batch);
// `graph` (the model at the large batch: structure and compute) with every operator's memory
// replaced by the regression's prediction at `batch`; operators the regression does not know keep
// theirs. Returns the finalized copy and how many were predicted.
struct EstimatedGraph {
  Graph graph;
  std::size_t predicted = 0;
};
EstimatedGraph with_estimated_memory(const Graph& graph, const MemoryRegression& regression, double batch);

}  // namespace celeritas

struct CeleritasConfig {
  int exploration_range = 200;           // R of the fusion DP
  double cluster_memory_fraction = 0.25; // M = this x the smallest GPU budget
  double memory_fraction = 1.0;          // share of each GPU's memory the placer may fill, (0, 1]
  bool adjust = true;                    // false: Order-Place
  bool keep_better = true;               // celeritas: keep Order-Place's placement if the evaluator prefers it
  bool operator==(const CeleritasConfig&) const = default;
};

// report: operators, clusters, coarse_tensors, fusion_cut_cost_s, memory_fallbacks,
// device_memory_bytes (fine, per GPU), memory_budget_bytes; celeritas adds moves,
// schedule_makespan_s, and with keep_better evaluator_latency_s {adjusting, order_place} and chosen.
// Named "celeritas", or "order-place" when config.adjust is false.
class Celeritas : public Strategy {
 public:
  explicit Celeritas(CeleritasConfig config = {})
      : Strategy(config.adjust ? "celeritas" : "order-place"), config_(config) {}
  const CeleritasConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  CeleritasConfig config_;
};

// order-place: exploration_range, cluster_memory_fraction, memory_fraction (adjust and keep_better
// are not options: the strategy sets both false); celeritas adds keep_better.
OptionSchema<CeleritasConfig> order_place_schema();
OptionSchema<CeleritasConfig> celeritas_schema();
StrategyInfo order_place_strategy_info();
StrategyInfo celeritas_strategy_info();

}  // namespace placesim
