#include "scenarios/fcfs.h"

#include <functional>
#include <queue>
#include <tuple>

namespace placesim {

std::vector<std::vector<OpId>> fcfs_device_order(const Graph& graph, const Cluster& cluster,
                                                 std::span<const DeviceId> placement) {
  const auto n = static_cast<OpId>(graph.num_operators());
  const int num_devices = cluster.num_devices();
  std::vector<std::int32_t> pending(n, 0);
  std::vector<double> arrived(n, 0.0);
  for (OpId i = 0; i < n; ++i) pending[i] = static_cast<std::int32_t>(graph.in_edges(i).size());

  // Events in time order; at equal times finishes come first, so a GPU freed at t sees every
  // operator that became ready at t before it picks the next one.
  using Event = std::tuple<double, int, OpId>;  // time, 0 = finish / 1 = inputs arrived, operator
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  using Ready = std::pair<double, OpId>;  // arrival of the last input, operator id
  std::vector<std::priority_queue<Ready, std::vector<Ready>, std::greater<>>> ready(num_devices);
  std::vector<std::uint8_t> busy(num_devices, 0);
  std::vector<std::vector<OpId>> order(num_devices);
  for (OpId i = 0; i < n; ++i)
    if (pending[i] == 0) events.emplace(0.0, 1, i);

  while (!events.empty()) {
    const double now = std::get<0>(events.top());
    while (!events.empty() && std::get<0>(events.top()) == now) {
      const auto [time, kind, op] = events.top();
      events.pop();
      const DeviceId d = placement[op];
      if (kind == 1) {
        ready[d].emplace(arrived[op], op);
        continue;
      }
      busy[d] = 0;
      for (EdgeId e : graph.out_edges(op)) {
        const Tensor& t = graph.tensor(e);
        arrived[t.dst] = std::max(arrived[t.dst], now + cluster.transfer_time(d, placement[t.dst], t.bytes));
        if (--pending[t.dst] == 0) events.emplace(arrived[t.dst], 1, t.dst);
      }
    }
    for (int d = 0; d < num_devices; ++d) {
      if (busy[d] || ready[d].empty()) continue;
      const OpId op = ready[d].top().second;
      ready[d].pop();
      busy[d] = 1;
      order[d].push_back(op);
      events.emplace(now + cluster.compute_time(d, graph.op(op).compute_s), 0, op);
    }
  }
  return order;
}

Schedule fcfs_schedule(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement) {
  return replay_order(graph, cluster, placement, fcfs_device_order(graph, cluster, placement));
}

}  // namespace placesim
