#pragma once
// The search as a planner (`strategies: [{name: search, options: {global_batch: 256}}]`): at each
// point of a scenario's sweep, `placesim search` over the point's cluster (plan_search.h), its
// best plan returned and then run by the scenario's engines like any planner's. A sweep of the
// NIC bandwidth or the GPU count thus shows how the best plan changes with the network.
//
// The workload must be a model (`workload: {model: ...}` or `model_file:`), not a per-layer
// file: the search builds the model again at each micro-batch size, recomputation, sequence
// parallelism and context width it tries, from the workload's GPU, precision, sequence and
// attention. Its micro_batch_size, recompute and sequence_parallel are the search's to choose
// (the options below restrict them). The report (`details`) lists the best plans with their
// times and `placesim plan` flags, and the search's counts and phases.
#include <string>
#include <vector>

#include "placement/framework/planner.h"
#include "placement/planners/search/plan_search.h"

namespace placesim {

struct SearchPlannerConfig {
  long global_batch = 0;  // sequences per iteration (required)
  int gpus = 0;           // 0: every GPU of the cluster
  int top = 5;
  bool exhaustive = false;
  int threads = 1;
  std::string framework = "megatron-lm";
  SearchSpace space;
};

class SearchPlanner : public Planner {
 public:
  explicit SearchPlanner(SearchPlannerConfig config = {}) : Planner("search"), config_(std::move(config)) {}
  const SearchPlannerConfig& config() const { return config_; }
  std::string estimate_problem() const override;

 private:
  PlanResult plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) override;
  SearchPlannerConfig config_;
};

OptionSchema<SearchPlannerConfig> search_planner_schema();
PlannerInfo search_planner_info();

}  // namespace placesim
