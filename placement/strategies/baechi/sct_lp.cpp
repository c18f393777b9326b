// The SCT favourite-child linear program (Baechi's FavoriteChildLPSolver), solved with COIN-OR CLP.
#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>
#include <algorithm>
#include <chrono>
#include <numeric>

#include "placement/strategies/baechi/baechi.h"
#include "placement/framework/lp_deadline.h"

namespace placesim::baechi {

SctLp solve_sct_lp(const Graph& graph, const Cluster& cluster, double threshold,
                   std::chrono::steady_clock::time_point stop) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto n = static_cast<int>(graph.num_operators());
  SctLp out;
  out.favourite.assign(n, -1);

  // Mean pair bandwidth and latency over the ordered GPU pairs.
  double mean_bandwidth = 0, mean_latency = 0;
  int pairs = 0;
  for (DeviceId a = 0; a < cluster.num_devices(); ++a)
    for (DeviceId b = 0; b < cluster.num_devices(); ++b)
      if (a != b) {
        mean_bandwidth += cluster.bandwidth(a, b);
        mean_latency += cluster.latency(a, b);
        ++pairs;
      }
  if (pairs > 0) {
    mean_bandwidth /= pairs;
    mean_latency /= pairs;
  }

  // Parallel tensors between the same two operators form one edge carrying their summed bytes.
  std::vector<EdgeId> by_pair(graph.num_tensors());
  std::iota(by_pair.begin(), by_pair.end(), 0);
  std::sort(by_pair.begin(), by_pair.end(), [&](EdgeId a, EdgeId b) {
    const Tensor &ta = graph.tensor(a), &tb = graph.tensor(b);
    return ta.src != tb.src ? ta.src < tb.src : ta.dst != tb.dst ? ta.dst < tb.dst : a < b;
  });
  struct Edge {
    OpId src, dst;
    double bytes;
  };
  std::vector<Edge> edges;
  std::vector<int> edge_of_tensor(graph.num_tensors());
  for (EdgeId t : by_pair) {
    const Tensor& tensor = graph.tensor(t);
    if (edges.empty() || edges.back().src != tensor.src || edges.back().dst != tensor.dst)
      edges.push_back({tensor.src, tensor.dst, 0.0});
    edges.back().bytes += tensor.bytes;
    edge_of_tensor[t] = static_cast<int>(edges.size()) - 1;
  }
  const auto m = static_cast<int>(edges.size());
  std::vector<double> comm(m, 0.0);
  for (int e = 0; e < m; ++e)
    if (pairs > 0 && edges[e].bytes > 0) comm[e] = edges[e].bytes / mean_bandwidth + mean_latency;

  // Times enter the LP in units of the mean non-zero cost, so that CLP's absolute tolerances
  // (1e-7) are small against them whether the graph is profiled in microseconds or seconds.
  double cost_sum = 0;
  int cost_count = 0;
  // p_i: the operator's mean time over the GPUs (Cluster::compute_time).
  double mean_inv_speed = 0;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) mean_inv_speed += cluster.compute_time(d, 1.0);
  mean_inv_speed = cluster.num_devices() > 0 ? mean_inv_speed / cluster.num_devices() : 1.0;
  const auto p = [&](OpId i) { return graph.op(i).compute_s * mean_inv_speed; };
  for (OpId i = 0; i < n; ++i)
    if (p(i) > 0) cost_sum += p(i), ++cost_count;
  for (double c : comm)
    if (c > 0) cost_sum += c, ++cost_count;
  const double unit = cost_count > 0 ? cost_sum / cost_count : 1.0;

  // Columns: x_e (m), s_i (n), w. Rows as in baechi.h.
  const int col_s = m, col_w = m + n;
  out.columns = m + n + 1;
  std::vector<int> rows, cols;
  std::vector<double> values, row_lo, row_hi;
  const auto add = [&](int row, int col, double v) {
    rows.push_back(row);
    cols.push_back(col);
    values.push_back(v);
  };
  const double inf = COIN_DBL_MAX;
  for (int e = 0; e < m; ++e) {  // s_i - s_j + c_ij x_ij <= -p_i
    const int r = static_cast<int>(row_lo.size());
    add(r, col_s + edges[e].src, 1.0);
    add(r, col_s + edges[e].dst, -1.0);
    if (comm[e] > 0) add(r, e, comm[e] / unit);
    row_lo.push_back(-inf);
    row_hi.push_back(-p(edges[e].src) / unit);
  }
  for (OpId i = 0; i < n; ++i) {  // s_i - w <= -p_i
    const int r = static_cast<int>(row_lo.size());
    add(r, col_s + i, 1.0);
    add(r, col_w, -1.0);
    row_lo.push_back(-inf);
    row_hi.push_back(-p(i) / unit);
  }
  // At most one favourite child per operator and one favourite parent per operator: the edges
  // are sorted by source, so out-edges are contiguous; in-edges are gathered per destination.
  std::vector<std::vector<int>> in_of(n);
  for (int e = 0; e < m; ++e) in_of[edges[e].dst].push_back(e);
  for (int first = 0; first < m;) {
    int last = first;
    while (last < m && edges[last].src == edges[first].src) ++last;
    if (last - first >= 2) {
      const int r = static_cast<int>(row_lo.size());
      for (int e = first; e < last; ++e) add(r, e, 1.0);
      row_lo.push_back(last - first - 1);
      row_hi.push_back(inf);
    }
    first = last;
  }
  for (OpId j = 0; j < n; ++j)
    if (in_of[j].size() >= 2) {
      const int r = static_cast<int>(row_lo.size());
      for (int e : in_of[j]) add(r, e, 1.0);
      row_lo.push_back(static_cast<double>(in_of[j].size()) - 1);
      row_hi.push_back(inf);
    }
  out.rows = static_cast<int>(row_lo.size());

  std::vector<double> col_lo(out.columns, 0.0), col_hi(out.columns, inf), objective(out.columns, 0.0);
  std::fill(col_hi.begin(), col_hi.begin() + m, 1.0);
  objective[col_w] = 1.0;
  CoinPackedMatrix matrix(true, rows.data(), cols.data(), values.data(), static_cast<CoinBigIndex>(values.size()));
  matrix.setDimensions(out.rows, out.columns);

  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), row_lo.data(), row_hi.data());
  const StopClpAt stop_at(stop);
  model.passInEventHandler(&stop_at);
  model.initialSolve();
  out.optimal = model.isProvenOptimal();
  out.stopped_at_time_limit = !out.optimal && std::chrono::steady_clock::now() > stop;

  const double* solution = model.primalColumnSolution();
  std::vector<double> x(m, 1.0);
  if (out.optimal) {
    out.objective_s = model.objectiveValue() * unit;
    for (int e = 0; e < m; ++e) x[e] = std::clamp(solution[e], 0.0, 1.0);

    // Rounding: accept favourite edges greedily by increasing x, then larger c.
    std::vector<int> chosen;
    for (int e = 0; e < m; ++e)
      if (x[e] < threshold) chosen.push_back(e);
    std::sort(chosen.begin(), chosen.end(), [&](int a, int b) {
      if (x[a] != x[b]) return x[a] < x[b];
      if (comm[a] != comm[b]) return comm[a] > comm[b];
      return a < b;  // edges are sorted by (source, destination)
    });
    std::vector<std::uint8_t> has_parent(n, 0);
    for (int e : chosen) {
      if (out.favourite[edges[e].src] >= 0 || has_parent[edges[e].dst]) {
        ++out.rounding_conflicts;
        continue;
      }
      out.favourite[edges[e].src] = edges[e].dst;
      has_parent[edges[e].dst] = 1;
      ++out.favourite_children;
    }
  }
  out.x.resize(graph.num_tensors());
  out.comm_s.resize(graph.num_tensors());
  for (std::size_t t = 0; t < graph.num_tensors(); ++t) {
    out.x[t] = x[edge_of_tensor[t]];
    out.comm_s[t] = comm[edge_of_tensor[t]];
  }
  out.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace placesim::baechi
