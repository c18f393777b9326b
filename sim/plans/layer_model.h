#pragma once
// Layer-level models: a network as a sequence of layers with forward and backward
// compute per micro-batch, parameters and activations, per tensor-parallel width -- what parallel
// plans (sim/plans/parallel_plan.h) split into pipeline stages, tensor-parallel groups and replicas.
// Units: seconds and bytes, per device of a tensor-parallel group of the model's width.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/names.h"

namespace placesim {

struct Layer {
  std::string name;
  double forward_s = 0, backward_s = 0;  // per micro-batch, on one GPU of the tensor-parallel group
  double parameter_bytes = 0;            // the layer's weights on that GPU, 2 bytes per parameter (fp16)
  double stashed_bytes = 0;              // what a micro-batch in flight keeps until its backward pass
  double output_bytes = 0;               // activation sent to the next layer, per micro-batch
  // Tensor-parallel all-reduces of the layer, per micro-batch, not included in forward_s and
  // backward_s (0: none, or already included, as in NEST's workloads).
  double tp_allreduce_forward_bytes = 0, tp_allreduce_backward_bytes = 0;
  // Mixture of experts: the part of parameter_bytes that is the experts' (all of them, on one
  // GPU), which expert parallelism spreads over its ep GPUs; and what each GPU sends in all in
  // one all-to-all (the tokens' copies for their top-k experts), two in the forward (dispatch,
  // combine) and two in the backward when ep > 1 (0: no experts, or the all-to-alls are in the
  // times already, as in NEST's workloads).
  double expert_parameter_bytes = 0;
  double expert_alltoall_bytes = 0;
  int experts = 1;  // the experts the layer's expert_parameter_bytes hold (ep must divide them)
  // One of the model's repeated blocks (a transformer layer), which Megatron's plans split evenly
  // over the stages; false for what comes before or after them (embedding, output head).
  bool block = true;
  // stashed_bytes with Megatron's sequence parallelism (ParallelPlan::sequence_parallel: the
  // layer's norms and dropouts split over the tensor-parallel group along the sequence); 0 when
  // the model has no such figure (NEST's workloads).
  double sequence_parallel_stashed_bytes = 0;
  // Every operator output of the layer for one micro-batch, intermediate ones included (NEST's
  // activationSize), which NEST's memory model holds for the micro-batch in compute
  // (ParallelPlan's memory_model: nest); 0 when the model has no such figure (the zoo's).
  double activation_bytes = 0;
  // The optimizer's update of the layer's weights on that GPU, once per iteration (0: free, as
  // in NEST's workloads). ZeRO 1 and up (Megatron's distributed optimizer) shard it over the
  // replicas.
  double optimizer_s = 0;
  // Context parallelism (LayerModel::context_parallel > 1, ring attention): the key and value
  // block of this GPU's part of the sequence, per micro-batch, which the forward passes around the
  // context ranks (an all-gather of cp blocks by ring) while the attention runs on the blocks it
  // has, and the backward passes again with the keys' and values' gradients (twice the bytes).
  // 0: no attention, or no context parallelism.
  double context_exchange_bytes = 0;
};

// An activation from one layer to a later one (indices into LayerModel::layers), per micro-batch.
struct LayerEdge {
  int src = 0, dst = 0;
  double bytes = 0;
};

// Where mixed-precision training keeps its gradients (Megatron-LM's table of bytes per parameter,
// docs/parallelism.md "Gradients in fp32"):
// - as_parameters: 16-bit gradients, reduced in 16 bits, and no fp32 copy (DeepSpeed's ZeRO
//   count, 2 + 2 + 12 bytes per parameter with Adam; NEST's workloads);
// - fp32_copy: Megatron's fp16 path: 16-bit gradients reduced in 16 bits, the optimizer keeping an
//   fp32 copy of them beside its master weights and moments (2 + 2 + 16 bytes; distributed
//   optimizer 4 + 16/d);
// - fp32: Megatron's bf16 path (accumulate_allreduce_grads_in_fp32, on under bf16; Megatron-Core's
//   grad_reduce_in_fp32): fp32 main gradients, reduced in fp32, twice a 16-bit reduction's bytes
//   (2 + 4 + 12 bytes; distributed optimizer 6 + 12/d).
enum class MainGradients { AsParameters, Fp32Copy, Fp32 };
inline constexpr EnumName<MainGradients> kMainGradientsNames[] = {
    {MainGradients::AsParameters, "as_parameters"}, {MainGradients::Fp32Copy, "fp32_copy"}, {MainGradients::Fp32, "fp32"}};

struct LayerModel {
  std::string name;
  // The gradients' precision (above): the zoo's follows Megatron-LM at the model's precision.
  MainGradients main_gradients = MainGradients::AsParameters;
  int tensor_parallel = 1;  // the width the layers' values are for
  // The expert-parallel width the values are for: 1 when every GPU holds all experts (the plan
  // spreads them, ParallelPlan::ep); more when the workload was built for that width (NEST's
  // Mixtral, EP 4: its parameters and times are per GPU of that width already).
  int expert_parallel = 1;
  // Tokens per sequence, which sequence parallelism splits over the tensor-parallel group (0:
  // not known, as in NEST's workloads).
  int sequence = 0;
  // Sequences per micro-batch (0: not known) and Megatron's model FLOPs of one micro-batch's
  // forward and backward over the whole model, every tensor rank together (0: not known): what
  // a plan's model TFLOP/s and MFU are counted from.
  int micro_batch = 0;
  double model_flops = 0;
  // The same with a causal model's attention scores and context counted half (what its masked
  // attention computes; 0: not known). Megatron's formula counts them whole, which overstates a
  // long-sequence run's MFU.
  double causal_model_flops = 0;
  // The context-parallel width the values are for (ParallelPlan::cp): each GPU holds 1/cp of every
  // sequence's tokens (Megatron's load-balanced split of a causal sequence into 2 cp chunks), so
  // its times, activations and model_flops are for that part (`sequence` stays the whole).
  int context_parallel = 1;
  // Whether the layers' norms and dropouts were timed on 1/tp of the tokens (sequence
  // parallelism) where that is known (the layer zoo; unset for measured workloads): a plan must
  // agree (sequence_parallel_problem).
  std::optional<bool> built_sequence_parallel;
  std::vector<Layer> layers;
  // Empty: a chain, layer i sending output_bytes to layer i + 1.
  std::vector<LayerEdge> edges;
  // NEST's workloads built with activation recomputation: a micro-batch in flight keeps what
  // recomputation needs (stashed_bytes: each layer's input), and the backward times leave the
  // recomputed forward out (what ParallelPlan's recompute: nest charges, and memory_model: nest
  // reads). False for the zoo, whose backward times include any recomputation.
  bool nest_recomputation = false;
  // What NEST's DP multiplies the layers' times by to mix them with communication in seconds, as it
  // does (the workload's nest_dp_time_scale: its per-layer milliseconds read as seconds); 0: the
  // model has none (the zoo's). ParallelPlan's compute_units: nest uses it.
  double nest_time_scale = 0;
  // Bytes per micro-batch that cross from layers [0, first) to layers [first, ...): what a
  // pipeline stage starting at `first` receives from the stages before it.
  double bytes_into(int first) const;
  // Bytes per micro-batch from layers [0, first) to layers [first, end): what a stage of those
  // layers receives itself (not what it relays to later stages), NEST's stash with recomputation.
  double bytes_entering(int first, int end) const;
};

// A model at every tensor-parallel width it was measured or built for.
struct LayerWorkload {
  std::string name;
  std::string source;  // file, or what built it
  std::map<int, LayerModel> by_tensor_parallel;
  // The model at width `tp`; throws InputError naming `field` when there is none.
  const LayerModel& at(int tp, const std::string& file, const std::string& field) const;
};

// A per-layer workload of NEST's first experiment (../shared/workloads/nest/<model>.<cluster>.mbs1.json,
// schema "nest-workload/1"; its README). Its times are seconds (`time_unit: s`) and its sizes
// bytes, per device of the variant's tensor-parallel width. A layer's stash is
// stashed_bytes_with_recompute when the file says activation_recomputation, else
// stashed_bytes_without_recompute (LayerModel::nest_recomputation says which); its output the
// bytes of its edges to later layers; its activation_bytes the file's (0 when absent); the
// model's nest_time_scale the file's nest_dp_time_scale (0 when absent). The
// tensor-parallel collectives are inside fwd_s and bwd_s already, and so are the all-to-alls of
// expert_parallel_degree (LayerModel::expert_parallel). A layer is a block when its kind is
// transformer_block (NEST's layer -1, the embedding, is not). Throws InputError naming the
// file and the field on anything malformed.
LayerWorkload load_nest_workload(const std::string& path);

}  // namespace placesim
