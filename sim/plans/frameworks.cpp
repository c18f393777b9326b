#include "sim/plans/frameworks.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace placesim {

namespace {

// Sources, per profile:
//  - megatron-lm: placesim's defaults, Megatron-LM with --overlap-grad-reduce (each bucket's
//    reduction as soon as its layers' backward has run), the layers balanced by compute.
//  - megatron-lm-2021: Narayanan et al. 2021 (examples/sc21 of Megatron-LM): its local DDP
//    reduced every gradient after the backward (no overlap), the layers split evenly; no
//    sequence parallelism yet (Korthikanti et al. 2022).
//  - megatron-core: Megatron-Core's recommended flags (its README's benchmarks:
//    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap),
//    the layers split evenly.
//  - nemo: NeMo 2's recipes run Megatron-Core so, with sequence parallelism wherever tp > 1.
//  - deepspeed: DeepSpeed's pipeline engine (deepspeed/runtime/pipe): 1F1B without
//    interleaving, the gradients reduced after the backward, ZeRO stage 1 (ZeRO 2 and 3 do not
//    run with its pipeline), layers partitioned by parameters (even for uniform blocks).
//  - fsdp: PyTorch FSDP as torchtitan runs it: fully sharded (ZeRO 3), each layer's parameters
//    all-gathered before its forward and again before its backward, one layer ahead (FSDP2's
//    prefetch from the current layer's pre-forward and pre-backward hooks), its gradients
//    reduce-scattered as its backward ends; no Megatron distributed optimizer.
const FrameworkProfile kProfiles[] = {
    {.framework = Framework::MegatronLm,
     .summary = "Megatron-LM with --overlap-grad-reduce: each layer's gradients reduced as its backward ends (placesim's defaults)"},
    {.framework = Framework::MegatronLm2021,
     .summary = "Megatron-LM of 2021 (Narayanan et al.): local DDP, every gradient reduced after the backward; layers split evenly",
     .overlap_grad_reduce = false,
     .even_split = true,
     .sequence_parallel_allowed = false,
     .search_optimizers = "none"},
    {.framework = Framework::MegatronCore,
     .summary = "Megatron-Core's recommended flags: the distributed optimizer with overlapped reduce-scatters and gathers, "
                "tensor-parallel overlap with sequence parallelism; layers split evenly",
     .distributed_optimizer = true,
     .overlap_grad_reduce = true,
     .even_split = true,
     .tp_comm_overlap_with_sp = true,
     .search_optimizers = "none,distributed"},
    {.framework = Framework::Nemo,
     .summary = "NeMo's recipes (Megatron-Core): the distributed optimizer overlapped, sequence parallelism wherever tp > 1 with "
                "tensor-parallel overlap; layers split evenly",
     .distributed_optimizer = true,
     .overlap_grad_reduce = true,
     .even_split = true,
     .sequence_parallel_with_tp = true,
     .tp_comm_overlap_with_sp = true,
     .search_optimizers = "none,distributed"},
    {.framework = Framework::DeepSpeed,
     .summary = "DeepSpeed's pipeline engine: 1F1B without interleaving, gradients reduced after the backward, ZeRO 1; layers "
                "split evenly",
     .zero = 1,
     .overlap_grad_reduce = false,
     .even_split = true,
     .interleaving = false,
     .zero_beyond_1_with_pipeline = false,
     .distributed_optimizer_allowed = false,
     .gpipe = false,
     .search_optimizers = "none,zero1,zero2,zero3"},
    {.framework = Framework::Fsdp,
     .summary = "PyTorch FSDP (torchtitan): ZeRO 3, each layer's parameters gathered before its forward and its backward, one "
                "layer ahead, its gradients reduce-scattered as its backward ends",
     .zero = 3,
     .overlap_grad_reduce = true,
     .zero3_prefetch = 1,
     .distributed_optimizer_allowed = false,
     .search_optimizers = "zero2,zero3"},
};

}  // namespace

const FrameworkProfile& framework_profile(Framework f) {
  for (const FrameworkProfile& p : kProfiles)
    if (p.framework == f) return p;
  throw std::logic_error("framework_profile: a framework without a profile");
}

std::span<const FrameworkProfile> framework_profiles() { return kProfiles; }

FrameworkRefusal framework_refusal(Framework f, const FrameworkPlanShape& plan) {
  const FrameworkProfile& p = framework_profile(f);
  const std::string name(enum_name<Framework>(kFrameworkNames, f));
  const int virtual_stages = plan.virtual_stages, pp = plan.pp, zero = plan.zero;
  if (!p.sequence_parallel_allowed && plan.sequence_parallel)
    return {"sequence_parallel", fmt::format("{} has no sequence parallelism (Korthikanti et al. added it to Megatron-LM in 2022)", name)};
  if (!p.gpipe && plan.gpipe)
    return {"schedule", fmt::format("{}'s pipeline engine runs 1F1B only (its TrainSchedule), not GPipe", name)};
  if (!p.distributed_optimizer_allowed && plan.distributed_optimizer)
    return {"distributed_optimizer", fmt::format("{} shards with its own ZeRO stages (zero), not Megatron's distributed optimizer", name)};
  if (!p.interleaving && virtual_stages > 1)
    return {"virtual_stages", fmt::format("{} runs 1F1B without interleaving: expected 1 virtual stage, got {} (Megatron-LM interleaves)",
                                          name, virtual_stages)};
  if (!p.zero_beyond_1_with_pipeline && pp > 1 && zero > 1)
    return {"zero", fmt::format("{}'s pipeline engine runs ZeRO 1 at most (ZeRO 2 and 3 do not run with pipeline parallelism), got "
                                "ZeRO {} with pp {}",
                                name, zero, pp)};
  return {};
}

FrameworkApplication apply_framework_profile(Framework f, FrameworkSettings& s, const std::function<bool(std::string_view)>& given) {
  const FrameworkProfile& p = framework_profile(f);
  FrameworkApplication out;
  auto refusal = [&] {
    return framework_refusal(f, {s.virtual_stages, s.pp, s.zero, s.distributed_optimizer, s.sequence_parallel, s.gpipe});
  };
  if (out.refusal = refusal(); !out.refusal.key.empty()) return out;  // what the user gave, before the defaults
  // The profile's value where the user gave none; where the user gave another, the key is kept.
  auto set = [&](bool applies, std::initializer_list<const char*> keys, auto&& assign) {
    if (!applies) return;
    for (const char* k : keys)
      if (given(k)) {
        FrameworkSettings profiled = s;
        assign(profiled);
        if (profiled != s && std::find(out.kept.begin(), out.kept.end(), k) == out.kept.end()) out.kept.emplace_back(k);
        return;
      }
    assign(s);
  };
  set(p.distributed_optimizer.value_or(false), {"distributed_optimizer", "zero"}, [](FrameworkSettings& x) { x.distributed_optimizer = true; });
  set(p.zero.has_value() && !s.distributed_optimizer, {"zero"}, [&](FrameworkSettings& x) { x.zero = *p.zero; });
  set(p.overlap_grad_reduce.has_value(), {"overlap_grad_reduce"}, [&](FrameworkSettings& x) { x.overlap_grad_reduce = *p.overlap_grad_reduce; });
  set(p.even_split.value_or(false) && !s.stage_starts, {"split"}, [](FrameworkSettings& x) { x.even_split = true; });
  set(p.zero3_prefetch.has_value(), {"zero3_prefetch"}, [&](FrameworkSettings& x) { x.zero3_prefetch = *p.zero3_prefetch; });
  set(p.sequence_parallel_with_tp && s.tp > 1, {"sequence_parallel"}, [](FrameworkSettings& x) { x.sequence_parallel = true; });
  set(p.tp_comm_overlap_with_sp && s.sequence_parallel, {"tp_comm_overlap"}, [](FrameworkSettings& x) { x.tp_comm_overlap = true; });
  out.refusal = refusal();
  return out;
}

}  // namespace placesim
