#include "sim/plans/plan_compiler.h"

#include <algorithm>
#include <fmt/format.h>

namespace placesim::plans {

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


void PlanCompiler::add_compute() {
  // A stage charged recomputation re-runs each layer's forward, at its backward time (NEST's
  // price), before the layer's backward: the backward operator takes both.
  std::vector<bool> recomputes(static_cast<std::size_t>(stages_));
  for (int p = 0; p < stages_; ++p) recomputes[p] = stage_recomputes(model_of(p), plan_, p, stages_);
  for (int d = 0; d < replicas_; ++d)
    for (int r = 0; r < pp_; ++r)
      for (int t = 0; t < at_.width(r); ++t) add_gpu_compute(d, r, t, recomputes);
}

void PlanCompiler::add_gpu_compute(int d, int r, int t, const std::vector<bool>& recomputes) {
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

void PlanCompiler::add_stashes() {
  for (int d = 0; d < replicas_; ++d)
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

}  // namespace placesim::plans
