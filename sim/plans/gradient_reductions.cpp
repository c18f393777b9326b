#include "sim/plans/plan_compiler.h"

#include <fmt/format.h>

namespace placesim::plans {

void PlanCompiler::add_gradient_reductions() {
  for (int r = 0; r < pp_; ++r)
    for (int c = plan_.virtual_stages - 1; c >= 0; --c) {
      const int p = c * pp_ + r;
      const StageMarks marks = marks_of(p);
      for (int t = 0; t < at_.width(p); ++t) {
        ReductionGroup all{p, t, {}, false, "grad"};
        for (int d = 0; d < dp_; ++d) all.replicas.push_back(d);
        all.built = replicas_;
        reduce(all, marks);
        if (spreads_experts_)
          for (int e = 0; e < plan_.ep; ++e) {
            ReductionGroup shard{p, t, {}, true, fmt::format("grad.e{}", e)};
            for (int d = e; d < dp_; d += plan_.ep) shard.replicas.push_back(d);
            shard.built = replicas_ / plan_.ep;
            reduce(shard, marks);
          }
      }
    }
}

StageMarks PlanCompiler::marks_of(int s) const {
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

double PlanCompiler::reduced_bytes(const ReductionGroup& group, int layer) const {
  const Layer& l = model_of(group.stage).layers[layer];
  if (group.experts) return l.expert_parameter_bytes / plan_.ep;
  return l.parameter_bytes - (spreads_experts_ ? l.expert_parameter_bytes : 0.0);
}

CollectiveSpec PlanCompiler::reduction_spec(const ReductionGroup& group, int layer, CollectiveOp op) const {
  CollectiveSpec s;
  s.detail = detail_;
  s.op = op;
  s.algorithm = op == CollectiveOp::AllReduce ? plan_.gradient_algorithm : zero_collective_algorithm(plan_.gradient_algorithm);
  for (int d : group.replicas) s.group.push_back(gpu(d, group.stage, group.tensor_rank));
  s.bytes = reduced_bytes(group, layer);
  // fp32 main gradients are reduced in fp32 (Megatron's bf16 path): twice the 16-bit parameters'
  // bytes; the parameters' all-gathers stay 16-bit.
  if (op != CollectiveOp::AllGather && model_of(group.stage).main_gradients == MainGradients::Fp32) s.bytes *= 2;
  return s;
}

std::vector<OpId> PlanCompiler::per_replica(const ReductionGroup& group, OpId LayerOps::*which, int i, int k) const {
  std::vector<OpId> ops;
  for (int r = 0; r < group.built; ++r) ops.push_back(grid_(group.replicas[r], group.stage, group.tensor_rank, i, k).*which);
  return ops;
}

std::vector<OpId> PlanCompiler::last_computes(const ReductionGroup& group) const {
  std::vector<OpId> ops;
  for (int r = 0; r < group.built; ++r) ops.push_back(last_compute_.at(gpu(group.replicas[r], group.stage, group.tensor_rank)));
  return ops;
}

std::vector<OpId> PlanCompiler::after_both(const ReductionGroup& group, std::vector<OpId> ready, const std::vector<OpId>& queued,
                             const std::string& name) {
  if (queued.empty()) return ready;
  std::vector<OpId> both(static_cast<std::size_t>(group.built));
  for (std::size_t r = 0; r < both.size(); ++r) {
    const int d = group.replicas[r];
    both[r] = graph().add_communication_step(fmt::format("{}.r{}.queued", name, d), gpu(d, group.stage, group.tensor_rank));
    graph().depend(ready[r], both[r]);
    graph().depend(queued[r], both[r]);
  }
  return both;
}

void PlanCompiler::reduce(const ReductionGroup& group, const StageMarks& marks) {
  if (group.replicas.size() < 2) return;
  ReductionQueue& queue = queues_[{group.stage % pp_, group.tensor_rank, group.tag}];
  reduce_buckets(group, marks, queue);
  // ZeRO 3, and ZeRO 1 and 2 whose gathers overlap the (next) forward: before each layer's first.
  if (plan_.zero == 3 || (plan_.zero > 0 && plan_.overlap_param_gather)) gather_before_forwards(group, marks);
  // ZeRO 1 and 2: the updated parameters are all-gathered after the optimizer step, which
  // follows the group's last reduce-scatter (after the rank's last stage, chunk 0).
  if (group.stage < pp_ && !plan_.overlap_param_gather)
    for (const auto& [stage, layer] : queue.scattered)
      queue.tail = add_group_collective(group, reduction_spec(group, layer, CollectiveOp::AllGather),
                                     fmt::format("{}.p{}.t{}.l{}.ag", group.tag, stage, group.tensor_rank, layer), queue.tail);
  for (std::size_t r = 0; r < queue.tail.size(); ++r)
    reduction_ends_[gpu(group.replicas[r], group.stage, group.tensor_rank)].push_back(queue.tail[r]);
}

void PlanCompiler::reduce_buckets(const ReductionGroup& group, const StageMarks& marks, ReductionQueue& queue) {
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
      queue.tail = add_group_collective(group, reduction_spec(group, layer, CollectiveOp::AllReduce), name, ready);
      continue;
    }
    queue.tail =
        add_group_collective(group, reduction_spec(group, layer, CollectiveOp::ReduceScatter), name + ".rs", ready);
    if (plan_.zero < 3) {
      queue.scattered.emplace_back(p, layer);
      continue;
    }
    // ZeRO 3: the parameters are gathered again (they were freed) after the forward that
    // precedes the first backward, for the backward: prefetches in backward order, each
    // after the previous one (not queued behind the reductions).
    std::vector<OpId> ready_for_backward = after_both(
        group, per_replica(group, &LayerOps::forward_done, marks.forward_before_backward, k), backward_gathers, name + ".agb");
    // A prefetch depth n: issued as the backward of the layer n after it begins, once the layer
    // after that one is done.
    if (const int ahead = k + plan_.zero3_prefetch + 1; plan_.zero3_prefetch > 0 && ahead < layer_count(p))
      ready_for_backward = after_both(group, per_replica(group, &LayerOps::backward_done, marks.first_backward, ahead),
                                      ready_for_backward, name + ".agb.ahead");
    backward_gathers = add_group_collective(group, reduction_spec(group, layer, CollectiveOp::AllGather),
                                         name + ".agb", ready_for_backward);
    const std::vector<OpId> backward_first = per_replica(group, &LayerOps::backward, marks.first_backward, k);
    for (std::size_t r = 0; r < backward_first.size(); ++r) graph().depend(backward_gathers[r], backward_first[r]);
  }
}

void PlanCompiler::gather_before_forwards(const ReductionGroup& group, const StageMarks& marks) {
  const int p = group.stage, first = first_layer(p);
  std::vector<OpId> previous;
  for (int k = 0; k < layer_count(p); ++k) {
    const int layer = first + k;
    if (reduced_bytes(group, layer) <= 0) continue;
    const std::string name = fmt::format("{}.p{}.t{}.l{}.agf", group.tag, p, group.tensor_rank, layer);
    // A prefetch depth n: the gather is issued as the forward of the layer n before it begins,
    // once the layer before that one is done.
    const int back = k - plan_.zero3_prefetch - 1;
    const std::vector<OpId> ready =
        plan_.zero == 3 && plan_.zero3_prefetch > 0 && back >= 0
            ? after_both(group, per_replica(group, &LayerOps::forward_done, marks.first_forward, back), previous, name)
            : previous;
    previous = add_group_collective(group, reduction_spec(group, layer, CollectiveOp::AllGather), name, ready);
    const std::vector<OpId> forward_first = per_replica(group, &LayerOps::forward, marks.first_forward, k);
    for (std::size_t r = 0; r < forward_first.size(); ++r) graph().depend(previous[r], forward_first[r]);
  }
}

}  // namespace placesim::plans
