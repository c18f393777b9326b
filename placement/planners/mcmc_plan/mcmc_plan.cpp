#include "placement/planners/mcmc_plan/mcmc_plan.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

namespace placesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum Move { Boundary, Stages, Replicas, Width, Experts, Zero, Swap, Transpose, kMoves };
constexpr const char* kMoveNames[kMoves] = {"boundary", "stages", "replicas", "width", "experts", "zero", "swap", "transpose"};

// A state of the chain: the plan's degrees and stages, and the cluster's GPUs in the order the
// plan takes them.
struct State {
  int tp = 1, replicas = 1, stages = 1, zero = 0;
  int ep = 1;  // experts spread over ep of the replicas (a model built for ep 1); 1: as built
  std::vector<int> starts;
  std::vector<DeviceId> order;  // every GPU of the cluster
};

class Chain {
 public:
  Chain(const LayerWorkload& workload, const Cluster& cluster, const McmcPlanConfig& config)
      : workload_(workload), cluster_(cluster), config_(config), network_(NestNetwork::aware(cluster)) {
    for (const auto& [t, model] : workload.by_tensor_parallel)
      if (t <= config.max_tp) {
        widths_.push_back(t);
        expert_widths_[t] = spread_expert_widths(model, config.max_ep);
      }
    if (!widths_.empty()) expert_parallel_ = workload.by_tensor_parallel.at(widths_.front()).expert_parallel;
    total_micro_batches_ = config.total_micro_batches(expert_parallel_);
  }

  const LayerModel& model(int t) const { return workload_.by_tensor_parallel.at(t); }
  // Whether the model at width t can spread its experts over ep replicas.
  bool spreads(int t, int ep) const {
    const std::vector<int>& widths = expert_widths_.at(t);
    return std::find(widths.begin(), widths.end(), ep) != widths.end();
  }
  int layers(int t) const { return static_cast<int>(model(t).layers.size()); }
  int gpus(const State& s) const { return s.tp * expert_parallel_ * s.stages * s.replicas; }
  std::span<const int> widths() const { return widths_; }

  ParallelPlan plan(const State& s) const {
    ParallelPlan p = nest_plan(s.tp, s.replicas, s.stages, s.zero, expert_parallel_, total_micro_batches_,
                               config_.gradient_algorithm, GpuOrder::TpPpDp, config_);
    p.stage_starts = s.starts;
    p.gpus.assign(s.order.begin(), s.order.begin() + gpus(s));
    if (s.ep > 1) p.ep = s.ep;  // out of dp = replicas (the model is built for ep 1)
    return p;
  }

  // NEST's estimate, or nullopt when the state is not a plan that runs (too many GPUs or stages,
  // a reduction its group cannot run).
  std::optional<NestEstimate> estimate(const State& s) const {
    if (gpus(s) > cluster_.num_devices() || s.stages > layers(s.tp)) return std::nullopt;
    const NestEstimate e = nest_estimate(model(s.tp), plan(s), network_, config_.reduction);
    if (!std::isfinite(e.time_per_batch)) return std::nullopt;
    return e;
  }

  // The chain's cost: the estimate, raised for a plan that does not fit so that the chain can
  // cross such plans between two that do.
  double cost(const NestEstimate& e) const {
    return e.time_per_batch * (1 + config_.memory_penalty * std::max(0.0, e.memory_ratio - 1));
  }

  // The widest width whose fewest balanced stages fit with the cluster filled with replicas
  // (else fewer replicas), ZeRO as deep as allowed; when none fits, the cheapest of those tried.
  std::optional<State> start() const {
    State s, cheapest;
    double cheapest_cost = kInf;
    s.order.resize(cluster_.num_devices());
    std::iota(s.order.begin(), s.order.end(), 0);
    for (auto t = widths_.rbegin(); t != widths_.rend(); ++t) {
      s.tp = *t;
      for (s.stages = 1; s.stages <= layers(s.tp); ++s.stages) {
        s.starts = balanced_stages(model(s.tp), s.stages);
        for (s.replicas = cluster_.num_devices() / (s.tp * expert_parallel_ * s.stages); s.replicas >= 1; --s.replicas) {
          s.zero = config_.zero && s.replicas * expert_parallel_ > 1 ? 3 : 0;
          const std::optional<NestEstimate> e = estimate(s);
          if (!e) continue;
          if (e->fits) return s;
          if (cost(*e) < cheapest_cost) {
            cheapest_cost = cost(*e);
            cheapest = s;
          }
        }
      }
    }
    if (cheapest_cost == kInf) return std::nullopt;
    return cheapest;
  }

  // A neighbour of s by `move`, or false when the move does not apply to s.
  bool propose(const State& s, Move move, std::mt19937_64& rng, State& next) const {
    next = s;
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };  // [lo, hi]
    const int L = layers(s.tp), n = cluster_.num_devices();
    switch (move) {
      case Boundary: {
        if (s.stages < 2) return false;
        const int k = pick(1, s.stages - 1);
        const int to = next.starts[k] + (pick(0, 1) ? 1 : -1);
        const int end = k + 1 < s.stages ? s.starts[k + 1] : L;
        if (to <= s.starts[k - 1] || to >= end) return false;
        next.starts[k] = to;
        return true;
      }
      case Stages: {
        if (pick(0, 1) == 0) {  // split
          std::vector<int> splittable;
          for (int p = 0; p < s.stages; ++p)
            if ((p + 1 < s.stages ? s.starts[p + 1] : L) - s.starts[p] >= 2) splittable.push_back(p);
          if (splittable.empty()) return false;
          const int p = splittable[pick(0, static_cast<int>(splittable.size()) - 1)];
          const int first = s.starts[p], end = p + 1 < s.stages ? s.starts[p + 1] : L;
          // At the compute midpoint, each half at least one layer.
          const LayerModel& m = model(s.tp);
          double total = 0;
          for (int l = first; l < end; ++l) total += m.layers[l].forward_s + m.layers[l].backward_s;
          int cut = first + 1;
          double before = m.layers[first].forward_s + m.layers[first].backward_s;
          while (cut + 1 < end && before < total / 2) {
            before += m.layers[cut].forward_s + m.layers[cut].backward_s;
            ++cut;
          }
          next.starts.insert(next.starts.begin() + p + 1, cut);
          next.stages = s.stages + 1;
        } else {  // merge stage k into the one before it
          if (s.stages < 2) return false;
          next.starts.erase(next.starts.begin() + pick(1, s.stages - 1));
          next.stages = s.stages - 1;
        }
        return gpus(next) <= n;
      }
      case Replicas:
        // By whole expert groups: ep divides the replicas.
        next.replicas = s.replicas + (pick(0, 1) ? s.ep : -s.ep);
        if (next.replicas < 1 || gpus(next) > n) return false;
        if (next.replicas * expert_parallel_ == 1) next.zero = 0;
        return true;
      case Width: {
        const auto at = std::find(widths_.begin(), widths_.end(), s.tp) - widths_.begin();
        const auto to = at + (pick(0, 1) ? 1 : -1);
        if (to < 0 || to >= static_cast<long>(widths_.size())) return false;
        next.tp = widths_[to];
        if (!spreads(next.tp, s.ep)) return false;
        if (layers(next.tp) != L) next.starts = balanced_stages(model(next.tp), std::min(s.stages, layers(next.tp)));
        next.stages = static_cast<int>(next.starts.size());
        return gpus(next) <= n;
      }
      case Experts: {
        // The next narrower or wider width that divides the replicas.
        std::vector<int> fitting;
        for (int ep : expert_widths_.at(s.tp))
          if (s.replicas % ep == 0) fitting.push_back(ep);
        const auto at = std::find(fitting.begin(), fitting.end(), s.ep) - fitting.begin();
        const auto to = at + (pick(0, 1) ? 1 : -1);
        if (to < 0 || to >= static_cast<long>(fitting.size())) return false;
        next.ep = fitting[to];
        return true;
      }
      case Zero:
        if (!config_.zero || s.replicas * expert_parallel_ < 2) return false;
        next.zero = (s.zero + pick(1, 3)) % 4;
        return true;
      case Swap: {
        const int used = gpus(s);
        const int a = pick(0, used - 1), b = pick(0, n - 1);
        if (a == b || n < 2) return false;
        std::swap(next.order[a], next.order[b]);
        return true;
      }
      case Transpose: {
        // GPU slot (d S + p) t + r takes the GPU of slot (p dp + d) t + r, or the reverse.
        const int dp = s.replicas * expert_parallel_, S = s.stages, t = s.tp;
        if (dp < 2 || S < 2) return false;
        const bool forward = pick(0, 1);
        for (int d = 0; d < dp; ++d)
          for (int p = 0; p < S; ++p)
            for (int r = 0; r < t; ++r) {
              const int replica_major = (d * S + p) * t + r, stage_major = (p * dp + d) * t + r;
              if (forward)
                next.order[replica_major] = s.order[stage_major];
              else
                next.order[stage_major] = s.order[replica_major];
            }
        return true;
      }
      case kMoves: break;
    }
    return false;
  }

 private:
  const LayerWorkload& workload_;
  const Cluster& cluster_;
  McmcPlanConfig config_;
  NestNetwork network_;
  std::vector<int> widths_;
  std::map<int, std::vector<int>> expert_widths_;  // per tensor width: spread_expert_widths, 1 first
  int expert_parallel_ = 1;
  int total_micro_batches_ = 1;
};

}  // namespace

std::span<const char* const> mcmc_plan_move_names() { return kMoveNames; }

McmcPlanSearch mcmc_plan_search(const LayerWorkload& workload, const Cluster& cluster, const McmcPlanConfig& config,
                                const Deadline& deadline) {
  if (const std::string why = nest_assumptions_problem(workload, config); !why.empty())
    throw std::invalid_argument("mcmc-plan: " + why);
  const Chain chain(workload, cluster, config);
  if (chain.widths().empty())
    throw InfeasibleProblem(fmt::format("mcmc-plan: {} has no tensor-parallel width up to max_tp {}", workload.name,
                                        config.max_tp));
  const std::optional<State> first = chain.start();
  if (!first)
    throw InfeasibleProblem(fmt::format("mcmc-plan: {} has no plan that runs on {} GPUs", workload.name,
                                        cluster.num_devices()));
  State current = *first, best;
  NestEstimate current_estimate = *chain.estimate(current), best_estimate;
  double current_cost = chain.cost(current_estimate);
  bool found = current_estimate.fits;
  if (found) {
    best = current;
    best_estimate = current_estimate;
  }
  McmcPlanSearch out;
  out.start_estimate = current_estimate;
  out.proposed.assign(kMoves, 0);
  out.taken.assign(kMoves, 0);
  std::mt19937_64 rng(config.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  State next;
  for (long step = 0; step < config.steps; ++step) {
    if ((step & 63) == 0 && deadline.expired()) {
      out.stopped_by_time = true;
      break;
    }
    ++out.steps;
    const Move move = static_cast<Move>(std::uniform_int_distribution<int>(0, kMoves - 1)(rng));
    if (!chain.propose(current, move, rng, next)) continue;
    const std::optional<NestEstimate> e = chain.estimate(next);
    if (!e) continue;
    ++out.proposed[move];
    const double next_cost = chain.cost(*e);
    const double delta = (next_cost - current_cost) / current_cost;
    if (delta > 0 && unit(rng) >= std::exp(-config.beta * delta)) continue;
    ++out.accepted;
    ++out.taken[move];
    std::swap(current, next);
    current_estimate = *e;
    current_cost = next_cost;
    if (current_estimate.fits && (!found || current_estimate.time_per_batch < best_estimate.time_per_batch)) {
      best = current;
      best_estimate = current_estimate;
      found = true;
      ++out.improvements;
    }
  }
  if (!found)
    throw InfeasibleProblem(fmt::format(
        "mcmc-plan: no plan of {} the chain saw in {} steps fits the GPUs' memory (the closest needs {:.2f}x a GPU's; "
        "nest says whether any plan fits)",
        workload.name, out.steps, out.start_estimate.memory_ratio));
  out.plan = chain.plan(best);
  out.estimate = best_estimate;
  return out;
}

PlanResult McmcPlan::plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) {
  const McmcPlanSearch found = mcmc_plan_search(workload, cluster, config_, deadline);
  PlanResult r;
  r.plan = found.plan;
  r.details["estimate"] = estimate_json(found.estimate);
  r.details["start_estimate"] = estimate_json(found.start_estimate);
  r.details["steps"] = found.steps;
  r.details["accepted"] = found.accepted;
  r.details["improvements"] = found.improvements;
  nlohmann::json moves = nlohmann::json::object();
  for (int k = 0; k < kMoves; ++k) moves[kMoveNames[k]] = {{"proposed", found.proposed[k]}, {"accepted", found.taken[k]}};
  r.details["moves"] = moves;
  r.details["stopped_by_time"] = found.stopped_by_time;
  r.details["exact"] = false;
  r.details["objective"] = "NEST's estimate of the time per batch on the real network (the best plan the chain saw)";
  return r;
}

OptionSchema<McmcPlanConfig> mcmc_plan_schema() {
  OptionSchema<McmcPlanConfig> s;
  s.count("steps", &McmcPlanConfig::steps, "proposals", 0, std::numeric_limits<long>::max(), "5000");
  s.number("beta", &McmcPlanConfig::beta, "inverse temperature on the relative change of the estimate", Range::positive(),
           "300");
  s.count("seed", &McmcPlanConfig::seed, "random seed", 0, std::numeric_limits<long>::max(), "7");
  s.number("memory_penalty", &McmcPlanConfig::memory_penalty,
           "cost factor per unit of memory overflow (needed / held - 1) of a plan that does not fit", Range::non_negative(),
           "2");
  add_nest_space_options(s);
  return s;
}

PlannerInfo mcmc_plan_planner_info() {
  return planner_info<McmcPlan>("mcmc-plan",
                                "Metropolis over plans (stage boundaries, stage count, replicas, tensor width, ZeRO, "
                                "GPU swaps) on NEST's estimate; the best plan seen, not an optimum",
                                mcmc_plan_schema());
}

}  // namespace placesim
