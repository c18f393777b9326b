#pragma once
// `placesim plan`: one parallel plan (sim/plans/parallel_plan.h) of a layer-level workload on a
// cluster: its step time per engine, memory per GPU, or why it does not fit.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "sim/collectives/collectives.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

struct PlanArgs {
  std::string workload, model, cluster, schedule = "1f1b", engine = "all", order = "fcfs", gradient_algorithm = "ring",
      collectives = "messages";
  int tp = 1, pp = 1, dp = 1, micro_batches = 1, zero = 0, ep = 1;
  std::vector<int> stage_tp;  // per stage, its own tensor-parallel width (ParallelPlan::stage_tp)
  int virtual_stages = 1;  // interleaved 1F1B
  bool no_scatter_gather = false;
  bool sequence_parallel = false;
  // The model zoo's layer-level models (sim/models/layer_zoo.h), instead of --workload.
  std::string gpu = "h100";
  int micro_batch_size = 1, sequence = 0;
  double mfu = 0.5;
  bool no_recompute = false;
  std::string trace;  // Chrome trace of the evaluator's run, with each GPU's memory over time
  std::string chakra;  // a directory for the plan's Chakra execution traces, one per GPU
};

CLI::App* add_plan_command(CLI::App& app, PlanArgs& args);
// Exit 0, or 1 when the plan does not fit in GPU memory (said on stderr, nothing simulated).
int cmd_plan(const PlanArgs& args);

// The plan the arguments describe; `source` and the two field names name what a bad schedule or
// gradient algorithm came from ("command line", "--schedule"; Python's keywords).
inline ParallelPlan plan_from_args(const PlanArgs& a, const std::string& source, const std::string& schedule_field,
                                   const std::string& algorithm_field) {
  ParallelPlan plan;
  plan.tp = a.tp;
  plan.stage_tp = a.stage_tp;
  plan.pp = a.pp;
  plan.dp = a.dp;
  plan.micro_batches = a.micro_batches;
  plan.zero = a.zero;
  plan.virtual_stages = a.virtual_stages;
  plan.ep = a.ep;
  plan.scatter_gather = !a.no_scatter_gather;
  plan.sequence_parallel = a.sequence_parallel;
  plan.schedule = enum_parse<PipelineSchedule>(kPipelineScheduleNames, a.schedule, source, schedule_field);
  plan.gradient_algorithm =
      enum_parse<CollectiveAlgorithm>(collective_algorithm_names(CollectiveOp::AllReduce), a.gradient_algorithm, source, algorithm_field);
  return plan;
}

}  // namespace placesim
