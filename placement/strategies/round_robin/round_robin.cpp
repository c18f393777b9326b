#include "placement/strategies/round_robin/round_robin.h"

namespace placesim {

PlacementResult RoundRobin::place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) {
  PlacementResult r;
  r.placement.assign(graph.num_operators(), 0);
  std::vector<DeviceId> class_device(graph.num_colocation_classes(), -1);
  DeviceId next = 0, last = 0;
  for (OpId op : graph.topological_order()) {
    const Operator& o = graph.op(op);
    DeviceId d;
    if (o.colocation_class >= 0 && class_device[o.colocation_class] >= 0) {
      d = class_device[o.colocation_class];
    } else if (config_.skip_zero_compute && o.compute_s == 0) {
      d = last;
    } else {
      d = next;
      next = (next + 1) % cluster.num_devices();
    }
    if (o.colocation_class >= 0) class_device[o.colocation_class] = d;
    r.placement[op] = last = d;
  }
  return r;
}

OptionSchema<RoundRobinConfig> round_robin_schema() {
  OptionSchema<RoundRobinConfig> s;
  s.flag("skip_zero_compute", &RoundRobinConfig::skip_zero_compute,
         "zero-time operators stay on the previous operator's GPU");
  return s;
}

StrategyInfo round_robin_strategy_info() {
  return strategy_info<RoundRobin>("round-robin", "operators dealt out to the GPUs in turn, in topological order",
                                   round_robin_schema());
}

}  // namespace placesim
