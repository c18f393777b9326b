#include "sim/engines/estimate.h"

#include "sim/collectives/algorithms.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace placesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace


DeviceId nest_plan_gpu(const ParallelPlan& plan, int d, int p, int r) {
  const int index = (d * plan.pp + p) * plan.tp + r;
  return plan.gpus.empty() ? index : plan.gpus[index];
}

std::vector<DeviceId> nest_replica_group(const ParallelPlan& plan, int p, int r, int step) {
  std::vector<DeviceId> group;
  for (int d = 0; d < plan.dp; d += step) group.push_back(nest_plan_gpu(plan, d, p, r));
  return group;
}

std::vector<DeviceId> nest_expert_group(const ParallelPlan& plan, int d, int p) {
  std::vector<DeviceId> group;
  for (int e = 0; e < plan.ep; ++e) group.push_back(nest_plan_gpu(plan, d / plan.ep * plan.ep + e, p, 0));
  return group;
}

double nest_per_rank_bytes(const ParallelPlan& plan, double bytes) {
  return (plan.scatter_gather || plan.sequence_parallel) && plan.tp > 1 ? bytes / plan.tp : bytes;
}

NestNetwork NestNetwork::aware(const Cluster& c) { return {&c, false, 0, 0, nullptr}; }

NestNetwork NestNetwork::unaware(const Cluster& c) {
  NestNetwork n{&c, true, 1, 0, nullptr};
  double best_bw = 0, best_lat = kInf;
  for (DeviceId j = 1; j < c.num_devices(); ++j) {
    const double bw = c.bandwidth(0, j), lat = c.latency(0, j);
    if (bw > best_bw || (bw == best_bw && lat < best_lat)) {
      best_bw = bw;
      best_lat = lat;
    }
  }
  if (best_bw > 0) {
    n.flat_bandwidth = best_bw;
    n.flat_latency = best_lat;
  }
  return n;
}

std::pair<double, double> NestNetwork::link(DeviceId a, DeviceId b) const {
  if (a == b) return {0.0, 0.0};
  return flat ? std::pair{flat_latency, 1.0 / flat_bandwidth} : std::pair{cluster->latency(a, b), 1.0 / cluster->bandwidth(a, b)};
}

double NestNetwork::send(DeviceId a, DeviceId b, double bytes) const {
  if (bytes <= 0 || a == b) return 0;
  const auto [latency, inv_bandwidth] = link(a, b);
  return latency + bytes * inv_bandwidth;
}

double NestNetwork::reduction(std::span<const DeviceId> group, double bytes, CollectiveAlgorithm algorithm,
                              int zero) const {
  if (group.size() < 2 || bytes <= 0) return 0;
  if (memo) {
    auto key = std::make_tuple(std::vector<DeviceId>(group.begin(), group.end()), bytes, algorithm, zero);
    {
      std::lock_guard lock(memo->mutex);
      if (auto it = memo->priced.find(key); it != memo->priced.end()) return it->second;
    }
    NestNetwork priced_afresh = *this;
    priced_afresh.memo = nullptr;
    const double t = priced_afresh.reduction(group, bytes, algorithm, zero);
    std::lock_guard lock(memo->mutex);
    memo->priced.emplace(std::move(key), t);
    return t;
  }
  if (zero > 0) algorithm = zero_collective_algorithm(algorithm);  // what the plan compiles into
  double all_reduce = 0;
  if (flat) {
    // One bandwidth for every pair, but the same groups: halving-doubling needs a power of two.
    if (collective_algorithm(algorithm).power_of_two && !power_of_two(static_cast<int>(group.size()))) return kInf;
    all_reduce = uniform_collective_time(CollectiveOp::AllReduce, algorithm, static_cast<int>(group.size()), bytes,
                                         flat_latency, flat_bandwidth);
  } else {
    try {
      all_reduce = collective_closed_form({CollectiveOp::AllReduce, algorithm, {group.begin(), group.end()}, bytes}, *cluster);
    } catch (const std::invalid_argument&) {
      // An algorithm the group cannot run (collective_problem: hierarchical over servers holding
      // different numbers of the group's GPUs, halving-doubling off a power of two): no such plan.
      return kInf;
    }
  }
  // ZeRO 1 and 2: a reduce-scatter and an all-gather, an all-reduce's traffic; ZeRO 3 gathers the
  // parameters once more.
  return zero >= 3 ? 1.5 * all_reduce : all_reduce;
}

AffineTime NestNetwork::reduction_affine(std::span<const DeviceId> group, CollectiveAlgorithm algorithm, int zero) const {
  if (group.size() < 2) return {};
  if (zero > 0) algorithm = zero_collective_algorithm(algorithm);
  AffineTime all_reduce;
  if (flat) {
    if (collective_algorithm(algorithm).power_of_two && !power_of_two(static_cast<int>(group.size()))) return {kInf, 0};
    all_reduce = affine_in_bytes([&](double bytes) {
      return uniform_collective_time(CollectiveOp::AllReduce, algorithm, static_cast<int>(group.size()), bytes,
                                     flat_latency, flat_bandwidth);
    });
  } else {
    try {
      all_reduce = collective_affine_form({CollectiveOp::AllReduce, algorithm, {group.begin(), group.end()}, 0}, *cluster);
    } catch (const std::invalid_argument&) {
      return {kInf, 0};  // as reduction(): no such plan
    }
  }
  const double factor = zero >= 3 ? 1.5 : 1.0;  // as reduction()
  return {all_reduce.intercept * factor, all_reduce.slope * factor};
}

AffineTime NestNetwork::all_to_all_affine(std::span<const DeviceId> group) const {
  if (group.size() < 2) return {};
  if (flat) return affine_in_bytes([&](double bytes) { return all_to_all(group, bytes); });
  try {
    return collective_affine_form({CollectiveOp::AllToAll, CollectiveAlgorithm::Direct, {group.begin(), group.end()}, 0},
                                  *cluster);
  } catch (const std::invalid_argument&) {
    return {kInf, 0};
  }
}

double NestNetwork::all_to_all(std::span<const DeviceId> group, double bytes) const {
  if (group.size() < 2 || bytes <= 0) return 0;
  if (flat)
    return uniform_collective_time(CollectiveOp::AllToAll, CollectiveAlgorithm::Direct, static_cast<int>(group.size()), bytes,
                                   flat_latency, flat_bandwidth);
  try {
    return collective_closed_form({CollectiveOp::AllToAll, CollectiveAlgorithm::Direct, {group.begin(), group.end()}, bytes},
                                  *cluster);
  } catch (const std::invalid_argument&) {
    return kInf;  // a group that cannot run it (GPUs that cannot reach each other): no such plan
  }
}

NestEstimate nest_estimate(const LayerModel& model, const ParallelPlan& plan, const NestNetwork& network,
                           NestReduction reduction) {
  // Stages: pp x virtual_stages (interleaved 1F1B: rank p holds stages p, p + pp, ...).
  const int L = static_cast<int>(model.layers.size()), v = plan.virtual_stages, S = plan.pp * v;
  const std::vector<int> starts = plan.stage_starts.empty() ? balanced_stages(model, S) : plan.stage_starts;
  auto end_of = [&](int p) { return p + 1 < S ? starts[p + 1] : L; };
  auto gpu = [&](int d, int s, int r) { return nest_plan_gpu(plan, d, s % plan.pp, r); };
  NestEstimate e;
  e.micro_batches_per_replica = plan.micro_batches;
  std::vector<double> rank_load(static_cast<std::size_t>(plan.pp) * plan.dp, 0.0);  // per (replica, rank)
  // The layers' times in the plan's units (NEST's: its per-layer milliseconds read as seconds).
  const double scale = plan.assumptions.compute_units == ComputeUnits::Nest ? model.nest_time_scale : 1.0;
  for (int p = 0; p < S; ++p) {
    // Where the stage is priced as standing: its own place, or, as NEST prices its manual
    // baseline, the mirror one (ParallelPlan::nest_baseline_pricing).
    const int as_stage = plan.nest_baseline_pricing ? S - 1 - p : p;
    const bool recomputes = stage_recomputes(model, plan, as_stage, S);
    double compute = 0;
    for (int l = starts[p]; l < end_of(p); ++l)
      compute += (model.layers[l].forward_s + model.layers[l].backward_s * (recomputes ? 2 : 1)) * scale;
    // The slowest copy of the stage sets the pace: every replica's links are priced.
    for (int d = 0; d < plan.dp; ++d) {
      double load = compute;
      std::vector<DeviceId> tp_group;
      for (int r = 0; r < plan.tp; ++r) tp_group.push_back(gpu(d, p, r));
      for (int l = starts[p]; l < end_of(p); ++l) {
        const Layer& layer = model.layers[l];
        const double forward = network.reduction(tp_group, layer.tp_allreduce_forward_bytes, CollectiveAlgorithm::Ring, 0),
                     backward = network.reduction(tp_group, layer.tp_allreduce_backward_bytes, CollectiveAlgorithm::Ring, 0);
        // tp_comm_overlap: beside the layer's compute, as the engines compile it (the stage's edge
        // layers too, here).
        load += plan.tp_comm_overlap ? std::max(0.0, forward - layer.forward_s * scale) + std::max(0.0, backward - layer.backward_s * scale)
                                     : forward + backward;
      }
      // Context parallelism: each attention layer's key-value ring (a ring all-gather of cp blocks,
      // half a ring all-reduce's time; the backward's with the gradients, twice the bytes) runs
      // beside the layer's compute, as the engines compile it: only what outlasts the compute counts.
      if (plan.cp > 1) {
        std::vector<DeviceId> cp_group;
        for (int c = 0; c < plan.cp; ++c) cp_group.push_back(gpu(d / plan.cp * plan.cp + c, p, 0));
        for (int l = starts[p]; l < end_of(p); ++l) {
          const Layer& layer = model.layers[l];
          const double blocks = plan.cp * layer.context_exchange_bytes;
          load += std::max(0.0, network.reduction(cp_group, blocks, CollectiveAlgorithm::Ring, 0) / 2 - layer.forward_s * scale) +
                  std::max(0.0, network.reduction(cp_group, 2 * blocks, CollectiveAlgorithm::Ring, 0) / 2 - layer.backward_s * scale);
        }
      }
      // Experts the plan spreads (a workload built for ep 1 has the all-to-alls apart, not in its
      // times): each expert layer's dispatch and combine in both passes, among the replicas of
      // this one's expert group (on tensor rank 0, as the sends).
      if (plan_spreads_experts(model, plan)) {
        const std::vector<DeviceId> ep_group = nest_expert_group(plan, d, p % plan.pp);
        for (int l = starts[p]; l < end_of(p); ++l)
          load += 4 * network.all_to_all(ep_group, model.layers[l].expert_alltoall_bytes);
      }
      if (p + 1 < S) load += network.send(gpu(d, p, 0), gpu(d, p + 1, 0), nest_per_rank_bytes(plan, model.bytes_into(end_of(p))));
      if (p > 0) load += network.send(gpu(d, p, 0), gpu(d, p - 1, 0), nest_per_rank_bytes(plan, model.bytes_into(starts[p])));
      rank_load[static_cast<std::size_t>(d) * plan.pp + p % plan.pp] += load;
    }
    if (v > 1) continue;  // the memory of interleaved ranks: below
    // Activations held at the peak: GPipe keeps every micro-batch's, 1F1B at most S - p.
    const int in_flight = plan.schedule == PipelineSchedule::GPipe ? plan.micro_batches : std::min(plan.micro_batches, S - as_stage);
    const GpuMemory memory = stage_memory(model, starts[p], end_of(p), plan, in_flight);
    for (int d = 0; d < plan.dp; ++d)
      for (int r = 0; r < plan.tp; ++r) {
        const double held = network.cluster->device(nest_plan_gpu(plan, d, p, r)).memory_bytes;
        if (memory.total() > held) e.fits = false;
        e.memory_ratio = std::max(e.memory_ratio, memory.total() / held);
      }
  }
  for (double load : rank_load) e.max_stage_load = std::max(e.max_stage_load, load);
  if (v > 1) {
    // Interleaved: each rank's peak as the plan's layout works it out over its schedule (a plan
    // that cannot be laid out does not fit, as an estimate never throws).
    ParallelPlan laid = plan;
    laid.stage_starts = starts;
    if (!plan_problem(model, laid, *network.cluster).empty()) {
      e.fits = false;
      e.memory_ratio = std::numeric_limits<double>::infinity();
    } else {
      const CompiledPlan layout = plan_layout(model, laid, *network.cluster);
      for (std::size_t i = 0; i < layout.memory.size(); ++i) {
        const double held = network.cluster->device(layout.gpus[i]).memory_bytes;
        if (layout.memory[i].total() > held) e.fits = false;
        e.memory_ratio = std::max(e.memory_ratio, layout.memory[i].total() / held);
      }
    }
  }
  // NEST charges the first stage's reduction; the slowest of its tensor ranks' groups. Experts
  // the plan spreads are reduced apart, 1/ep of them among the dp/ep replicas holding the same
  // ones, after the rest (both queue on the same links).
  // Per layer (NestReduction::PerLayer), a collective for each layer's dense and spread expert
  // gradients that has any.
  const bool spread = plan_spreads_experts(model, plan);
  std::vector<int> first_rank_layers;  // the first rank's stages' layers, bottom up
  for (int p = 0; p < S; p += plan.pp)
    for (int l = starts[p]; l < end_of(p); ++l) first_rank_layers.push_back(l);
  std::vector<std::pair<double, double>> buckets;  // (dense, experts) bytes
  for (int l : first_rank_layers) {
    const double experts = spread ? model.layers[l].expert_parameter_bytes : 0.0;
    if (reduction == NestReduction::PerLayer || buckets.empty()) buckets.emplace_back(0.0, 0.0);
    buckets.back().first += model.layers[l].parameter_bytes - experts;  // summed per layer, as the DP's prefix sums
    buckets.back().second += experts;
  }
  for (int r = 0; r < plan.tp; ++r) {
    double rank = 0;
    if (reduction == NestReduction::Overlapped) {
      // The last micro-batch's backward runs the rank's layers from the top down; each layer's
      // collective starts once its backward is done and the one before it has ended. ZeRO:
      // the reduce-scatter (half an all-reduce's time) overlaps so, the all-gathers follow.
      const double zero3 = plan.zero >= 3 ? 1.5 : 1.0, overlapped = plan.zero > 0 ? 0.5 : 1.0;
      double backward = 0, done = 0, after = 0;
      for (auto it = first_rank_layers.rbegin(); it != first_rank_layers.rend(); ++it) {
        const Layer& layer = model.layers[*it];
        const double experts = spread ? layer.expert_parameter_bytes : 0.0;
        const double all_reduce =
            (network.reduction(nest_replica_group(plan, 0, r, 1), layer.parameter_bytes - experts, plan.gradient_algorithm, plan.zero) +
             network.reduction(nest_replica_group(plan, 0, r, plan.ep), experts / plan.ep, plan.gradient_algorithm, plan.zero)) /
            zero3;
        backward += layer.backward_s * scale;
        done = (plan.overlap_grad_reduce ? std::max(done, backward) : done) + overlapped * all_reduce;
        // (0 x an impossible group's infinity: none); ZeRO 1 and 2's gathers overlapping the
        // next forward (overlap_param_gather) are not charged, as ZeRO 3's prefetches are not.
        if (plan.zero > 0 && !(plan.overlap_param_gather && plan.zero < 3)) after += (1 - overlapped) * all_reduce;
      }
      rank = (plan.overlap_grad_reduce ? done - backward : done) + after;
    } else {
      for (const auto& [dense, experts] : buckets)
        rank += network.reduction(nest_replica_group(plan, 0, r, 1), dense, plan.gradient_algorithm, plan.zero) +
                network.reduction(nest_replica_group(plan, 0, r, plan.ep), experts / plan.ep, plan.gradient_algorithm, plan.zero);
    }
    e.gradient_reduction = std::max(e.gradient_reduction, rank);
  }
  // A rank's v stages each take 1/v of its load: interleaving shrinks the bubble v times.
  e.time_per_batch = e.max_stage_load * (plan.micro_batches + static_cast<double>(plan.pp - 1) / v) + e.gradient_reduction;
  return e;
}

}  // namespace placesim

namespace placesim {

namespace {

class EstimateEngine final : public Engine {
 public:
  std::string problem(const PlacedGraph& g) const override {
    if (!g.plan) return "NEST's estimate prices compiled plans (a scenario's workload, `placesim plan`), not placed graphs";
    if (g.plan->plan.mixed_widths()) return "NEST's estimate prices one tensor-parallel width, this plan's stages have several";
    return "";
  }
  EngineRun run(const PlacedGraph& g, const Cluster& c, const EngineRequest&) const override {
    if (const std::string why = problem(g); !why.empty()) throw std::invalid_argument(why);
    const auto t0 = std::chrono::steady_clock::now();
    EngineRun out;
    out.latency = nest_estimate(*g.plan->model, g.plan->plan, NestNetwork::aware(c)).time_per_batch;
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
};

}  // namespace

EngineInfo estimate_engine() {
  EngineInfo info;
  info.name = std::string(kEstimate);
  info.description =
      "NEST's analytical estimate of a compiled plan: the slowest pipeline rank's load x (micro-batches + bubble) + the "
      "first stage's gradient reduction, on the pairwise view; schedules nothing";
  info.make = [] { return std::make_unique<EstimateEngine>(); };
  return info;
}

}  // namespace placesim
