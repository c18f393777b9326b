#include "sim/plans/parallel_plan.h"
#include "sim/plans/plan_internals.h"

#include "sim/collectives/algorithms.h"
#include "sim/collectives/nccl.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <unordered_map>
#include <set>
#include <tuple>
#include <utility>
#include <stdexcept>

#include "sim/core/units.h"

namespace placesim {

long ParallelPlan::gpus_per_replica() const {
  if (stage_tp.empty()) return static_cast<long>(tp) * pp;
  long sum = 0;
  for (int w : stage_tp) sum += w;
  return sum;
}

std::vector<DeviceId> gpus_in_order(int tp, int pp, int dp, GpuOrder order) {
  return gpus_in_order(std::vector<int>(static_cast<std::size_t>(std::max(pp, 0)), tp), dp, order);
}

std::vector<DeviceId> gpus_in_order(int tp, int pp, int dp, GpuOrder order, int cp) {
  if (cp <= 1 || order == GpuOrder::TpDpPp) return gpus_in_order(tp, pp, dp, order);  // tp-dp-pp has them there already
  std::vector<DeviceId> gpus(static_cast<std::size_t>(tp) * pp * dp);
  for (int d = 0; d < dp; ++d)
    for (int p = 0; p < pp; ++p)
      for (int t = 0; t < tp; ++t)
        gpus[static_cast<std::size_t>((d * pp + p) * tp + t)] = static_cast<DeviceId>(((d / cp * pp + p) * cp + d % cp) * tp + t);
  return gpus;
}

std::vector<DeviceId> gpus_in_order(std::span<const int> widths, int dp, GpuOrder order) {
  std::vector<DeviceId> gpus;
  if (order == GpuOrder::TpPpDp) return gpus;
  long per_replica = 0;
  for (int w : widths) per_replica += w;
  gpus.resize(static_cast<std::size_t>(per_replica) * dp);
  long offset = 0;  // of rank p in a replica's block
  for (std::size_t p = 0; p < widths.size(); ++p) {
    for (int d = 0; d < dp; ++d)
      for (int t = 0; t < widths[p]; ++t)
        gpus[static_cast<std::size_t>(d * per_replica + offset + t)] = static_cast<DeviceId>(offset * dp + d * widths[p] + t);
    offset += widths[p];
  }
  return gpus;
}

using plans::checked_models;
using plans::rank_compile_plan;
using plans::rank_plan_layout;
using plans::RankOffsets;

std::size_t plan_gpu_index(const ParallelPlan& plan, int d, int p, int t) { return RankOffsets(plan).index(d, p, t); }

namespace plans {

std::vector<int> balanced_stages_of(std::span<const LayerModel* const> models) {
  const int pp = static_cast<int>(models.size());
  const int L = pp > 0 ? static_cast<int>(models.front()->layers.size()) : 0;
  if (pp < 1) throw std::invalid_argument(fmt::format("{} pipeline stages: expected at least 1", pp));
  if (pp > L)
    throw std::invalid_argument(fmt::format("{} pipeline stages for {} layers", pp, L));
  // prefix[s][l]: layers [0, l)'s forward plus backward time at stage s's width.
  std::vector<std::vector<double>> prefix(pp, std::vector<double>(L + 1, 0.0));
  for (int s = 0; s < pp; ++s) {
    if (s > 0 && models[s] == models[s - 1]) {
      prefix[s] = prefix[s - 1];
      continue;
    }
    for (int l = 0; l < L; ++l) prefix[s][l + 1] = prefix[s][l] + models[s]->layers[l].forward_s + models[s]->layers[l].backward_s;
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[s][l]: the least largest stage time splitting layers [0, l) into s stages; cut[s][l] the
  // start of the last of them.
  std::vector<std::vector<double>> best(pp + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<int>> cut(pp + 1, std::vector<int>(L + 1, 0));
  best[0][0] = 0;
  for (int s = 1; s <= pp; ++s)
    for (int l = s; l <= L; ++l)
      for (int k = s - 1; k < l; ++k) {
        const double v = std::max(best[s - 1][k], prefix[s - 1][l] - prefix[s - 1][k]);
        if (v < best[s][l]) {
          best[s][l] = v;
          cut[s][l] = k;
        }
      }
  std::vector<int> starts(pp);
  for (int s = pp, l = L; s >= 1; --s) {
    starts[s - 1] = cut[s][l];
    l = cut[s][l];
  }
  // Times whose sum is not finite leave the table without a split: an even one instead.
  for (int s = 1; s < pp; ++s)
    if (starts[s] <= starts[s - 1]) {
      for (int k = 0; k < pp; ++k) starts[k] = static_cast<int>(static_cast<long>(k) * L / pp);
      break;
    }
  return starts;
}

}  // namespace plans

std::vector<int> balanced_stages(const LayerModel& model, int pp) {
  return plans::balanced_stages_of(std::vector<const LayerModel*>(static_cast<std::size_t>(std::max(pp, 0)), &model));
}

CollectiveAlgorithm zero_collective_algorithm(CollectiveAlgorithm gradient_algorithm) {
  const bool has_both = collective_supports(CollectiveOp::ReduceScatter, gradient_algorithm) &&
                        collective_supports(CollectiveOp::AllGather, gradient_algorithm);
  return has_both ? gradient_algorithm : CollectiveAlgorithm::Ring;
}

namespace {

// The plan (as used: its stage starts and GPUs) and the model at its width on the compiled graph,
// for the estimate engine; a plan of several widths keeps no model (NEST's estimate prices one).
CompiledPlan with_origin(CompiledPlan compiled, const LayerModel* model, const ParallelPlan& plan) {
  auto origin = std::make_shared<PlanOrigin>();
  if (model) origin->model = std::make_shared<const LayerModel>(*model);
  origin->plan = plan;
  origin->plan.stage_starts = compiled.stage_starts;
  origin->plan.gpus = compiled.gpus;
  compiled.graph.plan = std::move(origin);
  return compiled;
}

const LayerModel* model_at_width(const LayerWorkload& workload, const ParallelPlan& plan) {
  if (plan.mixed_widths()) return nullptr;
  const auto it = workload.by_tensor_parallel.find(plan.tp);
  return it == workload.by_tensor_parallel.end() ? nullptr : &it->second;
}

}  // namespace

CompiledPlan plan_layout(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster) {
  return with_origin(rank_plan_layout(checked_models(model, plan, cluster), plan, cluster), &model, plan);
}
CompiledPlan plan_layout(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster) {
  return with_origin(rank_plan_layout(checked_models(workload, plan, cluster), plan, cluster), model_at_width(workload, plan),
                     plan);
}
CompiledPlan compile_plan(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail) {
  return with_origin(rank_compile_plan(checked_models(model, plan, cluster), plan, cluster, detail), &model, plan);
}
CompiledPlan compile_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail) {
  return with_origin(rank_compile_plan(checked_models(workload, plan, cluster), plan, cluster, detail),
                     model_at_width(workload, plan), plan);
}
CompiledPlan compile_plan(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                          int replicas) {
  return with_origin(rank_compile_plan(checked_models(model, plan, cluster), plan, cluster, detail, replicas), &model, plan);
}
CompiledPlan compile_plan(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                          CollectiveDetail detail, int replicas) {
  return with_origin(rank_compile_plan(checked_models(workload, plan, cluster), plan, cluster, detail, replicas),
                     model_at_width(workload, plan), plan);
}

}  // namespace placesim
