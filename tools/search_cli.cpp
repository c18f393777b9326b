#include "search_cli.h"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_conventions.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/models/gpu.h"
#include "sim/models/layer_zoo.h"

namespace placesim {

CLI::App* add_search_command(CLI::App& app, SearchArgs& a) {
  SearchRequest& r = a.request;
  auto* c = app.add_subcommand("search",
                               "which plan should I run? every Megatron-style plan of a model on the cluster, pruned by memory, the "
                               "best simulated under contention (docs/search.md)");
  auto* zoo_model = c->add_option("--model", r.base.model, "a layer-level model of the zoo: " + models::layer_zoo_names())
                        ->check(one_of([] {
                          std::vector<std::string> names;
                          for (const auto& shape : models::layer_zoo()) names.push_back(shape.name);
                          return names;
                        }()));
  auto* model_file = c->add_option("--model-file", r.base.model_file, "a model by its dimensions (YAML, as plan's --model-file)")
                         ->check(CLI::ExistingFile);
  zoo_model->excludes(model_file);
  c->add_option("--cluster", r.base.cluster, "cluster YAML file (a `cluster:` block)")->required()->check(CLI::ExistingFile);
  c->add_option("--gpus", r.gpus, "GPUs to use, the cluster's first (default: all)")->check(whole_number(1, 1 << 24));
  c->add_option("--global-batch", r.global_batch, "sequences per iteration")->required()->check(whole_number(1, 1L << 40));
  c->add_option("--gpu", r.base.gpu, "the GPU the kernel model times the layers on (a preset or a YAML file, as plan's)")
      ->check(one_of(models::kernel_model_gpu_names()) | CLI::ExistingFile)
      ->capture_default_str();
  c->add_option("--precision", r.base.precision, "fp32, tf32, fp16, bf16 or fp8 (default: the GPU's)")
      ->check(one_of({"fp32", "tf32", "fp16", "bf16", "fp8"}));
  c->add_option("--sequence", r.base.sequence, "tokens per sequence (default: the model's)")->check(whole_number(1, 1 << 24));
  c->add_option("--attention", r.base.attention, "fused or unfused")->check(one_of({"fused", "unfused"}))->capture_default_str();
  c->add_option("--main-gradients", r.base.main_gradients, "fp32, fp32_copy or as_parameters (default: Megatron-LM's at the precision)")
      ->check(one_of({"fp32", "fp32_copy", "as_parameters"}));
  // The space: each knob's values, comma-separated; default every one that makes sense.
  c->add_option("--tp", r.space.tp, "tensor-parallel widths to try (default: powers of two up to a server's GPUs)")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--pp", r.space.pp, "pipeline depths (default: every divisor of the GPUs left, up to the layers)")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--cp", r.space.cp, "context-parallel widths (default: 1, 2, 4, 8, 16 where the sequence splits)")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--ep", r.space.ep, "expert-parallel widths (default: the divisors of the experts; 1 for dense models)")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--virtual-stages", r.space.virtual_stages,
                "virtual stages per pipeline rank (default: 1 and every v with the blocks a multiple of pp x v, Megatron-LM's rule)")
      ->delimiter(',')
      ->check(whole_number(1, 1024));
  c->add_option("--micro-batch-size", r.space.micro_batch_size, "sequences per micro-batch (default: 1, 2, 4, 8)")
      ->delimiter(',')
      ->check(whole_number(1, 1 << 16));
  c->add_option("--recompute", r.space.recompute, "none, selective, full (default: all three; selective only with unfused attention)")
      ->delimiter(',')
      ->check(one_of({"none", "selective", "full"}));
  c->add_option("--sequence-parallel", r.space.sequence_parallel, "on, off (default: both, on where tp >= 2)")
      ->delimiter(',')
      ->check(one_of({"on", "off"}));
  c->add_option("--optimizer", r.space.optimizer,
                "none (ZeRO 0), distributed (Megatron's distributed optimizer), zero1 (ZeRO 1, gathers after the step), zero2, "
                "zero3 (default: the framework's; megatron-lm: none, distributed, zero2, zero3; ZeRO 2 and 3 without pipelining, "
                "as DeepSpeed; fsdp with it too)")
      ->delimiter(',')
      ->check(one_of({"none", "distributed", "zero1", "zero2", "zero3"}));
  c->add_option("--gpu-order", r.space.gpu_order,
                "tp-pp-dp, tp-dp-pp: the GPU orders to try (plan --gpu-order; default: tp-pp-dp alone, both doubling the "
                "candidates)")
      ->delimiter(',')
      ->check(one_of({"tp-pp-dp", "tp-dp-pp"}));
  c->add_option("--framework", r.base.framework,
                "whose plans: the candidates as that framework runs them (plan --framework; docs/parallelism.md): its "
                "reductions' overlap and layer split, its optimizer sharding, what it cannot run left out")
      ->check(one_of(framework_names()))
      ->capture_default_str();
  c->add_option("--tp-comm-overlap", r.space.tp_comm_overlap, "on, off (default: both, on with sequence parallelism)")
      ->delimiter(',')
      ->check(one_of({"on", "off"}));
  c->add_option("--top", r.top, "simulate this many of the best estimates")->check(whole_number(1, 100000))->capture_default_str();
  c->add_flag("--exhaustive", r.exhaustive,
              "then simulate every candidate whose lower bound (its busiest GPU's compute) is below the best time: the best "
              "of the whole space, proven");
  c->add_option("--threads", r.threads, "candidates simulated at once")->check(whole_number(1, 256))->capture_default_str();
  c->add_option("--engine", r.engine, "the engine that ranks the simulated: flow (under contention) or evaluator")
      ->check(one_of({"flow", "evaluator"}))
      ->capture_default_str();
  c->add_flag("--json", a.json, "one JSON object instead of the text (progress stays on stderr)");
  c->add_option("--csv", a.csv, "also write the simulated plans as CSV to FILE");
  return c;
}

namespace {

nlohmann::json candidate_json(const SearchCandidate& c, const std::string& engine, int rank) {
  const PlanArgs& a = c.args;
  return {{"rank", rank},
          {"iteration_s", c.iteration_s},
          {"engine", engine},
          {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu},
          {"model_tflops_per_gpu", c.model_tflops_per_gpu},
          {"mfu", c.mfu},
          {"memory_per_gpu_bytes", c.memory_bytes},
          {"memory_capacity_bytes", c.capacity_bytes},
          {"memory_per_component_bytes",
           {{"parameters", c.memory.parameters}, {"gradients", c.memory.gradients}, {"optimizer_states", c.memory.optimizer_states},
            {"activations", c.memory.activations}, {"workspace", c.memory.workspace}}},
          {"estimate_s", c.estimate_s},
          {"lower_bound_s", c.lower_bound_s},
          {"breakdown", breakdown_json(c.breakdown)},
          {"plan",
           {{"tp", a.tp}, {"pp", a.pp}, {"dp", a.dp}, {"cp", a.cp}, {"ep", a.ep}, {"virtual_stages", a.virtual_stages},
            {"micro_batch_size", a.micro_batch_size}, {"micro_batches", a.global_batch / (static_cast<long>(a.micro_batch_size) * a.dp)},
            {"recompute", a.recompute}, {"sequence_parallel", a.sequence_parallel}, {"tp_comm_overlap", a.tp_comm_overlap},
            {"distributed_optimizer", a.distributed_optimizer}, {"zero", a.distributed_optimizer ? 1 : a.zero},
            {"gpu_order", a.gpu_order}, {"framework", a.framework}, {"stage_starts", c.stage_starts}}},
          {"folding", c.folding},
          {"command", plan_command(a, engine)}};
}

std::string plan_label(const PlanArgs& a) {
  std::string s = fmt::format("tp {} pp {} dp {}", a.tp, a.pp, a.dp);
  if (a.cp > 1) s += fmt::format(" cp {}", a.cp);
  if (a.ep > 1) s += fmt::format(" ep {}", a.ep);
  if (a.virtual_stages > 1) s += fmt::format(" v {}", a.virtual_stages);
  s += fmt::format(", mbs {}, recompute {}", a.micro_batch_size, a.recompute);
  if (a.sequence_parallel) s += ", SP";
  if (a.tp_comm_overlap) s += "+overlap";
  if (a.distributed_optimizer) s += ", dist-opt";
  else if (a.zero > 0) s += fmt::format(", ZeRO {}", a.zero);
  if (a.gpu_order != PlanArgs{}.gpu_order) s += ", " + a.gpu_order;
  return s;
}

void print_text(const SearchResult& r, const std::string& engine, int top) {
  std::cout << fmt::format("model           {}, {} GPUs, global batch {}\n", r.model, r.gpus, r.global_batch);
  std::cout << fmt::format("cluster         {}\n", r.cluster);
  std::cout << fmt::format("space           {} configurations: {}{} not plans of the model, {} over memory, {} fit; {} estimated, {} "
                           "simulated on {}\n",
                           r.enumerated,
                           r.framework_excluded > 0 ? fmt::format("{} not run by the framework, ", r.framework_excluded) : "",
                           r.invalid, r.over_memory, r.fitting, r.estimated, r.simulated, engine);
  for (const std::string& note : r.notes) std::cout << "                " << note << "\n";
  for (const SearchPhase& p : r.phases)
    std::cout << fmt::format("phase           {}: {} ({} candidates)\n", p.name, format_duration(p.seconds), p.candidates);
  if (r.ranked.empty()) {
    std::cout << (r.enumerated == 0 ? "best            none: no combination of the knobs is a plan of these GPUs at this global batch "
                                      "(dp = GPUs / (tp x pp x cp) must divide it by the micro-batch size)\n"
                  : r.fitting == 0  ? "best            none: no configuration fits in GPU memory\n"
                                    : "best            none simulated: the candidates chosen were too large to simulate here "
                                      "(above; --threads 1 gives each the whole machine)\n");
    return;
  }
  if (r.proven())
    std::cout << fmt::format("best            proven: no unsimulated configuration's lower bound is below {}\n",
                             format_duration(r.ranked.front().iteration_s));
  else
    std::cout << fmt::format("best            of the simulated; {} configurations have a lower bound below it (the least {}): "
                             "--exhaustive simulates them\n",
                             r.unproven, format_duration(r.best_unsimulated_bound_s));
  if (r.bound_violations > 0)
    std::cout << fmt::format("warning         {} simulated times fell below their lower bound: a bug, please report it\n",
                             r.bound_violations);
  int rank = 0;
  for (const SearchCandidate& c : r.ranked) {
    if (++rank > top) break;
    std::cout << fmt::format("\n#{:<3} {} per iteration  {}\n", rank, format_duration(c.iteration_s), plan_label(c.args));
    std::cout << fmt::format("     {:.0f} tokens/s per GPU, MFU {:.1f}%, memory {} of {}, estimate {}, lower bound {}\n",
                             c.tokens_per_s_per_gpu, 100 * c.mfu, format_bytes(c.memory_bytes), format_bytes(c.capacity_bytes),
                             format_duration(c.estimate_s), format_duration(c.lower_bound_s));
    std::vector<std::string> parts;
    for (const auto& [name, s] : c.breakdown.parts())
      if (s > 1e-9 * c.iteration_s) parts.push_back(fmt::format("{} {:.1f}%", name, 100 * s / c.iteration_s));
    std::cout << fmt::format("     {}\n", fmt::join(parts, ", "));
    std::cout << fmt::format("     {}\n", plan_command(c.args, engine));
  }
}

}  // namespace

std::string search_json(const SearchResult& r, const std::string& engine) {
  nlohmann::json plans = nlohmann::json::array();
  int rank = 0;
  for (const SearchCandidate& c : r.ranked) plans.push_back(candidate_json(c, engine, ++rank));
  nlohmann::json phases = nlohmann::json::array();
  for (const SearchPhase& p : r.phases) phases.push_back({{"name", p.name}, {"candidates", p.candidates}, {"seconds", p.seconds}});
  nlohmann::json j = {{"model", r.model},
                      {"cluster", r.cluster},
                      {"gpus", r.gpus},
                      {"global_batch", r.global_batch},
                      {"enumerated", r.enumerated},
                      {"not_run_by_the_framework", r.framework_excluded},
                      {"not_plans", r.invalid},
                      {"over_memory", r.over_memory},
                      {"fitting", r.fitting},
                      {"estimated", r.estimated},
                      {"simulated", r.simulated},
                      {"too_large_to_simulate", r.too_large},
                      {"proven_best", r.proven()},
                      {"unproven", r.unproven},
                      {"best_unsimulated_lower_bound_s", r.best_unsimulated_bound_s},
                      {"bound_violations", r.bound_violations},
                      {"notes", r.notes},
                      {"phases", phases},
                      {"plans", plans}};
  return j.dump();
}

std::string search_csv(const SearchResult& r, const std::string& engine) {
  std::string out =
      "rank,iteration_s,tokens_per_s_per_gpu,mfu,memory_per_gpu_bytes,estimate_s,lower_bound_s,tp,pp,dp,cp,ep,virtual_stages,"
      "micro_batch_size,recompute,sequence_parallel,tp_comm_overlap,optimizer,compute_s,bubble_s,exposed_communication_s,"
      "optimizer_s,command\n";
  int rank = 0;
  for (const SearchCandidate& c : r.ranked) {
    const PlanArgs& a = c.args;
    const TimeBreakdown& b = c.breakdown;
    const double exposed = b.tensor_parallel + b.pipeline + b.context_parallel + b.expert + b.data_parallel + b.other_communication;
    out += fmt::format("{},{:.9g},{:.6g},{:.6g},{:.6g},{:.9g},{:.9g},{},{},{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},\"{}\"\n",
                       ++rank, c.iteration_s, c.tokens_per_s_per_gpu, c.mfu, c.memory_bytes, c.estimate_s, c.lower_bound_s, a.tp,
                       a.pp, a.dp, a.cp, a.ep, a.virtual_stages, a.micro_batch_size, a.recompute, a.sequence_parallel ? "on" : "off",
                       a.tp_comm_overlap ? "on" : "off",
                       a.distributed_optimizer ? "distributed" : a.zero > 0 ? fmt::format("zero{}", a.zero) : "none", b.compute,
                       b.bubble, exposed, b.optimizer, plan_command(a, engine));
  }
  return out;
}

int cmd_search(const SearchArgs& a) {
  if (!a.csv.empty()) {
    std::ofstream probe(a.csv);
    if (!probe) throw InputError("command line", "--csv", fmt::format("cannot write '{}'", a.csv));
  }
  const SearchResult result = search_plans(a.request, [](const std::string& line) { std::cerr << line << "\n"; });
  if (a.json) std::cout << search_json(result, a.request.engine) << "\n";
  else print_text(result, a.request.engine, a.request.top);
  if (!a.csv.empty()) {
    std::ofstream(a.csv) << search_csv(result, a.request.engine);
    if (!a.json) std::cout << fmt::format("\ncsv             {} ({} plans)\n", a.csv, result.ranked.size());
  }
  return result.ranked.empty() ? kExitFailed : kExitOk;
}

}  // namespace placesim
