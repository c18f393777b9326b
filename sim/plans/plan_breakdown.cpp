#include "sim/plans/plan_breakdown.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>

namespace placesim {

namespace {

enum class Kind { Unknown, TensorParallel, Pipeline, ContextParallel, Expert, DataParallel };

bool starts_with_tag(std::string_view name, std::string_view tag) {
  // "tp12.rs", "grad.p0.t0.l3", "act.d0.p1.m4": the tag then a digit, a dot or nothing.
  if (name.substr(0, tag.size()) != tag) return false;
  if (name.size() == tag.size()) return true;
  const char next = name[tag.size()];
  return next == '.' || (next >= '0' && next <= '9');
}

// The kind of a communication step, from the names the plan compiler gives (sim/plans): a
// collective's steps start with its name, a send's with "sent", the stage's last send step ends
// in ".sent"; joins and queues say nothing by themselves.
Kind kind_of(std::string_view name) {
  if (starts_with_tag(name, "tp")) return Kind::TensorParallel;
  if (starts_with_tag(name, "cp")) return Kind::ContextParallel;
  if (starts_with_tag(name, "ep")) return Kind::Expert;
  if (starts_with_tag(name, "grad") || starts_with_tag(name, "dp")) return Kind::DataParallel;
  if (starts_with_tag(name, "act") || starts_with_tag(name, "actgrad") || starts_with_tag(name, "sent") ||
      name.ends_with(".sent"))
    return Kind::Pipeline;
  return Kind::Unknown;
}

class Attribution {
 public:
  Attribution(const Graph& graph, std::span<const DeviceId> placement, const Schedule& schedule)
      : graph_(graph), placement_(placement), s_(schedule) {}

  // The input of `op` that arrived last, as far as the schedule tells: the predecessor that
  // finished last (a transfer's arrival is not kept; its source's finish orders the inputs).
  OpId binding_input(OpId op) const {
    OpId best = -1;
    for (EdgeId e : graph_.in_edges(op)) {
      const OpId p = graph_.tensor(e).src;
      if (best < 0 || s_.finish[p] > s_.finish[best]) best = p;
    }
    return best;
  }

  // From the communication step (or cross-GPU input) `from` back to the compute operator the
  // communication began at: that operator (-1: none) and the first known kind on the way.
  std::pair<OpId, Kind> chain(OpId from) const {
    Kind kind = Kind::Unknown;
    OpId op = from;
    while (op >= 0 && graph_.op(op).communication) {
      if (kind == Kind::Unknown) kind = kind_of(graph_.op(op).name);
      op = binding_input(op);
    }
    return {op, kind};
  }

  // Gives [begin, end) of `gpu`'s idle time, ended by `waiter` starting (or the iteration ending,
  // waiter the last communication), to the bubble and a kind of communication.
  void idle(DeviceId gpu, double begin, double end, OpId waiter, bool waiter_is_input, TimeBreakdown& out) const {
    if (end <= begin) return;
    const OpId input = waiter_is_input ? waiter : binding_input(waiter);
    if (input < 0) {
      out.bubble += end - begin;
      return;
    }
    const bool communication = graph_.op(input).communication;
    auto [source, kind] = communication ? chain(input) : std::pair<OpId, Kind>{input, Kind::Unknown};
    if (!communication && placement_[input] == gpu) {  // the GPU's own earlier operator: nothing in flight
      out.bubble += end - begin;
      return;
    }
    // A compute operator's output sent straight to another GPU's operator: a stage's hand-over.
    if (kind == Kind::Unknown && !communication) kind = Kind::Pipeline;
    double started = begin;
    if (source >= 0 && placement_[source] != gpu) started = std::clamp(s_.finish[source], begin, end);
    out.bubble += started - begin;
    add(kind, end - started, out);
  }

  static void add(Kind kind, double seconds, TimeBreakdown& out) {
    switch (kind) {
      case Kind::TensorParallel: out.tensor_parallel += seconds; break;
      case Kind::Pipeline: out.pipeline += seconds; break;
      case Kind::ContextParallel: out.context_parallel += seconds; break;
      case Kind::Expert: out.expert += seconds; break;
      case Kind::DataParallel: out.data_parallel += seconds; break;
      case Kind::Unknown: out.other_communication += seconds; break;
    }
  }

 private:
  const Graph& graph_;
  std::span<const DeviceId> placement_;
  const Schedule& s_;
};

}  // namespace

std::vector<std::pair<std::string, double>> TimeBreakdown::parts() const {
  return {{"compute", compute},
          {"optimizer", optimizer},
          {"bubble", bubble},
          {"tensor_parallel", tensor_parallel},
          {"pipeline", pipeline},
          {"context_parallel", context_parallel},
          {"expert", expert},
          {"data_parallel", data_parallel},
          {"other_communication", other_communication}};
}

nlohmann::json breakdown_json(const TimeBreakdown& b) {
  nlohmann::json parts = {{"slowest_gpu", b.gpu}};
  for (const auto& [name, seconds] : b.parts()) parts[name] = seconds;
  return parts;
}

TimeBreakdown time_breakdown(const Graph& g, std::span<const DeviceId> placement, const Schedule& schedule, double latency) {
  TimeBreakdown out;
  // The slowest GPU and its operators in the order they ran.
  double last = -1;
  for (OpId op = 0; op < static_cast<OpId>(g.num_operators()); ++op)
    if (!g.op(op).communication && schedule.finish[op] > last) last = schedule.finish[op], out.gpu = placement[op];
  if (out.gpu < 0) return out;
  std::vector<OpId> order;
  for (OpId op = 0; op < static_cast<OpId>(g.num_operators()); ++op)
    if (!g.op(op).communication && placement[op] == out.gpu) order.push_back(op);
  std::sort(order.begin(), order.end(), [&](OpId a, OpId b) {
    return std::tie(schedule.start[a], schedule.finish[a], a) < std::tie(schedule.start[b], schedule.finish[b], b);
  });
  const Attribution attribution(g, placement, schedule);
  double now = 0;
  for (OpId op : order) {
    attribution.idle(out.gpu, now, schedule.start[op], op, false, out);
    const double busy = schedule.finish[op] - std::max(now, schedule.start[op]);
    if (busy > 0) (g.op(op).type == "optimizer" ? out.optimizer : out.compute) += busy;
    now = std::max(now, schedule.finish[op]);
  }
  // After the last operator: whatever ends last (a reduction no operator of this GPU waits for).
  if (latency > now) {
    OpId latest = -1;
    for (OpId op = 0; op < static_cast<OpId>(g.num_operators()); ++op)
      if (latest < 0 || schedule.finish[op] > schedule.finish[latest]) latest = op;
    attribution.idle(out.gpu, now, latency, latest, true, out);
  }
  return out;
}

}  // namespace placesim
