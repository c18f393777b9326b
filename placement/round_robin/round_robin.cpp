#include "placement/round_robin/round_robin.h"

namespace placesim {

PlacementResult RoundRobin::place(const Graph& graph, const Cluster& cluster) {
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

StrategyInfo round_robin_strategy_info() {
  return {"round-robin", "operators dealt out to the GPUs in turn, in topological order",
          "skip_zero_compute (false): zero-time operators stay on the previous operator's GPU",
          [](const YamlFields& options) {
            options.allow_only({"skip_zero_compute"});
            RoundRobinConfig cfg;
            cfg.skip_zero_compute = options.boolean_or("skip_zero_compute", false);
            return std::make_unique<RoundRobin>(cfg);
          }};
}

}  // namespace placesim
