// Celeritas's standard evaluation, step one (§4.2.1): per-operator linear regression of memory on
// the batch size, fitted on small batches, to predict a batch too large for one GPU.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <unordered_map>

#include "placement/strategies/celeritas/celeritas.h"
#include "sim/core/errors.h"

namespace placesim::celeritas {

std::vector<std::int64_t> default_small_batches(std::int64_t batch) {
  std::vector<std::int64_t> small = {std::max<std::int64_t>(1, batch / 32), std::max<std::int64_t>(2, batch / 16),
                                     std::max<std::int64_t>(3, batch / 8)};
  for (std::size_t k = 1; k < small.size(); ++k) small[k] = std::max(small[k], small[k - 1] + 1);
  return small;
}

MemoryRegression fit_memory_regression(const models::ModelConfig& config, std::span<const std::int64_t> small_batches) {
  const std::set<std::int64_t> distinct(small_batches.begin(), small_batches.end());
  if (distinct.size() < 2 || *distinct.begin() < 1)
    throw InputError("", "graph.batch",
                     fmt::format("memory regression needs at least two distinct small batches >= 1, got {}",
                                 fmt::join(small_batches, ", ")));
  MemoryRegression r;
  r.batches.assign(distinct.begin(), distinct.end());
  // samples[name] = memory at each batch, in r.batches order; names missing at any batch are dropped.
  std::unordered_map<std::string, std::vector<double>> samples;
  std::vector<std::string> order;  // names in the first graph's operator order
  for (std::size_t k = 0; k < r.batches.size(); ++k) {
    models::ModelConfig at = config;
    at.batch = r.batches[k];
    const Graph g = models::zoo_graph(at);
    for (const Operator& op : g.operators()) {
      if (k == 0) {
        samples[op.name].push_back(op.memory_bytes);
        order.push_back(op.name);
      } else if (auto it = samples.find(op.name); it != samples.end() && it->second.size() == k) {
        it->second.push_back(op.memory_bytes);
      }
    }
  }
  const double count = static_cast<double>(r.batches.size());
  double mean_b = 0;
  for (std::int64_t b : r.batches) mean_b += static_cast<double>(b) / count;
  double var_b = 0;
  for (std::int64_t b : r.batches) var_b += (b - mean_b) * (b - mean_b);
  for (const std::string& name : order) {
    const std::vector<double>& m = samples[name];
    if (m.size() != r.batches.size()) continue;
    double mean_m = 0;
    for (double x : m) mean_m += x / count;
    double cov = 0;
    for (std::size_t k = 0; k < m.size(); ++k) cov += (r.batches[k] - mean_b) * (m[k] - mean_m);
    const double slope = cov / var_b;
    r.names.push_back(name);
    r.slope_bytes.push_back(slope);
    r.intercept_bytes.push_back(mean_m - slope * mean_b);
  }
  return r;
}

EstimatedGraph with_estimated_memory(const Graph& graph, const MemoryRegression& regression, double batch) {
  std::unordered_map<std::string, std::size_t> index;
  for (std::size_t k = 0; k < regression.names.size(); ++k) index.emplace(regression.names[k], k);
  EstimatedGraph out;
  for (const Operator& op : graph.operators()) {
    Operator copy = op;
    if (auto it = index.find(op.name); it != index.end()) {
      copy.memory_bytes = std::max(0.0, regression.predict(it->second, batch));  // a fit can dip below 0
      ++out.predicted;
    }
    out.graph.add_operator(std::move(copy));
  }
  for (const Tensor& t : graph.tensors()) out.graph.add_tensor(t.src, t.dst, t.bytes);
  out.graph.finalize("graph with regression-estimated memory");
  return out;
}

}  // namespace placesim::celeritas
