#pragma once
// `placesim plan`: one parallel plan (sim/parallel_plan.h) of a layer-level workload on a
// cluster: its step time per engine, memory per GPU, or why it does not fit.
#include <CLI/CLI.hpp>
#include <string>

namespace placesim {

struct PlanArgs {
  std::string workload, cluster, schedule = "1f1b", engine = "all", gradient_algorithm = "ring";
  int tp = 1, pp = 1, dp = 1, micro_batches = 1, zero = 0;
};

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
// Exit 0, or 1 when the plan does not fit in GPU memory (said on stderr, nothing simulated).
int cmd_plan(const PlanArgs& args);

}  // namespace placesim
