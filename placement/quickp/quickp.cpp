// QuickP: the integer program P2 (COIN-OR CBC) and the strategy.

#include "placement/quickp/quickp.h"

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
  std::vector<int> position(n);
  for (int p = 0; p < n; ++p) position[topo[p]] = p;

  // Edges aggregated per ordered pair (parallel tensors: summed bytes).
  std::map<std::pair<int, int>, double> edge_bytes;
  for (const Tensor& t : g.tensors()) edge_bytes[{t.src, t.dst}] += t.bytes;
  // The model counts time in microseconds: in seconds a makespan (~1e-4) sits below CBC's absolute
  // tolerances (its cutoff increment is 1e-5), which would let it prune everything.
  constexpr double kTimeUnit = 1e-6;
  auto p = [&](OpId i) { return g.op(i).compute_s / kTimeUnit; };
  auto transfer = [&](DeviceId d, DeviceId e, double bytes) { return cluster.transfer_time(d, e, bytes) / kTimeUnit; };

  double big_m = g.total_compute() / kTimeUnit;
  for (const auto& [ij, bytes] : edge_bytes) {
    double worst = 0;
    for (DeviceId d = 0; d < k; ++d)
      for (DeviceId e = 0; e < k; ++e) worst = std::max(worst, transfer(d, e, bytes));
    big_m += worst;
  }
  big_m = std::max(big_m, 1e-3);

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
  for (int i = 0; i < n; ++i) s_col[i] = add_col(0, big_m, 0, false);
  const int c_col = add_col(0, kInf, 1, false);
  const bool symmetric = options.break_symmetry && k > 1 && n > 0 && gpus_interchangeable(cluster);
  if (symmetric) col_lo[x_col[unit[topo[0]] * k + 0]] = 1;  // the first unit on GPU 0

  Triplets m;
  for (int u = 0; u < num_units; ++u) {
    const int r = m.add_row(1, 1);
    for (DeviceId d = 0; d < k; ++d) m.set(r, x_col[u * k + d], 1);
  }
  for (int i = 0; i < n; ++i) {  // C >= s_i + p_i
    const int r = m.add_row(p(i), kInf);
    m.set(r, c_col, 1);
    m.set(r, s_col[i], -1);
  }
  struct CommEdge {
    int i, j;
    double bytes;
    std::vector<int> z;  // per (d, e), d != e, -1 on the diagonal
  };
  std::vector<CommEdge> comm_edges;
  for (const auto& [ij, bytes] : edge_bytes) {
    const auto [i, j] = ij;
    const int r = m.add_row(p(i), kInf);  // s_j - s_i - sum c z >= p_i
    m.set(r, s_col[j], 1);
    m.set(r, s_col[i], -1);
    if (bytes <= 0 || unit[i] == unit[j] || k == 1) continue;
    CommEdge ce{i, j, bytes, std::vector<int>(static_cast<std::size_t>(k) * k, -1)};
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
    comm_edges.push_back(std::move(ce));
  }
  // Parallelizable pairs of operators that compute.
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
        const int o = add_col(0, 1, 0, true);
        order_pairs.push_back({a, b, o});
        for (DeviceId d = 0; d < k; ++d) {
          // s_b - s_a - M o - M x_ad - M x_bd >= p_a - 3M
          const int r1 = m.add_row(p(a) - 3 * big_m, kInf);
          m.set(r1, s_col[b], 1);
          m.set(r1, s_col[a], -1);
          m.set(r1, o, -big_m);
          m.set(r1, x(a, d), -big_m);
          m.set(r1, x(b, d), -big_m);
          // s_a - s_b + M o - M x_ad - M x_bd >= p_b - 2M
          const int r2 = m.add_row(p(b) - 2 * big_m, kInf);
          m.set(r2, s_col[a], 1);
          m.set(r2, s_col[b], -1);
          m.set(r2, o, big_m);
          m.set(r2, x(a, d), -big_m);
          m.set(r2, x(b, d), -big_m);
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

  // The full solution vector of a placement whose GPUs run their operators in the order of
  // `sequence` (a topological order of g): each starts when its GPU is free and its inputs are in.
  auto solution_of = [&](const std::vector<DeviceId>& placement, std::span<const OpId> sequence, double& makespan) {
    std::vector<double> v(num_cols, 0.0);
    std::vector<double> start(n, 0.0), device_free(k, 0.0);
    std::vector<int> pos(n);
    for (int q = 0; q < n; ++q) pos[sequence[q]] = q;
    std::vector<std::vector<std::pair<int, double>>> preds(n);
    for (const auto& [ij, bytes] : edge_bytes) preds[ij.second].emplace_back(ij.first, bytes);
    makespan = 0;
    for (OpId i : sequence) {
      const DeviceId d = placement[i];
      double t = device_free[d];
      for (const auto& [q, bytes] : preds[i])
        t = std::max(t, start[q] + p(q) + (unit[q] == unit[i] ? 0.0 : transfer(placement[q], d, bytes)));
      start[i] = t;
      device_free[d] = t + p(i);
      makespan = std::max(makespan, device_free[d]);
    }
    for (int i = 0; i < n; ++i) {
      v[x(i, placement[i])] = 1;
      v[s_col[i]] = start[i];
    }
    v[c_col] = makespan;
    for (const CommEdge& ce : comm_edges)
      if (placement[ce.i] != placement[ce.j]) v[ce.z[placement[ce.i] * k + placement[ce.j]]] = 1;
    // o = 1: a first. On different GPUs either value is feasible (the big-M terms are slack).
    for (const OrderPair& op : order_pairs) v[op.o] = pos[op.a] < pos[op.b] ? 1 : 0;
    return v;
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

  std::vector<double> warm;
  double warm_makespan = kInf;
  std::vector<DeviceId> fallback(n, 0);
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
        for (DeviceId& p : perm) p = p == moved ? 0 : p == 0 ? moved : p;
        for (DeviceId& d : cand) d = perm[d];
      }
      if (!fits(cand)) continue;
      std::vector<std::vector<OpId>> sequences{std::vector<OpId>(topo.begin(), topo.end())};
      if (auto seq = evaluator_sequence(cand); !seq.empty()) sequences.push_back(std::move(seq));
      for (const auto& seq : sequences) {
        double mk = 0;
        auto v = solution_of(cand, seq, mk);
        if (mk < warm_makespan) {
          warm_makespan = mk;
          warm = std::move(v);
          fallback = cand;
        }
      }
    }
    // Then a deterministic descent: move one unit to another GPU while that lowers the makespan of
    // the topological-order schedule (one pass over the graph per try; a few passes at most).
    if (!warm.empty() && k > 1) {
      std::vector<std::vector<OpId>> members(num_units);
      for (OpId i : topo) members[unit[i]].push_back(i);
      std::vector<DeviceId> current = fallback;
      double current_mk = kInf;
      solution_of(current, topo, current_mk);
      for (int pass = 0; pass < 10; ++pass) {
        bool improved = false;
        for (int u = 0; u < num_units; ++u) {
          if (symmetric && u == unit[topo[0]]) continue;  // pinned to GPU 0
          for (DeviceId d = 0; d < k; ++d) {
            const DeviceId was = current[members[u][0]];
            if (d == was) continue;
            for (OpId i : members[u]) current[i] = d;
            double mk = 0;
            auto v = solution_of(current, topo, mk);
            if (mk < current_mk * (1 - 1e-12) && fits(current)) {
              current_mk = mk;
              improved = true;
              if (mk < warm_makespan) {
                warm_makespan = mk;
                warm = std::move(v);
                fallback = current;
              }
            } else {
              for (OpId i : members[u]) current[i] = was;
            }
          }
        }
        if (!improved) break;
      }
    }
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
  model.branchAndBound();

  const double* best = model.bestSolution();
  sol.placement.assign(n, 0);
  sol.start.assign(n, 0.0);
  if (best == nullptr) {
    sol.status = P2Status::Infeasible;
    sol.placement = fallback;
    double mk = 0;
    const auto v = solution_of(fallback, topo, mk);
    for (int i = 0; i < n; ++i) sol.start[i] = v[s_col[i]] * kTimeUnit;
    sol.objective = mk * kTimeUnit;
    sol.best_bound = model.getBestPossibleObjValue() * kTimeUnit;
  } else {
    for (int i = 0; i < n; ++i) {
      for (DeviceId d = 0; d < k; ++d)
        if (best[x(i, d)] > 0.5) sol.placement[i] = d;
      sol.start[i] = best[s_col[i]] * kTimeUnit;
    }
    sol.objective = model.getObjValue() * kTimeUnit;
    sol.best_bound = std::min(model.getBestPossibleObjValue() * kTimeUnit, sol.objective);
    sol.status = model.isProvenOptimal() && !model.isSecondsLimitReached() && !model.isNodeLimitReached()
                     ? P2Status::Optimal
                     : model.isNodeLimitReached() ? P2Status::NodeLimit : P2Status::TimeLimit;
  }
  sol.gap = sol.objective > 0 ? std::max(0.0, (sol.objective - sol.best_bound) / sol.objective) : 0.0;
  sol.device_order.assign(k, {});
  for (OpId i : topo) sol.device_order[sol.placement[i]].push_back(i);
  for (auto& order : sol.device_order)
    std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) { return sol.start[a] < sol.start[b]; });
  sol.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sol;
}

PlacementResult QuickP::place(const Graph& graph, const Cluster& cluster) {
  const auto t0 = std::chrono::steady_clock::now();
  const double alpha = config_.alpha_s ? *config_.alpha_s : fusion_threshold(graph, config_.alpha_percentile);
  Coarsening fused;
  if (config_.fusion) {
    fused = fuse_operators(graph, alpha);
  } else {
    fused.coarse = graph;
    fused.group_of.resize(graph.num_operators());
    std::iota(fused.group_of.begin(), fused.group_of.end(), 0);
  }
  const double fusion_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Colocation groups;
  if (config_.colocation) groups = colocate(fused.coarse, colocation_bandwidth(cluster));
  else groups.group_of.assign(fused.coarse.num_operators(), -1);
  const std::uint64_t pairs = Reachability(fused.coarse).count_parallelizable_pairs();
  const P2Solution s = solve_p2(fused.coarse, cluster, groups, config_.p2);

  PlacementResult r;
  r.placement = expand_placement(fused, s.placement);
  r.report["operators"] = graph.num_operators();
  r.report["fused_operators"] = fused.coarse.num_operators();
  r.report["alpha_s"] = alpha;
  r.report["groups"] = groups.num_groups;
  r.report["parallelizable_pairs"] = pairs;
  r.report["ordering_pairs"] = s.ordering_pairs;
  r.report["columns"] = s.columns;
  r.report["rows"] = s.rows;
  r.report["fusion_seconds"] = fusion_seconds;
  r.report["solver_seconds"] = s.seconds;
  r.report["gap"] = s.gap;
  r.report["objective_s"] = s.objective;
  r.report["best_bound_s"] = s.best_bound;
  r.report["warm_started"] = s.warm_started;
  if (s.warm_started) r.report["warm_start_s"] = s.warm_start_objective;
  r.report["status"] = std::string(p2_status_name(s.status));
  return r;
}

StrategyInfo quickp_strategy_info() {
  return {"quickp",
          "QuickP (ICC 2025): operator fusion (Algorithm 1), co-location (eq. 7), then the integer program P2 with CBC",
          "alpha (unset): fusion threshold in seconds; alpha_percentile (0.9): threshold as this percentile of the "
          "non-zero compute times when alpha is unset; fusion (true); colocation (true); mip_gap (0.05): relative gap "
          "to stop at; time_limit (60 s): solver wall-clock limit, the best placement found is returned (not deterministic: use max_nodes); max_nodes (20): branch-and-bound node limit, deterministic (0: none; raise it for better placements); warm_start "
          "(true): start from the better of single-device and HEFT; write_model (unset): write the model to this "
          "path (.mps for MPS, else LP); cuts (false): add CBC's cut generators and primal heuristics",
          [](const YamlFields& options) {
            options.allow_only({"alpha", "alpha_percentile", "fusion", "colocation", "mip_gap", "time_limit",
                                "warm_start", "write_model", "cuts", "max_nodes"});
            QuickPConfig cfg;
            if (options.has("alpha")) {
              const double a = options.duration_or("alpha", 0.0);
              if (!(a >= 0) || !std::isfinite(a))
                throw InputError(options.file(), options.field("alpha"), "expected a duration >= 0");
              cfg.alpha_s = a;
            }
            cfg.alpha_percentile = options.number_or("alpha_percentile", cfg.alpha_percentile);
            if (!(cfg.alpha_percentile >= 0 && cfg.alpha_percentile <= 1))
              throw InputError(options.file(), options.field("alpha_percentile"), "expected a number in [0, 1]");
            cfg.fusion = options.boolean_or("fusion", cfg.fusion);
            cfg.colocation = options.boolean_or("colocation", cfg.colocation);
            cfg.p2.mip_gap = options.number_or("mip_gap", cfg.p2.mip_gap);
            if (!(cfg.p2.mip_gap >= 0 && cfg.p2.mip_gap < 1))
              throw InputError(options.file(), options.field("mip_gap"), "expected a number in [0, 1)");
            cfg.p2.time_limit_s = options.duration_or("time_limit", cfg.p2.time_limit_s);
            if (!(cfg.p2.time_limit_s > 0) || !std::isfinite(cfg.p2.time_limit_s))
              throw InputError(options.file(), options.field("time_limit"), "expected a duration > 0");
            cfg.p2.warm_start = options.boolean_or("warm_start", cfg.p2.warm_start);
            const long nodes = options.integer_or("max_nodes", cfg.p2.max_nodes);
            if (nodes < 0) throw InputError(options.file(), options.field("max_nodes"), "expected a node count >= 0 (0: no limit)");
            cfg.p2.max_nodes = static_cast<int>(std::min<long>(nodes, 2000000000));
            cfg.p2.write_model = options.string_or("write_model", "");
            cfg.p2.cuts_and_heuristics = options.boolean_or("cuts", cfg.p2.cuts_and_heuristics);
            return std::make_unique<QuickP>(cfg);
          }};
}

}  // namespace placesim
