#include "sim/plans/plan_compiler.h"

#include <fmt/format.h>

namespace placesim::plans {

std::vector<OpId> PlanCompiler::tp_allreduce(int d, int p, const std::vector<OpId>& ops, double bytes, bool backward) {
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

void PlanCompiler::add_tensor_parallel_collectives() {
  for (int d = 0; d < replicas_; ++d)
    for (int p = 0; p < stages_; ++p) {
      const int count = layer_count(p);
      for (int i = 0; i < micro_batches_; ++i) {
        for (int k = 0; k < count; ++k) tensor_parallel_collective(d, p, i, k, true);
        for (int k = count - 1; k >= 0; --k) tensor_parallel_collective(d, p, i, k, false);  // backward order
      }
    }
}

void PlanCompiler::tensor_parallel_collective(int d, int p, int i, int k, bool forward) {
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

}  // namespace placesim::plans
