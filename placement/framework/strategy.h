#pragma once
// One interface for placement strategies. A strategy maps every operator to a GPU.
//
// Strategy::place is the one entry point (non-virtual): it starts the call's time budget, runs
// the strategy's private place_impl, times it, checks what it returns (size, GPUs, colocation)
// and records the budget in the report. Callers cannot bypass it, so every strategy honours the
// same `time_limit`: wall time for the whole call, of which the strategy spends what it needs
// and checks Deadline::expired() in its loops.
//
// A strategy is built from its `options:` block through its StrategyInfo: an OptionSchema of
// its plain config struct (sim/config/options.h) plus the options every strategy shares (time_limit).
// A new strategy is one folder under placement/strategies/ and one line in placement/framework/registry.cpp.
#include <chrono>
#include <functional>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/bandwidth_allocation.h"
#include "sim/core/cluster.h"
#include "sim/engines/cost_model.h"
#include "sim/core/graph.h"
#include "sim/config/options.h"
#include "sim/config/yaml_fields.h"
#include "sim/core/registry.h"

namespace placesim {

// What the placement layer says about a search that other layers read (tables, reports, plots):
// typed, so that nothing above reads a strategy's report by key.
struct SearchFacts {
  std::optional<double> time_limit_s;  // the call's budget, when bounded
  bool over_time_limit = false;        // the call took longer than its budget
  std::optional<CostModelKind> cost_model;  // the latency a search strategy minimised
  // The warm-start portfolio ran around the strategy (WarmStartPortfolio): the candidate whose
  // placement this is, the strategy's own name when its own answer won.
  std::optional<std::string> portfolio_winner;
  // The strategy's answer exceeded some GPU's memory and this candidate of the portfolio replaced it
  // ("none fits" when none did and the answer stayed).
  std::optional<std::string> memory_fallback;
  // The search started from this placement of another strategy (mcmc's `init: portfolio`).
  std::optional<std::string> warm_start;
};

struct PlacementResult {
  std::vector<DeviceId> placement;  // GPU of each operator
  double search_seconds = 0;        // wall time of Strategy::place
  SearchFacts facts;
  // The strategy's own figures and notes, free-form: reported as they are, read by no other layer.
  nlohmann::json details = nlohmann::json::object();
  // A strategy that also chooses the multi-NIC bandwidth allocation (QuickP P3) says so here; the
  // runner measures on the cluster rebuilt with it (topologies/registry.h: with_bandwidth_allocation).
  std::optional<BandwidthAllocation> bandwidth_allocation;
};

// The wall-clock budget of one Strategy::place call.
class Deadline {
 public:
  explicit Deadline(double seconds = std::numeric_limits<double>::infinity())
      : start_(std::chrono::steady_clock::now()), limit_(seconds) {}
  double limit() const { return limit_; }
  bool bounded() const { return limit_ < std::numeric_limits<double>::infinity(); }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  double remaining() const { return bounded() ? std::max(0.0, limit_ - elapsed()) : limit_; }
  bool expired() const { return bounded() && elapsed() >= limit_; }
  // A deadline from now of `fraction` of the time left (unbounded if this one is).
  Deadline portion(double fraction) const {
    return Deadline(bounded() ? remaining() * fraction : std::numeric_limits<double>::infinity());
  }
  // The instant the time is up, for solvers that stop at a time point; the far future if unbounded.
  std::chrono::steady_clock::time_point end() const {
    if (!bounded()) return std::chrono::steady_clock::time_point::max();
    return start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(limit_));
  }

 private:
  std::chrono::steady_clock::time_point start_;
  double limit_;
};

// The options every strategy takes (declared once, in strategy_common_schema()).
struct StrategyCommonOptions {
  double time_limit_s = std::numeric_limits<double>::infinity();  // wall time of the whole call
  // The latency a search strategy minimises (sim/engines/cost_model.h); only search strategies take the
  // key (StrategyTraits::searches), the others keep `list`.
  CostModelKind cost_model = CostModelKind::List;
  // Keep the best, by the cost model, of the strategy's answer and the warm-start portfolio's
  // (placement/framework/portfolio.h); only strategies with StrategyTraits::portfolio take the key.
  // Opt-in: a row is its strategy's own answer unless the scenario asks, and then it names the
  // candidate that won (SearchFacts::portfolio_winner).
  bool portfolio = false;
  bool operator==(const StrategyCommonOptions&) const = default;
};

// How a strategy uses the warm-start portfolio (the `portfolio` key).
enum class PortfolioUse {
  None,     // no `portfolio` key
  Own,      // the strategy runs it itself (QuickP: beside P2's answer, before P3)
  AfterIt,  // the registry wraps it in WarmStartPortfolio, which keeps the better of the answer and the portfolio's best
};

// What a strategy's registration says about the shared options.
struct StrategyTraits {
  double time_limit_default = std::numeric_limits<double>::infinity();  // QuickP's is 60 s
  // A search strategy: it compares placements by latency, so it takes `cost_model: list | flow`,
  // reports which one it used, and falls back to the portfolio's best that fits when its answer
  // exceeds GPU memory (WarmStartPortfolio).
  bool searches = false;
  PortfolioUse portfolio = PortfolioUse::None;
  // A baseline whose rule of thumb may not fit (Placeto's expert): its answer over GPU memory is
  // replaced by the portfolio's best that fits, as a search strategy's is, and said.
  bool memory_fallback = false;
};

class Strategy {
 public:
  explicit Strategy(std::string name) : name_(std::move(name)) {}
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = default;
  Strategy& operator=(const Strategy&) = default;

  // Places the graph within the time budget, times the call and validates the placement. Throws
  // InfeasibleProblem when no placement can fit in GPU memory.
  PlacementResult place(const Graph& graph, const Cluster& cluster);

  const std::string& name() const { return name_; }
  const StrategyCommonOptions& common_options() const { return common_; }
  void set_common_options(const StrategyCommonOptions& common) { common_ = common; }
  void set_cost_model(CostModelKind kind) { common_.cost_model = kind; }
  // Marks a search strategy (StrategyTraits::searches): place() reports its cost model.
  void set_searches(bool searches) { searches_ = searches; }
  bool searches() const { return searches_; }
  void set_time_limit(double seconds) { common_.time_limit_s = seconds; }

 protected:
  // The strategy's cost model on this graph and cluster (`cost_model`, list unless it searches).
  CostModel make_cost_model(const Graph& graph, const Cluster& cluster) const {
    return CostModel(graph, cluster, common_.cost_model);
  }

 private:
  // The wrapper runs the strategy it wraps within its own call's deadline.
  friend class WarmStartPortfolio;
  virtual PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) = 0;
  std::string name_;
  StrategyCommonOptions common_;
  bool searches_ = false;
};

// No placement of the graph fits the cluster's memory (infeasibility_reason): Strategy::place
// throws it before the strategy runs, and the runner records the point as `infeasible` with the
// reason instead of measuring an out-of-memory placement.
class InfeasibleProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why no placement of `graph` can fit in `cluster`'s GPU memory, or "" when one may: the graph's
// memory against the GPUs' total, or a colocation class (or an operator) against the largest GPU.
std::string infeasibility_reason(const Graph& graph, const Cluster& cluster);

struct StrategyInfo : RegistryEntry {
  // Builds the strategy from its options mapping (an empty mapping when none were given).
  std::function<std::unique_ptr<Strategy>(const YamlFields& options)> make;
};

// The shared keys a strategy with these traits takes.
OptionSchema<StrategyCommonOptions> strategy_common_schema(const StrategyTraits& traits);

// The strategy `s` with the warm-start portfolio around it when its traits and options ask
// (placement/framework/portfolio.h): AfterIt with `portfolio: true` compares, a search falls back
// on memory. Else `s` itself.
std::unique_ptr<Strategy> with_warm_start(std::unique_ptr<Strategy> s, const StrategyTraits& traits);

// The StrategyInfo of strategy class S built from a Config by `schema`:
//   return strategy_info<Mcmc>("mcmc", "one line", mcmc_schema(), {.searches = true});
// S must be constructible from Config. The common keys are parsed beside the schema's; the
// portfolio is applied here, where the strategy is made (with_warm_start).
template <class S, class Config>
StrategyInfo strategy_info(std::string name, std::string description, OptionSchema<Config> schema,
                           StrategyTraits traits = {}) {
  const OptionSchema<StrategyCommonOptions> common = strategy_common_schema(traits);
  StrategyInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.options = schema.docs();
  for (auto& d : common.docs()) info.options.push_back(d);
  std::vector<std::string> keys = schema.keys();
  for (auto& k : common.keys()) keys.push_back(k);
  info.make = [schema = std::move(schema), common, keys, traits](const YamlFields& f) -> std::unique_ptr<Strategy> {
    check_known_keys(f, keys);
    StrategyCommonOptions base;
    base.time_limit_s = traits.time_limit_default;
    auto s = std::make_unique<S>(schema.parse_known(f));
    s->set_common_options(common.parse_known(f, base));
    s->set_searches(traits.searches);
    return with_warm_start(std::move(s), traits);
  };
  return info;
}

// Every registered strategy, in registration order (placement/framework/registry.cpp).
const Registry<StrategyInfo>& strategy_registry();

// Looks a strategy up by name; an unknown name is an InputError listing the valid ones (and saying
// so when the name is a planner's).
const StrategyInfo& find_strategy(const std::string& name, const std::string& file, const std::string& field);
std::unique_ptr<Strategy> make_strategy(const std::string& name, const YAML::Node& options, const std::string& file,
                                        const std::string& field);

// Every strategy's and planner's options as JSON, for `placesim strategies --json`; `kind` says
// which (placement, planner).
nlohmann::ordered_json strategies_to_json();

}  // namespace placesim
