#include "placement/framework/strategy.h"

#include <fmt/format.h>
#include <optional>

#include "sim/core/errors.h"
#include "placement/framework/planner.h"
#include "sim/engines/evaluator.h"
#include "sim/core/units.h"

namespace placesim {

OptionSchema<StrategyCommonOptions> strategy_common_schema(const StrategyTraits& traits) {
  OptionSchema<StrategyCommonOptions> s;
  const double time_limit_default = traits.time_limit_default;
  Range range = Range::positive();
  range.allow_infinity = true;
  s.add({"time_limit", "duration",
         "wall-clock budget of the whole call (search, solver, refinement), e.g. 10s; none: unbounded",
         default_text_duration(time_limit_default), {}, "2s"},
        [range](const YamlFields& f, std::string_view key, StrategyCommonOptions& c) {
          c.time_limit_s = parse_duration_option(f, key, range);
        });
  if (traits.portfolio != PortfolioUse::None)
    s.flag("portfolio", &StrategyCommonOptions::portfolio,
           "keep the best (by the cost model) of the strategy's answer and the warm-start portfolio's: m-TOPO, "
           "single-device, HEFT, m-ETF and METIS; results name the winner (false: the strategy's own answer)");
  if (traits.searches)
    s.choice<CostModelKind>("cost_model", &StrategyCommonOptions::cost_model, kCostModelNames,
             "the latency the search minimises: list (contention-free list schedule) or flow (the same "
             "order under contention, what SimGrid measures)");
  return s;
}

std::string infeasibility_reason(const Graph& graph, const Cluster& cluster) {
  double capacity = 0, largest = 0;
  for (const Device& d : cluster.devices()) {
    capacity += d.memory_bytes;
    largest = std::max(largest, d.memory_bytes);
  }
  if (graph.total_memory() > capacity)
    return fmt::format("the graph needs {} of memory, the {} GPUs hold {} in all", format_bytes(graph.total_memory()),
                       cluster.num_devices(), format_bytes(capacity));
  std::vector<double> class_memory(graph.num_colocation_classes(), 0.0);
  std::vector<OpId> class_member(graph.num_colocation_classes(), -1);
  for (OpId i = 0; i < static_cast<OpId>(graph.num_operators()); ++i) {
    const Operator& op = graph.op(i);
    if (op.colocation_class < 0) {
      if (op.memory_bytes > largest)
        return fmt::format("operator '{}' needs {}, the largest GPU holds {}", op.name, format_bytes(op.memory_bytes),
                           format_bytes(largest));
      continue;
    }
    class_memory[op.colocation_class] += op.memory_bytes;
    if (class_member[op.colocation_class] < 0) class_member[op.colocation_class] = i;
  }
  for (std::size_t c = 0; c < class_memory.size(); ++c)
    if (class_memory[c] > largest)
      return fmt::format("the colocation class of operator '{}' needs {}, the largest GPU holds {}",
                         graph.op(class_member[c]).name, format_bytes(class_memory[c]), format_bytes(largest));
  return "";
}

PlacementResult Strategy::place(const Graph& graph, const Cluster& cluster) {
  if (const std::string reason = infeasibility_reason(graph, cluster); !reason.empty())
    throw InfeasibleProblem("no placement fits in GPU memory: " + reason);
  const Deadline deadline(common_.time_limit_s);
  PlacementResult result = place_impl(graph, cluster, deadline);
  validate_placement(graph, cluster, result.placement, "strategy '" + name_ + "'");
  result.search_seconds = deadline.elapsed();
  if (searches_) result.facts.cost_model = common_.cost_model;
  if (deadline.bounded()) {
    result.facts.time_limit_s = deadline.limit();
    result.facts.over_time_limit = result.search_seconds > deadline.limit();
  }
  return result;
}

const StrategyInfo& find_strategy(const std::string& name, const std::string& file, const std::string& field) {
  if (const StrategyInfo* info = strategy_registry().find(name)) return *info;
  if (planner_registry().find(name))
    throw InputError(file, field,
                     fmt::format("'{}' plans a layer-level workload: give the scenario `workload:` (a model of the layer "
                                 "zoo or a per-layer workload file) instead of `graph:`",
                                 name));
  return strategy_registry().get(name, file, field);
}

std::unique_ptr<Strategy> make_strategy(const std::string& name, const YAML::Node& options, const std::string& file,
                                        const std::string& field) {
  const StrategyInfo& info = find_strategy(name, file, field);
  YAML::Node opts = options ? options : YAML::Node(YAML::NodeType::Map);
  if (opts.IsNull()) opts = YAML::Node(YAML::NodeType::Map);
  return info.make(YamlFields(opts, file, field + ".options"));
}

nlohmann::ordered_json strategies_to_json() {
  nlohmann::ordered_json out = strategy_registry().to_json(
      [](const StrategyInfo&, nlohmann::ordered_json& j) { j["kind"] = "placement"; });
  for (auto& p : planner_registry().to_json([](const PlannerInfo&, nlohmann::ordered_json& j) { j["kind"] = "planner"; }))
    out.push_back(std::move(p));
  return out;
}

}  // namespace placesim
