#include "sim/plans/plan_compiler.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <stdexcept>

#include "sim/collectives/nccl.h"

namespace placesim::plans {

PlanCompiler::PlanCompiler(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                           int replicas)
    : models_(models),
      plan_(plan),
      cluster_(cluster),
      detail_(detail),
      pp_(plan.pp),
      dp_(plan.dp),
      replicas_(replicas > 0 ? replicas : plan.dp),
      micro_batches_(plan.micro_batches),
      stages_(plan.pp * plan.virtual_stages),
      spreads_experts_(plan_spreads_experts(*models.front(), plan)),
      out_(rank_plan_layout(models, plan, cluster)),
      at_(plan, stages_, static_cast<int>(models.front()->layers.size()), out_.stage_starts),
      grid_(at_, replicas_, micro_batches_) {
  for (int p = 0; p < pp_; ++p)
    rank_orders_.push_back(schedule_of(plan.schedule, p, pp_, micro_batches_, plan.virtual_stages));
  for (int p = 0; p < stages_; ++p) max_width_ = std::max(max_width_, at_.width(p));
  if (plan.blocking_sends) {
    unit_next_.assign(unit_index(replicas_, 0, 0, 0, true), -1);
    unit_previous_.assign(unit_next_.size(), UnitRef{});
    unit_paired_.assign(unit_next_.size(), UnitRef{});
    unit_step_start_.assign(unit_next_.size(), -1);
  }
}

CompiledPlan PlanCompiler::compile() && {
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
  if (replicas_ < dp_) out_.graph.fold = std::make_shared<Folding>(folding());
  return std::move(out_);
}

std::vector<OpId> PlanCompiler::add_collective(const CollectiveSpec& spec, const Cluster& cluster, const std::string& name,
                                               std::span<const OpId> after, int represented) {
  const auto key = std::make_tuple(static_cast<int>(spec.op), static_cast<int>(spec.algorithm), spec.bytes, spec.root, spec.chunks,
                                   static_cast<int>(spec.detail), static_cast<int>(spec.protocol), spec.channels,
                                   spec.tuned * 4 + spec.pin_protocol * 2 + spec.pin_channels, spec.group);
  auto it = resolved_.find(key);
  if (it == resolved_.end()) it = resolved_.emplace(key, nccl_resolved(spec, cluster)).first;
  // Its results may be held by one step for all ranks (a condensed ring's barrier): whatever
  // leaves a rank after it leaves from a step on the rank's GPU (send).
  return append_collective(graph(), it->second, cluster, name, after, /*results_on_ranks=*/false, represented);
}

std::vector<OpId> PlanCompiler::add_group_collective(const ReductionGroup& group, const CollectiveSpec& spec,
                                                     const std::string& name, std::span<const OpId> after) {
  const bool folded = group.built < static_cast<int>(group.replicas.size());
  return add_collective(spec, cluster_, name, after, folded ? group.built : 0);
}

Folding PlanCompiler::folding() const {
  const long per_replica = plan_.gpus_per_replica();
  const long block = per_replica * replicas_;
  std::vector<DeviceId> representatives(out_.gpus.begin(), out_.gpus.begin() + block);
  return make_folding(
      dp_ / replicas_, std::move(representatives),
      [&](int i, int j) { return out_.gpus[static_cast<std::size_t>(i + j * block)]; }, cluster_.num_devices(),
      fmt::format("{} data-parallel replicas as {} copies of {}", dp_, dp_ / replicas_,
                  replicas_ == 1 ? std::string("one") : fmt::format("a block of {}", replicas_)));
}

OpId PlanCompiler::join(OpId compute, OpId communication, const char* what, int d, int p, int t, int i, int layer, bool forward) {
  const OpId step = graph().add_communication_step(
      fmt::format("d{}.p{}.t{}.{}{}.{}.{}-join", d, p, t, forward ? 'F' : 'B', i, layer, what), gpu(d, p, t));
  graph().depend(compute, step);
  graph().depend(communication, step);
  return step;
}

CompiledPlan rank_compile_plan(const RankModels& models, const ParallelPlan& plan, const Cluster& cluster,
                               CollectiveDetail detail, int replicas) {
  if (replicas == plan.dp) replicas = 0;
  const int groups = std::lcm(plan.cp, plan.ep);
  if (replicas != 0 && (replicas < 0 || plan.dp % replicas != 0 || replicas % groups != 0))
    throw std::invalid_argument(fmt::format("a folded plan compiles a block of replicas that divides dp ({}) and holds whole "
                                            "context and expert groups ({}), got {}",
                                            plan.dp, groups, replicas));
  return PlanCompiler(models, plan, cluster, detail, replicas).compile();
}

}  // namespace placesim::plans
