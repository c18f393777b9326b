#pragma once
// Several jobs on one cluster: a scenario's `jobs:` (scenarios/README.md, docs/shared-clusters.md).
// Each job is a graph with a placement strategy or a workload with a planner, and a GPU count
// (filled by the scenario's allocation policies, placement/allocation/) or a GPU list. A point of
// such a scenario is one allocation policy: every job is placed or planned on its own GPUs (the
// cluster restricted to them), then all of them run at once on the whole fabric
// (sim/engines/shared_runs.h) and each alone on the same GPUs. Each job gets its own record.
#include <span>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "scenarios/runner/runner.h"
#include "scenarios/runner/scenario.h"

namespace placesim {

// `jobs:`: the jobs, each checked (its strategy or planner built once, its GPUs against the
// cluster); and `allocation:` (a policy, a list of them, or {name, label, seed} mappings): one
// StrategySpec each, which the sweep makes one point of. Errors name the file and the field.
std::vector<JobSpec> jobs_from_yaml(const YAML::Node& node, const std::string& file, const Cluster& cluster);
std::vector<StrategySpec> allocations_from_yaml(const YAML::Node& node, const std::string& file);

// The key of a job's record: the point's (the allocation's) and the job's name.
inline std::string job_record_key(const std::string& point_key, const std::string& job) { return point_key + " job=" + job; }

// What a job is placed or planned on, loaded once by the runner.
struct JobInput {
  const Graph* graph = nullptr;
  const LayerWorkload* workload = nullptr;
};

// Allocates the jobs' GPUs by `allocation`'s policy, places or plans each on its GPUs, runs them
// alone and together on the scenario's engines, and writes each job's placement or plan file
// (placement-<stem>-<job>.json, plan-<stem>-<job>.json) and the shared run's trace into `dir`.
// Per job, in jobs order, its record's status and measurement: the shared latency per engine, with
// alone_latency, shared_latency and slowdown in strategy_report.
std::vector<PointOutcome> run_jobs_point(const Scenario& scenario, const StrategySpec& allocation,
                                       std::span<const JobInput> inputs, const std::string& dir, const std::string& file_stem);

}  // namespace placesim
