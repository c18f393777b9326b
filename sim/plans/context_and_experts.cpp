#include "sim/plans/plan_compiler.h"

#include <fmt/format.h>

namespace placesim::plans {

void PlanCompiler::add_context_exchanges() {
  const int cp = plan_.cp;
  for (int j = 0; j < replicas_ / cp; ++j)
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

void PlanCompiler::add_expert_all_to_alls() {
  const int ep = plan_.ep;
  for (int j = 0; j < replicas_ / ep; ++j)
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

}  // namespace placesim::plans
