#include "sim/core/execution_graph.h"

namespace placesim {

OpId ExecutionGraph::add(Operator op, DeviceId gpu) {
  const OpId id = graph.add_operator(std::move(op));
  placement.push_back(gpu);
  return id;
}

}  // namespace placesim
