#pragma once
// One small interface for placement strategies. A strategy maps every operator to a GPU; it is
// built from its `options:` block in the scenario file (each strategy reads its own plain config
// struct) and the runner times it and checks what it returns.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/cluster.h"
#include "sim/graph.h"
#include "sim/yaml_fields.h"
#include "topologies/fabrics.h"

namespace placesim {

struct PlacementResult {
  std::vector<DeviceId> placement;  // GPU of each operator
  double search_seconds = 0;        // wall time of place(), measured by run_strategy
  nlohmann::json report = nlohmann::json::object();  // what the strategy wants to tell (figures, notes)
  // Set by strategies that also choose the multi-NIC bandwidth allocation (QuickP P3): the run
  // should use make_multi_nic(config, *bandwidth_allocation) instead of the scenario's cluster.
  std::optional<BandwidthAllocation> bandwidth_allocation;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual PlacementResult place(const Graph& graph, const Cluster& cluster) = 0;
};

struct StrategyInfo {
  std::string name;
  std::string description;  // one line
  std::string options;      // "key (default): meaning; ..." for `placesim strategies`
  // Builds the strategy from its options mapping (an empty mapping when none were given).
  std::function<std::unique_ptr<Strategy>(const YamlFields& options)> make;
};

// Every registered strategy, in registration order (placement/registry.cpp).
std::span<const StrategyInfo> strategy_registry();

// Looks a strategy up by name; an unknown name is an InputError listing the valid ones.
const StrategyInfo& find_strategy(const std::string& name, const std::string& file, const std::string& field);
std::unique_ptr<Strategy> make_strategy(const std::string& name, const YAML::Node& options, const std::string& file,
                                        const std::string& field);

// Runs a strategy, measures its search time and checks the placement (size, GPUs, colocation).
PlacementResult run_strategy(Strategy& strategy, const std::string& name, const Graph& graph, const Cluster& cluster);

}  // namespace placesim
