#pragma once
// Collectives compiled into point-to-point transfers of the execution graph.
//
// Each algorithm is described once, as the phases it runs (sim/collectives/shape.h,
// sim/collectives/algorithms/); the message graph (append_collective), the lockstep steps
// (sim/collectives/collective_steps.h) and the closed forms below are computed from the phases.
//
// The execution graph every engine runs is a Graph with a placement: operators are compute tasks
// on one GPU, and a tensor between operators on two GPUs is a transfer (a flow in the flow engine
// and SimGrid; latency + bytes / bandwidth in the evaluator). A collective over a group of GPUs
// appends to such a graph one communication step per rank and step (Operator::communication: no
// GPU time, never waiting for the GPU; "rank r has what step s gave it") and one tensor per
// message of the algorithm, so that it runs on every engine, shares
// links with whatever else runs, and can depend on compute (a gradient all-reduce after the
// backward pass) and be depended on.
//
// Two rules shape the operators, the same in every algorithm:
//  - A message splits into `chunks` pieces of equal size, and the pieces of one connection (an
//    ordered pair of ranks, in one collective) go one at a time: a piece is sent once the previous
//    piece on that connection has arrived (a zero-byte edge from its receiver: free in every
//    engine). So chunks cost a latency each, and pay off where a piece can travel on before the
//    next has arrived: trees, chains (broadcast, reduce) and the pipelined ring.
//  - Ring and tree algorithms follow each chunk through the steps (chunk k of step s waits for
//    chunk k of step s - 1 only); halving-doubling, direct and each phase of hierarchical end a
//    step when every chunk of it has arrived.
// Reductions take no time (compute and communication interference is not modelled).
//
// Sizes follow nccl-tests: `bytes` is the buffer of one rank -- all-reduce, broadcast and reduce:
// the buffer; reduce-scatter: the input (each rank keeps bytes / n); all-gather: the output (each
// rank contributes bytes / n); all-to-all: what each rank sends in all (bytes / n to each rank,
// itself included).
//
// The closed forms are the contention-free view: every transfer takes alpha + bytes / B, alone
// on its links (the evaluator's model), with alpha and B those of the slowest pair the algorithm
// sends between (ring: a rank and its successor; tree: parent and child; direct: every pair;
// halving-doubling: each step's partners, step by step; hierarchical and multi-level: each
// level's ring neighbours, level by level). On a fabric where
// every rank sends and receives at most one message at a time (ring, halving-doubling,
// broadcast and reduce by ring) and nothing else shares links, the flow engine and SimGrid
// agree with them; otherwise they show the sharing the closed form leaves out.
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/execution_graph.h"
#include "sim/core/graph.h"
#include "sim/core/names.h"
#include "sim/core/nccl_costs.h"

namespace placesim {

enum class CollectiveOp { AllReduce, ReduceScatter, AllGather, AllToAll, Broadcast, Reduce };
inline constexpr EnumName<CollectiveOp> kCollectiveOpNames[] = {
    {CollectiveOp::AllReduce, "all-reduce"}, {CollectiveOp::ReduceScatter, "reduce-scatter"},
    {CollectiveOp::AllGather, "all-gather"}, {CollectiveOp::AllToAll, "all-to-all"},
    {CollectiveOp::Broadcast, "broadcast"},  {CollectiveOp::Reduce, "reduce"},
};

// The built-in algorithms, each described in its own file under sim/collectives/algorithms/ (ring,
// tree, halving_doubling, direct, over_levels: hierarchical and multi-level). A value is the
// algorithm's position in the registry (sim/collectives/algorithms/registry.cpp): an algorithm
// registered after these has no enumerator, and users name every algorithm by its registered name
// (collective_algorithm_names).
enum class CollectiveAlgorithm : int { Ring, Tree, HalvingDoubling, Direct, Hierarchical, MultiLevel, Pairwise, Nvls, NvlsTree };
// Every registered algorithm's value and name, for options and messages.
std::span<const EnumName<CollectiveAlgorithm>> collective_algorithm_names();
// The registered algorithms that run `op`: what an option choosing the algorithm of an all-reduce
// (a data-parallel gradient reduction, say) offers and accepts.
std::span<const EnumName<CollectiveAlgorithm>> collective_algorithm_names(CollectiveOp op);

// How a collective's ring phases become transfers (every other algorithm runs message by message).
// messages: each step of each chunk is a message of its own, n - 1 steps of n messages per ring
//   phase: n^2 operators, 130,000 per bucket at 256 ranks.
// condensed: each rank sends its ring successor one flow with every step's bytes (steps x
//   piece), paying the path latency steps x chunks times (Tensor::latencies), and the phase ends
//   for every rank of the ring when its slowest flow has arrived, at a barrier the ranks go on
//   from: about n operators per phase (each rank's arrival and the barrier; 2n with chunks), a
//   ring all-reduce about 3n (its second phase leaves from a step per rank), and n more where each
//   rank's result must be on its GPU (append_collective's results_on_ranks); a rank's first flow
//   leaves from the operator it waits for (`after`, when given), with no start or join operator
//   of its own. Where every
//   flow of the ring runs at one rate this is the message-level time (each step is the same n
//   messages at the same rate); where rates differ the phase still ends at the slowest flow, as a
//   ring's steps are paced by its slowest link. What it loses: a long flow where the messages
//   leave gaps that other traffic fills, so contention is spread evenly over the phase rather
//   than step by step (tests/test_collectives.cpp cross-checks both under contention).
enum class CollectiveDetail { Messages, Condensed };
inline constexpr EnumName<CollectiveDetail> kCollectiveDetailNames[] = {
    {CollectiveDetail::Messages, "messages"}, {CollectiveDetail::Condensed, "condensed"}};

struct CollectiveSpec {
  CollectiveOp op = CollectiveOp::AllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Ring;
  std::vector<DeviceId> group;  // the GPUs, in rank order; at least 2, distinct
  double bytes = 0;             // see the size convention above
  int chunks = 1;               // pieces per message, >= 1
  int root = 0;                 // broadcast and reduce: the root's rank
  CollectiveDetail detail = CollectiveDetail::Messages;  // of ring phases (above)
  // NCCL's protocol (on a cluster with NCCL costs, Cluster::nccl; ignored elsewhere) and
  // channels: rings and trees run once per channel on 1/channels of the buffer, channel c's
  // entering each server at its local rank c (one ring per NIC across servers).
  NcclProtocol protocol = NcclProtocol::Simple;
  int channels = 1;
  // `algorithm: auto`: algorithm, protocol and channels chosen per size by NCCL's tuning
  // (nccl_tuned, sim/collectives/nccl.h), as NCCL does when NCCL_ALGO and NCCL_PROTO are unset.
  bool tuned = false;
  // Tuned with NCCL_PROTO or the channel count set: the choice keeps them.
  bool pin_protocol = false, pin_channels = false;
};

// Why the spec cannot run on the cluster ("" when it can): an empty or repeated group, a GPU the
// cluster lacks, an algorithm the operation has not, halving-doubling on a group that is not a
// power of two, hierarchical on servers holding different numbers of the group's GPUs.
std::string collective_problem(const CollectiveSpec& spec, const Cluster& cluster);

// Appends the collective to `out`. `after`, when not empty, holds per rank an operator (on any
// GPU, or -1 for none) the rank's part waits for. Returns per rank the operator at which the rank
// holds its result: on the rank's GPU, or, with `results_on_ranks` false, possibly one step
// for all (a condensed ring's barrier, which spares a step per rank: a fifth of a plan's operators),
// for callers that send nothing from it (or send from a step on the rank's GPU after it).
// Operator names start with `name` (unique in the graph). Throws std::invalid_argument with
// collective_problem's reason.
//
// Folded (sim/core/folding.h): with `represented` (0 < represented < ranks, dividing them) only
// ranks 0 .. represented - 1 get operators, `after` and the result have that many entries, and
// rank r's messages to rank r' land on the operator of rank r' mod represented, their bytes
// going to group[r'] (Tensor::route_to): the graph stands for every block of `represented`
// ranks, which the algorithm must treat alike (collective_fold_problem).
std::vector<OpId> append_collective(ExecutionGraph& out, const CollectiveSpec& spec, const Cluster& cluster,
                                    const std::string& name, std::span<const OpId> after = {}, bool results_on_ranks = true,
                                    int represented = 0);

// Why the collective cannot be folded to its first `represented` ranks ("" when it can, or when
// represented is 0 or every rank): its ranks are not whole blocks, or moving every rank on by a
// block does not map its phases (as NCCL's tuning resolves them) onto themselves -- a tree's root.
std::string collective_fold_problem(const CollectiveSpec& spec, const Cluster& cluster, int represented);

// The group's ranks by server (servers in increasing order, ranks in rank order): hierarchical's
// rings inside each server.
std::vector<std::vector<int>> ranks_by_server(const CollectiveSpec& spec, const Cluster& cluster);
// Why `algorithm` cannot run on servers holding different numbers of the group's ranks (or "").
std::string uneven_servers_problem(const std::vector<std::vector<int>>& servers, std::string_view algorithm);

// The levels of hierarchical and multi-level, from the server up: per level its rings (ranks of
// the group, in ring order), every ring of a level the same size. Level 0 is each server's ranks;
// hierarchical's level 1 the ranks of equal local rank across servers; multi-level's level i the
// ranks in the same place of the groups of tier i - 1 under one group of tier i. Throws
// std::invalid_argument saying why the group is not regular (collective_problem's reason).
std::vector<std::vector<std::vector<int>>> collective_levels(const CollectiveSpec& spec, const Cluster& cluster);

// The collective alone, finalized. With `represented` (as append_collective's), folded: ranks
// 0 .. represented - 1 stand for every block of as many ranks (ExecutionGraph::fold).
ExecutionGraph collective_graph(const CollectiveSpec& spec, const Cluster& cluster, int represented = 0);

// The closed form of a collective among `ranks` GPUs whose every connection has latency `alpha`
// (s) and `bandwidth` (bytes/s): what collective_closed_form computes from the slowest pair the
// algorithm uses, for planners that price a network of one level (hierarchical: ring).
double uniform_collective_time(CollectiveOp op, CollectiveAlgorithm algorithm, int ranks, double bytes, double alpha,
                               double bandwidth, int chunks = 1);

// The contention-free closed form of the collective's time, seconds (see above).
double collective_closed_form(const CollectiveSpec& spec, const Cluster& cluster);

// A time affine in a collective's bytes: intercept (s) + slope (s per byte) x bytes, 0 at 0 bytes.
struct AffineTime {
  double intercept = 0, slope = 0;
  double at(double bytes) const { return bytes > 0 ? intercept + slope * bytes : 0.0; }
};
// A time that is affine in its bytes (> 0), as a line, from two probes: `time_of(bytes)` seconds.
// An infinite time (no such collective) gives an infinite intercept.
template <class TimeOf>
AffineTime affine_in_bytes(const TimeOf& time_of) {
  constexpr double kProbe = 1e9;  // bytes; any size > 0 gives the same line
  const double one = time_of(kProbe);
  if (!std::isfinite(one)) return {one, 0.0};
  const double slope = (time_of(2 * kProbe) - one) / kProbe;
  return {one - slope * kProbe, slope};
}
// collective_closed_form as a function of the bytes (spec.bytes is ignored): every algorithm's
// time is affine in them. For planners pricing many sizes on one group, the group checked once.
// Throws std::invalid_argument with collective_problem's reason.
AffineTime collective_affine_form(const CollectiveSpec& spec, const Cluster& cluster);

// nccl-tests' bus bandwidth factor: all-reduce 2(n-1)/n; reduce-scatter, all-gather and all-to-all
// (n-1)/n; broadcast and reduce 1. busbw = algbw * factor, algbw = bytes / time.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

}  // namespace placesim
