#pragma once
// Data parallelism over an operator placement: a strategy places the graph on one
// replica's GPUs, and the iteration runs `replicas` copies of it, each on its own block of GPUs,
// with the gradients of the parameters all-reduced across the copies, so placement strategies are
// measured in the setting they are used in.
//
// - Replica r runs on GPUs [r k, (r + 1) k), k = GPUs / replicas: the cluster's GPUs in order, so
//   with k a multiple of the server size each replica is whole servers. Operator u of replica r
//   runs on GPU r k + placement[u].
// - A tensor marked `gradient` (sim/core/graph.h: the loaders mark a parameter's gradient on its way to
//   the optimizer) is all-reduced over its producer's copies before it is sent: the producer's
//   gradient is the largest of its gradient tensors, reduced once, and those tensors leave its
//   GPU after the reduction. Its other tensors do not wait.
// - As PyTorch DDP, gradients are reduced in buckets: the gradients of one communicator (the
//   copies of one GPU) in the order the list scheduler runs their producers
//   (rank_priority_order), a bucket closing once it holds `bucket_bytes` (0: one all-reduce per
//   gradient). A bucket's all-reduce starts when its last gradient is there and the
//   communicator's previous all-reduce has ended (NCCL runs a communicator's collectives one
//   after another on its stream); the bucket's consumers wait for it. A producer downstream of
//   what the open bucket's gradients feed starts a new bucket (waiting for it would be a cycle).
// - Every replica holds the whole graph's memory on its GPUs; the gradients' buffers are the
//   graph's (no extra memory for buckets).
#include <span>
#include <string>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "sim/core/graph.h"
#include "sim/core/names.h"

namespace placesim {

struct DataParallelConfig {
  int replicas = 2;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  int chunks = 1;
  double bucket_bytes = 25.0 * 1024 * 1024;  // PyTorch DDP's default bucket_cap_mb
};
// Its keys (`data_parallel:` of a placement strategy): data_parallel_schema, sim/config/plan_options.h.

// The GPUs of replica 0 (the strategy's cluster is the cluster restricted to them).
std::vector<DeviceId> first_replica_gpus(const Cluster& cluster, int replicas);

// Why the replicas cannot run on the cluster ("" when they can): replicas not dividing the GPUs,
// an all-reduce the cluster cannot run (halving-doubling over 3 replicas).
std::string data_parallel_cluster_problem(const Cluster& cluster, const DataParallelConfig& config);
// The same, and a graph with no parameter gradient to reduce.
std::string data_parallel_problem(const Graph& graph, const Cluster& cluster, const DataParallelConfig& config);

// "" when every replica's GPUs are laid out as replica 0's (GPUs a and b share a server in
// replica r exactly when they do in replica 0); else which replica differs, and how: the
// strategy placed replica 0 and the others run its placement over a different topology.
std::string data_parallel_layout_note(const Cluster& cluster, int replicas);

struct DataParallelGraph {
  ExecutionGraph graph;        // finalized
  int gpus_per_replica = 0;
  int gradients = 0;           // operators producing a parameter gradient (counted at 1 replica too)
  int all_reduces = 0;         // buckets, over all communicators
  double gradient_bytes = 0;   // per replica
};

// The iteration with `config.replicas` copies of the placed graph. `placement` maps the graph's
// operators to GPUs of replica 0 (< GPUs / replicas). Throws InputError (source "data_parallel")
// with data_parallel_problem's reason, std::invalid_argument on a placement outside replica 0.
// The all-reduces' ring phases run as `detail` says (sim/collectives/collectives.h).
DataParallelGraph replicate_data_parallel(const Graph& graph, std::span<const DeviceId> placement,
                                          const Cluster& cluster, const DataParallelConfig& config,
                                          CollectiveDetail detail = CollectiveDetail::Messages);

}  // namespace placesim
