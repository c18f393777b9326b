#include "placement/strategy.h"

#include <chrono>
#include <fmt/format.h>

#include "sim/errors.h"
#include "sim/evaluator.h"

namespace placesim {

const StrategyInfo& find_strategy(const std::string& name, const std::string& file, const std::string& field) {
  std::vector<std::string> names;
  for (const auto& info : strategy_registry()) {
    if (info.name == name) return info;
    names.push_back(info.name);
  }
  std::string valid;
  for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
  const std::string hint = nearest_word(name, names);
  throw InputError(file, field,
                   fmt::format("unknown strategy '{}'{} (valid strategies: {})", name,
                               hint.empty() ? "" : "; did you mean '" + hint + "'?", valid));
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const YAML::Node& options, const std::string& file,
                                        const std::string& field) {
  const StrategyInfo& info = find_strategy(name, file, field);
  YAML::Node opts = options ? options : YAML::Node(YAML::NodeType::Map);
  if (opts.IsNull()) opts = YAML::Node(YAML::NodeType::Map);
  return info.make(YamlFields(opts, file, field + ".options"));
}

PlacementResult run_strategy(Strategy& strategy, const std::string& name, const Graph& graph, const Cluster& cluster) {
  const auto t0 = std::chrono::steady_clock::now();
  PlacementResult result = strategy.place(graph, cluster);
  result.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  validate_placement(graph, cluster, result.placement, "strategy '" + name + "'");
  return result;
}

}  // namespace placesim
