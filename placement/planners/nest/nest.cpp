#include "placement/planners/nest/nest.h"

#include "sim/collectives/algorithms.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
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
                       CollectiveAlgorithm gradient_algorithm, GpuOrder order, const PlanAssumptions& assumptions) {
  ParallelPlan plan;
  plan.assumptions = assumptions;
  plan.blocking_sends = !assumptions.overlap_p2p_comm;
  plan.overlap_grad_reduce = assumptions.overlap_grad_reduce;
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

std::string nest_assumptions_problem(const LayerWorkload& workload, const NestSpace& space) {
  ParallelPlan plan;
  plan.assumptions = space;
  for (const auto& [t, model] : workload.by_tensor_parallel)
    if (t <= space.max_tp)
      if (std::string why = assumptions_problem(model, plan); !why.empty()) return why;
  return "";
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
  // NEST's memory model with recomputation: the bytes entering each stage [i, j) of the model,
  // at i * (L + 1) + j (entering_table); null when not needed.
  const std::vector<double>* entering = nullptr;
};

// LayerModel::bytes_entering of every [i, j), at i * (L + 1) + j.
std::vector<double> entering_table(const LayerModel& model) {
  const int L = static_cast<int>(model.layers.size());
  std::vector<double> table(static_cast<std::size_t>(L + 1) * (L + 1), 0.0);
  for (int i = 1; i < L; ++i) {
    std::vector<double> into(L, 0.0);  // bytes into each layer from layers below i
    if (model.edges.empty()) {
      into[i] = model.layers[i - 1].output_bytes;
    } else {
      for (const LayerEdge& e : model.edges)
        if (e.src < i && e.dst >= i) into[e.dst] += e.bytes;
    }
    for (int j = i + 1; j <= L; ++j) table[static_cast<std::size_t>(i) * (L + 1) + j] = table[static_cast<std::size_t>(i) * (L + 1) + j - 1] + into[j - 1];
  }
  return table;
}

ParallelPlan case_plan(const Case& c, int total_micro_batches, CollectiveAlgorithm algorithm, const PlanAssumptions& assumptions) {
  if (c.spread_ep == 1)
    return nest_plan(c.tp, c.replicas, c.stages, c.zero, c.model->expert_parallel, total_micro_batches, algorithm, c.order,
                     assumptions);
  ParallelPlan plan = nest_plan(c.tp, c.replicas, c.stages, c.zero, 1, total_micro_batches, algorithm, c.order, assumptions);
  plan.ep = c.spread_ep;
  return plan;
}

struct CaseResult {
  double time = kInf;
  std::vector<int> starts;
};

// How a copy of a stage is priced on its GPUs: the intercept and slope of its tensor-parallel
// all-reduces (a ring's time is affine in its bytes) and all-to-alls, and the latency and inverse
// bandwidth of its sends to the next stage and back. The slowest copy sets the pace; the copies'
// distinct prices are few (a fabric has few levels), and one that is no cheaper in every term
// than another never decides the maximum.
struct StagePrice {
  double tp_fixed = 0, tp_slope = 0, a2a_fixed = 0, a2a_slope = 0, next_lat = 0, next_inv = 0, prev_lat = 0, prev_inv = 0;
  bool operator==(const StagePrice&) const = default;
  bool dominated_by(const StagePrice& o) const {
    return tp_fixed <= o.tp_fixed && tp_slope <= o.tp_slope && a2a_fixed <= o.a2a_fixed && a2a_slope <= o.a2a_slope &&
           next_lat <= o.next_lat && next_inv <= o.next_inv && prev_lat <= o.prev_lat && prev_inv <= o.prev_inv;
  }
};

// The DP of one case: stages contiguous, built from the last to the first. One method per pass:
// prefix sums over the layers, the stages' prices and memory, the first stage's gradient
// reduction, then the DP.
class CaseSolver {
 public:
  CaseSolver(const Case& c, int total_micro_batches, const NestSpace& space, const NestNetwork& network)
      : c_(c),
        model_(*c.model),
        network_(network),
        per_(space.reduction),
        algorithm_(space.gradient_algorithm),
        plan_(case_plan(c, total_micro_batches, space.gradient_algorithm, space)),
        L_(static_cast<int>(model_.layers.size())),
        S_(c.stages),
        spreads_(plan_spreads_experts(model_, plan_)),
        scale_(plan_.assumptions.compute_units == ComputeUnits::Nest ? model_.nest_time_scale : 1.0) {}

  CaseResult solve() {
    prefix_sums();
    stage_prices();
    if (!first_stage_reductions()) return {};
    return run_dp();
  }

 private:
  // A collective's time is affine in its bytes: its intercept and slope.
  std::pair<double, double> affine(std::span<const DeviceId> group, CollectiveAlgorithm algorithm, int zero) const {
    const AffineTime f = network_.reduction_affine(group, algorithm, zero);
    return {f.intercept, f.slope};
  }

  // Prefix sums; `parameters_` are the dense ones when the plan spreads the experts, `experts_`
  // the GPU's 1/ep share of them.
  void prefix_sums() {
    const int L = L_, dp = plan_.dp, ep = plan_.ep;
    for (auto* v : {&compute_, &backward_, &parameters_, &experts_, &stash_, &outputs_, &into_, &tp_count_, &tp_bytes_,
                    &a2a_count_, &a2a_bytes_, &dense_layers_, &expert_layers_})
      v->assign(L + 1, 0);
    buffer_.assign(L, 0);
    for (int l = 0; l < L; ++l) {
      const Layer& layer = model_.layers[l];
      tp_count_[l + 1] = tp_count_[l] + (layer.tp_allreduce_forward_bytes > 0) + (layer.tp_allreduce_backward_bytes > 0);
      tp_bytes_[l + 1] = tp_bytes_[l] + layer.tp_allreduce_forward_bytes + layer.tp_allreduce_backward_bytes;
      const double alltoall = spreads_ ? layer.expert_alltoall_bytes : 0.0;
      a2a_count_[l + 1] = a2a_count_[l] + (alltoall > 0 ? 4 : 0);  // dispatch and combine, both passes
      a2a_bytes_[l + 1] = a2a_bytes_[l] + (alltoall > 0 ? 4 * alltoall : 0.0);
      compute_[l + 1] = compute_[l] + (layer.forward_s + layer.backward_s) * scale_;
      backward_[l + 1] = backward_[l] + layer.backward_s * scale_;
      const double expert = spreads_ ? layer.expert_parameter_bytes : 0.0;
      parameters_[l + 1] = parameters_[l] + layer.parameter_bytes - expert;
      experts_[l + 1] = experts_[l] + expert / ep;
      dense_layers_[l + 1] = dense_layers_[l] + (layer.parameter_bytes - expert > 0);
      expert_layers_[l + 1] = expert_layers_[l] + (expert > 0);
      stash_[l + 1] = stash_[l] + layer.stashed_bytes;
      outputs_[l + 1] = outputs_[l] + layer.activation_bytes;
      buffer_[l] = (layer.parameter_bytes - expert) * (1 - 1.0 / dp) + expert / ep * (1 - static_cast<double>(ep) / dp);
    }
    for (int j = 0; j <= L; ++j) into_[j] = nest_per_rank_bytes(plan_, model_.bytes_into(j));
  }

  // Per stage its undominated prices (StagePrice) and its memory, the least of its GPUs'.
  void stage_prices() {
    const int S = S_, dp = plan_.dp, t = c_.tp;
    prices_.assign(S, {});
    for (int p = 0; p < S; ++p) {
      std::vector<StagePrice>& mine = prices_[p];
      for (int d = 0; d < dp; ++d) {
        StagePrice price;
        if (tp_count_[L_] > 0) {
          std::vector<DeviceId> tp_group;
          for (int r = 0; r < t; ++r) tp_group.push_back(nest_plan_gpu(plan_, d, p, r));
          std::tie(price.tp_fixed, price.tp_slope) = affine(tp_group, CollectiveAlgorithm::Ring, 0);
        }
        if (a2a_count_[L_] > 0) {
          const std::vector<DeviceId> ep_group = nest_expert_group(plan_, d, p);
          const AffineTime f = network_.all_to_all_affine(ep_group);
          std::tie(price.a2a_fixed, price.a2a_slope) = std::pair{f.intercept, f.slope};
        }
        if (p + 1 < S)
          std::tie(price.next_lat, price.next_inv) = network_.link(nest_plan_gpu(plan_, d, p, 0), nest_plan_gpu(plan_, d, p + 1, 0));
        if (p > 0)
          std::tie(price.prev_lat, price.prev_inv) = network_.link(nest_plan_gpu(plan_, d, p, 0), nest_plan_gpu(plan_, d, p - 1, 0));
        if (std::any_of(mine.begin(), mine.end(), [&](const StagePrice& o) { return price.dominated_by(o); })) continue;
        std::erase_if(mine, [&](const StagePrice& o) { return o.dominated_by(price); });
        mine.push_back(price);
      }
    }
    capacity_.assign(S, kInf);
    for (int p = 0; p < S; ++p)
      for (int d = 0; d < dp; ++d)
        for (int r = 0; r < t; ++r)
          capacity_[p] = std::min(capacity_[p], network_.cluster->device(nest_plan_gpu(plan_, d, p, r)).memory_bytes);
  }

  // `count` collectives of `bytes` in all: per layer, `count` intercepts; as one (stage), one.
  double part(const std::pair<double, double>& f, double count, double bytes) const {
    if (!(bytes > 0)) return 0.0;
    return f.first * (per_ != NestReduction::Stage ? count : 1.0) + f.second * bytes;
  }

  // The first stage's gradient reduction, affine in its bytes, per tensor rank's group: the dense
  // parameters among every replica, spread experts among those holding the same ones. False when a
  // group has no such collective (an infinite price).
  bool first_stage_reductions() {
    reductions_.clear();  // solve() may run again on the same solver
    exposed_.clear();
    for (int r = 0; r < c_.tp; ++r) {
      reductions_.push_back({affine(nest_replica_group(plan_, 0, r, 1), algorithm_, c_.zero),
                             spreads_ ? affine(nest_replica_group(plan_, 0, r, plan_.ep), algorithm_, c_.zero)
                                      : std::pair{0.0, 0.0}});
      if (reductions_.back().dense.first == kInf || reductions_.back().experts.first == kInf) return false;
    }
    if (per_ != NestReduction::Overlapped) return true;
    // Overlapped: per rank and first stage [0, j), what outlasts the backward, max over l < j of
    // (the collectives of layers 0..l) - (the backward of layers below l), plus ZeRO's all-gathers
    // (nest_estimate folds the same queue layer by layer).
    const double zero3 = c_.zero >= 3 ? 1.5 : 1.0, overlapped = c_.zero > 0 ? 0.5 : 1.0;
    for (const Reduction& r : reductions_) {
      std::vector<double> mine(L_ + 1, 0.0);
      double collectives = 0, below = 0, after = 0, worst = -kInf;
      for (int l = 0; l < L_; ++l) {
        const double all_reduce = (part(r.dense, 1, parameters_[l + 1] - parameters_[l]) +
                                   part(r.experts, 1, experts_[l + 1] - experts_[l])) / zero3;
        collectives += overlapped * all_reduce;
        if (c_.zero > 0) after += (1 - overlapped) * all_reduce;
        worst = std::max(worst, collectives - below);
        below += model_.layers[l].backward_s * scale_;
        mine[l + 1] = worst + after;
      }
      exposed_.push_back(std::move(mine));
    }
    return true;
  }

  // The first stage [0, j)'s reduction.
  double reduction(int j) const {
    double worst = 0;
    for (std::size_t k = 0; k < reductions_.size(); ++k) {
      const Reduction& r = reductions_[k];
      worst = std::max(worst, per_ == NestReduction::Overlapped ? exposed_[k][j]
                                                                 : part(r.dense, dense_layers_[j], parameters_[j]) +
                                                                       part(r.experts, expert_layers_[j], experts_[j]));
    }
    return worst;
  }

  // Memory of a stage [i, j): stage_memory from prefix sums (a workload built for its expert
  // width has its experts per GPU already: nothing to spread).
  double memory(int i, int j, double largest_buffer, int in_flight) const {
    const double entering = c_.entering ? (*c_.entering)[static_cast<std::size_t>(i) * (L_ + 1) + j] : 0.0;
    const StageActivations held = stage_activations(stash_[j] - stash_[i], outputs_[j] - outputs_[i], entering,
                                                    model_.nest_recomputation, plan_.assumptions.memory_model);
    return gpu_memory(parameters_[j] - parameters_[i], experts_[j] - experts_[i], held.stash, largest_buffer, plan_,
                      model_.main_gradients, in_flight, held.workspace)
        .total();
  }

  // The compute of stage p over layers [i, j): forward and backward, and the recomputed forward
  // where the plan charges one (at the backward's time, as NEST prices it).
  double compute(int p, int i, int j) const {
    return compute_[j] - compute_[i] + (stage_recomputes(model_, plan_, p, S_) ? backward_[j] - backward_[i] : 0.0);
  }

  // The slowest copy's communication of stage p over layers [i, j).
  double stage_communication(int p, int i, int j) const {
    auto send_cost = [](double bytes, double lat, double inv) { return bytes > 0 ? lat + bytes * inv : 0.0; };
    double load = 0;
    for (const StagePrice& price : prices_[p]) {
      double mine = price.tp_fixed * (tp_count_[j] - tp_count_[i]) + price.tp_slope * (tp_bytes_[j] - tp_bytes_[i]) +
                    price.a2a_fixed * (a2a_count_[j] - a2a_count_[i]) + price.a2a_slope * (a2a_bytes_[j] - a2a_bytes_[i]);
      if (p + 1 < S_) mine += send_cost(into_[j], price.next_lat, price.next_inv);
      if (p > 0) mine += send_cost(into_[i], price.prev_lat, price.prev_inv);
      load = std::max(load, mine);
    }
    return load;
  }

  // f[s][i]: the least max stage load of layers [i, L) on the last s stages; the first stage adds
  // the pipeline's fill and drain and the gradient reduction.
  CaseResult run_dp() const {
    const int L = L_, S = S_, m = plan_.micro_batches, dp = plan_.dp;
    CaseResult result;
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
          largest = std::max(largest, buffer_[j - 1]);
          if (memory(i, j, largest, in_flight) > capacity_[p]) break;  // grows with j
          const double rest = f[s - 1][j];
          if (rest == kInf) continue;
          const double load = stage_communication(p, i, j) + compute(p, i, j);
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

  struct Reduction {
    std::pair<double, double> dense, experts;
  };

  const Case& c_;
  const LayerModel& model_;
  const NestNetwork& network_;
  NestReduction per_;
  CollectiveAlgorithm algorithm_;
  ParallelPlan plan_;
  int L_, S_;
  bool spreads_;
  double scale_;  // the layers' times in the plan's units (ComputeUnits)
  // Prefix sums: forward plus backward time, backward time, parameters, experts, placesim's
  // stash, every operator output (NEST's memory model), and the bytes into each first layer.
  std::vector<double> compute_, backward_, parameters_, experts_, stash_, outputs_, into_;
  // Tensor-parallel all-reduces (when not in the layers' times) and the all-to-alls of spread
  // experts: how many, and their bytes.
  std::vector<double> tp_count_, tp_bytes_, a2a_count_, a2a_bytes_;
  std::vector<double> buffer_;  // ZeRO 3's gather buffer for each layer
  // Layers with dense and with spread expert gradients: the collectives NestReduction::PerLayer counts.
  std::vector<double> dense_layers_, expert_layers_;
  std::vector<std::vector<StagePrice>> prices_;
  std::vector<double> capacity_;
  std::vector<Reduction> reductions_;
  std::vector<std::vector<double>> exposed_;
};

CaseResult solve_case(const Case& c, int total_micro_batches, const NestSpace& space, const NestNetwork& network) {
  return CaseSolver(c, total_micro_batches, space, network).solve();
}

}  // namespace

NestSearch nest_search(const LayerWorkload& workload, const Cluster& cluster, const NestConfig& config, bool aware,
                       const Deadline& deadline) {
  if (const std::string why = nest_assumptions_problem(workload, config); !why.empty())
    throw std::invalid_argument(fmt::format("{}: {}", aware ? "nest" : "nest-unaware", why));
  const NestNetwork network = aware ? NestNetwork::aware(cluster) : NestNetwork::unaware(cluster);
  const int n = cluster.num_devices();
  double memory_per_gpu = kInf;
  for (int d = 0; d < n; ++d) memory_per_gpu = std::min(memory_per_gpu, cluster.device(d).memory_bytes);

  std::vector<GpuOrder> orders;
  if (config.orders != NestOrders::TpPpDp) orders.push_back(GpuOrder::TpDpPp);
  if (config.orders != NestOrders::TpDpPp) orders.push_back(GpuOrder::TpPpDp);
  std::vector<Case> cases;
  std::map<int, std::vector<double>> entering;  // per width, when NEST's memory model needs it
  int expert_parallel = 1;
  for (const auto& [t, model] : workload.by_tensor_parallel) {
    if (t > config.max_tp) continue;
    expert_parallel = model.expert_parallel;
    const std::vector<double>* entering_bytes = nullptr;
    if (config.memory_model == MemoryModel::Nest && model.nest_recomputation)
      entering_bytes = &(entering[t] = entering_table(model));
    const int L = static_cast<int>(model.layers.size()), per_stage = t * model.expert_parallel;
    for (int d = 1; static_cast<long>(per_stage) * d <= n; ++d) {
      const int dp = d * model.expert_parallel;
      if (collective_algorithm(config.gradient_algorithm).power_of_two && !power_of_two(dp)) continue;
      // Expert widths to spread the experts over, out of the dp ranks (a model built for ep 1).
      for (int ep : spread_expert_widths(model, config.max_ep)) {
        if (dp % ep != 0) continue;
        if (ep > 1 && collective_algorithm(config.gradient_algorithm).power_of_two && !power_of_two(dp / ep)) continue;
        for (int z = 0; z <= (config.zero && dp > 1 ? 3 : 0); ++z)
          for (int S = 1; S <= L && static_cast<long>(per_stage) * d * S <= n; ++S)
            for (const GpuOrder order : orders)
              // With one replica or one stage the two orders are one.
              if (order == orders.front() || (dp > 1 && S > 1)) cases.push_back({&model, t, z, d, S, order, ep, entering_bytes});
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
      results[k] = solve_case(cases[k], total, config, network);
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
    widest.assumptions = config;
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
  plan = case_plan(c, total, config.gradient_algorithm, config);
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
