#pragma once
// Planners: the strategies of layer-level workloads. Where a placement strategy
// (placement/framework/strategy.h) maps each operator of one graph to a GPU, a planner chooses a parallel
// plan (sim/plans/parallel_plan.h): tensor, pipeline, data and expert parallelism, ZeRO, micro-batches
// and a schedule, pinned to GPUs. A scenario with `workload:` instead of `graph:` names planners
// in `strategies:`; the runner compiles each plan into the execution graph and measures it on
// every engine (scenarios/runner/runner.h).
//
// Planner::plan is the one entry point (non-virtual): it times the call and checks the plan it
// returns (plan_problem) against the model at the plan's tensor-parallel width. A new planner is
// one folder under placement/planners/ and one line in placement/framework/registry.cpp, as a strategy is.
#include <limits>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "placement/framework/strategy.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

struct PlanResult {
  ParallelPlan plan;
  // The workload the plan runs when the planner built its own from the model (the search: the
  // model at the micro-batch size, recomputation and sequence parallelism it chose); unset: the
  // workload it was given.
  std::optional<LayerWorkload> workload;
  double search_seconds = 0;  // wall time of Planner::plan
  SearchFacts facts;          // what other layers read (the time limit)
  // The planner's own figures and notes, free-form: reported as they are, read by no other layer.
  nlohmann::json details = nlohmann::json::object();
};

// What a workload built from a model came from (`workload: {model: ...}` or `model_file:`), for a
// planner that builds the model again at options of its own choosing (the search).
struct ModelSource {
  std::string model;       // a layer-zoo name, or
  std::string model_file;  // a model file (its path as the process opens it)
  models::LayerZooOptions zoo;
};

// The options every planner takes.
struct PlannerCommonOptions {
  double time_limit_s = std::numeric_limits<double>::infinity();
};

class Planner {
 public:
  explicit Planner(std::string name) : name_(std::move(name)) {}
  virtual ~Planner() = default;

  // Plans the workload on the cluster within the time limit. Throws std::runtime_error when the
  // planner returns a plan that cannot be compiled (a defect of the planner, named as such), and
  // whatever the planner throws when the workload or its options cannot be planned.
  PlanResult plan(const LayerWorkload& workload, const Cluster& cluster);

  // What makes the planner's options impossible on this workload and cluster, said when the
  // scenario is read (a bad input, exit 2) rather than when its point runs; "" when nothing does,
  // or when only planning would tell (a search chooses its own degrees).
  virtual std::string options_problem(const LayerWorkload& /*workload*/, const Cluster& /*cluster*/) const { return ""; }
  // Why its plans cannot be priced by NEST's estimate alone (simulation.engine: estimate), or "".
  virtual std::string estimate_problem() const { return ""; }

  const std::string& name() const { return name_; }
  // The workload's model, when it was built from one (unset: a per-layer workload file).
  void set_model_source(std::optional<ModelSource> source) { model_source_ = std::move(source); }
  const std::optional<ModelSource>& model_source() const { return model_source_; }
  void set_common_options(const PlannerCommonOptions& common) { common_ = common; }
  const PlannerCommonOptions& common_options() const { return common_; }

 private:
  virtual PlanResult plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) = 0;
  std::string name_;
  PlannerCommonOptions common_;
  std::optional<ModelSource> model_source_;
};

struct PlannerInfo : RegistryEntry {
  std::function<std::unique_ptr<Planner>(const YamlFields& options)> make;
};

OptionSchema<PlannerCommonOptions> planner_common_schema();

// The PlannerInfo of planner class P built from a Config by `schema`.
template <class P, class Config>
PlannerInfo planner_info(std::string name, std::string description, OptionSchema<Config> schema) {
  const OptionSchema<PlannerCommonOptions> common = planner_common_schema();
  PlannerInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.options = schema.docs();
  for (auto& d : common.docs()) info.options.push_back(d);
  std::vector<std::string> keys = schema.keys();
  for (auto& k : common.keys()) keys.push_back(k);
  info.make = [schema = std::move(schema), common, keys](const YamlFields& f) -> std::unique_ptr<Planner> {
    check_known_keys(f, keys);
    auto p = std::make_unique<P>(schema.parse_known(f));
    p->set_common_options(common.parse_known(f));
    return p;
  };
  return info;
}

// Every registered planner, in registration order (placement/framework/registry.cpp).
const Registry<PlannerInfo>& planner_registry();
// Looks a planner up and builds it from its `options:` mapping; an unknown name is an InputError
// listing the planners (and saying so when the name is a placement strategy).
std::unique_ptr<Planner> make_planner(const std::string& name, const YAML::Node& options, const std::string& file,
                                      const std::string& field);

// The plan as JSON (degrees, schedule, stage starts, GPUs), for reports and plan files.
nlohmann::ordered_json plan_to_json(const ParallelPlan& plan);

}  // namespace placesim
