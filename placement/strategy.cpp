#include "placement/strategy.h"

#include <fmt/format.h>

#include "sim/errors.h"
#include "sim/evaluator.h"

namespace placesim {

OptionSchema<StrategyCommonOptions> strategy_common_schema(double time_limit_default) {
  OptionSchema<StrategyCommonOptions> s;
  Range range = Range::positive();
  range.allow_infinity = true;
  s.add({"time_limit", "duration",
         "wall-clock budget of the whole call (search, solver, refinement), e.g. 10s; none: unbounded",
         default_text_duration(time_limit_default), {}, "2s"},
        [range](const YamlFields& f, std::string_view key, StrategyCommonOptions& c) {
          c.time_limit_s = parse_duration_option(f, key, range);
        });
  return s;
}

PlacementResult Strategy::place(const Graph& graph, const Cluster& cluster) {
  const Deadline deadline(common_.time_limit_s);
  PlacementResult result = place_impl(graph, cluster, deadline);
  result.search_seconds = deadline.elapsed();
  validate_placement(graph, cluster, result.placement, "strategy '" + name_ + "'");
  if (deadline.bounded()) {
    result.report["time_limit_s"] = deadline.limit();
    result.report["over_time_limit"] = result.search_seconds > deadline.limit();
  }
  return result;
}

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

nlohmann::ordered_json strategies_to_json() {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& info : strategy_registry()) {
    nlohmann::ordered_json options = nlohmann::ordered_json::array();
    for (const auto& o : info.options) {
      nlohmann::ordered_json j = {{"key", o.key}, {"kind", o.kind}, {"default", o.default_text}, {"help", o.help}};
      if (!o.choices.empty()) j["choices"] = o.choices;
      j["example"] = o.example;
      options.push_back(std::move(j));
    }
    out.push_back({{"name", info.name}, {"description", info.description}, {"options", std::move(options)}});
  }
  return out;
}

}  // namespace placesim
