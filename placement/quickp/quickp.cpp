// QuickP: the integer program P2 (COIN-OR CBC) and the strategy.

#include "placement/quickp/quickp.h"

#include "placement/quickp/bandwidth.h"
#include "placement/union_find.h"

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
#include <ClpSolve.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "placement/heft/heft.h"
#include "sim/errors.h"
#include "sim/evaluator.h"

namespace placesim {

namespace {

// Every GPU can be mapped to GPU 0 by a symmetry of the cluster: GPUs alike, servers of equal size,
// and the alpha-beta view of a pair depends only on whether it stays inside a server.
bool gpus_interchangeable(const Cluster& c) {
  const int k = c.num_devices();
  std::map<int, int> per_server;
  for (const Device& d : c.devices()) ++per_server[d.server];
  for (const auto& [s, count] : per_server)
    if (count != per_server.begin()->second) return false;
  for (const Device& d : c.devices())
    if (d.memory_bytes != c.device(0).memory_bytes || d.compute_speed != c.device(0).compute_speed) return false;
  std::optional<std::pair<double, double>> inside, across;
  for (DeviceId a = 0; a < k; ++a)
    for (DeviceId b = 0; b < k; ++b) {
      if (a == b) continue;
      auto& ref = c.device(a).server == c.device(b).server ? inside : across;
      const std::pair<double, double> view{c.bandwidth(a, b), c.latency(a, b)};
      if (!ref) ref = view;
      else if (*ref != view) return false;
    }
  return true;
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

}  // namespace

std::string_view p2_status_name(P2Status s) {
  switch (s) {
    case P2Status::Optimal: return "optimal";
    case P2Status::TimeLimit: return "time_limit";
    case P2Status::NodeLimit: return "node_limit";
    case P2Status::Infeasible: return "infeasible";
  }
  return "?";
}

P2Solution solve_p2(const Graph& g, const Cluster& cluster, const Colocation& colocation, const P2Options& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const int n = static_cast<int>(g.num_operators());
  const int k = cluster.num_devices();
  constexpr double kInf = std::numeric_limits<double>::infinity();

  // Placement units: co-location groups joined with colocation classes.
  UnionFind uf(n);
  {
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
  }
  std::vector<int> unit(n), unit_of_root(n, -1);
  int num_units = 0;
  const auto topo = g.topological_order();
  for (OpId i : topo) {  // units numbered in topological order of their first member
    const int r = uf.find(i);
    if (unit_of_root[r] < 0) unit_of_root[r] = num_units++;
    unit[i] = unit_of_root[r];
  }

  // Edges aggregated per ordered pair (parallel tensors: summed bytes).
  std::map<std::pair<int, int>, double> edge_bytes;
  for (const Tensor& t : g.tensors()) edge_bytes[{t.src, t.dst}] += t.bytes;
  std::vector<std::vector<std::pair<int, double>>> preds(n);
  for (const auto& [ij, bytes] : edge_bytes) preds[ij.second].emplace_back(ij.first, bytes);
  // The model counts time in microseconds: in seconds a makespan (~1e-4) sits below CBC's absolute
  // tolerances (its cutoff increment is 1e-5), which would let it prune everything.
  constexpr double kTimeUnit = 1e-6;
  auto p = [&](OpId i) { return g.op(i).compute_s / kTimeUnit; };
  auto transfer = [&](DeviceId d, DeviceId e, double bytes) { return cluster.transfer_time(d, e, bytes) / kTimeUnit; };
  const bool symmetric = options.break_symmetry && k > 1 && n > 0 && gpus_interchangeable(cluster);

  // The schedule (model unit) of a placement whose GPUs run their operators in the order of
  // `sequence` (a topological order of g): the evaluator's replay with P2's durations, the ones the
  // model's rows hold a solution to -- p_i, and per tensor the transfer of its merged edge (none
  // inside a unit).
  std::vector<double> compute(n), merged_bytes(g.num_tensors());
  for (int i = 0; i < n; ++i) compute[i] = p(i);
  for (EdgeId e = 0; e < static_cast<EdgeId>(merged_bytes.size()); ++e)
    merged_bytes[e] = edge_bytes.at({g.tensor(e).src, g.tensor(e).dst});
  auto schedule_of = [&](const std::vector<DeviceId>& placement, std::span<const OpId> sequence) {
    std::vector<std::vector<OpId>> order(k);
    for (OpId i : sequence) order[placement[i]].push_back(i);
    std::vector<double> arrival(merged_bytes.size());
    for (EdgeId e = 0; e < static_cast<EdgeId>(arrival.size()); ++e) {
      const Tensor& t = g.tensor(e);
      arrival[e] = unit[t.src] == unit[t.dst] ? 0.0 : transfer(placement[t.src], placement[t.dst], merged_bytes[e]);
    }
    return replay_order_with_costs(g, k, placement, order, compute, arrival);
  };
  // The evaluator's order for a placement, with each unit's operators put back in topological
  // order within the unit's slots (P2 fixes that order); empty if that breaks a dependency.
  auto evaluator_sequence = [&](const std::vector<DeviceId>& placement) {
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
      if (pos[t.src] >= pos[t.dst]) return std::vector<OpId>{};
    return out;
  };
  auto unit_consistent = [&](std::vector<DeviceId> placement) {
    std::vector<DeviceId> device_of_unit(num_units, -1);
    for (OpId i : topo)
      if (device_of_unit[unit[i]] < 0) device_of_unit[unit[i]] = placement[i];
    for (int i = 0; i < n; ++i) placement[i] = device_of_unit[unit[i]];
    return placement;
  };
  auto fits = [&](const std::vector<DeviceId>& placement) {
    const auto mem = device_memory(g, placement, k);
    for (DeviceId d = 0; d < k; ++d)
      if (mem[d] > cluster.device(d).memory_bytes) return false;
    return true;
  };

  // The warm start, found before the model is built: its makespan bounds every time variable and
  // gives the big-M constants (a solution worse than the incumbent is of no interest).
  bool have_warm = false;
  double warm_makespan = kInf;
  std::vector<DeviceId> fallback(n, 0);
  std::vector<double> warm_start_times;
  std::vector<int> warm_pos(n);
  auto consider = [&](const std::vector<DeviceId>& placement, std::span<const OpId> sequence) {
    Schedule sched = schedule_of(placement, sequence);
    if (sched.latency < warm_makespan) {
      warm_makespan = sched.latency;
      warm_start_times = std::move(sched.start);
      fallback = placement;
      for (int q = 0; q < n; ++q) warm_pos[sequence[q]] = q;
      have_warm = true;
      return true;
    }
    return false;
  };
  if (options.warm_start && n > 0) {
    std::vector<std::vector<DeviceId>> candidates;
    candidates.emplace_back(n, 0);
    if (k > 1) {
      // HEFT with the units as colocation classes, so that it plans with them.
      Graph with_units;
      for (int i = 0; i < n; ++i) {
        Operator op = g.op(i);
        op.colocation_class = unit[i];
        with_units.add_operator(std::move(op));
      }
      for (const Tensor& t : g.tensors()) with_units.add_tensor(t.src, t.dst, t.bytes);
      with_units.finalize("quickp units");
      candidates.push_back(unit_consistent(heft_schedule(with_units, cluster, HeftConfig{}).placement));
    }
    for (auto& cand : candidates) {
      if (symmetric && cand[topo[0]] != 0) {
        // Relabel GPUs by a symmetry of the cluster so that the first unit is on GPU 0: swap its
        // server with GPU 0's server (GPUs by rank inside a server), then two GPUs of that server.
        std::map<int, std::vector<DeviceId>> by_server;
        for (DeviceId d = 0; d < k; ++d) by_server[cluster.device(d).server].push_back(d);
        auto rank_in = [&](DeviceId d) {
          const auto& v = by_server[cluster.device(d).server];
          return static_cast<std::size_t>(std::find(v.begin(), v.end(), d) - v.begin());
        };
        const DeviceId first = cand[topo[0]];
        const int sa = cluster.device(first).server, sb = cluster.device(0).server;
        std::vector<DeviceId> perm(k);
        for (DeviceId d = 0; d < k; ++d) {
          const int sd = cluster.device(d).server;
          perm[d] = sd == sa ? by_server[sb][rank_in(d)] : sd == sb ? by_server[sa][rank_in(d)] : d;
        }
        const DeviceId moved = perm[first];
        for (DeviceId& q : perm) q = q == moved ? 0 : q == 0 ? moved : q;
        for (DeviceId& d : cand) d = perm[d];
      }
      if (!fits(cand)) continue;
      consider(cand, topo);
      if (auto seq = evaluator_sequence(cand); !seq.empty()) consider(cand, seq);
    }
    // Then a deterministic descent: move one unit to another GPU while that lowers the makespan of
    // the topological-order schedule (one pass over the graph per try; a few passes at most).
    if (have_warm && k > 1) {
      std::vector<std::vector<OpId>> members(num_units);
      for (OpId i : topo) members[unit[i]].push_back(i);
      std::vector<DeviceId> current = fallback;
      double current_mk = schedule_of(current, topo).latency;
      for (int pass = 0; pass < 10; ++pass) {
        bool improved = false;
        for (int u = 0; u < num_units; ++u) {
          if (symmetric && u == unit[topo[0]]) continue;  // pinned to GPU 0
          for (DeviceId d = 0; d < k; ++d) {
            const DeviceId was = current[members[u][0]];
            if (d == was) continue;
            for (OpId i : members[u]) current[i] = d;
            const double mk = schedule_of(current, topo).latency;
            if (mk < current_mk * (1 - 1e-12) && fits(current)) {
              current_mk = mk;
              improved = true;
              if (mk < warm_makespan) consider(current, topo);
            } else {
              for (OpId i : members[u]) current[i] = was;
            }
          }
        }
        if (!improved) break;
      }
    }
  }

  // Time windows. head_i: the longest compute-only path into i (s_i >= head_i whatever the
  // placement); rank_i: the longest compute-only path from i, p_i included (C >= s_i + rank_i).
  // With an incumbent of makespan H every solution worth finding has s_i <= H - rank_i.
  std::vector<double> head(n, 0.0), rank(n, 0.0);
  for (OpId i : topo)
    for (const auto& [q, bytes] : preds[i]) head[i] = std::max(head[i], head[q] + p(q));
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    rank[*it] += p(*it);
    for (const auto& [q, bytes] : preds[*it]) rank[q] = std::max(rank[q], rank[*it]);
  }
  double horizon = g.total_compute() / kTimeUnit;  // no incumbent: every operator, every transfer
  for (const auto& [ij, bytes] : edge_bytes) {
    double worst = 0;
    for (DeviceId d = 0; d < k; ++d)
      for (DeviceId e = 0; e < k; ++e) worst = std::max(worst, transfer(d, e, bytes));
    horizon += worst;
  }
  // A hair above the incumbent so that it stays feasible through rounding.
  if (have_warm) horizon = std::min(horizon, warm_makespan * (1 + 1e-7) + 1e-9);
  horizon = std::max(horizon, 1e-3);
  auto latest_start = [&](OpId i) { return std::max(head[i], horizon - rank[i]); };

  // Columns.
  std::vector<double> col_lo, col_hi, obj;
  std::vector<int> integer_cols;
  auto add_col = [&](double lo, double hi, double cost, bool integer) {
    col_lo.push_back(lo);
    col_hi.push_back(hi);
    obj.push_back(cost);
    if (integer) integer_cols.push_back(static_cast<int>(col_lo.size()) - 1);
    return static_cast<int>(col_lo.size()) - 1;
  };
  std::vector<int> x_col(static_cast<std::size_t>(num_units) * k);
  for (int u = 0; u < num_units; ++u)
    for (DeviceId d = 0; d < k; ++d) x_col[u * k + d] = add_col(0, 1, 0, true);
  auto x = [&](int op, DeviceId d) { return x_col[unit[op] * k + d]; };
  std::vector<int> s_col(n);
  for (int i = 0; i < n; ++i) s_col[i] = add_col(head[i], latest_start(i), 0, false);
  const int c_col = add_col(0, horizon, 1, false);
  if (symmetric) col_lo[x_col[unit[topo[0]] * k + 0]] = 1;  // the first unit on GPU 0

  Triplets m;
  for (int u = 0; u < num_units; ++u) {
    const int r = m.add_row(1, 1);
    for (DeviceId d = 0; d < k; ++d) m.set(r, x_col[u * k + d], 1);
  }
  for (int i = 0; i < n; ++i) {  // C >= s_i + rank_i (the compute-only path still ahead of i)
    const int r = m.add_row(rank[i], kInf);
    m.set(r, c_col, 1);
    m.set(r, s_col[i], -1);
  }
  {  // C >= the work placed on each GPU: the LP bound sees the load, not only the critical path.
    std::vector<double> unit_work(num_units, 0.0);
    for (int i = 0; i < n; ++i) unit_work[unit[i]] += p(i);
    for (DeviceId d = 0; d < k && k > 1; ++d) {
      const int r = m.add_row(0, kInf);
      m.set(r, c_col, 1);
      for (int u = 0; u < num_units; ++u)
        if (unit_work[u] > 0) m.set(r, x_col[u * k + d], -unit_work[u]);
    }
  }
  // Communication. When a pair's transfer time depends only on whether the two GPUs share a server
  // (every cluster of identical servers with one intra- and one inter-server view), an edge needs
  // two continuous indicators: y >= x_id - x_jd (different GPUs) and w >= X_iS - X_jS (different
  // servers, X_iS = sum of x_id over the server's GPUs), cost c_intra y + (c_inter - c_intra) w.
  // Both costs are >= 0 and y, w only appear on the left of f_i + cost <= s_j, so at an optimum
  // they are the exact indicators. When the time depends on the two servers (a multi-NIC cluster
  // with its own allocation per server pair), w_ijST >= X_iS + X_jT - 1 per ordered server pair,
  // cost c_ST - c_intra. Otherwise one z_ijde >= x_id + x_je - 1 per ordered GPU pair.
  std::vector<std::vector<DeviceId>> server_gpus;
  std::vector<int> server_index(k, 0);
  bool two_level = k > 1;
  {
    std::map<int, std::vector<DeviceId>> by_server;
    for (DeviceId d = 0; d < k; ++d) by_server[cluster.device(d).server].push_back(d);
    for (auto& [srv, gpus] : by_server) {
      for (DeviceId d : gpus) server_index[d] = static_cast<int>(server_gpus.size());
      server_gpus.push_back(gpus);
    }
    std::optional<std::pair<double, double>> inside, across;
    for (DeviceId a = 0; a < k && two_level; ++a)
      for (DeviceId b = 0; b < k && two_level; ++b) {
        if (a == b) continue;
        auto& ref = cluster.device(a).server == cluster.device(b).server ? inside : across;
        const std::pair<double, double> view{cluster.bandwidth(a, b), cluster.latency(a, b)};
        if (!ref) ref = view;
        else if (*ref != view) two_level = false;
      }
    if (two_level && inside && across &&
        (across->first > inside->first || across->second < inside->second))  // Ethernet must cost more
      two_level = false;
  }
  int intra_pair[2] = {-1, -1}, inter_pair[2] = {-1, -1};
  for (DeviceId a = 0; a < k; ++a)
    for (DeviceId b = 0; b < k; ++b)
      if (a != b) {
        auto& pr = cluster.device(a).server == cluster.device(b).server ? intra_pair : inter_pair;
        if (pr[0] < 0) pr[0] = a, pr[1] = b;
      }
  const bool multi_server = server_gpus.size() > 1;
  const int num_servers = static_cast<int>(server_gpus.size());
  // Server-pair mode: every GPU pair of servers (S, T) sees one view, all intra-server pairs another,
  // and crossing servers never costs less than staying inside.
  bool server_pairs = !two_level && k > 1 && multi_server;
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
  struct CommEdge {
    int i, j;
    int y = -1, w = -1;   // two-level indicators
    std::vector<int> wst;  // server-pair mode: per (S, T), S != T, -1 on the diagonal
    std::vector<int> z;    // general: per (d, e), d != e, -1 on the diagonal
  };
  std::vector<CommEdge> comm_edges;
  for (const auto& [ij, bytes] : edge_bytes) {
    const auto [i, j] = ij;
    const int r = m.add_row(p(i), kInf);  // s_j - s_i - comm >= p_i
    m.set(r, s_col[j], 1);
    m.set(r, s_col[i], -1);
    if (bytes <= 0 || unit[i] == unit[j] || k == 1) continue;
    CommEdge ce;
    ce.i = i;
    ce.j = j;
    // Both server-level forms charge the intra-server cost whenever i and j are on different GPUs
    // (y = 1), then the extra cost of crossing servers on top.
    const double c_intra =
        (server_pairs || two_level) && intra_pair[0] >= 0 ? transfer(intra_pair[0], intra_pair[1], bytes) : 0.0;
    if (c_intra > 0) {
      ce.y = add_col(0, 1, 0, false);
      m.set(r, ce.y, -c_intra);
      for (DeviceId d = 0; d < k; ++d) {  // y - x_id + x_jd >= 0
        const int ry = m.add_row(0, kInf);
        m.set(ry, ce.y, 1);
        m.set(ry, x(i, d), -1);
        m.set(ry, x(j, d), 1);
      }
    }
    if (server_pairs) {
      ce.wst.assign(static_cast<std::size_t>(num_servers) * num_servers, -1);
      for (int sa = 0; sa < num_servers; ++sa)
        for (int sb = 0; sb < num_servers; ++sb) {
          if (sa == sb) continue;
          const double extra = transfer(server_gpus[sa][0], server_gpus[sb][0], bytes) - c_intra;
          if (extra <= 0) continue;
          const int w = add_col(0, 1, 0, false);
          ce.wst[sa * num_servers + sb] = w;
          m.set(r, w, -extra);
          const int rw = m.add_row(-1, kInf);  // w - X_iS - X_jT >= -1
          m.set(rw, w, 1);
          for (DeviceId d : server_gpus[sa]) m.set(rw, x(i, d), -1);
          for (DeviceId d : server_gpus[sb]) m.set(rw, x(j, d), -1);
        }
    } else if (two_level) {
      const double c_inter = inter_pair[0] >= 0 ? transfer(inter_pair[0], inter_pair[1], bytes) : 0.0;
      if (multi_server && c_inter - c_intra > 0) {
        ce.w = add_col(0, 1, 0, false);
        m.set(r, ce.w, -(c_inter - c_intra));
        for (const auto& gpus : server_gpus) {  // w - X_iS + X_jS >= 0
          const int rw = m.add_row(0, kInf);
          m.set(rw, ce.w, 1);
          for (DeviceId d : gpus) {
            m.set(rw, x(i, d), -1);
            m.set(rw, x(j, d), 1);
          }
        }
      }
    } else {
      ce.z.assign(static_cast<std::size_t>(k) * k, -1);
      for (DeviceId d = 0; d < k; ++d)
        for (DeviceId e = 0; e < k; ++e) {
          if (d == e) continue;
          const int z = add_col(0, 1, 0, false);
          ce.z[d * k + e] = z;
          m.set(r, z, -transfer(d, e, bytes));
          const int rz = m.add_row(-1, kInf);  // z - x_id - x_je >= -1
          m.set(rz, z, 1);
          m.set(rz, x(i, d), -1);
          m.set(rz, x(j, e), -1);
        }
    }
    comm_edges.push_back(std::move(ce));
  }
  // Parallelizable pairs of operators that compute and whose time windows overlap (if a must end
  // before b can start whatever the placement, no ordering is needed).
  struct OrderPair {
    int a, b, o;  // a before b in topological order; o = 1: a runs first
  };
  std::vector<OrderPair> order_pairs;
  {
    const Reachability reach(g);
    for (int pa = 0; pa < n; ++pa) {
      const int a = topo[pa];
      if (p(a) <= 0) continue;
      for (int pb = pa + 1; pb < n; ++pb) {
        const int b = topo[pb];
        if (p(b) <= 0 || !reach.parallelizable(a, b)) continue;
        if (unit[a] == unit[b]) {  // one device: topological order (ICC P2 (13))
          const int r = m.add_row(p(a), kInf);
          m.set(r, s_col[b], 1);
          m.set(r, s_col[a], -1);
          continue;
        }
        // M_ab bounds f_a - s_b (and M_ba f_b - s_a) over the windows.
        const double m_ab = latest_start(a) + p(a) - head[b], m_ba = latest_start(b) + p(b) - head[a];
        if (m_ab <= 0 || m_ba <= 0) continue;  // one order is forced by the windows
        const int o = add_col(0, 1, 0, true);
        order_pairs.push_back({a, b, o});
        for (DeviceId d = 0; d < k; ++d) {
          // a first: f_a <= s_b + M_ab (1 - o) + M_ab (2 - x_ad - x_bd), i.e.
          // s_b - s_a - M o - M x_ad - M x_bd >= p_a - 3M
          const int r1 = m.add_row(p(a) - 3 * m_ab, kInf);
          m.set(r1, s_col[b], 1);
          m.set(r1, s_col[a], -1);
          m.set(r1, o, -m_ab);
          m.set(r1, x(a, d), -m_ab);
          m.set(r1, x(b, d), -m_ab);
          // b first: f_b <= s_a + M_ba o + M_ba (2 - x_ad - x_bd), i.e.
          // s_a - s_b + M o - M x_ad - M x_bd >= p_b - 2M
          const int r2 = m.add_row(p(b) - 2 * m_ba, kInf);
          m.set(r2, s_col[a], 1);
          m.set(r2, s_col[b], -1);
          m.set(r2, o, m_ba);
          m.set(r2, x(a, d), -m_ba);
          m.set(r2, x(b, d), -m_ba);
        }
      }
    }
  }
  std::vector<double> unit_memory(num_units, 0.0);
  for (int i = 0; i < n; ++i) unit_memory[unit[i]] += g.op(i).memory_bytes;
  for (DeviceId d = 0; d < k; ++d) {
    const int r = m.add_row(-kInf, cluster.device(d).memory_bytes);
    for (int u = 0; u < num_units; ++u)
      if (unit_memory[u] > 0) m.set(r, x_col[u * k + d], unit_memory[u]);
  }

  const int num_cols = static_cast<int>(col_lo.size());
  const int num_rows = static_cast<int>(m.row_lo.size());
  P2Solution sol;
  sol.columns = num_cols;
  sol.rows = num_rows;
  sol.ordering_pairs = static_cast<int>(order_pairs.size());

  // The full solution vector of the warm start.
  std::vector<double> warm;
  if (have_warm) {
    warm.assign(num_cols, 0.0);
    for (int i = 0; i < n; ++i) {
      warm[x(i, fallback[i])] = 1;
      warm[s_col[i]] = warm_start_times[i];
    }
    warm[c_col] = warm_makespan;
    for (const CommEdge& ce : comm_edges) {
      const DeviceId d = fallback[ce.i], e = fallback[ce.j];
      if (d == e) continue;
      if (ce.y >= 0) warm[ce.y] = 1;
      if (ce.w >= 0 && cluster.device(d).server != cluster.device(e).server) warm[ce.w] = 1;
      if (!ce.z.empty()) warm[ce.z[d * k + e]] = 1;
      if (!ce.wst.empty() && server_index[d] != server_index[e])
        if (const int w = ce.wst[server_index[d] * num_servers + server_index[e]]; w >= 0) warm[w] = 1;
    }
    // o = 1: a first. On different GPUs either value is feasible (the big-M terms are slack).
    for (const OrderPair& op : order_pairs) warm[op.o] = warm_pos[op.a] < warm_pos[op.b] ? 1 : 0;
  }

  OsiClpSolverInterface solver;
  {
    CoinPackedMatrix matrix(false, m.rows.data(), m.cols.data(), m.values.data(),
                            static_cast<CoinBigIndex>(m.values.size()));
    matrix.setDimensions(num_rows, num_cols);
    solver.loadProblem(matrix, col_lo.data(), col_hi.data(), obj.data(), m.row_lo.data(), m.row_hi.data());
  }
  for (int c : integer_cols) solver.setInteger(c);
  solver.messageHandler()->setLogLevel(0);
  {
    // The dual simplex: CLP's automatic choice takes the primal on this model, which is ten times
    // slower on the big-M rows (AlexNet, 2 GPUs: 20 s against 1.6 s for the root LP).
    ClpSolve dual;
    dual.setSolveType(ClpSolve::useDual);
    solver.setSolveOptions(dual);
    // CBC checks its time limit between nodes; this makes the LPs themselves stop in time too (the
    // root LP of AlexNet on 6 GPUs alone takes minutes).
    solver.getModelPtr()->setMaximumSeconds(options.time_limit_s);
  }
  if (!options.write_model.empty()) {
    const std::string& path = options.write_model;
    const auto dot = path.rfind('.');
    const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
    const std::string base = dot == std::string::npos ? path : path.substr(0, dot);
    if (ext == "mps") solver.writeMps(base.c_str(), "mps");
    else solver.writeLp(base.c_str(), ext.empty() ? "lp" : ext.c_str());
    if (FILE* f = std::fopen(path.c_str(), "r")) std::fclose(f);
    else throw std::runtime_error(fmt::format("quickp: could not write the model to {}", path));
  }

  CbcModel model(solver);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setUseElapsedTime(true);
  model.setMaximumSeconds(options.time_limit_s);
  if (options.max_nodes > 0) model.setMaximumNodes(options.max_nodes);
  model.setAllowableFractionGap(options.mip_gap);
  model.setAllowableGap(1e-12);
  // Optionally CBC's usual cuts and primal heuristics (what its command-line solver adds). Off by
  // default: they have not been shown to help on this big-M model yet.
  CglProbing probing;
  probing.setUsingObjective(true);
  probing.setMaxPass(1);
  probing.setMaxPassRoot(5);
  probing.setMaxProbe(10);
  probing.setMaxProbeRoot(50);
  probing.setMaxLook(10);
  probing.setMaxLookRoot(50);
  probing.setRowCuts(3);
  CglGomory gomory;
  gomory.setLimit(300);
  CglKnapsackCover knapsack;
  CglMixedIntegerRounding2 mir;
  CglFlowCover flow;
  CglClique clique;
  if (options.cuts_and_heuristics) model.addCutGenerator(&probing, -1, "Probing");
  if (options.cuts_and_heuristics) model.addCutGenerator(&gomory, -1, "Gomory");
  if (options.cuts_and_heuristics) model.addCutGenerator(&knapsack, -1, "Knapsack");
  if (options.cuts_and_heuristics) model.addCutGenerator(&mir, -1, "MIR2");
  if (options.cuts_and_heuristics) model.addCutGenerator(&flow, -1, "FlowCover");
  if (options.cuts_and_heuristics) model.addCutGenerator(&clique, -1, "Clique");
  CbcRounding rounding(model);
  CbcHeuristicLocal local(model);
  CbcHeuristicFPump pump(model);
  CbcHeuristicRINS rins(model);
  if (options.cuts_and_heuristics) model.addHeuristic(&rounding);
  if (options.cuts_and_heuristics) model.addHeuristic(&local);
  if (options.cuts_and_heuristics) model.addHeuristic(&pump);
  if (options.cuts_and_heuristics) model.addHeuristic(&rins);
  if (!warm.empty()) {
    model.setBestSolution(warm.data(), num_cols, warm_makespan, true);
    sol.warm_started = model.bestSolution() != nullptr;
    sol.warm_start_objective = warm_makespan * kTimeUnit;
  }
  // A bound that needs no LP: the longest compute-only path and the average work per GPU. It is
  // all the LP relaxation proves when the big-M rows are slack, so when the incumbent is already
  // within the gap of it, branch and bound cannot do better and is skipped.
  double trivial_bound = 0;
  {
    double work = 0;
    for (int i = 0; i < n; ++i) {
      trivial_bound = std::max(trivial_bound, head[i] + rank[i]);
      work += p(i);
    }
    trivial_bound = std::max(trivial_bound, work / k);
  }
  const bool proven_by_bound = have_warm && warm_makespan - trivial_bound <= options.mip_gap * warm_makespan;
  // No strong branching: its trial LPs cost 4x the solve time within the default 20 nodes (quickp
  // small.json, 4 GPUs: 1.9 s against 0.5 s) and found nothing better on the profiled graphs.
  model.setNumberStrong(0);
  if (!proven_by_bound) model.branchAndBound();
  sol.nodes = proven_by_bound ? 0 : model.getNodeCount();

  const double* best = proven_by_bound ? warm.data() : model.bestSolution();
  sol.placement.assign(n, 0);
  sol.start.assign(n, 0.0);
  if (best == nullptr) {
    sol.status = P2Status::Infeasible;
    sol.placement = fallback;
    const Schedule replay = schedule_of(fallback, topo);
    for (int i = 0; i < n; ++i) sol.start[i] = replay.start[i] * kTimeUnit;
    sol.objective = replay.latency * kTimeUnit;
    sol.best_bound = model.getBestPossibleObjValue() * kTimeUnit;
  } else {
    for (int i = 0; i < n; ++i) {
      for (DeviceId d = 0; d < k; ++d)
        if (best[x(i, d)] > 0.5) sol.placement[i] = d;
      sol.start[i] = best[s_col[i]] * kTimeUnit;
    }
    if (proven_by_bound) {
      sol.objective = warm_makespan * kTimeUnit;
      sol.best_bound = std::min(trivial_bound * kTimeUnit, sol.objective);
      sol.status = P2Status::Optimal;
    } else {
      // C of the incumbent: when the time limit stops the root LP, CBC reports no objective
      // (1e50) although its incumbent is the warm start, and no bound beyond the trivial one.
      sol.objective = best[c_col] * kTimeUnit;
      const bool root_done = model.getObjValue() < 1e40 && std::isfinite(model.getBestPossibleObjValue());
      sol.best_bound =
          std::min(std::max(root_done ? model.getBestPossibleObjValue() : trivial_bound, trivial_bound) * kTimeUnit,
                   sol.objective);
      sol.status = model.isProvenOptimal() && !model.isSecondsLimitReached() && !model.isNodeLimitReached()
                       ? P2Status::Optimal
                       : model.isNodeLimitReached() ? P2Status::NodeLimit : P2Status::TimeLimit;
    }
  }
  sol.gap = sol.objective > 0 ? std::max(0.0, (sol.objective - sol.best_bound) / sol.objective) : 0.0;
  sol.device_order.assign(k, {});
  for (OpId i : topo) sol.device_order[sol.placement[i]].push_back(i);
  for (auto& order : sol.device_order)
    std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) { return sol.start[a] < sol.start[b]; });
  sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sol;
}

PlacementResult QuickP::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  PlacementResult r = place_once(graph, cluster, deadline);
  if (!config_.bandwidth_allocation) return r;
  const MultiNicConfig* multi_nic = multi_nic_config_of(cluster);
  if (!multi_nic) {
    r.report["allocation"] = "not a multi-NIC cluster: nothing to allocate";
    return r;
  }
  bool first = true;  // the first placement on the cluster as given is the one just found
  const P3Result p3 = solve_p3(
      graph, cluster, *multi_nic,
      [&](const Cluster& c) {
        if (first) {
          first = false;
          return r.placement;
        }
        return place_once(graph, c, deadline).placement;
      },
      config_.allocation_rounds);
  r.placement = p3.placement;
  r.bandwidth_allocation = p3.allocation;
  nlohmann::json rows = nlohmann::json::array();
  for (int s = 0; s < p3.allocation.servers(); ++s) {
    nlohmann::json row = nlohmann::json::array();
    for (int t = 0; t < p3.allocation.servers(); ++t) row.push_back(p3.allocation(s, t));
    rows.push_back(std::move(row));
  }
  r.report["allocation"] = std::move(rows);
  r.report["latency_uniform_s"] = p3.initial_latency;
  r.report["latency_s"] = p3.latency;
  r.report["allocation_rounds"] = p3.rounds;
  r.report["allocation_accepted"] = p3.accepted;
  return r;
}

PlacementResult QuickP::place_once(const Graph& graph, const Cluster& cluster, const Deadline& deadline) const {
  const auto t0 = std::chrono::steady_clock::now();
  const double alpha = config_.alpha_s ? *config_.alpha_s : fusion_threshold(graph, config_.alpha_percentile);
  const double beta = config_.beta_s ? *config_.beta_s : 2 * alpha;
  Coarsening fused;
  Colocation groups;
  int rounds = 0, expanded = 0;
  if (config_.coarsening == QuickPCoarsening::Algorithm2) {
    IterativeReduction red = iterative_fusion_colocation(graph, alpha, beta, colocation_bandwidth(cluster));
    fused = std::move(red.fused);
    groups = std::move(red.groups);
    rounds = red.rounds;
    expanded = red.expanded;
  } else {
    if (config_.fusion) {
      fused = fuse_operators(graph, alpha);
    } else {
      fused.coarse = graph;
      fused.group_of.resize(graph.num_operators());
      std::iota(fused.group_of.begin(), fused.group_of.end(), 0);
    }
    if (config_.colocation) groups = colocate(fused.coarse, colocation_bandwidth(cluster));
    else groups.group_of.assign(fused.coarse.num_operators(), -1);
  }
  const double fusion_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t pairs = Reachability(fused.coarse).count_parallelizable_pairs();
  // The solver gets what is left of the call's time limit (at least a moment, to return its warm start).
  P2Options p2 = config_.p2;
  p2.time_limit_s = deadline.bounded() ? std::max(1e-3, deadline.remaining()) : 1e9;
  const P2Solution s = solve_p2(fused.coarse, cluster, groups, p2);

  PlacementResult r;
  r.placement = expand_placement(fused, s.placement);
  r.report["operators"] = graph.num_operators();
  r.report["fused_operators"] = fused.coarse.num_operators();
  r.report["alpha_s"] = alpha;
  r.report["groups"] = groups.num_groups;
  r.report["coarsening"] = config_.coarsening == QuickPCoarsening::Algorithm2 ? "algorithm2" : "algorithm1";
  if (config_.coarsening == QuickPCoarsening::Algorithm2) {
    r.report["beta_s"] = beta;
    r.report["rounds"] = rounds;
    r.report["expanded"] = expanded;
  }
  r.report["parallelizable_pairs"] = pairs;
  r.report["ordering_pairs"] = s.ordering_pairs;
  r.report["columns"] = s.columns;
  r.report["rows"] = s.rows;
  r.report["fusion_seconds"] = fusion_seconds;
  r.report["solver_seconds"] = s.seconds;
  r.report["gap"] = s.gap;
  r.report["objective_s"] = s.objective;
  r.report["best_bound_s"] = s.best_bound;
  r.report["nodes"] = s.nodes;
  r.report["warm_started"] = s.warm_started;
  if (s.warm_started) r.report["warm_start_s"] = s.warm_start_objective;
  r.report["status"] = std::string(p2_status_name(s.status));
  return r;
}

OptionSchema<QuickPConfig> quickp_schema() {
  using C = QuickPConfig;
  OptionSchema<C> s;
  const Range finite_non_negative = Range::non_negative();
  s.optional_duration("alpha", &C::alpha_s, "fusion threshold (seconds, or with a unit)", finite_non_negative, "1ms",
                      "the alpha_percentile of the non-zero compute times");
  s.number("alpha_percentile", &C::alpha_percentile,
           "fusion threshold as this percentile of the non-zero compute times, when alpha is unset", Range::closed(0, 1), "0.5");
  s.choice<QuickPCoarsening>("coarsening", &C::coarsening, kQuickPCoarseningNames,
                             "algorithm1 = ICC fusion then co-location; algorithm2 = the thesis's iterative fusion and "
                             "co-location with WCC expansion");
  s.optional_duration("beta", &C::beta_s, "algorithm2's co-location threshold", finite_non_negative, "1ms", "2 alpha");
  s.flag("fusion", &C::fusion, "algorithm1: fuse operators (ICC Algorithm 1)");
  s.flag("colocation", &C::colocation, "algorithm1: co-locate by eq. 7");
  s.add({"mip_gap", "number", "relative gap at which the solver stops", default_text_number(P2Options{}.mip_gap), {}, "0.2"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.mip_gap = parse_number_option(f, key, Range{0, 1, false, true});
        });
  s.add({"max_nodes", "count", "branch-and-bound node limit, deterministic (0: none; raise it for better placements)",
         std::to_string(P2Options{}.max_nodes), {}, "1"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.max_nodes = static_cast<int>(std::min<long>(parse_count_option(f, key, 0, std::numeric_limits<long>::max()), 2000000000));
        });
  s.add({"warm_start", "flag", "start from the better of single-device and HEFT", "true", {}, "false"},
        [](const YamlFields& f, std::string_view key, C& c) { c.p2.warm_start = f.boolean_or(key, c.p2.warm_start); });
  s.add({"write_model", "text", "write the model to this path (.mps for MPS, else LP)", "unset", {}, "model.lp"},
        [](const YamlFields& f, std::string_view key, C& c) { c.p2.write_model = f.string(key); });
  s.add({"cuts", "flag", "add CBC's cut generators and primal heuristics", "false", {}, "true"},
        [](const YamlFields& f, std::string_view key, C& c) {
          c.p2.cuts_and_heuristics = f.boolean_or(key, c.p2.cuts_and_heuristics);
        });
  s.flag("bandwidth_allocation", &C::bandwidth_allocation,
         "on a multi-NIC cluster also choose the per-destination allocation b(s,t) (thesis P3, by alternating placement "
         "and an allocation LP)");
  s.count("allocation_rounds", &C::allocation_rounds, "alternations of P3 at most", 1, 100, "1");
  return s;
}

StrategyInfo quickp_strategy_info() {
  // The time limit covers fusion and the solver, which returns its best placement when it runs out
  // (not deterministic: use max_nodes for that).
  return strategy_info<QuickP>(
      "quickp",
      "QuickP (ICC 2025): operator fusion (Algorithm 1), co-location (eq. 7), then the integer program P2 with CBC",
      quickp_schema(), 60.0);
}

}  // namespace placesim
