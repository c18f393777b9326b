#pragma once
// The computation graph of one training iteration: operators (compute time, memory) and the
// tensors that flow between them. Units: seconds and bytes.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace placesim {

using OpId = std::int32_t;
using EdgeId = std::int32_t;
using DeviceId = std::int32_t;

struct Operator {
  std::string name;
  std::string type;
  double compute_s = 0;      // time to run on one GPU
  double memory_bytes = 0;   // memory it keeps resident on its GPU
  std::int32_t colocation_class = -1;  // operators sharing a class >= 0 must share a device
  // A step of a collective (sim/collectives/collectives.h): it takes no GPU time and does not wait for its
  // GPU, as NCCL runs on a stream of its own; every engine completes it the moment its inputs
  // have arrived, and it is in no GPU's order. compute_s must be 0.
  bool communication = false;
  // Floating-point operations of one run (a multiply-add counts 2), where the source knows them
  // (the model zoo, ONNX imports; 0: unknown). Chakra traces carry them as num_ops for
  // ASTRA-sim's roofline; placesim's engines use compute_s alone.
  double flops = 0;
  // What the kernel's algorithm computes where it does less than the direct count (Winograd's
  // 3x3 convolutions: flops / 2.25), which the roofline timed; 0: flops itself.
  double algorithm_flops = 0;
};

struct Tensor {
  OpId src = 0;
  OpId dst = 0;
  double bytes = 0;  // zero-byte tensors are control dependencies: they never cost transfer time
  // A parameter's gradient on its way to the optimizer's update: data parallelism
  // (sim/plans/data_parallel.h) all-reduces it across replicas before it is sent. Loaders set it where
  // the format says (docs/graph-format.md).
  bool gradient = false;
  // How many times the transfer pays its path's latency (>= 1). A condensed ring phase
  // (sim/collectives/collectives.h) sends all its steps' bytes as one flow that stands for that many
  // messages one after another on the connection.
  std::int32_t latencies = 1;
  // Seconds the transfer waits, on top of its path's latencies, before its bytes move: what the
  // communication library spends per message (NCCL's per-hop protocol latency, a collective's
  // launch; sim/collectives/nccl.h). Paid once, only by a transfer between two GPUs with bytes.
  double overhead_s = 0;
  // A folded graph's transfer into another copy (sim/core/folding.h): the GPU its bytes go to,
  // where `dst` is that GPU's representative's operator (a ring's last rank sending to the next
  // replica's first, which the representative's own first rank stands for). -1: dst's GPU.
  DeviceId route_to = -1;
};

class Graph {
 public:
  Graph() = default;
  // A copy views its own operators' names (by_name_); a move keeps the names where they are.
  Graph(const Graph& other);
  Graph& operator=(const Graph& other);
  Graph(Graph&&) noexcept = default;
  Graph& operator=(Graph&&) noexcept = default;

  OpId add_operator(Operator op);
  EdgeId add_tensor(OpId src, OpId dst, double bytes, bool gradient = false, std::int32_t latencies = 1,
                    double overhead_s = 0, DeviceId route_to = -1);

  // Checks the graph and builds adjacency and a topological order. Throws InputError naming
  // `source` (a file name, or a description) on duplicate names, bad values, dangling edges
  // and cycles (naming operators on the cycle). Must be called before any query below.
  // `index_names` false: no index of the names (find() scans) and no check that they are unique,
  // for graphs whose names are made unique by construction (a compiled plan): the index cost a
  // plan of 6,000 GPUs about a tenth of its memory.
  void finalize(const std::string& source = "", bool index_names = true);

  std::size_t num_operators() const { return ops_.size(); }
  std::size_t num_tensors() const { return tensors_.size(); }
  const Operator& op(OpId id) const { return ops_[id]; }
  std::span<const Operator> operators() const { return ops_; }
  const Tensor& tensor(EdgeId id) const { return tensors_[id]; }
  std::span<const Tensor> tensors() const { return tensors_; }

  std::span<const EdgeId> out_edges(OpId id) const {
    return {out_edges_.data() + out_offsets_[id], out_edges_.data() + out_offsets_[id + 1]};
  }
  std::span<const EdgeId> in_edges(OpId id) const {
    return {in_edges_.data() + in_offsets_[id], in_edges_.data() + in_offsets_[id + 1]};
  }
  std::span<const OpId> topological_order() const { return topo_; }
  std::optional<OpId> find(std::string_view name) const;

  // A compute operator's time changed in place (variability's perturbed copies): seconds >= 0,
  // not a communication step; the graph's shape is untouched.
  void set_compute_s(OpId id, double seconds);

  double total_compute() const;
  double total_memory() const;
  double total_tensor_bytes() const;
  int num_colocation_classes() const { return num_classes_; }

 private:
  std::vector<Operator> ops_;
  std::vector<Tensor> tensors_;
  std::vector<std::int32_t> out_offsets_, in_offsets_;
  std::vector<EdgeId> out_edges_, in_edges_;
  std::vector<OpId> topo_;
  // Views of ops_[i].name (finalize builds it; add_operator drops it): a copy of every name took a
  // quarter of a 6,000-GPU plan's memory.
  std::unordered_map<std::string_view, OpId> by_name_;
  bool names_indexed_ = true;  // finalize's index_names
  int num_classes_ = 0;
  bool finalized_ = false;
};

// Per operator, 1 for a communication step (Operator::communication); empty when the graph has
// none (so an engine's hot loop can test `empty()` first).
std::vector<std::uint8_t> communication_steps(const Graph& g);

// Longest path of compute times (no communication): a lower bound on any placement's latency.
double critical_path(const Graph& g);

// Per operator: own compute plus the largest rank among successors (the list scheduler's
// priority; QuickP/HeteroG "computation rank").
std::vector<double> computation_rank(const Graph& g);

// The list scheduler's priority order: operators by decreasing `rank`, ties to the earlier one in
// topological order (deterministic, and a zero-time producer runs before its zero-time consumer).
// The evaluator and the flow engine share it, so their schedules agree.
std::vector<OpId> rank_priority_order(const Graph& g, std::span<const double> rank);

}  // namespace placesim
