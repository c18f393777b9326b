#pragma once
// HEFT, Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu, IEEE TPDS 2002): list
// scheduling by upward rank, each operator on the GPU where it would finish first.
//
//  * Upward rank: rank(i) = w(i) + max over successors j of (c(i, j) + rank(j)), where w(i) is
//    the mean over GPUs of the operator's time there (Cluster::compute_time: compute_s / the
//    GPU's speed) and c(i, j) the paper's mean communication cost of the tensor: mean latency +
//    bytes / mean bandwidth, both averaged over the cluster's ordered GPU pairs (Cluster::latency
//    / Cluster::bandwidth); zero-byte tensors and one-GPU clusters cost nothing. Operators are taken by
//    decreasing rank, ties by topological position, which is a topological order since
//    rank(pred) >= rank(succ).
//  * Device choice: an operator is ready on GPU d when every input has arrived there (producer's
//    finish + Cluster::transfer_time) and takes Cluster::compute_time(d, compute_s) there. With
//    insertion (the paper's policy) it starts in the earliest idle gap on d, at or after that
//    time, long enough to hold it; without, after the last operator scheduled on d. The GPU with
//    the earliest finish wins (lowest index on ties), so a faster GPU wins when it finishes first.
//  * Memory: a GPU whose placed memory would exceed its capacity is skipped when some other GPU
//    can take the operator; if none can, all GPUs compete (the runner then flags OOM).
//  * Colocation classes: the first member scheduled chooses the GPU (and must fit the whole
//    class's memory, which is reserved there at once); later members go to that GPU, still
//    inserted into its earliest fitting gap.
//
// The makespan of HEFT's own schedule is reported; the runner's evaluator re-schedules the
// placement with its own priority rule, so the two can differ.
#include <vector>

#include "placement/framework/strategy.h"

namespace placesim {

struct HeftConfig {
  bool insertion = true;     // fill idle gaps (the paper); false appends to each GPU's queue
  bool memory_aware = true;  // skip GPUs that would overflow while another fits
  bool operator==(const HeftConfig&) const = default;
};

// HEFT's own schedule, exposed for tests and reports.
struct HeftSchedule {
  std::vector<DeviceId> placement;    // per operator
  std::vector<double> start, finish;  // per operator, seconds
  std::vector<double> rank;           // upward rank per operator, seconds
  std::vector<OpId> order;            // operators in scheduling order
  double makespan = 0;
  bool memory_overflow = false;       // some operator had no GPU with room for it
};

HeftSchedule heft_schedule(const Graph& graph, const Cluster& cluster, const HeftConfig& config);

class Heft : public Strategy {
 public:
  explicit Heft(HeftConfig config = {}) : Strategy("heft"), config_(config) {}
  const HeftConfig& config() const { return config_; }

 private:
  // report: heft_makespan_s, memory_overflow.
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  HeftConfig config_;
};

OptionSchema<HeftConfig> heft_schema();
StrategyInfo heft_strategy_info();

}  // namespace placesim
