#include "sim/io/chakra/chakra_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <limits>
#include <fstream>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <nlohmann/json.hpp>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>

#include "sim/io/chakra/chakra_et.pb.h"
#include "sim/collectives/collectives.h"
#include "sim/core/errors.h"
#include "sim/io/placement_io.h"

namespace placesim {

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

namespace {

// Chakra's schema version these traces follow (its GlobalMetadata.version).
constexpr const char* kChakraSchemaVersion = "0.0.4";
constexpr const char* kProducer = "placesim";

pb::AttributeProto& add_attr(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const std::string& name) {
  pb::AttributeProto* a = attrs->Add();
  a->set_name(name);
  return *a;
}

std::uint64_t micros(double seconds) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, seconds) * 1e6)); }

// A rank's nodes, in the order the rank ran them.
struct RankTrace {
  std::vector<pb::Node> nodes;
  std::uint64_t next_id = 0;
  std::int64_t last_compute = -1;  // the node of the operator the GPU ran last
  pb::Node& add(pb::NodeType type, std::string name, double start_s) {
    pb::Node& n = nodes.emplace_back();
    n.set_id(next_id++);
    n.set_name(std::move(name));
    n.set_type(type);
    n.set_start_time_micros(micros(start_s));
    return n;
  }
};

void add_comm_attrs(pb::Node& n, int src, int dst, std::int64_t tensor, double bytes) {
  auto* attrs = n.mutable_attr();
  add_attr(attrs, "is_cpu_op").set_bool_val(false);
  add_attr(attrs, "comm_src").set_int32_val(src);
  add_attr(attrs, "comm_dst").set_int32_val(dst);
  add_attr(attrs, "comm_tag").set_int32_val(static_cast<std::int32_t>(tensor));
  add_attr(attrs, "comm_size").set_int64_val(std::llround(bytes));
  add_attr(attrs, "placesim.tensor").set_int64_val(tensor);
  add_attr(attrs, "placesim.bytes").set_double_val(bytes);
}

}  // namespace

// comm_size, collective by collective. Chakra's schema (mlcommons/chakra,
// schema/protobuf/et_def.proto) has no field for it: comm_size is an attribute whose meaning is
// what Chakra's writers put in it and what ASTRA-sim does with it.
//  * ASTRA-sim reads it (astra-sim/astra-sim, astra-sim/workload/Workload.cc, issue_coll_comm):
//    comm_type and comm_size (uint64) go unchanged to Sys::generate_all_reduce, _all_to_all,
//    _all_gather and _reduce_scatter; BROADCAST is replayed for the node's duration, its size
//    unused; any other type (REDUCE, GATHER, SCATTER) stops the run as an unsupported collective.
//    Sends and receives (issue_send_comm, issue_recv_comm) move comm_size bytes.
//  * astra-sim/system/Sys.cc, generate_collective: the size is cut into chunks
//    (preferred-dataset-splits) and each phase of a chunk starts from the size the previous
//    phase ended with (phase.final_data_size); nothing multiplies it by the ranks.
//  * Each phase's algorithm sizes its messages from it
//    (astra-sim/system/astraccl/native_collectives/collective_algorithm/Ring.cc, and before it
//    astra-sim/system/collective/Ring.cc): all-reduce 2(n - 1) messages of size/n, ending with
//    size; reduce-scatter n - 1 messages of size/n, ending with size/n; all-to-all messages of
//    size/n, ending with size; all-gather n - 1 messages of the whole size, ending with size x n.
//    So an all-gather's comm_size is one rank's contribution: every rank receives (n - 1) of it.
//  * Chakra writes it (mlcommons/chakra, src/converter/pytorch_converter.py,
//    convert_json_to_protobuf_nodes): a COMM_COLL_NODE's comm_size is PyTorchNode.comm_size
//    (src/converter/pytorch_node.py), the bytes of the node's input tensors. A GPU node carries
//    the inputs of the host operator that launched it (src/trace_link/trace_linker.py,
//    process_dependent_gpu_ops): for a collective, PyTorch's record_param_comms, which
//    ProcessGroupNCCL gives the input tensor as its input (pytorch/pytorch, _allgather_base: the
//    input tensor as inputs and inNelems, the output tensor, world size times it, as outputs). The
//    converter names allreduce, alltoall, allgather, reducescatter and broadcast; no reduce.
//  * ASTRA-sim's microbenchmark traces (examples/workload/microbenchmarks/generator_scripts/
//    all_gather.py, all_reduce.py, all_to_all.py) write the "1MB" of the example's name as every
//    collective's comm_size, the all-gather's included; SimAI, ASTRA-sim's fork, reads its
//    workloads' all-gather sizes the same way (each rank ends with ranks x the size; its issue
//    tracker, "AllGather Message Size vs Workload TXT File Msg Size").
// Hence, for placesim's CollectiveSpec::bytes (nccl-tests' buffer of one rank): all-reduce, the
// buffer (the same number); reduce-scatter, the input, all n pieces (the same); all-to-all, all a
// rank sends, its own piece included (the same: ASTRA-sim sends size/n to each other rank);
// broadcast and reduce, the buffer (the same; the tensor record_param_comms records); all-gather,
// one rank's input, bytes / n (placesim's is the gathered output). Sends and receives: the
// message. Converted here, on write and on read; placesim.bytes keeps placesim's exact bytes.
double chakra_comm_size(CollectiveOp op, double bytes, int ranks) {
  return op == CollectiveOp::AllGather && ranks > 0 ? bytes / ranks : bytes;
}

double collective_bytes_of_comm_size(CollectiveOp op, double comm_size, int ranks) {
  return op == CollectiveOp::AllGather ? comm_size * ranks : comm_size;
}

namespace {

// Chakra's CollectiveCommType of a collective.
pb::CollectiveCommType comm_type_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::AllReduce: return pb::ALL_REDUCE;
    case CollectiveOp::ReduceScatter: return pb::REDUCE_SCATTER;
    case CollectiveOp::AllGather: return pb::ALL_GATHER;
    case CollectiveOp::AllToAll: return pb::ALL_TO_ALL;
    case CollectiveOp::Broadcast: return pb::BROADCAST;
    case CollectiveOp::Reduce: return pb::REDUCE;
  }
  return pb::ALL_REDUCE;
}

// The collective placesim runs for a Chakra comm_type, if any.
std::optional<CollectiveOp> collective_of_comm_type(std::int64_t type) {
  for (const auto& o : kCollectiveOpNames)
    if (comm_type_of(o.value) == type) return o.value;
  return std::nullopt;
}

// What a rank's trace holds one node for: an operator, or a collective's steps on the rank.
struct Item {
  int rank = 0;
  int collective = -1;    // index into the collectives, or -1: an operator
  std::vector<OpId> ops;  // the operator, or the collective's steps on the rank (in topological order)
  double start = 0, end = 0;
  std::size_t first_position = 0;  // topological position of its first operator
};

// An operator's inputs, exactly: tensor ids, producers and bytes (a round trip reads them back).
void add_exact_inputs(google::protobuf::RepeatedPtrField<pb::AttributeProto>* attrs, const Graph& graph, std::span<const OpId> ops) {
  auto* tensors = add_attr(attrs, "placesim.dep_tensors").mutable_int64_list();
  auto* producers = add_attr(attrs, "placesim.dep_srcs").mutable_int64_list();
  auto* bytes = add_attr(attrs, "placesim.dep_bytes").mutable_double_list();
  std::vector<EdgeId> gradients, condensed, overheads;
  for (OpId u : ops)
    for (EdgeId e : graph.in_edges(u)) {
      tensors->add_values(e);
      producers->add_values(graph.tensor(e).src);
      bytes->add_values(graph.tensor(e).bytes);
      if (graph.tensor(e).gradient) gradients.push_back(e);
      if (graph.tensor(e).latencies != 1) condensed.push_back(e);
      if (graph.tensor(e).overhead_s > 0) overheads.push_back(e);
    }
  // Parameter gradients (Tensor::gradient), by tensor: only where there are some.
  if (!gradients.empty()) {
    auto* listed = add_attr(attrs, "placesim.dep_gradients").mutable_int64_list();
    for (EdgeId e : gradients) listed->add_values(e);
  }
  // Condensed ring phases' flows (Tensor::latencies), tensor and count: only where there are some.
  if (!condensed.empty()) {
    auto* listed = add_attr(attrs, "placesim.dep_latencies").mutable_int64_list();
    for (EdgeId e : condensed) {
      listed->add_values(e);
      listed->add_values(graph.tensor(e).latencies);
    }
  }
  // NCCL's per-message overheads (Tensor::overhead_s), tensor ids and seconds: only where there are some.
  if (!overheads.empty()) {
    auto* ids = add_attr(attrs, "placesim.dep_overhead_tensors").mutable_int64_list();
    auto* seconds = add_attr(attrs, "placesim.dep_overheads").mutable_double_list();
    for (EdgeId e : overheads) {
      ids->add_values(e);
      seconds->add_values(graph.tensor(e).overhead_s);
    }
  }
}

// write_chakra_traces, pass by pass: the collectives' steps and process groups, the items each
// rank runs and their order, then each rank's nodes, then the files.
class ChakraWriter {
 public:
  ChakraWriter(const Graph& graph, std::span<const DeviceId> placement, int ranks, std::span<const double> start,
               std::span<const AppendedCollective> collectives)
      : graph_(graph), placement_(placement), ranks_(ranks), start_(start), collectives_(collectives) {}

  ChakraWritten write(const std::string& dir, const std::string& prefix, const ChakraRun& run) {
    ChakraWritten written;
    index_collectives();
    collect_items();
    start_collectives_at_inputs();
    order_ranks();
    written.warnings = issue_order_warnings();
    trace_.resize(static_cast<std::size_t>(ranks_));
    node_of_item_.resize(items_.size());
    for (int r = 0; r < ranks_; ++r) trace_rank(r);
    write_files(dir, prefix, run, written);
    return written;
  }

 private:
  // Which collective each operator is a step of, and the process groups: one per distinct group
  // of ranks, named 1, 2, ... (Chakra's pg_name).
  void index_collectives() {
    collective_of_.assign(graph_.num_operators(), -1);
    for (std::size_t c = 0; c < collectives_.size(); ++c) {
      const AppendedCollective& coll = collectives_[c];
      process_group_.try_emplace(coll.group, static_cast<int>(process_group_.size()) + 1);
      if (coll.first < 0 || coll.end <= coll.first || static_cast<std::size_t>(coll.end) > graph_.num_operators())
        throw std::invalid_argument("write_chakra_traces: a collective's operators are not the graph's");
      for (OpId u = coll.first; u < coll.end; ++u) {
        const Operator& op = graph_.op(u);
        // What the reader restores of a step: it must be all there is.
        if (collective_of_[u] >= 0 || !op.communication || op.compute_s != 0 || op.memory_bytes != 0 ||
            op.colocation_class != -1 || op.type != "collective")
          throw std::invalid_argument(
              fmt::format("write_chakra_traces: operator {} is not a step of collective {} alone", op.name, coll.name));
        collective_of_[u] = static_cast<int>(c);
      }
    }
  }

  // The items, and each operator's: an operator alone, or a collective's steps on one rank.
  void collect_items() {
    std::vector<std::size_t> topo_position(graph_.num_operators());
    for (std::size_t i = 0; i < graph_.topological_order().size(); ++i) topo_position[graph_.topological_order()[i]] = i;
    item_of_.resize(graph_.num_operators());
    for (OpId u : graph_.topological_order()) {
      const int r = placement_[u];
      std::size_t i = items_.size();
      if (collective_of_[u] >= 0) {
        auto [it, fresh] = collective_item_.try_emplace({collective_of_[u], r}, items_.size());
        i = it->second;
        if (fresh) items_.push_back({r, collective_of_[u], {}, start_[u], start_[u], topo_position[u]});
      } else {
        items_.push_back({r, -1, {}, start_[u], start_[u], topo_position[u]});
      }
      Item& item = items_[i];
      item.ops.push_back(u);
      item.start = std::min(item.start, start_[u]);
      item.end = std::max(item.end, start_[u] + graph_.op(u).compute_s);
      item_of_[u] = i;
    }
  }

  // A collective's part on a rank begins when its inputs from outside the collective are there
  // (an arrival step may start earlier, waiting on another rank's piece alone) and ends with the
  // rank's last step, its trailing sends included.
  void start_collectives_at_inputs() {
    for (Item& item : items_) {
      if (item.collective < 0) continue;
      double ready = 0;
      bool has_input = false;
      for (OpId u : item.ops)
        for (EdgeId e : graph_.in_edges(u)) {
          const Tensor& t = graph_.tensor(e);
          if (collective_of_[t.src] == item.collective) continue;
          ready = std::max(ready, start_[t.src] + graph_.op(t.src).compute_s);
          has_input = true;
        }
      if (has_input) item.start = std::min(std::max(item.start, ready), item.end);
    }
  }

  // Each rank's items in the order the rank ran them: by start time, ties in topological order,
  // after the items of the rank they depend on (a collective's steps spread over its run).
  void order_ranks() {
    rank_order_.assign(static_cast<std::size_t>(ranks_), {});
    std::vector<int> waiting(items_.size(), 0);
    std::vector<std::vector<std::size_t>> next(items_.size());
    for (const Tensor& t : graph_.tensors()) {
      const std::size_t b = item_of_[t.dst], a = source_item(t, items_[b].rank);
      if (a != b && items_[a].rank == items_[b].rank) {
        next[a].push_back(b);
        ++waiting[b];
      }
    }
    auto later = [&](std::size_t a, std::size_t b) {
      return items_[a].start != items_[b].start ? items_[a].start > items_[b].start
                                                : items_[a].first_position > items_[b].first_position;
    };
    std::vector<std::vector<std::size_t>> ready(static_cast<std::size_t>(ranks_));
    for (std::size_t i = 0; i < items_.size(); ++i)
      if (waiting[i] == 0) ready[items_[i].rank].push_back(i);
    for (int r = 0; r < ranks_; ++r) {
      auto& heap = ready[r];
      std::make_heap(heap.begin(), heap.end(), later);
      while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const std::size_t i = heap.back();
        heap.pop_back();
        rank_order_[r].push_back(i);
        for (std::size_t j : next[i])
          if (--waiting[j] == 0) {
            heap.push_back(j);
            std::push_heap(heap.begin(), heap.end(), later);
          }
      }
    }
    std::size_t placed = 0;
    for (const auto& o : rank_order_) placed += o.size();
    if (placed != items_.size())
      throw std::invalid_argument("write_chakra_traces: a collective's steps on a rank wait for work that waits for them");
  }

  // The order each rank issues the collectives of one process group: NCCL (and ASTRA-sim) need
  // it to be the same on every rank. placesim's collectives do not wait for each other, so a
  // rank may have run two of them the other way round: said, not hidden.
  std::vector<std::string> issue_order_warnings() const {
    std::map<int, std::vector<int>> pg_order;  // process group -> collectives, as its first rank issued them
    std::set<int> pg_disagrees;
    for (int r = 0; r < ranks_; ++r) {
      std::map<int, std::vector<int>> mine;
      for (std::size_t i : rank_order_[r])
        if (items_[i].collective >= 0)
          mine[process_group_.at(collectives_[items_[i].collective].group)].push_back(items_[i].collective);
      for (auto& [pg, order] : mine) {
        auto [it, fresh] = pg_order.try_emplace(pg, order);
        if (!fresh && it->second != order) pg_disagrees.insert(pg);
      }
    }
    std::vector<std::string> warnings;
    for (int pg : pg_disagrees)
      warnings.push_back(fmt::format("process group {}: its ranks ran its collectives in different orders (placesim's "
                                     "collectives do not wait for one another; NCCL's would): a tool that issues them "
                                     "in trace order may deadlock on these traces",
                                     pg));
    return warnings;
  }

  // A tensor inside one collective is one of its messages: the collective node stands for it.
  bool inside_collective(const Tensor& t) const {
    return collective_of_[t.src] >= 0 && collective_of_[t.src] == collective_of_[t.dst];
  }

  // The item an operator of rank r waits for through tensor t: its source's, or, for a control
  // dependency on a collective's step held by another rank (a condensed ring's barrier, which
  // every rank goes on from), the rank's own part of that collective.
  std::size_t source_item(const Tensor& t, int r) const {
    const std::size_t from = item_of_[t.src];
    if (t.bytes > 0 || collective_of_[t.src] < 0 || items_[from].rank == r) return from;
    const auto own = collective_item_.find({collective_of_[t.src], r});
    return own == collective_item_.end() ? from : own->second;
  }

  // Rank r's nodes: per item, receives of its inputs from other ranks, its own node, and sends of
  // its outputs to other ranks.
  void trace_rank(int r) {
    RankTrace& rank = trace_[r];
    std::map<int, std::uint64_t> last_of_group;  // process group -> its last collective node on the rank
    for (std::size_t i : rank_order_[r]) {
      const Item& item = items_[i];
      const std::vector<std::uint64_t> deps = receive_inputs(r, i);
      const bool is_collective = item.collective >= 0;
      const OpId first = item.ops.front();
      pb::Node& n = rank.add(is_collective ? pb::COMM_COLL_NODE : pb::COMP_NODE,
                             is_collective ? collectives_[item.collective].name : graph_.op(first).name, item.start);
      n.set_duration_micros(micros(item.end - item.start));
      for (auto d : deps) n.add_data_deps(d);
      add_attr(n.mutable_attr(), "is_cpu_op").set_bool_val(false);
      if (is_collective) add_collective_attrs(n, item, last_of_group);
      else add_compute_attrs(rank, n, first);
      add_exact_inputs(n.mutable_attr(), graph_, item.ops);
      node_of_item_[i] = n.id();
      send_outputs(r, item, n.id());  // adds nodes: `n` is not to be used after
    }
  }

  // The nodes item i of rank r waits for, sorted: the rank's own items', and a receive node
  // (added here) per input from another rank.
  std::vector<std::uint64_t> receive_inputs(int r, std::size_t i) {
    RankTrace& rank = trace_[r];
    std::vector<std::uint64_t> deps;
    for (OpId u : items_[i].ops)
      for (EdgeId e : graph_.in_edges(u)) {
        const Tensor& t = graph_.tensor(e);
        const std::size_t from_item = source_item(t, r);
        if (from_item == i || inside_collective(t)) continue;
        if (items_[from_item].rank == r) {
          deps.push_back(node_of_item_[from_item]);
        } else {
          pb::Node& recv = rank.add(pb::COMM_RECV_NODE, fmt::format("recv {} -> {}", graph_.op(t.src).name, graph_.op(u).name),
                                    start_[t.src] + graph_.op(t.src).compute_s);
          add_comm_attrs(recv, items_[from_item].rank, r, e, t.bytes);
          deps.push_back(recv.id());
        }
      }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    return deps;
  }

  // Collectives run beside the GPU's kernels, in no GPU order; one process group's collectives
  // are issued in order, each after the previous one.
  void add_collective_attrs(pb::Node& n, const Item& item, std::map<int, std::uint64_t>& last_of_group) const {
    auto* attrs = n.mutable_attr();
    const AppendedCollective& coll = collectives_[item.collective];
    const int pg = process_group_.at(coll.group);
    if (auto previous = last_of_group.find(pg); previous != last_of_group.end()) n.add_ctrl_deps(previous->second);
    last_of_group[pg] = n.id();
    add_attr(attrs, "comm_type").set_int64_val(comm_type_of(coll.op));
    const int ranks = static_cast<int>(coll.group.size());
    add_attr(attrs, "comm_size").set_int64_val(std::llround(chakra_comm_size(coll.op, coll.bytes, ranks)));
    add_attr(attrs, "pg_name").set_string_val(fmt::format("{}", process_group_.at(coll.group)));
    auto* group = add_attr(attrs, "placesim.group").mutable_int64_list();
    for (DeviceId g : coll.group) group->add_values(g);
    add_attr(attrs, "placesim.collective").set_int64_val(item.collective);
    add_attr(attrs, "placesim.bytes").set_double_val(coll.bytes);
    add_attr(attrs, "placesim.first").set_int64_val(coll.first);
    add_attr(attrs, "placesim.end").set_int64_val(coll.end);
    auto* steps = add_attr(attrs, "placesim.steps").mutable_int64_list();
    auto* names = add_attr(attrs, "placesim.step_names").mutable_string_list();
    auto* inputs = add_attr(attrs, "placesim.step_inputs").mutable_int64_list();
    for (OpId u : item.ops) {
      steps->add_values(u);
      names->add_values(graph_.op(u).name);
      inputs->add_values(static_cast<std::int64_t>(graph_.in_edges(u).size()));
    }
  }

  // Operator `u`'s node, after the rank's previous compute node.
  void add_compute_attrs(RankTrace& rank, pb::Node& n, OpId u) const {
    auto* attrs = n.mutable_attr();
    const Operator& op = graph_.op(u);
    // Communication steps outside collectives run beside the GPU's kernels, in no GPU order.
    if (!op.communication) {
      if (rank.last_compute >= 0) n.add_ctrl_deps(static_cast<std::uint64_t>(rank.last_compute));
      rank.last_compute = static_cast<std::int64_t>(n.id());
    }
    // Chakra's cost of a compute node, for ASTRA-sim's roofline: num_ops where the operator's
    // FLOPs are known, tensor_size the bytes it reads (its inputs: each edge is one tensor
    // it reads, while an output read by several operators is an edge to each of them).
    if (op.flops > 0) add_attr(attrs, "num_ops").set_int64_val(std::llround(std::min(op.flops, 9e18)));  // int64's range
    double reads = 0;
    for (EdgeId e : graph_.in_edges(u)) reads += graph_.tensor(e).bytes;
    add_attr(attrs, "tensor_size").set_uint64_val(static_cast<std::uint64_t>(std::llround(std::min(reads, 9e18))));
    add_attr(attrs, "placesim.op").set_int64_val(u);
    add_attr(attrs, "placesim.type").set_string_val(op.type);
    add_attr(attrs, "placesim.compute_s").set_double_val(op.compute_s);
    add_attr(attrs, "placesim.memory_bytes").set_double_val(op.memory_bytes);
    add_attr(attrs, "placesim.colocation_class").set_int64_val(op.colocation_class);
    add_attr(attrs, "placesim.communication").set_bool_val(op.communication);
    if (op.flops > 0) add_attr(attrs, "placesim.flops").set_double_val(op.flops);  // num_ops is whole
    if (op.algorithm_flops > 0) add_attr(attrs, "placesim.algorithm_flops").set_double_val(op.algorithm_flops);
  }

  // A send node, after `producer`, per output of the item to another rank.
  void send_outputs(int r, const Item& item, std::uint64_t producer) {
    RankTrace& rank = trace_[r];
    for (OpId u : item.ops)
      for (EdgeId e : graph_.out_edges(u)) {
        const Tensor& t = graph_.tensor(e);
        const int to = placement_[t.dst];
        if (to == r || inside_collective(t) || items_[source_item(t, to)].rank == to) continue;
        pb::Node& send = rank.add(pb::COMM_SEND_NODE, fmt::format("send {} -> {}", graph_.op(u).name, graph_.op(t.dst).name),
                                  start_[u] + graph_.op(u).compute_s);
        send.add_data_deps(producer);
        add_comm_attrs(send, r, to, e, t.bytes);
      }
  }

  // Each rank's file (written whole, then renamed into place), then the process groups' ranks.
  void write_files(const std::string& dir, const std::string& prefix, const ChakraRun& run, ChakraWritten& written) const {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw OutputError(dir, "cannot create the directory: " + ec.message());
    for (int r = 0; r < ranks_; ++r) written.files.push_back(write_rank_file(dir, prefix, run, r));
    if (!process_group_.empty()) {
      // The ranks of each process group, by pg_name (ASTRA-sim's communicator groups).
      nlohmann::ordered_json groups = nlohmann::ordered_json::object();
      std::vector<const std::vector<DeviceId>*> by_id(process_group_.size());
      for (const auto& [group, id] : process_group_) by_id[id - 1] = &group;
      for (std::size_t k = 0; k < by_id.size(); ++k) groups[fmt::format("{}", k + 1)] = *by_id[k];
      const std::string path = (fs::path(dir) / fmt::format("{}.comm_groups.json", prefix)).string();
      write_file_atomically(path, groups.dump(2) + "\n");
      written.files.push_back(path);
    } else {
      fs::remove(fs::path(dir) / fmt::format("{}.comm_groups.json", prefix), ec);  // an earlier run's
    }
  }

  std::string write_rank_file(const std::string& dir, const std::string& prefix, const ChakraRun& run, int r) const {
    const std::string path = (fs::path(dir) / fmt::format("{}.{}.et", prefix, r)).string();
    const std::string partial = path + ".partial";
    {
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      if (!out) throw OutputError(partial, "cannot write the Chakra trace");
      pb::GlobalMetadata meta;
      meta.set_version(kChakraSchemaVersion);
      auto* attrs = meta.mutable_attr();
      add_attr(attrs, "producer").set_string_val(kProducer);
      add_attr(attrs, "placesim.rank").set_int64_val(r);
      add_attr(attrs, "placesim.ranks").set_int64_val(ranks_);
      add_attr(attrs, "placesim.operators").set_int64_val(static_cast<std::int64_t>(graph_.num_operators()));
      add_attr(attrs, "placesim.tensors").set_int64_val(static_cast<std::int64_t>(graph_.num_tensors()));
      add_attr(attrs, "placesim.source").set_string_val(run.source);
      add_attr(attrs, "placesim.engine").set_string_val(run.engine);
      add_attr(attrs, "placesim.latency_s").set_double_val(run.latency_s);
      bool ok = google::protobuf::util::SerializeDelimitedToOstream(meta, &out);
      for (const pb::Node& n : trace_[r].nodes) ok = ok && google::protobuf::util::SerializeDelimitedToOstream(n, &out);
      out.flush();
      if (!ok || !out) throw OutputError(partial, "cannot write the Chakra trace (disk full?)");
    }
    std::error_code ec;
    fs::rename(partial, path, ec);
    if (ec) throw OutputError(path, "cannot write the Chakra trace: " + ec.message());
    return path;
  }

  const Graph& graph_;
  std::span<const DeviceId> placement_;
  const int ranks_;
  std::span<const double> start_;
  std::span<const AppendedCollective> collectives_;
  std::vector<int> collective_of_;                         // per operator: its collective, or -1
  std::map<std::vector<DeviceId>, int> process_group_;     // group of ranks -> its pg_name
  std::vector<Item> items_;
  std::map<std::pair<int, int>, std::size_t> collective_item_;  // (collective, rank) -> item
  std::vector<std::size_t> item_of_;                       // per operator
  std::vector<std::vector<std::size_t>> rank_order_;       // per rank, its items in order
  std::vector<RankTrace> trace_;                           // per rank
  std::vector<std::uint64_t> node_of_item_;
};

}  // namespace

ChakraWritten write_chakra_traces(const std::string& dir, const std::string& prefix, const Graph& graph,
                                  std::span<const DeviceId> placement, int ranks, std::span<const double> start,
                                  const ChakraRun& run, std::span<const AppendedCollective> collectives) {
  if (placement.size() != graph.num_operators() || start.size() != graph.num_operators())
    throw std::invalid_argument("write_chakra_traces: placement and start must have one entry per operator");
  return ChakraWriter(graph, placement, ranks, start, collectives).write(dir, prefix, run);
}

namespace {

struct RankFile {
  std::string path;
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

const pb::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs, std::string_view name) {
  for (const auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

RankFile read_rank(const std::string& path) {
  RankFile f;
  f.path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the Chakra trace");
  google::protobuf::io::IstreamInputStream stream(&in);
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&f.meta, &stream, &clean_eof))
    throw InputError(path, "GlobalMetadata",
                     clean_eof ? "the file is empty" : "not a Chakra execution trace (no length-prefixed GlobalMetadata first)");
  for (;;) {
    pb::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &clean_eof)) {
      if (clean_eof) break;
      throw InputError(path, fmt::format("node {}", f.nodes.size()), "truncated or not a Chakra Node message");
    }
    f.nodes.push_back(std::move(n));
  }
  return f;
}

// One node of a rank's file as a reader sees it: where it is, for errors, and its attributes.
struct NodeInFile {
  const RankFile& file;
  int rank;
  const pb::Node& node;
  std::string where;  // "node <id> ('<name>')"
  NodeInFile(const RankFile& in_file, int of_rank, const pb::Node& the_node)
      : file(in_file), rank(of_rank), node(the_node), where(fmt::format("node {} ('{}')", the_node.id(), the_node.name())) {}
  // The attribute placesim's traces always have, or InputError.
  const pb::AttributeProto& need(std::string_view name) const {
    const pb::AttributeProto* a = find_attr(node.attr(), name);
    if (!a) throw InputError(file.path, where, fmt::format("has no attribute '{}', which placesim's traces have", name));
    return *a;
  }
  InputError error(const std::string& what) const { return InputError(file.path, where, what); }
};

// read_exact, pass by pass: the counts the metadata claims, checked against what the files can
// hold; each node's operators, collective and inputs; then the graph, checked whole.
class ExactReader {
 public:
  explicit ExactReader(std::vector<RankFile>& files) : files_(files) {}

  ChakraTraces read() && {
    out_.ranks = static_cast<int>(files_.size());
    out_.exact = true;
    read_metadata();
    for (int r = 0; r < out_.ranks; ++r) read_rank(r);
    assemble();
    return std::move(out_);
  }

 private:
  // A tensor as its consumer lists it.
  struct Edge {
    OpId src = -1, dst = -1;
    double bytes = 0;
    bool gradient = false;
    std::int32_t latencies = 1;
    double overhead_s = 0;
  };

  // The run and the counts, checked against what the files can hold at most before anything is
  // allocated by them: an operator per compute node or collective step, a tensor per input listed.
  void read_metadata() {
    const auto& meta = files_.front().meta.attr();
    num_ops_ = find_attr(meta, "placesim.operators")->int64_val();
    num_tensors_ = find_attr(meta, "placesim.tensors")->int64_val();
    ChakraRun run;
    run.source = find_attr(meta, "placesim.source")->string_val();
    run.engine = find_attr(meta, "placesim.engine")->string_val();
    run.latency_s = find_attr(meta, "placesim.latency_s")->double_val();
    out_.run = run;
    std::int64_t op_room = 0, tensor_room = 0;
    for (const RankFile& f : files_)
      for (const auto& n : f.nodes) {
        if (n.type() == pb::COMP_NODE) ++op_room;
        if (const pb::AttributeProto* steps = find_attr(n.attr(), "placesim.steps")) op_room += steps->int64_list().values_size();
        if (const pb::AttributeProto* deps = find_attr(n.attr(), "placesim.dep_tensors"))
          tensor_room += deps->int64_list().values_size();
      }
    if (num_ops_ < 0 || num_ops_ > op_room)
      throw InputError(files_.front().path, "GlobalMetadata.placesim.operators",
                       fmt::format("{} operators, but the traces hold {} compute nodes and collective steps", num_ops_, op_room));
    if (num_tensors_ < 0 || num_tensors_ > tensor_room)
      throw InputError(files_.front().path, "GlobalMetadata.placesim.tensors",
                       fmt::format("{} tensors, but the traces list {} inputs", num_tensors_, tensor_room));
    ops_.resize(static_cast<std::size_t>(num_ops_));
    seen_.assign(ops_.size(), false);
    step_of_.assign(ops_.size(), -1);
    out_.placement.assign(ops_.size(), 0);
    edges_.resize(static_cast<std::size_t>(num_tensors_));
  }

  void read_rank(int r) {
    const RankFile& f = files_[r];
    std::unordered_map<std::uint64_t, const pb::Node*> by_id;
    for (const auto& n : f.nodes)
      if (!by_id.emplace(n.id(), &n).second)
        throw InputError(f.path, fmt::format("node {} ('{}')", n.id(), n.name()), "a node id used twice");
    for (const auto& n : f.nodes) {
      const NodeInFile node(f, r, n);
      for (auto d : n.data_deps())
        if (!by_id.contains(d)) throw node.error(fmt::format("depends on node {}, which the file does not have", d));
      if (n.type() == pb::COMM_SEND_NODE || n.type() == pb::COMM_RECV_NODE) {
        const std::int64_t e = node.need("placesim.tensor").int64_val();
        if (e < 0 || e >= num_tensors_) throw node.error(fmt::format("tensor {} out of range", e));
        continue;
      }
      if (n.type() != pb::COMP_NODE && n.type() != pb::COMM_COLL_NODE) continue;
      // The operators of the node, then their inputs, in order.
      std::vector<OpId> node_ops;
      std::vector<std::int64_t> inputs_per_op;
      if (n.type() == pb::COMP_NODE) read_compute(node, node_ops, inputs_per_op);
      else read_collective(node, node_ops, inputs_per_op);
      read_inputs(node, node_ops, inputs_per_op);
    }
  }

  // Operator u, placed on the node's rank: once only.
  Operator& take(const NodeInFile& node, std::int64_t u, std::vector<OpId>& node_ops) {
    if (u < 0 || u >= num_ops_ || seen_[u]) throw node.error(fmt::format("operator {} out of range or repeated", u));
    seen_[u] = true;
    out_.placement[u] = node.rank;
    node_ops.push_back(static_cast<OpId>(u));
    return ops_[u];
  }

  void read_compute(const NodeInFile& node, std::vector<OpId>& node_ops, std::vector<std::int64_t>& inputs_per_op) {
    Operator& op = take(node, node.need("placesim.op").int64_val(), node_ops);
    op.name = node.node.name();
    op.type = node.need("placesim.type").string_val();
    op.compute_s = node.need("placesim.compute_s").double_val();
    op.memory_bytes = node.need("placesim.memory_bytes").double_val();
    const std::int64_t colocation = node.need("placesim.colocation_class").int64_val();
    if (colocation < -1 || colocation > std::numeric_limits<std::int32_t>::max())
      throw node.error(fmt::format("placesim.colocation_class {} out of range", colocation));
    op.colocation_class = static_cast<std::int32_t>(colocation);
    op.communication = node.need("placesim.communication").bool_val();
    if (const pb::AttributeProto* flops = find_attr(node.node.attr(), "placesim.flops")) op.flops = flops->double_val();
    if (const pb::AttributeProto* a = find_attr(node.node.attr(), "placesim.algorithm_flops")) op.algorithm_flops = a->double_val();
    inputs_per_op.push_back(node.need("placesim.dep_tensors").int64_list().values_size());
  }

  // The collective (the same on every rank holding it), then its steps on this rank.
  void read_collective(const NodeInFile& node, std::vector<OpId>& node_ops, std::vector<std::int64_t>& inputs_per_op) {
    const std::int64_t c = node.need("placesim.collective").int64_val();
    AppendedCollective coll;
    coll.name = node.node.name();
    const std::int64_t type = node.need("comm_type").int64_val();
    const auto op = collective_of_comm_type(type);
    if (!op) throw node.error(fmt::format("comm_type {} is no collective placesim runs", type));
    coll.op = *op;
    for (auto g : node.need("placesim.group").int64_list().values()) {
      if (g < 0 || g >= out_.ranks) throw node.error(fmt::format("placesim.group holds rank {}, of {} ranks", g, out_.ranks));
      coll.group.push_back(static_cast<DeviceId>(g));
    }
    coll.bytes = node.need("placesim.bytes").double_val();
    const std::int64_t first = node.need("placesim.first").int64_val(), end = node.need("placesim.end").int64_val();
    if (first < 0 || end <= first || end > num_ops_)
      throw node.error(fmt::format("placesim.first {} and placesim.end {} are not operators 0..{}", first, end, num_ops_));
    if (c < 0 || c >= num_ops_) throw node.error(fmt::format("placesim.collective {} out of range", c));
    if (std::find(coll.group.begin(), coll.group.end(), node.rank) == coll.group.end())
      throw node.error(fmt::format("rank {} holds a collective whose placesim.group leaves it out", node.rank));
    coll.first = static_cast<OpId>(first);
    coll.end = static_cast<OpId>(end);
    auto [it, fresh] = collectives_.try_emplace(c, coll);
    if (!fresh && (it->second.name != coll.name || it->second.op != coll.op || it->second.group != coll.group ||
                   it->second.bytes != coll.bytes || it->second.first != coll.first || it->second.end != coll.end))
      throw node.error(fmt::format("collective {} differs from its node on another rank", c));
    const auto& steps = node.need("placesim.steps").int64_list().values();
    const auto& names = node.need("placesim.step_names").string_list().values();
    const auto& inputs = node.need("placesim.step_inputs").int64_list().values();
    if (names.size() != steps.size() || inputs.size() != steps.size())
      throw node.error("placesim.steps, placesim.step_names and placesim.step_inputs differ in length");
    for (int k = 0; k < steps.size(); ++k) {
      if (steps[k] < coll.first || steps[k] >= coll.end)
        throw node.error(fmt::format("step {} outside the collective's operators", steps[k]));
      Operator& step = take(node, steps[k], node_ops);
      step_of_[steps[k]] = c;
      step.name = names[k];
      step.type = "collective";
      step.communication = true;
      inputs_per_op.push_back(inputs[k]);
    }
  }

  // The node's inputs, `inputs_per_op` of them per operator in turn: tensor ids, producers and
  // bytes; which are parameter gradients; the condensed ones' latencies.
  void read_inputs(const NodeInFile& node, std::span<const OpId> node_ops, std::span<const std::int64_t> inputs_per_op) {
    const auto& tensors = node.need("placesim.dep_tensors").int64_list().values();
    const auto& producers = node.need("placesim.dep_srcs").int64_list().values();
    const auto& bytes = node.need("placesim.dep_bytes").double_list().values();
    std::int64_t listed = 0;
    for (auto k : inputs_per_op) {
      if (k < 0 || k > tensors.size() - listed) throw node.error("placesim.step_inputs do not match placesim.dep_tensors");
      listed += k;
    }
    if (tensors.size() != listed || producers.size() != listed || bytes.size() != listed)
      throw node.error("placesim.dep_tensors, placesim.dep_srcs and placesim.dep_bytes do not match its inputs");
    int d = 0;
    for (std::size_t k = 0; k < node_ops.size(); ++k)
      for (std::int64_t i = 0; i < inputs_per_op[k]; ++i, ++d) {
        const std::int64_t e = tensors[d], src = producers[d];
        if (e < 0 || e >= num_tensors_ || edges_[e].dst >= 0) throw node.error(fmt::format("tensor {} out of range or repeated", e));
        if (src < 0 || src >= num_ops_) throw node.error(fmt::format("producer {} out of range", src));
        edges_[e] = {static_cast<OpId>(src), node_ops[k], bytes[d]};
      }
    if (const pb::AttributeProto* gradients = find_attr(node.node.attr(), "placesim.dep_gradients"))
      for (const std::int64_t e : gradients->int64_list().values()) {
        if (std::find(tensors.begin(), tensors.end(), e) == tensors.end())
          throw node.error(fmt::format("placesim.dep_gradients names tensor {}, not one of its inputs", e));
        edges_[e].gradient = true;
      }
    if (const pb::AttributeProto* latencies = find_attr(node.node.attr(), "placesim.dep_latencies")) {
      const auto& pairs = latencies->int64_list().values();
      if (pairs.size() % 2 != 0) throw node.error("placesim.dep_latencies must list pairs of a tensor and its latencies");
      for (int i = 0; i < pairs.size(); i += 2) {
        const std::int64_t e = pairs[i], count = pairs[i + 1];
        if (std::find(tensors.begin(), tensors.end(), e) == tensors.end())
          throw node.error(fmt::format("placesim.dep_latencies names tensor {}, not one of its inputs", e));
        if (count < 1 || count > std::numeric_limits<std::int32_t>::max())
          throw node.error(fmt::format("placesim.dep_latencies gives tensor {} {} latencies; expected a whole number >= 1", e, count));
        edges_[e].latencies = static_cast<std::int32_t>(count);
      }
    }
    const pb::AttributeProto* overhead_ids = find_attr(node.node.attr(), "placesim.dep_overhead_tensors");
    const pb::AttributeProto* overheads = find_attr(node.node.attr(), "placesim.dep_overheads");
    if ((overhead_ids == nullptr) != (overheads == nullptr))
      throw node.error("placesim.dep_overhead_tensors and placesim.dep_overheads go together");
    if (overhead_ids) {
      const auto& ids = overhead_ids->int64_list().values();
      const auto& seconds = overheads->double_list().values();
      if (ids.size() != seconds.size()) throw node.error("placesim.dep_overheads must give one time per tensor of placesim.dep_overhead_tensors");
      for (int i = 0; i < ids.size(); ++i) {
        if (std::find(tensors.begin(), tensors.end(), ids[i]) == tensors.end())
          throw node.error(fmt::format("placesim.dep_overhead_tensors names tensor {}, not one of its inputs", ids[i]));
        if (!(seconds[i] >= 0) || !std::isfinite(seconds[i]))
          throw node.error(fmt::format("placesim.dep_overheads gives tensor {} {} s; expected a finite time >= 0", ids[i], seconds[i]));
        edges_[ids[i]].overhead_s = seconds[i];
      }
    }
  }

  // The graph and the collectives, once every operator, tensor and collective has been read.
  void assemble() {
    const std::string& path = files_.front().path;
    for (std::size_t u = 0; u < ops_.size(); ++u)
      if (!seen_[u]) throw InputError(path, "GlobalMetadata", fmt::format("operator {} is on no rank", u));
    for (auto& op : ops_) out_.graph.add_operator(std::move(op));
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      if (edges_[e].dst < 0) throw InputError(path, "GlobalMetadata", fmt::format("tensor {} has no consumer in the traces", e));
      out_.graph.add_tensor(edges_[e].src, edges_[e].dst, edges_[e].bytes, edges_[e].gradient, edges_[e].latencies,
                            edges_[e].overhead_s);
    }
    for (auto& [c, coll] : collectives_) {
      if (c != static_cast<std::int64_t>(out_.collectives.size()))
        throw InputError(path, "GlobalMetadata", fmt::format("collective {} is on no rank", out_.collectives.size()));
      for (OpId u = coll.first; u < coll.end; ++u)
        if (step_of_[u] != c)
          throw InputError(path, "GlobalMetadata",
                           fmt::format("operator {} lies in collective {}'s operators {}..{} but is not one of its steps", u, c,
                                       coll.first, coll.end - 1));
      out_.collectives.push_back(std::move(coll));
    }
  }

  std::vector<RankFile>& files_;
  ChakraTraces out_;
  std::int64_t num_ops_ = 0, num_tensors_ = 0;  // as the metadata says
  std::vector<Operator> ops_;
  std::vector<bool> seen_;
  std::vector<std::int64_t> step_of_;  // per operator, the collective whose step it is
  std::vector<Edge> edges_;
  std::map<std::int64_t, AppendedCollective> collectives_;
};

// Exactly what placesim wrote: operators and tensors by their placesim.op and placesim.tensor,
// collectives by placesim.collective, each tensor from its consumer's list of inputs.
ChakraTraces read_exact(std::vector<RankFile>& files) { return ExactReader(files).read(); }

// An integer attribute of a node whatever its width (-1 when it has none).
std::int64_t int_attr(const pb::Node& n, std::string_view name) {
  const pb::AttributeProto* a = find_attr(n.attr(), name);
  if (!a) return -1;
  switch (a->value_case()) {
    case pb::AttributeProto::kInt32Val: return a->int32_val();
    case pb::AttributeProto::kInt64Val: return a->int64_val();
    case pb::AttributeProto::kUint64Val: return static_cast<std::int64_t>(a->uint64_val());
    default: return -1;
  }
}

// read_foreign, pass by pass: the operators (compute nodes; with ChakraCollectives::Keep, each
// collective node's entry and exit), receives matched to sends, the dependencies between
// operators through every other node, then the collectives of each process group.
class ForeignReader {
 public:
  ForeignReader(std::vector<RankFile>& files, ChakraCollectives collectives)
      : files_(files), keep_(collectives == ChakraCollectives::Keep) {
    out_.ranks = static_cast<int>(files.size());
  }

  ChakraTraces read(const std::string& dir, const std::string& prefix) && {
    add_operators();
    match_receives();
    add_dependencies();
    // The collectives: the k-th node of a process group on each of its ranks is one collective.
    // Its ranks: those <prefix>.comm_groups.json gives the group (placesim's and ASTRA-sim's
    // communicator groups), else every rank with a node of that group.
    const fs::path groups_file = fs::path(dir) / (prefix + ".comm_groups.json");
    const std::map<std::string, std::vector<int>> listed_groups = keep_ && fs::exists(groups_file)
                                                                      ? read_groups(groups_file)
                                                                      : std::map<std::string, std::vector<int>>();
    for (const auto& [pg, per_rank] : by_group_) {
      std::vector<int> ranks;
      if (auto listed = listed_groups.find(pg); listed != listed_groups.end())
        ranks = listed->second;
      else
        for (const auto& [r, _] : per_rank) ranks.push_back(r);
      check_group(pg, per_rank, ranks, groups_file);
      add_group_collectives(pg, per_rank, ranks);
    }
    if (passed_through_ > 0)
      out_.warnings.push_back(fmt::format("{}: {} node{} neither compute nor send/receive (collectives, memory, metadata): "
                                          "not operators; the dependencies through them are kept",
                                          files_.front().path, passed_through_, passed_through_ == 1 ? "" : "s"));
    return std::move(out_);
  }

 private:
  struct Key {
    int rank;
    std::uint64_t id;
    bool operator<(const Key& o) const { return rank != o.rank ? rank < o.rank : id < o.id; }
  };
  using SendKey = std::tuple<int, int, int>;  // (src, dst, tag)
  // Per process group's rank, its collective nodes in file order: NCCL's issue order.
  using GroupNodes = std::map<int, std::vector<const pb::Node*>>;
  // Operators behind a node, each with the bytes of the transfer on the way.
  using Producers = std::vector<std::pair<OpId, double>>;

  static SendKey send_key(const pb::Node& n) {
    return {static_cast<int>(int_attr(n, "comm_src")), static_cast<int>(int_attr(n, "comm_dst")),
            static_cast<int>(int_attr(n, "comm_tag"))};
  }

  // Every node by (rank, id); the operators of compute nodes (and kept collective nodes); sends
  // in file order; collective nodes by process group.
  void add_operators() {
    for (int r = 0; r < out_.ranks; ++r)
      for (const auto& n : files_[r].nodes) {
        const std::string where = fmt::format("node {} ('{}')", n.id(), n.name());
        if (!nodes_.emplace(Key{r, n.id()}, &n).second) throw InputError(files_[r].path, where, "a node id used twice");
        // A send leaves its own rank, a receive arrives at its own rank.
        const char* own = n.type() == pb::COMM_SEND_NODE ? "comm_src" : n.type() == pb::COMM_RECV_NODE ? "comm_dst" : nullptr;
        if (own && int_attr(n, own) != r)
          throw InputError(files_[r].path, where, fmt::format("{} is {}, but the node is in rank {}'s trace", own, int_attr(n, own), r));
        if (n.type() == pb::COMP_NODE) {
          add_compute(r, n);
        } else if (keep_ && n.type() == pb::COMM_COLL_NODE) {
          add_kept_collective(r, n);
        } else if (n.type() == pb::COMM_SEND_NODE) {
          sends_[send_key(n)].push_back({r, n.id()});
        } else if (n.type() != pb::COMM_RECV_NODE) {
          ++passed_through_;
        }
      }
  }

  void add_compute(int r, const pb::Node& n) {
    Operator op;
    op.name = n.name().empty() ? fmt::format("node{}", n.id()) : n.name();
    if (name_uses_[op.name]++ > 0) op.name = fmt::format("rank{}/{}/{}", r, op.name, n.id());
    op.type = "chakra";
    op.compute_s = static_cast<double>(n.duration_micros()) * 1e-6;
    // Chakra's FLOPs, when the tool wrote them (tensor_size has no place in a placesim graph).
    if (const std::int64_t num_ops = int_attr(n, "num_ops"); num_ops > 0) op.flops = static_cast<double>(num_ops);
    op_of_[{r, n.id()}] = out_.graph.add_operator(std::move(op));
    out_.placement.push_back(r);
  }

  // A kept collective node is two communication steps per rank, entry (after what the node
  // waits for) and exit (what waits for the node waits for it); the replay runs the collective
  // between them. op_of_ holds the exit, entry_of_ the entry.
  void add_kept_collective(int r, const pb::Node& n) {
    const std::string base = fmt::format("rank{}/{}/{}", r, n.name().empty() ? "collective" : n.name(), n.id());
    entry_of_[{r, n.id()}] = out_.graph.add_operator({base + "/entry", "collective", 0.0, 0.0, -1, true});
    out_.placement.push_back(r);
    op_of_[{r, n.id()}] = out_.graph.add_operator({base + "/exit", "collective", 0.0, 0.0, -1, true});
    out_.placement.push_back(r);
    const pb::AttributeProto* pg = find_attr(n.attr(), "pg_name");
    by_group_[pg ? pg->string_val() : std::string()][r].push_back(&n);
  }

  // Each receive's send: those of the same (src, dst, tag) in file order.
  void match_receives() {
    std::map<SendKey, std::size_t> sends_taken;
    for (int r = 0; r < out_.ranks; ++r)
      for (const auto& n : files_[r].nodes) {
        if (n.type() != pb::COMM_RECV_NODE) continue;
        const SendKey key = send_key(n);
        auto& list = sends_[key];
        std::size_t& taken = sends_taken[key];
        if (taken >= list.size())
          throw InputError(files_[r].path, fmt::format("node {} ('{}')", n.id(), n.name()),
                           fmt::format("a receive from rank {} (tag {}) with no matching send", std::get<0>(key), std::get<2>(key)));
        matched_send_[{r, n.id()}] = list[taken++];
      }
  }

  // The operator node k stands for, or (through sends, receives, collectives and the rest) the
  // operators behind it, into `found` with `bytes` (0: each its own transfer's).
  void add_from(const Key& k, double bytes, Producers& found) {
    if (auto op = op_of_.find(k); op != op_of_.end()) {
      found.emplace_back(op->second, bytes);
      return;
    }
    for (const auto& [p, b] : producers_of(k)) found.emplace_back(p, bytes > 0 ? bytes : b);
  }

  // One entry per producer: the largest transfer on the way (one tensor per producer).
  static Producers largest_per_producer(const Producers& found) {
    std::map<OpId, double> by_producer;
    for (const auto& [p, bytes] : found) by_producer[p] = std::max(by_producer[p], bytes);
    return Producers(by_producer.begin(), by_producer.end());
  }

  // The operators behind a node's own data and control dependencies.
  Producers dependencies_of(const Key& k, const pb::Node& n) {
    Producers found;
    for (auto d : n.data_deps()) add_from({k.rank, d}, 0.0, found);
    for (auto d : n.ctrl_deps()) add_from({k.rank, d}, 0.0, found);
    return largest_per_producer(found);
  }

  // A non-operator node's producers, worked out once (chains of collectives with several
  // dependencies each would otherwise be walked once per path); a cycle is an error.
  const Producers& producers_of(const Key& k) {
    if (auto done = behind_.find(k); done != behind_.end()) return done->second;
    auto it = nodes_.find(k);
    if (it == nodes_.end())
      throw InputError(files_[k.rank].path, fmt::format("node {}", k.id), "a dependency on a node the file does not have");
    if (!visiting_.insert(k).second)
      throw InputError(files_[k.rank].path, fmt::format("node {} ('{}')", k.id, it->second->name()), "is on a dependency cycle");
    const pb::Node& n = *it->second;
    Producers found;
    if (n.type() == pb::COMM_RECV_NODE) {
      const std::int64_t size = int_attr(n, "comm_size");
      add_from(matched_send_.at(k), size > 0 ? static_cast<double>(size) : 0.0, found);
      found = largest_per_producer(found);
    } else {
      found = dependencies_of(k, n);
    }
    visiting_.erase(k);
    return behind_[k] = std::move(found);
  }

  // A tensor from each operator behind an operator's node to it; a kept collective waits at its
  // entry.
  void add_dependencies() {
    for (const auto& [key, op] : op_of_) {
      const auto entry = entry_of_.find({key.rank, key.id});
      const OpId waiting = entry != entry_of_.end() ? entry->second : op;
      for (const auto& [p, bytes] : dependencies_of(key, *nodes_.at(key))) out_.graph.add_tensor(p, waiting, bytes);
    }
  }

  // <prefix>.comm_groups.json: process group -> its ranks.
  std::map<std::string, std::vector<int>> read_groups(const fs::path& groups_file) const {
    std::map<std::string, std::vector<int>> listed_groups;
    std::ifstream in(groups_file);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(groups_file.string(), "", fmt::format("not JSON: {}", e.what()));
    }
    if (!j.is_object()) throw InputError(groups_file.string(), "", "expected an object of process group -> ranks");
    for (const auto& [name, ranks] : j.items()) {
      if (!ranks.is_array()) throw InputError(groups_file.string(), name, "expected a list of ranks");
      for (const auto& rank : ranks) {
        if (!rank.is_number_integer() || rank.get<long>() < 0 || rank.get<long>() >= out_.ranks)
          throw InputError(groups_file.string(), name, fmt::format("expected ranks 0..{}, got {}", out_.ranks - 1, rank.dump()));
        listed_groups[name].push_back(rank.get<int>());
      }
    }
    return listed_groups;
  }

  // Every rank of the group issues as many of its collectives, and no other rank issues any.
  void check_group(const std::string& pg, const GroupNodes& per_rank, std::span<const int> ranks, const fs::path& groups_file) const {
    const std::size_t count = per_rank.begin()->second.size();
    for (int r : ranks) {
      auto it = per_rank.find(r);
      const std::size_t here = it == per_rank.end() ? 0 : it->second.size();
      if (here != count)
        throw InputError(files_[r].path, fmt::format("pg_name '{}'", pg),
                         fmt::format("rank {} issues {} collectives of process group '{}', rank {} issues {}: their ranks "
                                     "must issue the same collectives in the same order",
                                     r, here, pg, per_rank.begin()->first, count));
    }
    for (const auto& [r, _] : per_rank)
      if (std::find(ranks.begin(), ranks.end(), r) == ranks.end())
        throw InputError(files_[r].path, fmt::format("pg_name '{}'", pg),
                         fmt::format("rank {} is not in process group '{}' ({})", r, pg, groups_file.string()));
  }

  // The group's k-th collective node on each of its ranks: one collective, of one type and size.
  void add_group_collectives(const std::string& pg, const GroupNodes& per_rank, std::span<const int> ranks) {
    const std::size_t count = per_rank.begin()->second.size();
    for (std::size_t k = 0; k < count; ++k) {
      const pb::Node& first = *per_rank.at(ranks.front())[k];
      const std::string where = fmt::format("node {} ('{}')", first.id(), first.name());
      TraceCollective c;
      c.name = fmt::format("{}#{}", pg.empty() ? "collective" : "pg" + pg, k);
      const auto op = collective_of_comm_type(int_attr(first, "comm_type"));
      if (!op)
        throw InputError(files_[ranks.front()].path, where,
                         fmt::format("comm_type {} is no collective placesim runs (all-reduce 0, reduce 1, all-gather 2, "
                                     "broadcast 5, all-to-all 6, reduce-scatter 7)",
                                     int_attr(first, "comm_type")));
      c.op = *op;
      // Chakra's comm_size (an all-gather's: one rank's piece) as placesim's bytes.
      c.bytes = collective_bytes_of_comm_size(*op, static_cast<double>(std::max<std::int64_t>(0, int_attr(first, "comm_size"))),
                                              static_cast<int>(ranks.size()));
      for (int r : ranks) {
        const pb::Node& n = *per_rank.at(r)[k];
        if (int_attr(n, "comm_type") != int_attr(first, "comm_type") || int_attr(n, "comm_size") != int_attr(first, "comm_size"))
          throw InputError(files_[r].path, fmt::format("node {} ('{}')", n.id(), n.name()),
                           fmt::format("collective {} of process group '{}' differs from rank {}'s (comm_type, comm_size)", k,
                                       pg, ranks.front()));
        c.group.push_back(r);
        c.entry.push_back(entry_of_.at({r, n.id()}));
        c.exit.push_back(op_of_.at({r, n.id()}));
      }
      out_.trace_collectives.push_back(std::move(c));
    }
  }

  std::vector<RankFile>& files_;
  const bool keep_;
  ChakraTraces out_;
  std::map<Key, const pb::Node*> nodes_;
  std::map<Key, OpId> op_of_;     // the operator of a compute node; a kept collective's exit
  std::map<std::pair<int, std::uint64_t>, OpId> entry_of_;  // a kept collective's entry
  std::map<std::string, GroupNodes> by_group_;              // per process group (pg_name)
  std::map<std::string, int> name_uses_;
  std::map<SendKey, std::vector<Key>> sends_;  // in file order, to pair with receives in the same order
  std::size_t passed_through_ = 0;
  std::map<Key, Key> matched_send_;  // per receive
  std::map<Key, Producers> behind_;  // producers_of's
  std::set<Key> visiting_;
};

// Another tool's traces: compute nodes as operators, send/receive pairs as tensors.
ChakraTraces read_foreign(std::vector<RankFile>& files, ChakraCollectives collectives, const std::string& dir,
                          const std::string& prefix) {
  return ForeignReader(files, collectives).read(dir, prefix);
}

}  // namespace

ChakraTraces read_chakra_traces(const std::string& dir, const std::string& prefix, ChakraCollectives collectives) {
  if (!fs::is_directory(dir)) throw InputError(dir, "", "expected a directory of Chakra traces (<prefix>.<rank>.et)");
  static const std::regex kName(R"((.*)\.(\d+)\.et)");
  std::map<std::string, std::map<int, std::string>> by_prefix;
  std::set<std::string> present;  // every prefix there is, to choose from
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName) || m[2].length() > 7) continue;
    present.insert(m[1]);
    if (!prefix.empty() && m[1] != prefix) continue;
    by_prefix[m[1]][std::stoi(m[2])] = entry.path().string();
  }
  if (by_prefix.empty()) {
    if (prefix.empty()) throw InputError(dir, "", "holds no Chakra trace (<prefix>.<rank>.et)");
    throw InputError(dir, "", fmt::format("holds no Chakra trace {}.<rank>.et{}", prefix,
                                          present.empty() ? std::string(" (it holds none at all)")
                                                          : fmt::format(" (its prefixes: {})", fmt::join(present, ", "))));
  }
  if (by_prefix.size() > 1) {
    std::string names;
    for (const auto& [p, _] : by_prefix) names += (names.empty() ? "" : ", ") + p;
    throw InputError(dir, "", fmt::format("holds the traces of several runs ({}); give the prefix (simulate --prefix, or "
                                          "prefix: beside a scenario's graph.chakra)",
                                          names));
  }
  const auto& ranks = by_prefix.begin()->second;
  std::vector<RankFile> files;
  for (const auto& [rank, path] : ranks) {
    if (rank != static_cast<int>(files.size()))
      throw InputError(dir, "", fmt::format("has no trace of rank {} ({}.{}.et)", files.size(), by_prefix.begin()->first, files.size()));
    files.push_back(read_rank(path));
  }
  bool placesim = true;
  for (const auto& f : files) {
    const pb::AttributeProto* producer = find_attr(f.meta.attr(), "producer");
    placesim = placesim && producer && producer->string_val() == kProducer && find_attr(f.meta.attr(), "placesim.operators") &&
               find_attr(f.meta.attr(), "placesim.tensors") && find_attr(f.meta.attr(), "placesim.ranks") &&
               find_attr(f.meta.attr(), "placesim.source") && find_attr(f.meta.attr(), "placesim.engine") &&
               find_attr(f.meta.attr(), "placesim.latency_s");
  }
  if (placesim) {
    const std::int64_t written = find_attr(files.front().meta.attr(), "placesim.ranks")->int64_val();
    if (written != static_cast<std::int64_t>(files.size()))
      throw InputError(dir, "", fmt::format("placesim wrote {} ranks, the directory holds {}", written, files.size()));
  }
  ChakraTraces out = placesim ? read_exact(files) : read_foreign(files, collectives, dir, by_prefix.begin()->first);
  out.graph.finalize(dir);
  return out;
}

ExecutionGraph replay_graph(const ChakraTraces& traces, const Cluster& cluster) {
  ExecutionGraph g;
  for (std::size_t u = 0; u < traces.graph.num_operators(); ++u) g.add(traces.graph.op(static_cast<OpId>(u)), traces.placement[u]);
  for (const Tensor& t : traces.graph.tensors()) g.graph.add_tensor(t.src, t.dst, t.bytes, t.gradient, t.latencies, t.overhead_s);
  g.collectives = traces.collectives;
  for (const TraceCollective& c : traces.trace_collectives) {
    if (c.group.size() < 2) {  // a group of one: nothing to exchange
      for (std::size_t r = 0; r < c.group.size(); ++r) g.depend(c.entry[r], c.exit[r]);
      continue;
    }
    CollectiveSpec spec;
    spec.op = c.op;
    spec.algorithm = c.op == CollectiveOp::AllToAll ? CollectiveAlgorithm::Direct : CollectiveAlgorithm::Ring;
    spec.group = c.group;
    spec.bytes = c.bytes;
    if (const std::string why = collective_problem(spec, cluster); !why.empty())
      throw InputError(cluster.description, c.name, "cannot run the traces' collective: " + why);
    const std::vector<OpId> done = append_collective(g, spec, cluster, c.name, c.entry);
    for (std::size_t r = 0; r < c.group.size(); ++r) g.depend(done[r], c.exit[r]);
  }
  g.graph.finalize("the replayed Chakra traces");
  return g;
}

}  // namespace placesim
