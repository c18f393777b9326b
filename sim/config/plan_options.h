#pragma once
// The option schemas of plain configs that live in the simulator's core rooms, which build without
// YAML: the config struct stays beside its code, its keys are declared here, once.
#include "sim/config/options.h"
#include "sim/plans/data_parallel.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

// `data_parallel:` of a placement strategy (scenarios/README.md).
OptionSchema<DataParallelConfig> data_parallel_schema();

// The assumptions a plan is priced under (PlanAssumptions: optimizer, memory_model, recompute,
// compute_units), the same keys for every planner whose config derives from it (nest,
// nest-unaware, mcmc-plan, megatron), each placesim's by default.
OptionSchema<PlanAssumptions> plan_assumptions_schema();

}  // namespace placesim
