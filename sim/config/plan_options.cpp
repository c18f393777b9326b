#include "sim/config/plan_options.h"

#include <cmath>

#include "sim/core/errors.h"

namespace placesim {

OptionSchema<DataParallelConfig> data_parallel_schema() {
  OptionSchema<DataParallelConfig> s;
  s.count("replicas", &DataParallelConfig::replicas,
          "copies of the placed graph, each on GPUs / replicas consecutive GPUs (required)", 1, 1 << 16, "4");
  s.choice("algorithm", &DataParallelConfig::algorithm,
           collective_algorithm_names(CollectiveOp::AllReduce),
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

OptionSchema<PlanAssumptions> plan_assumptions_schema() {
  OptionSchema<PlanAssumptions> s;
  s.choice("optimizer", &PlanAssumptions::optimizer, std::span<const EnumName<Optimizer>>(kOptimizerNames),
           "optimizer states per parameter beside the fp16 parameters and gradients (2 + 2 bytes), in every memory check "
           "of the plan: adam, 12 bytes of fp32 momentum, variance and master copy; sgd, none (NEST's experiments)");
  s.choice("memory_model", &PlanAssumptions::memory_model, std::span<const EnumName<MemoryModel>>(kMemoryModelNames),
           "how a stage's activations are counted: placesim (each micro-batch in flight keeps its stash: with "
           "recomputation each layer's input, else its activations) or nest (NEST's DP: every operator output of the "
           "stage's layers for the micro-batch in compute, recomputation or not, plus for each other micro-batch in "
           "flight the bytes entering the stage with recomputation, else all of them again; a NEST workload only)");
  s.choice("recompute", &PlanAssumptions::recompute, std::span<const EnumName<RecomputeCharge>>(kRecomputeChargeNames),
           "the time of activation recomputation where the workload's times leave it out (NEST's workloads built with it): "
           "none (the times as given) or nest (NEST's DP: every stage with more than one micro-batch in flight, under 1F1B "
           "all but the last, re-runs its layers' forward before their backward, priced at their backward time), in the "
           "estimate and the engines alike");
  s.choice("compute_units", &PlanAssumptions::compute_units, std::span<const EnumName<ComputeUnits>>(kComputeUnitsNames),
           "the units NEST's estimate (the objective of nest, nest-unaware and mcmc-plan, and the estimate engine's price) "
           "reads the layers' times in: seconds, or nest (NEST's DP: its per-layer milliseconds read as seconds beside "
           "communication in seconds, the times x the workload's nest_dp_time_scale; a NEST workload only); the other "
           "engines keep seconds");
  s.flag("overlap_p2p_comm", &PlanAssumptions::overlap_p2p_comm,
         "pipeline sends beside the sender's next operator (Megatron's --overlap-p2p-comm); false: the sender waits until its "
         "activation (gradient) has arrived, as Megatron-LM's sends do");
  s.flag("overlap_grad_reduce", &PlanAssumptions::overlap_grad_reduce,
         "each layer's gradient reduction as soon as its backward has run (Megatron's --overlap-grad-reduce); false: all of "
         "them after the GPU's last backward (Megatron's default), in every planner's plans alike");
  return s;
}

}  // namespace placesim
