#pragma once
// Framework profiles: how a training framework runs a plan, as named, documented behaviours
// rather than per-run factors (`plan --framework NAME`, docs/parallelism.md). A profile gives the
// defaults its framework runs with; a knob the user sets keeps the user's value, and what a
// framework cannot run (DeepSpeed's pipeline with interleaving) is refused with the reason.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/names.h"

namespace placesim {

enum class Framework { MegatronLm, MegatronLm2021, MegatronCore, Nemo, DeepSpeed, Fsdp };
inline constexpr EnumName<Framework> kFrameworkNames[] = {
    {Framework::MegatronLm, "megatron-lm"},   {Framework::MegatronLm2021, "megatron-lm-2021"},
    {Framework::MegatronCore, "megatron-core"}, {Framework::Nemo, "nemo"},
    {Framework::DeepSpeed, "deepspeed"},       {Framework::Fsdp, "fsdp"}};

struct FrameworkProfile {
  Framework framework = Framework::MegatronLm;
  const char* summary = "";  // what it changes, one line (printed by `plan`)
  // Defaults the profile sets where the user gave nothing; unset: placesim's own default.
  std::optional<int> zero = std::nullopt;                    // ZeRO stage
  std::optional<bool> distributed_optimizer = std::nullopt;  // Megatron's (ZeRO 1, gathers beside the next forward)
  std::optional<bool> overlap_grad_reduce = std::nullopt;    // each layer's reduction beside the backward
  std::optional<bool> even_split = std::nullopt;             // the layers evenly over the stages (Megatron's layout)
  std::optional<int> zero3_prefetch = std::nullopt;          // ZeRO 3's gathers ahead (ParallelPlan::zero3_prefetch)
  bool sequence_parallel_with_tp = false;     // sequence parallelism wherever tp > 1 (the recipes')
  bool tp_comm_overlap_with_sp = false;       // tensor-parallel overlap wherever sequence parallel
  // What the framework cannot run.
  bool interleaving = true;        // virtual stages > 1
  bool zero_beyond_1_with_pipeline = true;  // ZeRO 2 or 3 with pp > 1
  bool distributed_optimizer_allowed = true;  // Megatron's distributed optimizer (FSDP shards its own way)
  bool gpipe = true;                          // the GPipe schedule (DeepSpeed's pipeline engine runs 1F1B only)
  bool sequence_parallel_allowed = true;      // sequence parallelism (Megatron-LM added it in 2022)
  // The optimizer sharding `placesim search` tries under the profile (its --optimizer names:
  // none, distributed, zero1, zero2, zero3), comma-separated.
  const char* search_optimizers = "none,distributed,zero2,zero3";
};

const FrameworkProfile& framework_profile(Framework f);

// What the framework cannot run: the setting (its keyword: virtual_stages, zero,
// distributed_optimizer, sequence_parallel, schedule) and why; an empty key when it runs the plan.
struct FrameworkRefusal {
  std::string key, reason;
};
// The plan's settings a framework may refuse.
struct FrameworkPlanShape {
  int virtual_stages = 1, pp = 1, zero = 0;
  bool distributed_optimizer = false, sequence_parallel = false, gpipe = false;
};
FrameworkRefusal framework_refusal(Framework f, const FrameworkPlanShape& plan);
// The settings a profile gives defaults to, as one frontend holds them (plan's flags, Python's
// keywords, the megatron planner's options).
struct FrameworkSettings {
  int tp = 1, pp = 1, virtual_stages = 1, zero = 0, zero3_prefetch = 0;
  bool distributed_optimizer = false, overlap_grad_reduce = true, even_split = false;
  bool sequence_parallel = false, tp_comm_overlap = false, gpipe = false;
  bool stage_starts = false;  // stage starts given: no split to set
  bool operator==(const FrameworkSettings&) const = default;
};
// The settings' keys, as `given` and FrameworkApplication::kept name them: zero,
// distributed_optimizer, overlap_grad_reduce, split, zero3_prefetch, sequence_parallel,
// tp_comm_overlap.
struct FrameworkApplication {
  FrameworkRefusal refusal;        // what the framework cannot run (an empty key: it runs it)
  std::vector<std::string> kept;   // given settings the profile would have set otherwise
};
// The profile's defaults on what the user did not give (given(key) false), in one place for
// every frontend: what the user gave is checked first, then the defaults set, then the result
// checked again. A given setting keeps the user's value (said in `kept` where the profile's
// differs). The distributed optimizer counts as given with zero.
FrameworkApplication apply_framework_profile(Framework f, FrameworkSettings& s, const std::function<bool(std::string_view)>& given);

// Each profile, for help texts and docs.
std::span<const FrameworkProfile> framework_profiles();

}  // namespace placesim
