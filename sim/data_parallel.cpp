#include "sim/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <stdexcept>

#include "sim/errors.h"
#include "sim/units.h"

namespace placesim {

OptionSchema<DataParallelConfig> data_parallel_schema() {
  OptionSchema<DataParallelConfig> s;
  s.count("replicas", &DataParallelConfig::replicas,
          "copies of the placed graph, each on GPUs / replicas consecutive GPUs (required)", 1, 1 << 16, "4");
  s.choice("algorithm", &DataParallelConfig::algorithm,
           std::span<const EnumName<CollectiveAlgorithm>>(kCollectiveAlgorithmNames),
           "all-reduce algorithm of the gradients across replicas", "halving-doubling");
  s.count("chunks", &DataParallelConfig::chunks, "pieces per message of each all-reduce, pipelined", 1, 1 << 16, "4");
  s.add({"bucket_bytes", "bytes",
         "gradients of a communicator reduced together until a bucket holds this much (PyTorch DDP's bucket_cap_mb); "
         "0: one all-reduce per gradient",
         default_text_bytes(DataParallelConfig{}.bucket_bytes), {}, "0"},
        [](const YamlFields& f, std::string_view k, DataParallelConfig& c) {
          const double v = f.string(k) == "0" ? 0.0 : f.bytes_or(k, -1);
          if (!(v >= 0) || !std::isfinite(v))
            throw InputError(f.file(), f.field(k), "expected 0 or a size such as 25MiB");
          c.bucket_bytes = v;
        });
  s.check([](const YamlFields& f, DataParallelConfig&) {
    if (!f.has("replicas")) throw InputError(f.file(), f.field("replicas"), "expected the number of replicas, e.g. replicas: 4");
  });
  return s;
}

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

std::string data_parallel_problem(const Graph& graph, const Cluster& cluster, const DataParallelConfig& config) {
  const int n = cluster.num_devices();
  if (config.replicas < 1 || n % config.replicas != 0)
    return fmt::format("{} replicas do not divide the cluster's {} GPUs into equal blocks", config.replicas, n);
  if (config.replicas == 1) return "";
  const bool any = std::any_of(graph.tensors().begin(), graph.tensors().end(), [](const Tensor& t) { return t.gradient; });
  if (!any)
    return "the graph marks no parameter gradient to reduce (tensors with gradient: true): QuickP's TensorFlow graphs, "
           "the model zoo, ONNX models, the builtin synthetic graph and placesim JSON that marks them have them; "
           "msr-fiddle graphs do not";
  const int k = n / config.replicas;
  for (DeviceId g = 0; g < k; ++g)
    if (std::string why = collective_problem(gradient_all_reduce(config, k, g, 1.0), cluster); !why.empty())
      return fmt::format("the gradient all-reduce of GPU {} and its copies: {}", g, why);
  return "";
}

DataParallelGraph replicate_data_parallel(const Graph& graph, std::span<const DeviceId> placement,
                                          const Cluster& cluster, const DataParallelConfig& config) {
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
  // several optimizer operators).
  std::vector<double> gradient_of(static_cast<std::size_t>(num), 0.0);
  for (const Tensor& t : graph.tensors())
    if (t.gradient) gradient_of[t.src] = std::max(gradient_of[t.src], t.bytes);
  // Buckets per communicator (replica 0's GPU), in the list scheduler's order of the producers.
  std::vector<std::vector<std::vector<OpId>>> buckets(static_cast<std::size_t>(k));
  std::vector<double> filled(static_cast<std::size_t>(k), 0.0);
  for (OpId u : rank_priority_order(graph, computation_rank(graph))) {
    const double bytes = gradient_of[u];
    if (bytes <= 0 || d == 1) continue;
    ++out.gradients;
    out.gradient_bytes += bytes;
    auto& mine = buckets[placement[u]];
    double& full = filled[placement[u]];
    if (mine.empty() || full >= config.bucket_bytes) {
      mine.emplace_back();
      full = 0;
    }
    mine.back().push_back(u);
    full += bytes;
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
      tail = append_collective(eg, gradient_all_reduce(config, k, g, bytes), cluster, name, ready);
      ++out.all_reduces;
      for (OpId u : bucket)
        for (int r = 0; r < d; ++r) reduced[copy(r, u)] = tail[r];
    }
  }
  for (const Tensor& t : graph.tensors())
    for (int r = 0; r < d; ++r) {
      const OpId from = t.gradient && reduced[copy(r, t.src)] >= 0 ? reduced[copy(r, t.src)] : copy(r, t.src);
      eg.graph.add_tensor(from, copy(r, t.dst), t.bytes, t.gradient);
    }
  eg.graph.finalize(fmt::format("the data-parallel iteration ({} replicas)", d));
  return out;
}

}  // namespace placesim
