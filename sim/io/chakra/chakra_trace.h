#pragma once
// Chakra execution traces (MLCommons Chakra, read by ASTRA-sim and SimAI), out and in.
//
// Out: one file per GPU, `<dir>/<prefix>.<rank>.et`, of one placed and simulated iteration. Each
// file is a stream of messages, each prefixed by its varint32 length: a GlobalMetadata, then the
// rank's nodes in the order they ran (schema: sim/io/chakra/chakra_et.proto):
//  * a COMP_NODE per operator placed on the rank, with its start and duration (microseconds),
//    num_ops (its FLOPs, where the graph knows them: Operator::flops) and tensor_size (the bytes
//    of its inputs), which ASTRA-sim's roofline reads;
//  * a COMM_COLL_NODE per collective of an execution graph (AppendedCollective: a plan's
//    all-reduces, all-gathers, all-to-alls...) on each rank of its group: comm_type, comm_size
//    (bytes, in Chakra's convention, chakra_comm_size below: an all-gather's is one rank's input,
//    not the gathered output of sim/collectives/collectives.h) and pg_name, the
//    process group, whose ranks `<prefix>.comm_groups.json` lists; its start is the rank's
//    first step and its duration runs to the rank's last. Its messages are not written
//    (placesim.* attributes keep its steps, so that the round trip is exact);
//  * a COMM_SEND_NODE on the producer's rank and a COMM_RECV_NODE on the consumer's for every
//    other tensor between GPUs: comm_src, comm_dst, comm_size (bytes) and comm_tag (the same on both);
//  * data dependencies: a node on its same-GPU producers and on its receives, a send on its
//    producer; each compute operator has a control dependency on the one the GPU ran before it.
// Chakra's units are microseconds (uint64); placesim also writes each value exactly (seconds and
// bytes as doubles) in attributes named `placesim.*`, which a round trip reads back.
//
// In: the traces of a directory back into a graph and its placement. placesim's own traces come
// back exactly (the same operators, tensors, placement and collectives). Other tools' traces:
// every COMP_NODE becomes an operator of its duration on its rank, a send/receive pair a tensor
// of comm_size bytes, a data or control dependency between operators a tensor of 0 bytes;
// dependencies through other nodes (collectives, memory nodes) are followed to the operators
// behind them, and the number of such nodes is reported; for a replay, collective nodes are kept
// and run as placesim's collectives (replay_graph).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "sim/core/graph.h"

namespace placesim {

// A collective's size as Chakra states it (the comm_size of a COMM_COLL_NODE: the bytes of the
// input buffer one rank hands the collective, as Chakra's PyTorch converter records it and as
// ASTRA-sim's system layer reads it) from placesim's CollectiveSpec::bytes (nccl-tests' buffer of
// one rank, sim/collectives/collectives.h), among `ranks` ranks, and back. They differ for the
// all-gather alone: Chakra's is one rank's piece, placesim's the gathered output, `ranks` times it.
// All-reduce, reduce-scatter (the whole input), all-to-all (all a rank sends, its own piece
// included), broadcast and reduce (the buffer) are the same number in both. The sources are
// listed in sim/io/chakra/chakra_trace.cpp.
double chakra_comm_size(CollectiveOp op, double bytes, int ranks);
double collective_bytes_of_comm_size(CollectiveOp op, double comm_size, int ranks);

struct ChakraRun {
  std::string source;   // what was simulated (a graph file, a scenario's strategy)
  std::string engine;   // the engine whose timeline the traces hold
  double latency_s = 0; // that engine's latency of the iteration
};

struct ChakraWritten {
  std::vector<std::string> files;     // the traces, then <prefix>.comm_groups.json when there are collectives
  std::vector<std::string> warnings;  // e.g. a process group whose ranks ran its collectives in different orders
};

// Writes `<dir>/<prefix>.<rank>.et` for every rank 0..ranks-1 (a rank with no operator gets a file
// with its metadata alone); `start` is per operator, in seconds. Throws OutputError when a file
// cannot be written, std::invalid_argument when `collectives` are not steps of the graph.
ChakraWritten write_chakra_traces(const std::string& dir, const std::string& prefix, const Graph& graph,
                                  std::span<const DeviceId> placement, int ranks, std::span<const double> start,
                                  const ChakraRun& run, std::span<const AppendedCollective> collectives = {});

// Other tools' collective nodes, read for a replay (ChakraCollectives::Keep): on each rank of the
// group the operator the rank's part starts after (entry) and the one what waits for the node
// waits for (exit), both communication steps of no time.
struct TraceCollective {
  std::string name;
  CollectiveOp op;
  std::vector<DeviceId> group;  // the ranks, in the order of comm_groups.json or rank order
  double bytes = 0;             // placesim's CollectiveSpec::bytes of comm_size (collective_bytes_of_comm_size)
  std::vector<OpId> entry, exit;  // per rank of the group
};

// What other tools' COMM_COLL_NODEs become: followed through (a graph to re-place: the
// dependencies through them are kept, the collective costs nothing), or kept for replay_graph.
enum class ChakraCollectives { FollowThrough, Keep };

struct ChakraTraces {
  Graph graph;
  std::vector<DeviceId> placement;  // the rank each operator ran on
  int ranks = 0;
  bool exact = false;               // placesim's own traces: read back exactly
  std::optional<ChakraRun> run;     // what wrote them, when placesim did
  std::vector<AppendedCollective> collectives;  // placesim's own traces: the collectives, as written
  std::vector<TraceCollective> trace_collectives;  // other tools' traces read with ChakraCollectives::Keep
  std::vector<std::string> warnings;
};

// Reads `<dir>/<prefix>.<rank>.et` for ranks 0..R-1. `prefix` empty: the one prefix the directory
// holds (an error when it holds several). Throws InputError naming the file and the node at fault.
// With ChakraCollectives::Keep, other tools' collective nodes are matched across ranks by process
// group (pg_name; its ranks from <prefix>.comm_groups.json when the directory has it, else the
// ranks with nodes of that group), the k-th of a group on each rank being one collective; ranks
// that issue different collectives of a group are an InputError.
ChakraTraces read_chakra_traces(const std::string& dir, const std::string& prefix = "",
                                ChakraCollectives collectives = ChakraCollectives::FollowThrough);

// The traces as an execution graph to simulate on `cluster` (rank r on GPU r): their operators,
// tensors and placement, placesim's collectives as written, other tools' kept collectives run
// by placesim (ring; all-to-all direct) between their entry and exit. Throws InputError when a
// collective cannot run on the cluster.
ExecutionGraph replay_graph(const ChakraTraces& traces, const Cluster& cluster);

}  // namespace placesim
