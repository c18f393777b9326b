#pragma once
// Parallel plans: data, tensor and pipeline parallelism, ZeRO, micro-batches and a
// pipeline schedule, over a layer-level model (sim/plans/layer_model.h), pinned to GPUs and compiled
// into the execution graph every engine runs (sim/core/execution_graph.h).
//
// What the graph holds, per replica d, stage p and tensor rank t (GPU gpus[(d*pp + p)*tp + t]):
//  - a forward and a backward operator per layer of the stage and micro-batch, with the layer's
//    times (per device of the tensor-parallel group);
//  - the layer's tensor-parallel all-reduces, when the model gives their bytes (NEST's workloads
//    include them in the times), among the stage's tp GPUs;
//  - activations to the next stage and their gradients back as point-to-point transfers between
//    GPUs of equal tensor rank (LayerModel::bytes_into, per micro-batch): with tp > 1, 1/tp of it
//    from each rank and a ring all-gather among the receiving ranks (Megatron's scatter-gather,
//    ParallelPlan::scatter_gather), or all of it from each rank without;
//  - the schedule's order on each GPU as zero-byte edges: GPipe (every forward, then every
//    backward, micro-batches in order) or 1F1B (stage p runs min(pp - p - 1, m) forwards, then
//    one forward and one backward in turn, then the remaining backwards);
//  - the gradient reduction across replicas, one bucket per layer, ready when the layer's last
//    backward has run and overlapping the backward of the layers before it (overlap_grad_reduce;
//    else ready when the GPU's last backward has run; collectives are
//    communication steps, which never wait for their GPU: Operator::communication). The
//    collectives of one data-parallel group (a stage's tensor rank across replicas) run one after
//    another, as NCCL runs a communicator's on its stream, in the order their buckets are ready
//    (the last layer first): ZeRO 0 an all-reduce of the layer's gradients; ZeRO 1 and 2 a
//    reduce-scatter, and after the group's last one (the optimizer step) an all-gather of each
//    layer's updated parameters (overlap_param_gather: before the layer's
//    first forward instead); ZeRO 3 a reduce-scatter, and an all-gather of the layer's
//    parameters before its first forward (in layer order, one after another) and again (after
//    the forward before the stage's first backward) before its first backward (in backward
//    order, one after another): prefetches, not queued behind the reductions.
// The optimizer step (Layer::optimizer_s; ZeRO 1 and up: 1/dp of it) follows the GPU's last
// backward and its group's reductions (with overlap_param_gather: the reduce-scatters alone).
//
//  - with expert parallelism, a layer's all-to-alls after its tensor-parallel all-reduce (the
//    layer's compute is not split around them), among the replicas of its expert-parallel group.
//
// Memory per GPU, mixed precision (PlanAssumptions::optimizer: Adam, 2 + 2 + 12 bytes per
// parameter, by default; SGD 2 + 2): parameters P, gradients P and optimizer states 6P (Adam) or
// none (SGD), where P is the stage's parameter bytes (2 per parameter); with fp32 main gradients
// (LayerModel::main_gradients, Megatron's bf16) gradients 2P, reduced in fp32; with Megatron's
// fp16 copy of them the optimizer states 2P more;
// an expert layer's experts count 1/ep of theirs; ZeRO shards them over dp/ep replicas and the
// rest over dp. ZeRO 1 divides the optimizer states by dp, ZeRO 2 also the gradients, ZeRO 3 also the
// parameters (and adds a buffer of its largest layer's gathered parameters). Activations: the
// stage's stashed bytes per micro-batch times the micro-batches in flight at the peak -- GPipe
// all m, 1F1B min(m, pp - p). NEST's memory model (memory_model: nest) counts them as NEST's DP
// does: every operator output of the stage's layers (Layer::activation_bytes) for the micro-batch
// in compute, plus the stash of each other one in flight (with recomputation the bytes entering
// the stage, else all its activations again): GpuMemory::workspace holds the first less one stash.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/collectives/collectives.h"
#include "sim/plans/layer_model.h"
#include "sim/core/names.h"

namespace placesim {

enum class PipelineSchedule { GPipe, OneFOneB };
inline constexpr EnumName<PipelineSchedule> kPipelineScheduleNames[] = {
    {PipelineSchedule::GPipe, "gpipe"},
    {PipelineSchedule::OneFOneB, "1f1b"},
};

// How a plan's GPUs are ordered, innermost first: tensor ranks, then stages, then replicas
// (ParallelPlan's default) or tensor ranks, then replicas, then stages (Megatron-LM's default
// without context parallelism, and NEST's placement, thesis 3.9: tensor groups closest, then ZeRO
// replicas, then stages).
enum class GpuOrder { TpPpDp, TpDpPp };
inline constexpr EnumName<GpuOrder> kGpuOrderNames[] = {{GpuOrder::TpPpDp, "tp-pp-dp"}, {GpuOrder::TpDpPp, "tp-dp-pp"}};

// The optimizer's states on top of the fp16 parameters and gradients: Adam's fp32 momentum,
// variance and master copy (12 bytes per parameter, 6x the parameters' bytes), or none (SGD, as
// NEST's experiments run).
enum class Optimizer { Adam, Sgd };
inline constexpr EnumName<Optimizer> kOptimizerNames[] = {{Optimizer::Adam, "adam"}, {Optimizer::Sgd, "sgd"}};

// How a stage's activations are counted: placesim's (each micro-batch in flight keeps its stash,
// Layer::stashed_bytes) or NEST's DP's (every operator output of the stage for the micro-batch in
// compute, Layer::activation_bytes, plus one stash per other micro-batch in flight, the bytes
// entering the stage with recomputation).
enum class MemoryModel { Placesim, Nest };
inline constexpr EnumName<MemoryModel> kMemoryModelNames[] = {{MemoryModel::Placesim, "placesim"},
                                                              {MemoryModel::Nest, "nest"}};

// Whether recomputation's extra forward is charged where the workload's times leave it out
// (LayerModel::nest_recomputation): none (the times as given), or NEST's DP's charge: every stage
// with more than one micro-batch in flight (1F1B: all but the last) re-runs its layers' forward
// before their backward, priced, as NEST's code prices it, at the layers' backward time.
enum class RecomputeCharge { None, Nest };
inline constexpr EnumName<RecomputeCharge> kRecomputeChargeNames[] = {{RecomputeCharge::None, "none"},
                                                                      {RecomputeCharge::Nest, "nest"}};

// The units NEST's estimate reads the layers' times in: seconds, or NEST's DP's (the times x
// LayerModel::nest_time_scale: NEST's per-layer milliseconds read as seconds beside communication
// in seconds). The engines keep seconds.
enum class ComputeUnits { Seconds, Nest };
inline constexpr EnumName<ComputeUnits> kComputeUnitsNames[] = {{ComputeUnits::Seconds, "seconds"},
                                                                {ComputeUnits::Nest, "nest"}};

// What a plan's memory and time are modelled with, where NEST's DP and placesim differ; each
// defaults to placesim's. Every planner, the estimate and the engines' memory checks read the
// plan's (ParallelPlan::assumptions); the planners' configs derive from it (sim/config/plan_options.h:
// the keys, declared once).
struct PlanAssumptions {
  Optimizer optimizer = Optimizer::Adam;
  MemoryModel memory_model = MemoryModel::Placesim;
  RecomputeCharge recompute = RecomputeCharge::None;
  ComputeUnits compute_units = ComputeUnits::Seconds;
  // Pipeline sends beside the sender's next operator (Megatron's --overlap-p2p-comm); false: the
  // sender waits for their arrival, as Megatron-LM's do. Every planner sets the plan's
  // blocking_sends from it, so the plans a scenario compares run their sends alike.
  bool overlap_p2p_comm = false;
  // Each layer's gradient reduction as soon as its backward has run (Megatron's
  // --overlap-grad-reduce); false: all after the GPU's last backward. Every planner sets the
  // plan's overlap_grad_reduce from it.
  bool overlap_grad_reduce = true;
  bool operator==(const PlanAssumptions&) const = default;
};

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1;
  int micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int zero = 0;  // ZeRO stage 0-3, over the dp replicas
  // ZeRO 1 and 2 as Megatron's distributed optimizer runs them with --overlap-param-gather: the
  // updated parameters' all-gathers overlap the next iteration's forward instead of following the
  // optimizer step. In the one iteration simulated (its steady state), each layer's gather runs
  // before the layer's first forward, in layer order, one after another (as ZeRO 3's prefetches),
  // and the optimizer step follows the reduce-scatters alone. False: the gathers after the step.
  bool overlap_param_gather = false;
  // The gradient reductions overlap the backward (Megatron's --overlap-grad-reduce, PyTorch DDP's
  // buckets): each layer's once its last backward has run. False: all of them after the GPU's
  // last backward (and its last send), as Megatron runs them by default and its local DDP did.
  bool overlap_grad_reduce = true;
  // ZeRO 3's gathers ahead of the layer that needs them: 0, as far as the links let them run
  // (each after the previous one); n, each layer's gather for the forward is issued as the forward
  // of the layer n before it begins (once the layer before that is done), and for the backward as
  // the backward of the layer n after it begins: PyTorch FSDP's prefetch of the next layer (1),
  // its all-gathers issued from the current layer's pre-forward and pre-backward hooks.
  int zero3_prefetch = 0;
  // Expert parallelism, carved out of the replicas as Megatron-core and DeepSpeed-MoE do: ep
  // divides dp, and replicas ep*j .. ep*j + ep - 1 each hold 1/ep of every layer's experts
  // (LayerModel::expert_parallel 1) and exchange their tokens by all-to-all (direct, among equal
  // stage and tensor rank), twice per pass. The experts' gradients are reduced among the dp/ep
  // replicas holding the same experts (equal d mod ep), the rest among all dp.
  int ep = 1;
  // Context parallelism (Megatron-core's cp, ring attention), carved out of the replicas like ep:
  // cp divides dp, and replicas cp*j .. cp*j + cp - 1 run the same micro-batches, each on 1/cp of
  // every sequence (the model built at that width, LayerModel::context_parallel), passing their
  // key-value blocks around (Layer::context_exchange_bytes) beside the layers' compute. So dp
  // counts every copy of the weights, the context ranks included (Megatron's dp x cp): the
  // gradients are reduced and ZeRO shards over all of them, as Megatron's distributed optimizer
  // does; the iteration runs dp / cp x micro_batches x micro-batch size sequences.
  int cp = 1;
  // Interleaved 1F1B (Megatron-LM's virtual pipeline): each pipeline rank p holds this many
  // stages, p, p + pp, p + 2 pp, ..., of pp x virtual_stages in all, and runs them in Megatron's
  // interleaved order, which shrinks the bubble about virtual_stages times for more transfers
  // (the last rank hands on to the first). Needs 1f1b, pp >= 2 and micro_batches a multiple of pp.
  int virtual_stages = 1;
  // First layer of each stage (pp x virtual_stages entries, the first 0, increasing); empty:
  // balanced_stages.
  std::vector<int> stage_starts;
  // The plan's GPUs, gpus[(d*pp + p)*tp + t]; empty: GPUs 0 .. tp*pp*dp - 1 in that order
  // (tensor-parallel groups on consecutive GPUs, so inside a server, then stages, then replicas;
  // Megatron-LM's own default puts the replicas before the stages: placement/planners/megatron).
  std::vector<DeviceId> gpus;
  // For the reductions across replicas: the all-reduces, and ZeRO's reduce-scatters and
  // all-gathers when the algorithm has them (zero_collective_algorithm).
  CollectiveAlgorithm gradient_algorithm = CollectiveAlgorithm::Ring;
  // Megatron's scatter-gather between stages (tp > 1): each tensor rank sends 1/tp of the
  // activation (or its gradient) and the receiving stage all-gathers it over its tensor-parallel
  // group (NVLink, when the group is inside a server); false: each rank sends all of it.
  bool scatter_gather = true;
  // Megatron's sequence parallelism (Korthikanti et al. 2022; tp > 1): each layer's tensor-parallel
  // all-reduces become reduce-scatters and all-gathers (the same bytes by ring), the activations
  // between them are split along the sequence, so a micro-batch in flight keeps
  // Layer::sequence_parallel_stashed_bytes, and stages hand over 1/tp of the activation per rank
  // with no all-gather (the next layer's own all-gather does it).
  bool sequence_parallel = false;
  // Megatron's --tp-comm-overlap (Transformer Engine's userbuffers; needs sequence_parallel): each
  // layer's tensor-parallel reduce-scatters and all-gathers run beside its compute, from where the
  // layer starts to a join with it, rather than after it (a bound on the overlap: TE pipelines
  // them with the GEMMs next to them alone, and its communication takes SMs from the GEMMs).
  bool tp_comm_overlap = false;
  // Megatron's point-to-point sends between stages block the sender (batch_isend_irecv, then a
  // wait on every request): the sender's next operator waits until the activation (its gradient)
  // has arrived. And they rendezvous: a transfer starts once the receiver has posted its receive,
  // which Megatron does between the schedule's steps (1F1B: after each unit; interleaved 1F1B's
  // steady state: after each forward and the backward that follows it, both sent at once after
  // the backward, and the next step waits for both receives). False: the send runs beside the
  // sender's next operator, its receive posted early (Megatron's --overlap-p2p-comm, interleaved
  // schedules only there). The receiver waits for it either way.
  bool blocking_sends = false;
  // Per stage, its own tensor-parallel width (pp entries; not interleaved); empty: tp for every
  // stage. Stage p runs the workload's layers as measured or built at its width, on a group of
  // that many GPUs; where neighbouring stages differ, each rank of the receiving stage gets 1/a
  // of the activation (its gradient, on the way back) from each of the a ranks of the sending
  // stage. tp must be the first stage's.
  std::vector<int> stage_tp;
  PlanAssumptions assumptions;
  // NEST's estimate prices the plan as NEST's code prices its manual baseline
  // (device_placement.cpp, fixedConfigTimePerBatch lists the stages last first): stage p's
  // micro-batches in flight, and so its memory check and whether it recomputes
  // (RecomputeCharge::Nest), are counted as p + 1 instead of pp - p, the last stage priced as the
  // first. For reproducing NEST's reference ratios; the engines and plan_layout keep the schedule's.
  bool nest_baseline_pricing = false;

  // Stage s's tensor-parallel width (interleaved: its pipeline rank's).
  int width(int s) const { return stage_tp.empty() ? tp : stage_tp[static_cast<std::size_t>(s % pp)]; }
  // GPUs per replica: the sum of the pipeline ranks' widths.
  long gpus_per_replica() const;
  // Whether stage_tp gives some stage another width than tp (equal widths are the uniform plan).
  bool mixed_widths() const {
    for (int w : stage_tp)
      if (w != tp) return true;
    return false;
  }
};

// Whether the plan spreads the model's experts over its ep replicas: a model built for ep 1 (the
// zoo's) holds every expert per GPU until a plan spreads them; one built for its expert width
// (NEST's Mixtral) has them per GPU already, its all-to-alls inside its times.
inline bool plan_spreads_experts(const LayerModel& model, const ParallelPlan& plan) {
  return plan.ep > 1 && model.expert_parallel == 1;
}

// The algorithm of ZeRO's reduce-scatters and all-gathers under a plan's gradient_algorithm: that
// algorithm when it has them (ring, halving-doubling, direct), else ring, as NCCL runs
// reduce-scatter and all-gather by ring whichever algorithm its all-reduces take (tree,
// hierarchical, multi-level).
CollectiveAlgorithm zero_collective_algorithm(CollectiveAlgorithm gradient_algorithm);

struct GpuMemory {
  double parameters = 0, gradients = 0, optimizer_states = 0, activations = 0;
  // NEST's memory model: what the micro-batch in compute holds beyond its stash (every operator
  // output of the stage less one stash), held throughout like the parameters; 0 otherwise.
  double workspace = 0;
  double total() const { return parameters + gradients + optimizer_states + activations + workspace; }
};

// A layer's activations of one micro-batch, stashed on a GPU from its forward's start until its
// backward's end: the memory that varies over an iteration (the rest is held throughout).
struct HeldActivation {
  OpId forward = -1, backward = -1;  // in CompiledPlan::graph
  int gpu_index = 0;                 // into CompiledPlan::gpus
  double bytes = 0;
};

// What a compiled plan's execution graph was compiled from (ExecutionGraph::plan): the plan as
// used (its stage starts and GPUs filled in) and the model at its tensor-parallel width (null when
// its stages differ in width), for the estimate engine.
struct PlanOrigin {
  std::shared_ptr<const LayerModel> model;
  ParallelPlan plan;
};

struct CompiledPlan {
  ExecutionGraph graph;             // finalized
  std::vector<int> stage_starts;    // as used
  std::vector<DeviceId> gpus;       // as used
  std::vector<GpuMemory> memory;    // per plan GPU (plan_gpu_index), at the peak
  // Per pipeline rank: micro-batches whose activations are held at the peak (interleaved: units
  // of one stage and one micro-batch).
  std::vector<int> in_flight;
  // "" when every GPU holds its peak; else which GPU does not, with the bytes (the first one).
  std::string infeasible;
  std::vector<HeldActivation> activations;  // compile_plan's (plan_layout leaves it empty)
};

// One GPU's memory over the iteration as an engine ran it: (time s, bytes held from then on),
// from time 0 with what it holds throughout (parameters, gradients, optimizer states).
using MemoryCurve = std::vector<std::pair<double, double>>;
// Per plan GPU (CompiledPlan::gpus' order), from the operators' start and finish times (s) of
// compiled.graph. A backward that ends as a forward starts frees first. Its peak is
// CompiledPlan::memory's (tests/test_parallel_plan.cpp), reached when the schedule says.
std::vector<MemoryCurve> memory_over_time(const CompiledPlan& compiled, std::span<const double> start,
                                          std::span<const double> finish);

// The plan's layout without its execution graph (CompiledPlan::graph left empty): stages, GPUs
// and memory at the peak, what compile_plan reports besides the graph. For pricing plans without
// running them (NEST's estimate at thousands of GPUs). Throws as compile_plan does.
CompiledPlan plan_layout(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster);
// The same for a plan whose stages may differ in width (ParallelPlan::stage_tp): each stage at
// the workload's model of its width.
CompiledPlan plan_layout(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster);

// Where replica d, pipeline rank p, tensor rank t is in ParallelPlan::gpus and CompiledPlan's
// per-GPU vectors: (d*pp + p)*tp + t when every stage has width tp.
std::size_t plan_gpu_index(const ParallelPlan& plan, int d, int p, int t);

// The GPUs of a plan (ParallelPlan::gpus) with its GPUs 0 .. tp*pp*dp - 1 in `order`: empty for
// TpPpDp (the default), else GPU (p*dp + d)*tp + t at replica d, stage p, rank t.
std::vector<DeviceId> gpus_in_order(int tp, int pp, int dp, GpuOrder order);
// The same with context parallelism (ParallelPlan::cp, replicas cp*j .. cp*j + cp - 1 a context
// group): each group's ranks next to each other inside the order, after the tensor ranks, as
// Megatron-core orders them (tp-cp-...): tp-pp-dp puts GPU ((j*pp + p)*cp + c)*tp + t at replica
// cp*j + c, stage p, rank t; tp-dp-pp has them there already.
std::vector<DeviceId> gpus_in_order(int tp, int pp, int dp, GpuOrder order, int cp);
// The same with each pipeline rank's own width (ParallelPlan::stage_tp): rank p's tensor ranks
// inside each replica's block of sum(widths) GPUs (TpPpDp), or ranks' blocks of dp x width with
// the replicas inside (TpDpPp).
std::vector<DeviceId> gpus_in_order(std::span<const int> widths, int dp, GpuOrder order);

// Contiguous stages of at least one layer each, minimising the largest stage's forward plus
// backward time (exact, by dynamic programming). Throws std::invalid_argument if pp exceeds
// the layers.
std::vector<int> balanced_stages(const LayerModel& model, int pp);

// Why the plan cannot be compiled ("" when it can): degrees below 1, more stages than layers,
// stage starts that are not increasing from 0, a GPU list of the wrong size or with repeats or
// GPUs the cluster lacks, ZeRO outside 0-3.
std::string plan_problem(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster);
// The same for a plan whose stages may differ in width: the workload must have each width, with
// the same layers.
std::string plan_problem(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster);

// The memory of each GPU of a stage holding layers [first, end) with `in_flight` micro-batches'
// activations held at the peak, under the plan's dp, ep and ZeRO stage (the model above).
GpuMemory stage_memory(const LayerModel& model, int first, int end, const ParallelPlan& plan, int in_flight);

// The optimizer states' bytes per parameter byte (2 bytes per parameter): Adam's 12 bytes per
// parameter are 6x, SGD's none.
inline double optimizer_state_factor(Optimizer optimizer) { return optimizer == Optimizer::Adam ? 6.0 : 0.0; }

// What a micro-batch of a stage holding layers [first, end) keeps while in flight (`stash`) and
// what the one in compute holds beyond it (`workspace`), by the plan's memory model.
struct StageActivations {
  double stash = 0, workspace = 0;
};
StageActivations stage_activations(const LayerModel& model, int first, int end, const ParallelPlan& plan);
// The same from the stage's sums: placesim's stash (the layers' stashed bytes), every operator
// output of its layers (Layer::activation_bytes) and the bytes entering it. (Inline: the planners'
// innermost loop.)
inline StageActivations stage_activations(double stashed, double every_output, double entering, bool recomputation,
                                          MemoryModel memory_model) {
  if (memory_model == MemoryModel::Placesim) return {stashed, 0.0};
  const double stash = recomputation ? entering : every_output;
  return {stash, std::max(0.0, every_output - stash)};
}

// stage_memory from the stage's sums, for planners that keep them as prefix sums: `dense` and
// `experts` (the GPU's 1/ep share) parameter bytes, `stash` bytes per micro-batch in flight, and
// ZeRO 3's gather buffer (its largest layer's parameters less the GPU's own shard); `workspace`,
// NEST's memory model's (StageActivations).
// The gradients are the model's MainGradients: fp32 ones take twice the 16-bit parameters' bytes,
// and Megatron's fp16 path keeps an fp32 copy of them with the optimizer's states.
// (Inline: planners call it in their innermost loop.)
inline GpuMemory gpu_memory(double dense, double experts, double stash, double gather_buffer, const ParallelPlan& plan,
                            MainGradients main_gradients, int in_flight, double workspace = 0) {
  const double params = dense + experts;
  const double sharded = dense / plan.dp + experts / (plan.dp / plan.ep);  // what ZeRO keeps of them
  GpuMemory mem;
  mem.parameters = plan.zero >= 3 ? sharded + gather_buffer : params;
  mem.gradients = (main_gradients == MainGradients::Fp32 ? 2.0 : 1.0) * (plan.zero >= 2 ? sharded : params);
  const double states = optimizer_state_factor(plan.assumptions.optimizer) + (main_gradients == MainGradients::Fp32Copy ? 2.0 : 0.0);
  mem.optimizer_states = states * (plan.zero >= 1 ? sharded : params);
  mem.activations = in_flight * stash;
  mem.workspace = workspace;
  return mem;
}

// Whether stage p of S (pp x virtual_stages) is charged a recomputed forward: recompute: nest on a
// workload whose times leave it out, every stage but the last (NEST's: more than one micro-batch
// in flight under 1F1B).
inline bool stage_recomputes(const LayerModel& model, const ParallelPlan& plan, int p, int S) {
  return plan.assumptions.recompute == RecomputeCharge::Nest && model.nest_recomputation && p + 1 < S;
}

// Why the model cannot take the plan's assumptions ("" when it can): NEST's memory model needs
// every operator's output (Layer::activation_bytes), its units a workload's nest_time_scale; both
// and recompute: nest price NEST's one-width, non-interleaved pipeline.
std::string assumptions_problem(const LayerModel& model, const ParallelPlan& plan);

// Compiles the plan (the model must be the one at width plan.tp), its collectives' ring phases
// message by message or condensed (sim/collectives/collectives.h: CollectiveDetail). Throws
// std::invalid_argument with plan_problem's reason. An infeasible plan is compiled all the same:
// the caller decides (CompiledPlan::infeasible says why, naming the GPU and the bytes).
CompiledPlan compile_plan(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail = CollectiveDetail::Messages);
// The same for a plan whose stages may differ in width (ParallelPlan::stage_tp): each stage at the
// workload's model of its width.
CompiledPlan compile_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail = CollectiveDetail::Messages);
// The same with replicas 0 .. replicas - 1 only, folded (ExecutionGraph::fold): the graph stands
// for dp / replicas copies of that block, which must be one of fold_blocks (sim/plans/plan_folding.h,
// whose choose_fold picks it); replicas 0 or dp: the full graph. CompiledPlan::memory keeps every
// GPU; CompiledPlan::activations the block's.
CompiledPlan compile_plan(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                          int replicas);
CompiledPlan compile_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail, int replicas);

}  // namespace placesim
