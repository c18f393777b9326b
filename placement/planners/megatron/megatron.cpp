#include "placement/planners/megatron/megatron.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

std::vector<int> megatron_stages(const LayerModel& model, int pp, MegatronSplit split) {
  const int L = static_cast<int>(model.layers.size());
  std::vector<int> blocks;  // indices of the blocks
  for (int l = 0; l < L; ++l)
    if (model.layers[l].block) blocks.push_back(l);
  if (blocks.empty())
    for (int l = 0; l < L; ++l) blocks.push_back(l);
  const int B = static_cast<int>(blocks.size());
  if (pp < 1 || pp > B)
    throw std::invalid_argument(fmt::format("megatron: {} pipeline stages for the {} blocks of {}", pp, B, model.name));
  std::vector<int> starts(pp, 0);
  const int per = (B + pp - 1) / pp;  // ceil and nest: per stage
  for (int p = 1, taken = 0; p < pp; ++p) {
    switch (split) {
      case MegatronSplit::Even:
        taken += B / pp + (p - 1 < B % pp ? 1 : 0);  // blocks of stage p - 1
        starts[p] = blocks[taken];
        break;
      case MegatronSplit::Ceil:
        if (p * per >= B)
          throw std::invalid_argument(fmt::format("megatron: split ceil gives {} blocks per stage ({} blocks over {} stages), "
                                                  "which leaves stage {} without a block",
                                                  per, B, pp, p));
        starts[p] = blocks[p * per];
        break;
      case MegatronSplit::Nest:  // over the layers, NEST's renumbered ids
        if (p * per >= L)
          throw std::invalid_argument(fmt::format("megatron: split nest gives {} layers per stage ({} blocks over {} stages), "
                                                  "which leaves stage {} without a layer of the {}",
                                                  per, B, pp, p, L));
        starts[p] = p * per;
        break;
    }
  }
  return starts;
}

namespace {

// The plan the options write; throws std::invalid_argument when it cannot run, saying why.
PlanResult megatron_plan(const MegatronConfig& c, const LayerWorkload& workload, const Cluster& cluster) {
  const LayerModel* found = nullptr;
  try {
    found = &workload.at(c.tp, workload.source, "tp");
  } catch (const InputError& e) {
    throw std::invalid_argument("megatron: tp " + std::to_string(c.tp) + ": " + e.reason());
  }
  const LayerModel& model = *found;
  const int n = cluster.num_devices();
  PlanResult r;
  ParallelPlan& plan = r.plan;
  plan.tp = c.tp;
  plan.pp = c.pp;
  plan.stage_tp = c.stage_tp;
  const long per_replica = plan.gpus_per_replica() * c.cp;  // a data-parallel replica's GPUs, its context ranks included
  const std::string replica = (c.stage_tp.empty() ? fmt::format("tp {} x pp {}", c.tp, c.pp)
                                                  : fmt::format("stage widths {}", fmt::join(c.stage_tp, " + "))) +
                              (c.cp > 1 ? fmt::format(" x cp {}", c.cp) : "");
  // By default as many replicas as fit whose copies (dp x cp, the context ranks included) form
  // whole expert-parallel groups, as plan_problem asks of ep.
  int dp = c.dp;
  if (dp == 0)
    for (dp = static_cast<int>(n / per_replica); dp > 0 && (static_cast<long>(dp) * c.cp) % c.ep != 0;) --dp;
  if (c.dp == 0 && dp == 0)
    throw std::invalid_argument(fmt::format("megatron: one replica group of {} x ep {} needs {} GPUs, the cluster has {}",
                                            replica, c.ep, per_replica * (c.ep / std::gcd(c.ep, c.cp)), n));
  if (dp < 1 || per_replica * dp > n)
    throw std::invalid_argument(fmt::format("megatron: {} x dp {} needs {} GPUs, the cluster has {}", replica,
                                            c.dp > 0 ? std::to_string(c.dp) : "(at least 1)", per_replica * std::max(dp, 1), n));
  plan.dp = dp * c.cp;
  plan.cp = c.cp;
  plan.ep = c.ep;
  plan.zero = c.zero;
  plan.overlap_param_gather = c.overlap_param_gather;
  plan.overlap_grad_reduce = c.overlap_grad_reduce;
  plan.zero3_prefetch = c.zero3_prefetch;
  plan.schedule = c.schedule;
  plan.virtual_stages = c.virtual_stages;
  plan.gradient_algorithm = c.gradient_algorithm;
  plan.scatter_gather = c.scatter_gather;
  plan.sequence_parallel = c.sequence_parallel;
  plan.tp_comm_overlap = c.tp_comm_overlap;
  plan.blocking_sends = !c.overlap_p2p_comm;
  if (c.global_micro_batches > 0) {
    if (c.global_micro_batches % dp != 0)
      throw std::invalid_argument(fmt::format(
          "megatron: global_micro_batches {} micro-batches do not split evenly over {} replicas", c.global_micro_batches, dp));
    plan.micro_batches = c.global_micro_batches / dp;
  } else {
    plan.micro_batches = c.micro_batches;
  }
  plan.stage_starts = megatron_stages(model, c.pp * c.virtual_stages, c.split);
  plan.assumptions = c;
  plan.nest_baseline_pricing = c.nest_baseline_pricing;
  plan.gpus = plan.stage_tp.empty() || static_cast<int>(plan.stage_tp.size()) != c.pp
                  ? gpus_in_order(c.tp, c.pp, plan.dp, c.order, c.cp)
                  : gpus_in_order(plan.stage_tp, plan.dp, c.order);
  std::vector<int> layers;
  const int stages = c.pp * c.virtual_stages;
  for (int p = 0; p < stages; ++p)
    layers.push_back((p + 1 < stages ? plan.stage_starts[p + 1] : static_cast<int>(model.layers.size())) -
                     plan.stage_starts[p]);
  r.details["stage_layers"] = layers;
  // The degrees are the user's: a plan that cannot run is their options' problem, said as such.
  if (const std::string why = plan_problem(workload, plan, cluster); !why.empty())
    throw std::invalid_argument("megatron: " + why);
  r.details["gpus_used"] = per_replica * dp;
  r.details["gpus_idle"] = n - per_replica * dp;
  // Megatron-LM keeps each tensor-parallel group inside a server, on NVLink; say when a group
  // spans servers (a width above the server's GPUs, or an order that splits it): its per-layer
  // all-reduces then cross the NICs.
  long across = 0;
  std::string first;
  for (int d = 0; d < plan.dp; ++d)
    for (int p = 0; p < c.pp; ++p) {
      std::vector<int> servers;
      for (int t = 0; t < plan.width(p); ++t) {
        const std::size_t i = plan_gpu_index(plan, d, p, t);
        const int server = cluster.device(plan.gpus.empty() ? static_cast<DeviceId>(i) : plan.gpus[i]).server;
        if (std::find(servers.begin(), servers.end(), server) == servers.end()) servers.push_back(server);
      }
      if (servers.size() > 1 && across++ == 0)
        first = fmt::format("replica {}, stage {} on servers {}", d, p, fmt::join(servers, ", "));
    }
  if (across > 0)
    r.details["tensor_groups_across_servers"] =
        fmt::format("{} tensor-parallel group{} span{} servers (first: {}): their all-reduces cross the NICs", across,
                    across == 1 ? "" : "s", across == 1 ? "s" : "", first);
  return r;
}

}  // namespace

PlanResult Megatron::plan_impl(const LayerWorkload& workload, const Cluster& cluster, const Deadline&) {
  return megatron_plan(config_, workload, cluster);
}

std::string Megatron::estimate_problem() const {
  ParallelPlan widths;
  widths.tp = config_.tp;
  widths.stage_tp = config_.stage_tp;
  if (widths.mixed_widths())
    return fmt::format("NEST's estimate prices one tensor-parallel width, and stage_tp gives the stages {}: run the plan on "
                         "an engine (evaluator, flow, simgrid or all)",
                         fmt::join(config_.stage_tp, ", "));
  return "";
}

std::string Megatron::options_problem(const LayerWorkload& workload, const Cluster& cluster) const {
  try {
    megatron_plan(config_, workload, cluster);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

namespace {

// The framework's defaults (sim/plans/frameworks.h: apply_framework_profile, as `plan
// --framework` applies them) on the options the file leaves out, then what the framework cannot
// run refused, naming the option. Megatron's distributed optimizer is ZeRO 1 with the gathers
// beside the next forward (overlap_param_gather) here; the profile's even split is split: even.
void apply_framework_defaults(const YamlFields& f, MegatronConfig& c) {
  FrameworkSettings s{.tp = c.tp,
                      .pp = c.pp,
                      .virtual_stages = c.virtual_stages,
                      .zero = c.zero,
                      .zero3_prefetch = c.zero3_prefetch,
                      .distributed_optimizer = c.zero >= 1 && c.overlap_param_gather,
                      .overlap_grad_reduce = c.overlap_grad_reduce,
                      .even_split = c.split == MegatronSplit::Even,
                      .sequence_parallel = c.sequence_parallel,
                      .tp_comm_overlap = c.tp_comm_overlap,
                      .gpipe = c.schedule == PipelineSchedule::GPipe};
  const FrameworkApplication applied = apply_framework_profile(c.framework, s, [&](std::string_view key) {
    if (key == "distributed_optimizer") return f.has("overlap_param_gather");
    return f.has(key);
  });
  if (!applied.refusal.key.empty())
    throw InputError(f.file(), f.field(applied.refusal.key == "distributed_optimizer" ? "overlap_param_gather" : applied.refusal.key),
                     applied.refusal.reason);
  if (s.distributed_optimizer) c.overlap_param_gather = true, s.zero = std::max(s.zero, 1);
  c.zero = s.zero;
  c.zero3_prefetch = s.zero3_prefetch;
  c.overlap_grad_reduce = s.overlap_grad_reduce;
  if (s.even_split) c.split = MegatronSplit::Even;
  c.sequence_parallel = s.sequence_parallel;
  c.tp_comm_overlap = s.tp_comm_overlap;
}

}  // namespace

OptionSchema<MegatronConfig> megatron_schema() {
  OptionSchema<MegatronConfig> s;
  s.count("tp", &MegatronConfig::tp, "tensor-parallel width (the workload must have it)", 1, 1 << 16, "8");
  s.count("pp", &MegatronConfig::pp, "pipeline stages (the blocks split evenly)", 1, 1 << 16, "4");
  s.count("dp", &MegatronConfig::dp, "data-parallel replicas (0: as many as the cluster holds)", 0, 1 << 20, "2");
  s.count("ep", &MegatronConfig::ep, "expert-parallel width, carved out of the replicas (divides dp)", 1, 1 << 16, "2");
  s.count("cp", &MegatronConfig::cp,
          "context-parallel width (ring attention): each sequence over cp GPUs next to the tensor ranks; the workload must be "
          "built for it (context_parallel)",
          1, 1 << 16, "2");
  s.count("zero", &MegatronConfig::zero, "ZeRO stage over the replicas (0-3)", 0, 3, "1");
  s.count("zero3_prefetch", &MegatronConfig::zero3_prefetch,
          "ZeRO 3: how many layers ahead each layer's parameters are gathered (0: as far as the links allow; FSDP's: 1)", 0, 1 << 16,
          "1");
  s.count("micro_batches", &MegatronConfig::micro_batches, "micro-batches per replica and iteration", 1, 1 << 20, "8");
  s.count("global_micro_batches", &MegatronConfig::global_micro_batches,
          "micro-batches per iteration over all replicas, split evenly (0: micro_batches per replica)", 0, 1 << 24, "64");
  s.flag("overlap_param_gather", &MegatronConfig::overlap_param_gather,
         "ZeRO 1 and 2 as Megatron's distributed optimizer with --overlap-param-gather: the updated parameters' all-gathers "
         "overlap the next forward (before each layer's first forward) instead of following the optimizer step");
  s.choice("schedule", &MegatronConfig::schedule, std::span<const EnumName<PipelineSchedule>>(kPipelineScheduleNames),
           "pipeline schedule");
  s.count("virtual_stages", &MegatronConfig::virtual_stages,
          "interleaved 1F1B: stages per pipeline rank (Megatron-LM's virtual pipeline; micro_batches a multiple of pp)", 1,
          1 << 10, "2");
  s.choice("gradient_algorithm", &MegatronConfig::gradient_algorithm,
           collective_algorithm_names(CollectiveOp::AllReduce),
           "collective algorithm of the gradient reduction across replicas", "halving-doubling");
  s.flag("scatter_gather", &MegatronConfig::scatter_gather,
         "between stages each tensor rank sends 1/tp of the activation and the next stage all-gathers it");
  s.flag("sequence_parallel", &MegatronConfig::sequence_parallel,
         "Megatron's sequence parallelism (tp >= 2): tensor-parallel reduce-scatters and all-gathers, activations split "
         "along the sequence");
  s.flag("tp_comm_overlap", &MegatronConfig::tp_comm_overlap,
         "Megatron's --tp-comm-overlap (with sequence_parallel): each layer's tensor-parallel reduce-scatters and all-gathers "
         "beside its compute rather than after it");
  s.choice("order", &MegatronConfig::order, std::span<const EnumName<GpuOrder>>(kGpuOrderNames),
           "GPU order, innermost first: tp-pp-dp (replicas outermost) or tp-dp-pp (Megatron-LM's default)");
  s.add({"stage_tp", "list",
         "per stage, its own tensor-parallel width, pp entries, the first tp's (beyond Megatron-LM, whose stages share "
         "one): each stage runs the workload's layers at its width",
         "unset", {}, "[1, 2]"},
        [](const YamlFields& f, std::string_view key, MegatronConfig& c) {
          const YAML::Node list = f.node(key);
          if (!list.IsSequence() || list.size() == 0)
            throw InputError(f.file(), f.field(key), "expected a list of tensor-parallel widths, one per stage, e.g. [8, 4]");
          c.stage_tp.clear();
          for (const YAML::Node& w : list) {
            long width = 0;
            try {
              width = w.as<long>();
            } catch (const YAML::Exception&) {
              width = 0;
            }
            if (width < 1 || width > (1 << 16))
              throw InputError(f.file(), f.field(key),
                               fmt::format("expected whole widths from 1 to 65536, got '{}'", w.IsScalar() ? w.Scalar() : "a list"));
            c.stage_tp.push_back(static_cast<int>(width));
          }
        });
  s.include(plan_assumptions_schema());
  s.choice("split", &MegatronConfig::split, std::span<const EnumName<MegatronSplit>>(kMegatronSplitNames),
           "how the blocks are split over the stages: even (Megatron-LM's: the first blocks mod pp stages one more), ceil "
           "(NEST's manual baseline as its README states it: ceil(blocks / pp) each, the last what remains) or nest (as "
           "NEST's code runs it: ceil(blocks / pp) layers per stage counted over every layer, so the first stage holds the "
           "layers before the first block and one block fewer, the last one more)",
           "nest");
  s.flag("nest_baseline_pricing", &MegatronConfig::nest_baseline_pricing,
         "NEST's estimate prices the plan as NEST's code prices its manual baseline, its stages listed last first: each "
         "stage's micro-batches in flight (its memory check) and whether it recomputes are counted from the wrong end, "
         "the last stage priced as the first; for reproducing NEST's reference ratios, the engines keep the schedule");
  s.choice("framework", &MegatronConfig::framework, std::span<const EnumName<Framework>>(kFrameworkNames),
           "whose defaults the options you leave out take (plan --framework; docs/parallelism.md): megatron-lm (these "
           "defaults), megatron-lm-2021, megatron-core, nemo, deepspeed or fsdp; what the framework cannot run is refused",
           "deepspeed");
  s.check(apply_framework_defaults);
  s.check([](const YamlFields& f, MegatronConfig& c) {
    if (f.has("global_micro_batches") && f.has("micro_batches"))
      throw InputError(f.file(), f.field("global_micro_batches"),
                       "expected one of micro_batches (per replica) or global_micro_batches (over all replicas), not both");
    if (c.tp_comm_overlap && !c.sequence_parallel)
      throw InputError(f.file(), f.field("tp_comm_overlap"),
                       "Megatron's tensor-parallel overlap runs sequence parallelism's all-gathers and reduce-scatters beside the GEMMs: "
                       "it needs sequence_parallel: true");
    if (c.overlap_param_gather && !c.overlap_grad_reduce)
      throw InputError(f.file(), f.field("overlap_grad_reduce"),
                       "Megatron overlaps the parameters' gathers only with the gradients' reductions (--overlap-param-gather "
                       "needs --overlap-grad-reduce): set overlap_param_gather: false too");
    if (c.sequence_parallel && c.tp < 2)
      throw InputError(f.file(), f.field("sequence_parallel"),
                       "sequence parallelism splits the tensor-parallel group's work: it needs tp >= 2");
    // Interleaving's own conditions, said when the scenario is read (the model's are checked at plan time).
    if (c.virtual_stages > 1) {
      if (c.schedule != PipelineSchedule::OneFOneB)
        throw InputError(f.file(), f.field("virtual_stages"), "virtual_stages > 1 is interleaved 1F1B: the schedule must be 1f1b");
      if (!f.has("global_micro_batches") && c.micro_batches % c.pp != 0)
        throw InputError(f.file(), f.field("virtual_stages"),
                         fmt::format("interleaved 1F1B runs micro-batches in groups of pp: micro_batches {} is not a multiple "
                                     "of pp {}",
                                     c.micro_batches, c.pp));
    }
  });
  return s;
}

PlannerInfo megatron_planner_info() {
  return planner_info<Megatron>(
      "megatron",
      "Megatron-style manual plan: given tp, pp, dp, ep, ZeRO and micro-batches; tensor-parallel groups innermost, "
      "replicas outermost, blocks split evenly",
      megatron_schema());
}

}  // namespace placesim
