#include "sim/engines/engine.h"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

namespace {

std::uint32_t bit_of(std::string_view engine) {
  const auto all = engine_registry().entries();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].answers_to(engine)) return std::uint32_t{1} << i;
  return 0;
}

// The named sets: `all`, every engine that runs the execution graph; `both`, evaluator and simgrid.
EngineSet named_set(std::string_view word) {
  if (word == "all") return EngineSet::of({kEvaluator, kFlow, kSimGrid});
  if (word == "both") return EngineSet::of({kEvaluator, kSimGrid});
  return {};
}

}  // namespace

EngineSet EngineSet::of(std::initializer_list<std::string_view> engines) {
  EngineSet s;
  for (std::string_view e : engines) s = s.with(e);
  return s;
}

EngineSet EngineSet::with(std::string_view engine) const {
  const std::uint32_t bit = bit_of(engine);
  if (!bit) throw std::invalid_argument(fmt::format("no engine '{}'", engine));
  EngineSet s = *this;
  s.bits_ |= bit;
  return s;
}

bool EngineSet::has(std::string_view engine) const { return (bits_ & bit_of(engine)) != 0; }

std::vector<std::string> EngineSet::names() {
  std::vector<std::string> out = engine_registry().names();
  out.emplace_back("all");
  out.emplace_back("both");
  return out;
}

EngineSet EngineSet::parse(std::string_view text, const std::string& file, const std::string& field) {
  if (const EngineSet s = named_set(text); !s.empty()) return s;
  if (bit_of(text)) return of({text});
  const std::vector<std::string> valid = names();
  std::vector<std::string_view> words(valid.begin(), valid.end());
  throw_unknown_choice(text, words, file, field);
}

std::vector<std::string_view> EngineSet::engines() const {
  std::vector<std::string_view> out;
  const auto all = engine_registry().entries();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (bits_ & (std::uint32_t{1} << i)) out.push_back(all[i].name);
  return out;
}

bool EngineSet::estimate_only() const { return *this == of({kEstimate}); }

std::string EngineSet::name() const {
  for (const char* word : {"all", "both"})
    if (*this == named_set(word)) return word;
  return fmt::format("{}", fmt::join(engines(), "+"));
}

const EngineRun* EngineRuns::find(std::string_view engine) const {
  for (const EngineRun& r : runs)
    if (r.engine == engine) return &r;
  return nullptr;
}

const EngineRun* EngineRuns::contended() const {
  for (std::string_view engine : {kSimGrid, kFlow, kEvaluator})
    if (const EngineRun* r = find(engine); r && r->schedule) return r;
  for (const EngineRun& r : runs)
    if (r.schedule) return &r;
  return nullptr;
}

const std::optional<double> EngineRuns::latency(std::string_view engine) const {
  const EngineRun* r = find(engine);
  return r ? std::optional<double>(r->latency) : std::nullopt;
}

EngineRuns run_engines(const PlacedGraph& graph, const Cluster& cluster, EngineSet which, RunOrder order) {
  EngineRuns out;
  // A folded graph's network once for all engines (the estimate needs none).
  std::optional<FoldedNetwork> network;
  if (graph.fold && !which.estimate_only()) {
    network = fold_network(graph.graph, graph.placement, *graph.fold, cluster);
    out.fold = FoldSummary{graph.fold->copies, graph.fold->description, network->routes, network->split_routes,
                           static_cast<std::int64_t>(network->class_bandwidth.size()), network->first_split};
  }
  const FoldedNetwork* folded = network ? &*network : nullptr;
  // Under the scheduler's order the evaluator's per-GPU order comes first; it is the evaluator's
  // own run when asked for, else its host time counts in the first engine that replays it.
  std::optional<EngineRun> scheduled;
  double unclaimed_wall = 0;
  const auto& registry = engine_registry();
  auto schedule_first = [&] {
    if (scheduled) return;
    scheduled = registry.get(kEvaluator, "", "engine").make()->run(graph, cluster, {GpuQueue::Rank, nullptr, folded});
    if (!which.has(kEvaluator)) unclaimed_wall = scheduled->wall_s;
  };
  for (std::string_view name : which.engines()) {
    const EngineInfo& info = registry.get(name, "", "engine");
    const std::unique_ptr<Engine> engine = info.make();
    if (const std::string why = engine->problem(graph); !why.empty())
      throw std::invalid_argument(fmt::format("the {} engine cannot run this: {}", name, why));
    auto takes = [&](GpuQueue q) { return std::find(info.queues.begin(), info.queues.end(), q) != info.queues.end(); };
    EngineRun run;
    if (info.queues.empty()) {
      run = engine->run(graph, cluster, {GpuQueue::Fcfs, nullptr, folded});
    } else if (order == RunOrder::Fcfs) {
      run = engine->run(graph, cluster, {GpuQueue::Fcfs, nullptr, folded});
    } else if (name == kEvaluator) {
      schedule_first();
      run = *scheduled;
    } else {
      if (!takes(GpuQueue::Fixed))
        throw std::invalid_argument(fmt::format("the {} engine cannot replay the scheduler's order", name));
      schedule_first();
      run = engine->run(graph, cluster, {GpuQueue::Fixed, &scheduled->schedule->device_order, folded});
      run.wall_s += unclaimed_wall;
      unclaimed_wall = 0;
    }
    run.engine = std::string(name);
    out.runs.push_back(std::move(run));
  }
  return out;
}

}  // namespace placesim
