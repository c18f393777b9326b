#include "sim/plans/parallel_plan.h"

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

namespace {

// Where each pipeline rank's tensor ranks start in a replica's block of the plan's GPUs (replica
// d's block starting at d x gpus_per_replica): plan_gpu_index, computed once per plan.
struct RankOffsets {
  explicit RankOffsets(const ParallelPlan& plan) : per_replica(plan.gpus_per_replica()) {
    for (int p = 0, sum = 0; p < plan.pp; sum += plan.width(p), ++p) offset.push_back(sum);
  }
  std::size_t index(int d, int p, int t) const { return static_cast<std::size_t>(d * per_replica + offset[p] + t); }
  long per_replica;
  std::vector<int> offset;
};

}  // namespace

std::size_t plan_gpu_index(const ParallelPlan& plan, int d, int p, int t) { return RankOffsets(plan).index(d, p, t); }

namespace {

// balanced_stages with stage s's layers priced by `models[s]` (its width's times): stages of
// their own widths (ParallelPlan::stage_tp) take the layers their widths can carry.
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

}  // namespace

std::vector<int> balanced_stages(const LayerModel& model, int pp) {
  return balanced_stages_of(std::vector<const LayerModel*>(static_cast<std::size_t>(std::max(pp, 0)), &model));
}

CollectiveAlgorithm zero_collective_algorithm(CollectiveAlgorithm gradient_algorithm) {
  const bool has_both = collective_supports(CollectiveOp::ReduceScatter, gradient_algorithm) &&
                        collective_supports(CollectiveOp::AllGather, gradient_algorithm);
  return has_both ? gradient_algorithm : CollectiveAlgorithm::Ring;
}

namespace {

// The model each pipeline rank runs: the workload at its stage's width.
using RankModels = std::vector<const LayerModel*>;

// Why the plan's counts (widths, stages, micro-batches, ZeRO, interleaving) cannot run the model.
std::string counts_problem(const LayerModel& model, const ParallelPlan& plan) {
  const int L = static_cast<int>(model.layers.size());
  if (plan.tp < 1 || plan.pp < 1 || plan.dp < 1 || plan.micro_batches < 1)
    return fmt::format("tp, pp, dp and micro_batches must be >= 1, got {}, {}, {}, {}", plan.tp, plan.pp, plan.dp,
                       plan.micro_batches);
  if (plan.zero < 0 || plan.zero > 3) return fmt::format("zero must be a ZeRO stage from 0 to 3, got {}", plan.zero);
  if (plan.virtual_stages < 1) return fmt::format("virtual_stages must be >= 1, got {}", plan.virtual_stages);
  const long stages = static_cast<long>(plan.pp) * plan.virtual_stages;
  if (stages > L)
    return plan.virtual_stages == 1
               ? fmt::format("{} pipeline stages but {} has {} layers", plan.pp, model.name, L)
               : fmt::format("pp x virtual_stages = {} stages but {} has {} layers", stages, model.name, L);
  if (plan.virtual_stages > 1) {
    if (plan.schedule != PipelineSchedule::OneFOneB)
      return "virtual_stages > 1 is interleaved 1F1B: the schedule must be 1f1b";
    if (plan.pp < 2) return "virtual_stages > 1 needs a pipeline (pp >= 2)";
    if (plan.micro_batches % plan.pp != 0)
      return fmt::format("interleaved 1F1B runs micro-batches in groups of pp: {} micro-batches is not a multiple of pp {}",
                         plan.micro_batches, plan.pp);
  }
  return "";
}

// Why the plan's expert parallelism does not fit the model's experts.
std::string experts_problem(const LayerModel& model, const ParallelPlan& plan) {
  if (plan.ep < 1 || plan.dp % plan.ep != 0)
    return fmt::format("ep must divide dp (expert parallelism is carved out of the replicas), got ep {} and dp {}", plan.ep,
                       plan.dp);
  if (model.expert_parallel > 1 && plan.ep != model.expert_parallel)
    return fmt::format("the workload of {} was built for expert-parallel width {}, the plan has ep {}", model.name,
                       model.expert_parallel, plan.ep);
  if (plan_spreads_experts(model, plan) &&
      std::none_of(model.layers.begin(), model.layers.end(), [](const Layer& l) { return l.expert_parameter_bytes > 0; }))
    return fmt::format("ep {} but {} has no experts", plan.ep, model.name);
  if (model.expert_parallel == 1)
    for (const Layer& l : model.layers)
      if (l.expert_parameter_bytes > 0 && l.experts % plan.ep != 0)
        return fmt::format("ep {} does not divide the {} experts of {} ({})", plan.ep, l.experts, model.name, l.name);
  return "";
}

// Why the plan's context parallelism does not fit the model: cp must divide dp and be the width
// the model was built for (its times and activations are for 1/cp of the sequence).
std::string context_problem(const LayerModel& model, const ParallelPlan& plan) {
  if (plan.cp < 1 || plan.dp % plan.cp != 0)
    return fmt::format("cp must divide dp (dp counts the context ranks: data-parallel x cp), got cp {} and dp {}", plan.cp, plan.dp);
  if (model.context_parallel != plan.cp)
    return model.context_parallel == 1
               ? fmt::format("cp {} but {} was built for the whole sequence on each GPU (context-parallel width 1): build the model "
                             "at cp {} (--cp, or a scenario workload's context_parallel: a zoo model or a model file, not a measured workload)",
                             plan.cp, model.name, plan.cp)
               : fmt::format("{} was built for context-parallel width {}, the plan has cp {}", model.name, model.context_parallel,
                             plan.cp);
  return "";
}

// Why some pipeline rank's model is not for its width, or has other layers than the first's.
std::string widths_problem(const RankModels& models, const ParallelPlan& plan) {
  const LayerModel& model = *models.front();
  for (int p = 0; p < plan.pp; ++p) {
    const LayerModel& mine = *models[static_cast<std::size_t>(p)];
    if (mine.tensor_parallel != plan.width(p))
      return plan.stage_tp.empty()
                 ? fmt::format("the model's layers are for tensor-parallel width {}, the plan has tp {}", mine.tensor_parallel,
                               plan.tp)
                 : fmt::format("stage {}'s layers are for tensor-parallel width {}, the plan gives it {}", p,
                               mine.tensor_parallel, plan.width(p));
    if (mine.layers.size() != model.layers.size() || mine.expert_parallel != model.expert_parallel)
      return fmt::format("{} has {} layers at tensor-parallel width {} and {} at {}: stages of different widths need the "
                         "same layers",
                         model.name, model.layers.size(), model.tensor_parallel, mine.layers.size(), mine.tensor_parallel);
  }
  return "";
}

// Why a pipeline rank's model, built knowing whether its norms and dropouts run on 1/tp of the
// tokens (the layer zoo), does not agree with the plan's sequence parallelism. Only at widths
// above 1: one GPU's norms see every token either way.
std::string built_sequence_parallel_problem(const LayerModel& model, const ParallelPlan& plan) {
  if (!model.built_sequence_parallel || *model.built_sequence_parallel == plan.sequence_parallel || model.tensor_parallel < 2)
    return "";
  return plan.sequence_parallel
             ? fmt::format("sequence parallelism, but {} was built with its norms and dropouts on every token: build it with "
                           "sequence parallelism too (a scenario workload's sequence_parallel: true beside the plan's)",
                           model.name)
             : fmt::format("{} was built for sequence parallelism (its norms and dropouts on 1/tp of the tokens) but the plan "
                           "has none: set the plan's sequence_parallel, or build the workload without it",
                           model.name);
}

// Why the plan's sequence parallelism cannot run (or "" without it).
std::string sequence_parallel_problem(const LayerModel& model, const ParallelPlan& plan) {
  if (plan.tp_comm_overlap && !plan.sequence_parallel)
    return "tp_comm_overlap overlaps sequence parallelism's all-gathers and reduce-scatters with the GEMMs beside them (as "
           "Megatron's --tp-comm-overlap): it needs sequence_parallel";
  if (plan.tp_comm_overlap && plan_spreads_experts(model, plan))
    return "tp_comm_overlap with experts spread over ep replicas is not modelled (the layer's all-to-alls sit between its "
           "tensor-parallel collectives and the next layer)";
  if (!plan.sequence_parallel) return "";
  if (plan.mixed_widths())
    return "sequence parallelism hands a stage's sequence shards to the next stage's ranks one to one: the stages' widths "
           "(stage_tp) must be equal";
  for (int p = 0; p < plan.pp; ++p) {
    const int w = plan.width(p);
    if (w < 2) return "sequence parallelism splits the tensor-parallel group's work: it needs tp >= 2";
    // A GPU's tokens: its part of the sequence with context parallelism.
    const int tokens = model.sequence / std::max(1, model.context_parallel);
    if (model.sequence > 0 && tokens % w != 0)
      return fmt::format("sequence parallelism splits each sequence over the tensor-parallel group: tp {} does not divide "
                         "the {} tokens of {}'s sequences{}",
                         w, tokens, model.name, model.context_parallel > 1 ? " on a GPU (its part under context parallelism)" : "");
  }
  for (const Layer& l : model.layers)
    if (l.stashed_bytes > 0 && l.sequence_parallel_stashed_bytes <= 0)
      return fmt::format("sequence parallelism: {} gives no activations with it ({}), as NEST's measured workloads, "
                         "whose tensor-parallel communication is inside their times",
                         model.name, l.name);
  return "";
}

// Why the plan's own stage starts do not split the model's layers (or "" when it has none).
std::string stage_starts_problem(const LayerModel& model, const ParallelPlan& plan) {
  if (plan.stage_starts.empty()) return "";
  const int L = static_cast<int>(model.layers.size());
  const long stages = static_cast<long>(plan.pp) * plan.virtual_stages;
  if (static_cast<long>(plan.stage_starts.size()) != stages)
    return fmt::format("{} stage starts for {} stages", plan.stage_starts.size(), stages);
  if (plan.stage_starts[0] != 0) return "the first stage must start at layer 0";
  for (long p = 1; p < stages; ++p)
    if (plan.stage_starts[p] <= plan.stage_starts[p - 1] || plan.stage_starts[p] >= L)
      return fmt::format("stage starts must increase from 0 and stay below {} (the layers), got {}", L,
                         fmt::join(plan.stage_starts, ", "));
  return "";
}

// Why the plan's GPUs are not the cluster's: too many, or a list of another length, or with a GPU
// the cluster has not or one twice.
std::string gpu_list_problem(const ParallelPlan& plan, const Cluster& cluster) {
  const long n = plan.gpus_per_replica() * plan.dp;
  const std::string product = plan.stage_tp.empty()
                                  ? fmt::format("tp x pp x dp = {} x {} x {}", plan.tp, plan.pp, plan.dp)
                                  : fmt::format("(stage widths {}) x dp {}", fmt::join(plan.stage_tp, " + "), plan.dp);
  if (plan.gpus.empty()) {
    if (n > cluster.num_devices()) return fmt::format("{} = {} GPUs, the cluster has {}", product, n, cluster.num_devices());
    return "";
  }
  if (static_cast<long>(plan.gpus.size()) != n) return fmt::format("{} GPUs listed for {} = {}", plan.gpus.size(), product, n);
  std::set<DeviceId> seen;
  for (DeviceId d : plan.gpus) {
    if (d < 0 || d >= cluster.num_devices()) return fmt::format("GPU {} is not in the cluster", d);
    if (!seen.insert(d).second) return fmt::format("GPU {} is listed twice", cluster.device(d).name);
  }
  return "";
}

// The plan's GPU of replica d, pipeline rank p, tensor rank t (ParallelPlan::gpus', or its index
// when the plan lists none).
struct PlanGpus {
  explicit PlanGpus(const ParallelPlan& of) : plan(of), offsets(of) {}
  DeviceId operator()(int d, int p, int t) const {
    const std::size_t index = offsets.index(d, p, t);
    return plan.gpus.empty() ? static_cast<DeviceId>(index) : plan.gpus[index];
  }
  const ParallelPlan& plan;
  RankOffsets offsets;
};

// Why some transfer of the plan is between GPUs that cannot reach each other: in tensor-parallel
// groups and between pipeline neighbours (the replicas' groups are collectives_problem's).
std::string reachability_problem(const ParallelPlan& plan, const Cluster& cluster) {
  const PlanGpus gpu_of(plan);
  for (int d = 0; d < plan.dp; ++d)
    for (int p = 0; p < plan.pp; ++p)
      for (int t = 0; t < plan.width(p); ++t) {
        const DeviceId a = gpu_of(d, p, t);
        for (int u = 0; u < plan.width(p); ++u)
          if (!cluster.reachable(a, gpu_of(d, p, u)))
            return fmt::format("{} cannot reach {} of its tensor-parallel group (replica {}, stage {})",
                               cluster.device(a).name, cluster.device(gpu_of(d, p, u)).name, d, p);
        // The next rank; interleaved, the last rank hands its stages on to the first. Ranks of
        // equal width pair up by tensor rank; of different widths every pair exchanges.
        const int next = p + 1 < plan.pp ? p + 1 : plan.virtual_stages > 1 ? 0 : -1;
        if (next < 0 || next == p) continue;
        for (int u = 0; u < plan.width(next); ++u) {
          if (plan.width(next) == plan.width(p) && u != t) continue;
          const DeviceId b = gpu_of(d, next, u);
          if (!cluster.reachable(a, b) || !cluster.reachable(b, a))
            return fmt::format("{} (pipeline rank {}) and {} (pipeline rank {}) cannot reach each other: pipeline "
                               "neighbours exchange activations and gradients",
                               cluster.device(a).name, p, cluster.device(b).name, next);
        }
      }
  return "";
}

// Why some replica group's gradient reduction is not one the cluster can run (halving-doubling
// on a power of two, hierarchical on equal shares of servers).
std::string gradient_groups_problem(const ParallelPlan& plan, const Cluster& cluster) {
  if (plan.dp <= 1) return "";
  const PlanGpus gpu_of(plan);
  CollectiveSpec s;
  s.op = plan.zero == 0 ? CollectiveOp::AllReduce : CollectiveOp::ReduceScatter;
  s.algorithm = plan.zero == 0 ? plan.gradient_algorithm : zero_collective_algorithm(plan.gradient_algorithm);
  s.bytes = 1;
  const int expert_replicas = plan.dp / plan.ep;
  for (int p = 0; p < plan.pp; ++p)
    for (int t = 0; t < plan.width(p); ++t) {
      s.group.clear();
      for (int d = 0; d < plan.dp; ++d) s.group.push_back(gpu_of(d, p, t));
      if (const std::string why = collective_problem(s, cluster); !why.empty())
        return fmt::format("the gradient reduction of stage {}, tensor rank {}: {}", p, t, why);
      if (plan.ep > 1 && expert_replicas > 1)
        for (int e = 0; e < plan.ep; ++e) {
          s.group.clear();
          for (int j = 0; j < expert_replicas; ++j) s.group.push_back(gpu_of(j * plan.ep + e, p, t));
          if (const std::string why = collective_problem(s, cluster); !why.empty())
            return fmt::format("the experts' gradient reduction of stage {}, tensor rank {}, expert shard {}: {}", p, t, e,
                               why);
        }
    }
  return "";
}

// Why the all-to-alls of some expert-parallel group cannot run on the cluster (or "" without
// expert parallelism).
std::string expert_groups_problem(const ParallelPlan& plan, const Cluster& cluster) {
  if (plan.ep <= 1) return "";
  const PlanGpus gpu_of(plan);
  CollectiveSpec s;
  s.op = CollectiveOp::AllToAll;
  s.algorithm = CollectiveAlgorithm::Direct;
  s.bytes = 1;
  for (int j = 0; j < plan.dp / plan.ep; ++j)
    for (int p = 0; p < plan.pp; ++p)
      for (int t = 0; t < plan.width(p); ++t) {
        s.group.clear();
        for (int e = 0; e < plan.ep; ++e) s.group.push_back(gpu_of(j * plan.ep + e, p, t));
        if (const std::string why = collective_problem(s, cluster); !why.empty())
          return fmt::format("the all-to-alls of expert-parallel group {} (stage {}, tensor rank {}): {}", j, p, t, why);
      }
  return "";
}

}  // namespace

std::string assumptions_problem(const LayerModel& model, const ParallelPlan& plan) {
  const PlanAssumptions& a = plan.assumptions;
  const bool nest_memory = a.memory_model == MemoryModel::Nest;
  if (nest_memory && std::all_of(model.layers.begin(), model.layers.end(), [](const Layer& l) { return l.activation_bytes <= 0; }))
    return fmt::format("memory_model nest counts every operator output of a stage (NEST's activation_bytes), which {} does "
                       "not give: a NEST workload has them",
                       model.name);
  if (a.compute_units == ComputeUnits::Nest && model.nest_time_scale <= 0)
    return fmt::format("compute_units nest scales the layers' times as NEST's DP does (a NEST workload's "
                       "nest_dp_time_scale), which {} does not give",
                       model.name);
  const bool nest_pricing = nest_memory || a.recompute == RecomputeCharge::Nest || plan.nest_baseline_pricing;
  if (nest_pricing && plan.virtual_stages > 1)
    return "NEST's memory model, recomputation charge and baseline pricing follow its 1F1B pipeline: not with interleaving "
           "(virtual_stages)";
  if (nest_memory && plan.sequence_parallel) return "NEST's memory model counts whole activations: not with sequence parallelism";
  return "";
}

namespace {

// plan_problem for a plan's rank models (one per pipeline rank, at its width): the first of the
// checks' reasons, in this order.
std::string rank_plan_problem(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster) {
  const LayerModel& model = *models.front();
  if (std::string why = counts_problem(model, plan); !why.empty()) return why;
  if (std::string why = experts_problem(model, plan); !why.empty()) return why;
  if (std::string why = context_problem(model, plan); !why.empty()) return why;
  if (std::string why = widths_problem(models, plan); !why.empty()) return why;
  for (const LayerModel* mine : models)
    if (std::string why = built_sequence_parallel_problem(*mine, plan); !why.empty()) return why;
  if (std::string why = sequence_parallel_problem(model, plan); !why.empty()) return why;
  for (const LayerModel* mine : models)
    if (std::string why = assumptions_problem(*mine, plan); !why.empty()) return why;
  if (std::string why = stage_starts_problem(model, plan); !why.empty()) return why;
  if (std::string why = gpu_list_problem(plan, cluster); !why.empty()) return why;
  if (std::string why = reachability_problem(plan, cluster); !why.empty()) return why;
  if (std::string why = gradient_groups_problem(plan, cluster); !why.empty()) return why;
  return expert_groups_problem(plan, cluster);
}

// Why stage_tp itself is malformed ("" when it is fine or empty).
std::string stage_tp_problem(const ParallelPlan& plan) {
  if (plan.stage_tp.empty()) return "";
  if (plan.pp < 1) return fmt::format("pp must be >= 1, got {}", plan.pp);
  if (static_cast<long>(plan.stage_tp.size()) != plan.pp)
    return fmt::format("stage_tp gives {} widths for {} stages", plan.stage_tp.size(), plan.pp);
  for (int w : plan.stage_tp)
    if (w < 1) return fmt::format("stage_tp widths must be >= 1, got {}", fmt::join(plan.stage_tp, ", "));
  if (plan.stage_tp.front() != plan.tp)
    return fmt::format("tp ({}) must be the first stage's width in stage_tp ({})", plan.tp, plan.stage_tp.front());
  if (plan.virtual_stages > 1) return "stage_tp gives each stage its own width; interleaved stages share their rank's: not both";
  return "";
}

}  // namespace

std::string plan_problem(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster) {
  if (std::string why = stage_tp_problem(plan); !why.empty()) return why;
  for (int w : plan.stage_tp)
    if (w != model.tensor_parallel)
      return fmt::format("stage_tp gives stages widths {}: compile with the workload's models of every width, this is {}'s at "
                         "width {} only",
                         fmt::join(plan.stage_tp, ", "), model.name, model.tensor_parallel);
  return rank_plan_problem(RankModels(static_cast<std::size_t>(std::max(plan.pp, 1)), &model), plan, cluster);
}

namespace {
// The workload's model of each stage's width, or why there is none.
std::string rank_models(const LayerWorkload& workload, const ParallelPlan& plan, RankModels& models) {
  models.clear();
  for (int p = 0; p < std::max(plan.pp, 1); ++p) {
    const auto found = workload.by_tensor_parallel.find(plan.width(p));
    if (found == workload.by_tensor_parallel.end()) {
      std::vector<int> widths;
      for (const auto& [w, m] : workload.by_tensor_parallel) widths.push_back(w);
      return fmt::format("{} has no tensor-parallel width {}{}; it has: {}", workload.name, plan.width(p),
                         plan.stage_tp.empty() ? "" : fmt::format(" (stage {})", p), fmt::join(widths, ", "));
    }
    models.push_back(&found->second);
  }
  return "";
}

// plan_problem of a workload's plan; `models` gets the model each rank runs.
std::string workload_plan_problem(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                                  RankModels& models) {
  if (std::string why = stage_tp_problem(plan); !why.empty()) return why;
  if (std::string why = rank_models(workload, plan, models); !why.empty()) return why;
  return rank_plan_problem(models, plan, cluster);
}
}  // namespace

std::string plan_problem(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster) {
  RankModels models;
  return workload_plan_problem(workload, plan, cluster, models);
}

namespace {

struct Unit {
  bool forward;
  int micro_batch;
  int chunk = 0;  // interleaved 1F1B: which of the rank's stages (stage chunk * pp + p)
  // Interleaved 1F1B's steady state: a backward paired with the forward before it, as Megatron
  // runs them: both, then one exchange of both's sends and the next pair's receives.
  bool paired = false;
};

// Interleaved 1F1B on pipeline rank p of pp, m micro-batches (a multiple of pp), v stages per
// rank, as Megatron-LM's forward_backward_pipelining_with_interleaving orders them: the k-th
// forward is micro-batch (k / (pp v)) pp + k mod pp of chunk (k mod pp v) / pp; backwards run
// the chunks in reverse. Warm-up: (pp - p - 1) x 2 + (v - 1) x pp forwards (all of them when
// m = pp), then one forward and one backward in turn, then the remaining backwards.
std::vector<Unit> interleaved_schedule(int p, int pp, int m, int v) {
  const int total = m * v;
  auto unit = [&](int k, bool forward) {
    const int in_group = k % (pp * v);
    const int chunk = in_group / pp;
    return Unit{forward, (k / (pp * v)) * pp + k % pp, forward ? chunk : v - 1 - chunk};
  };
  const int warmup = m == pp ? total : std::min((pp - p - 1) * 2 + (v - 1) * pp, total);
  std::vector<Unit> order;
  for (int k = 0; k < warmup; ++k) order.push_back(unit(k, true));
  for (int j = 0; j < total - warmup; ++j) {
    order.push_back(unit(warmup + j, true));
    order.push_back(unit(j, false));
    order.back().paired = true;
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(unit(k, false));
  return order;
}

// The order of forward and backward units on pipeline rank p (v stages per rank).
std::vector<Unit> schedule_of(PipelineSchedule schedule, int p, int pp, int m, int v) {
  if (v > 1) return interleaved_schedule(p, pp, m, v);
  std::vector<Unit> order;
  if (schedule == PipelineSchedule::GPipe) {
    for (int i = 0; i < m; ++i) order.push_back({true, i});
    for (int i = 0; i < m; ++i) order.push_back({false, i});
    return order;
  }
  const int warmup = std::min(pp - p - 1, m);
  for (int i = 0; i < warmup; ++i) order.push_back({true, i});
  for (int j = 0; j < m - warmup; ++j) {
    order.push_back({true, warmup + j});
    order.push_back({false, j});
  }
  for (int i = m - warmup; i < m; ++i) order.push_back({false, i});
  return order;
}

}  // namespace

namespace {

// What one GPU of a stage holding layers [first, end) keeps, per GPU: the dense part and its share
// of the experts (before ZeRO), the stash per micro-batch, ZeRO 3's gather buffer (its largest
// layer's parameters less its own shard).
// `stash` and `workspace` by the plan's memory model (StageActivations).
struct StageSums {
  double dense = 0, experts = 0, stash = 0, buffer = 0, workspace = 0;
};
StageSums stage_sums(const LayerModel& model, int first, int end, const ParallelPlan& plan) {
  const bool spread = plan_spreads_experts(model, plan);
  StageSums sums;
  double stashed = 0, every_output = 0;
  for (int l = first; l < end; ++l) {
    const double expert = spread ? model.layers[l].expert_parameter_bytes : 0.0;
    const double dense_l = model.layers[l].parameter_bytes - expert, experts_l = expert / plan.ep;
    sums.dense += dense_l;
    sums.experts += experts_l;
    stashed += plan.sequence_parallel ? model.layers[l].sequence_parallel_stashed_bytes : model.layers[l].stashed_bytes;
    every_output += model.layers[l].activation_bytes;
    // ZeRO 3 gathers a layer's dense part from dp shards, its experts from dp / ep.
    sums.buffer = std::max(sums.buffer, dense_l * (1 - 1.0 / plan.dp) + experts_l * (1 - static_cast<double>(plan.ep) / plan.dp));
  }
  const StageActivations held =
      stage_activations(stashed, every_output, plan.assumptions.memory_model == MemoryModel::Nest ? model.bytes_entering(first, end) : 0.0,
                        model.nest_recomputation, plan.assumptions.memory_model);
  sums.stash = held.stash;
  sums.workspace = held.workspace;
  return sums;
}

}  // namespace

StageActivations stage_activations(const LayerModel& model, int first, int end, const ParallelPlan& plan) {
  const StageSums sums = stage_sums(model, first, end, plan);
  return {sums.stash, sums.workspace};
}

GpuMemory stage_memory(const LayerModel& model, int first, int end, const ParallelPlan& plan, int in_flight) {
  const StageSums sums = stage_sums(model, first, end, plan);
  return gpu_memory(sums.dense, sums.experts, sums.stash, sums.buffer, plan, in_flight, sums.workspace);
}

namespace {

// Where a compiled plan's pieces are: the index in CompiledPlan::gpus of replica d, stage s (on
// pipeline rank s % pp) and tensor rank t, the stage's width, and the end of stage s.
struct PlanIndex {
  PlanIndex(const ParallelPlan& of, int num_stages, int num_layers, const std::vector<int>& stage_starts)
      : plan(of), pp(of.pp), stages(num_stages), layers(num_layers), starts(stage_starts), offsets(of) {}
  const ParallelPlan& plan;
  int pp, stages, layers;
  const std::vector<int>& starts;
  RankOffsets offsets;
  int width(int s) const { return plan.width(s); }
  int gpu_index(int d, int s, int t) const { return static_cast<int>(offsets.index(d, s % pp, t)); }
  int stage_end(int s) const { return s + 1 < stages ? starts[s + 1] : layers; }
};

}  // namespace

namespace {

// plan_layout of a checked plan, each pipeline rank at its model.
CompiledPlan rank_plan_layout(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster) {
  const int pp = plan.pp, dp = plan.dp, m = plan.micro_batches, v = plan.virtual_stages;
  const int S = pp * v;
  const LayerModel& model = *models.front();  // the first stage's (all have the same layers)
  const int L = static_cast<int>(model.layers.size());
  CompiledPlan out;
  // Balanced by each stage's own width's times (interleaved: one width, the rank's model repeated).
  if (plan.stage_starts.empty()) {
    std::vector<const LayerModel*> by_stage;
    for (int s = 0; s < S; ++s) by_stage.push_back(models[static_cast<std::size_t>(s % pp)]);
    out.stage_starts = balanced_stages_of(by_stage);
  } else {
    out.stage_starts = plan.stage_starts;
  }
  out.gpus = plan.gpus;
  if (out.gpus.empty())
    for (long g = 0; g < plan.gpus_per_replica() * dp; ++g) out.gpus.push_back(static_cast<DeviceId>(g));
  const PlanIndex at(plan, S, L, out.stage_starts);
  // Memory at the peak, and whether every GPU holds it.
  out.in_flight.resize(pp);
  out.memory.resize(out.gpus.size());
  for (int p = 0; p < pp; ++p) {
    GpuMemory mem;
    if (v == 1) {
      out.in_flight[p] = plan.schedule == PipelineSchedule::GPipe ? m : std::min(m, pp - p);
      mem = stage_memory(*models[p], out.stage_starts[p], at.stage_end(p), plan, out.in_flight[p]);
    } else {
      // The rank's v stages: their parameters (one ZeRO 3 gather buffer, the largest), and at
      // the peak of its schedule the stashes of the (stage, micro-batch) units whose backward has
      // not run yet; in_flight: the most such units at once.
      StageSums rank;
      std::vector<double> stash(v, 0.0);
      for (int c = 0; c < v; ++c) {
        const StageSums one = stage_sums(*models[p], out.stage_starts[c * pp + p], at.stage_end(c * pp + p), plan);
        rank.dense += one.dense;
        rank.experts += one.experts;
        rank.buffer = std::max(rank.buffer, one.buffer);
        stash[c] = one.stash;
      }
      mem = gpu_memory(rank.dense, rank.experts, 0.0, rank.buffer, plan, 0);
      double held = 0;
      int units = 0;
      for (const Unit& u : schedule_of(plan.schedule, p, pp, m, v)) {
        held += u.forward ? stash[u.chunk] : -stash[u.chunk];
        units += u.forward ? 1 : -1;
        mem.activations = std::max(mem.activations, held);
        out.in_flight[p] = std::max(out.in_flight[p], units);
      }
    }
    for (int d = 0; d < dp; ++d)
      for (int t = 0; t < at.width(p); ++t) {
        const int index = at.gpu_index(d, p, t);
        out.memory[index] = mem;
        const Device& device = cluster.device(out.gpus[index]);
        if (out.infeasible.empty() && mem.total() > device.memory_bytes)
          out.infeasible = fmt::format(
              "{} (replica {}, {} {}, tensor rank {}) needs {} and has {}: parameters {}, gradients {}, optimizer "
              "states {}, activations of {} {} in flight {}",
              device.name, d, v == 1 ? "stage" : "pipeline rank", p, t, format_bytes(mem.total()),
              format_bytes(device.memory_bytes), format_bytes(mem.parameters), format_bytes(mem.gradients),
              format_bytes(mem.optimizer_states), out.in_flight[p],
              v > 1 ? "(stage, micro-batch) units at most" : out.in_flight[p] == 1 ? "micro-batch" : "micro-batches",
              format_bytes(mem.activations)) +
              (mem.workspace > 0 ? fmt::format(", and every operator output of the micro-batch in compute beyond its "
                                               "stash {} (NEST's memory model)",
                                               format_bytes(mem.workspace))
                                 : "");
      }
  }
  return out;
}

// The checked plan's rank models, or std::invalid_argument with plan_problem's reason.
RankModels checked_models(const LayerModel& model, const ParallelPlan& plan, const Cluster& cluster) {
  if (const std::string why = plan_problem(model, plan, cluster); !why.empty()) throw std::invalid_argument(why);
  return RankModels(static_cast<std::size_t>(plan.pp), &model);
}
RankModels checked_models(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster) {
  RankModels models;
  if (const std::string why = workload_plan_problem(workload, plan, cluster, models); !why.empty())
    throw std::invalid_argument(why);
  return models;
}

// One layer of one micro-batch on one GPU: its forward and backward operators, and where each
// pass's result stands after the layer's tensor-parallel and expert collectives (the operator
// itself without any).
struct LayerOps {
  OpId forward = -1, backward = -1, forward_done = -1, backward_done = -1;
};

// The LayerOps of every replica d, stage s, tensor rank t, micro-batch i and layer k of the stage,
// in one flat vector: replicas outermost, then stages (each of its own width and layer count),
// tensor ranks, micro-batches, layers.
class LayerGrid {
 public:
  LayerGrid(const PlanIndex& at, int dp, int micro_batches) : micro_batches_(micro_batches) {
    for (int s = 0; s < at.stages; ++s) {
      stage_offset_.push_back(per_replica_);
      layers_.push_back(static_cast<std::size_t>(at.stage_end(s) - at.starts[s]));
      per_replica_ += static_cast<std::size_t>(at.width(s)) * micro_batches * layers_.back();
    }
    cells_.resize(per_replica_ * static_cast<std::size_t>(dp));
  }
  LayerOps& operator()(int d, int s, int t, int i, int k) { return cells_[index(d, s, t, i, k)]; }
  const LayerOps& operator()(int d, int s, int t, int i, int k) const { return cells_[index(d, s, t, i, k)]; }

 private:
  std::size_t index(int d, int s, int t, int i, int k) const {
    return static_cast<std::size_t>(d) * per_replica_ + stage_offset_[s] +
           (static_cast<std::size_t>(t) * micro_batches_ + i) * layers_[s] + k;
  }
  std::size_t micro_batches_;
  std::size_t per_replica_ = 0;
  std::vector<std::size_t> stage_offset_, layers_;  // per stage
  std::vector<LayerOps> cells_;
};

// A stage's micro-batches in its schedule: of its first forward, of the last forward before its
// first backward (1F1B interleaves them: the stage's last forward comes after its first
// backward), of its first and of its last backward.
struct StageMarks {
  int first_forward = -1, forward_before_backward = -1, first_backward = -1, last_backward = -1;
};

// A group of replicas reducing the gradients of one stage and tensor rank: of the experts' part of
// the layers' parameters (1/ep of it, among the replicas holding the same experts) or of the rest;
// `tag` names its collectives and its queue.
struct ReductionGroup {
  int stage = 0, tensor_rank = 0;
  std::vector<int> replicas;
  bool experts = false;
  std::string tag;
};

// A unit on its GPU: its stage, micro-batch and pass (stage -1: none).
struct UnitRef {
  int stage = -1, micro_batch = 0;
  bool forward = true;
};

// The gates of one blocking send (ParallelPlan::blocking_sends; -1: none): the sender's operator
// after the send (`after`), the end of the sender's exchange step where not the sending unit's
// (`ready`: the paired backward's, its collectives included), the receiver's operator after which
// it posts the receive (`posted`: the end of the unit before its step) and the first of the
// receiver's step that waits for it where not the receiving one (`step_start`).
struct SendGates {
  OpId after = -1, ready = -1, posted = -1, step_start = -1;
};

// The gates of the blocking sends between two stages: after and ready per sending rank, posted
// and step_start per receiving rank.
struct Handshake {
  Handshake(int senders, int receivers)
      : after(senders, -1), ready(senders, -1), posted(receivers, -1), step_start(receivers, -1) {}
  SendGates gates(int sender, std::size_t receiver) const {
    return {after[sender], ready[sender], posted[receiver], step_start[receiver]};
  }
  std::vector<OpId> after, ready, posted, step_start;
};

// The collectives of one data-parallel group (pipeline rank, tensor rank, tag) run one after
// another, as NCCL runs a communicator's on its stream; interleaved, a rank's stages share their
// GPUs' communicator. `tail`: per replica, the end of the group's last collective (empty: none
// yet). `scattered`: (stage, layer) reduce-scattered (ZeRO 1, 2), whose all-gathers follow the
// group's last reduce-scatter.
struct ReductionQueue {
  std::vector<OpId> tail;
  std::vector<std::pair<int, int>> scattered;
};

// compile_plan of a checked plan, each pipeline rank at its model: one method per pass over a
// LayerGrid. Each pass adds its operators and tensors in a fixed order: operator ids break the
// engines' ties, so the order is part of the result.
class PlanCompiler {
 public:
  PlanCompiler(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail)
      : models_(models),
        plan_(plan),
        cluster_(cluster),
        detail_(detail),
        pp_(plan.pp),
        dp_(plan.dp),
        micro_batches_(plan.micro_batches),
        stages_(plan.pp * plan.virtual_stages),
        spreads_experts_(plan_spreads_experts(*models.front(), plan)),
        out_(rank_plan_layout(models, plan, cluster)),
        at_(plan, stages_, static_cast<int>(models.front()->layers.size()), out_.stage_starts),
        grid_(at_, dp_, micro_batches_) {
    for (int p = 0; p < pp_; ++p)
      rank_orders_.push_back(schedule_of(plan.schedule, p, pp_, micro_batches_, plan.virtual_stages));
    for (int p = 0; p < stages_; ++p) max_width_ = std::max(max_width_, at_.width(p));
    if (plan.blocking_sends) {
      unit_next_.assign(unit_index(dp_, 0, 0, 0, true), -1);
      unit_previous_.assign(unit_next_.size(), UnitRef{});
      unit_paired_.assign(unit_next_.size(), UnitRef{});
      unit_step_start_.assign(unit_next_.size(), -1);
    }
  }

  CompiledPlan compile() && {
    add_compute();
    add_stashes();
    add_tensor_parallel_collectives();
    if (spreads_experts_) add_expert_all_to_alls();
    if (plan_.cp > 1) add_context_exchanges();
    link_layers_and_stages();
    add_gradient_reductions();
    add_optimizer_steps();
    const int v = plan_.virtual_stages;
    graph().graph.finalize(fmt::format(
        "{} with tp {}, pp {}{}, dp {}{}, {} micro-batches", models_.front()->name,
        plan_.stage_tp.empty() ? fmt::format("{}", plan_.tp) : fmt::format("{}", fmt::join(plan_.stage_tp, "/")), pp_,
        v > 1 ? fmt::format(" x {} interleaved", v) : "", dp_,
        fmt::format("{}{}", plan_.cp > 1 ? fmt::format(" (cp {})", plan_.cp) : "", plan_.ep > 1 ? fmt::format(", ep {}", plan_.ep) : ""),
        micro_batches_),
        /*index_names=*/false);  // the names are unique by construction (replica, stage, rank, micro-batch, layer)
    return std::move(out_);
  }

 private:
  ExecutionGraph& graph() { return out_.graph; }
  // Stage s's model (its pipeline rank's); every stage's has the same layers.
  const LayerModel& model_of(int s) const { return *models_[static_cast<std::size_t>(s % pp_)]; }
  int first_layer(int s) const { return out_.stage_starts[s]; }
  int layer_count(int s) const { return at_.stage_end(s) - out_.stage_starts[s]; }
  DeviceId gpu(int d, int s, int t) const { return out_.gpus[at_.gpu_index(d, s, t)]; }

  // Compute operators, GPU by GPU, in schedule order, chained on their GPU.
  void add_compute() {
    // A stage charged recomputation re-runs each layer's forward, at its backward time (NEST's
    // price), before the layer's backward: the backward operator takes both.
    std::vector<bool> recomputes(static_cast<std::size_t>(stages_));
    for (int p = 0; p < stages_; ++p) recomputes[p] = stage_recomputes(model_of(p), plan_, p, stages_);
    for (int d = 0; d < dp_; ++d)
      for (int r = 0; r < pp_; ++r)
        for (int t = 0; t < at_.width(r); ++t) add_gpu_compute(d, r, t, recomputes);
  }

  // The units of pipeline rank r on replica d's GPU of tensor rank t. With blocking sends, each
  // unit's place between the pipeline's exchanges (unit_next_, unit_previous_, unit_paired_):
  // Megatron exchanges after every unit of 1F1B, and in the interleaved schedule's steady state
  // after each forward and the backward that follows it (one batched send and receive of both).
  void add_gpu_compute(int d, int r, int t, const std::vector<bool>& recomputes) {
    const DeviceId on = gpu(d, r, t);
    OpId previous = -1;
    std::vector<std::size_t> sending;  // the units of the exchange step just placed, which send on
    OpId step_start = -1;  // the first operator of the exchange step being placed
    UnitRef placed;        // the unit just placed
    for (const Unit& u : rank_orders_[r]) {
      const int p = u.chunk * pp_ + r;  // the unit's stage
      const int first = first_layer(p), count = layer_count(p);
      const std::size_t unit = unit_index(d, p, t, u.micro_batch, u.forward);
      const bool paired = plan_.blocking_sends && u.paired;
      for (int k = 0; k < count; ++k) {
        const int kk = u.forward ? k : count - 1 - k;  // backward runs the layers in reverse
        const Layer& layer = model_of(r).layers[first + kk];
        const OpId op =
            graph().add({fmt::format("d{}.p{}.t{}.{}{}.{}", d, p, t, u.forward ? 'F' : 'B', u.micro_batch, first + kk),
                         u.forward ? "forward" : "backward",
                         u.forward ? layer.forward_s : layer.backward_s * (recomputes[p] ? 2 : 1), 0.0},
                        on);
        LayerOps& cell = grid_(d, p, t, u.micro_batch, kk);
        (u.forward ? cell.forward : cell.backward) = op;
        if (previous >= 0) graph().depend(previous, op);  // the schedule's order on this GPU
        if (k == 0 && plan_.blocking_sends) {
          if (paired) {  // the forward's exchange step: its receive was posted with the forward's
            unit_previous_[unit] = unit_previous_[sending.back()];
            unit_step_start_[unit] = step_start;
          } else {
            for (std::size_t s : sending) unit_next_[s] = op;
            sending.clear();
            unit_previous_[unit] = placed;
            step_start = op;
          }
        }
        previous = op;
      }
      if (paired) unit_paired_[sending.back()] = {p, u.micro_batch, false};  // the forward sends after this backward
      sending.push_back(unit);
      placed = {p, u.micro_batch, u.forward};
    }
    // The GPU's last unit blocks too (a backward's gradients to the stage before): what
    // follows it (the optimizer's step) waits at a step of its own for the arrival.
    if (plan_.blocking_sends && pp_ > 1 && !sending.empty() && previous >= 0) {
      const OpId sent = graph().add_communication_step(fmt::format("d{}.p{}.t{}.sent", d, r, t), on);
      graph().depend(previous, sent);
      for (std::size_t s : sending) unit_next_[s] = sent;
      previous = sent;
    }
    last_compute_[on] = previous;
  }

  // append_collective with the spec resolved as NCCL runs it (nccl_resolved) once per distinct
  // collective: a plan repeats each group's collectives for every layer and micro-batch, and
  // pricing NCCL's protocols is what the compile would spend most of its time on.
  std::vector<OpId> add_collective(const CollectiveSpec& spec, const Cluster& cluster, const std::string& name,
                                   std::span<const OpId> after) {
    const auto key = std::make_tuple(static_cast<int>(spec.op), static_cast<int>(spec.algorithm), spec.bytes, spec.root, spec.chunks,
                                     static_cast<int>(spec.detail), static_cast<int>(spec.protocol), spec.channels,
                                     spec.tuned * 4 + spec.pin_protocol * 2 + spec.pin_channels, spec.group);
    auto it = resolved_.find(key);
    if (it == resolved_.end()) it = resolved_.emplace(key, nccl_resolved(spec, cluster)).first;
    // Its results may be held by one step for all ranks (a condensed ring's barrier): whatever
    // leaves a rank after it leaves from a step on the rank's GPU (send).
    return append_collective(graph(), it->second, cluster, name, after, /*results_on_ranks=*/false);
  }

  // The optimizer's step on each GPU (Layer::optimizer_s of its layers; ZeRO 1 and up update
  // 1/dp of them), after its last backward and its gradient reductions. With ZeRO 1 and 2 it
  // follows the parameters' all-gathers too, where Megatron runs them after it: the same work
  // one after another on the GPU's critical path.
  void add_optimizer_steps() {
    for (int d = 0; d < dp_; ++d)
      for (int r = 0; r < pp_; ++r)
        for (int t = 0; t < at_.width(r); ++t) {
          double seconds = 0;
          for (int p = r; p < stages_; p += pp_)
            for (int k = first_layer(p); k < at_.stage_end(p); ++k) seconds += model_of(r).layers[k].optimizer_s;
          if (plan_.zero >= 1) seconds /= dp_;
          if (seconds <= 0) continue;
          const DeviceId on = gpu(d, r, t);
          const OpId step = graph().add({fmt::format("d{}.p{}.t{}.optimizer", d, r, t), "optimizer", seconds, 0.0}, on);
          graph().depend(last_compute_.at(on), step);
          for (OpId end : reduction_ends_[on]) graph().depend(end, step);
        }
  }

  // The activations each forward stashes until its backward.
  void add_stashes() {
    for (int d = 0; d < dp_; ++d)
      for (int p = 0; p < stages_; ++p) {
        const int first = first_layer(p), count = layer_count(p);
        if (plan_.assumptions.memory_model == MemoryModel::Nest) {
          // NEST's: a micro-batch's stash of the whole stage, from its first layer's forward to the
          // end of that layer's backward (the stage's last); its workspace is held throughout.
          const double bytes = stage_activations(model_of(p), first, first + count, plan_).stash;
          for (int t = 0; t < at_.width(p); ++t)
            for (int i = 0; i < micro_batches_; ++i) {
              const LayerOps& cell = grid_(d, p, t, i, 0);
              if (bytes > 0) out_.activations.push_back({cell.forward, cell.backward, at_.gpu_index(d, p, t), bytes});
            }
          continue;
        }
        for (int t = 0; t < at_.width(p); ++t)
          for (int i = 0; i < micro_batches_; ++i)
            for (int k = 0; k < count; ++k) {
              const Layer& layer = model_of(p).layers[first + k];
              const double bytes = plan_.sequence_parallel ? layer.sequence_parallel_stashed_bytes : layer.stashed_bytes;
              const LayerOps& cell = grid_(d, p, t, i, k);
              if (bytes > 0) out_.activations.push_back({cell.forward, cell.backward, at_.gpu_index(d, p, t), bytes});
            }
      }
  }

  // The tensor-parallel all-reduce after `ops` (one per tensor rank), or the ops themselves; with
  // sequence parallelism a reduce-scatter, then an all-gather.
  // In the backward, sequence parallelism also gathers again the column-parallel linears' inputs
  // it kept split (Korthikanti et al. 4.2.2): one more all-gather of the bytes, 1.5x the traffic
  // (Megatron overlaps it with the weight gradients' compute; here it runs after, a bound).
  std::vector<OpId> tp_allreduce(int d, int p, const std::vector<OpId>& ops, double bytes, bool backward) {
    const int tp = at_.width(p);
    if (tp == 1 || bytes <= 0) return ops;
    CollectiveSpec s;
    s.detail = detail_;
    s.op = plan_.sequence_parallel ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce;
    s.algorithm = CollectiveAlgorithm::Ring;
    for (int t = 0; t < tp; ++t) s.group.push_back(gpu(d, p, t));
    s.bytes = bytes;
    const std::string name = fmt::format("tp{}", collectives_++);
    if (!plan_.sequence_parallel) return add_collective(s, cluster_, name, ops);
    const std::vector<OpId> scattered = add_collective(s, cluster_, name + ".rs", ops);
    s.op = CollectiveOp::AllGather;
    const std::vector<OpId> gathered = add_collective(s, cluster_, name + ".ag", scattered);
    return backward ? add_collective(s, cluster_, name + ".ag-inputs", gathered) : gathered;
  }

  // Each layer's tensor-parallel all-reduces, forward then backward: the cells' *_done. With
  // tp_comm_overlap they run beside the layer's compute instead of after it (Transformer Engine's
  // all-gathers and reduce-scatters split into chunks pipelined with the GEMMs next to them): from
  // where the layer starts (the layer before it done; a stage's edge layers, with nothing before
  // them on the stage, after their own compute) to a join with the compute. A bound on the
  // overlap: TE hides them behind their GEMMs alone, and its communication takes SMs from them.
  void add_tensor_parallel_collectives() {
    for (int d = 0; d < dp_; ++d)
      for (int p = 0; p < stages_; ++p) {
        const int count = layer_count(p);
        for (int i = 0; i < micro_batches_; ++i) {
          for (int k = 0; k < count; ++k) tensor_parallel_collective(d, p, i, k, true);
          for (int k = count - 1; k >= 0; --k) tensor_parallel_collective(d, p, i, k, false);  // backward order
        }
      }
  }

  void tensor_parallel_collective(int d, int p, int i, int k, bool forward) {
    const int tp = at_.width(p), before = forward ? k - 1 : k + 1;  // the layer the pass ran just before
    const Layer& layer = model_of(p).layers[first_layer(p) + k];
    const double bytes = forward ? layer.tp_allreduce_forward_bytes : layer.tp_allreduce_backward_bytes;
    const bool beside = plan_.tp_comm_overlap && tp > 1 && bytes > 0 && before >= 0 && before < layer_count(p);
    OpId LayerOps::*const op = forward ? &LayerOps::forward : &LayerOps::backward;
    OpId LayerOps::*const done = forward ? &LayerOps::forward_done : &LayerOps::backward_done;
    std::vector<OpId> compute(tp), from(tp);
    for (int t = 0; t < tp; ++t) {
      compute[t] = grid_(d, p, t, i, k).*op;  // the first pass to set *_done (experts and context rings come after)
      from[t] = beside ? grid_(d, p, t, i, before).*done : compute[t];
    }
    std::vector<OpId> ended = tp_allreduce(d, p, from, bytes, !forward);
    for (int t = 0; t < tp; ++t) {
      if (beside) ended[t] = join(compute[t], ended[t], "tp", d, p, t, i, first_layer(p) + k, forward);
      grid_(d, p, t, i, k).*done = ended[t];
    }
  }

  // A step on replica d, stage p, rank t after both a layer's compute and the communication that
  // ran beside it (`what`: cp, tp): what follows the layer waits for it.
  OpId join(OpId compute, OpId communication, const char* what, int d, int p, int t, int i, int layer, bool forward) {
    const OpId step = graph().add_communication_step(
        fmt::format("d{}.p{}.t{}.{}{}.{}.{}-join", d, p, t, forward ? 'F' : 'B', i, layer, what), gpu(d, p, t));
    graph().depend(compute, step);
    graph().depend(communication, step);
    return step;
  }

  // Context parallelism: each attention layer's key-value ring among the cp replicas of a context
  // group (same stage and tensor rank), beside the layer: in the forward an all-gather of the
  // ranks' blocks by ring, from when the layer before it is done (its compute and collectives; the
  // layer's own projections make its keys and values), joined with the layer's compute and
  // collectives before what follows it (Megatron overlaps it with the attention's blocks alone:
  // a bound of the overlap); in the backward the same with the keys' and values' gradients too
  // (twice the bytes), from the next layer's backward. A stage's edge layers start their ring after
  // their own compute (nothing before them on the stage to start from). Runs after the
  // tensor-parallel and expert passes, whose ends it joins.
  void add_context_exchanges() {
    const int cp = plan_.cp;
    for (int j = 0; j < dp_ / cp; ++j)
      for (int p = 0; p < stages_; ++p) {
        const int first = first_layer(p), count = layer_count(p);
        for (int t = 0; t < at_.width(p); ++t)
          for (int i = 0; i < micro_batches_; ++i)
            for (int k = 0; k < count; ++k) {
              const double bytes = model_of(p).layers[first + k].context_exchange_bytes;
              if (bytes <= 0) continue;
              CollectiveSpec s;
              s.detail = detail_;
              s.op = CollectiveOp::AllGather;
              s.algorithm = CollectiveAlgorithm::Ring;
              for (int c = 0; c < cp; ++c) s.group.push_back(gpu(j * cp + c, p, t));
              for (const bool forward : {true, false}) {
                s.bytes = (forward ? 1 : 2) * cp * bytes;
                std::vector<OpId> from(cp);
                for (int c = 0; c < cp; ++c) {
                  const int before = forward ? k - 1 : k + 1;  // the layer the pass ran just before
                  const LayerOps& cell = grid_(j * cp + c, p, t, i, before >= 0 && before < count ? before : k);
                  from[c] = before >= 0 && before < count ? (forward ? cell.forward_done : cell.backward_done)
                                                          : (forward ? cell.forward : cell.backward);
                }
                const std::vector<OpId> ring =
                    add_collective(s, cluster_, fmt::format("cp{}.{}", collectives_++, forward ? "kv" : "kv-grad"), from);
                for (int c = 0; c < cp; ++c) {
                  LayerOps& cell = grid_(j * cp + c, p, t, i, k);
                  OpId& done = forward ? cell.forward_done : cell.backward_done;  // its tensor-parallel and expert collectives'
                  done = join(done, ring[c], "cp", j * cp + c, p, t, i, first + k, forward);
                }
              }
            }
      }
  }

  // Expert parallelism: each expert layer's all-to-alls (dispatch, combine) in both passes, among
  // the replicas of each expert-parallel group.
  void add_expert_all_to_alls() {
    const int ep = plan_.ep;
    for (int j = 0; j < dp_ / ep; ++j)
      for (int p = 0; p < stages_; ++p) {
        const int first = first_layer(p), count = layer_count(p);
        for (int t = 0; t < at_.width(p); ++t)
          for (int i = 0; i < micro_batches_; ++i)
            for (int k = 0; k < count; ++k) {
              const double bytes = model_of(p).layers[first + k].expert_alltoall_bytes;
              if (bytes <= 0) continue;
              CollectiveSpec s;
              s.detail = detail_;
              s.op = CollectiveOp::AllToAll;
              s.algorithm = CollectiveAlgorithm::Direct;
              s.bytes = bytes;
              for (int e = 0; e < ep; ++e) s.group.push_back(gpu(j * ep + e, p, t));
              for (OpId LayerOps::*done : {&LayerOps::forward_done, &LayerOps::backward_done}) {
                std::vector<OpId> ops(ep);
                for (int e = 0; e < ep; ++e) ops[e] = grid_(j * ep + e, p, t, i, k).*done;
                for (const char* what : {"dispatch", "combine"})
                  ops = add_collective(s, cluster_, fmt::format("ep{}.{}", collectives_++, what), ops);
                for (int e = 0; e < ep; ++e) grid_(j * ep + e, p, t, i, k).*done = ops[e];
              }
            }
      }
  }

  // Replica by replica and stage by stage, the dependencies along the stage's layers, then the
  // hand-over to the next stage (a stage's gradients come from the next stage's done operators:
  // every stage's first).
  void link_layers_and_stages() {
    for (int d = 0; d < dp_; ++d)
      for (int p = 0; p < stages_; ++p) {
        chain_layers(d, p);
        if (p + 1 < stages_) hand_over_to_next(d, p);
      }
  }

  void chain_layers(int d, int p) {
    const int count = layer_count(p);
    for (int t = 0; t < at_.width(p); ++t)
      for (int i = 0; i < micro_batches_; ++i) {
        for (int k = 0; k + 1 < count; ++k) {
          graph().depend(grid_(d, p, t, i, k).forward_done, grid_(d, p, t, i, k + 1).forward);
          graph().depend(grid_(d, p, t, i, k + 1).backward_done, grid_(d, p, t, i, k).backward);
        }
        // The loss: the last stage's backward follows its forward.
        if (p + 1 == stages_) graph().depend(grid_(d, p, t, i, count - 1).forward_done, grid_(d, p, t, i, count - 1).backward);
      }
  }

  // Each micro-batch's activations from stage p to stage p + 1 of replica d, and their gradients
  // back.
  void hand_over_to_next(int d, int p) {
    const int count = layer_count(p);
    const double activation_bytes = model_of(p).bytes_into(at_.stage_end(p));
    const int mine = at_.width(p), next = at_.width(p + 1);
    for (int i = 0; i < micro_batches_; ++i) {
      std::vector<OpId> sent(mine), first(next), gradient(next), last(mine);
      for (int t = 0; t < mine; ++t) {
        sent[t] = grid_(d, p, t, i, count - 1).forward_done;
        last[t] = grid_(d, p, t, i, count - 1).backward;
      }
      for (int t = 0; t < next; ++t) {
        first[t] = grid_(d, p + 1, t, i, 0).forward;
        gradient[t] = grid_(d, p + 1, t, i, 0).backward_done;
      }
      // Blocking sends: the senders' next operators, and the receivers' operators after which
      // they post their receives (the rendezvous).
      Handshake forward(mine, next), backward(next, mine);
      if (plan_.blocking_sends) {
        for (int t = 0; t < mine; ++t) {
          forward.after[t] = unit_next_[unit_index(d, p, t, i, true)];
          forward.ready[t] = done_of(d, t, unit_paired_[unit_index(d, p, t, i, true)]);
          backward.posted[t] = done_of(d, t, unit_previous_[unit_index(d, p, t, i, false)]);
          backward.step_start[t] = unit_step_start_[unit_index(d, p, t, i, false)];
        }
        for (int t = 0; t < next; ++t) {
          backward.after[t] = unit_next_[unit_index(d, p + 1, t, i, false)];
          backward.ready[t] = done_of(d, t, unit_paired_[unit_index(d, p + 1, t, i, false)]);
          forward.posted[t] = done_of(d, t, unit_previous_[unit_index(d, p + 1, t, i, true)]);
          forward.step_start[t] = unit_step_start_[unit_index(d, p + 1, t, i, true)];
        }
      }
      hand_over(d, p, p + 1, sent, first, forward, activation_bytes, fmt::format("act.d{}.p{}.m{}", d, p, i));
      hand_over(d, p + 1, p, gradient, last, backward, activation_bytes, fmt::format("actgrad.d{}.p{}.m{}", d, p + 1, i));
    }
  }

  // Where a unit of replica d and tensor rank t ends: its last layer's forward, or its first
  // layer's backward, and their tensor-parallel collectives (-1: none).
  OpId done_of(int d, int t, const UnitRef& u) const {
    if (u.stage < 0) return -1;
    return u.forward ? grid_(d, u.stage, t, u.micro_batch, layer_count(u.stage) - 1).forward_done
                     : grid_(d, u.stage, t, u.micro_batch, 0).backward_done;
  }

  // Where a unit (replica d, stage s, tensor rank t, micro-batch i, a pass) is in unit_next_;
  // unit_index(dp_, 0, 0, 0, true) is their number.
  std::size_t unit_index(int d, int s, int t, int i, bool forward) const {
    return ((((static_cast<std::size_t>(d) * stages_ + s) * max_width_ + t) * micro_batches_ + i) * 2) + (forward ? 0 : 1);
  }

  // Activations to the next stage, gradients back: rank t to rank t, whole, or (scatter-gather)
  // 1/tp each and all-gathered by the receiving stage's tensor-parallel group, or (sequence
  // parallelism) 1/tp each, which is what the receiving rank works on. Between stages of
  // different widths (stage_tp), each receiving rank gets 1/a from each of the a senders.
  // A point-to-point send between stages: on an NCCL cluster it pays ncclSend's costs
  // (nccl_send_cost).
  // With blocking sends (SendGates::after >= 0) the transfer ends in a step on the receiver's GPU
  // that the sender's next operator waits for too (and the first of the receiver's exchange step),
  // and it starts at the sender's exchange once the receiver has posted its receive: NCCL's send
  // waits for its receive, and Megatron posts a stage's receives with its sends, between the
  // schedule's steps, and waits for all of them before the next step.
  // The transfer leaves `sender`, the GPU that holds `from`'s result: `from` itself, or, where it
  // is elsewhere (a tensor-parallel collective's last step) or the send waits for more, a step on
  // `sender` after it.
  void send(OpId from, DeviceId sender, OpId to, double bytes, const SendGates& gates = {}) {
    const MessageCost cost = nccl_send_cost(cluster_, sender, graph().placement[to]);
    const bool elsewhere = graph().placement[from] != sender;
    const int n = gates.after >= 0 || elsewhere ? sends_++ : -1;  // names its steps
    if (elsewhere || gates.ready >= 0 || gates.posted >= 0) {  // the exchange: a step on the sender's GPU after all of them
      const OpId exchange = graph().add_communication_step(fmt::format("sent{}.exchange", n), sender);
      for (OpId before : {from, gates.ready, gates.posted})
        if (before >= 0) graph().depend(before, exchange);
      from = exchange;
    }
    if (gates.after < 0) {
      graph().graph.add_tensor(from, to, bytes * cost.wire_factor, false, 1, cost.overhead_s);
      return;
    }
    const OpId arrived = graph().add_communication_step(fmt::format("sent{}.arrived", n), graph().placement[to]);
    graph().graph.add_tensor(from, arrived, bytes * cost.wire_factor, false, 1, cost.overhead_s);
    for (OpId waits : {to, gates.after, gates.step_start})
      if (waits >= 0) graph().depend(arrived, waits);
  }

  void hand_over(int d, int from_stage, int to_stage, std::span<const OpId> from, std::span<const OpId> to, const Handshake& blocking,
                 double activation_bytes, const std::string& name) {
    const int tp = static_cast<int>(from.size());
    if (to.size() != from.size()) {
      for (std::size_t j = 0; j < to.size(); ++j)
        for (int t = 0; t < tp; ++t) send(from[t], gpu(d, from_stage, t), to[j], activation_bytes / tp, blocking.gates(t, j));
      return;
    }
    if (tp > 1 && plan_.sequence_parallel) {  // each rank holds its part of the sequence: nothing to gather
      for (int t = 0; t < tp; ++t) send(from[t], gpu(d, from_stage, t), to[t], activation_bytes / tp, blocking.gates(t, t));
      return;
    }
    if (tp == 1 || !plan_.scatter_gather) {
      for (int t = 0; t < tp; ++t) send(from[t], gpu(d, from_stage, t), to[t], activation_bytes, blocking.gates(t, t));
      return;
    }
    std::vector<OpId> received(tp);
    CollectiveSpec s;
    s.detail = detail_;
    s.op = CollectiveOp::AllGather;
    s.algorithm = CollectiveAlgorithm::Ring;
    s.bytes = activation_bytes;
    for (int t = 0; t < tp; ++t) {
      const DeviceId receiving = gpu(d, to_stage, t);
      s.group.push_back(receiving);
      received[t] = graph().add_communication_step(fmt::format("{}.t{}.received", name, t), receiving);
      send(from[t], gpu(d, from_stage, t), received[t], activation_bytes / tp, blocking.gates(t, t));
    }
    const std::vector<OpId> gathered = add_collective(s, cluster_, name, received);
    for (int t = 0; t < tp; ++t) {
      graph().depend(gathered[t], to[t]);
      if (blocking.step_start[t] >= 0) graph().depend(gathered[t], blocking.step_start[t]);  // gathered within the exchange
    }
  }

  // Gradient reduction across replicas, a bucket per layer, after its last backward; ZeRO's
  // all-gathers of parameters. Without experts, one group per stage and tensor rank: every
  // replica. With expert parallelism also one per expert shard e: the replicas d with d mod ep = e,
  // for the experts' part. A rank's stages go in the order their gradients are ready: the last
  // chunk's backwards run first.
  void add_gradient_reductions() {
    for (int r = 0; r < pp_; ++r)
      for (int c = plan_.virtual_stages - 1; c >= 0; --c) {
        const int p = c * pp_ + r;
        const StageMarks marks = marks_of(p);
        for (int t = 0; t < at_.width(p); ++t) {
          ReductionGroup all{p, t, {}, false, "grad"};
          for (int d = 0; d < dp_; ++d) all.replicas.push_back(d);
          reduce(all, marks);
          if (spreads_experts_)
            for (int e = 0; e < plan_.ep; ++e) {
              ReductionGroup shard{p, t, {}, true, fmt::format("grad.e{}", e)};
              for (int d = e; d < dp_; d += plan_.ep) shard.replicas.push_back(d);
              reduce(shard, marks);
            }
        }
      }
  }

  StageMarks marks_of(int s) const {
    StageMarks marks;
    for (const Unit& u : rank_orders_[s % pp_]) {
      if (u.chunk != s / pp_) continue;  // another of the rank's stages
      if (u.forward) {
        if (marks.first_forward < 0) marks.first_forward = u.micro_batch;
        if (marks.first_backward < 0) marks.forward_before_backward = u.micro_batch;
      } else {
        if (marks.first_backward < 0) marks.first_backward = u.micro_batch;
        marks.last_backward = u.micro_batch;
      }
    }
    return marks;
  }

  // The bytes the group reduces of `layer` (of its stage's model), per GPU.
  double reduced_bytes(const ReductionGroup& group, int layer) const {
    const Layer& l = model_of(group.stage).layers[layer];
    if (group.experts) return l.expert_parameter_bytes / plan_.ep;
    return l.parameter_bytes - (spreads_experts_ ? l.expert_parameter_bytes : 0.0);
  }

  // The group's collective of `layer` (the rank's GPUs are the same for all its stages).
  CollectiveSpec reduction_spec(const ReductionGroup& group, int layer, CollectiveOp op) const {
    CollectiveSpec s;
    s.detail = detail_;
    s.op = op;
    s.algorithm = op == CollectiveOp::AllReduce ? plan_.gradient_algorithm : zero_collective_algorithm(plan_.gradient_algorithm);
    for (int d : group.replicas) s.group.push_back(gpu(d, group.stage, group.tensor_rank));
    s.bytes = reduced_bytes(group, layer);
    return s;
  }

  // Per replica of the group, the `which` operator of micro-batch i, layer k of the stage.
  std::vector<OpId> per_replica(const ReductionGroup& group, OpId LayerOps::*which, int i, int k) const {
    std::vector<OpId> ops;
    for (int d : group.replicas) ops.push_back(grid_(d, group.stage, group.tensor_rank, i, k).*which);
    return ops;
  }

  // Per replica of the group, its GPU's last operator of the schedule (its last backward, or the
  // step after it that waits for its last send).
  std::vector<OpId> last_computes(const ReductionGroup& group) const {
    std::vector<OpId> ops;
    for (int d : group.replicas) ops.push_back(last_compute_.at(gpu(d, group.stage, group.tensor_rank)));
    return ops;
  }

  // Per replica, a communication step after both `ready` and `queued` (empty: `ready` itself).
  std::vector<OpId> after_both(const ReductionGroup& group, std::vector<OpId> ready, const std::vector<OpId>& queued,
                               const std::string& name) {
    if (queued.empty()) return ready;
    std::vector<OpId> both(group.replicas.size());
    for (std::size_t r = 0; r < both.size(); ++r) {
      const int d = group.replicas[r];
      both[r] = graph().add_communication_step(fmt::format("{}.r{}.queued", name, d), gpu(d, group.stage, group.tensor_rank));
      graph().depend(ready[r], both[r]);
      graph().depend(queued[r], both[r]);
    }
    return both;
  }

  // The group's collectives, on its queue: its buckets, ZeRO 3's gathers before the forwards,
  // and ZeRO 1 and 2's gathers of the updated parameters.
  void reduce(const ReductionGroup& group, const StageMarks& marks) {
    if (group.replicas.size() < 2) return;
    ReductionQueue& queue = queues_[{group.stage % pp_, group.tensor_rank, group.tag}];
    reduce_buckets(group, marks, queue);
    // ZeRO 3, and ZeRO 1 and 2 whose gathers overlap the (next) forward: before each layer's first.
    if (plan_.zero == 3 || (plan_.zero > 0 && plan_.overlap_param_gather)) gather_before_forwards(group, marks);
    // ZeRO 1 and 2: the updated parameters are all-gathered after the optimizer step, which
    // follows the group's last reduce-scatter (after the rank's last stage, chunk 0).
    if (group.stage < pp_ && !plan_.overlap_param_gather)
      for (const auto& [stage, layer] : queue.scattered)
        queue.tail = add_collective(reduction_spec(group, layer, CollectiveOp::AllGather), cluster_,
                                       fmt::format("{}.p{}.t{}.l{}.ag", group.tag, stage, group.tensor_rank, layer), queue.tail);
    for (std::size_t r = 0; r < queue.tail.size(); ++r)
      reduction_ends_[gpu(group.replicas[r], group.stage, group.tensor_rank)].push_back(queue.tail[r]);
  }

  // The buckets in the order they become ready (the backward runs from the last layer down), each
  // an all-reduce, or with ZeRO a reduce-scatter (ZeRO 3: and the parameters' gather for the
  // backward).
  void reduce_buckets(const ReductionGroup& group, const StageMarks& marks, ReductionQueue& queue) {
    const int p = group.stage, first = first_layer(p);
    std::vector<OpId> backward_gathers;  // ZeRO 3: the last gather for the backward, per replica
    for (int k = layer_count(p) - 1; k >= 0; --k) {
      const int layer = first + k;
      if (reduced_bytes(group, layer) <= 0) continue;
      const std::string name = fmt::format("{}.p{}.t{}.l{}", group.tag, p, group.tensor_rank, layer);
      const std::vector<OpId> ready = after_both(
          group, plan_.overlap_grad_reduce ? per_replica(group, &LayerOps::backward_done, marks.last_backward, k) : last_computes(group),
          queue.tail, name);
      if (plan_.zero == 0) {
        queue.tail = add_collective(reduction_spec(group, layer, CollectiveOp::AllReduce), cluster_, name, ready);
        continue;
      }
      queue.tail =
          add_collective(reduction_spec(group, layer, CollectiveOp::ReduceScatter), cluster_, name + ".rs", ready);
      if (plan_.zero < 3) {
        queue.scattered.emplace_back(p, layer);
        continue;
      }
      // ZeRO 3: the parameters are gathered again (they were freed) after the forward that
      // precedes the first backward, for the backward: prefetches in backward order, each
      // after the previous one (not queued behind the reductions).
      const std::vector<OpId> ready_for_backward = after_both(
          group, per_replica(group, &LayerOps::forward_done, marks.forward_before_backward, k), backward_gathers, name + ".agb");
      backward_gathers = add_collective(reduction_spec(group, layer, CollectiveOp::AllGather), cluster_,
                                           name + ".agb", ready_for_backward);
      const std::vector<OpId> backward_first = per_replica(group, &LayerOps::backward, marks.first_backward, k);
      for (std::size_t r = 0; r < backward_first.size(); ++r) graph().depend(backward_gathers[r], backward_first[r]);
    }
  }

  // ZeRO 3: the parameters are gathered before each layer's first forward, in forward order, one
  // after another (all at once, the first layer's gather would share the links with every other's).
  void gather_before_forwards(const ReductionGroup& group, const StageMarks& marks) {
    const int p = group.stage, first = first_layer(p);
    std::vector<OpId> previous;
    for (int k = 0; k < layer_count(p); ++k) {
      const int layer = first + k;
      if (reduced_bytes(group, layer) <= 0) continue;
      previous = add_collective(reduction_spec(group, layer, CollectiveOp::AllGather), cluster_,
                                   fmt::format("{}.p{}.t{}.l{}.agf", group.tag, p, group.tensor_rank, layer), previous);
      const std::vector<OpId> forward_first = per_replica(group, &LayerOps::forward, marks.first_forward, k);
      for (std::size_t r = 0; r < forward_first.size(); ++r) graph().depend(previous[r], forward_first[r]);
    }
  }

  const RankModels& models_;
  const ParallelPlan& plan_;
  const Cluster& cluster_;
  const CollectiveDetail detail_;
  const int pp_, dp_, micro_batches_;
  const int stages_;  // pp x virtual_stages (interleaved 1F1B: pipeline rank p holds stages p, p + pp, ...)
  const bool spreads_experts_;
  CompiledPlan out_;
  const PlanIndex at_;  // over out_.stage_starts
  LayerGrid grid_;
  std::vector<std::vector<Unit>> rank_orders_;  // per pipeline rank, its schedule
  long collectives_ = 0;                        // numbers the tensor-parallel and expert collectives
  long sends_ = 0;                              // numbers blocking sends' arrivals
  int max_width_ = 1;                           // the widest stage's tensor-parallel width
  std::vector<OpId> unit_next_;                 // blocking sends: per unit (unit_index), the operator after it on its GPU
  std::vector<UnitRef> unit_previous_;          // the unit before its exchange step (none: the first)
  std::vector<UnitRef> unit_paired_;            // a forward's: the backward of its exchange step (none: alone)
  std::vector<OpId> unit_step_start_;           // its exchange step's first operator, where not its own (-1)
  std::map<std::tuple<int, int, std::string>, ReductionQueue> queues_;
  std::map<std::tuple<int, int, double, int, int, int, int, int, int, std::vector<DeviceId>>, CollectiveSpec> resolved_;  // add_collective's
  std::unordered_map<DeviceId, OpId> last_compute_;                 // per GPU, its last compute operator
  std::unordered_map<DeviceId, std::vector<OpId>> reduction_ends_;  // per GPU, where its reductions end
};

CompiledPlan rank_compile_plan(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster,
                               CollectiveDetail detail) {
  return PlanCompiler(models, plan, cluster, detail).compile();
}

}  // namespace

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

std::vector<MemoryCurve> memory_over_time(const CompiledPlan& compiled, std::span<const double> start,
                                          std::span<const double> finish) {
  const std::size_t n = compiled.graph.graph.num_operators();
  if (start.size() != n || finish.size() != n)
    throw std::invalid_argument(fmt::format("memory_over_time: {} operators but {} starts and {} finishes", n, start.size(),
                                            finish.size()));
  struct Change {
    double time, bytes;
  };
  std::vector<std::vector<Change>> changes(compiled.gpus.size());
  for (const HeldActivation& a : compiled.activations) {
    changes[a.gpu_index].push_back({start[a.forward], a.bytes});
    changes[a.gpu_index].push_back({finish[a.backward], -a.bytes});
  }
  std::vector<MemoryCurve> curves(compiled.gpus.size());
  for (std::size_t i = 0; i < curves.size(); ++i) {
    std::vector<Change>& c = changes[i];
    // By time, frees first at a tie.
    std::sort(c.begin(), c.end(), [](const Change& a, const Change& b) { return a.time < b.time || (a.time == b.time && a.bytes < b.bytes); });
    double held = compiled.memory[i].total() - compiled.memory[i].activations;
    MemoryCurve& curve = curves[i];
    curve.emplace_back(0.0, held);
    for (const Change& x : c) {
      held += x.bytes;
      if (curve.back().first == x.time) curve.back().second = held;  // one point per instant
      else curve.emplace_back(x.time, held);
    }
  }
  return curves;
}

}  // namespace placesim
