#pragma once
// The plan compiler (compile_plan, sim/plans/parallel_plan.h): one pass per part of a training
// iteration, each in a file of its own:
//   plan_compiler.cpp        the passes in order, collectives resolved once
//   plan_schedule.cpp        each GPU's forward and backward units in its pipeline schedule
//   tensor_parallel.cpp      each layer's tensor-parallel collectives
//   context_and_experts.cpp  context-parallel key-value rings, expert all-to-alls
//   pipeline_exchanges.cpp   activations and their gradients between stages
//   gradient_reductions.cpp  the gradients' reductions across replicas, ZeRO's gathers
//   optimizer_step.cpp       the optimizer's step on each GPU
//   plan_memory.cpp          memory per GPU (the layout)
// Not for use outside sim/plans.
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/plans/plan_internals.h"

namespace placesim::plans {


// One layer of one micro-batch on one GPU: its forward and backward operators, and where each
// pass's result stands after the layer's tensor-parallel and expert collectives (the operator
// itself without any).
struct LayerOps {
  OpId forward = -1, backward = -1, forward_done = -1, backward_done = -1;
};

// The LayerOps of every replica d, stage s, tensor rank t, micro-batch i and layer k of the stage,
// in one flat vector: replicas outermost, then stages (each of its own width and layer count),
// tensor ranks, micro-batches, layers.
class LayerGrid {
 public:
  LayerGrid(const PlanIndex& at, int dp, int micro_batches) : micro_batches_(micro_batches) {
    for (int s = 0; s < at.stages; ++s) {
      stage_offset_.push_back(per_replica_);
      layers_.push_back(static_cast<std::size_t>(at.stage_end(s) - at.starts[s]));
      per_replica_ += static_cast<std::size_t>(at.width(s)) * micro_batches * layers_.back();
    }
    cells_.resize(per_replica_ * static_cast<std::size_t>(dp));
  }
  LayerOps& operator()(int d, int s, int t, int i, int k) { return cells_[index(d, s, t, i, k)]; }
  const LayerOps& operator()(int d, int s, int t, int i, int k) const { return cells_[index(d, s, t, i, k)]; }

 private:
  std::size_t index(int d, int s, int t, int i, int k) const {
    return static_cast<std::size_t>(d) * per_replica_ + stage_offset_[s] +
           (static_cast<std::size_t>(t) * micro_batches_ + i) * layers_[s] + k;
  }
  std::size_t micro_batches_;
  std::size_t per_replica_ = 0;
  std::vector<std::size_t> stage_offset_, layers_;  // per stage
  std::vector<LayerOps> cells_;
};

// A stage's micro-batches in its schedule: of its first forward, of the last forward before its
// first backward (1F1B interleaves them: the stage's last forward comes after its first
// backward), of its first and of its last backward.
struct StageMarks {
  int first_forward = -1, forward_before_backward = -1, first_backward = -1, last_backward = -1;
};

// A group of replicas reducing the gradients of one stage and tensor rank: of the experts' part of
// the layers' parameters (1/ep of it, among the replicas holding the same experts) or of the rest;
// `tag` names its collectives and its queue.
struct ReductionGroup {
  int stage = 0, tensor_rank = 0;
  std::vector<int> replicas;
  bool experts = false;
  std::string tag;
  // Folded: the first `built` replicas are compiled, the others are their copies (all of them
  // otherwise).
  int built = 0;
};

// A unit on its GPU: its stage, micro-batch and pass (stage -1: none).
struct UnitRef {
  int stage = -1, micro_batch = 0;
  bool forward = true;
};

// The gates of one blocking send (ParallelPlan::blocking_sends; -1: none): the sender's operator
// after the send (`after`), the end of the sender's exchange step where not the sending unit's
// (`ready`: the paired backward's, its collectives included), the receiver's operator after which
// it posts the receive (`posted`: the end of the unit before its step) and the first of the
// receiver's step that waits for it where not the receiving one (`step_start`).
struct SendGates {
  OpId after = -1, ready = -1, posted = -1, step_start = -1;
};

// The gates of the blocking sends between two stages: after and ready per sending rank, posted
// and step_start per receiving rank.
struct Handshake {
  Handshake(int senders, int receivers)
      : after(senders, -1), ready(senders, -1), posted(receivers, -1), step_start(receivers, -1) {}
  SendGates gates(int sender, std::size_t receiver) const {
    return {after[sender], ready[sender], posted[receiver], step_start[receiver]};
  }
  std::vector<OpId> after, ready, posted, step_start;
};

// The collectives of one data-parallel group (pipeline rank, tensor rank, tag) run one after
// another, as NCCL runs a communicator's on its stream; interleaved, a rank's stages share their
// GPUs' communicator. `tail`: per replica, the end of the group's last collective (empty: none
// yet). `scattered`: (stage, layer) reduce-scattered (ZeRO 1, 2), whose all-gathers follow the
// group's last reduce-scatter.
struct ReductionQueue {
  std::vector<OpId> tail;
  std::vector<std::pair<int, int>> scattered;
};

// compile_plan of a checked plan, each pipeline rank at its model: one method per pass over a
// LayerGrid. Each pass adds its operators and tensors in a fixed order: operator ids break the
// engines' ties, so the order is part of the result.
class PlanCompiler {
 public:
  // `replicas`: compile replicas 0 .. replicas - 1 only, folded (sim/core/folding.h): a block of
  // whole context and expert groups standing for every block of as many (0: every replica).
  PlanCompiler(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
               int replicas = 0);

  CompiledPlan compile() &&;

 private:
  ExecutionGraph& graph() { return out_.graph; }
  // Stage s's model (its pipeline rank's); every stage's has the same layers.
  const LayerModel& model_of(int s) const { return *models_[static_cast<std::size_t>(s % pp_)]; }
  int first_layer(int s) const { return out_.stage_starts[s]; }
  int layer_count(int s) const { return at_.stage_end(s) - out_.stage_starts[s]; }
  DeviceId gpu(int d, int s, int t) const { return out_.gpus[at_.gpu_index(d, s, t)]; }

  // Compute operators, GPU by GPU, in schedule order, chained on their GPU.
  void add_compute();

  // The units of pipeline rank r on replica d's GPU of tensor rank t. With blocking sends, each
  // unit's place between the pipeline's exchanges (unit_next_, unit_previous_, unit_paired_):
  // Megatron exchanges after every unit of 1F1B, and in the interleaved schedule's steady state
  // after each forward and the backward that follows it (one batched send and receive of both).
  void add_gpu_compute(int d, int r, int t, const std::vector<bool>& recomputes);

  // append_collective with the spec resolved as NCCL runs it (nccl_resolved) once per distinct
  // collective: a plan repeats each group's collectives for every layer and micro-batch, and
  // pricing NCCL's protocols is what the compile would spend most of its time on.
  std::vector<OpId> add_collective(const CollectiveSpec& spec, const Cluster& cluster, const std::string& name,
                                   std::span<const OpId> after, int represented = 0);
  // A collective of a replica group: folded, over its built replicas only.
  std::vector<OpId> add_group_collective(const ReductionGroup& group, const CollectiveSpec& spec, const std::string& name,
                                         std::span<const OpId> after);
  // The folding of the compiled replicas (replicas_ < dp_).
  Folding folding() const;

  // The optimizer's step on each GPU (Layer::optimizer_s of its layers; ZeRO 1 and up update
  // 1/dp of them), after its last backward and its gradient reductions. With ZeRO 1 and 2 it
  // follows the parameters' all-gathers too, where Megatron runs them after it: the same work
  // one after another on the GPU's critical path.
  void add_optimizer_steps();

  // The activations each forward stashes until its backward.
  void add_stashes();

  // The tensor-parallel all-reduce after `ops` (one per tensor rank), or the ops themselves; with
  // sequence parallelism a reduce-scatter, then an all-gather.
  // In the backward, sequence parallelism also gathers again the column-parallel linears' inputs
  // it kept split (Korthikanti et al. 4.2.2): one more all-gather of the bytes, 1.5x the traffic
  // (Megatron overlaps it with the weight gradients' compute; here it runs after, a bound).
  std::vector<OpId> tp_allreduce(int d, int p, const std::vector<OpId>& ops, double bytes, bool backward);

  // Each layer's tensor-parallel all-reduces, forward then backward: the cells' *_done. With
  // tp_comm_overlap they run beside the layer's compute instead of after it (Transformer Engine's
  // all-gathers and reduce-scatters split into chunks pipelined with the GEMMs next to them): from
  // where the layer starts (the layer before it done; a stage's edge layers, with nothing before
  // them on the stage, after their own compute) to a join with the compute. A bound on the
  // overlap: TE hides them behind their GEMMs alone, and its communication takes SMs from them.
  void add_tensor_parallel_collectives();

  void tensor_parallel_collective(int d, int p, int i, int k, bool forward);

  // A step on replica d, stage p, rank t after both a layer's compute and the communication that
  // ran beside it (`what`: cp, tp): what follows the layer waits for it.
  OpId join(OpId compute, OpId communication, const char* what, int d, int p, int t, int i, int layer, bool forward);

  // Context parallelism: each attention layer's key-value ring among the cp replicas of a context
  // group (same stage and tensor rank), beside the layer: in the forward an all-gather of the
  // ranks' blocks by ring, from when the layer before it is done (its compute and collectives; the
  // layer's own projections make its keys and values), joined with the layer's compute and
  // collectives before what follows it (Megatron overlaps it with the attention's blocks alone:
  // a bound of the overlap); in the backward the same with the keys' and values' gradients too
  // (twice the bytes), from the next layer's backward. A stage's edge layers start their ring after
  // their own compute (nothing before them on the stage to start from). Runs after the
  // tensor-parallel and expert passes, whose ends it joins.
  void add_context_exchanges();

  // Expert parallelism: each expert layer's all-to-alls (dispatch, combine) in both passes, among
  // the replicas of each expert-parallel group.
  void add_expert_all_to_alls();

  // Replica by replica and stage by stage, the dependencies along the stage's layers, then the
  // hand-over to the next stage (a stage's gradients come from the next stage's done operators:
  // every stage's first).
  void link_layers_and_stages();

  void chain_layers(int d, int p);

  // Each micro-batch's activations from stage p to stage p + 1 of replica d, and their gradients
  // back.
  void hand_over_to_next(int d, int p);

  // Where a unit of replica d and tensor rank t ends: its last layer's forward, or its first
  // layer's backward, and their tensor-parallel collectives (-1: none).
  OpId done_of(int d, int t, const UnitRef& u) const {
    if (u.stage < 0) return -1;
    return u.forward ? grid_(d, u.stage, t, u.micro_batch, layer_count(u.stage) - 1).forward_done
                     : grid_(d, u.stage, t, u.micro_batch, 0).backward_done;
  }

  // Where a unit (replica d, stage s, tensor rank t, micro-batch i, a pass) is in unit_next_;
  // unit_index(dp_, 0, 0, 0, true) is their number.
  std::size_t unit_index(int d, int s, int t, int i, bool forward) const {
    return ((((static_cast<std::size_t>(d) * stages_ + s) * max_width_ + t) * micro_batches_ + i) * 2) + (forward ? 0 : 1);
  }

  // Activations to the next stage, gradients back: rank t to rank t, whole, or (scatter-gather)
  // 1/tp each and all-gathered by the receiving stage's tensor-parallel group, or (sequence
  // parallelism) 1/tp each, which is what the receiving rank works on. Between stages of
  // different widths (stage_tp), each receiving rank gets 1/a from each of the a senders.
  // A point-to-point send between stages: on an NCCL cluster it pays ncclSend's costs
  // (nccl_send_cost).
  // With blocking sends (SendGates::after >= 0) the transfer ends in a step on the receiver's GPU
  // that the sender's next operator waits for too (and the first of the receiver's exchange step),
  // and it starts at the sender's exchange once the receiver has posted its receive: NCCL's send
  // waits for its receive, and Megatron posts a stage's receives with its sends, between the
  // schedule's steps, and waits for all of them before the next step.
  // The transfer leaves `sender`, the GPU that holds `from`'s result: `from` itself, or, where it
  // is elsewhere (a tensor-parallel collective's last step) or the send waits for more, a step on
  // `sender` after it.
  void send(OpId from, DeviceId sender, OpId to, double bytes, const SendGates& gates = {});

  void hand_over(int d, int from_stage, int to_stage, std::span<const OpId> from, std::span<const OpId> to, const Handshake& blocking,
                 double activation_bytes, const std::string& name);

  // Gradient reduction across replicas, a bucket per layer, after its last backward; ZeRO's
  // all-gathers of parameters. Without experts, one group per stage and tensor rank: every
  // replica. With expert parallelism also one per expert shard e: the replicas d with d mod ep = e,
  // for the experts' part. A rank's stages go in the order their gradients are ready: the last
  // chunk's backwards run first.
  void add_gradient_reductions();

  StageMarks marks_of(int s) const;

  // The bytes the group reduces of `layer` (of its stage's model), per GPU.
  double reduced_bytes(const ReductionGroup& group, int layer) const;

  // The group's collective of `layer` (the rank's GPUs are the same for all its stages).
  CollectiveSpec reduction_spec(const ReductionGroup& group, int layer, CollectiveOp op) const;

  // Per replica of the group, the `which` operator of micro-batch i, layer k of the stage.
  std::vector<OpId> per_replica(const ReductionGroup& group, OpId LayerOps::*which, int i, int k) const;

  // Per replica of the group, its GPU's last operator of the schedule (its last backward, or the
  // step after it that waits for its last send).
  std::vector<OpId> last_computes(const ReductionGroup& group) const;

  // Per replica, a communication step after both `ready` and `queued` (empty: `ready` itself).
  std::vector<OpId> after_both(const ReductionGroup& group, std::vector<OpId> ready, const std::vector<OpId>& queued,
                               const std::string& name);

  // The group's collectives, on its queue: its buckets, ZeRO 3's gathers before the forwards,
  // and ZeRO 1 and 2's gathers of the updated parameters.
  void reduce(const ReductionGroup& group, const StageMarks& marks);

  // The buckets in the order they become ready (the backward runs from the last layer down), each
  // an all-reduce, or with ZeRO a reduce-scatter (ZeRO 3: and the parameters' gather for the
  // backward).
  void reduce_buckets(const ReductionGroup& group, const StageMarks& marks, ReductionQueue& queue);

  // ZeRO 3: the parameters are gathered before each layer's first forward, in forward order, one
  // after another (all at once, the first layer's gather would share the links with every other's).
  void gather_before_forwards(const ReductionGroup& group, const StageMarks& marks);

  const RankModels& models_;
  const ParallelPlan& plan_;
  const Cluster& cluster_;
  const CollectiveDetail detail_;
  const int pp_, dp_;
  const int replicas_;  // compiled: dp_, or a block of them (folded)
  const int micro_batches_;
  const int stages_;  // pp x virtual_stages (interleaved 1F1B: pipeline rank p holds stages p, p + pp, ...)
  const bool spreads_experts_;
  CompiledPlan out_;
  const PlanIndex at_;  // over out_.stage_starts
  LayerGrid grid_;
  std::vector<std::vector<Unit>> rank_orders_;  // per pipeline rank, its schedule
  long collectives_ = 0;                        // numbers the tensor-parallel and expert collectives
  long sends_ = 0;                              // numbers blocking sends' arrivals
  int max_width_ = 1;                           // the widest stage's tensor-parallel width
  std::vector<OpId> unit_next_;                 // blocking sends: per unit (unit_index), the operator after it on its GPU
  std::vector<UnitRef> unit_previous_;          // the unit before its exchange step (none: the first)
  std::vector<UnitRef> unit_paired_;            // a forward's: the backward of its exchange step (none: alone)
  std::vector<OpId> unit_step_start_;           // its exchange step's first operator, where not its own (-1)
  std::map<std::tuple<int, int, std::string>, ReductionQueue> queues_;
  std::map<std::tuple<int, int, double, int, int, int, int, int, int, std::vector<DeviceId>>, CollectiveSpec> resolved_;  // add_collective's
  std::unordered_map<DeviceId, OpId> last_compute_;                 // per GPU, its last compute operator
  std::unordered_map<DeviceId, std::vector<OpId>> reduction_ends_;  // per GPU, where its reductions end
};

}  // namespace placesim::plans
