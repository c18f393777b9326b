#include "placement/framework/planner.h"

#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

PlanResult Planner::plan(const LayerWorkload& workload, const Cluster& cluster) {
  const Deadline deadline(common_.time_limit_s);
  const auto t0 = std::chrono::steady_clock::now();
  PlanResult result = plan_impl(workload, cluster, deadline);
  result.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (deadline.bounded()) {
    result.facts.time_limit_s = deadline.limit();
    result.facts.over_time_limit = result.search_seconds > deadline.limit();
  }
  if (const std::string why = plan_problem(result.workload ? *result.workload : workload, result.plan, cluster); !why.empty())
    throw std::runtime_error(fmt::format("planner '{}' returned a plan that cannot run: {}", name_, why));
  return result;
}

OptionSchema<PlannerCommonOptions> planner_common_schema() {
  OptionSchema<PlannerCommonOptions> s;
  s.duration("time_limit", &PlannerCommonOptions::time_limit_s, "wall time of the planning (inf: none)",
             Range{0, std::numeric_limits<double>::infinity(), true, false, true}, "30s");
  return s;
}

std::unique_ptr<Planner> make_planner(const std::string& name, const YAML::Node& options, const std::string& file,
                                      const std::string& field) {
  const PlannerInfo* info = planner_registry().find(name);
  if (!info) {
    if (strategy_registry().find(name))
      throw InputError(file, field + ".name",
                       fmt::format("'{}' places the operators of a graph (`graph:`); a `workload:` takes planners: {}",
                                   name, fmt::join(planner_registry().names(), ", ")));
    info = &planner_registry().get(name, file, field + ".name");
  }
  YAML::Node opts = options ? options : YAML::Node(YAML::NodeType::Map);
  if (opts.IsNull()) opts = YAML::Node(YAML::NodeType::Map);
  return info->make(YamlFields(opts, file, field + ".options"));
}

nlohmann::ordered_json plan_to_json(const ParallelPlan& plan) {
  nlohmann::ordered_json j;
  j["tp"] = plan.tp;
  if (!plan.stage_tp.empty()) j["stage_tp"] = plan.stage_tp;
  j["pp"] = plan.pp;
  j["dp"] = plan.dp;  // every copy of the weights: the context ranks included
  if (plan.cp > 1) j["cp"] = plan.cp;
  j["ep"] = plan.ep;
  j["zero"] = plan.zero;
  j["micro_batches"] = plan.micro_batches;
  j["schedule"] = std::string(enum_name<PipelineSchedule>(kPipelineScheduleNames, plan.schedule));
  if (plan.virtual_stages > 1) j["virtual_stages"] = plan.virtual_stages;
  j["gradient_algorithm"] = std::string(enum_name<CollectiveAlgorithm>(collective_algorithm_names(), plan.gradient_algorithm));
  j["scatter_gather"] = plan.scatter_gather;
  if (plan.sequence_parallel) j["sequence_parallel"] = true;
  if (plan.tp_comm_overlap) j["tp_comm_overlap"] = true;
  if (plan.overlap_param_gather) j["overlap_param_gather"] = true;
  if (!plan.overlap_grad_reduce) j["overlap_grad_reduce"] = false;
  if (plan.blocking_sends) j["blocking_sends"] = true;
  j["stage_starts"] = plan.stage_starts;
  j["gpus"] = plan.gpus;
  // The assumptions it is priced under, where they are not placesim's own.
  const PlanAssumptions& a = plan.assumptions;
  if (a.optimizer != Optimizer::Adam) j["optimizer"] = std::string(enum_name<Optimizer>(kOptimizerNames, a.optimizer));
  if (a.memory_model != MemoryModel::Placesim)
    j["memory_model"] = std::string(enum_name<MemoryModel>(kMemoryModelNames, a.memory_model));
  if (a.recompute != RecomputeCharge::None)
    j["recompute"] = std::string(enum_name<RecomputeCharge>(kRecomputeChargeNames, a.recompute));
  if (a.compute_units != ComputeUnits::Seconds)
    j["compute_units"] = std::string(enum_name<ComputeUnits>(kComputeUnitsNames, a.compute_units));
  if (plan.nest_baseline_pricing) j["nest_baseline_pricing"] = true;
  return j;
}

}  // namespace placesim
