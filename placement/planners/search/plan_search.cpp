#include "placement/planners/search/plan_search.h"


#include <algorithm>
#include <atomic>
#include <exception>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/engines/estimate.h"
#include "sim/plans/plan_run.h"
#include "topologies/registry.h"

namespace placesim {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int> divisors_of(long n, long most) {
  std::vector<int> out;
  for (long d = 1; d <= std::min(n, most); ++d)
    if (n % d == 0) out.push_back(static_cast<int>(d));
  return out;
}

template <typename T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> all) {
  return given.empty() ? all : given;
}

// The values of each knob the space takes (the request's, else every one that makes sense).
struct Knobs {
  std::vector<int> tp, cp, ep, mbs;
  std::vector<std::string> recompute, optimizer;
  std::vector<bool> sequence_parallel, tp_comm_overlap;
  std::vector<std::string> gpu_order;
};

std::vector<bool> on_off(const std::vector<std::string>& given, std::vector<bool> all) {
  if (given.empty()) return all;
  std::vector<bool> out;
  for (const std::string& v : given) out.push_back(v == "on");
  return out;
}

Knobs knobs_of(const SearchRequest& r, const models::TransformerShape& shape, const Cluster& cluster, std::vector<std::string>& notes) {
  Knobs k;
  // Tensor parallelism inside a server (its all-reduces run every layer: across servers they
  // would take the NICs' bandwidth, a tenth of NVLink's).
  const int per_server = cluster.num_devices() / std::max(1, cluster.num_servers());
  std::vector<int> tp_all;
  for (int t = 1; t <= per_server; t *= 2)
    if (shape.heads % t == 0) tp_all.push_back(t);
  k.tp = or_default(r.space.tp, tp_all);
  std::vector<int> cp_all;
  for (int c = 1; c <= 16; c *= 2)
    if (shape.sequence % (2 * c) == 0 || c == 1) cp_all.push_back(c);
  k.cp = or_default(r.space.cp, cp_all);
  k.ep = or_default(r.space.ep, shape.experts > 1 ? divisors_of(shape.experts, shape.experts) : std::vector<int>{1});
  k.mbs = or_default(r.space.micro_batch_size, std::vector<int>{1, 2, 4, 8});
  std::vector<std::string> recompute_all = {"none", "full"};
  if (r.base.attention != "fused") recompute_all.insert(recompute_all.begin() + 1, "selective");
  else if (r.space.recompute.empty())
    notes.push_back("recompute selective left out: with fused attention it recomputes nothing more than none (the "
                    "attention core keeps no scores to drop)");
  k.recompute = or_default(r.space.recompute, recompute_all);
  std::vector<std::string> optimizers;
  const FrameworkProfile& profile = framework_of(r.base);
  // Split by hand: clang's std::ranges with libstdc++ 12 cannot split a string_view.
  for (std::string_view rest = profile.search_optimizers; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    optimizers.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  k.optimizer = or_default(r.space.optimizer, optimizers);
  k.sequence_parallel = on_off(r.space.sequence_parallel, {false, true});
  k.tp_comm_overlap = on_off(r.space.tp_comm_overlap, {false, true});
  k.gpu_order = or_default(r.space.gpu_order, std::vector<std::string>{"tp-pp-dp"});
  return k;
}

// The pipeline depths and, per depth, the virtual stages: Megatron-LM's rule, the blocks evenly
// over pp x v stages when v > 1.
std::vector<std::pair<int, int>> pipelines_of(const SearchRequest& r, const models::TransformerShape& shape, long ranks) {
  std::vector<std::pair<int, int>> out;
  const std::vector<int> pps = r.space.pp.empty() ? divisors_of(ranks, shape.layers) : r.space.pp;
  for (int pp : pps) {
    if (ranks % pp != 0) continue;
    std::vector<int> vs = r.space.virtual_stages;
    if (vs.empty()) {
      vs = {1};
      if (pp > 1 && framework_of(r.base).interleaving)
        for (int v = 2; pp * v <= shape.layers; ++v)
          if (shape.layers % (pp * v) == 0) vs.push_back(v);
    }
    for (int v : vs)
      if (v == 1 || pp > 1) out.emplace_back(pp, v);
  }
  return out;
}

// Whether the candidate's framework runs it as enumerated: its refusals, and the settings it
// always takes (NeMo's sequence parallelism where tp > 1, tensor-parallel overlap with it).
bool framework_runs(const PlanArgs& a) {
  const FrameworkProfile& p = framework_of(a);
  if (p.sequence_parallel_with_tp && a.tp > 1 && !a.sequence_parallel) return false;
  if (p.tp_comm_overlap_with_sp && a.sequence_parallel && !a.tp_comm_overlap) return false;
  PlanArgs checked = a;
  checked.given = {"zero", "distributed_optimizer", "overlap_grad_reduce", "stage_split", "sequence_parallel", "tp_comm_overlap",
                   "zero3_prefetch"};
  try {
    apply_framework(checked, "command line");
  } catch (const InputError&) {
    return false;
  }
  return true;
}

// Every combination of the knobs that is a plan of `gpus` GPUs at the global batch.
std::vector<PlanArgs> enumerate_plans(const SearchRequest& r, const models::TransformerShape& shape, const Knobs& k,
                                      long& enumerated, long& framework_excluded) {
  const bool fsdp = r.base.framework == "fsdp";
  std::vector<PlanArgs> out;
  for (int tp : k.tp)
    for (int cp : k.cp) {
      if (r.gpus % (static_cast<long>(tp) * cp) != 0) continue;
      for (const auto& [pp, v] : pipelines_of(r, shape, r.gpus / (static_cast<long>(tp) * cp))) {
        const long dp = r.gpus / (static_cast<long>(tp) * cp * pp);
        for (int ep : k.ep) {
          if (dp % ep != 0) continue;
          for (int mbs : k.mbs) {
            if (r.global_batch % (mbs * dp) != 0) continue;
            const long m = r.global_batch / (mbs * dp);
            if (v > 1 && m % pp != 0) continue;  // interleaving: micro-batches a multiple of pp
            for (const std::string& recompute : k.recompute)
              for (const std::string& optimizer : k.optimizer) {
                // DeepSpeed's rule: ZeRO 2 and 3 shard gradients and parameters that a pipeline
                // would hold apart, and it refuses them with pipeline parallelism.
                // (FSDP shards under a pipeline: torchtitan runs both.)
                if ((optimizer == "zero2" || optimizer == "zero3") && pp > 1 && !fsdp) continue;
                if (optimizer != "none" && dp * cp == 1) continue;
                for (bool sp : k.sequence_parallel) {
                  if (sp && tp == 1) continue;
                  for (bool overlap : k.tp_comm_overlap)
                  for (const std::string& order : k.gpu_order) {
                    if (overlap && !sp) continue;
                    // With one stage or one replica both orders lay the GPUs out alike.
                    if (order != "tp-pp-dp" && (pp == 1 || dp * cp == 1)) continue;
                    ++enumerated;
                    PlanArgs a = r.base;
                    a.gpu_order = order;
                    a.tp = tp, a.pp = pp, a.dp = static_cast<int>(dp), a.cp = cp, a.ep = ep, a.virtual_stages = v;
                    a.micro_batch_size = mbs, a.global_batch = r.global_batch, a.micro_batches = 1;
                    a.recompute = recompute;
                    a.distributed_optimizer = optimizer == "distributed";
                    a.zero = optimizer == "zero1" ? 1 : optimizer == "zero2" ? 2 : optimizer == "zero3" ? 3 : 0;
                    a.sequence_parallel = sp, a.tp_comm_overlap = overlap;
                    a.engine = r.engine;
                    if (!framework_runs(a)) {
                      ++framework_excluded;
                      continue;
                    }
                    out.push_back(std::move(a));
                  }
                }
              }
          }
        }
      }
    }
  return out;
}

// The models the candidates run, one per distinct (tp, micro-batch size, recompute, sequence
// parallelism, cp): building one is most of a candidate's cost.
class ModelCache {
 public:
  // The model the candidate runs, or null with `why` said.
  const LayerWorkload* get(const PlanArgs& a, std::string& why) {
    const auto key = std::make_tuple(a.tp, a.micro_batch_size, a.recompute, a.sequence_parallel, a.cp);
    std::lock_guard lock(mutex_);
    auto it = models_.find(key);
    if (it == models_.end()) {
      std::optional<LayerWorkload> built;
      std::string reason;
      try {
        built = model_from_args(a, "command line");
      } catch (const InputError& e) {
        // A width the model cannot take (heads, sequence): no candidate of it is a plan.
        reason = e.what();
      }
      it = models_.emplace(key, std::make_pair(std::move(built), reason)).first;
    }
    why = it->second.second;
    return it->second.first ? &*it->second.first : nullptr;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<int, int, std::string, bool, int>, std::pair<std::optional<LayerWorkload>, std::string>> models_;
};

}  // namespace

ComputeBounds compute_lower_bound(const LayerModel& model, const ParallelPlan& plan, const std::vector<int>& starts) {
  const int S = static_cast<int>(starts.size()), L = static_cast<int>(model.layers.size());
  auto end_of = [&](int p) { return p + 1 < S ? starts[p + 1] : L; };
  std::vector<double> forward(S, 0), backward(S, 0), optimizer(plan.pp, 0), work(plan.pp, 0);
  for (int p = 0; p < S; ++p) {
    const bool recomputes = stage_recomputes(model, plan, p, S);
    for (int l = starts[p]; l < end_of(p); ++l) {
      forward[p] += model.layers[l].forward_s;
      backward[p] += model.layers[l].backward_s * (recomputes ? 2 : 1);
      optimizer[p % plan.pp] += model.layers[l].optimizer_s;
    }
    work[p % plan.pp] += plan.micro_batches * (forward[p] + backward[p]);
  }
  if (plan.zero >= 1)
    for (double& o : optimizer) o /= plan.dp;
  ComputeBounds b;
  double fill = 0, drain = 0;
  for (int r = 0; r < plan.pp; ++r) {
    b.lower_bound = std::max(b.lower_bound, fill + work[r] + std::max(optimizer[r], drain + optimizer[0]));
    b.floor = std::max(b.floor, work[r]);
    fill += forward[r];  // chunk 0's stages: the first micro-batch's path to rank r + 1
    drain += backward[r];
  }
  return b;
}

namespace {

struct Priced {
  PlanArgs args;
  const LayerWorkload* workload = nullptr;
  const LayerModel* model = nullptr;
  // The layout, kept small (a search holds tens of thousands): the stages, whether it fits and the
  // GPU holding the most; the plan is made again from the arguments when it is priced or run.
  std::vector<int> stage_starts;
  std::string not_a_plan;  // why it is not a plan of the model ("" when it is)
  std::string infeasible;
  long gpus = 0;
  GpuMemory memory;
  double capacity = 0;
  double lower_bound = 0, floor = 0;
  ParallelPlan plan() const {
    ParallelPlan p = plan_from_args(args, "command line", "--schedule", "--gradient-algorithm");
    p.stage_starts = stage_starts;
    return p;
  }
  double estimate = std::numeric_limits<double>::quiet_NaN();  // NaN: not estimated
};

// The candidate laid out and priced: nullopt when it is not a plan (the model or the checks
// refuse it); `fits` false when a GPU would not hold it.
Priced lay_out(const PlanArgs& a, ModelCache& models, const Cluster& cluster) {
  Priced c;
  c.args = a;
  c.workload = models.get(a, c.not_a_plan);
  if (!c.workload) return c;
  ParallelPlan plan;
  try {
    c.model = &c.workload->at(a.tp, "command line", "--tp");
    plan = plan_from_args(a, "command line", "--schedule", "--gradient-algorithm");
    apply_stage_split(plan, a, *c.model, "command line", "--stage-split");
  } catch (const InputError& e) {
    c.not_a_plan = e.what();
    return c;
  }
  c.not_a_plan = plan_problem(*c.workload, plan, cluster);
  if (!c.not_a_plan.empty()) return c;
  const CompiledPlan layout = plan_layout(*c.workload, plan, cluster);
  c.infeasible = layout.infeasible;
  c.stage_starts = layout.stage_starts;
  c.gpus = static_cast<long>(layout.gpus.size());
  for (std::size_t i = 0; i < layout.memory.size(); ++i)
    if (layout.memory[i].total() > c.memory.total()) {
      c.memory = layout.memory[i];
      c.capacity = cluster.device(layout.gpus[i]).memory_bytes;
    }
  if (!c.infeasible.empty()) return c;
  plan.stage_starts = c.stage_starts;
  const ComputeBounds bounds = compute_lower_bound(*c.model, plan, c.stage_starts);
  c.lower_bound = bounds.lower_bound;
  c.floor = bounds.floor;
  return c;
}

void estimate(Priced& c, const NestNetwork& network) { c.estimate = nest_estimate(*c.model, c.plan(), network).time_per_batch; }

// Runs `work(i)` for i in [0, n) on `threads` threads, `done(i)` after each (under a lock). The
// first exception any of them throws stops the handing out of indices and is rethrown here, once
// every thread has ended.
void for_each_parallel(std::size_t n, int threads, const std::function<void(std::size_t)>& work,
                       const std::function<void(std::size_t)>& done) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failed;
  auto loop = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        work(i);
        std::lock_guard lock(mutex);
        done(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failed) failed = std::current_exception();
        next = n;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(n)); ++t) pool.emplace_back(loop);
  loop();
  for (auto& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

// `available_bytes`: the memory its graph may take (this machine's, shared by the candidates that
// run at once). A graph that would not fit in it is said in `folding` and not simulated.
SearchCandidate simulate_candidate(const Priced& c, const Cluster& cluster, double available_bytes) {
  SearchCandidate out;
  out.args = c.args;
  out.stage_starts = c.stage_starts;
  out.lower_bound_s = c.lower_bound;
  out.estimate_s = c.estimate;
  out.memory = c.memory;
  out.memory_bytes = c.memory.total();
  out.capacity_bytes = c.capacity;
  const ParallelPlan plan = c.plan();
  PlanRunOptions options = plan_run_options(c.args, "command line");
  options.available_bytes = available_bytes;
  PlanRun run;
  try {
    run = simulate_plan(*c.workload, plan, cluster, options);
  } catch (const GraphTooLarge& e) {
    out.folding = fmt::format("not simulated: its graph is too large for this machine's memory shared by --threads candidates "
                              "(--threads 1 gives it all; or run its plan command alone): {}",
                              e.what());
    return out;
  }
  out.simulated = true;
  out.iteration_s = run.runs.runs.front().latency;
  if (!run.breakdown.empty()) out.breakdown = run.breakdown.front().second;
  out.folding = run.fold.reason;
  const PlanThroughput t = plan_throughput(c.args, plan, *c.model, static_cast<double>(c.gpus), out.iteration_s);
  out.tokens_per_s_per_gpu = t.tokens_per_s_per_gpu;
  out.model_tflops_per_gpu = t.model_flops_per_gpu / 1e12;
  out.mfu = t.mfu;
  return out;
}

std::string format_eta(double seconds) { return seconds < 1 ? "<1 s" : format_duration(seconds); }

}  // namespace

std::string plan_command(const PlanArgs& a, const std::string& engine) {
  const PlanArgs d;
  std::string cmd = "placesim plan";
  // Paths and names as one shell word each: the command is pasted into a shell.
  if (!a.model.empty()) cmd += " --model " + shell_quoted(a.model);
  if (!a.model_file.empty()) cmd += " --model-file " + shell_quoted(a.model_file);
  cmd += " --cluster " + shell_quoted(a.cluster);
  if (a.gpu != d.gpu) cmd += " --gpu " + shell_quoted(a.gpu);
  if (!a.precision.empty()) cmd += " --precision " + a.precision;
  if (!a.main_gradients.empty()) cmd += " --main-gradients " + a.main_gradients;
  if (a.sequence != d.sequence) cmd += fmt::format(" --sequence {}", a.sequence);
  if (a.attention != d.attention) cmd += " --attention " + a.attention;
  cmd += fmt::format(" --tp {} --pp {} --dp {}", a.tp, a.pp, a.dp);
  if (a.cp > 1) cmd += fmt::format(" --cp {}", a.cp);
  if (a.ep > 1) cmd += fmt::format(" --ep {}", a.ep);
  if (a.virtual_stages > 1) cmd += fmt::format(" --virtual-stages {}", a.virtual_stages);
  if (a.gpu_order != d.gpu_order) cmd += " --gpu-order " + a.gpu_order;
  cmd += fmt::format(" --micro-batch-size {} --global-batch {} --recompute {}", a.micro_batch_size, a.global_batch, a.recompute);
  if (a.sequence_parallel) cmd += " --sequence-parallel";
  if (a.tp_comm_overlap) cmd += " --tp-comm-overlap";
  if (a.distributed_optimizer) cmd += " --distributed-optimizer";
  // Under a framework's profile every setting it could change is written out: the command runs
  // the candidate whatever the profile's defaults.
  const bool profiled = a.framework != d.framework;
  if (profiled) cmd += " --framework " + a.framework;
  if ((a.zero > 0 || profiled) && !a.distributed_optimizer) cmd += fmt::format(" --zero {}", a.zero);
  if (a.no_overlap_grad_reduce) cmd += " --no-overlap-grad-reduce";
  if (a.zero3_prefetch > 0 || (profiled && a.zero == 3)) cmd += fmt::format(" --zero3-prefetch {}", a.zero3_prefetch);
  if (a.stage_split != d.stage_split && a.stage_starts.empty()) cmd += " --stage-split " + a.stage_split;
  if (a.schedule != d.schedule) cmd += " --schedule " + a.schedule;
  if (a.gradient_algorithm != d.gradient_algorithm) cmd += " --gradient-algorithm " + a.gradient_algorithm;
  if (a.collectives != d.collectives) cmd += " --collectives " + a.collectives;
  if (a.order != d.order) cmd += " --order " + a.order;
  cmd += " --engine " + engine;
  return cmd;
}

namespace {

// What the CLI's validators check, for callers that bypass them (Python).
void check_request(const SearchRequest& r) {
  auto one_of_names = [](const std::vector<std::string>& given, std::initializer_list<std::string_view> names, const char* field) {
    for (const std::string& v : given)
      if (std::find(names.begin(), names.end(), v) == names.end())
        throw InputError("command line", field, fmt::format("expected one of {}, got '{}'", fmt::join(names, ", "), v));
  };
  if (!r.base.model.empty() && !models::find_layer_zoo(r.base.model))
    throw InputError("command line", "--model", fmt::format("expected one of {}, got '{}'", models::layer_zoo_names(), r.base.model));
  if (r.top < 1) throw InputError("command line", "--top", fmt::format("expected at least 1 plan to simulate, got {}", r.top));
  if (r.threads < 1) throw InputError("command line", "--threads", fmt::format("expected at least 1, got {}", r.threads));
  if (r.engine != "flow" && r.engine != "evaluator")
    throw InputError("command line", "--engine", fmt::format("expected flow or evaluator (engines that schedule), got '{}'", r.engine));
  one_of_names(r.space.recompute, {"none", "selective", "full"}, "--recompute");
  one_of_names(r.space.sequence_parallel, {"on", "off"}, "--sequence-parallel");
  one_of_names(r.space.tp_comm_overlap, {"on", "off"}, "--tp-comm-overlap");
  one_of_names(r.space.optimizer, {"none", "distributed", "zero1", "zero2", "zero3"}, "--optimizer");
  one_of_names(r.space.gpu_order, {"tp-pp-dp", "tp-dp-pp"}, "--gpu-order");
  for (const auto& [values, field] : {std::pair{&r.space.tp, "--tp"}, {&r.space.pp, "--pp"}, {&r.space.cp, "--cp"},
                                      {&r.space.ep, "--ep"}, {&r.space.virtual_stages, "--virtual-stages"},
                                      {&r.space.micro_batch_size, "--micro-batch-size"}})
    for (int v : *values)
      if (v < 1) throw InputError("command line", field, fmt::format("expected whole numbers from 1, got {}", v));
}

// Phase 2 (the models it builds kept in `models`, which the candidates point into): each configuration laid out (its stages and memory) and bounded, in parallel; the ones
// that fit, the rest counted.
std::vector<Priced> lay_out_all(const std::vector<PlanArgs>& all, int threads, const Cluster& cluster, ModelCache& models,
                                SearchResult& result, const SearchProgress& say) {
  const auto t0 = Clock::now();
  std::vector<Priced> laid(all.size());
  std::size_t finished = 0;
  auto last_said = Clock::now();
  for_each_parallel(
      all.size(), threads, [&](std::size_t i) { laid[i] = lay_out(all[i], models, cluster); },
      [&](std::size_t) {
        ++finished;
        if (since(last_said) > 5) {
          last_said = Clock::now();
          say(fmt::format("search: laid out {} of {} (ETA {})", finished, all.size(),
                          format_eta(since(t0) / finished * (all.size() - finished))));
        }
      });
  std::vector<Priced> fitting;
  std::map<std::string, long> reasons;  // why candidates are not plans, and how many
  for (auto& p : laid) {
    if (!p.not_a_plan.empty()) ++result.invalid, ++reasons[p.not_a_plan];
    else if (!p.infeasible.empty()) ++result.over_memory;
    else fitting.push_back(std::move(p));
  }
  for (const auto& [why, count] : reasons)
    if (result.notes.size() < 8) result.notes.push_back(fmt::format("{} configurations are not plans of the model: {}", count, why));
  result.fitting = static_cast<long>(fitting.size());
  result.phases.push_back({"enumerate and lay out (memory, lower bounds)", result.fitting, since(t0)});
  say(fmt::format("search: {} fit in memory ({} over it, {} not plans of this model), laid out in {}", result.fitting,
                  result.over_memory, result.invalid, format_duration(since(t0))));
  return fitting;
}

// Phase 3: NEST's estimate of the candidates in the order of their compute floors, which it never
// undercuts, until the next floor is above the `top`-th best estimate: the `top` best estimates of
// all, without estimating the rest. Returns the candidates' indices, best estimate first.
std::vector<std::size_t> estimate_best(std::vector<Priced>& fitting, int top, int threads, const Cluster& cluster,
                                       SearchResult& result, const SearchProgress& say) {
  const auto t0 = Clock::now();
  NestNetwork network = NestNetwork::aware(cluster);
  network.memo = std::make_shared<NestReductionMemo>();
  std::vector<std::size_t> by_floor(fitting.size());
  for (std::size_t i = 0; i < by_floor.size(); ++i) by_floor[i] = i;
  std::sort(by_floor.begin(), by_floor.end(), [&](std::size_t a, std::size_t b) { return fitting[a].floor < fitting[b].floor; });
  std::vector<double> best;  // the `top` best estimates so far, ascending
  std::size_t at = 0;
  const std::size_t chunk = 64;
  while (at < by_floor.size() && (static_cast<int>(best.size()) < top || fitting[by_floor[at]].floor <= best.back())) {
    const std::size_t n = std::min(chunk, by_floor.size() - at);
    for_each_parallel(n, threads, [&](std::size_t k) { estimate(fitting[by_floor[at + k]], network); }, [](std::size_t) {});
    for (std::size_t k = 0; k < n; ++k) {
      best.insert(std::upper_bound(best.begin(), best.end(), fitting[by_floor[at + k]].estimate), fitting[by_floor[at + k]].estimate);
      if (static_cast<int>(best.size()) > top) best.pop_back();
    }
    at += n;
  }
  result.estimated = static_cast<long>(at);
  std::vector<std::size_t> ranked(by_floor.begin(), by_floor.begin() + static_cast<long>(at));
  std::sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(fitting[a].estimate, fitting[a].lower_bound, a) < std::tie(fitting[b].estimate, fitting[b].lower_bound, b);
  });
  if (static_cast<int>(ranked.size()) > top) ranked.resize(static_cast<std::size_t>(top));
  result.phases.push_back({"estimate (NEST's, in the order of the compute floors)", result.estimated, since(t0)});
  say(fmt::format("search: {} estimated (the rest cannot reach the {} best estimates) in {}", result.estimated, top,
                  format_duration(since(t0))));
  return ranked;
}

}  // namespace

SearchResult search_plans(const SearchRequest& r0, const SearchProgress& progress) {
  if (r0.base.model.empty() == r0.base.model_file.empty())
    throw InputError("command line", "--model/--model-file", "expected one of --model NAME or --model-file FILE");
  check_request(r0);
  if (r0.global_batch < 1) throw InputError("command line", "--global-batch", "expected the sequences per iteration, at least 1");
  return search_plans(r0, load_cluster_file(r0.base.cluster), progress);
}

SearchResult search_plans(const SearchRequest& r0, const Cluster& cluster, const SearchProgress& progress) {
  const SearchProgress say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  SearchRequest r = r0;
  if (r.base.model.empty() == r.base.model_file.empty())
    throw InputError("command line", "--model/--model-file", "expected one of --model NAME or --model-file FILE");
  check_request(r);
  if (r.global_batch < 1) throw InputError("command line", "--global-batch", "expected the sequences per iteration, at least 1");
  if (r.gpus == 0) r.gpus = cluster.num_devices();
  if (r.gpus > cluster.num_devices())
    throw InputError("command line", "--gpus", fmt::format("the cluster has {} GPUs, asked for {}", cluster.num_devices(), r.gpus));
  models::TransformerShape shape =
      r.base.model.empty() ? models::load_model_file(r.base.model_file) : *models::find_layer_zoo(r.base.model);
  if (r.base.sequence > 0) shape.sequence = r.base.sequence;
  // The framework's defaults for what the search does not enumerate (its reductions' overlap, the
  // layers' split); its refusals prune the candidates (enumerate_plans).
  apply_framework(r.base, "command line");
  const int threads = std::max(1, r.threads);
  SearchResult result;
  result.model = r.base.model.empty() ? r.base.model_file : r.base.model;
  result.cluster = cluster.description;
  result.gpus = r.gpus;
  result.global_batch = r.global_batch;

  // 1-2. Enumerate, lay out, bound.
  const Knobs knobs = knobs_of(r, shape, cluster, result.notes);
  const std::vector<PlanArgs> all = enumerate_plans(r, shape, knobs, result.enumerated, result.framework_excluded);
  say(fmt::format("search: {} configurations of {} on {} GPUs at a global batch of {}", all.size(), result.model, r.gpus,
                  r.global_batch));
  ModelCache models;  // the candidates' workloads point into it
  std::vector<Priced> fitting = lay_out_all(all, threads, cluster, models, result, say);
  if (fitting.empty()) return result;
  // 3. The best estimates.
  const std::vector<std::size_t> top = estimate_best(fitting, r.top, threads, cluster, result, say);

  // 4. Simulate them; then, exhaustive, every candidate whose bound beats the best.
  const auto t0 = Clock::now();
  std::vector<bool> done(fitting.size(), false);
  double best = std::numeric_limits<double>::infinity();
  const double available = available_memory_bytes();
  std::vector<double> too_large_bounds;  // of the candidates chosen but too large to simulate
  NestNetwork network = NestNetwork::aware(cluster);
  auto simulate_batch = [&](const std::vector<std::size_t>& batch, const std::string& why) {
    std::vector<SearchCandidate> out(batch.size());
    std::size_t finished = 0;
    const auto start = Clock::now();
    for_each_parallel(
        batch.size(), threads,
        [&](std::size_t k) {
          Priced& c = fitting[batch[k]];
          if (std::isnan(c.estimate)) estimate(c, network);
          out[k] = simulate_candidate(c, cluster, available / threads);
        },
        [&](std::size_t k) {
          ++finished;
          done[batch[k]] = true;
          say(fmt::format("search: {} {} of {}: {} ({}; ETA {})", why, finished, batch.size(),
                          out[k].simulated ? format_duration(out[k].iteration_s) : std::string("too large to simulate here"),
                          plan_command(out[k].args, r.engine).substr(14), format_eta(since(start) / finished * (batch.size() - finished))));
        });
    for (SearchCandidate& c : out) {
      if (!c.simulated) {
        ++result.too_large;
        too_large_bounds.push_back(c.lower_bound_s);
        result.notes.push_back(plan_command(c.args, r.engine) + ": " + c.folding);
        continue;
      }
      if (c.iteration_s < c.lower_bound_s * (1 - 1e-9)) ++result.bound_violations;
      best = std::min(best, c.iteration_s);
      result.ranked.push_back(std::move(c));
    }
  };
  simulate_batch(top, "simulated best estimate");
  std::vector<std::size_t> by_bound;
  for (std::size_t i = 0; i < fitting.size(); ++i)
    if (!done[i]) by_bound.push_back(i);
  std::sort(by_bound.begin(), by_bound.end(), [&](std::size_t a, std::size_t b) { return fitting[a].lower_bound < fitting[b].lower_bound; });
  std::size_t at = 0;
  // In rounds of one candidate per thread, while the next bound could beat the best.
  while (r.exhaustive && at < by_bound.size() && fitting[by_bound[at]].lower_bound < best) {
    std::vector<std::size_t> round;
    while (at < by_bound.size() && static_cast<int>(round.size()) < threads && fitting[by_bound[at]].lower_bound < best)
      round.push_back(by_bound[at++]);
    simulate_batch(round, "simulated, bound below the best,");
  }
  for (; at < by_bound.size() && fitting[by_bound[at]].lower_bound < best; ++at) {
    if (result.unproven == 0) result.best_unsimulated_bound_s = fitting[by_bound[at]].lower_bound;
    ++result.unproven;
  }
  // The candidates too large to simulate could be the best: the best is not proven while one's bound is below it.
  for (double bound : too_large_bounds)
    if (bound < best) {
      if (result.unproven == 0 || bound < result.best_unsimulated_bound_s) result.best_unsimulated_bound_s = bound;
      ++result.unproven;
    }
  result.simulated = static_cast<long>(result.ranked.size());
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const SearchCandidate& a, const SearchCandidate& b) { return a.iteration_s < b.iteration_s; });
  result.phases.push_back({"simulate on " + r.engine, result.simulated, since(t0)});
  return result;
}

}  // namespace placesim
