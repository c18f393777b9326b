#include "sim/engines/cost_model.h"

#include <cmath>
#include <limits>

namespace placesim {

CostModel::CostModel(const Graph& graph, const Cluster& cluster, CostModelKind kind)
    : kind_(kind), evaluator_(graph, cluster) {
  if (kind_ == CostModelKind::Flow) flow_.emplace(graph, cluster);
}

double CostModel::latency(std::span<const DeviceId> placement) {
  return latency_with_cutoff(placement, std::numeric_limits<double>::infinity());
}

double CostModel::latency_with_cutoff(std::span<const DeviceId> placement, double cutoff) {
  if (kind_ == CostModelKind::List) return evaluator_.latency_with_cutoff(placement, cutoff);
  // flow >= list: a list schedule over the cutoff settles it. The slack keeps the flow engine's
  // 1e-12 s event merging and payload rounding from ever turning that into a wrong rejection.
  const double list = evaluator_.latency_with_order(placement, cutoff * (1 + 1e-9) + 1e-12, order_);
  if (std::isinf(list)) {
    ++settled_by_list_;
    return std::numeric_limits<double>::infinity();
  }
  ++flow_runs_;
  return flow_->replay_latency_with_cutoff(placement, order_, cutoff);
}

}  // namespace placesim
