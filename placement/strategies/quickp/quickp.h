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
//    tensors that all have to cross: summing is the conservative choice, as placement/stages/coarsening
//    does; the papers do not say). Fusing operators of two colocation classes joins the classes.
//    alpha defaults to the 90th percentile (nearest rank) of the non-zero compute times (ICC V).
//  * Co-location (ICC eq. 7): r_i = p_i + max over successors (r_j + t_ij / b), b = the largest
//    pair bandwidth when every GPU is in one server (NVLink), else the smallest (Ethernet). Every
//    operator with two or more successors is grouped with its successor of highest r_j + t_ij / b
//    (ties: lowest id); groups are the weakly connected components of those edges (size >= 2).
//  * Algorithm 2 of the thesis (coarsening: algorithm2): Algorithm 1, co-location and fusion inside
//    groups, repeated; then WCC expansion by beta. See iterative_fusion_colocation.
//  * P2: see solve_p2. P3 (joint bandwidth allocation on multi-NIC clusters): bandwidth.h.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "placement/stages/coarsening/coarsening.h"
#include "placement/framework/strategy.h"
#include "sim/core/cluster.h"
#include "sim/core/graph.h"

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

// What the GPUs need of the reduced graph, which ICC's fusion and co-location know nothing of:
// at least min_units placement units, none holding more than max_memory bytes or more than
// max_work seconds of compute (its share of the work). Without limits the papers' rules apply.
struct UnitLimits {
  int min_units = 0;
  double max_memory = std::numeric_limits<double>::infinity();
  double max_work = std::numeric_limits<double>::infinity();
};
// For `cluster`: min(GPUs, operators) units, the smallest GPU's memory, total compute / GPUs (no
// limit on memory and work with one GPU).
UnitLimits unit_limits(const Graph& g, const Cluster& cluster);

// ICC Algorithm 1 repeated to a fixed point. group_of maps operators to fused operators. An edge
// fuses only if the fused operator stays within `limits` and more than min_units operators remain;
// with min_units > 1 it never joins two colocation classes either.
Coarsening fuse_operators(const Graph& g, double alpha, const UnitLimits& limits = {});

// The bandwidth b of eq. 7 (bytes/s; +infinity on one GPU).
double colocation_bandwidth(const Cluster& cluster);

// Co-location groups (eq. 7): group id per operator, -1 for an ungrouped operator; groups are
// numbered 0..k-1 in the order of their lowest operator.
struct Colocation {
  std::vector<int> group_of;
  int num_groups = 0;
};
Colocation colocate(const Graph& g, double bandwidth);

// Groups within `limits`: a group holding more memory or work than a unit may is cut, its members
// in topological order, into consecutive pieces, each cut where it lengthens the critical path
// least (the longest compute path through an edge the cut makes cross GPUs, its transfer at
// `bandwidth` included; ties: the later cut, so fewer pieces); an operator alone is never cut.
// Then, while there are fewer units (groups plus ungrouped operators) than min_units, the largest
// group is dissolved. *splits: cuts and dissolved groups. Groups of one operator are no groups.
Colocation split_groups(const Graph& g, const Colocation& groups, double bandwidth, const UnitLimits& limits,
                        int* splits = nullptr);

// Thesis Algorithm 2 (section 4.3), for co-location groups found on g:
//  * fuse_within_groups: inside each group, edge (i, j) (both ends in the group, sources in
//    topological order) fuses j into i when succ(i) lies inside the group or p_j < alpha, unless
//    another path i ~> j exists (the merge would close a cycle). The group's members run one after
//    another on one GPU anyway, so fusing them loses no parallelism the group had not lost already.
//    *fused_edges receives the number of merges.
//  * expand_groups (WCC expansion): every ungrouped operator with p_i < beta and a predecessor or
//    successor in a group joins that group (several: the one its tensors to it carry the most
//    bytes, ties the lower id; judged on the groups before expansion). *joined: how many joined.
//  * iterative_fusion_colocation: repeat { Algorithm 1; co-location (eq. 7); fusion within groups }
//    until no fusion within groups happens, then expand the last groups by beta.
Coarsening fuse_within_groups(const Graph& g, const Colocation& groups, double alpha, int* fused_edges = nullptr);
Colocation expand_groups(const Graph& g, const Colocation& groups, double beta, int* joined = nullptr);
struct IterativeReduction {
  Coarsening fused;   // original graph -> reduced graph
  Colocation groups;  // on fused.coarse, after expansion
  int rounds = 0;     // passes of Algorithm 2's loop
  int expanded = 0;   // operators that joined a group by beta
  int splits = 0;     // cuts of groups by the limits (split_groups)
};
// With `limits`, fusion respects them and the groups are split to them after every co-location
// and after the expansion.
IterativeReduction iterative_fusion_colocation(const Graph& g, double alpha, double beta, double bandwidth,
                                               const UnitLimits& limits = {});

struct P2Options {
  double mip_gap = 0.05;     // relative gap at which CBC stops
  // Wall-clock limit of the whole solve_p2 call (warm start, model, CBC); the best incumbent is
  // returned. The warm start's descent stops at it, CBC gets what is left (its LPs stop at CLP's
  // wall-clock limit), and with nothing left the warm start is the answer.
  double time_limit_s = 60;
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
  bool operator==(const P2Options&) const = default;
};

enum class P2Status { Optimal, TimeLimit, NodeLimit, Infeasible };
inline constexpr EnumName<P2Status> kP2StatusNames[] = {
    {P2Status::Optimal, "optimal"},
    {P2Status::TimeLimit, "time_limit"},
    {P2Status::NodeLimit, "node_limit"},
    {P2Status::Infeasible, "infeasible"},
};

struct P2Solution {
  std::vector<DeviceId> placement;               // per operator of the graph solved
  std::vector<double> start;                     // per operator, the solver's start times
  std::vector<std::vector<OpId>> device_order;   // per GPU, operators by start time (ties: topological)
  double objective = 0;                          // the makespan C of the incumbent
  double best_bound = 0;
  double gap = 0;                                // (objective - bound) / objective
  P2Status status = P2Status::Optimal;
  double seconds = 0;                            // the whole call, of which:
  double warm_start_seconds = 0, model_seconds = 0;  // finding the warm start; building the model
  int columns = 0, rows = 0, ordering_pairs = 0;  // of the model as far as it was built
  bool model_incomplete = false;                 // the time limit stopped the model's build: no solve
  int units = 0;                                 // placement units (groups joined with colocation classes)
  int nodes = 0;                                 // branch-and-bound nodes explored (0: skipped)
  bool warm_started = false;
  double warm_start_objective = 0;               // makespan of the accepted warm start
};

// P2 on `g` (usually the fused graph). Placement units are the co-location groups joined with the
// colocation classes; each unit u has binaries x[u,d] summing to 1. Per operator a start s_i
// (f_i = s_i + p_i), makespan C, minimise C.
//  * The warm start is found first; its makespan H bounds everything: s_i in [head_i, H - rank_i]
//    (head: longest compute-only path into i; rank: from i, p_i included), C <= H, C >= s_i + rank_i,
//    and C >= the work placed on each GPU (sum p_i x_id), so the LP sees the load.
//  * Edge (i, j): f_i <= s_j when both are in one unit or the tensor is empty. Otherwise, when
//    transfer times depend only on whether two GPUs share a server (identical servers), f_i +
//    c_intra y_ij + (c_inter - c_intra) w_ij <= s_j with y_ij >= x_id - x_jd for every GPU d and
//    w_ij >= X_iS - X_jS for every server S (X: x summed over the server's GPUs): 1 or 2 columns per
//    edge instead of k(k-1). When they depend on the ordered server pair (a multi-NIC cluster with
//    an uneven allocation), y as above and w_ijST >= X_iS + X_jT - 1 per ordered server pair, cost
//    c_ST - c_intra. Else f_i + sum_{d != e} z_ijde * transfer_time(d, e, t_ij) <= s_j with
//    z_ijde >= x_id + x_je - 1. All exact: y, w, z only appear on the left of a <=.
//  * Parallelizable pairs (a, b) with p_a, p_b > 0: in one unit, in topological order (ICC P2 (13));
//    skipped when the windows already order them (latest finish of a <= earliest start of b);
//    otherwise a binary o_ab and, for every d, f_a <= s_b + M_ab(1 - o_ab) + M_ab(2 - x_ad - x_bd)
//    and f_b <= s_a + M_ba o_ab + M_ba(2 - x_ad - x_bd), M_ab = latest finish of a - head_b.
//  * Memory: sum m_i x_id <= M_d.
// Solved by CBC (dual simplex) from the warm start, unless the warm start is already within
// mip_gap of max(longest compute path, work / GPUs): that is all the LP relaxation proves when
// the big-M rows are slack, so branch and bound is skipped (status optimal, bound that value).
// Times enter the model in microseconds (CBC's absolute tolerances would swamp seconds).
// If the memory constraint makes P2 infeasible the best warm start (or GPU 0) comes back, status
// Infeasible. Throws std::runtime_error if write_model cannot be written.
P2Solution solve_p2(const Graph& g, const Cluster& cluster, const Colocation& colocation, const P2Options& options);

std::string_view p2_status_name(P2Status s);

// What QuickP says of the placement it returns, for the problem the user posed (the whole graph on
// the whole cluster, measured by the evaluator):
//  * optimal: its evaluator latency is within mip_gap of a lower bound of the whole problem (the
//    critical path at the fastest GPU, the work per GPU, or P2's own bound when P2 was posed on the
//    unreduced graph with the evaluator's durations);
//  * reduced_optimal: P2 proved its answer optimal (within mip_gap) for the reduced problem it was
//    posed -- fused operators, co-location groups as units -- and nothing more is known;
//  * time_limit, node_limit: the solver stopped there;
//  * infeasible: P2 found no placement that fits (the answer then comes from the portfolio).
enum class QuickPStatus { Optimal, ReducedOptimal, TimeLimit, NodeLimit, Infeasible };
inline constexpr EnumName<QuickPStatus> kQuickPStatusNames[] = {
    {QuickPStatus::Optimal, "optimal"},
    {QuickPStatus::ReducedOptimal, "reduced_optimal"},
    {QuickPStatus::TimeLimit, "time_limit"},
    {QuickPStatus::NodeLimit, "node_limit"},
    {QuickPStatus::Infeasible, "infeasible"},
};
// `latency`: the evaluator's latency of the answer; `whole_bound`: a lower bound of the whole
// problem; `p2_exact`: P2 was posed on the unreduced graph with the evaluator's durations, so its
// best bound bounds the whole problem too (`p2_bound`).
QuickPStatus quickp_status(P2Status p2, double latency, double whole_bound, bool p2_exact, double p2_bound,
                           double mip_gap);

// How the graph is reduced before P2: ICC (Algorithm 1 then co-location) or the thesis's
// Algorithm 2 (iterated, with fusion inside groups and WCC expansion by beta).
enum class QuickPCoarsening { Algorithm1, Algorithm2 };
inline constexpr EnumName<QuickPCoarsening> kQuickPCoarseningNames[] = {
    {QuickPCoarsening::Algorithm1, "algorithm1"},
    {QuickPCoarsening::Algorithm2, "algorithm2"},
};

struct QuickPConfig {
  std::optional<double> alpha_s;  // fusion threshold in seconds; unset: the percentile below
  double alpha_percentile = 0.9;
  QuickPCoarsening coarsening = QuickPCoarsening::Algorithm1;
  // P3 (placement/strategies/quickp/bandwidth.h): on a multi-NIC cluster also choose the allocation b(s,t),
  // alternating placement and allocation at most allocation_rounds times.
  bool bandwidth_allocation = false;
  int allocation_rounds = 3;
  // Algorithm 2's co-location threshold (seconds); unset: 2 alpha (the thesis sets alpha and beta
  // to a quarter and a half of the same CDF-slope sum, so beta = 2 alpha).
  std::optional<double> beta_s;
  bool fusion = true;
  bool colocation = true;
  // Keep the reduced graph usable by the GPUs (UnitLimits): on by default; off gives the papers'
  // fusion and co-location exactly.
  bool unit_limits = true;
  // Share of the time left after the portfolio that is kept for a local search (placement/stages/refine)
  // from the best placement found, under the strategy's cost model: P2's answer is optimal at
  // best for the reduced problem, and moving single units is what the reduction cannot do. It
  // stops early when 20 rounds in a row find nothing better. 0: off (the papers' QuickP).
  double polish_share = 0.2;
  P2Options p2;  // its time_limit_s is set per solve from the call's time limit
  bool operator==(const QuickPConfig&) const = default;
};

// What one pass of QuickP (reduction, then P2) found, beside its placement.
struct QuickPPass {
  PlacementResult result;  // placement and report
  P2Status p2_status = P2Status::Optimal;
  double p2_bound = 0;     // P2's best bound, seconds
  bool p2_exact = false;   // P2 was posed on the whole problem (see quickp_status)
};

class QuickP : public Strategy {
 public:
  explicit QuickP(QuickPConfig config) : Strategy("quickp"), config_(std::move(config)) {}
  const QuickPConfig& config() const { return config_; }
  // report: operators, fused_operators, units, alpha_s, groups, parallelizable_pairs (fused graph),
  // fusion_seconds, solver_seconds, gap, objective_s, best_bound_s (of the reduced problem P2 was
  // posed), p2_status; status (quickp_status, for the whole problem), reduced ({operators,
  // fused_operators, units, groups} when P2 was posed a reduced problem), evaluator_latency_s,
  // lower_bound_s (the whole problem's: max of lower_bound_critical_path_s and
  // lower_bound_work_s), lower_bound_memory_per_gpu_bytes, gap_to_lower_bound.
  // Never worse than the cheap answers: m-TOPO, single-device, HEFT, m-ETF and METIS run first (through
  // the registry, with the call's time), and the placement returned is the best that fits of
  // theirs and QuickP's own by the evaluator: report portfolio ({name: latency or why not}) and
  // portfolio_winner. P2 infeasible with nothing of the portfolio fitting is an error, never an
  // out-of-memory placement.
  // With bandwidth_allocation on a multi-NIC cluster, also bandwidth_allocation (the result's
  // allocation) and report: allocation (b(s,t) rows, bytes/s), latency_uniform_s (the first
  // placement on the cluster as given), latency_s, allocation_rounds, allocation_accepted.
  // With polish_share > 0, report polish (placement/stages/refine's report of the local search).
  // P2 and P3 get the time left after the portfolio but polish_share of it; the polish the rest.

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  // P2 gets `share` of the time left.
  QuickPPass place_once(const Graph& graph, const Cluster& cluster, const Deadline& deadline, double share) const;
  QuickPConfig config_;
};

OptionSchema<QuickPConfig> quickp_schema();
StrategyInfo quickp_strategy_info();

}  // namespace placesim
