#include "sim/plans/plan_internals.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

#include "sim/core/units.h"

namespace placesim {

namespace plans {

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


}  // namespace plans

using plans::StageSums;
using plans::stage_sums;

StageActivations stage_activations(const LayerModel& model, int first, int end, const ParallelPlan& plan) {
  const StageSums sums = stage_sums(model, first, end, plan);
  return {sums.stash, sums.workspace};
}

GpuMemory stage_memory(const LayerModel& model, int first, int end, const ParallelPlan& plan, int in_flight) {
  const StageSums sums = stage_sums(model, first, end, plan);
  return gpu_memory(sums.dense, sums.experts, sums.stash, sums.buffer, plan, model.main_gradients, in_flight, sums.workspace);
}

namespace plans {


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
      mem = gpu_memory(rank.dense, rank.experts, 0.0, rank.buffer, plan, models[p]->main_gradients, 0);
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


}  // namespace plans

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
