#include "sim/plans/plan_folding.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "sim/engines/folded_network.h"
#include "sim/plans/plan_internals.h"

namespace placesim {

namespace {

// Why moving every GPU of the plan on by `block` replicas does not map servers onto servers GPU
// for GPU ("" when it does).
std::string shift_problem(const ParallelPlan& plan, const Cluster& cluster, int block,
                          const std::unordered_map<int, DeviceId>& first_gpu) {
  const plans::PlanGpus gpu_of(plan);
  std::unordered_map<int, int> server_to;  // where the shift takes each server
  for (int d = 0; d < plan.dp; ++d)
    for (int p = 0; p < plan.pp; ++p)
      for (int t = 0; t < plan.width(p); ++t) {
        const Device& a = cluster.device(gpu_of(d, p, t));
        const DeviceId moved = gpu_of((d + block) % plan.dp, p, t);
        const Device& b = cluster.device(moved);
        if (a.compute_speed != b.compute_speed || a.memory_bytes != b.memory_bytes)
          return fmt::format("{} and {} differ in speed or memory", a.name, b.name);
        if (gpu_of(d, p, t) - first_gpu.at(a.server) != moved - first_gpu.at(b.server))
          return fmt::format("{} and {} sit at different places in their servers", a.name, b.name);
        const auto [it, fresh] = server_to.try_emplace(a.server, b.server);
        if (!fresh && it->second != b.server)
          return fmt::format("server {} holds GPUs of replicas that do not move together", a.server);
      }
  return "";
}

// The group's structure as the collectives' shapes read it: per rank, which of the group's servers
// it is on (numbered as first met) and its place in that server. Groups alike get alike shapes.
std::vector<int> group_structure(const std::vector<DeviceId>& group, const Cluster& cluster,
                                 const std::unordered_map<int, DeviceId>& first_gpu) {
  std::unordered_map<int, int> server_number;
  std::vector<int> out;
  for (const DeviceId g : group) {
    const int server = cluster.device(g).server;
    out.push_back(server_number.try_emplace(server, static_cast<int>(server_number.size())).first->second);
    out.push_back(g - first_gpu.at(server));
  }
  return out;
}

// Why some gradient reduction of the plan does not fold into blocks of `block` replicas. Groups
// of one structure are checked once.
std::string reductions_problem(const ParallelPlan& plan, const Cluster& cluster, int block,
                               const std::unordered_map<int, DeviceId>& first_gpu) {
  const plans::PlanGpus gpu_of(plan);
  std::vector<CollectiveOp> ops{plan.zero == 0 ? CollectiveOp::AllReduce : CollectiveOp::ReduceScatter};
  if (plan.zero > 0) ops.push_back(CollectiveOp::AllGather);
  const CollectiveAlgorithm algorithm = plan.zero == 0 ? plan.gradient_algorithm : zero_collective_algorithm(plan.gradient_algorithm);
  std::map<std::pair<std::vector<int>, int>, std::string> checked;  // (structure, ranks per block) -> problem
  auto problem = [&](CollectiveSpec& s, int ranks) -> const std::string& {
    const auto key = std::pair{group_structure(s.group, cluster, first_gpu), ranks};
    const auto it = checked.find(key);
    if (it != checked.end()) return it->second;
    std::string why;
    for (const CollectiveOp op : ops) {
      s.op = op;
      if (why.empty()) why = collective_fold_problem(s, cluster, ranks);
    }
    return checked.emplace(key, why).first->second;
  };
  CollectiveSpec s;
  s.algorithm = algorithm;
  s.bytes = 1e6;
  for (int p = 0; p < plan.pp; ++p)
    for (int t = 0; t < plan.width(p); ++t) {
      s.group.clear();
      for (int d = 0; d < plan.dp; ++d) s.group.push_back(gpu_of(d, p, t));
      if (const std::string& why = problem(s, block); !why.empty())
        return fmt::format("the gradient reduction of stage {}, tensor rank {}: {}", p, t, why);
      if (plan.ep > 1 && plan.dp / plan.ep > 1) {
        s.group.clear();
        for (int d = 0; d < plan.dp; d += plan.ep) s.group.push_back(gpu_of(d, p, t));
        if (const std::string& why = problem(s, block / plan.ep); !why.empty())
          return fmt::format("the experts' gradient reduction of stage {}, tensor rank {}: {}", p, t, why);
      }
    }
  return "";
}

// The plan with as few micro-batches as its schedule allows (one; interleaved, pp): the same
// routes, a fraction of the graph.
ParallelPlan few_micro_batches(const ParallelPlan& plan) {
  ParallelPlan small = plan;
  small.micro_batches = std::min(plan.micro_batches, plan.virtual_stages > 1 ? plan.pp : 1);
  return small;
}

GraphEstimate scaled(GraphEstimate e, double factor) {
  e.operators *= factor;
  e.tensors *= factor;
  e.bytes *= factor;
  return e;
}

// A graph's size, scaled by `factor` (its copies, its micro-batches).
GraphEstimate size_of(const CompiledPlan& c, double factor) {
  GraphEstimate e;
  e.operators = static_cast<double>(c.graph.graph.num_operators()) * factor;
  e.tensors = static_cast<double>(c.graph.graph.num_tensors()) * factor;
  e.bytes = e.operators * kBytesPerOperator + e.tensors * kBytesPerTensor;
  return e;
}

// The graph compiled at `replicas` grown to the plan's micro-batches: from its size at few of them
// (`few`, compiled already when given) and, where the plan has at least twice as many, at twice as
// many, along the line through both (what the micro-batches add is linear in them; the gradient
// reductions and optimizer steps are not); else scaled, a bound.
GraphEstimate grown(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                    int replicas, const CompiledPlan* few) {
  const ParallelPlan one = few_micro_batches(plan);
  std::optional<CompiledPlan> own;
  if (!few) few = &own.emplace(compile_plan(workload, one, cluster, detail, replicas));
  const double m = plan.micro_batches, m0 = one.micro_batches;
  if (m < 2 * m0) return size_of(*few, m / m0);
  ParallelPlan two = plan;
  two.micro_batches = static_cast<int>(2 * m0);
  const GraphEstimate a = size_of(*few, 1), b = size_of(compile_plan(workload, two, cluster, detail, replicas), 1);
  GraphEstimate e;
  e.operators = a.operators + (b.operators - a.operators) * (m - m0) / m0;
  e.tensors = a.tensors + (b.tensors - a.tensors) * (m - m0) / m0;
  e.bytes = e.operators * kBytesPerOperator + e.tensors * kBytesPerTensor;
  return e;
}

}  // namespace

std::vector<int> fold_blocks(const ParallelPlan& plan, const Cluster& cluster, std::string* why_none) {
  std::vector<int> blocks;
  const int base = std::lcm(std::max(plan.cp, 1), std::max(plan.ep, 1));
  std::unordered_map<int, DeviceId> first_gpu;  // each server's first GPU (for local indices)
  for (DeviceId g = 0; g < cluster.num_devices(); ++g) first_gpu.try_emplace(cluster.device(g).server, g);
  std::string first_problem;
  for (int b = base; b < plan.dp; b += base) {
    if (plan.dp % b != 0) continue;
    // A ring or an exchange that folds into blocks of b folds into any multiple of b.
    const bool multiple = std::any_of(blocks.begin(), blocks.end(), [&](int smaller) { return b % smaller == 0; });
    std::string why = shift_problem(plan, cluster, b, first_gpu);
    if (why.empty() && !multiple) why = reductions_problem(plan, cluster, b, first_gpu);
    if (why.empty()) blocks.push_back(b);
    else if (first_problem.empty()) first_problem = fmt::format("blocks of {} replicas: {}", b, why);
  }
  if (why_none && blocks.empty())
    *why_none = plan.dp <= base ? fmt::format("{} replicas, no block of them repeats", plan.dp) : first_problem;
  return blocks;
}

GraphEstimate estimate_graph(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                             CollectiveDetail detail, int replicas) {
  const ParallelPlan few = few_micro_batches(plan);
  if (replicas > 0 && replicas < plan.dp)
    return grown(workload, plan, cluster, detail, replicas, nullptr);
  if (const std::vector<int> blocks = fold_blocks(plan, cluster); !blocks.empty())
    return scaled(grown(workload, plan, cluster, detail, blocks.front(), nullptr), static_cast<double>(plan.dp) / blocks.front());
  // No block to fold into: the full graph at few micro-batches, unless that alone would be large
  // (a bound of its compute operators: each GPU's layers, forward and backward, over ten steps each).
  const long gpus = plan.gpus_per_replica() * plan.dp;
  const double layers = static_cast<double>(workload.by_tensor_parallel.begin()->second.layers.size());
  const double per_micro_batch = static_cast<double>(gpus) * layers / plan.pp * 2 * 10;
  if (per_micro_batch * few.micro_batches < 2e7) return grown(workload, plan, cluster, detail, 0, nullptr);
  GraphEstimate e;
  e.operators = per_micro_batch * plan.micro_batches;
  e.tensors = 2 * e.operators;
  e.bytes = e.operators * kBytesPerOperator + e.tensors * kBytesPerTensor;
  return e;
}

FoldChoice choose_fold(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                       FoldMode mode, double full_limit_bytes) {
  FoldChoice choice;
  choice.replicas = plan.dp;
  std::string why_none;
  const std::vector<int> blocks = mode == FoldMode::Full ? std::vector<int>{} : fold_blocks(plan, cluster, &why_none);
  if (blocks.empty()) {
    choice.full = choice.chosen = estimate_graph(workload, plan, cluster, detail, 0);
    choice.reason = mode == FoldMode::Full ? "the full graph, as asked" : fmt::format("the full graph: {}", why_none);
    return choice;
  }
  // One graph, folded into the smallest block at few micro-batches, answers for every larger block
  // too (its routes' copies regrouped as the larger fold would have them: fold_exact_in_blocks),
  // and gives the sizes.
  const int smallest = blocks.front();
  const CompiledPlan c = compile_plan(workload, few_micro_batches(plan), cluster, detail, smallest);
  choice.full = scaled(grown(workload, plan, cluster, detail, smallest, &c), static_cast<double>(plan.dp) / smallest);
  std::string first_split;
  for (const int b : blocks) {
    if (b % smallest != 0 || (plan.dp / smallest) % (b / smallest) != 0) continue;
    std::string why;
    if (fold_exact_in_blocks(c.graph.graph, c.graph.placement, *c.graph.fold, cluster, b / smallest, &why)) {
      choice.replicas = b;
      choice.copies = plan.dp / b;
      choice.chosen = scaled(choice.full, 1.0 / choice.copies);
      choice.reason = fmt::format("{} data-parallel replicas as {} copies of {}: exact, every copy's transfers see the network alike",
                                  plan.dp, choice.copies, b == 1 ? std::string("one") : fmt::format("a block of {}", b));
      return choice;
    }
    if (first_split.empty()) first_split = why;
  }
  if (mode == FoldMode::Auto && choice.full.bytes <= full_limit_bytes) {
    choice.chosen = choice.full;
    choice.reason = fmt::format("the full graph: no block of replicas folds exactly ({}), and the whole graph is small",
                                first_split);
    return choice;
  }
  choice.replicas = smallest;
  choice.copies = plan.dp / smallest;
  choice.exact = false;
  choice.chosen = scaled(choice.full, 1.0 / choice.copies);
  choice.reason = fmt::format("{} copies of {} replica{}, approximate: {}; each transfer takes its slowest copy's time "
                              "(the full graph: --full-graph)",
                              choice.copies, smallest, smallest == 1 ? "" : "s", first_split);
  return choice;
}

}  // namespace placesim
