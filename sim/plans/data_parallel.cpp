#include "sim/plans/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

std::vector<DeviceId> first_replica_gpus(const Cluster& cluster, int replicas) {
  std::vector<DeviceId> gpus(static_cast<std::size_t>(cluster.num_devices() / replicas));
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

namespace {

// The all-reduce of the copies of replica 0's GPU `gpu`.
CollectiveSpec gradient_all_reduce(const DataParallelConfig& config, int gpus_per_replica, DeviceId gpu, double bytes) {
  CollectiveSpec s;
  s.op = CollectiveOp::AllReduce;
  s.algorithm = config.algorithm;
  s.chunks = config.chunks;
  s.bytes = bytes;
  for (int r = 0; r < config.replicas; ++r) s.group.push_back(r * gpus_per_replica + gpu);
  return s;
}

}  // namespace

std::string data_parallel_cluster_problem(const Cluster& cluster, const DataParallelConfig& config) {
  const int n = cluster.num_devices();
  if (config.replicas < 1 || n % config.replicas != 0)
    return fmt::format("{} replicas do not divide the cluster's {} GPUs into equal blocks", config.replicas, n);
  if (config.replicas == 1) return "";
  const int k = n / config.replicas;
  for (DeviceId g = 0; g < k; ++g)
    if (std::string why = collective_problem(gradient_all_reduce(config, k, g, 1.0), cluster); !why.empty())
      return fmt::format("the gradient all-reduce of GPU {} and its copies: {}", g, why);
  return "";
}

std::string data_parallel_problem(const Graph& graph, const Cluster& cluster, const DataParallelConfig& config) {
  if (std::string why = data_parallel_cluster_problem(cluster, config); !why.empty()) return why;
  if (config.replicas == 1) return "";
  const bool any = std::any_of(graph.tensors().begin(), graph.tensors().end(), [](const Tensor& t) { return t.gradient; });
  if (!any)
    return "the graph marks no parameter gradient to reduce (tensors with gradient: true): QuickP's TensorFlow graphs, "
           "the model zoo, ONNX models, the builtin synthetic graph and placesim JSON that marks them have them; "
           "msr-fiddle graphs do not";
  return "";
}

std::string data_parallel_layout_note(const Cluster& cluster, int replicas) {
  const int k = cluster.num_devices() / replicas;
  for (int r = 1; r < replicas; ++r)
    for (DeviceId a = 0; a < k; ++a)
      for (DeviceId b = a + 1; b < k; ++b)
        if ((cluster.device(a).server == cluster.device(b).server) !=
            (cluster.device(r * k + a).server == cluster.device(r * k + b).server))
          return fmt::format("replica {} does not have replica 0's layout: GPUs {} and {} share a server in one and not "
                             "in the other ({} GPUs per replica, not whole servers), so its copies of the placement "
                             "cross the network where the strategy's did not, or the reverse",
                             r, a, b, k);
  return "";
}

DataParallelGraph replicate_data_parallel(const Graph& graph, std::span<const DeviceId> placement,
                                          const Cluster& cluster, const DataParallelConfig& config,
                                          CollectiveDetail detail) {
  if (const std::string why = data_parallel_problem(graph, cluster, config); !why.empty())
    throw InputError("data_parallel", "replicas", why);
  const int d = config.replicas, k = cluster.num_devices() / d;
  const auto num = static_cast<OpId>(graph.num_operators());
  if (placement.size() != graph.num_operators())
    throw std::invalid_argument("replicate_data_parallel: the placement is not the graph's");
  for (OpId u = 0; u < num; ++u)
    if (placement[u] < 0 || placement[u] >= k)
      throw std::invalid_argument(fmt::format("replicate_data_parallel: operator '{}' is on GPU {}, outside replica 0 "
                                              "(GPUs 0 to {})", graph.op(u).name, placement[u], k - 1));
  DataParallelGraph out;
  out.gpus_per_replica = k;
  ExecutionGraph& eg = out.graph;
  auto copy = [num](int r, OpId u) { return static_cast<OpId>(r * num + u); };
  for (int r = 0; r < d; ++r)
    for (OpId u = 0; u < num; ++u) {
      Operator op = graph.op(u);
      op.name = fmt::format("r{}/{}", r, op.name);
      eg.add(std::move(op), r * k + placement[u]);
    }

  // A producer's gradient: the largest of its gradient tensors (TensorFlow reads one gradient into
  // several optimizer operators; a fused kernel producing two parameters' gradients, LayerNorm's
  // gamma and beta, is taken at the larger: beta's h values are left out).
  std::vector<double> gradient_of(static_cast<std::size_t>(num), 0.0);
  for (const Tensor& t : graph.tensors())
    if (t.gradient) gradient_of[t.src] = std::max(gradient_of[t.src], t.bytes);
  // Buckets per communicator (replica 0's GPU), in the list scheduler's order of the producers.
  // A bucket's all-reduce waits for all its gradients, so a producer that depends on what one of
  // them feeds (an optimizer update upstream of it) starts a new bucket: joining would be a cycle.
  std::vector<std::size_t> position(static_cast<std::size_t>(num));
  for (std::size_t i = 0; i < graph.topological_order().size(); ++i) position[graph.topological_order()[i]] = i;
  std::vector<std::vector<std::vector<OpId>>> buckets(static_cast<std::size_t>(k));
  std::vector<double> filled(static_cast<std::size_t>(k), 0.0);
  std::vector<std::vector<OpId>> fed(static_cast<std::size_t>(k));  // what the open bucket's gradients feed
  std::vector<char> is_fed(static_cast<std::size_t>(num), 0), seen(static_cast<std::size_t>(num), 0);
  auto depends_on_fed = [&](OpId u, const std::vector<OpId>& consumers) {
    if (consumers.empty()) return false;
    std::size_t earliest = position[u];
    for (OpId c : consumers) {
      is_fed[c] = 1;
      earliest = std::min(earliest, position[c]);
    }
    // u's ancestors back to the earliest consumer in topological order (earlier ones cannot be
    // reached from any consumer).
    std::vector<OpId> stack{u}, visited{u};
    seen[u] = 1;
    bool found = is_fed[u] != 0;
    while (!stack.empty() && !found) {
      const OpId x = stack.back();
      stack.pop_back();
      for (EdgeId e : graph.in_edges(x)) {
        const OpId y = graph.tensor(e).src;
        if (seen[y] || position[y] < earliest) continue;
        if (is_fed[y]) found = true;
        seen[y] = 1;
        visited.push_back(y);
        stack.push_back(y);
      }
    }
    for (OpId x : visited) seen[x] = 0;
    for (OpId c : consumers) is_fed[c] = 0;
    return found;
  };
  for (OpId u : rank_priority_order(graph, computation_rank(graph))) {
    const double bytes = gradient_of[u];
    if (bytes <= 0) continue;
    ++out.gradients;
    out.gradient_bytes += bytes;
    if (d == 1) continue;
    const DeviceId g = placement[u];
    auto& mine = buckets[g];
    if (mine.empty() || filled[g] >= config.bucket_bytes || depends_on_fed(u, fed[g])) {
      mine.emplace_back();
      filled[g] = 0;
      fed[g].clear();
    }
    mine.back().push_back(u);
    filled[g] += bytes;
    for (EdgeId e : graph.out_edges(u))
      if (graph.tensor(e).gradient) fed[g].push_back(graph.tensor(e).dst);
  }
  // Per copy of an operator: the step at which its gradient is reduced (-1: not a producer). Its
  // gradient tensors leave from there; its other outputs (a fused kernel's input gradient) do not
  // wait.
  std::vector<OpId> reduced(static_cast<std::size_t>(num) * d, -1);
  for (DeviceId g = 0; g < k; ++g) {
    std::vector<OpId> tail;  // the communicator's previous all-reduce, per replica
    for (std::size_t b = 0; b < buckets[g].size(); ++b) {
      const std::vector<OpId>& bucket = buckets[g][b];
      const std::string name = fmt::format("dp.gpu{}.bucket{}", g, b);
      std::vector<OpId> ready(static_cast<std::size_t>(d));
      double bytes = 0;
      for (OpId u : bucket) bytes += gradient_of[u];
      for (int r = 0; r < d; ++r) {
        ready[r] = eg.add_communication_step(fmt::format("{}.r{}.ready", name, r), r * k + g);
        for (OpId u : bucket) eg.depend(copy(r, u), ready[r]);
        if (!tail.empty()) eg.depend(tail[r], ready[r]);
      }
      CollectiveSpec spec = gradient_all_reduce(config, k, g, bytes);
      spec.detail = detail;
      tail = append_collective(eg, spec, cluster, name, ready);
      ++out.all_reduces;
      for (OpId u : bucket)
        for (int r = 0; r < d; ++r) reduced[copy(r, u)] = tail[r];
    }
  }
  for (const Tensor& t : graph.tensors())
    for (int r = 0; r < d; ++r) {
      const OpId from = t.gradient && reduced[copy(r, t.src)] >= 0 ? reduced[copy(r, t.src)] : copy(r, t.src);
      eg.graph.add_tensor(from, copy(r, t.dst), t.bytes, t.gradient, t.latencies, t.overhead_s);
    }
  eg.graph.finalize(fmt::format("the data-parallel iteration ({} replicas)", d));
  return out;
}

}  // namespace placesim
