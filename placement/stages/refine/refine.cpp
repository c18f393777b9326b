#include "placement/stages/refine/refine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <random>
#include <stdexcept>
#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "placement/framework/placement_units.h"
#include "sim/engines/evaluator.h"

namespace placesim {

namespace {

// A unit that only passes tensors on is drawn this often relative to one that computes (MCMC's
// measured default for zero_compute_weight).
constexpr double kZeroComputeWeight = 0.1;
// Draws of a swap partner before the candidate falls back to a move (a partner on another GPU is
// missing only when nearly every unit shares one GPU).
constexpr int kSwapPartnerDraws = 8;

// Moves `unit` from `from` to `to`; a swap also moves `partner` (-1: none) from `to` to `from`.
struct Candidate {
  std::int32_t unit = -1;
  DeviceId from = -1, to = -1;
  std::int32_t partner = -1;
};

void apply(const Candidate& c, const PlacementUnits& units, std::span<DeviceId> placement) {
  for (OpId i : units.members_of(c.unit)) placement[i] = c.to;
  if (c.partner >= 0)
    for (OpId i : units.members_of(c.partner)) placement[i] = c.from;
}

// Whether a GPU holding `placed` bytes of `capacity` may gain `gain` bytes: yes when it loses or
// keeps its bytes, else only if it still fits (so its overflow never grows).
bool may_gain(double placed, double gain, double capacity) { return gain <= 0 || placed + gain <= capacity; }

// Draws the candidates of one round from the current placement (serially: the same seed gives
// the same candidates whatever the thread count).
class CandidateDrawer {
 public:
  CandidateDrawer(const PlacementUnits& units, int num_devices, const RefineConfig& config)
      : units_(units), num_devices_(num_devices), swap_fraction_(config.swap_fraction), rng_(config.seed) {
    const double zero_mass = kZeroComputeWeight * static_cast<double>(units.zero_compute.size());
    const double total = zero_mass + static_cast<double>(units.computing.size());
    zero_share_ = total > 0 ? zero_mass / total : 0.0;
  }

  // Nothing can change the latency: one GPU, or no unit that matters.
  bool nothing_to_move() const { return num_devices_ < 2 || (units_.computing.empty() && units_.zero_compute.empty()); }

  Candidate draw(std::span<const DeviceId> placement) {
    Candidate c;
    c.unit = draw_unit();
    c.from = placement[units_.members_of(c.unit)[0]];
    if (uniform() < swap_fraction_) {
      for (int attempt = 0; attempt < kSwapPartnerDraws; ++attempt) {
        const std::int32_t partner = draw_unit();
        const DeviceId partner_gpu = placement[units_.members_of(partner)[0]];
        if (partner_gpu != c.from) {
          c.partner = partner;
          c.to = partner_gpu;
          return c;
        }
      }
    }
    c.to = move_target(c.unit, c.from, placement);
    return c;
  }

 private:
  double uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  std::uint64_t below(std::uint64_t k) { return rng_() % k; }

  std::int32_t draw_unit() {
    const bool zero = units_.computing.empty() || (zero_share_ > 0 && uniform() < zero_share_);
    const auto& pool = zero ? units_.zero_compute : units_.computing;
    return pool[below(pool.size())];
  }

  // Half the time the GPU of a graph neighbour (where a tensor of the unit goes or comes from:
  // moving there saves a transfer), else, or when that is its own GPU, a uniform other GPU.
  DeviceId move_target(std::int32_t unit, DeviceId from, std::span<const DeviceId> placement) {
    const auto neighbours = units_.neighbours_of(unit);
    if (!neighbours.empty() && uniform() < 0.5) {
      const DeviceId gpu = placement[neighbours[below(neighbours.size())]];
      if (gpu != from) return gpu;
    }
    auto to = static_cast<DeviceId>(below(num_devices_ - 1));
    return to >= from ? to + 1 : to;
  }

  const PlacementUnits& units_;
  int num_devices_;
  double swap_fraction_, zero_share_ = 0;
  std::mt19937_64 rng_;
};

// What one evaluating thread keeps: its cost model (reusable buffers) and its copy of the placement.
struct EvaluationSlot {
  CostModel cost_model;
  std::vector<DeviceId> placement;
};

}  // namespace

RefineResult refine_placement(const Graph& graph, const Cluster& cluster, std::vector<DeviceId> start,
                              const RefineConfig& config, CostModelKind inherited) {
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (start.size() != graph.num_operators())
    throw std::invalid_argument(fmt::format("refine: the start places {} operators, the graph has {}", start.size(),
                                            graph.num_operators()));
  const int num_devices = cluster.num_devices();
  RefineResult r;
  r.cost_model = config.cost_model.value_or(inherited);
  // More threads than TBB may run at once (the machine's, by default) would only wait.
  const int parallelism = static_cast<int>(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  r.threads = std::min(config.threads > 0 ? config.threads : parallelism, parallelism);
  r.placement = std::move(start);

  const PlacementUnits units = build_placement_units(graph);
  CandidateDrawer drawer(units, num_devices, config);
  std::vector<double> memory = device_memory(graph, r.placement, num_devices);
  r.start_latency = CostModel(graph, cluster, r.cost_model).latency(r.placement);
  r.latency = r.start_latency;

  tbb::task_arena arena(r.threads);
  tbb::enumerable_thread_specific<EvaluationSlot> slots(
      [&] { return EvaluationSlot{CostModel(graph, cluster, r.cost_model), {}}; });
  std::vector<Candidate> candidates;
  std::vector<double> latencies;
  candidates.reserve(static_cast<std::size_t>(config.batch));
  int rounds_without_improvement = 0;
  const bool bounded = config.time_limit_s < std::numeric_limits<double>::infinity();
  std::atomic<long> skipped{0};
  while (true) {
    if (r.evaluations >= config.steps) {
      r.stopped_by = RefineStop::Steps;
      break;
    }
    if (drawer.nothing_to_move() || rounds_without_improvement >= config.patience) {
      r.stopped_by = RefineStop::Converged;
      break;
    }
    if (elapsed() >= config.time_limit_s) {
      r.stopped_by = RefineStop::TimeLimit;
      break;
    }
    ++r.rounds;
    const long draws = std::min<long>(config.batch, config.steps - r.evaluations);
    candidates.clear();
    for (long k = 0; k < draws; ++k) {
      const Candidate c = drawer.draw(r.placement);
      const double moved = units.memory[c.unit] - (c.partner >= 0 ? units.memory[c.partner] : 0.0);
      if (may_gain(memory[c.to], moved, cluster.device(c.to).memory_bytes) &&
          may_gain(memory[c.from], -moved, cluster.device(c.from).memory_bytes))
        candidates.push_back(c);
    }
    latencies.assign(candidates.size(), 0.0);
    const double cutoff = r.latency;
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, candidates.size(), 1), [&](const auto& range) {
        EvaluationSlot& slot = slots.local();
        for (std::size_t k = range.begin(); k != range.end(); ++k) {
          // Past the time limit the rest of the round is skipped: a round of slow evaluations
          // (100,000 operators) would otherwise overrun a caller's deadline.
          if (bounded && elapsed() >= config.time_limit_s) {
            latencies[k] = std::numeric_limits<double>::infinity();
            skipped.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          slot.placement = r.placement;
          apply(candidates[k], units, slot.placement);
          latencies[k] = slot.cost_model.latency_with_cutoff(slot.placement, cutoff);
        }
      });
    });
    r.evaluations += static_cast<long>(candidates.size()) - skipped.exchange(0);

    // The lowest latency strictly below the current one; ties go to the first drawn.
    std::size_t best = candidates.size();
    double best_latency = r.latency;
    for (std::size_t k = 0; k < candidates.size(); ++k)
      if (latencies[k] < best_latency) {
        best = k;
        best_latency = latencies[k];
      }
    if (best == candidates.size()) {
      ++rounds_without_improvement;
      continue;
    }
    rounds_without_improvement = 0;
    ++r.improvements;
    apply(candidates[best], units, r.placement);
    r.latency = best_latency;
    memory = device_memory(graph, r.placement, num_devices);
  }
  r.seconds = elapsed();
  return r;
}

void polish_answer(const Graph& graph, const Cluster& cluster, const Deadline& deadline, CostModelKind cost_model,
                   PlacementResult& answer, long max_evaluations) {
  RefineConfig config;
  config.steps = max_evaluations;
  config.time_limit_s = deadline.bounded() ? deadline.remaining() - std::min(0.02, 0.01 * deadline.limit())
                                           : std::numeric_limits<double>::infinity();
  if (config.time_limit_s <= 0) {
    answer.details["polish"] = "no time left";
    return;
  }
  RefineResult polished = refine_placement(graph, cluster, answer.placement, config, cost_model);
  answer.details["polish"] = refine_report(polished);
  if (polished.latency < polished.start_latency) answer.placement = std::move(polished.placement);
}

nlohmann::json refine_report(const RefineResult& result) {
  return {
      {"cost_model", std::string(cost_model_name(result.cost_model))},
      {"start_latency_s", result.start_latency},
      {"final_latency_s", result.latency},
      {"evaluations", result.evaluations},
      {"rounds", result.rounds},
      {"improvements", result.improvements},
      {"stopped_by", std::string(enum_name<RefineStop>(kRefineStopNames, result.stopped_by))},
      {"seconds", result.seconds},
      {"threads", result.threads},
  };
}

OptionSchema<RefineConfig> refine_schema() {
  OptionSchema<RefineConfig> s;
  s.count("steps", &RefineConfig::steps, "candidate evaluations at most", 0, std::numeric_limits<long>::max(), "100");
  Range time_limit = Range::positive();
  time_limit.allow_infinity = true;
  s.duration("time_limit", &RefineConfig::time_limit_s, "wall-clock budget of the stage, e.g. 2s; none: unbounded",
             time_limit, "2s");
  OptionDoc cost_model{"cost_model", "choice",
                       "the latency it lowers: list (contention-free list schedule) or flow (the same order under "
                       "contention); unset: the strategy's own (list unless it searches)",
                       "the strategy's", {}, "flow"};
  for (const auto& n : kCostModelNames) cost_model.choices.emplace_back(n.name);
  s.add(std::move(cost_model), [](const YamlFields& f, std::string_view key, RefineConfig& c) {
    c.cost_model = enum_parse<CostModelKind>(kCostModelNames, f.string(key), f.file(), f.field(key));
  });
  s.count("batch", &RefineConfig::batch, "candidates drawn and evaluated (in parallel) per round", 1, 1 << 16, "4");
  s.count("threads", &RefineConfig::threads, "evaluating threads, at most the hardware threads; 0: all of them", 0, 1024, "1");
  s.number("swap_fraction", &RefineConfig::swap_fraction, "share of candidates that swap two units",
           Range::closed(0, 1), "0.5");
  s.count("patience", &RefineConfig::patience, "rounds in a row without an improvement before it stops", 1,
          std::numeric_limits<int>::max(), "5");
  s.count("seed", &RefineConfig::seed, "random seed of the candidates", 0, std::numeric_limits<long>::max(), "7");
  return s;
}

}  // namespace placesim
