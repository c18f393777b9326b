// QuickP P3: joint placement and bandwidth allocation on the multi-NIC cluster, by alternation.

#include "placement/strategies/quickp/bandwidth.h"

#include <CoinPackedMatrix.hpp>
#include <CoinPackedVector.hpp>
#include <OsiClpSolverInterface.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "placement/framework/lp_deadline.h"
#include "sim/engines/evaluator.h"

namespace placesim {

BandwidthAllocation allocation_of(const Cluster& c) {
  const int servers = c.num_servers();
  std::vector<DeviceId> first(servers, -1);
  for (DeviceId d = 0; d < c.num_devices(); ++d)
    if (first[c.device(d).server] < 0) first[c.device(d).server] = d;
  BandwidthAllocation a(servers);
  for (int s = 0; s < servers; ++s)
    for (int t = 0; t < servers; ++t)
      if (s != t && c.reachable(first[s], first[t])) a.set(s, t, c.bandwidth(first[s], first[t]));
  return a;
}

AllocationResult allocate_bandwidth(const Graph& g, const Cluster& cluster, const MultiNicConfig& config,
                                    const std::vector<DeviceId>& placement,
                                    const std::vector<std::vector<OpId>>& device_order,
                                    const AllocationOptions& options) {
  constexpr double kUs = 1e-6;  // the LP counts microseconds
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const int servers = config.servers;
  const double egress = config.nics_per_server * config.link_bandwidth;  // B
  const double floor_rate = servers > 1 ? options.floor_fraction * egress / (servers - 1) : 0.0;
  const int n = static_cast<int>(g.num_operators());
  auto server = [&](OpId i) { return cluster.device(placement[i]).server; };

  // Server pairs that carry bytes: they get a variable u_st = B / b(s,t) in [1, B / floor].
  std::map<std::pair<int, int>, int> pair_var;
  for (const Tensor& t : g.tensors())
    if (t.bytes > 0 && server(t.src) != server(t.dst)) pair_var.emplace(std::make_pair(server(t.src), server(t.dst)), 0);

  AllocationResult result;
  result.allocation = BandwidthAllocation(servers);
  if (pair_var.empty()) {  // nothing crosses servers: any allocation does; keep the uniform one
    result.allocation = BandwidthAllocation::uniform(servers, egress);
    return result;
  }
  // Columns: s_i, C, u_st. The rows are gathered first and loaded at once: OsiClp's addRow copies
  // the matrix, and one row at a time took 9 s for BERT-base's 30,000 rows.
  std::vector<double> col_lo(n + 1, 0.0), col_hi(n + 1, kInf), objective(n + 1, 0.0);
  const int c_col = n;
  objective[c_col] = 1.0;
  const double u_max = floor_rate > 0 ? egress / floor_rate : 1e6;
  for (auto& [st, col] : pair_var) {
    col = static_cast<int>(col_lo.size());
    col_lo.push_back(1.0);
    col_hi.push_back(u_max);
    objective.push_back(0.0);
  }
  std::vector<int> triplet_rows, triplet_cols;
  std::vector<double> triplet_values, row_lo;
  auto add_row = [&](std::vector<int> cols, std::vector<double> vals, double lo) {
    for (std::size_t k = 0; k < cols.size(); ++k) {
      triplet_rows.push_back(static_cast<int>(row_lo.size()));
      triplet_cols.push_back(cols[k]);
      triplet_values.push_back(vals[k]);
    }
    row_lo.push_back(lo);
  };
  // Edges: s_j - s_i - (bytes / B) u_st >= p_i + latency, or the fixed intra-server transfer.
  std::map<std::pair<OpId, OpId>, double> edge_bytes;
  for (const Tensor& t : g.tensors()) edge_bytes[{t.src, t.dst}] += t.bytes;
  for (const auto& [ij, bytes] : edge_bytes) {
    const auto [i, j] = ij;
    const double p_i = cluster.compute_time(placement[i], g.op(i).compute_s) / kUs;
    if (bytes > 0 && server(i) != server(j)) {
      const int u = pair_var.at({server(i), server(j)});
      add_row({j, i, u}, {1.0, -1.0, -bytes / egress / kUs},
              p_i + cluster.latency(placement[i], placement[j]) / kUs);
    } else {
      add_row({j, i}, {1.0, -1.0}, p_i + cluster.transfer_time(placement[i], placement[j], bytes) / kUs);
    }
  }
  for (const auto& order : device_order)
    for (std::size_t q = 1; q < order.size(); ++q)
      add_row({order[q], order[q - 1]}, {1.0, -1.0},
              cluster.compute_time(placement[order[q - 1]], g.op(order[q - 1]).compute_s) / kUs);
  for (int i = 0; i < n; ++i)
    add_row({c_col, i}, {1.0, -1.0}, cluster.compute_time(placement[i], g.op(i).compute_s) / kUs);

  // Budget of server s for its traffic pairs: B minus the floors of its other pairs, as a share of B.
  std::vector<double> budget(servers, 1.0);
  for (int s = 0; s < servers; ++s)
    for (int t = 0; t < servers; ++t)
      if (s != t && !pair_var.count({s, t})) budget[s] -= floor_rate / egress;
  // Tangent of sum_t 1/u_t <= budget at u0: sum_t u_t / u0_t^2 >= sum_t 2 / u0_t - budget.
  OsiClpSolverInterface lp;
  lp.messageHandler()->setLogLevel(0);
  const std::vector<double> row_hi(row_lo.size(), kInf);
  CoinPackedMatrix rows(false, triplet_rows.data(), triplet_cols.data(), triplet_values.data(),
                        static_cast<CoinBigIndex>(triplet_values.size()));
  rows.setDimensions(static_cast<int>(row_lo.size()), static_cast<int>(col_lo.size()));
  lp.loadProblem(rows, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(), row_hi.data());
  // The cuts, a few per server, are added to the loaded LP.
  auto add_cut = [&](int s, const std::vector<double>& u0) {
    std::vector<int> cols;
    std::vector<double> vals;
    double rhs = -budget[s];
    for (const auto& [st, col] : pair_var)
      if (st.first == s) {
        cols.push_back(col);
        vals.push_back(1.0 / (u0[col] * u0[col]));
        rhs += 2.0 / u0[col];
      }
    lp.addRow(CoinPackedVector(static_cast<int>(cols.size()), cols.data(), vals.data()), rhs, kInf);
  };
  {
    std::vector<double> u0(col_lo.size(), 0.0);
    std::vector<int> per_server(servers, 0);
    for (const auto& [st, col] : pair_var) ++per_server[st.first];
    for (const auto& [st, col] : pair_var) u0[col] = per_server[st.first] / budget[st.first];  // equal split
    for (int s = 0; s < servers; ++s)
      if (per_server[s] > 0) add_cut(s, u0);
  }
  // The LP stops at the caller's deadline (BERT-base: 40k rows, 4 s): then no allocation is proposed.
  const StopClpAt stop_at(options.stop);
  lp.getModelPtr()->passInEventHandler(&stop_at);
  lp.initialSolve();
  for (int round = 0; round < options.max_cuts_rounds && lp.isProvenOptimal(); ++round) {
    result.cut_rounds = round + 1;
    const double* sol = lp.getColSolution();
    std::vector<double> u(sol, sol + lp.getNumCols());
    bool violated = false;
    for (int s = 0; s < servers; ++s) {
      double used = 0;
      bool any = false;
      for (const auto& [st, col] : pair_var)
        if (st.first == s) used += 1.0 / u[col], any = true;
      if (any && used > budget[s] * (1 + 1e-6)) {
        add_cut(s, u);
        violated = true;
      }
    }
    if (!violated) break;
    lp.resolve();
  }
  if (!lp.isProvenOptimal()) {  // only when the deadline stopped it (C and s are free above)
    result.stopped_at_deadline = true;
    result.allocation = BandwidthAllocation::uniform(servers, egress);
    return result;
  }
  result.lp_makespan = lp.getObjValue() * kUs;
  const double* sol = lp.getColSolution();
  // b = B / u, scaled per server so that its row uses exactly its budget (the cuts leave it a hair
  // over, or under when a pair's rate hit its bounds).
  for (int s = 0; s < servers; ++s) {
    double used = 0;
    for (const auto& [st, col] : pair_var)
      if (st.first == s) used += 1.0 / sol[col];
    if (used == 0) {  // sends nothing: its row stays uniform
      for (int t = 0; t < servers; ++t)
        if (t != s) result.allocation.set(s, t, egress / (servers - 1));
      continue;
    }
    for (int t = 0; t < servers; ++t) {
      if (s == t) continue;
      const auto it = pair_var.find({s, t});
      const double rate = it == pair_var.end() ? floor_rate : egress * (1.0 / sol[it->second]) * budget[s] / used;
      result.allocation.set(s, t, rate);
    }
    // Round-off must not push the row over B (make_multi_nic validates it).
    const double sum = result.allocation.row_sum(s);
    if (sum > egress)
      for (int t = 0; t < servers; ++t) result.allocation.set(s, t, result.allocation(s, t) * egress / sum * (1 - 1e-12));
  }
  return result;
}

P3Result solve_p3(const Graph& g, const Cluster& cluster, const MultiNicConfig& config,
                  const std::function<std::vector<DeviceId>(const Cluster&)>& place, int max_rounds,
                  const AllocationOptions& options, const std::function<bool()>& out_of_time) {
  auto stop = [&] { return out_of_time && out_of_time(); };
  auto latency_on = [&](const Cluster& c, std::span<const DeviceId> p) {
    return CostModel(g, c, options.acceptance).latency(p);
  };
  P3Result r;
  r.placement = place(cluster);
  r.allocation = allocation_of(cluster);
  r.latency = r.initial_latency = latency_on(cluster, r.placement);
  // Alternate from a start (a cluster and its placement) while the latency drops.
  auto alternate = [&](Cluster current, std::vector<DeviceId> placement, BandwidthAllocation allocation) {
    double latency = latency_on(current, placement);
    if (latency < r.latency * (1 - 1e-9)) {
      r.latency = latency;
      r.placement = placement;
      r.allocation = allocation;
    }
    for (int round = 0; round < max_rounds && !stop(); ++round) {
      ++r.rounds;
      const Schedule sched = Evaluator(g, current).schedule(placement);
      const AllocationResult alloc = allocate_bandwidth(g, current, config, placement, sched.device_order, options);
      if (alloc.stopped_at_deadline) break;
      Cluster next = make_multi_nic(config, alloc.allocation);
      bool improved = false;
      if (const double lat = latency_on(next, placement); lat < latency * (1 - 1e-9)) {
        latency = lat;
        improved = true;
      }
      // Re-place on the cluster the allocation builds.
      std::vector<DeviceId> placed = stop() ? placement : place(next);
      if (const double lat = latency_on(next, placed); lat < latency * (1 - 1e-9)) {
        latency = lat;
        placement = std::move(placed);
        improved = true;
      }
      if (!improved) break;
      ++r.accepted;
      current = std::move(next);
      if (latency < r.latency * (1 - 1e-9)) {
        r.latency = latency;
        r.placement = placement;
        r.allocation = alloc.allocation;
      }
    }
  };
  alternate(cluster, r.placement, r.allocation);
  // A second start: servers in pairs (0-1, 2-3, ...), each giving its partner all its egress but a
  // floor for the others. A placement that avoids Ethernet leaves the allocation nothing to work
  // on; this start lets P2 see one fast server pair, which the alternation then balances.
  if (config.servers >= 3 && !stop()) {
    const double egress = config.nics_per_server * config.link_bandwidth;
    const double floor_rate = options.floor_fraction * egress / (config.servers - 1);
    BandwidthAllocation paired(config.servers);
    for (int s = 0; s < config.servers; ++s) {
      const int partner = s ^ 1;
      for (int t = 0; t < config.servers; ++t) {
        if (t == s) continue;
        if (partner >= config.servers) paired.set(s, t, egress / (config.servers - 1));  // odd one out
        else paired.set(s, t, t == partner ? egress - (config.servers - 2) * floor_rate : floor_rate);
      }
    }
    Cluster start = make_multi_nic(config, paired);
    std::vector<DeviceId> placement = place(start);
    alternate(std::move(start), std::move(placement), paired);
  }
  return r;
}

}  // namespace placesim
