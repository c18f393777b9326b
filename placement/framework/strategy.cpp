#include "placement/framework/strategy.h"

#include <fmt/format.h>
#include <optional>

#include "sim/core/errors.h"
#include "placement/framework/planner.h"
#include "placement/framework/portfolio.h"
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
           "single-device, HEFT, m-ETF and METIS (false: the strategy's own answer)");
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

namespace {

// Returns `placement` instead of the strategy's answer. What the strategy reported describes its
// own answer (its memory per GPU, its schedule), so it moves under `own_answer`.
void replace_answer(PlacementResult& result, std::vector<DeviceId> placement) {
  if (!result.report.contains("own_answer")) {
    nlohmann::json own = std::move(result.report);
    result.report = nlohmann::json::object();
    for (const char* kept : {"portfolio", "portfolio_winner"})
      if (own.contains(kept)) {
        result.report[kept] = std::move(own[kept]);
        own.erase(kept);
      }
    result.report["own_answer"] = std::move(own);
  }
  result.placement = std::move(placement);
  result.bandwidth_allocation.reset();
}

}  // namespace

PlacementResult Strategy::place(const Graph& graph, const Cluster& cluster) {
  if (const std::string reason = infeasibility_reason(graph, cluster); !reason.empty())
    throw InfeasibleProblem("no placement fits in GPU memory: " + reason);
  const Deadline deadline(common_.time_limit_s);
  PlacementResult result = place_impl(graph, cluster, deadline);
  validate_placement(graph, cluster, result.placement, "strategy '" + name_ + "'");
  // The warm-start portfolio, run at most once per call (both steps below may want it).
  std::optional<CostModel> cost;
  std::vector<PortfolioCandidate> candidates;
  nlohmann::json tried = nlohmann::json::object();
  bool fill_ran = false;  // m-TOPO's fill is among the candidates (run or failed, not skipped)
  auto portfolio = [&](bool first_even_out_of_time) {
    if (!cost) cost.emplace(make_cost_model(graph, cluster));
    if (fill_ran) return;
    tried = nlohmann::json::object();
    candidates = run_portfolio(graph, cluster, deadline, *cost, name_, tried, first_even_out_of_time);
    fill_ran = !(tried.contains("m-topo") && tried["m-topo"].is_string() &&
                 tried["m-topo"].get<std::string>().rfind("skipped", 0) == 0);
  };
  // Never worse than the cheap answers (issue #13): the better, by the cost model, of the answer
  // (when it fits) and the portfolio's best that fits.
  if (portfolio_use_ == PortfolioUse::AfterIt && common_.portfolio) {
    portfolio(false);
    nlohmann::json compared = tried;
    const bool own_fits = fits_memory(graph, cluster, result.placement);
    compared[name_] = own_fits ? nlohmann::json(cost->latency(result.placement)) : nlohmann::json("out of memory");
    const PortfolioCandidate* best = best_fitting(candidates);
    const bool take = best && (!own_fits || best->latency < compared[name_].get<double>() * (1 - 1e-12));
    if (take) replace_answer(result, best->placement);
    result.report["portfolio"] = std::move(compared);
    result.report["portfolio_winner"] = take ? best->name : name_;
  }
  // Feasibility first (issue #13): a search that ends over some GPU's memory returns the best
  // placement of the warm-start portfolio that fits (m-TOPO's fill first), and says so. A
  // placement that fits exists whenever the fill finds one. Baselines (single-device, ...) return
  // what they are, out of memory or not. The portfolio of the step above is reused when its fill ran.
  if (searches_ && !fits_memory(graph, cluster, result.placement)) {
    portfolio(/*first_even_out_of_time=*/true);
    nlohmann::json fallback = {{"reason", "the strategy's placement exceeds GPU memory"},
                               {"own_latency_s", cost->latency(result.placement)},
                               {"candidates", tried}};
    if (const PortfolioCandidate* best = best_fitting(candidates)) {
      fallback["chosen"] = best->name;
      replace_answer(result, best->placement);
    } else {
      fallback["chosen"] = "none fits: the strategy's own placement";
    }
    result.report["memory_fallback"] = std::move(fallback);
  }
  result.search_seconds = deadline.elapsed();
  if (searches_) result.report["cost_model"] = std::string(cost_model_name(common_.cost_model));
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
  if (planner_named(name))
    throw InputError(file, field,
                     fmt::format("'{}' plans a layer-level workload: give the scenario `workload:` (a model of the layer "
                                 "zoo or a per-layer workload file) instead of `graph:`",
                                 name));
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
  auto options_json = [](std::span<const OptionDoc> docs) {
    nlohmann::ordered_json options = nlohmann::ordered_json::array();
    for (const auto& o : docs) {
      nlohmann::ordered_json j = {{"key", o.key}, {"kind", o.kind}, {"default", o.default_text}, {"help", o.help}};
      if (!o.choices.empty()) j["choices"] = o.choices;
      j["example"] = o.example;
      options.push_back(std::move(j));
    }
    return options;
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& info : strategy_registry())
    out.push_back({{"name", info.name}, {"kind", "placement"}, {"description", info.description},
                   {"options", options_json(info.options)}});
  for (const auto& info : planner_registry())
    out.push_back({{"name", info.name}, {"kind", "planner"}, {"description", info.description},
                   {"options", options_json(info.options)}});
  return out;
}

}  // namespace placesim
