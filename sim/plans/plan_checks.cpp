#include "sim/plans/plan_internals.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

using plans::PlanGpus;
using plans::RankModels;

namespace {


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

namespace plans {

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

}  // namespace plans

}  // namespace placesim
