#include "placement/planners/search/search_planner.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

namespace {

// A list option (`tp: [1, 2, 4]`, or one value), each value through `convert` (which throws the
// field's error).
template <class T, class Convert>
void add_list(OptionSchema<SearchPlannerConfig>& s, const char* key, std::vector<T> SearchSpace::*member, const char* help,
              std::vector<std::string> choices, const char* example, Convert convert) {
  s.add({key, "list", help, "unset", std::move(choices), example},
        [member, convert](const YamlFields& f, std::string_view k, SearchPlannerConfig& c) {
          const YAML::Node node = f.node(k);
          std::vector<T> values;
          auto take = [&](const YAML::Node& v) { values.push_back(convert(f, k, v.IsScalar() ? v.Scalar() : std::string("a list"))); };
          if (node.IsSequence()) {
            for (const YAML::Node& v : node) take(v);
          } else {
            take(node);
          }
          if (values.empty()) throw InputError(f.file(), f.field(k), "expected at least one value");
          c.space.*member = values;
        });
}

// Whole numbers from 1 to `max`.
void add_counts(OptionSchema<SearchPlannerConfig>& s, const char* key, std::vector<int> SearchSpace::*member, const char* help,
                int max, const char* example) {
  add_list(s, key, member, help, {}, example, [max](const YamlFields& f, std::string_view k, const std::string& text) {
    if (const std::string why = whole_number_problem(text, 1, max); !why.empty()) throw InputError(f.file(), f.field(k), why);
    return static_cast<int>(std::stol(text));
  });
}

// Names from `names`.
void add_names(OptionSchema<SearchPlannerConfig>& s, const char* key, std::vector<std::string> SearchSpace::*member, const char* help,
               std::vector<std::string> names, const char* example) {
  add_list(s, key, member, help, names, example, [names](const YamlFields& f, std::string_view k, const std::string& text) {
    if (std::find(names.begin(), names.end(), text) == names.end())
      throw InputError(f.file(), f.field(k), fmt::format("expected one of {}, got '{}'", fmt::join(names, ", "), text));
    return text;
  });
}

// The base of every candidate: the workload's model and how its kernels are timed.
PlanArgs base_args(const ModelSource& source, const SearchPlannerConfig& c) {
  PlanArgs a;
  a.model = source.model;
  a.model_file = source.model_file;
  a.cluster = "CLUSTER.yaml";  // the point's cluster: only named in the printed flags
  a.gpu = source.zoo.gpu;
  if (source.zoo.precision) a.precision = std::string(enum_name<models::Precision>(models::kPrecisionNames, *source.zoo.precision));
  if (source.zoo.main_gradients)
    a.main_gradients = std::string(enum_name<MainGradients>(kMainGradientsNames, *source.zoo.main_gradients));
  a.sequence = source.zoo.sequence;
  a.attention = source.zoo.fused_attention ? "fused" : "unfused";
  a.mfu = source.zoo.mfu;
  a.framework = c.framework;
  return a;
}

nlohmann::json candidate_json(const SearchCandidate& k) {
  const PlanArgs& a = k.args;
  const int micro_batches = plan_from_args(a, "search", "schedule", "gradient_algorithm").micro_batches;
  std::string optimizer = a.distributed_optimizer ? "distributed" : a.zero == 0 ? "none" : fmt::format("zero{}", a.zero);
  return {{"tp", a.tp},
          {"pp", a.pp},
          {"dp", a.dp},
          {"cp", a.cp},
          {"ep", a.ep},
          {"virtual_stages", a.virtual_stages},
          {"micro_batch_size", a.micro_batch_size},
          {"micro_batches", micro_batches},
          {"recompute", a.recompute},
          {"sequence_parallel", a.sequence_parallel},
          {"optimizer", optimizer},
          {"tp_comm_overlap", a.tp_comm_overlap},
          {"gpu_order", a.gpu_order},
          {"iteration_s", k.iteration_s},
          {"tokens_per_s_per_gpu", k.tokens_per_s_per_gpu},
          {"mfu", k.mfu},
          {"memory_bytes", k.memory_bytes},
          {"plan_command", plan_command(a, "flow")}};
}

}  // namespace

std::string SearchPlanner::estimate_problem() const { return ""; }

PlanResult SearchPlanner::plan_impl(const LayerWorkload& /*workload*/, const Cluster& cluster, const Deadline& /*deadline*/) {
  if (!model_source())
    throw std::invalid_argument(
        "search builds the model again at every configuration it tries: the workload must be a model (workload: model or "
        "model_file), not a per-layer workload file");
  SearchRequest r;
  r.base = base_args(*model_source(), config_);
  r.gpus = config_.gpus;
  r.global_batch = config_.global_batch;
  r.space = config_.space;
  r.top = config_.top;
  r.exhaustive = config_.exhaustive;
  r.threads = config_.threads;
  const SearchResult found = search_plans(r, cluster);
  if (found.ranked.empty())
    throw std::invalid_argument(fmt::format("search: no plan of {} configurations fits and runs ({} over memory, {} not plans of the model)",
                                            found.enumerated, found.over_memory, found.invalid));
  const SearchCandidate& best = found.ranked.front();
  PlanResult out;
  out.plan = plan_from_args(best.args, "search", "schedule", "gradient_algorithm");
  out.plan.stage_starts = best.stage_starts;
  out.workload = model_from_args(best.args, "search");
  nlohmann::json ranked = nlohmann::json::array();
  for (const SearchCandidate& k : found.ranked) ranked.push_back(candidate_json(k));
  nlohmann::json phases = nlohmann::json::array();
  for (const SearchPhase& p : found.phases) phases.push_back({{"phase", p.name}, {"candidates", p.candidates}, {"seconds", p.seconds}});
  out.details = {{"best", candidate_json(best)},
                 {"ranked", std::move(ranked)},
                 {"enumerated", found.enumerated},
                 {"framework_excluded", found.framework_excluded},
                 {"invalid", found.invalid},
                 {"over_memory", found.over_memory},
                 {"fitting", found.fitting},
                 {"estimated", found.estimated},
                 {"simulated", found.simulated},
                 {"proven_best", found.proven()},
                 {"phases", std::move(phases)},
                 {"notes", found.notes}};
  return out;
}

OptionSchema<SearchPlannerConfig> search_planner_schema() {
  OptionSchema<SearchPlannerConfig> s;
  s.count("global_batch", &SearchPlannerConfig::global_batch, "sequences per iteration (required)", 1, 1L << 40, "256");
  s.count("gpus", &SearchPlannerConfig::gpus, "GPUs to use, the cluster's first (0: all)", 0, 1 << 24, "32");
  s.count("top", &SearchPlannerConfig::top, "the best estimates simulated on the flow engine", 1, 1 << 16, "3");
  s.flag("exhaustive", &SearchPlannerConfig::exhaustive,
         "then every candidate whose lower bound beats the best simulated, so that the best is the best of the space");
  s.count("threads", &SearchPlannerConfig::threads, "candidates simulated at once", 1, 1 << 10, "2");
  s.add({"framework", "choice", "whose plans (plan --framework): the candidates as that framework runs them", "megatron-lm",
         [] {
           std::vector<std::string> names;
           for (const auto& n : kFrameworkNames) names.emplace_back(n.name);
           return names;
         }(),
         "megatron-core"},
        [](const YamlFields& f, std::string_view k, SearchPlannerConfig& c) {
          const std::string name = f.string(k);
          enum_parse<Framework>(kFrameworkNames, name, f.file(), f.field(k));
          c.framework = name;
        });
  add_counts(s, "tp", &SearchSpace::tp, "tensor-parallel widths to try (default: powers of two up to a server's GPUs)", 1 << 16, "[1, 2]");
  add_counts(s, "pp", &SearchSpace::pp, "pipeline depths (default: every divisor of the GPUs left, up to the layers)", 1 << 16, "[1, 2]");
  add_counts(s, "cp", &SearchSpace::cp, "context-parallel widths (default: 1, 2, 4, 8, 16 where the sequence splits)", 1 << 16, "[1]");
  add_counts(s, "ep", &SearchSpace::ep, "expert-parallel widths (default: the divisors of the experts; 1 for dense models)", 1 << 16, "[1]");
  add_counts(s, "virtual_stages", &SearchSpace::virtual_stages, "virtual stages per pipeline rank (default: Megatron-LM's rule)", 1024,
             "[1]");
  add_counts(s, "micro_batch_size", &SearchSpace::micro_batch_size, "sequences per micro-batch (default: 1, 2, 4, 8)", 1 << 16, "[1, 2]");
  add_names(s, "recompute", &SearchSpace::recompute, "recomputation (default: all three; selective only with unfused attention)",
            {"none", "selective", "full"}, "[none, full]");
  add_names(s, "sequence_parallel", &SearchSpace::sequence_parallel, "sequence parallelism (default: both, on where tp >= 2)",
            {"on", "off"}, "[on]");
  add_names(s, "optimizer", &SearchSpace::optimizer, "optimizer sharding (default: the framework's)",
            {"none", "distributed", "zero1", "zero2", "zero3"}, "[none, distributed]");
  add_names(s, "tp_comm_overlap", &SearchSpace::tp_comm_overlap, "tensor-parallel overlap (default: both where sequence parallel)",
            {"on", "off"}, "[on]");
  add_names(s, "gpu_order", &SearchSpace::gpu_order, "GPU orders (default: tp-pp-dp)", {"tp-pp-dp", "tp-dp-pp"}, "[tp-pp-dp, tp-dp-pp]");
  s.check([](const YamlFields& f, SearchPlannerConfig& c) {
    if (!f.has("global_batch")) throw InputError(f.file(), f.field("global_batch"), "expected the sequences per iteration (required)");
  });
  return s;
}

PlannerInfo search_planner_info() {
  return planner_info<SearchPlanner>(
      "search",
      "placesim search at each point: every Megatron-style plan of the workload's model on the point's cluster, pruned by "
      "memory, the best estimates simulated on the flow engine; the best is the plan (docs/search.md)",
      search_planner_schema());
}

}  // namespace placesim
