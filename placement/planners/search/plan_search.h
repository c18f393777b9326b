#pragma once
// `placesim search`: every Megatron-style configuration of a model on a cluster (tp, pp, dp, cp,
// ep, virtual stages, micro-batch size, recomputation, sequence parallelism, optimizer sharding,
// tensor-parallel overlap), pruned by memory, ranked by NEST's estimate, the best simulated on the
// flow engine under contention (docs/search.md).
//
// Each candidate is a `placesim plan` command line (PlanArgs), built and simulated by the plan
// command's own code, so that every plan the search prints re-runs with its printed command at
// the same time. Exactness: each candidate also has a lower bound that no engine can beat (its
// busiest GPU's compute, which runs one operator at a time, with the pipeline's fill and drain);
// with `exhaustive`, candidates are simulated in the order of their bounds until the next bound is
// no better than the best time found, so the best is the best of the whole space.
#include <functional>
#include <string>
#include <vector>

#include "placement/planners/search/plan_args.h"
#include "sim/core/cluster.h"
#include "sim/plans/plan_breakdown.h"

namespace placesim {

// The values each knob may take; empty: every value that makes sense for the model and cluster.
struct SearchSpace {
  std::vector<int> tp, pp, cp, ep, virtual_stages, micro_batch_size;
  std::vector<std::string> recompute;         // none, selective, full
  std::vector<std::string> sequence_parallel;  // on, off
  std::vector<std::string> optimizer;          // none (ZeRO 0), distributed (Megatron's: ZeRO 1, overlapped), zero2, zero3
  std::vector<std::string> tp_comm_overlap;    // on, off
  std::vector<std::string> gpu_order;          // tp-pp-dp, tp-dp-pp (default: tp-pp-dp alone)
};

struct SearchRequest {
  PlanArgs base;  // the model (model or model_file), cluster, gpu, precision, sequence, attention, ...
  int gpus = 0;   // 0: every GPU of the cluster
  long global_batch = 0;
  SearchSpace space;
  int top = 10;             // simulated, best estimates first
  bool exhaustive = false;  // then every candidate whose lower bound beats the best simulated
  int threads = 1;          // candidates simulated at once
  std::string engine = "flow";
};

struct SearchCandidate {
  PlanArgs args;  // the plan command's arguments
  std::vector<int> stage_starts;
  double lower_bound_s = 0, estimate_s = 0;
  double memory_bytes = 0, capacity_bytes = 0;  // of the GPU holding the most
  GpuMemory memory;
  bool simulated = false;
  double iteration_s = 0;  // on the engine (simulated)
  double tokens_per_s_per_gpu = 0, model_tflops_per_gpu = 0, mfu = 0;
  TimeBreakdown breakdown;
  std::string folding;
};

struct SearchPhase {
  std::string name;
  long candidates = 0;  // coming out of it
  double seconds = 0;
};

struct SearchResult {
  std::string model, cluster;
  int gpus = 0;
  long global_batch = 0;
  std::vector<SearchCandidate> ranked;  // the simulated, fastest first
  long enumerated = 0, invalid = 0, over_memory = 0, fitting = 0, estimated = 0, simulated = 0;
  long framework_excluded = 0;  // of the enumerated: what the framework (--framework) does not run
  long too_large = 0;  // chosen to simulate, but their graphs would not fit in this machine's memory (in notes)
  // Fitting candidates left unsimulated whose lower bound is below the best time: the best is
  // proven the best of the space when there are none.
  long unproven = 0;
  double best_unsimulated_bound_s = 0;  // the smallest lower bound left unsimulated (0: none)
  std::vector<std::string> notes;       // what the enumeration left out, and why
  std::vector<SearchPhase> phases;
  // Candidates whose simulated time fell below their lower bound (a bug if any: said).
  long bound_violations = 0;
  // No unsimulated candidate can beat the best, and every bound held (a bound that failed would
  // void the proof).
  bool proven() const { return unproven == 0 && bound_violations == 0 && !ranked.empty(); }
};

// How the search says where it is: a line per phase and, while simulating, done/total and the
// time left at the rate so far.
using SearchProgress = std::function<void(const std::string& line)>;

// Throws InputError (file "command line") on a request that has no candidate space (no model, a
// GPU count the cluster lacks, a global batch below 1).
SearchResult search_plans(const SearchRequest& request, const SearchProgress& progress = {});
// The same on a cluster already loaded (a scenario's point): request.base.cluster only names it in
// the printed commands.
SearchResult search_plans(const SearchRequest& request, const Cluster& cluster, const SearchProgress& progress = {});

// The bounds a plan's compute sets (stage starts `starts`, its micro-batches, ZeRO, recomputation):
// lower_bound, no engine runs it faster: each pipeline rank's compute runs one operator at a time,
// after the first micro-batch's forwards on the ranks before it and before the last one's
// backwards on them, then the optimizer step; floor, the busiest rank's compute alone, which
// NEST's estimate never undercuts (it charges that rank's load, compute included, per micro-batch).
struct ComputeBounds {
  double lower_bound = 0, floor = 0;
};
ComputeBounds compute_lower_bound(const LayerModel& model, const ParallelPlan& plan, const std::vector<int>& starts);

// The `placesim plan` command line that runs the candidate (`--engine` its engine).
std::string plan_command(const PlanArgs& a, const std::string& engine);

}  // namespace placesim
