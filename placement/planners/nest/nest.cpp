#include "placement/planners/nest/nest.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "sim/core/units.h"

namespace placesim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }
}  // namespace

ParallelPlan nest_plan(int tp, int replicas, int stages, int zero, int expert_parallel, int total_micro_batches,
                       CollectiveAlgorithm gradient_algorithm, GpuOrder order) {
  ParallelPlan plan;
  plan.tp = tp;
  plan.pp = stages;
  plan.dp = replicas * expert_parallel;
  plan.ep = expert_parallel;
  plan.zero = zero;
  plan.micro_batches = (total_micro_batches + replicas - 1) / replicas;
  plan.schedule = PipelineSchedule::OneFOneB;
  plan.gradient_algorithm = gradient_algorithm;
  plan.gpus = gpus_in_order(tp, stages, plan.dp, order);
  return plan;
}

std::vector<int> spread_expert_widths(const LayerModel& model, int max_ep) {
  std::vector<int> widths{1};
  if (model.expert_parallel != 1) return widths;
  int experts = 0;  // their greatest common divisor
  for (const Layer& l : model.layers)
    if (l.expert_parameter_bytes > 0) experts = std::gcd(experts, l.experts);
  for (int ep = 2; ep <= std::min(max_ep, experts); ++ep)
    if (experts % ep == 0) widths.push_back(ep);
  return widths;
}

namespace {

struct Case {
  const LayerModel* model = nullptr;  // the workload at width tp
  int tp = 1, zero = 0, replicas = 1, stages = 1;  // replicas: NEST's d (pipelines)
  GpuOrder order = GpuOrder::TpPpDp;
  // Experts the plan spreads (a model built for ep 1, max_ep > 1): the expert-parallel width, out
  // of `replicas` data-parallel ranks that each run their own micro-batches; 1: the workload's own
  // width (NEST's: an expert group of model.expert_parallel GPUs is one of the d pipelines).
  int spread_ep = 1;
};

ParallelPlan case_plan(const Case& c, int total_micro_batches, CollectiveAlgorithm algorithm) {
  if (c.spread_ep == 1)
    return nest_plan(c.tp, c.replicas, c.stages, c.zero, c.model->expert_parallel, total_micro_batches, algorithm, c.order);
  ParallelPlan plan = nest_plan(c.tp, c.replicas, c.stages, c.zero, 1, total_micro_batches, algorithm, c.order);
  plan.ep = c.spread_ep;
  return plan;
}

struct CaseResult {
  double time = kInf;
  std::vector<int> starts;
};

// The DP of one case: stages contiguous, built from the last to the first.
CaseResult solve_case(const Case& c, int total_micro_batches, CollectiveAlgorithm algorithm, const NestNetwork& network,
                      NestReduction per) {
  const LayerModel& model = *c.model;
  const int L = static_cast<int>(model.layers.size()), S = c.stages, t = c.tp;
  const ParallelPlan plan = case_plan(c, total_micro_batches, algorithm);
  const int m = plan.micro_batches, dp = plan.dp, ep = plan.ep;
  const bool spreads = plan_spreads_experts(model, plan);

  // Prefix sums; `parameters` are the dense ones when the plan spreads the experts, `experts`
  // the GPU's 1/ep share of them.
  std::vector<double> compute(L + 1, 0), parameters(L + 1, 0), experts(L + 1, 0), stash(L + 1, 0), into(L + 1, 0);
  // Tensor-parallel all-reduces (when not in the layers' times) and the all-to-alls of spread
  // experts: how many, and their bytes.
  std::vector<double> tp_count(L + 1, 0), tp_bytes(L + 1, 0), a2a_count(L + 1, 0), a2a_bytes(L + 1, 0);
  std::vector<double> buffer(L, 0);  // ZeRO 3's gather buffer for each layer
  // Layers with dense and with spread expert gradients: the collectives NestReduction::PerLayer counts.
  std::vector<double> dense_layers(L + 1, 0), expert_layers(L + 1, 0);
  for (int l = 0; l < L; ++l) {
    const Layer& layer = model.layers[l];
    tp_count[l + 1] = tp_count[l] + (layer.tp_allreduce_forward_bytes > 0) + (layer.tp_allreduce_backward_bytes > 0);
    tp_bytes[l + 1] = tp_bytes[l] + layer.tp_allreduce_forward_bytes + layer.tp_allreduce_backward_bytes;
    const double alltoall = spreads ? layer.expert_alltoall_bytes : 0.0;
    a2a_count[l + 1] = a2a_count[l] + (alltoall > 0 ? 4 : 0);  // dispatch and combine, both passes
    a2a_bytes[l + 1] = a2a_bytes[l] + (alltoall > 0 ? 4 * alltoall : 0.0);
    compute[l + 1] = compute[l] + layer.forward_s + layer.backward_s;
    const double expert = spreads ? layer.expert_parameter_bytes : 0.0;
    parameters[l + 1] = parameters[l] + layer.parameter_bytes - expert;
    experts[l + 1] = experts[l] + expert / ep;
    dense_layers[l + 1] = dense_layers[l] + (layer.parameter_bytes - expert > 0);
    expert_layers[l + 1] = expert_layers[l] + (expert > 0);
    stash[l + 1] = stash[l] + layer.stashed_bytes;
    buffer[l] = (layer.parameter_bytes - expert) * (1 - 1.0 / dp) + expert / ep * (1 - static_cast<double>(ep) / dp);
  }
  for (int j = 0; j <= L; ++j) into[j] = nest_per_rank_bytes(plan, model.bytes_into(j));
  // How a copy of the stage at p is priced on its GPUs: the intercept and slope of its
  // tensor-parallel all-reduces (a ring's time is affine in its bytes) and the latency and
  // inverse bandwidth of its sends to the next stage and back. The slowest copy sets the pace;
  // the copies' distinct prices are few (a fabric has few levels), and one that is no cheaper in
  // every term than another never decides the maximum.
  struct StagePrice {
    double tp_fixed = 0, tp_slope = 0, a2a_fixed = 0, a2a_slope = 0, next_lat = 0, next_inv = 0, prev_lat = 0, prev_inv = 0;
    bool operator==(const StagePrice&) const = default;
    bool dominated_by(const StagePrice& o) const {
      return tp_fixed <= o.tp_fixed && tp_slope <= o.tp_slope && a2a_fixed <= o.a2a_fixed && a2a_slope <= o.a2a_slope &&
             next_lat <= o.next_lat && next_inv <= o.next_inv && prev_lat <= o.prev_lat && prev_inv <= o.prev_inv;
    }
  };
  // A collective's time is affine in its bytes: its intercept and slope.
  auto affine = [&](std::span<const DeviceId> group, CollectiveAlgorithm algorithm, int zero) {
    const AffineTime f = network.reduction_affine(group, algorithm, zero);
    return std::pair{f.intercept, f.slope};
  };
  std::vector<std::vector<StagePrice>> prices(S);
  for (int p = 0; p < S; ++p) {
    std::vector<StagePrice>& mine = prices[p];
    for (int d = 0; d < dp; ++d) {
      StagePrice price;
      if (tp_count[L] > 0) {
        std::vector<DeviceId> tp_group;
        for (int r = 0; r < t; ++r) tp_group.push_back(nest_plan_gpu(plan, d, p, r));
        std::tie(price.tp_fixed, price.tp_slope) = affine(tp_group, CollectiveAlgorithm::Ring, 0);
      }
      if (a2a_count[L] > 0) {
        const std::vector<DeviceId> ep_group = nest_expert_group(plan, d, p);
        const AffineTime f = network.all_to_all_affine(ep_group);
        std::tie(price.a2a_fixed, price.a2a_slope) = std::pair{f.intercept, f.slope};
      }
      if (p + 1 < S) std::tie(price.next_lat, price.next_inv) = network.link(nest_plan_gpu(plan, d, p, 0), nest_plan_gpu(plan, d, p + 1, 0));
      if (p > 0) std::tie(price.prev_lat, price.prev_inv) = network.link(nest_plan_gpu(plan, d, p, 0), nest_plan_gpu(plan, d, p - 1, 0));
      if (std::any_of(mine.begin(), mine.end(), [&](const StagePrice& o) { return price.dominated_by(o); })) continue;
      std::erase_if(mine, [&](const StagePrice& o) { return o.dominated_by(price); });
      mine.push_back(price);
    }
  }
  // Each stage's memory is the least of its GPUs'.
  std::vector<double> capacity(S, kInf);
  for (int p = 0; p < S; ++p)
    for (int d = 0; d < dp; ++d)
      for (int r = 0; r < t; ++r)
        capacity[p] = std::min(capacity[p], network.cluster->device(nest_plan_gpu(plan, d, p, r)).memory_bytes);
  auto send_cost = [](double bytes, double lat, double inv) { return bytes > 0 ? lat + bytes * inv : 0.0; };
  // The first stage's gradient reduction, affine in its bytes, per tensor rank's group: the dense
  // parameters among every replica, spread experts among those holding the same ones.
  struct Reduction {
    std::pair<double, double> dense, experts;
  };
  std::vector<Reduction> reductions;
  CaseResult result;
  for (int r = 0; r < t; ++r) {
    reductions.push_back({affine(nest_replica_group(plan, 0, r, 1), algorithm, c.zero),
                          spreads ? affine(nest_replica_group(plan, 0, r, ep), algorithm, c.zero) : std::pair{0.0, 0.0}});
    if (reductions.back().dense.first == kInf || reductions.back().experts.first == kInf) return result;
  }
  // `count` collectives of `bytes` in all: per layer, `count` intercepts; as one (stage), one.
  auto part = [&](const std::pair<double, double>& f, double count, double bytes) {
    if (!(bytes > 0)) return 0.0;
    return f.first * (per != NestReduction::Stage ? count : 1.0) + f.second * bytes;
  };
  // Overlapped: per rank and first stage [0, j), what outlasts the backward, max over l < j of
  // (the collectives of layers 0..l) - (the backward of layers below l), plus ZeRO's all-gathers
  // (NestReduction::Overlapped; nest_estimate folds the same queue layer by layer).
  std::vector<std::vector<double>> exposed;
  if (per == NestReduction::Overlapped) {
    const double zero3 = c.zero >= 3 ? 1.5 : 1.0, overlapped = c.zero > 0 ? 0.5 : 1.0;
    for (const Reduction& r : reductions) {
      std::vector<double> mine(L + 1, 0.0);
      double collectives = 0, below = 0, after = 0, worst = -kInf;
      for (int l = 0; l < L; ++l) {
        const double all_reduce = (part(r.dense, 1, parameters[l + 1] - parameters[l]) +
                                   part(r.experts, 1, experts[l + 1] - experts[l])) / zero3;
        collectives += overlapped * all_reduce;
        if (c.zero > 0) after += (1 - overlapped) * all_reduce;
        worst = std::max(worst, collectives - below);
        below += model.layers[l].backward_s;
        mine[l + 1] = worst + after;
      }
      exposed.push_back(std::move(mine));
    }
  }
  // The first stage [0, j)'s reduction.
  auto reduction = [&](int j) {
    double worst = 0;
    for (std::size_t k = 0; k < reductions.size(); ++k) {
      const Reduction& r = reductions[k];
      worst = std::max(worst, per == NestReduction::Overlapped
                                  ? exposed[k][j]
                                  : part(r.dense, dense_layers[j], parameters[j]) + part(r.experts, expert_layers[j], experts[j]));
    }
    return worst;
  };

  // Memory of a stage [i, j): stage_memory from prefix sums (a workload built for its expert
  // width has its experts per GPU already: nothing to spread).
  auto memory = [&](int i, int j, double largest_buffer, int in_flight) {
    return gpu_memory(parameters[j] - parameters[i], experts[j] - experts[i], stash[j] - stash[i], largest_buffer, plan,
                      in_flight)
        .total();
  };

  // f[s][i]: the least max stage load of layers [i, L) on the last s stages.
  std::vector<std::vector<double>> f(S + 1, std::vector<double>(L + 1, kInf));
  std::vector<std::vector<int>> cut(S + 1, std::vector<int>(L + 1, -1));
  f[0][L] = 0;
  int best_first_end = -1;
  for (int s = 1; s <= S; ++s) {
    const int p = S - s, in_flight = std::min(m, s);
    const int first_i = s == S ? 0 : p, last_i = s == S ? 0 : L - s;
    for (int i = first_i; i <= last_i; ++i) {
      double largest = 0;
      for (int j = i + 1; j <= L - (s - 1); ++j) {
        largest = std::max(largest, buffer[j - 1]);
        if (memory(i, j, largest, in_flight) > capacity[p]) break;  // grows with j
        const double rest = f[s - 1][j];
        if (rest == kInf) continue;
        double load = 0;
        for (const StagePrice& price : prices[p]) {
          double mine = price.tp_fixed * (tp_count[j] - tp_count[i]) + price.tp_slope * (tp_bytes[j] - tp_bytes[i]) +
                        price.a2a_fixed * (a2a_count[j] - a2a_count[i]) + price.a2a_slope * (a2a_bytes[j] - a2a_bytes[i]);
          if (p + 1 < S) mine += send_cost(into[j], price.next_lat, price.next_inv);
          if (p > 0) mine += send_cost(into[i], price.prev_lat, price.prev_inv);
          load = std::max(load, mine);
        }
        load += compute[j] - compute[i];
        const double value = std::max(load, rest);
        if (s < S) {
          if (value < f[s][i]) {
            f[s][i] = value;
            cut[s][i] = j;
          }
        } else {
          const double time = value * (m + S - 1) + (dp > 1 ? reduction(j) : 0.0);
          if (time < result.time) {
            result.time = time;
            best_first_end = j;
          }
        }
      }
    }
  }
  if (best_first_end < 0) return result;
  result.starts.push_back(0);
  for (int s = S - 1, i = best_first_end; s >= 1; i = cut[s][i], --s) result.starts.push_back(i);
  return result;
}

}  // namespace

NestSearch nest_search(const LayerWorkload& workload, const Cluster& cluster, const NestConfig& config, bool aware,
                       const Deadline& deadline) {
  const NestNetwork network = aware ? NestNetwork::aware(cluster) : NestNetwork::unaware(cluster);
  const int n = cluster.num_devices();
  double memory_per_gpu = kInf;
  for (int d = 0; d < n; ++d) memory_per_gpu = std::min(memory_per_gpu, cluster.device(d).memory_bytes);

  std::vector<GpuOrder> orders;
  if (config.orders != NestOrders::TpPpDp) orders.push_back(GpuOrder::TpDpPp);
  if (config.orders != NestOrders::TpDpPp) orders.push_back(GpuOrder::TpPpDp);
  std::vector<Case> cases;
  int expert_parallel = 1;
  for (const auto& [t, model] : workload.by_tensor_parallel) {
    if (t > config.max_tp) continue;
    expert_parallel = model.expert_parallel;
    const int L = static_cast<int>(model.layers.size()), per_stage = t * model.expert_parallel;
    for (int d = 1; static_cast<long>(per_stage) * d <= n; ++d) {
      const int dp = d * model.expert_parallel;
      if (config.gradient_algorithm == CollectiveAlgorithm::HalvingDoubling && !power_of_two(dp)) continue;
      // Expert widths to spread the experts over, out of the dp ranks (a model built for ep 1).
      for (int ep : spread_expert_widths(model, config.max_ep)) {
        if (dp % ep != 0) continue;
        if (ep > 1 && config.gradient_algorithm == CollectiveAlgorithm::HalvingDoubling && !power_of_two(dp / ep)) continue;
        for (int z = 0; z <= (config.zero && dp > 1 ? 3 : 0); ++z)
          for (int S = 1; S <= L && static_cast<long>(per_stage) * d * S <= n; ++S)
            for (const GpuOrder order : orders)
              // With one replica or one stage the two orders are one.
              if (order == orders.front() || (dp > 1 && S > 1)) cases.push_back({&model, t, z, d, S, order, ep});
      }
    }
  }
  NestSearch out;
  out.cases = static_cast<long>(cases.size());
  if (cases.empty()) {
    out.why_none = fmt::format("no tensor-parallel width of {} up to max_tp {} fits {} GPUs", workload.name,
                               config.max_tp, n);
    return out;
  }
  const int total = config.total_micro_batches(expert_parallel);

  std::vector<CaseResult> results(cases.size());
  std::atomic<bool> late{false};
  auto run = [&] {
    tbb::parallel_for(std::size_t{0}, cases.size(), [&](std::size_t k) {
      if (late.load(std::memory_order_relaxed)) return;
      if (deadline.expired()) {
        late = true;
        return;
      }
      results[k] = solve_case(cases[k], total, config.gradient_algorithm, network, config.reduction);
    });
  };
  if (config.threads > 0) {
    tbb::task_arena arena(config.threads);  // this search's threads only, not the process's
    arena.execute(run);
  } else {
    run();
  }
  if (late)
    throw std::runtime_error(fmt::format("{}: the time limit ({:g} s) passed before the {} cases were searched",
                                         aware ? "nest" : "nest-unaware", deadline.limit(), cases.size()));

  std::size_t best = cases.size();
  for (std::size_t k = 0; k < cases.size(); ++k)
    if (results[k].time < kInf && (best == cases.size() || results[k].time < results[best].time)) best = k;
  if (best == cases.size()) {
    // The least any layer needs: alone on a stage, ZeRO 3 over as many replicas as fit, one
    // micro-batch in flight.
    const LayerModel& model = *cases.back().model;
    ParallelPlan widest;
    widest.tp = model.tensor_parallel;
    widest.dp = std::max(1, n / (model.tensor_parallel * model.expert_parallel)) * model.expert_parallel;
    widest.ep = model.expert_parallel;
    for (int ep : spread_expert_widths(model, config.max_ep))  // experts spread as wide as allowed
      if (widest.dp % ep == 0) widest.ep = std::max(widest.ep, ep);
    widest.zero = config.zero ? 3 : 0;
    double need = 0;
    std::string layer;
    for (int l = 0; l < static_cast<int>(model.layers.size()); ++l) {
      const double bytes = stage_memory(model, l, l + 1, widest, 1).total();
      if (bytes > need) {
        need = bytes;
        layer = model.layers[l].name;
      }
    }
    const std::string how = fmt::format("at tensor width {}{} over {} replica{}{}", model.tensor_parallel,
                                        config.zero ? ", ZeRO 3" : "", widest.dp, widest.dp == 1 ? "" : "s",
                                        plan_spreads_experts(model, widest) ? fmt::format(", experts over {}", widest.ep) : "");
    if (need > memory_per_gpu) {
      out.why_none = fmt::format("no plan of {} fits: its largest layer ({}) alone needs {} per GPU even {}, and a GPU has {}",
                                 workload.name, layer, format_bytes(need), how, format_bytes(memory_per_gpu));
    } else {
      // Every layer fits alone: the stages a pipeline would need are more than the GPUs hold.
      // How many they hold depends on the width (a stage takes t x ep GPUs), so each width
      // searched is said: the widest alone would hide the narrow widths' longer pipelines.
      const int L = static_cast<int>(model.layers.size());
      std::string stages;
      const LayerModel* said = nullptr;
      for (const Case& k : cases) {
        if (k.model == said) continue;  // cases come width by width
        said = k.model;
        const int per_stage = k.model->tensor_parallel * k.model->expert_parallel;
        const long most = std::min<long>(static_cast<long>(k.model->layers.size()), n / per_stage);
        stages += fmt::format("{}{} stage{} of {} GPU{} at tensor width {}", stages.empty() ? "" : ", ", most,
                              most == 1 ? "" : "s", per_stage, per_stage == 1 ? "" : "s", k.model->tensor_parallel);
      }
      out.why_none = fmt::format(
          "no plan of {} fits: each of its {} layers fits a GPU alone ({} at most, {}), but the {} GPUs hold at most {}, "
          "and no split of the layers into so few stages fits {} per GPU",
          workload.name, L, format_bytes(need), how, n, stages, format_bytes(memory_per_gpu));
    }
    return out;
  }
  const Case& c = cases[best];
  const LayerModel& model = *c.model;
  ParallelPlan& plan = out.plan;
  plan = case_plan(c, total, config.gradient_algorithm);
  plan.stage_starts = results[best].starts;
  out.dp_time_per_batch = results[best].time;
  out.estimate = nest_estimate(model, plan, network, config.reduction);
  return out;
}

nlohmann::json estimate_json(const NestEstimate& e) {
  return {{"time_per_batch_s", e.time_per_batch},
          {"max_stage_load_s", e.max_stage_load},
          {"gradient_reduction_s", e.gradient_reduction},
          {"micro_batches_per_replica", e.micro_batches_per_replica}};
}

PlanResult Nest::plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline& deadline) {
  NestSearch found = nest_search(workload, cluster, config_, aware_, deadline);
  if (!found.why_none.empty()) throw InfeasibleProblem(name() + ": " + found.why_none);
  PlanResult r;
  r.plan = found.plan;
  r.details["cases"] = found.cases;
  r.details["estimate"] = estimate_json(found.estimate);
  if (!aware_)
    r.details["estimate_on_the_real_network"] = estimate_json(
        nest_estimate(workload.by_tensor_parallel.at(found.plan.tp), found.plan, NestNetwork::aware(cluster), config_.reduction));
  return r;
}

OptionSchema<NestConfig> nest_schema() {
  OptionSchema<NestConfig> s;
  add_nest_space_options(s);
  s.count("threads", &NestConfig::threads, "oneTBB threads for the cases (0: all cores)", 0, 1024, "1");
  s.choice("orders", &NestConfig::orders, std::span<const EnumName<NestOrders>>(kNestOrdersNames),
           "GPU orders searched: NEST's tp-dp-pp (replicas before stages), tp-pp-dp, or both", "tp-dp-pp");
  return s;
}

namespace {
class NestUnaware : public Nest {
 public:
  explicit NestUnaware(NestConfig config) : Nest(config, false) {}
};
class NestAware : public Nest {
 public:
  explicit NestAware(NestConfig config) : Nest(config, true) {}
};
}  // namespace

PlannerInfo nest_planner_info() {
  return planner_info<NestAware>(
      "nest",
      "NEST's network-aware DP over pipeline stages, replicas, tensor width and ZeRO, priced on the cluster's own "
      "bandwidth and latency between the plan's GPUs",
      nest_schema());
}

PlannerInfo nest_unaware_planner_info() {
  return planner_info<NestUnaware>(
      "nest-unaware",
      "the same DP with every GPU pair priced as the fastest (Phaze's network-unaware planning, NEST's baseline)",
      nest_schema());
}

}  // namespace placesim
