#pragma once
// QuickP (Wang et al., ICC 2025; the QuickP thesis, chapter 4): operator fusion and co-location
// shrink the graph, then an integer program (P2) places and schedules what is left.
//
//  * Parallelizable pairs (ICC Definition 1): operators with no directed path either way. Found
//    with reachability bitsets (one row of n bits per operator, filled in reverse topological
//    order); 12,000 operators take 18 MB.
//  * Fusion (ICC Algorithm 1), edge (i, j) on the current fused graph, j fuses into i:
//      out-degree(i) >= 2 and in-degree(j) >= 2         -> never (the only edges that can close a
//                                                          cycle, Theorem 2; and they kill parallelism)
//      out-degree(i) == 1 and in-degree(j) == 1         -> always (a straight line)
//      (p_i <= alpha and out-degree(i) == 1) or
//      (p_j <= alpha and in-degree(j) == 1)             -> fuse
//    Degrees count distinct neighbours of the fused graph, p is the fused compute time. Passes over
//    the edges repeat until none fuses. Every fused edge has out-degree(i) == 1 or in-degree(j) == 1,
//    so the result is acyclic by Theorem 2. A fused operator sums compute and memory; tensors
//    between two fused operators are merged into one whose bytes are the sum (they are distinct
//    tensors that all have to cross: summing is the conservative choice, as placement/coarsening
//    does; the papers do not say). Fusing operators of two colocation classes joins the classes.
//    alpha defaults to the 90th percentile (nearest rank) of the non-zero compute times (ICC V).
//  * Co-location (ICC eq. 7): r_i = p_i + max over successors (r_j + t_ij / b), b = the largest
//    pair bandwidth when every GPU is in one server (NVLink), else the smallest (Ethernet). Every
//    operator with two or more successors is grouped with its successor of highest r_j + t_ij / b
//    (ties: lowest id); groups are the weakly connected components of those edges (size >= 2).
//  * P2: see solve_p2.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "placement/coarsening/coarsening.h"
#include "placement/strategy.h"
#include "sim/cluster.h"
#include "sim/graph.h"

namespace placesim {

// Row i holds the operators reachable from i by a path of one or more edges.
class Reachability {
 public:
  explicit Reachability(const Graph& g);
  bool reaches(OpId from, OpId to) const {
    return (rows_[static_cast<std::size_t>(from) * words_ + (to >> 6)] >> (to & 63)) & 1u;
  }
  bool parallelizable(OpId a, OpId b) const { return a != b && !reaches(a, b) && !reaches(b, a); }
  // Unordered pairs {i, j}, i != j, with no path either way: n(n-1)/2 minus the comparable pairs.
  std::uint64_t count_parallelizable_pairs() const;

 private:
  std::size_t n_ = 0, words_ = 0;
  std::vector<std::uint64_t> rows_;
};

// Every parallelizable pair (i, j) with i < j, in increasing (i, j).
std::vector<std::pair<OpId, OpId>> parallelizable_pairs(const Graph& g);

// The fusion threshold: the `percentile` (0..1, nearest rank) of the non-zero compute times; 0 if
// every compute time is zero.
double fusion_threshold(const Graph& g, double percentile);

// ICC Algorithm 1 repeated to a fixed point. group_of maps operators to fused operators.
Coarsening fuse_operators(const Graph& g, double alpha);

// The bandwidth b of eq. 7 (bytes/s; +infinity on one GPU).
double colocation_bandwidth(const Cluster& cluster);

// Co-location groups (eq. 7): group id per operator, -1 for an ungrouped operator; groups are
// numbered 0..k-1 in the order of their lowest operator.
struct Colocation {
  std::vector<int> group_of;
  int num_groups = 0;
};
Colocation colocate(const Graph& g, double bandwidth);

struct P2Options {
  double mip_gap = 0.05;     // relative gap at which CBC stops
  double time_limit_s = 60;  // CBC wall-clock limit; the best incumbent is returned
  // CBC node limit: unlike the wall clock it stops every run at the same point, so the same
  // inputs give the same placement (0: no limit).
  int max_nodes = 20;
  // First incumbent: the best of single-device and HEFT (run with the units as colocation classes),
  // each scheduled per GPU in topological or evaluator order, then improved by moving one unit at a
  // time to another GPU while the makespan drops.
  bool warm_start = true;
  bool break_symmetry = true;  // first unit on GPU 0 when every GPU looks alike
  std::string write_model;   // write the model here (".mps" -> MPS, else LP) before solving
  bool cuts_and_heuristics = false;  // CBC cut generators (probing, Gomory, ...) and FPump/RINS/local search
};

enum class P2Status { Optimal, TimeLimit, NodeLimit, Infeasible };

struct P2Solution {
  std::vector<DeviceId> placement;               // per operator of the graph solved
  std::vector<double> start;                     // per operator, the solver's start times
  std::vector<std::vector<OpId>> device_order;   // per GPU, operators by start time (ties: topological)
  double objective = 0;                          // the makespan C of the incumbent
  double best_bound = 0;
  double gap = 0;                                // (objective - bound) / objective
  P2Status status = P2Status::Optimal;
  double seconds = 0;
  int columns = 0, rows = 0, ordering_pairs = 0;
  bool warm_started = false;
  double warm_start_objective = 0;               // makespan of the accepted warm start
};

// P2 on `g` (usually the fused graph). Placement units are the co-location groups joined with the
// colocation classes; each unit u has binaries x[u,d] summing to 1. Per operator a start s_i
// (f_i = s_i + p_i), makespan C >= f_i, minimise C. Edge (i, j): f_i <= s_j when both are in one
// unit or the tensor is empty, else f_i + sum_{d != e} z_ijde * transfer_time(d, e, t_ij) <= s_j with
// z_ijde >= x_id + x_je - 1, z >= 0 (exact: z only appears on the left of a <=). Parallelizable pairs
// with p_i, p_j > 0: in one unit, in topological order (ICC P2 (13)); otherwise a binary o_ij and,
// for every d, f_i <= s_j + M(1 - o_ij) + M(2 - x_id - x_jd) and f_j <= s_i + M o_ij + M(2 - x_id - x_jd),
// M = total compute + sum over edges of the slowest transfer. Memory: sum m_i x_id <= M_d.
// Times enter the model in microseconds (CBC's absolute tolerances would swamp seconds).
// If the memory constraint makes P2 infeasible the best warm start (or GPU 0) comes back, status
// Infeasible. Throws std::runtime_error if write_model cannot be written.
P2Solution solve_p2(const Graph& g, const Cluster& cluster, const Colocation& colocation, const P2Options& options);

std::string_view p2_status_name(P2Status s);

struct QuickPConfig {
  std::optional<double> alpha_s;  // fusion threshold in seconds; unset: the percentile below
  double alpha_percentile = 0.9;
  bool fusion = true;
  bool colocation = true;
  P2Options p2;
};

class QuickP : public Strategy {
 public:
  explicit QuickP(QuickPConfig config) : config_(std::move(config)) {}
  // report: operators, fused_operators, alpha_s, groups, parallelizable_pairs (fused graph),
  // fusion_seconds, solver_seconds, gap, objective_s, best_bound_s, status.
  PlacementResult place(const Graph& graph, const Cluster& cluster) override;

 private:
  QuickPConfig config_;
};

StrategyInfo quickp_strategy_info();

}  // namespace placesim
