#include "sim/plans/plan_compiler.h"

#include <fmt/format.h>

#include "sim/collectives/nccl.h"

namespace placesim::plans {

void PlanCompiler::link_layers_and_stages() {
  for (int d = 0; d < replicas_; ++d)
    for (int p = 0; p < stages_; ++p) {
      chain_layers(d, p);
      if (p + 1 < stages_) hand_over_to_next(d, p);
    }
}

void PlanCompiler::chain_layers(int d, int p) {
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

void PlanCompiler::hand_over_to_next(int d, int p) {
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

void PlanCompiler::send(OpId from, DeviceId sender, OpId to, double bytes, const SendGates& gates) {
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

void PlanCompiler::hand_over(int d, int from_stage, int to_stage, std::span<const OpId> from, std::span<const OpId> to, const Handshake& blocking,
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

}  // namespace placesim::plans
