#pragma once
// Max-load: the pipeline split of Tarnawski, Phanishayee, Devanur, Mahajan & Nina Paravecino,
// "Efficient Algorithms for Device Placement of DNN Graph Operations" (NeurIPS 2020), in its
// pure form: one GPU per stage, no tensor or data parallelism, no network cost.
//
//  * Objective: minimise the largest load of a GPU, where a GPU's load is the compute time of
//    its operators on it (Cluster::compute_time). In a pipeline that load is the time between
//    two micro-batches, so the split maximises throughput; the latency of one iteration, which
//    the engines measure, is not what it optimises.
//  * Search space: GPU i (cluster order) gets D_i \ D_{i-1} for downsets (ideals) D_0 ⊆ D_1 ⊆ ...
//    of the forward graph, a GPU may stay empty, and the memory of each GPU is respected.
//    In a training graph (operators typed "backward", as the msr-fiddle loader marks them) each
//    backward operator goes with the forward operators of its colocation class (`colorClass`);
//    a class with backward operators only gets a forward stand-in placed by the backward edges
//    mirrored, as in the authors' code. A graph without backward operators is split as a whole.
//  * Exact DP over downsets: dp_i[D] = min(dp_{i-1}[D], min over downsets D' ⊂ D of
//    max(dp_{i-1}[D'], load_i(D \ D'))) subject to memory_i(D \ D') <= GPU i's memory.
//  * Reductions that keep the optimum (so that graphs with millions of downsets become small):
//    colocation classes are contracted, cycles they create are fused, and a unit that takes no
//    compute time is removed with its predecessors joined to its successors, when it takes no
//    memory or memory cannot bind (the whole graph fits on the smallest GPU). A removed unit is
//    placed afterwards on the GPU of its latest predecessor, which keeps the split contiguous.
// The number of downsets can still be exponential in the graph's width: past `max_downsets` the
// units are chained in one topological order, as the authors' code does, and the DP finds the
// best split of that order only; the report then says `exact: false`.
#include <string>
#include <vector>

#include "placement/framework/strategy.h"

namespace placesim {

struct MaxLoadConfig {
  long max_downsets = 100'000;  // past it, split one topological order only (exact: false)
  bool operator==(const MaxLoadConfig&) const = default;
};

struct MaxLoadSplit {
  std::vector<DeviceId> placement;  // per operator
  std::vector<double> gpu_load;     // per GPU: compute time of its operators there, seconds
  std::vector<double> gpu_memory;   // per GPU: bytes of its operators
  double max_stage_load = 0;        // the optimum: max of gpu_load, seconds
  bool training = false;            // backward operators were paired with forward ones
  bool exact = true;                // the optimum over all contiguous splits (false: of one order)
  // Why no contiguous split fits the GPUs' memory, or "": then the split ignores memory.
  std::string memory_problem;
  int units = 0;                    // vertices of the reduced forward graph
  int removed_units = 0;            // zero-time units removed before the DP
  long downsets = 0;
  long downset_pairs = 0;           // (D', D) pairs the DP compares, per GPU
};

// The optimal split; when no contiguous split fits the GPUs' memory, the optimal split without
// memory and the reason (memory_problem). Throws std::runtime_error when the deadline passes.
MaxLoadSplit max_load_split(const Graph& graph, const Cluster& cluster, const MaxLoadConfig& config,
                            const Deadline& deadline = Deadline());

class MaxLoad : public Strategy {
 public:
  explicit MaxLoad(MaxLoadConfig config = {}) : Strategy("max-load"), config_(config) {}
  const MaxLoadConfig& config() const { return config_; }

 private:
  // report: max_stage_load (seconds), gpu_load, downsets, units, training, exact, objective,
  // memory_problem (when no contiguous split fits).
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  MaxLoadConfig config_;
};

OptionSchema<MaxLoadConfig> max_load_schema();
StrategyInfo max_load_strategy_info();

}  // namespace placesim
