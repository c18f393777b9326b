#pragma once
// Placeto's Markov decision process (Addanki et al., NeurIPS 2019, section 2.1), without the
// network: the policy (placeto, LibTorch) and the one-step-lookahead rule (placeto-greedy) both
// play episodes of this environment.
//
//  * The graph is first coarsened with Placeto's merge-and-colocate scheme (appendix A.6,
//    placement/stages/coarsening, scheme `placeto`) down to `coarsen_target` op groups ("nodes").
//  * A step is a placement unit: one node, or all nodes of one coarse colocation class (they must
//    share a GPU, so one action moves them together). Steps come in topological order of each
//    unit's first node; an episode visits every unit once and sets its GPU.
//  * The initial state places every node on GPU 0 (the paper: "assigned arbitrarily").
//  * Raw node features (section 2.2, step 1): run time, output size, one-hot current GPU,
//    visited flag, current flag. Run time and output size are made scale-free so that one policy
//    serves graphs of any size: both are in units of the graph's mean node run time, the output
//    size as the time its bytes take over the slowest GPU pair, and both pass through log1p.
//  * Cost R(p) (appendix A.7): the evaluator's latency plus a memory penalty c * (m - M) when the
//    fullest GPU's memory m exceeds M = memory_threshold x its capacity. Here both terms are
//    relative: latency / single-GPU latency, overflow / capacity, so rewards are comparable
//    across graphs. The intermediate reward of step t is R(p_t) - R(p_{t+1}) (positive when the
//    step made the placement faster; the paper's A.7 text writes the difference the other way
//    round, which would reward slowdowns).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "placement/stages/coarsening/coarsening.h"
#include "sim/core/cluster.h"
#include "sim/engines/cost_model.h"
#include "sim/engines/evaluator.h"
#include "sim/core/graph.h"

namespace placesim {

struct PlacetoEnvConfig {
  int coarsen_target = 64;        // op groups after merge-and-colocate (>= 1)
  double memory_penalty = 2.0;    // c of appendix A.7, per unit of relative overflow
  double memory_threshold = 1.0;  // M as a fraction of each GPU's memory
};

class PlacetoEnv {
 public:
  // Keeps references to `cluster` (not to `graph`: the coarse graph is owned).
  // `cost_model` is the latency of the reward (the strategy's `cost_model` option).
  PlacetoEnv(const Graph& graph, const Cluster& cluster, const PlacetoEnvConfig& config,
             CostModelKind cost_model = CostModelKind::List);
  PlacetoEnv(const PlacetoEnv&) = delete;
  PlacetoEnv& operator=(const PlacetoEnv&) = delete;

  const Graph& coarse() const { return coarsening_.coarse; }
  const Cluster& cluster() const { return cluster_; }
  int num_nodes() const { return static_cast<int>(coarse().num_operators()); }
  int num_devices() const { return cluster_.num_devices(); }
  int num_steps() const { return static_cast<int>(step_first_.size()) - 1; }
  // The node whose features are "current" at step t (the unit's first node in topological order)
  // and every node the step moves.
  OpId step_node(int t) const { return step_nodes_[step_first_[t]]; }
  std::span<const OpId> step_members(int t) const {
    return {step_nodes_.data() + step_first_[t], step_nodes_.data() + step_first_[t + 1]};
  }

  // Static features per node (log1p of the scale-free run time and output size).
  std::span<const double> run_time_feature() const { return run_time_feature_; }
  std::span<const double> output_feature() const { return output_feature_; }
  // Raw features of every node in a state, row-major [num_nodes x num_features(D)]:
  // run time, output size, one-hot GPU (D), visited (moved by a step before `step`), current
  // (moved by `step`). step == num_steps(): the final state, every node visited.
  static int num_features(int num_devices) { return num_devices + 4; }
  void features(std::span<const DeviceId> placement, int step, std::vector<float>& out) const;

  // Whether node a reaches node b along edges (a != b); ancestors/descendants of the pooling step.
  bool reaches(OpId a, OpId b) const { return reach_[static_cast<std::size_t>(a) * num_nodes() + b] != 0; }

  std::vector<DeviceId> initial_placement() const { return std::vector<DeviceId>(num_nodes(), 0); }
  // Moves every member of step t's unit to `device`.
  void apply(int step, DeviceId device, std::vector<DeviceId>& placement) const {
    for (OpId v : step_members(step)) placement[v] = device;
  }
  // R(p) relative to the single-GPU latency (see above); allocation-free after the first call.
  double cost(std::span<const DeviceId> placement);
  double latency(std::span<const DeviceId> placement) { return cost_model_->latency(placement); }
  // Single-GPU latency of the graph: the unit of cost().
  double reference_latency() const { return reference_latency_; }
  // The fine placement of a coarse one.
  std::vector<DeviceId> expand(std::span<const DeviceId> placement) const {
    return expand_placement(coarsening_, placement);
  }

 private:
  Coarsening coarsening_;
  const Cluster& cluster_;
  PlacetoEnvConfig config_;
  std::unique_ptr<CostModel> cost_model_;  // of coarsening_.coarse, which must not move
  std::vector<std::int32_t> step_first_;  // num_steps + 1 offsets into step_nodes_
  std::vector<OpId> step_nodes_;
  std::vector<std::int32_t> step_of_;  // per node, the step that moves it
  std::vector<double> run_time_feature_, output_feature_;
  std::vector<std::uint8_t> reach_;  // num_nodes x num_nodes
  std::vector<double> memory_used_;  // workspace of cost()
  double reference_latency_ = 1;
};

// One full episode of placeto-greedy: every step puts its unit on the GPU of lowest cost R (ties:
// the lowest GPU index), starting from the initial placement; `passes` > 1 sweeps again from the
// result. Returns the coarse placement.
std::vector<DeviceId> placeto_greedy_episode(PlacetoEnv& env, int passes = 1);

// A family of generated training graphs for Placeto: synthetic_training_graph with its shape
// (2-5 layers, 1-3 branches, 1-3 operators per branch) and its costs drawn from `seed`.
Graph placeto_family_graph(std::uint64_t seed);

// The paper's Random baseline (section 4.2): the mean evaluator latency of `samples` placements
// that put each colocation class, and each operator without one, on a uniformly drawn GPU.
double mean_random_latency(const Graph& graph, const Cluster& cluster, int samples, unsigned seed);

}  // namespace placesim
