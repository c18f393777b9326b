#include "placement/framework/portfolio.h"

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <optional>
#include <yaml-cpp/yaml.h>

#include "sim/engines/evaluator.h"
#include "sim/config/yaml_fields.h"

namespace placesim {

namespace {
// Called by name through the registry: the strategies that call the portfolio do not know them.
// m-TOPO first: the memory fill that finds a placement that fits whenever a simple one exists.
constexpr const char* kPortfolio[] = {"m-topo", "single-device", "heft", "m-etf", "metis"};
// Run again on one server's GPUs: a placement that keeps every transfer on NVLink, which the
// whole-cluster runs rarely find (HEFT and METIS spread over every GPU and cross the NICs), and
// which under contention is often the fastest (BERT-base on a 16-GPU fat-tree: METIS on one
// server 153 ms in the flow model, on all 16 GPUs 192 ms).
constexpr const char* kOneServer[] = {"heft", "metis"};

// The GPUs of the server with the most compute (the lowest-numbered among equals); empty when the
// cluster is one server or its servers hold one GPU each (nothing to confine to).
std::vector<DeviceId> fastest_server(const Cluster& cluster) {
  const int servers = cluster.num_servers();
  if (servers < 2) return {};
  std::vector<double> speed(servers, 0.0);
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) speed[cluster.device(d).server] += cluster.device(d).compute_speed;
  const int best = static_cast<int>(std::max_element(speed.begin(), speed.end()) - speed.begin());
  std::vector<DeviceId> gpus;
  for (DeviceId d = 0; d < cluster.num_devices(); ++d)
    if (cluster.device(d).server == best) gpus.push_back(d);
  if (gpus.size() < 2) return {};
  return gpus;
}

const StrategyInfo* registered(std::string_view name) { return strategy_registry().find(name); }
}  // namespace

bool fits_memory(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement) {
  const std::vector<double> mem = device_memory(graph, placement, cluster.num_devices());
  for (DeviceId d = 0; d < cluster.num_devices(); ++d)
    if (mem[d] > cluster.device(d).memory_bytes) return false;
  return true;
}

std::vector<PortfolioCandidate> run_portfolio(const Graph& graph, const Cluster& cluster, const Deadline& deadline,
                                              CostModel& cost, const std::string& caller, nlohmann::json& report,
                                              bool first_even_out_of_time) {
  std::vector<PortfolioCandidate> out;
  // One candidate: `name` run on `on` (the whole cluster, or one server's GPUs `gpus`).
  auto run = [&](const std::string& label, const char* name, const Cluster& on, std::span<const DeviceId> gpus,
                 bool first) {
    const StrategyInfo* info = registered(name);
    if (!info) return;
    if (deadline.expired() && !(first && first_even_out_of_time)) {
      report[label] = "skipped: out of time";
      return;
    }
    try {
      std::unique_ptr<Strategy> s = info->make(YamlFields(YAML::Node(YAML::NodeType::Map), caller, "portfolio"));
      if (deadline.bounded() && !first) s->set_time_limit(std::max(1e-3, deadline.remaining()));
      PortfolioCandidate c;
      c.name = label;
      c.placement = s->place(graph, on).placement;
      if (!gpus.empty())
        for (DeviceId& d : c.placement) d = gpus[d];
      c.latency = cost.latency(c.placement);
      c.fits = fits_memory(graph, cluster, c.placement);
      report[label] = c.fits ? nlohmann::json(c.latency) : nlohmann::json("out of memory");
      out.push_back(std::move(c));
    } catch (const std::exception& e) {
      report[label] = std::string("failed: ") + e.what();
    }
  };
  for (const char* name : kPortfolio)
    run(name, name, cluster, {}, name == kPortfolio[0]);
  if (const std::vector<DeviceId> gpus = fastest_server(cluster); !gpus.empty()) {
    const Cluster server = cluster.restricted_to(gpus);
    const std::string where = fmt::format(" on server {}", cluster.device(gpus[0]).server);
    for (const char* name : kOneServer) run(name + where, name, server, gpus, false);
  }
  return out;
}

std::unique_ptr<Strategy> with_warm_start(std::unique_ptr<Strategy> s, const StrategyTraits& traits) {
  const bool compare = traits.portfolio == PortfolioUse::AfterIt && s->common_options().portfolio;
  if (!compare && !traits.searches && !traits.memory_fallback) return s;
  return std::make_unique<WarmStartPortfolio>(std::move(s), compare, traits.searches || traits.memory_fallback);
}

const Strategy& own_strategy(const Strategy& s) {
  const auto* wrapped = dynamic_cast<const WarmStartPortfolio*>(&s);
  return wrapped ? wrapped->inner() : s;
}

WarmStartPortfolio::WarmStartPortfolio(std::unique_ptr<Strategy> inner, bool compare, bool memory_fallback)
    : Strategy(inner->name()), inner_(std::move(inner)), compare_(compare), memory_fallback_(memory_fallback) {
  set_common_options(inner_->common_options());
  set_searches(inner_->searches());
}

namespace {

// Returns `placement` instead of the strategy's answer. What the strategy reported describes its
// own answer (its memory per GPU, its schedule), so it moves under `own_answer`.
void replace_answer(PlacementResult& result, std::vector<DeviceId> placement) {
  if (!result.details.contains("own_answer")) {
    nlohmann::json own = std::move(result.details);
    result.details = nlohmann::json::object();
    if (own.contains("portfolio")) {
      result.details["portfolio"] = std::move(own["portfolio"]);
      own.erase("portfolio");
    }
    result.details["own_answer"] = std::move(own);
  }
  result.placement = std::move(placement);
  result.bandwidth_allocation.reset();
}

}  // namespace

PlacementResult WarmStartPortfolio::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  PlacementResult result = inner_->place_impl(graph, cluster, deadline);
  validate_placement(graph, cluster, result.placement, "strategy '" + name() + "'");
  std::optional<CostModel> cost;
  std::vector<PortfolioCandidate> candidates;
  nlohmann::json tried = nlohmann::json::object();
  bool fill_ran = false;  // m-TOPO's fill is among the candidates (run or failed, not skipped)
  auto portfolio = [&](bool first_even_out_of_time) {
    if (!cost) cost.emplace(make_cost_model(graph, cluster));
    if (fill_ran) return;
    tried = nlohmann::json::object();
    candidates = run_portfolio(graph, cluster, deadline, *cost, name(), tried, first_even_out_of_time);
    fill_ran = !(tried.contains("m-topo") && tried["m-topo"].is_string() &&
                 tried["m-topo"].get<std::string>().rfind("skipped", 0) == 0);
  };
  // Never worse than the cheap answers: the better, by the cost model, of the answer (when it
  // fits) and the portfolio's best that fits.
  if (compare_) {
    portfolio(false);
    nlohmann::json compared = tried;
    const bool own_fits = fits_memory(graph, cluster, result.placement);
    compared[name()] = own_fits ? nlohmann::json(cost->latency(result.placement)) : nlohmann::json("out of memory");
    const PortfolioCandidate* best = best_fitting(candidates);
    const bool take = best && (!own_fits || best->latency < compared[name()].get<double>() * (1 - 1e-12));
    if (take) replace_answer(result, best->placement);
    result.details["portfolio"] = std::move(compared);
    result.facts.portfolio_winner = take ? best->name : name();
  }
  // Feasibility first: a search that ends over some GPU's memory returns the best placement of
  // the portfolio that fits, and says so. The portfolio of the step above is reused when its fill ran.
  if (memory_fallback_ && !fits_memory(graph, cluster, result.placement)) {
    portfolio(/*first_even_out_of_time=*/true);
    nlohmann::json fallback = {{"reason", "the strategy's placement exceeds GPU memory"},
                               {"own_latency_s", cost->latency(result.placement)},
                               {"candidates", tried}};
    if (const PortfolioCandidate* best = best_fitting(candidates)) {
      fallback["chosen"] = best->name;
      result.facts.memory_fallback = best->name;
      replace_answer(result, best->placement);
    } else {
      fallback["chosen"] = "none fits: the strategy's own placement";
      result.facts.memory_fallback = "none fits";
    }
    result.details["memory_fallback"] = std::move(fallback);
  }
  return result;
}

const PortfolioCandidate* best_fitting(std::span<const PortfolioCandidate> candidates) {
  const PortfolioCandidate* best = nullptr;
  for (const PortfolioCandidate& c : candidates)
    if (c.fits && (!best || c.latency < best->latency)) best = &c;
  return best;
}

}  // namespace placesim
