#include "scenarios/runner/scenario.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "placement/strategies/celeritas/celeritas.h"
#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/core/errors.h"
#include "sim/io/graph_io.h"
#include "sim/core/graph_stats.h"
#include "sim/config/plan_options.h"
#include "sim/config/yaml_fields.h"
#include "scenarios/runner/jobs.h"
#include "topologies/registry.h"

namespace placesim {

namespace fs = std::filesystem;

namespace {

// A path a scenario names: relative paths are relative to the scenario file's folder.
fs::path beside_scenario(const std::string& scenario_file, const std::string& path) {
  fs::path p = path;
  if (p.is_relative()) p = fs::path(scenario_file).parent_path() / p;
  return p;
}

// The input a source names, checked when the scenario is read (a bad path is a bad input, exit 2,
// not a failed point) and again when it is loaded; `what` says what should be there.
fs::path existing_input(const std::string& scenario_file, const std::string& field, const std::string& path,
                        std::string_view what, bool directory) {
  const fs::path p = beside_scenario(scenario_file, path);
  if (!fs::exists(p)) throw InputError(scenario_file, field, fmt::format("'{}' does not exist; expected {}", p.string(), what));
  if (directory ? !fs::is_directory(p) : fs::is_directory(p))
    throw InputError(scenario_file, field, fmt::format("'{}' is not {}", p.string(), what));
  return p.lexically_normal();
}

constexpr std::string_view kGraphFile = "a graph file (QuickP's, MSR's or placesim's JSON)";
constexpr std::string_view kOnnxFile = "an ONNX file (tools/export_onnx.py writes one from a PyTorch model)";
constexpr std::string_view kChakraDir = "a directory of Chakra traces";
constexpr std::string_view kWorkloadFile = "a workload file (NEST's per-layer JSON)";
constexpr std::string_view kModelFile = "a model file (YAML: family, layers, hidden, heads, ...)";

}  // namespace

GraphSource graph_source_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  GraphSource g;
  if (f.has("file") + f.has("builtin") + f.has("model") + f.has("onnx") + f.has("chakra") != 1)
    throw InputError(file, path, "expected exactly one of 'file' (a graph file), 'builtin' (fig3.1, synthetic), 'model' (" +
                                     models::zoo_model_names() + "), 'onnx' (an ONNX model) or 'chakra' (a directory of Chakra traces)");
  if (f.has("chakra")) {
    f.allow_only({"chakra", "prefix"});
    g.chakra = f.string("chakra");
    g.chakra_prefix = f.string_or("prefix", "");
    existing_input(file, f.field("chakra"), g.chakra, kChakraDir, true);
    return g;
  }
  if (f.has("onnx")) {
    g.onnx = models::onnx_import_schema().parse(f);
    existing_input(file, f.field("onnx"), g.onnx->onnx, kOnnxFile, false);
    return g;
  }
  if (f.has("model")) {
    YAML::Node model = YAML::Clone(node);
    if (f.has("memory")) {
      const std::string memory = f.string("memory");
      if (memory != "built" && memory != "regression")
        throw InputError(file, f.field("memory"), fmt::format("expected built or regression, got '{}'", memory));
      g.memory_regression = memory == "regression";
      model.remove("memory");
    }
    g.model = models::model_config_from_yaml(model, file, path);
    return g;
  }
  if (f.has("file")) {
    f.allow_only({"file", "format", "largest_component"});
    g.file = f.string("file");
    g.format = f.string_or("format", "auto");
    parse_graph_format(g.format, file, f.field("format"));
    g.largest_component = f.boolean_or("largest_component", false);
    existing_input(file, f.field("file"), g.file, kGraphFile, false);
    return g;
  }
  g.builtin = f.string("builtin");
  if (g.builtin == "fig3.1") {
    f.allow_only({"builtin"});
  } else if (g.builtin == "synthetic") {
    f.allow_only({"builtin", "layers", "branches", "ops_per_branch", "mean_compute", "mean_tensor", "mean_memory", "seed"});
    auto& s = g.synthetic;
    auto positive = [&](std::string_view key, int fallback) {
      long v = f.integer_or(key, fallback);
      if (v < 1 || v > 10'000'000) throw InputError(file, f.field(key), "expected a whole number >= 1");
      return static_cast<int>(v);
    };
    s.layers = positive("layers", s.layers);
    s.branches = positive("branches", s.branches);
    s.ops_per_branch = positive("ops_per_branch", s.ops_per_branch);
    s.mean_compute_s = f.duration_or("mean_compute", s.mean_compute_s);
    s.mean_tensor_bytes = f.bytes_or("mean_tensor", s.mean_tensor_bytes);
    s.mean_memory_bytes = f.bytes_or("mean_memory", s.mean_memory_bytes);
    s.seed = static_cast<std::uint64_t>(f.integer_or("seed", static_cast<long>(s.seed)));
  } else {
    throw InputError(file, f.field("builtin"), fmt::format("unknown built-in graph '{}' (valid: fig3.1, synthetic)", g.builtin));
  }
  return g;
}

namespace {

CoarseningConfig coarsening_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"scheme", "target"});
  const std::string name = f.string("scheme");
  const auto scheme = parse_coarsening_scheme(name);
  if (!scheme) {
    const std::vector<std::string> names = coarsening_scheme_names();
    std::string valid;
    for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
    const std::string hint = nearest_word(name, names);
    throw InputError(file, f.field("scheme"),
                     fmt::format("unknown coarsening scheme '{}'{} (valid schemes: {})", name,
                                 hint.empty() ? "" : "; did you mean '" + hint + "'?", valid));
  }
  CoarseningConfig c;
  c.scheme = *scheme;
  if (c.scheme == CoarseningScheme::PlaceTo) {
    if (!f.has("target"))
      throw InputError(file, path + ".target", "placeto needs a target: the number of coarse operators to keep");
    const long target = f.integer("target");
    if (target < 1 || target > 100'000'000) throw InputError(file, f.field("target"), "expected a whole number >= 1");
    c.target = static_cast<int>(target);
  } else if (f.has("target")) {
    throw InputError(file, f.field("target"), "only the placeto scheme takes a target");
  }
  return c;
}

}  // namespace

WorkloadSource workload_source_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  if (static_cast<int>(f.has("file")) + f.has("model") + f.has("model_file") != 1)
    throw InputError(file, path,
                     "expected exactly one of 'model' (a layer-level model: " + models::layer_zoo_names() +
                         "), 'model_file' (a model by its dimensions, YAML) or 'file' (a per-layer workload, NEST's JSON)");
  WorkloadSource w;
  const OptionSchema<models::LayerZooOptions> zoo = models::layer_zoo_schema();
  if (f.has("file")) {
    w.file = f.string("file");
    f.allow_only({"file"});  // the zoo's options mean nothing to a measured workload
    existing_input(file, f.field("file"), w.file, kWorkloadFile, false);
    return w;
  }
  std::vector<std::string> keys = zoo.keys();
  keys.push_back(f.has("model") ? "model" : "model_file");
  check_known_keys(f, keys);
  w.zoo = zoo.parse_known(f);
  fs::path model_path;
  if (f.has("model")) {
    w.model = f.string("model");
  } else {
    w.model_file = f.string("model_file");
    model_path = existing_input(file, f.field("model_file"), w.model_file, kModelFile, false);
  }
  // The model and the zoo's own checks (the GPU preset, the sequence), now, naming the field.
  try {
    if (!w.model.empty()) models::build_layer_model(w.model, w.zoo, {1}, file);
    else models::build_layer_model(models::load_model_file(model_path.string()), w.zoo, {1}, file);
  } catch (const InputError& e) {
    if (e.file() != file) throw;
    throw InputError(file, path + "." + e.field(), e.reason());
  }
  return w;
}

LayerWorkload load_workload_source(const WorkloadSource& source, const std::string& scenario_file) {
  if (!source.model.empty())
    return models::build_layer_model(source.model, source.zoo, models::layer_zoo_widths(source.model), scenario_file);
  if (!source.model_file.empty()) {
    const models::TransformerShape shape =
        models::load_model_file(existing_input(scenario_file, "workload.model_file", source.model_file, kModelFile, false).string());
    return models::build_layer_model(shape, source.zoo, models::layer_widths(shape), scenario_file);
  }
  return load_nest_workload(existing_input(scenario_file, "workload.file", source.file, kWorkloadFile, false).string());
}

std::optional<ModelSource> model_source_of(const WorkloadSource& source, const std::string& scenario_file) {
  if (!source.model.empty()) return ModelSource{source.model, "", source.zoo};
  if (!source.model_file.empty())
    return ModelSource{"", existing_input(scenario_file, "workload.model_file", source.model_file, kModelFile, false).string(), source.zoo};
  return std::nullopt;
}

std::string estimate_problem(const Scenario& scenario) {
  if (!scenario.simulation.engines.estimate_only()) return "";
  if (!scenario.jobs.empty())
    return "estimate runs no engine, and jobs on one cluster meet in the network an engine simulates: choose evaluator, "
           "flow, simgrid, both or all";
  if (!scenario.workload)
    return "estimate prices a workload's parallel plans by NEST's analytical model; a graph's placements need an "
           "engine: evaluator, flow, simgrid, both or all";
  if (scenario.chakra) return "estimate runs no engine, so there is no timeline for output.chakra; choose an engine";
  return "";
}

std::string collectives_problem(const Scenario& scenario, std::span<const std::size_t> strategies) {
  if (scenario.simulation.collectives != CollectiveDetail::Condensed) return "";
  if (scenario.simulation.engines.estimate_only())
    return "engine estimate builds no execution graph, so there are no collectives to condense (remove the setting or "
           "choose an engine)";
  if (scenario.workload) return "";
  if (!scenario.jobs.empty()) {
    for (const JobSpec& job : scenario.jobs)
      if (job.workload || job.strategy.data_parallel) return "";
    return "condensed condenses the ring collectives of parallel plans and of data_parallel strategies; no job has one "
           "(remove the setting)";
  }
  for (std::size_t i : strategies)
    if (scenario.strategies[i].data_parallel) return "";
  return "condensed condenses the ring collectives of parallel plans (workload:) and of data_parallel strategies; these "
         "strategies place a graph without data_parallel, so there is none (remove the setting)";
}

std::string source_name(const Scenario& scenario) {
  if (!scenario.jobs.empty()) {
    std::string names;
    for (const JobSpec& job : scenario.jobs) names += (names.empty() ? "" : "+") + source_name(job.graph, job.workload);
    return names;
  }
  return source_name(scenario.graph, scenario.workload);
}

std::string source_name(const GraphSource& g, const std::optional<WorkloadSource>& workload) {
  if (workload) return workload->model.empty() ? fs::path(workload->file).stem().string() : workload->model;
  if (g.model) return g.model->model;
  if (g.onnx) return fs::path(g.onnx->onnx).stem().string();
  if (!g.chakra.empty()) {
    const fs::path dir = fs::path(g.chakra).lexically_normal();  // "traces/" names "traces" too
    return (dir.has_filename() ? dir : dir.parent_path()).filename().string();
  }
  if (!g.builtin.empty()) return g.builtin;
  return fs::path(g.file).stem().string();
}

Graph load_graph_source(const GraphSource& source, const std::string& scenario_file, std::vector<std::string>& warnings) {
  if (source.model && source.memory_regression) {
    const auto fit = celeritas::fit_memory_regression(*source.model, celeritas::default_small_batches(source.model->batch));
    auto estimated = celeritas::with_estimated_memory(models::zoo_graph(*source.model), fit, static_cast<double>(source.model->batch));
    warnings.push_back(fmt::format("graph.memory: regression: memory of {} of {} operators predicted from batches {}",
                                   estimated.predicted, estimated.graph.num_operators(), fmt::join(fit.batches, ", ")));
    return std::move(estimated.graph);
  }
  if (source.model) return models::zoo_graph(*source.model);
  if (source.onnx) {
    models::OnnxImportOptions options = *source.onnx;
    options.onnx = existing_input(scenario_file, "graph.onnx", options.onnx, kOnnxFile, false).string();
    return models::onnx_graph(options, warnings);
  }
  if (!source.chakra.empty()) {
    const fs::path p = existing_input(scenario_file, "graph.chakra", source.chakra, kChakraDir, true);
    ChakraTraces traces = read_chakra_traces(p.string(), source.chakra_prefix);
    warnings.insert(warnings.end(), traces.warnings.begin(), traces.warnings.end());
    if (!traces.collectives.empty())
      warnings.push_back(fmt::format("{}: the traces hold {} collective{} of a parallel plan; placed here, their steps are "
                                     "operators of no time that the strategy places like any other",
                                     p.string(), traces.collectives.size(), traces.collectives.size() == 1 ? "" : "s"));
    return std::move(traces.graph);
  }
  if (source.builtin == "fig3.1") return fig31_graph();
  if (source.builtin == "synthetic") return synthetic_training_graph(source.synthetic);
  LoadResult loaded = load_graph(existing_input(scenario_file, "graph.file", source.file, kGraphFile, false).string(), source.format);
  warnings.insert(warnings.end(), loaded.warnings.begin(), loaded.warnings.end());
  if (source.largest_component) return largest_weakly_connected_component(loaded.graph);
  return std::move(loaded.graph);
}

namespace {

// One line, for listings such as `placesim reproduce --list`; a folded YAML block (`>`) is one line
// with a trailing line break, which is dropped.
std::string description_field(const YamlFields& f) {
  std::string text = f.string_or("description", "");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.find('\n') != std::string::npos)
    throw InputError(f.file(), f.field("description"), "expected one line (a folded block, `>`, joins lines)");
  return text;
}

}  // namespace

std::string load_scenario_description(const std::string& path) {
  return description_field(YamlFields(load_yaml_file(path), path, ""));
}

std::string load_scenario_run_time(const std::string& path) {
  return YamlFields(load_yaml_file(path), path, "").string_or("run_time", "");
}

namespace {

// `data_parallel: 4` (the replicas) or `data_parallel: {replicas: 4, algorithm: ..., ...}`; the
// replicas must divide the cluster's GPUs.
DataParallelConfig data_parallel_from_yaml(const YamlFields& strategy, const std::string& field, const Cluster* cluster) {
  const YAML::Node node = strategy.node("data_parallel");
  DataParallelConfig c;
  if (node.IsScalar()) {
    YAML::Node as_map(YAML::NodeType::Map);
    as_map["replicas"] = node;
    c = data_parallel_schema().parse(YamlFields(as_map, strategy.file(), field));
  } else if (node.IsMap()) {
    c = data_parallel_schema().parse(YamlFields(node, strategy.file(), field));
  } else {
    throw InputError(strategy.file(), field, "expected the number of replicas or a mapping {replicas: N, algorithm, chunks, bucket_bytes}");
  }
  // What the cluster says now; what the graph says (it has gradients) when the point runs.
  if (cluster)
    if (const std::string why = data_parallel_cluster_problem(*cluster, c); !why.empty())
      throw InputError(strategy.file(), field, why);
  return c;
}

// The strategy's options with the warm-start portfolio on, where it takes it and does not say.
void with_portfolio(StrategySpec& spec) {
  const StrategyInfo* info = strategy_registry().find(spec.name);
  if (!info) return;  // named wrongly: find_strategy says so next
  // Options that are not a mapping are left for make_strategy to refuse.
  if (spec.options && !spec.options.IsNull() && !spec.options.IsMap()) return;
  const YAML::Node given = spec.options && spec.options.IsMap() ? spec.options : YAML::Node(YAML::NodeType::Map);
  auto init = std::find_if(info->options.begin(), info->options.end(), [](const OptionDoc& o) { return o.key == "init"; });
  std::string key, value;
  if (info->takes("portfolio")) key = "portfolio", value = "true";
  else if (init != info->options.end() &&
           std::find(init->choices.begin(), init->choices.end(), "portfolio") != init->choices.end())
    key = "init", value = "portfolio";
  if (key.empty() || given[key]) return;  // (a const lookup: it adds no key)
  YAML::Node options = YAML::Clone(given);
  options[key] = value;
  spec.options = options;
}

}  // namespace

StrategySpec strategy_from_yaml(const YAML::Node& node, const std::string& file, const std::string& field,
                                const Cluster* cluster, bool planner, bool portfolio) {
  StrategySpec spec;
  spec.field = field;
  if (node.IsScalar()) {
    spec.name = node.Scalar();
  } else {
    YamlFields e(node, file, spec.field);
    e.allow_only({"name", "label", "options", "coarsen", "refine", "data_parallel"});
    spec.name = e.string("name");
    spec.label = e.string_or("label", "");
    if (e.has("options")) spec.options = e.node("options");
    if (e.has("coarsen")) spec.coarsen = coarsening_from_yaml(e.node("coarsen"), file, spec.field + ".coarsen");
    if (e.has("refine")) {
      // `refine:` with no value takes the defaults, as `refine: {}` does.
      const YAML::Node refine = e.node("refine").IsNull() ? YAML::Node(YAML::NodeType::Map) : e.node("refine");
      spec.refine = refine_schema().parse(YamlFields(refine, file, spec.field + ".refine"));
    }
    if (e.has("data_parallel")) spec.data_parallel = data_parallel_from_yaml(e, spec.field + ".data_parallel", cluster);
  }
  if (spec.label.empty()) spec.label = spec.name;
  if (portfolio && !planner) with_portfolio(spec);
  // Build once now so option errors surface before anything runs.
  if (planner) {
    if (spec.coarsen || spec.refine || spec.data_parallel)
      throw InputError(file, spec.field,
                       "coarsen, refine and data_parallel apply to placement strategies, not to planners (a plan "
                       "has its own dp)");
    make_planner(spec.name, spec.options, file, spec.field);
  } else {
    find_strategy(spec.name, file, spec.field + ".name");
    make_strategy(spec.name, spec.options, file, spec.field);
  }
  return spec;
}

namespace {

// The graph or workload, the cluster and the strategies of a scenario of one job.
void parse_one_job(const YamlFields& f, const std::string& file, Scenario& s) {
  if (f.has("allocation"))
    throw InputError(file, f.field("allocation"), "allocation policies place the jobs of `jobs:`; this scenario has none");
  if (f.has("graph") == f.has("workload"))
    throw InputError(file, "graph",
                     "expected exactly one of 'graph' (operators for placement strategies) or 'workload' (a layer-level "
                     "model for planners such as megatron)");
  if (f.has("workload")) s.workload = workload_source_from_yaml(f.node("workload"), file, "workload");
  else s.graph = graph_source_from_yaml(f.node("graph"), file, "graph");
  s.cluster = cluster_from_yaml(f.node("cluster"), file, "cluster");

  const YAML::Node list = f.node("strategies");
  if (!list.IsSequence() || list.size() == 0)
    throw InputError(file, f.field("strategies"), "expected a non-empty list of strategies");
  // `portfolio: true` for the scenario: every strategy that can use the warm-start portfolio does,
  // unless its own options say otherwise (mcmc starts its chain from it).
  const bool portfolio = f.boolean_or("portfolio", false);
  std::set<std::string> labels;
  for (std::size_t i = 0; i < list.size(); ++i) {
    StrategySpec spec = strategy_from_yaml(list[i], file, fmt::format("strategies[{}]", i), &s.cluster,
                                           s.workload.has_value(), portfolio);
    if (!labels.insert(spec.label).second)
      throw InputError(file, spec.field, fmt::format("label '{}' is used twice; give one a distinct 'label'", spec.label));
    s.strategies.push_back(std::move(spec));
  }
}

// A scenario of several jobs on one cluster (scenarios/runner/jobs.h).
void parse_jobs(const YamlFields& f, const std::string& file, Scenario& s) {
  for (const char* key : {"graph", "workload", "strategies", "portfolio"})
    if (f.has(key))
      throw InputError(file, f.field(key),
                       fmt::format("a scenario of jobs gives each job its own graph or workload and strategy "
                                   "(jobs[i].graph, jobs[i].workload, jobs[i].strategy); remove the top-level '{}'", key));
  s.cluster = cluster_from_yaml(f.node("cluster"), file, "cluster");
  s.jobs = jobs_from_yaml(f.node("jobs"), file, s.cluster);
  s.strategies = allocations_from_yaml(f.has("allocation") ? f.node("allocation") : YAML::Node(), file);
}

}  // namespace

Scenario parse_scenario(const YAML::Node& root, const std::string& file) {
  YamlFields f(root, file, "");
  f.allow_only({"name", "description", "graph", "workload", "cluster", "strategies", "jobs", "allocation", "simulation",
                "output", "sweep", "report", "portfolio", "run_time"});
  Scenario s;
  s.file = file;
  s.name = f.string_or("name", fs::path(file).stem().string());
  s.description = description_field(f);
  s.run_time = f.string_or("run_time", "");
  if (f.has("jobs")) parse_jobs(f, file, s);
  else parse_one_job(f, file, s);

  if (f.has("simulation")) {
    YamlFields sim(f.node("simulation"), file, "simulation");
    sim.allow_only({"engine", "order", "collectives", "full_graph", "trace", "repetitions", "seeds", "time_limit"});
    s.simulation.full_graph = sim.boolean_or("full_graph", false);
    if (sim.has("time_limit") && sim.string("time_limit") != "none") {
      s.simulation.time_limit_s = sim.duration_or("time_limit", 0);
      if (!(s.simulation.time_limit_s > 0))
        throw InputError(file, sim.field("time_limit"), "expected a positive duration such as 10min, or none");
    }
    if (sim.has("engine")) s.simulation.engines = EngineSet::parse(sim.string("engine"), file, sim.field("engine"));
    if (sim.has("order"))
      s.simulation.order = enum_parse<RunOrder>(kRunOrderNames, sim.string("order"), file, sim.field("order"));
    if (sim.has("collectives"))
      s.simulation.collectives = enum_parse<CollectiveDetail>(kCollectiveDetailNames, sim.string_or("collectives", ""),
                                                              file, sim.field("collectives"));
    // true, false, or gzip: the timelines written gzip'd (trace-<label>.json.gz; Perfetto opens them as they are).
    if (sim.has("trace") && sim.string("trace") == "gzip") {
      s.simulation.trace = s.simulation.trace_gzip = true;
    } else {
      try {
        s.simulation.trace = sim.boolean_or("trace", true);
      } catch (const InputError&) {
        throw InputError(file, sim.field("trace"), fmt::format("expected true, false or gzip, got '{}'", sim.string("trace")));
      }
    }
    const long repetitions = sim.integer_or("repetitions", 1);
    if (repetitions < 1 || repetitions > 1'000'000)
      throw InputError(file, sim.field("repetitions"), fmt::format("expected a whole number >= 1, got {}", repetitions));
    s.simulation.repetitions = static_cast<int>(repetitions);
    if (sim.has("seeds")) {
      const YAML::Node seeds = sim.node("seeds");
      if (!seeds.IsSequence() || seeds.size() == 0)
        throw InputError(file, sim.field("seeds"), "expected a non-empty list of whole numbers >= 0, e.g. [1, 2, 3]");
      std::set<long> seen;
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        const std::string field = fmt::format("simulation.seeds[{}] (line {})", i, seeds[i].Mark().line + 1);
        const std::string text = seeds[i].IsScalar() ? seeds[i].Scalar() : std::string();
        long seed = -1;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
        if (!seeds[i].IsScalar() || ec != std::errc() || ptr != text.data() + text.size() || seed < 0)
          throw InputError(file, field, fmt::format("expected a whole number >= 0, got '{}'", text));
        if (!seen.insert(seed).second) throw InputError(file, field, fmt::format("seed {} is listed twice", seed));
        s.simulation.seeds.push_back(seed);
      }
    }
  }
  // `output: DIR` or `output: {dir: DIR, chakra: true}`.
  if (f.has("output") && f.node("output").IsMap()) {
    YamlFields out(f.node("output"), file, "output");
    out.allow_only({"dir", "chakra"});
    s.output = out.string_or("dir", "out/" + s.name);
    s.chakra = out.boolean_or("chakra", false);
  } else {
    s.output = f.string_or("output", "out/" + s.name);
  }
  if (const std::string why = estimate_problem(s); !why.empty()) throw InputError(file, "simulation.engine", why);
  if (!s.jobs.empty() && !s.simulation.seeds.empty())
    for (const StrategySpec& a : s.strategies)
      if (a.options.IsMap() && a.options["seed"])
        throw InputError(file, a.field,
                         fmt::format("allocation '{}' has a seed of its own, which simulation.seeds would replace; give one "
                                     "or the other", a.label));
  if (f.has("report")) s.report = report_spec_from_yaml(f.node("report"), file, "report");
  return s;
}


void check_planner_options(const Scenario& scenario, std::span<const std::size_t> strategies) {
  if (!scenario.workload || strategies.empty()) return;
  const LayerWorkload workload = load_workload_source(*scenario.workload, scenario.file);
  for (std::size_t i : strategies) {
    const StrategySpec& spec = scenario.strategies.at(i);
    const auto planner = make_planner(spec.name, spec.options, scenario.file, spec.field);
    if (const std::string why = planner->options_problem(workload, scenario.cluster); !why.empty())
      throw InputError(scenario.file, spec.field + ".options", why);
    if (scenario.simulation.engines.estimate_only())
      if (const std::string why = planner->estimate_problem(); !why.empty())
        throw InputError(scenario.file, spec.field + ".options", "simulation.engine estimate: " + why);
  }
}

Scenario load_scenario(const std::string& path) { return parse_scenario(load_yaml_file(path), path); }

}  // namespace placesim
