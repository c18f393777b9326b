// QuickP's integer program P2 (see solve_p2 in quickp.h), solved with COIN-OR CBC. Its stages, in
// the order solve_p2 runs them: the problem (placement units, merged edges, durations in the
// model's unit), the warm start, the time windows, the model's columns and rows, the solve, and
// reading the solution back.

#include "placement/strategies/quickp/quickp.h"

#include "placement/framework/lp_deadline.h"
#include "placement/framework/union_find.h"

#include <CbcHeuristic.hpp>
#include <CbcHeuristicFPump.hpp>
#include <CbcHeuristicLocal.hpp>
#include <CbcHeuristicRINS.hpp>
#include <CbcModel.hpp>
#include <CglClique.hpp>
#include <CglFlowCover.hpp>
#include <CglGomory.hpp>
#include <CglKnapsackCover.hpp>
#include <CglMixedIntegerRounding2.hpp>
#include <CglProbing.hpp>
#include <CoinMessageHandler.hpp>
#include <CoinPackedMatrix.hpp>
#include <ClpEventHandler.hpp>
#include <ClpSolve.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "placement/strategies/heft/heft.h"
#include "sim/engines/evaluator.h"

namespace placesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The model counts time in microseconds: in seconds a makespan (~1e-4) sits below CBC's absolute
// tolerances (its cutoff increment is 1e-5), which would let it prune everything.
constexpr double kTimeUnit = 1e-6;

// The alpha-beta views (bandwidth, latency) of the GPU pairs inside a server and of the pairs
// across servers, when each is one view for all such pairs (else nullopt). A view is unset when
// the cluster has no such pair.
struct PairViews {
  std::optional<std::pair<double, double>> inside, across;
};
std::optional<PairViews> uniform_pair_views(const Cluster& c) {
  PairViews views;
  const int k = c.num_devices();
  for (DeviceId a = 0; a < k; ++a)
    for (DeviceId b = 0; b < k; ++b) {
      if (a == b) continue;
      auto& ref = c.device(a).server == c.device(b).server ? views.inside : views.across;
      const std::pair<double, double> view{c.bandwidth(a, b), c.latency(a, b)};
      if (!ref) ref = view;
      else if (*ref != view) return std::nullopt;
    }
  return views;
}

// Every GPU can be mapped to GPU 0 by a symmetry of the cluster: GPUs alike, servers of equal size,
// and the alpha-beta view of a pair depends only on whether it stays inside a server.
bool gpus_interchangeable(const Cluster& c) {
  std::map<int, int> per_server;
  for (const Device& d : c.devices()) ++per_server[d.server];
  for (const auto& [s, count] : per_server)
    if (count != per_server.begin()->second) return false;
  for (const Device& d : c.devices())
    if (d.memory_bytes != c.device(0).memory_bytes || d.compute_speed != c.device(0).compute_speed) return false;
  return uniform_pair_views(c).has_value();
}

// The placement units: co-location groups joined with colocation classes (P2 places each unit as a
// whole). Unit per operator, numbered in topological order of their first member.
std::vector<int> placement_units(const Graph& g, const Colocation& colocation) {
  const int n = static_cast<int>(g.num_operators());
  UnionFind uf(n);
  std::vector<int> first_of_group(colocation.num_groups, -1), first_of_class(g.num_colocation_classes(), -1);
  for (int i = 0; i < n; ++i) {
    if (const int grp = colocation.group_of.empty() ? -1 : colocation.group_of[i]; grp >= 0) {
      if (first_of_group[grp] < 0) first_of_group[grp] = i;
      else uf.join(first_of_group[grp], i);
    }
    if (const int cls = g.op(i).colocation_class; cls >= 0) {
      if (first_of_class[cls] < 0) first_of_class[cls] = i;
      else uf.join(first_of_class[cls], i);
    }
  }
  std::vector<int> unit(n), unit_of_root(n, -1);
  int num_units = 0;
  for (OpId i : g.topological_order()) {
    const int r = uf.find(i);
    if (unit_of_root[r] < 0) unit_of_root[r] = num_units++;
    unit[i] = unit_of_root[r];
  }
  return unit;
}

// What P2 is posed on, read by every stage below: the graph and cluster, the placement units, the
// edges merged per ordered pair of operators (parallel tensors: summed bytes) and durations in the
// model's unit of time.
struct P2Problem {
  P2Problem(const Graph& graph, const Cluster& c, const Colocation& colocation, bool break_symmetry)
      : g(graph), cluster(c), n(static_cast<int>(graph.num_operators())), k(c.num_devices()),
        topo(graph.topological_order()), unit(placement_units(graph, colocation)) {
    num_units = n == 0 ? 0 : *std::max_element(unit.begin(), unit.end()) + 1;
    for (const Tensor& t : g.tensors()) edge_bytes[{t.src, t.dst}] += t.bytes;
    preds.resize(n);
    for (const auto& [ij, bytes] : edge_bytes) preds[ij.second].emplace_back(ij.first, bytes);
    compute.resize(n);
    for (int i = 0; i < n; ++i) compute[i] = g.op(i).compute_s / kTimeUnit;
    merged_bytes.resize(g.num_tensors());
    for (EdgeId e = 0; e < static_cast<EdgeId>(merged_bytes.size()); ++e)
      merged_bytes[e] = edge_bytes.at({g.tensor(e).src, g.tensor(e).dst});
    symmetric = break_symmetry && k > 1 && n > 0 && gpus_interchangeable(cluster);
  }

  double p(OpId i) const { return compute[i]; }
  double transfer(DeviceId d, DeviceId e, double bytes) const { return cluster.transfer_time(d, e, bytes) / kTimeUnit; }

  // The schedule (model unit) of a placement whose GPUs run their operators in the order of
  // `sequence` (a topological order of g): the evaluator's replay with P2's durations, the ones the
  // model's rows hold a solution to -- p_i, and per tensor the transfer of its merged edge (none
  // inside a unit).
  Schedule replay(const std::vector<DeviceId>& placement, std::span<const OpId> sequence) const {
    std::vector<std::vector<OpId>> order(k);
    for (OpId i : sequence) order[placement[i]].push_back(i);
    std::vector<double> arrival(merged_bytes.size());
    for (EdgeId e = 0; e < static_cast<EdgeId>(arrival.size()); ++e) {
      const Tensor& t = g.tensor(e);
      arrival[e] = unit[t.src] == unit[t.dst] ? 0.0 : transfer(placement[t.src], placement[t.dst], merged_bytes[e]);
    }
    return replay_order_with_costs(g, k, placement, order, compute, arrival);
  }
  // The evaluator's order for a placement, with each unit's operators put back in topological
  // order within the unit's slots (P2 fixes that order); empty if that breaks a dependency.
  std::vector<OpId> evaluator_sequence(const std::vector<DeviceId>& placement) const {
    const Schedule sched = Evaluator(g, cluster).schedule(placement);
    std::vector<OpId> seq(topo.begin(), topo.end());
    std::stable_sort(seq.begin(), seq.end(), [&](OpId a, OpId b) { return sched.start[a] < sched.start[b]; });
    std::vector<std::vector<int>> slots(num_units);
    for (int q = 0; q < n; ++q) slots[unit[seq[q]]].push_back(q);
    std::vector<std::size_t> next(num_units, 0);
    std::vector<OpId> out(n);
    for (OpId i : topo) out[slots[unit[i]][next[unit[i]]++]] = i;
    std::vector<int> pos(n);
    for (int q = 0; q < n; ++q) pos[out[q]] = q;
    for (const Tensor& t : g.tensors())
      if (pos[t.src] >= pos[t.dst]) return {};
    return out;
  }
  // Every unit on the GPU of its first operator in topological order.
  std::vector<DeviceId> unit_consistent(std::vector<DeviceId> placement) const {
    std::vector<DeviceId> device_of_unit(num_units, -1);
    for (OpId i : topo)
      if (device_of_unit[unit[i]] < 0) device_of_unit[unit[i]] = placement[i];
    for (int i = 0; i < n; ++i) placement[i] = device_of_unit[unit[i]];
    return placement;
  }
  bool fits(const std::vector<DeviceId>& placement) const {
    const auto mem = device_memory(g, placement, k);
    for (DeviceId d = 0; d < k; ++d)
      if (mem[d] > cluster.device(d).memory_bytes) return false;
    return true;
  }

  const Graph& g;
  const Cluster& cluster;
  int n, k;
  std::span<const OpId> topo;
  std::vector<int> unit;  // per operator
  int num_units = 0;
  std::map<std::pair<int, int>, double> edge_bytes;        // (i, j) -> bytes of every tensor i -> j
  std::vector<std::vector<std::pair<int, double>>> preds;  // per j: (i, bytes of (i, j))
  std::vector<double> compute;                             // per operator: p_i
  std::vector<double> merged_bytes;                        // per tensor: bytes of its (i, j)
  bool symmetric = false;                                  // pin the first unit to GPU 0
};

// The warm start, found before the model is built: its makespan bounds every time variable and
// gives the big-M constants (a solution worse than the incumbent is of no interest). Without one,
// `placement` stays all on GPU 0: the answer if the model turns out infeasible.
struct WarmStart {
  bool found = false;
  double makespan = kInf;           // model unit
  std::vector<DeviceId> placement;  // per operator
  std::vector<double> start;        // per operator, model unit
  std::vector<int> pos;             // per operator, its position in the sequence it was scheduled in

  // Keeps the schedule of `candidate` in `sequence` order if it beats the incumbent.
  void consider(const P2Problem& pb, const std::vector<DeviceId>& candidate, std::span<const OpId> sequence) {
    Schedule sched = pb.replay(candidate, sequence);
    if (sched.latency < makespan) {
      makespan = sched.latency;
      start = std::move(sched.start);
      placement = candidate;
      for (int q = 0; q < pb.n; ++q) pos[sequence[q]] = q;
      found = true;
    }
  }
};

// The placements the warm start tries: every unit on GPU 0 and, on several GPUs, HEFT with the
// units as colocation classes, so that it plans with them.
std::vector<std::vector<DeviceId>> warm_start_candidates(const P2Problem& pb) {
  std::vector<std::vector<DeviceId>> candidates;
  candidates.emplace_back(pb.n, 0);
  if (pb.k > 1) {
    Graph with_units;
    for (int i = 0; i < pb.n; ++i) {
      Operator op = pb.g.op(i);
      op.colocation_class = pb.unit[i];
      with_units.add_operator(std::move(op));
    }
    for (const Tensor& t : pb.g.tensors()) with_units.add_tensor(t.src, t.dst, t.bytes);
    with_units.finalize("quickp units");
    candidates.push_back(pb.unit_consistent(heft_schedule(with_units, pb.cluster, HeftConfig{}).placement));
  }
  return candidates;
}

// Relabels GPUs by a symmetry of the cluster so that the first unit is on GPU 0 (where the model
// pins it): swap its server with GPU 0's server (GPUs by rank inside a server), then two GPUs of
// that server.
void put_first_unit_on_gpu0(const P2Problem& pb, std::vector<DeviceId>& placement) {
  const Cluster& cluster = pb.cluster;
  std::map<int, std::vector<DeviceId>> by_server;
  for (DeviceId d = 0; d < pb.k; ++d) by_server[cluster.device(d).server].push_back(d);
  auto rank_in = [&](DeviceId d) {
    const auto& v = by_server[cluster.device(d).server];
    return static_cast<std::size_t>(std::find(v.begin(), v.end(), d) - v.begin());
  };
  const DeviceId first = placement[pb.topo[0]];
  const int sa = cluster.device(first).server, sb = cluster.device(0).server;
  std::vector<DeviceId> perm(pb.k);
  for (DeviceId d = 0; d < pb.k; ++d) {
    const int sd = cluster.device(d).server;
    perm[d] = sd == sa ? by_server[sb][rank_in(d)] : sd == sb ? by_server[sa][rank_in(d)] : d;
  }
  const DeviceId moved = perm[first];
  for (DeviceId& q : perm) q = q == moved ? 0 : q == 0 ? moved : q;
  for (DeviceId& d : placement) d = perm[d];
}

// A deterministic descent from the incumbent: move one unit to another GPU while that lowers the
// makespan of the topological-order schedule (one pass over the graph per try; a few passes at
// most). Every improvement that beats the incumbent becomes the incumbent.
void descend(const P2Problem& pb, WarmStart& warm, std::chrono::steady_clock::time_point stop) {
  std::vector<std::vector<OpId>> members(pb.num_units);
  for (OpId i : pb.topo) members[pb.unit[i]].push_back(i);
  std::vector<DeviceId> current = warm.placement;
  double current_mk = pb.replay(current, pb.topo).latency;
  for (int pass = 0; pass < 10; ++pass) {
    bool improved = false;
    for (int u = 0; u < pb.num_units; ++u) {
      if (std::chrono::steady_clock::now() >= stop) return;  // the call's time is up: keep what it has
      if (pb.symmetric && u == pb.unit[pb.topo[0]]) continue;  // pinned to GPU 0
      for (DeviceId d = 0; d < pb.k; ++d) {
        const DeviceId was = current[members[u][0]];
        if (d == was) continue;
        for (OpId i : members[u]) current[i] = d;
        const double mk = pb.replay(current, pb.topo).latency;
        if (mk < current_mk * (1 - 1e-12) && pb.fits(current)) {
          current_mk = mk;
          improved = true;
          if (mk < warm.makespan) warm.consider(pb, current, pb.topo);
        } else {
          for (OpId i : members[u]) current[i] = was;
        }
      }
    }
    if (!improved) break;
  }
}

// The best of the candidates that fit, each scheduled per GPU in topological and in evaluator
// order, then improved by descent. None when `enabled` is false.
WarmStart find_warm_start(const P2Problem& pb, bool enabled, std::chrono::steady_clock::time_point stop) {
  WarmStart warm;
  warm.placement.assign(pb.n, 0);
  warm.pos.assign(pb.n, 0);
  if (!enabled || pb.n == 0) return warm;
  for (auto& cand : warm_start_candidates(pb)) {
    if (pb.symmetric && cand[pb.topo[0]] != 0) put_first_unit_on_gpu0(pb, cand);
    if (!pb.fits(cand)) continue;
    warm.consider(pb, cand, pb.topo);
    if (auto seq = pb.evaluator_sequence(cand); !seq.empty()) warm.consider(pb, cand, seq);
  }
  if (warm.found && pb.k > 1) descend(pb, warm, stop);
  return warm;
}

// Time windows. head_i: the longest compute-only path into i (s_i >= head_i whatever the
// placement); rank_i: the longest compute-only path from i, p_i included (C >= s_i + rank_i).
// With an incumbent of makespan H every solution worth finding has s_i <= H - rank_i.
struct TimeWindows {
  std::vector<double> head, rank;
  double horizon = 0;  // no solution worth finding ends later
  // A bound that needs no LP: the longest compute-only path and the average work per GPU.
  double trivial_bound = 0;
  double latest_start(OpId i) const { return std::max(head[i], horizon - rank[i]); }
};

TimeWindows time_windows(const P2Problem& pb, const WarmStart& warm) {
  TimeWindows w;
  w.head.assign(pb.n, 0.0);
  w.rank.assign(pb.n, 0.0);
  for (OpId i : pb.topo)
    for (const auto& [q, bytes] : pb.preds[i]) w.head[i] = std::max(w.head[i], w.head[q] + pb.p(q));
  for (auto it = pb.topo.rbegin(); it != pb.topo.rend(); ++it) {
    w.rank[*it] += pb.p(*it);
    for (const auto& [q, bytes] : pb.preds[*it]) w.rank[q] = std::max(w.rank[q], w.rank[*it]);
  }
  w.horizon = pb.g.total_compute() / kTimeUnit;  // no incumbent: every operator, every transfer
  for (const auto& [ij, bytes] : pb.edge_bytes) {
    double worst = 0;
    for (DeviceId d = 0; d < pb.k; ++d)
      for (DeviceId e = 0; e < pb.k; ++e) worst = std::max(worst, pb.transfer(d, e, bytes));
    w.horizon += worst;
  }
  // A hair above the incumbent so that it stays feasible through rounding.
  if (warm.found) w.horizon = std::min(w.horizon, warm.makespan * (1 + 1e-7) + 1e-9);
  w.horizon = std::max(w.horizon, 1e-3);
  double work = 0;
  for (int i = 0; i < pb.n; ++i) {
    w.trivial_bound = std::max(w.trivial_bound, w.head[i] + w.rank[i]);
    work += pb.p(i);
  }
  w.trivial_bound = std::max(w.trivial_bound, work / pb.k);
  return w;
}

// How transfer times enter the model, decided once per cluster. When a pair's transfer time
// depends only on whether the two GPUs share a server (every cluster of identical servers with one
// intra- and one inter-server view): two_level. When it depends on the two servers (a multi-NIC
// cluster with its own allocation per server pair): server_pairs. Otherwise one indicator per
// ordered GPU pair. See P2Model::add_edge_rows.
struct CommForm {
  explicit CommForm(const Cluster& cluster);
  int num_servers() const { return static_cast<int>(server_gpus.size()); }

  std::vector<std::vector<DeviceId>> server_gpus;          // GPUs by server, servers by id
  std::vector<int> server_index;                           // per GPU: its server's index in server_gpus
  int intra_pair[2] = {-1, -1}, inter_pair[2] = {-1, -1};  // the first GPU pair inside / across servers
  bool two_level = false, server_pairs = false;
};

CommForm::CommForm(const Cluster& cluster) : server_index(cluster.num_devices(), 0) {
  const int k = cluster.num_devices();
  std::map<int, std::vector<DeviceId>> by_server;
  for (DeviceId d = 0; d < k; ++d) by_server[cluster.device(d).server].push_back(d);
  for (auto& [srv, gpus] : by_server) {
    for (DeviceId d : gpus) server_index[d] = static_cast<int>(server_gpus.size());
    server_gpus.push_back(gpus);
  }
  const std::optional<PairViews> views = k > 1 ? uniform_pair_views(cluster) : std::nullopt;
  two_level = views && !(views->inside && views->across &&  // Ethernet must cost more
                         (views->across->first > views->inside->first || views->across->second < views->inside->second));
  for (DeviceId a = 0; a < k; ++a)
    for (DeviceId b = 0; b < k; ++b)
      if (a != b) {
        auto& pr = cluster.device(a).server == cluster.device(b).server ? intra_pair : inter_pair;
        if (pr[0] < 0) pr[0] = a, pr[1] = b;
      }
  // Server-pair mode: every GPU pair of servers (S, T) sees one view, all intra-server pairs another,
  // and crossing servers never costs less than staying inside.
  server_pairs = !two_level && k > 1 && num_servers() > 1;
  for (DeviceId a = 0; a < k && server_pairs; ++a)
    for (DeviceId b = 0; b < k && server_pairs; ++b) {
      if (a == b) continue;
      const int sa = server_index[a], sb = server_index[b];
      const DeviceId ra = sa == sb ? intra_pair[0] : server_gpus[sa][0];
      const DeviceId rb = sa == sb ? intra_pair[1] : server_gpus[sb][0];
      if (!cluster.reachable(a, b) || cluster.bandwidth(a, b) != cluster.bandwidth(ra, rb) ||
          cluster.latency(a, b) != cluster.latency(ra, rb))
        server_pairs = false;
      else if (sa != sb && intra_pair[0] >= 0 &&
               (cluster.bandwidth(a, b) > cluster.bandwidth(intra_pair[0], intra_pair[1]) ||
                cluster.latency(a, b) < cluster.latency(intra_pair[0], intra_pair[1])))
        server_pairs = false;
    }
}

struct Triplets {
  std::vector<int> rows, cols;
  std::vector<double> values, row_lo, row_hi;
  int add_row(double lo, double hi) {
    row_lo.push_back(lo);
    row_hi.push_back(hi);
    return static_cast<int>(row_lo.size()) - 1;
  }
  void set(int row, int col, double v) {
    rows.push_back(row);
    cols.push_back(col);
    values.push_back(v);
  }
};

// The integer program as CBC loads it: columns (x per unit and GPU, s per operator, C, then
// communication indicators and ordering binaries as the rows need them) and rows. Built in one
// pass, stage by stage in the order of the constructor, which fixes the column and row numbering.
class P2Model {
 public:
  // Building stops at `stop` (the call's deadline), leaving the model incomplete(): the ordering
  // rows grow with the square of the units (31M rows for a 100,000-operator graph on 2 GPUs, 10 s
  // to build), and a model that cannot be solved in time is not worth finishing.
  P2Model(const P2Problem& pb, const TimeWindows& windows, std::chrono::steady_clock::time_point stop)
      : pb_(pb), w_(windows), form_(pb.cluster), stop_(stop) {
    add_placement_and_time_columns();
    add_assignment_and_makespan_rows();
    add_edge_rows();
    add_ordering_rows();
    if (!incomplete_) add_memory_rows();
  }
  bool incomplete() const { return incomplete_; }

  // The full solution vector of the warm start.
  std::vector<double> warm_solution(const WarmStart& warm) const;
  // Loads columns, rows and integrality into the solver.
  void load(OsiClpSolverInterface& solver) const;
  // Whether `v` satisfies every bound, row and integrality of the model (to 1e-6 relative).
  bool satisfies(std::span<const double> v) const;
  // The column of x[unit of operator i, GPU d].
  int x(OpId i, DeviceId d) const { return x_col_[pb_.unit[i] * pb_.k + d]; }
  int s(OpId i) const { return s_col_[i]; }
  int c() const { return c_col_; }
  int num_cols() const { return static_cast<int>(col_lo_.size()); }
  int num_rows() const { return static_cast<int>(m_.row_lo.size()); }
  int num_ordering_pairs() const { return static_cast<int>(order_pairs_.size()); }

 private:
  struct CommEdge {
    int i, j;
    int y = -1, w = -1;    // two-level indicators
    std::vector<int> wst;  // server-pair mode: per (S, T), S != T, -1 on the diagonal
    std::vector<int> z;    // general: per (d, e), d != e, -1 on the diagonal
  };
  struct OrderPair {
    int a, b, o;  // a before b in topological order; o = 1: a runs first
  };

  int add_col(double lo, double hi, double cost, bool integer) {
    col_lo_.push_back(lo);
    col_hi_.push_back(hi);
    obj_.push_back(cost);
    if (integer) integer_cols_.push_back(static_cast<int>(col_lo_.size()) - 1);
    return static_cast<int>(col_lo_.size()) - 1;
  }
  void add_placement_and_time_columns();
  void add_assignment_and_makespan_rows();
  void add_edge_rows();
  CommEdge add_communication(int r, OpId i, OpId j, double bytes);
  void add_server_pair_indicators(CommEdge& ce, int r, double bytes, double c_intra);
  void add_inter_server_indicator(CommEdge& ce, int r, double bytes, double c_intra);
  void add_gpu_pair_indicators(CommEdge& ce, int r, double bytes);
  void add_ordering_rows();
  void add_memory_rows();

  const P2Problem& pb_;
  const TimeWindows& w_;
  const CommForm form_;
  const std::chrono::steady_clock::time_point stop_;
  bool incomplete_ = false;
  std::vector<double> col_lo_, col_hi_, obj_;
  std::vector<int> integer_cols_;
  Triplets m_;
  std::vector<int> x_col_, s_col_;
  int c_col_ = -1;
  std::vector<CommEdge> comm_edges_;
  std::vector<OrderPair> order_pairs_;
};

// x[u, d] binary per unit and GPU, s_i in [head_i, latest start], C in [0, horizon] (the
// objective); with symmetry breaking the first unit's x on GPU 0 is fixed to 1.
void P2Model::add_placement_and_time_columns() {
  const int k = pb_.k;
  x_col_.resize(static_cast<std::size_t>(pb_.num_units) * k);
  for (int u = 0; u < pb_.num_units; ++u)
    for (DeviceId d = 0; d < k; ++d) x_col_[u * k + d] = add_col(0, 1, 0, true);
  s_col_.resize(pb_.n);
  for (int i = 0; i < pb_.n; ++i) s_col_[i] = add_col(w_.head[i], w_.latest_start(i), 0, false);
  c_col_ = add_col(0, w_.horizon, 1, false);
  if (pb_.symmetric) col_lo_[x_col_[pb_.unit[pb_.topo[0]] * k + 0]] = 1;  // the first unit on GPU 0
}

// Each unit on one GPU; C >= s_i + rank_i; C >= the work placed on each GPU.
void P2Model::add_assignment_and_makespan_rows() {
  const int k = pb_.k;
  for (int u = 0; u < pb_.num_units; ++u) {
    const int r = m_.add_row(1, 1);
    for (DeviceId d = 0; d < k; ++d) m_.set(r, x_col_[u * k + d], 1);
  }
  for (int i = 0; i < pb_.n; ++i) {  // C >= s_i + rank_i (the compute-only path still ahead of i)
    const int r = m_.add_row(w_.rank[i], kInf);
    m_.set(r, c_col_, 1);
    m_.set(r, s_col_[i], -1);
  }
  // C >= the work placed on each GPU: the LP bound sees the load, not only the critical path.
  std::vector<double> unit_work(pb_.num_units, 0.0);
  for (int i = 0; i < pb_.n; ++i) unit_work[pb_.unit[i]] += pb_.p(i);
  for (DeviceId d = 0; d < k && k > 1; ++d) {
    const int r = m_.add_row(0, kInf);
    m_.set(r, c_col_, 1);
    for (int u = 0; u < pb_.num_units; ++u)
      if (unit_work[u] > 0) m_.set(r, x_col_[u * k + d], -unit_work[u]);
  }
}

// Per merged edge (i, j): f_i + comm <= s_j, the communication term only between units (and for a
// non-empty tensor on several GPUs).
void P2Model::add_edge_rows() {
  for (const auto& [ij, bytes] : pb_.edge_bytes) {
    const auto [i, j] = ij;
    const int r = m_.add_row(pb_.p(i), kInf);  // s_j - s_i - comm >= p_i
    m_.set(r, s_col_[j], 1);
    m_.set(r, s_col_[i], -1);
    if (bytes <= 0 || pb_.unit[i] == pb_.unit[j] || pb_.k == 1) continue;
    comm_edges_.push_back(add_communication(r, i, j, bytes));
  }
}

// The communication term of edge row r. In the two-level form an edge needs two continuous
// indicators: y >= x_id - x_jd (different GPUs) and w >= X_iS - X_jS (different servers, X_iS =
// sum of x_id over the server's GPUs), cost c_intra y + (c_inter - c_intra) w. Both costs are >= 0
// and y, w only appear on the left of f_i + cost <= s_j, so at an optimum they are the exact
// indicators. In the server-pair form, y as above and w_ijST >= X_iS + X_jT - 1 per ordered server
// pair, cost c_ST - c_intra. Otherwise one z_ijde >= x_id + x_je - 1 per ordered GPU pair.
P2Model::CommEdge P2Model::add_communication(int r, OpId i, OpId j, double bytes) {
  CommEdge ce;
  ce.i = i;
  ce.j = j;
  // Both server-level forms charge the intra-server cost whenever i and j are on different GPUs
  // (y = 1), then the extra cost of crossing servers on top.
  const double c_intra = (form_.server_pairs || form_.two_level) && form_.intra_pair[0] >= 0
                             ? pb_.transfer(form_.intra_pair[0], form_.intra_pair[1], bytes)
                             : 0.0;
  if (c_intra > 0) {
    ce.y = add_col(0, 1, 0, false);
    m_.set(r, ce.y, -c_intra);
    for (DeviceId d = 0; d < pb_.k; ++d) {  // y - x_id + x_jd >= 0
      const int ry = m_.add_row(0, kInf);
      m_.set(ry, ce.y, 1);
      m_.set(ry, x(i, d), -1);
      m_.set(ry, x(j, d), 1);
    }
  }
  if (form_.server_pairs) add_server_pair_indicators(ce, r, bytes, c_intra);
  else if (form_.two_level) add_inter_server_indicator(ce, r, bytes, c_intra);
  else add_gpu_pair_indicators(ce, r, bytes);
  return ce;
}

// Server-pair form: w_ijST >= X_iS + X_jT - 1, cost c_ST - c_intra, per ordered server pair that
// costs more than staying inside a server.
void P2Model::add_server_pair_indicators(CommEdge& ce, int r, double bytes, double c_intra) {
  const int num_servers = form_.num_servers();
  ce.wst.assign(static_cast<std::size_t>(num_servers) * num_servers, -1);
  for (int sa = 0; sa < num_servers; ++sa)
    for (int sb = 0; sb < num_servers; ++sb) {
      if (sa == sb) continue;
      const double extra = pb_.transfer(form_.server_gpus[sa][0], form_.server_gpus[sb][0], bytes) - c_intra;
      if (extra <= 0) continue;
      const int w = add_col(0, 1, 0, false);
      ce.wst[sa * num_servers + sb] = w;
      m_.set(r, w, -extra);
      const int rw = m_.add_row(-1, kInf);  // w - X_iS - X_jT >= -1
      m_.set(rw, w, 1);
      for (DeviceId d : form_.server_gpus[sa]) m_.set(rw, x(ce.i, d), -1);
      for (DeviceId d : form_.server_gpus[sb]) m_.set(rw, x(ce.j, d), -1);
    }
}

// Two-level form: w >= X_iS - X_jS for every server S, cost c_inter - c_intra.
void P2Model::add_inter_server_indicator(CommEdge& ce, int r, double bytes, double c_intra) {
  const double c_inter =
      form_.inter_pair[0] >= 0 ? pb_.transfer(form_.inter_pair[0], form_.inter_pair[1], bytes) : 0.0;
  if (form_.num_servers() <= 1 || c_inter - c_intra <= 0) return;
  ce.w = add_col(0, 1, 0, false);
  m_.set(r, ce.w, -(c_inter - c_intra));
  for (const auto& gpus : form_.server_gpus) {  // w - X_iS + X_jS >= 0
    const int rw = m_.add_row(0, kInf);
    m_.set(rw, ce.w, 1);
    for (DeviceId d : gpus) {
      m_.set(rw, x(ce.i, d), -1);
      m_.set(rw, x(ce.j, d), 1);
    }
  }
}

// General form: z_ijde >= x_id + x_je - 1 per ordered GPU pair, cost transfer_time(d, e).
void P2Model::add_gpu_pair_indicators(CommEdge& ce, int r, double bytes) {
  const int k = pb_.k;
  ce.z.assign(static_cast<std::size_t>(k) * k, -1);
  for (DeviceId d = 0; d < k; ++d)
    for (DeviceId e = 0; e < k; ++e) {
      if (d == e) continue;
      const int z = add_col(0, 1, 0, false);
      ce.z[d * k + e] = z;
      m_.set(r, z, -pb_.transfer(d, e, bytes));
      const int rz = m_.add_row(-1, kInf);  // z - x_id - x_je >= -1
      m_.set(rz, z, 1);
      m_.set(rz, x(ce.i, d), -1);
      m_.set(rz, x(ce.j, e), -1);
    }
}

// Parallelizable pairs of operators that compute and whose time windows overlap (if a must end
// before b can start whatever the placement, no ordering is needed): in one unit, topological
// order (ICC P2 (13)); else a binary o_ab and two big-M rows per GPU.
void P2Model::add_ordering_rows() {
  const Reachability reach(pb_.g);
  for (int pos_a = 0; pos_a < pb_.n; ++pos_a) {
    if (std::chrono::steady_clock::now() >= stop_) {
      incomplete_ = true;
      return;
    }
    const int a = pb_.topo[pos_a];
    if (pb_.p(a) <= 0) continue;
    for (int pos_b = pos_a + 1; pos_b < pb_.n; ++pos_b) {
      const int b = pb_.topo[pos_b];
      if (pb_.p(b) <= 0 || !reach.parallelizable(a, b)) continue;
      if (pb_.unit[a] == pb_.unit[b]) {  // one device: topological order (ICC P2 (13))
        const int r = m_.add_row(pb_.p(a), kInf);
        m_.set(r, s_col_[b], 1);
        m_.set(r, s_col_[a], -1);
        continue;
      }
      // M_ab bounds f_a - s_b (and M_ba f_b - s_a) over the windows.
      const double m_ab = w_.latest_start(a) + pb_.p(a) - w_.head[b], m_ba = w_.latest_start(b) + pb_.p(b) - w_.head[a];
      if (m_ab <= 0 || m_ba <= 0) continue;  // one order is forced by the windows
      const int o = add_col(0, 1, 0, true);
      order_pairs_.push_back({a, b, o});
      for (DeviceId d = 0; d < pb_.k; ++d) {
        // a first: f_a <= s_b + M_ab (1 - o) + M_ab (2 - x_ad - x_bd), i.e.
        // s_b - s_a - M o - M x_ad - M x_bd >= p_a - 3M
        const int r1 = m_.add_row(pb_.p(a) - 3 * m_ab, kInf);
        m_.set(r1, s_col_[b], 1);
        m_.set(r1, s_col_[a], -1);
        m_.set(r1, o, -m_ab);
        m_.set(r1, x(a, d), -m_ab);
        m_.set(r1, x(b, d), -m_ab);
        // b first: f_b <= s_a + M_ba o + M_ba (2 - x_ad - x_bd), i.e.
        // s_a - s_b + M o - M x_ad - M x_bd >= p_b - 2M
        const int r2 = m_.add_row(pb_.p(b) - 2 * m_ba, kInf);
        m_.set(r2, s_col_[a], 1);
        m_.set(r2, s_col_[b], -1);
        m_.set(r2, o, m_ba);
        m_.set(r2, x(a, d), -m_ba);
        m_.set(r2, x(b, d), -m_ba);
      }
    }
  }
}

// Memory: the memory of the units placed on a GPU fits in it.
void P2Model::add_memory_rows() {
  std::vector<double> unit_memory(pb_.num_units, 0.0);
  for (int i = 0; i < pb_.n; ++i) unit_memory[pb_.unit[i]] += pb_.g.op(i).memory_bytes;
  for (DeviceId d = 0; d < pb_.k; ++d) {
    const int r = m_.add_row(-kInf, pb_.cluster.device(d).memory_bytes);
    for (int u = 0; u < pb_.num_units; ++u)
      if (unit_memory[u] > 0) m_.set(r, x_col_[u * pb_.k + d], unit_memory[u]);
  }
}

std::vector<double> P2Model::warm_solution(const WarmStart& warm) const {
  std::vector<double> v(num_cols(), 0.0);
  for (int i = 0; i < pb_.n; ++i) {
    v[x(i, warm.placement[i])] = 1;
    v[s_col_[i]] = warm.start[i];
  }
  v[c_col_] = warm.makespan;
  const int num_servers = form_.num_servers();
  for (const CommEdge& ce : comm_edges_) {
    const DeviceId d = warm.placement[ce.i], e = warm.placement[ce.j];
    if (d == e) continue;
    if (ce.y >= 0) v[ce.y] = 1;
    if (ce.w >= 0 && pb_.cluster.device(d).server != pb_.cluster.device(e).server) v[ce.w] = 1;
    if (!ce.z.empty()) v[ce.z[d * pb_.k + e]] = 1;
    if (!ce.wst.empty() && form_.server_index[d] != form_.server_index[e])
      if (const int w = ce.wst[form_.server_index[d] * num_servers + form_.server_index[e]]; w >= 0) v[w] = 1;
  }
  // o = 1: a first. On different GPUs either value is feasible (the big-M terms are slack).
  for (const OrderPair& op : order_pairs_) v[op.o] = warm.pos[op.a] < warm.pos[op.b] ? 1 : 0;
  return v;
}

void P2Model::load(OsiClpSolverInterface& solver) const {
  CoinPackedMatrix matrix(false, m_.rows.data(), m_.cols.data(), m_.values.data(),
                          static_cast<CoinBigIndex>(m_.values.size()));
  matrix.setDimensions(num_rows(), num_cols());
  solver.loadProblem(matrix, col_lo_.data(), col_hi_.data(), obj_.data(), m_.row_lo.data(), m_.row_hi.data());
  for (int c : integer_cols_) solver.setInteger(c);
}

bool P2Model::satisfies(std::span<const double> v) const {
  if (v.size() != col_lo_.size()) return false;
  auto tol = [](double bound) { return 1e-6 * std::max(1.0, std::fabs(bound)); };
  for (std::size_t c = 0; c < v.size(); ++c)
    if (v[c] < col_lo_[c] - tol(col_lo_[c]) || v[c] > col_hi_[c] + tol(col_hi_[c])) return false;
  for (const int c : integer_cols_)
    if (std::fabs(v[c] - std::round(v[c])) > 1e-9) return false;
  std::vector<double> activity(m_.row_lo.size(), 0.0);
  for (std::size_t k = 0; k < m_.values.size(); ++k) activity[m_.rows[k]] += m_.values[k] * v[m_.cols[k]];
  for (std::size_t r = 0; r < activity.size(); ++r)
    if (activity[r] < m_.row_lo[r] - tol(m_.row_lo[r]) || activity[r] > m_.row_hi[r] + tol(m_.row_hi[r])) return false;
  return true;
}

// Writes the loaded model to `path` (".mps": MPS, else LP). Throws std::runtime_error if it cannot.
void write_model(OsiClpSolverInterface& solver, const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  const std::string base = dot == std::string::npos ? path : path.substr(0, dot);
  if (ext == "mps") solver.writeMps(base.c_str(), "mps");
  else solver.writeLp(base.c_str(), ext.empty() ? "lp" : ext.c_str());
  if (FILE* f = std::fopen(path.c_str(), "r")) std::fclose(f);
  else throw std::runtime_error(fmt::format("quickp: could not write the model to {}", path));
}

// CBC's usual cut generators and primal heuristics (what its command-line solver adds), for
// P2Options::cuts_and_heuristics. Off by default: they have not been shown to help on this big-M
// model yet. They must outlive the solve.
struct CutsAndHeuristics {
  explicit CutsAndHeuristics(CbcModel& model) : rounding(model), local(model), pump(model), rins(model) {
    probing.setUsingObjective(true);
    probing.setMaxPass(1);
    probing.setMaxPassRoot(5);
    probing.setMaxProbe(10);
    probing.setMaxProbeRoot(50);
    probing.setMaxLook(10);
    probing.setMaxLookRoot(50);
    probing.setRowCuts(3);
    gomory.setLimit(300);
  }
  void add_to(CbcModel& model) {
    model.addCutGenerator(&probing, -1, "Probing");
    model.addCutGenerator(&gomory, -1, "Gomory");
    model.addCutGenerator(&knapsack, -1, "Knapsack");
    model.addCutGenerator(&mir, -1, "MIR2");
    model.addCutGenerator(&flow, -1, "FlowCover");
    model.addCutGenerator(&clique, -1, "Clique");
    model.addHeuristic(&rounding);
    model.addHeuristic(&local);
    model.addHeuristic(&pump);
    model.addHeuristic(&rins);
  }

  CglProbing probing;
  CglGomory gomory;
  CglKnapsackCover knapsack;
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  CglClique clique;
  CbcRounding rounding;
  CbcHeuristicLocal local;
  CbcHeuristicFPump pump;
  CbcHeuristicRINS rins;
};

// What CBC answered.
struct CbcAnswer {
  bool warm_started = false;  // it accepted the warm start as its first incumbent
  // The rest only after branch and bound.
  std::vector<double> best;  // its incumbent; empty if it has none
  double objective = 0, best_possible = 0;  // getObjValue, getBestPossibleObjValue
  bool proven_optimal = false, seconds_limit = false, node_limit = false;
  int nodes = 0;
};

// CLP presolves P2's LPs only up to this many rows, and only up to kPresolveRowsPerSecond times
// the seconds left (solve_with_cbc).
constexpr int kPresolveRowLimit = 1'000'000;
constexpr double kPresolveRowsPerSecond = 100'000;

// Loads the model into CLP (dual simplex), writes it if asked, gives CBC the warm start (`warm`
// may be empty) and, if `branch_and_bound`, solves until `stop` (the call's deadline: loading a
// 2.8M-row model takes half a second, which counts).
CbcAnswer solve_with_cbc(const P2Model& p2, const P2Options& options, const std::vector<double>& warm,
                         double warm_makespan, bool branch_and_bound, std::chrono::steady_clock::time_point stop) {
  // Without branch and bound the warm start is the answer. CBC would check it first with a solve
  // of the whole LP, whose presolve no time limit stops (GNMT on 16 GPUs: 340 s of a 5 s limit).
  CbcAnswer answer;
  if (!branch_and_bound) answer.warm_started = !warm.empty();
  if (!branch_and_bound && options.write_model.empty()) return answer;
  OsiClpSolverInterface solver;
  const auto load_start = std::chrono::steady_clock::now();
  p2.load(solver);
  const auto load_end = std::chrono::steady_clock::now();
  solver.messageHandler()->setLogLevel(0);
  // What follows a stop scales with the model as loading it does: the simplex iteration under
  // way (one refactorisation of a 2.8M-row basis), then freeing the copies. GNMT in TensorFlow
  // style on 2 GPUs ended 2 s past its deadline with two runs sharing the machine, its load
  // taking about 1 s there. So the LPs stop early by the load's time, at most a quarter of what is left.
  {
    const double load_seconds = std::chrono::duration<double>(load_end - load_start).count();
    const double until_stop = std::chrono::duration<double>(stop - load_end).count();
    stop -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(std::clamp(std::min(load_seconds, 0.25 * until_stop), 0.0, 1e9)));
  }
  {
    const double left = std::max(1e-3, std::chrono::duration<double>(stop - std::chrono::steady_clock::now()).count());
    // The dual simplex: CLP's automatic choice takes the primal on this model, which is ten times
    // slower on the big-M rows (AlexNet, 2 GPUs: 20 s against 1.6 s for the root LP).
    ClpSolve dual;
    dual.setSolveType(ClpSolve::useDual);
    // CLP's presolve sends no events, so the wall-clock stop below cannot interrupt it: on GNMT
    // (TensorFlow style, 2 GPUs, 2.8M rows) it alone ran 60 s of a 4 s budget; without it the
    // root LP stopped at 4.2 s, with the same answer. It takes about 7 s for Inception-v3's 0.9M
    // rows (2 GPUs), so it is kept only where it cannot take most of the time left: that model
    // ran 7.5 s of a 5 s limit with it. Every paper reproduction's P2 has under 0.9M rows and
    // enough time for it.
    if (p2.num_rows() > std::min<double>(kPresolveRowLimit, kPresolveRowsPerSecond * left))
      dual.setPresolveType(ClpSolve::presolveOff);
    solver.setSolveOptions(dual);
    // CBC checks its time limit between nodes; this makes the LPs themselves stop in time too (the
    // root LP of AlexNet on 6 GPUs alone takes minutes).
    solver.getModelPtr()->setMaximumSeconds(left);
    // CLP's own limit counts CPU seconds; on a loaded machine wall time runs ahead of it.
    solver.getModelPtr()->setMaximumWallSeconds(left);
    // And the deadline itself, for every LP of the call (CBC's copy of the solver clones it).
    const StopClpAt stop_at(stop);
    solver.getModelPtr()->passInEventHandler(&stop_at);
  }
  if (!options.write_model.empty()) write_model(solver, options.write_model);
  if (!branch_and_bound) return answer;  // the model was only written (write_model)
  // Checked here, in one pass over the matrix: CBC's own check (setBestSolution's last argument)
  // re-solves the LP with the integers fixed, 21 s of a 10 s budget on BERT-base over 16 GPUs.
  const bool warm_valid = !warm.empty() && p2.satisfies(warm);
  // The root LP first, under the deadline: when it does not finish, CBC would go on re-solving it
  // (about a second per attempt on a 2M-row model) long past the deadline; the answer is then the
  // warm start (solve_p2), and branch and bound is not started. When it finishes, CBC starts from
  // its basis.
  const auto root_start = std::chrono::steady_clock::now();
  solver.initialSolve();
  const auto root_end = std::chrono::steady_clock::now();
  if (!solver.isProvenOptimal()) {
    answer.seconds_limit = !solver.isProvenPrimalInfeasible();
    answer.warm_started = warm_valid;
    return answer;
  }

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setUseElapsedTime(true);
  // CBC stops between nodes, then finishes its search with LP solves of its incumbent: on ResNet-50
  // (fused, 8 GPUs, 166k rows, a 1.7 s root LP) that took 0.6 s past its limit. It stops early by
  // half a root LP's time (at most a quarter of what is left) to finish by the deadline.
  const double bb_left = std::chrono::duration<double>(stop - root_end).count();
  const double reserve = std::min(0.25 * bb_left, 0.5 * std::chrono::duration<double>(root_end - root_start).count());
  model.setMaximumSeconds(std::max(1e-3, bb_left - reserve));
  if (options.max_nodes > 0) model.setMaximumNodes(options.max_nodes);
  model.setAllowableFractionGap(options.mip_gap);
  model.setAllowableGap(1e-12);
  CutsAndHeuristics extras(model);
  if (options.cuts_and_heuristics) extras.add_to(model);
  if (warm_valid) {
    model.setBestSolution(warm.data(), p2.num_cols(), warm_makespan, false);
    answer.warm_started = model.bestSolution() != nullptr;
  }
  // No strong branching: its trial LPs cost 4x the solve time within the default 20 nodes (quickp
  // small.json, 4 GPUs: 1.9 s against 0.5 s) and found nothing better on the profiled graphs.
  model.setNumberStrong(0);
  model.branchAndBound();
  answer.nodes = model.getNodeCount();
  if (const double* best = model.bestSolution()) answer.best.assign(best, best + p2.num_cols());
  answer.objective = model.getObjValue();
  answer.best_possible = model.getBestPossibleObjValue();
  answer.proven_optimal = model.isProvenOptimal();
  answer.seconds_limit = model.isSecondsLimitReached();
  answer.node_limit = model.isNodeLimitReached();
  return answer;
}

// P2's answer in seconds: the solution vector `best` (CBC's incumbent, or the warm start's when
// the trivial bound proved it and CBC did not run); without one (infeasible) the warm start's
// placement (GPU 0 without one) in topological order. Then each GPU's operators by start time.
P2Solution read_solution(const P2Problem& pb, const P2Model& p2, const TimeWindows& w, const WarmStart& warm,
                         const double* best, const CbcAnswer& cbc, bool proven_by_bound) {
  const int n = pb.n;
  P2Solution sol;
  sol.placement.assign(n, 0);
  sol.start.assign(n, 0.0);
  if (best == nullptr) {
    sol.status = P2Status::Infeasible;
    sol.placement = warm.placement;
    const Schedule replay = pb.replay(warm.placement, pb.topo);
    for (int i = 0; i < n; ++i) sol.start[i] = replay.start[i] * kTimeUnit;
    sol.objective = replay.latency * kTimeUnit;
    sol.best_bound = cbc.best_possible * kTimeUnit;
  } else {
    for (int i = 0; i < n; ++i) {
      for (DeviceId d = 0; d < pb.k; ++d)
        if (best[p2.x(i, d)] > 0.5) sol.placement[i] = d;
      sol.start[i] = best[p2.s(i)] * kTimeUnit;
    }
    if (proven_by_bound) {
      sol.objective = warm.makespan * kTimeUnit;
      sol.best_bound = std::min(w.trivial_bound * kTimeUnit, sol.objective);
      sol.status = P2Status::Optimal;
    } else {
      // C of the incumbent: when the time limit stops the root LP, CBC reports no objective
      // (1e50) although its incumbent is the warm start, and no bound beyond the trivial one.
      sol.objective = best[p2.c()] * kTimeUnit;
      const bool root_done = cbc.objective < 1e40 && std::isfinite(cbc.best_possible);
      sol.best_bound = std::min(
          std::max(root_done ? cbc.best_possible : w.trivial_bound, w.trivial_bound) * kTimeUnit, sol.objective);
      sol.status = cbc.proven_optimal && !cbc.seconds_limit && !cbc.node_limit ? P2Status::Optimal
                   : cbc.node_limit                                             ? P2Status::NodeLimit
                                                                                : P2Status::TimeLimit;
    }
  }
  sol.gap = sol.objective > 0 ? std::max(0.0, (sol.objective - sol.best_bound) / sol.objective) : 0.0;
  sol.device_order.assign(pb.k, {});
  for (OpId i : pb.topo) sol.device_order[sol.placement[i]].push_back(i);
  for (auto& order : sol.device_order)
    std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) { return sol.start[a] < sol.start[b]; });
  return sol;
}

}  // namespace

std::string_view p2_status_name(P2Status s) { return enum_name(std::span<const EnumName<P2Status>>(kP2StatusNames), s); }

QuickPStatus quickp_status(P2Status p2, double latency, double whole_bound, bool p2_exact, double p2_bound,
                           double mip_gap) {
  const double bound = std::max(whole_bound, p2_exact ? p2_bound : 0.0);
  // A relative 1e-6 of slack: the model's times are rounded to CBC's tolerances.
  if (latency - bound <= (mip_gap + 1e-6) * latency) return QuickPStatus::Optimal;
  switch (p2) {
    case P2Status::Optimal: return QuickPStatus::ReducedOptimal;
    case P2Status::TimeLimit: return QuickPStatus::TimeLimit;
    case P2Status::NodeLimit: return QuickPStatus::NodeLimit;
    case P2Status::Infeasible: break;
  }
  return QuickPStatus::Infeasible;
}

P2Solution solve_p2(const Graph& g, const Cluster& cluster, const Colocation& colocation, const P2Options& options) {
  // options.time_limit_s covers the whole call: the warm start's descent stops at it, and CBC gets
  // what the warm start and the model left (none: the warm start is the answer, status time_limit).
  const auto t0 = std::chrono::steady_clock::now();
  auto since_t0 = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const auto stop = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             std::chrono::duration<double>(std::min(options.time_limit_s, 1e9)));
  const P2Problem pb(g, cluster, colocation, options.break_symmetry);
  const WarmStart warm = find_warm_start(pb, options.warm_start, stop);
  const double warm_start_seconds = since_t0();
  const TimeWindows windows = time_windows(pb, warm);
  // The trivial bound is all the LP relaxation proves when the big-M rows are slack, so when the
  // incumbent is already within the gap of it, branch and bound cannot do better and is skipped.
  const bool proven_by_bound = warm.found && warm.makespan - windows.trivial_bound <= options.mip_gap * warm.makespan;
  // A model asked for in a file (write_model) is built whole; one that will not be solved (proven
  // by the bound) only as far as its placement and time columns, to read the warm start back.
  const P2Model p2(pb, windows,
                   !options.write_model.empty() ? std::chrono::steady_clock::time_point::max()
                   : proven_by_bound            ? std::chrono::steady_clock::time_point::min()
                                                : stop);
  const std::vector<double> warm_vector = warm.found ? p2.warm_solution(warm) : std::vector<double>{};
  const double model_seconds = since_t0() - warm_start_seconds;
  const bool out_of_time =
      !proven_by_bound && warm.found && (options.time_limit_s - since_t0() <= 0 || p2.incomplete());
  CbcAnswer cbc = solve_with_cbc(p2, options, warm_vector, warm.makespan,
                                 !proven_by_bound && !out_of_time && !p2.incomplete(), stop);
  if (out_of_time) {  // no time for branch and bound: the warm start, as if CBC stopped at once
    cbc.best = warm_vector;
    cbc.objective = 1e50;
    cbc.seconds_limit = true;
  }

  // A warm start is a solution of P2: when CBC ends without an incumbent (stopped inside the root
  // LP, which it may read as infeasible), the warm start is the answer and P2 is not infeasible.
  if (cbc.best.empty() && !warm_vector.empty() && !proven_by_bound) {
    cbc.best = warm_vector;
    cbc.objective = 1e50;
    cbc.seconds_limit = true;
    cbc.proven_optimal = false;
  }
  const double* best = proven_by_bound ? warm_vector.data() : cbc.best.empty() ? nullptr : cbc.best.data();
  P2Solution sol = read_solution(pb, p2, windows, warm, best, cbc, proven_by_bound);
  if (p2.incomplete() && !warm.found) sol.status = P2Status::TimeLimit;  // not infeasible: unsolved
  sol.columns = p2.num_cols();
  sol.rows = p2.num_rows();
  sol.model_incomplete = p2.incomplete() && !proven_by_bound;
  sol.ordering_pairs = p2.num_ordering_pairs();
  sol.units = pb.num_units;
  sol.nodes = proven_by_bound ? 0 : cbc.nodes;
  sol.warm_started = cbc.warm_started;
  if (!warm_vector.empty()) sol.warm_start_objective = warm.makespan * kTimeUnit;
  sol.warm_start_seconds = warm_start_seconds;
  sol.model_seconds = model_seconds;
  sol.seconds = since_t0();
  return sol;
}

}  // namespace placesim
