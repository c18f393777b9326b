#pragma once
// Graph partitioning with METIS (Karypis & Kumar), the classic placement baseline: cut the graph
// into k = #GPUs parts of balanced compute that cut as few tensor bytes as possible, then map the
// parts onto the GPUs so that the parts that talk most ride the fastest links.
// (The file is not called metis.h so that it can never shadow the library's <metis.h>.)
//
// How the graph becomes a METIS graph (METIS wants an undirected CSR graph of 32-bit integers,
// without self-loops or duplicate edges):
//  * Colocation classes are contracted first: every class is one METIS vertex carrying the summed
//    weights of its members; the class's operators then all take that vertex's part.
//  * Vertex weight = compute time (and, with balance_memory, a second constraint = memory bytes).
//    Each constraint is scaled by one factor so that the heaviest vertex gets 10^6, unless the
//    total would then exceed 10^9 (METIS sums weights in idx_t, 32-bit here), in which case the
//    total gets 10^9. Results are rounded and clamped to >= 1, so zero-time operators weigh 1
//    (negligible, and it keeps METIS away from all-zero constraints).
//  * Edge weight = tensor bytes. Tensors in both directions and parallel tensors between the same
//    two vertices are summed into one undirected edge; edges inside a vertex (a contracted class)
//    and zero-byte (control) tensors are dropped, since cutting them costs nothing. Weights are
//    scaled like vertex weights (heaviest edge 10^6, or the doubled total capped at 10^9) and
//    clamped to >= 1.
//
// Parts to GPUs: the directed part-to-part traffic is summed per part pair (bytes and tensor
// count); a mapping costs the summed lone transfer time of the cut tensors,
//   sum over parts p != q of tensors[p][q] * latency(g(p), g(q)) + bytes[p][q] / bandwidth(g(p), g(q)).
// For k <= 8 every permutation is tried (8! = 40,320) and the cheapest kept (the first in
// lexicographic order on ties, so the identity wins when links are all equal). For k > 8 the
// mapping follows the topology's bandwidth levels: GPU pairs are classed by their view (the worse
// direction's bandwidth and latency; a fat-tree's server, edge, pod and core pairs differ in
// latency if not in bandwidth), and the GPUs form a tree whose root holds them all and whose
// children at each node are the groups joined by strictly better classes (servers, then leaves or
// pods, ...). Top-down, each node's parts are split into groups of its children's sizes: a group
// grows from the unassigned part with the most traffic by taking the part most connected to it,
// then parts in different groups are swapped while that lowers the traffic crossing the node's
// links (at most 8 passes). That costs O(levels x k^2) for the pair classes plus, per tree node
// with n parts and m children, O(n x (n + m)) and the refinement's O(n x (m + n / m)) per pass,
// and never builds a k x k matrix: 4,096 GPUs map in well under a second (bench/bench_metis.cpp).
// The identity is kept when it is cheaper, and up to 32 GPUs pairwise swaps (first improvement)
// then polish the result as before.
//
// A vertex with more compute than its share (the compute not yet given a part, over the parts
// left) cannot be balanced: it gets a part of its own, heaviest first, and METIS splits the rest
// among the other parts. (Given such a vertex, METIS's recursive bisection asks a one-vertex side
// for several parts, prints "too many parts" on standard output and balances the rest badly.)
//
// k = 1 puts everything on GPU 0; with no more METIS vertices than GPUs each vertex gets its own
// part. GPUs are treated as equal (homogeneous compute and memory), as in the papers.
#include <span>
#include <vector>

#include "placement/framework/strategy.h"

namespace placesim {

struct MetisConfig {
  enum class Method { Kway, Recursive, Best };
  Method method = Method::Best;  // Best: run k-way and recursive bisection, keep the smaller cut
  int ufactor = 30;              // allowed imbalance: the heaviest part may weigh (1 + ufactor/1000) x average
  int seed = 1;                  // METIS_OPTION_SEED
  int ncuts = 1;                 // METIS_OPTION_NCUTS: partitionings tried, the best kept
  bool balance_memory = false;   // also balance memory bytes (a second METIS constraint, ncon = 2)
  bool operator==(const MetisConfig&) const = default;
};

inline constexpr EnumName<MetisConfig::Method> kMetisMethodNames[] = {
    {MetisConfig::Method::Kway, "kway"},
    {MetisConfig::Method::Recursive, "recursive"},
    {MetisConfig::Method::Best, "best"},
};

// Directed traffic between k parts, sparse: each flow sums the tensors from part src to part dst
// (bytes) and counts them (tensors: each pays the link latency once).
struct PartTraffic {
  struct Flow {
    int src = 0, dst = 0;
    double bytes = 0, tensors = 0;
  };
  int parts = 0;
  std::vector<Flow> flows;
  // Adds `count` tensors of `bytes` in all from src to dst; self and empty flows are dropped.
  void add(int src, int dst, double bytes, double count = 1);
  // Sorts the flows by (src, dst) and sums duplicates.
  void merge();
};

// The summed lone transfer time of the traffic when part p runs on device_of_part[p].
double mapping_cost(const PartTraffic& traffic, std::span<const DeviceId> device_of_part, const Cluster& cluster);

// A GPU for each part (a permutation of 0..k-1; traffic.parts must equal the number of GPUs)
// minimising mapping_cost: exhaustive for k <= 8, hierarchical by bandwidth level above.
std::vector<DeviceId> map_parts_to_devices(const PartTraffic& traffic, const Cluster& cluster);

class MetisStrategy : public Strategy {
 public:
  explicit MetisStrategy(MetisConfig config = {}) : Strategy("metis"), config_(config) {}
  const MetisConfig& config() const { return config_; }

 private:
  // report: method (the one whose cut was kept), metis_vertices, metis_edge_cut (scaled units),
  // edge_cut_bytes (cross-GPU tensor bytes), gpu_compute_s and gpu_memory_bytes (per GPU),
  // compute_imbalance (max / mean), mapping_transfer_s (the mapping's cost).
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  MetisConfig config_;
};

OptionSchema<MetisConfig> metis_schema();
StrategyInfo metis_strategy_info();

}  // namespace placesim
