// The SCT favourite-child linear program (Baechi's FavoriteChildLPSolver), solved with COIN-OR CLP.
#include <ClpSimplex.hpp>
#include <CoinPackedMatrix.hpp>
#include <algorithm>
#include <chrono>
#include <numeric>
#include <span>

#include "placement/strategies/baechi/baechi.h"
#include "placement/framework/lp_deadline.h"

namespace placesim::baechi {

namespace {

struct MergedEdge {
  OpId src, dst;
  double bytes;
};

// Parallel tensors between the same two operators form one edge carrying their summed bytes.
struct MergedEdges {
  std::vector<MergedEdge> edges;    // sorted by (source, destination)
  std::vector<int> edge_of_tensor;  // per tensor
};

MergedEdges merge_parallel_tensors(const Graph& graph) {
  std::vector<EdgeId> by_pair(graph.num_tensors());
  std::iota(by_pair.begin(), by_pair.end(), 0);
  std::sort(by_pair.begin(), by_pair.end(), [&](EdgeId a, EdgeId b) {
    const Tensor &ta = graph.tensor(a), &tb = graph.tensor(b);
    return ta.src != tb.src ? ta.src < tb.src : ta.dst != tb.dst ? ta.dst < tb.dst : a < b;
  });
  MergedEdges merged;
  std::vector<MergedEdge>& edges = merged.edges;
  merged.edge_of_tensor.resize(graph.num_tensors());
  for (EdgeId t : by_pair) {
    const Tensor& tensor = graph.tensor(t);
    if (edges.empty() || edges.back().src != tensor.src || edges.back().dst != tensor.dst)
      edges.push_back({tensor.src, tensor.dst, 0.0});
    edges.back().bytes += tensor.bytes;
    merged.edge_of_tensor[t] = static_cast<int>(edges.size()) - 1;
  }
  return merged;
}

// c_ij per edge: its bytes at the mean pair bandwidth plus the mean pair latency, over the
// ordered GPU pairs (0 with a single GPU, or no bytes).
std::vector<double> mean_comm_times(const Cluster& cluster, std::span<const MergedEdge> edges) {
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
  std::vector<double> comm(edges.size(), 0.0);
  for (std::size_t e = 0; e < edges.size(); ++e)
    if (pairs > 0 && edges[e].bytes > 0) comm[e] = edges[e].bytes / mean_bandwidth + mean_latency;
  return comm;
}

// p_i per operator: its mean time over the GPUs (Cluster::compute_time).
std::vector<double> mean_compute_times(const Graph& graph, const Cluster& cluster) {
  double mean_inv_speed = 0;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) mean_inv_speed += cluster.compute_time(d, 1.0);
  mean_inv_speed = cluster.num_devices() > 0 ? mean_inv_speed / cluster.num_devices() : 1.0;
  std::vector<double> p(graph.num_operators());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = graph.op(static_cast<OpId>(i)).compute_s * mean_inv_speed;
  return p;
}

// Times enter the LP in units of the mean non-zero cost, so that CLP's absolute tolerances
// (1e-7) are small against them whether the graph is profiled in microseconds or seconds.
double time_unit(std::span<const double> p, std::span<const double> comm) {
  double cost_sum = 0;
  int cost_count = 0;
  for (double t : p)
    if (t > 0) cost_sum += t, ++cost_count;
  for (double c : comm)
    if (c > 0) cost_sum += c, ++cost_count;
  return cost_count > 0 ? cost_sum / cost_count : 1.0;
}

// The LP's constraint matrix as (row, column, value) triplets, and each row's bounds.
struct LpRows {
  std::vector<int> rows, cols;
  std::vector<double> values, lo, hi;
  int count() const { return static_cast<int>(lo.size()); }
  void add(int row, int col, double v) {
    rows.push_back(row);
    cols.push_back(col);
    values.push_back(v);
  }
};

// The rows of baechi.h's LP over columns x_e (m), s_i (n), w.
LpRows sct_rows(std::span<const MergedEdge> edges, std::span<const double> comm, std::span<const double> p, double unit) {
  const auto n = static_cast<int>(p.size()), m = static_cast<int>(edges.size());
  const int col_s = m, col_w = m + n;
  const double inf = COIN_DBL_MAX;
  LpRows lp;
  for (int e = 0; e < m; ++e) {  // s_i - s_j + c_ij x_ij <= -p_i
    const int r = lp.count();
    lp.add(r, col_s + edges[e].src, 1.0);
    lp.add(r, col_s + edges[e].dst, -1.0);
    if (comm[e] > 0) lp.add(r, e, comm[e] / unit);
    lp.lo.push_back(-inf);
    lp.hi.push_back(-p[edges[e].src] / unit);
  }
  for (OpId i = 0; i < n; ++i) {  // s_i - w <= -p_i
    const int r = lp.count();
    lp.add(r, col_s + i, 1.0);
    lp.add(r, col_w, -1.0);
    lp.lo.push_back(-inf);
    lp.hi.push_back(-p[i] / unit);
  }
  // At most one favourite child per operator and one favourite parent per operator: the edges
  // are sorted by source, so out-edges are contiguous; in-edges are gathered per destination.
  std::vector<std::vector<int>> in_of(n);
  for (int e = 0; e < m; ++e) in_of[edges[e].dst].push_back(e);
  for (int first = 0; first < m;) {
    int last = first;
    while (last < m && edges[last].src == edges[first].src) ++last;
    if (last - first >= 2) {
      const int r = lp.count();
      for (int e = first; e < last; ++e) lp.add(r, e, 1.0);
      lp.lo.push_back(last - first - 1);
      lp.hi.push_back(inf);
    }
    first = last;
  }
  for (OpId j = 0; j < n; ++j)
    if (in_of[j].size() >= 2) {
      const int r = lp.count();
      for (int e : in_of[j]) lp.add(r, e, 1.0);
      lp.lo.push_back(static_cast<double>(in_of[j].size()) - 1);
      lp.hi.push_back(inf);
    }
  return lp;
}

// Rounding: accept favourite edges greedily by increasing x, then larger c.
void choose_favourites(SctLp& out, std::span<const MergedEdge> edges, std::span<const double> comm,
                       std::span<const double> x, double threshold) {
  std::vector<int> chosen;
  for (std::size_t e = 0; e < edges.size(); ++e)
    if (x[e] < threshold) chosen.push_back(static_cast<int>(e));
  std::sort(chosen.begin(), chosen.end(), [&](int a, int b) {
    if (x[a] != x[b]) return x[a] < x[b];
    if (comm[a] != comm[b]) return comm[a] > comm[b];
    return a < b;  // edges are sorted by (source, destination)
  });
  std::vector<std::uint8_t> has_parent(out.favourite.size(), 0);
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

}  // namespace

SctLp solve_sct_lp(const Graph& graph, const Cluster& cluster, double threshold,
                   std::chrono::steady_clock::time_point stop) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto n = static_cast<int>(graph.num_operators());
  SctLp out;
  out.favourite.assign(n, -1);

  const MergedEdges merged = merge_parallel_tensors(graph);
  const std::vector<MergedEdge>& edges = merged.edges;
  const auto m = static_cast<int>(edges.size());
  const std::vector<double> comm = mean_comm_times(cluster, edges);
  const std::vector<double> p = mean_compute_times(graph, cluster);
  const double unit = time_unit(p, comm);

  // Columns: x_e (m), s_i (n), w. Rows as in baechi.h.
  const int col_w = m + n;
  out.columns = m + n + 1;
  LpRows lp = sct_rows(edges, comm, p, unit);
  out.rows = lp.count();
  const double inf = COIN_DBL_MAX;
  std::vector<double> col_lo(out.columns, 0.0), col_hi(out.columns, inf), objective(out.columns, 0.0);
  std::fill(col_hi.begin(), col_hi.begin() + m, 1.0);
  objective[col_w] = 1.0;
  CoinPackedMatrix matrix(true, lp.rows.data(), lp.cols.data(), lp.values.data(), static_cast<CoinBigIndex>(lp.values.size()));
  matrix.setDimensions(out.rows, out.columns);

  ClpSimplex model;
  model.setLogLevel(0);
  model.loadProblem(matrix, col_lo.data(), col_hi.data(), objective.data(), lp.lo.data(), lp.hi.data());
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
    choose_favourites(out, edges, comm, x, threshold);
  }
  out.x.resize(graph.num_tensors());
  out.comm_s.resize(graph.num_tensors());
  for (std::size_t t = 0; t < graph.num_tensors(); ++t) {
    out.x[t] = x[merged.edge_of_tensor[t]];
    out.comm_s[t] = comm[merged.edge_of_tensor[t]];
  }
  out.solve_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace placesim::baechi
