#pragma once
// `placesim plan`: one parallel plan (sim/plans/parallel_plan.h) of a layer-level workload on a
// cluster: its step time per engine, memory per GPU, or why it does not fit. Its arguments and
// what builds the plan from them: placement/planners/search/plan_args.h.
#include <CLI/CLI.hpp>

#include "placement/planners/search/plan_args.h"

namespace placesim {

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
// Exit 0, or 1 when the plan does not fit in GPU memory (said on stderr, nothing simulated).
int cmd_plan(const PlanArgs& args);

}  // namespace placesim
