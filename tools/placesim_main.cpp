// placesim: the command-line front door. Exit codes (tools/cli_conventions.h): 0 ok, 1 some point
// failed, 2 bad input or environment, said in one line naming the file or flag and the field.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <fstream>
#include <unistd.h>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "nccl_tests_reproduction.h"
#include "validation_reproduction.h"
#include "cli_conventions.h"
#include "collective_cli.h"
#include "plan_cli.h"
#include "search_cli.h"
#include "goodput_cli.h"
#include "version.h"
#include "placeto_cli.h"
#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "scenarios/runner/record.h"
#include "scenarios/runner/report.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/runner.h"
#include "scenarios/runner/scenario.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"
#include "sim/io/graph_io.h"
#include "sim/core/graph_stats.h"
#include "sim/models/zoo.h"
#include "sim/io/placement_io.h"
#include "sim/core/units.h"
#include "sim/config/yaml_fields.h"
#include "topologies/registry.h"
#include "topologies/presets.h"
#include "sim/models/gpu.h"
#include "topologies/topology_info.h"

#ifdef PLACESIM_HAVE_MPI
// The C API only: Open MPI's deprecated C++ bindings live in a library we do not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

using namespace placesim;
namespace fs = std::filesystem;

namespace {

// The graph file of a command (simulate, graph info, graph convert) in the format its --format
// names, its loader's warnings on stderr; --format onnx is refused with how ONNX models are read.
LoadResult load_command_graph(const std::string& path, const std::string& format) {
  if (format == "onnx") refuse_onnx_model(path, "--format");
  LoadResult loaded = load_graph(path, parse_graph_format(format, "command line", "--format"));
  for (const auto& w : loaded.warnings) std::cerr << "warning: " << w << "\n";
  return loaded;
}

struct RunArgs {
  std::string scenario, output, engine;
  int jobs = 1;
  std::size_t max_points = kDefaultMaxPoints;
  bool resume = false, fresh = false, mpi = false;
  long debug_abort_point = -1, debug_stop_after = -1;  // test hooks (hidden flags)
};

// Prints the table of every point in results.jsonl; kExitFailed when some point failed.
int report_points(const std::string& output) {
  std::vector<PointRecord> records = read_result_lines((std::filesystem::path(output) / "results.jsonl").string());
  std::stable_sort(records.begin(), records.end(), [](const PointRecord& a, const PointRecord& b) { return a.index < b.index; });
  std::cout << format_point_table(records);
  std::cout << fmt::format("results: {0}/results.jsonl, {0}/results.json, {0}/results.csv\n", output);
  // oom and infeasible points are results (README "Exit codes"); failed ones are not.
  return std::any_of(records.begin(), records.end(), [](const PointRecord& r) { return r.status == PointStatus::Failed || r.status == PointStatus::TimedOut; })
             ? kExitFailed
             : kExitOk;
}

// run_report's code as an exit code: the only failure it reports is plots that could not be made
// (no plot script, no python3 or matplotlib), which is the environment.
int report_exit_code(int run_report_code) { return run_report_code == 0 ? kExitOk : kExitBadInput; }

// Says how many points a scenario has as soon as they are counted, before they are made (a large
// sweep takes a while to plan), and refuses more than `max_points`.
PlanOptions plan_options(std::size_t max_points) {
  PlanOptions options;
  options.max_points = max_points;
  options.counted = [](const SweepCount& c) {
    std::cerr << fmt::format("planning {}{} point{} ({})\n", c.exact ? "" : "at least ", c.points, c.points == 1 ? "" : "s",
                             c.breakdown)
              << std::flush;
  };
  return options;
}

// The graph format a scenario file's YAML looks like ("placesim", "quickp", "msr"), or "" when it
// does not look like a graph: graph files are JSON, which the YAML parser reads too, and without
// this `run g.json` says "format (line 1): unknown key".
std::string graph_format_of(const YAML::Node& root) {
  if (!root.IsMap()) return "";
  std::set<std::string> keys;
  for (const auto& kv : root)
    if (kv.first.IsScalar()) keys.insert(kv.first.Scalar());
  if ((keys.contains("graph") || keys.contains("workload")) && keys.contains("strategies"))
    return "";  // a scenario, if a broken one
  const YAML::Node format = root["format"];
  if (format && format.IsScalar() && format.Scalar() == "placesim-graph") return "placesim";
  if (keys.contains("nodes") && keys.contains("edges") && keys.contains("maxSizePerFPGA")) return "msr";
  if (keys.contains("nodes") && (keys.contains("links") || keys.contains("edges"))) return "quickp";
  return "";
}

// Refuses a graph file given where a scenario (or a cluster file, `expected`) is expected.
void refuse_graph(const YAML::Node& root, const std::string& path, const std::string& expected) {
  if (const std::string format = graph_format_of(root); !format.empty())
    throw InputError(path, "",
                     fmt::format("looks like a graph ({1} format), not {2}: `placesim simulate --graph {0} "
                                 "--placement P.json --cluster C.yaml` simulates one placement of it, `placesim graph "
                                 "info {0}` describes it; to place it with strategies, write a scenario with "
                                 "`graph: {{file: {0}}}` (scenarios/quickstart.yaml is one to start from)",
                                 path, format, expected));
}

// load_sweep, but a graph file given for the scenario is refused as such.
SweepPlan load_scenario_sweep(const std::string& path, const PlanOptions& options) {
  const YAML::Node root = load_yaml_file(path);
  refuse_graph(root, path, "a scenario");
  return plan_sweep(root, path, options);
}

// The MPI shards results.rank<r>.jsonl of a results folder.
std::vector<fs::path> result_shards(const fs::path& output) {
  std::vector<fs::path> shards;
  std::error_code ec;
  if (!fs::is_directory(output, ec)) return shards;
  for (const auto& entry : fs::directory_iterator(output, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("results.rank") && name.ends_with(".jsonl")) shards.push_back(entry.path());
  }
  return shards;
}

// Finished points of an earlier run in `output` (results.jsonl, and with `shards` the MPI ranks'
// results.rank<r>.jsonl), by lines. Ranks of an MPI run count the merged file only: rank 0 writes
// it after every rank has checked, where a rank's shard may already be growing.
std::size_t earlier_points(const std::filesystem::path& output, bool shards) {
  std::vector<fs::path> files = shards ? result_shards(output) : std::vector<fs::path>{};
  files.push_back(output / "results.jsonl");
  std::size_t lines = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ++lines;
  }
  return lines;
}

// What Ctrl-C (or SIGTERM) prints before the run dies: how to continue. A signal handler can only
// reach static storage.
std::string& interrupted_message() {
  static std::string message;
  return message;
}
void on_interrupt(int signal) {
  const std::string& m = interrupted_message();
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, m.data(), m.size());
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

int cmd_run(const RunArgs& a) {
  PlanOptions planning = plan_options(a.max_points);
  // --engine is checked against the scenario before its points are counted and said; each
  // variant again below (a sweep can change the graph).
  if (!a.engine.empty())
    planning.read = [&](const Scenario& base) {
      Scenario v = base;
      v.simulation.engines = EngineSet::parse(a.engine, "command line", "--engine");
      if (const std::string why = estimate_problem(v); !why.empty()) throw InputError("command line", "--engine", why);
    };
  SweepPlan plan = load_scenario_sweep(a.scenario, planning);
  if (!a.engine.empty()) {
    for (Scenario& v : plan.variants) {
      v.simulation.engines = EngineSet::parse(a.engine, "command line", "--engine");
      if (const std::string why = estimate_problem(v); !why.empty()) throw InputError("command line", "--engine", why);
    }
    // What a planner's plans need beyond the estimate (megatron's mixed stage widths), per
    // strategy that runs: the scenario's own engine was checked when the sweep was planned.
    std::set<std::pair<std::size_t, std::size_t>> checked;
    for (const SweepPoint& p : plan.points) {
      const Scenario& v = plan.variants[p.variant];
      if (!v.simulation.engines.estimate_only() || !v.workload || !checked.insert({p.variant, p.strategy}).second) continue;
      const StrategySpec& spec = v.strategies[p.strategy];
      if (const std::string why = make_planner(spec.name, spec.options, v.file, spec.field)->estimate_problem(); !why.empty())
        throw InputError("command line", "--engine", fmt::format("estimate: {} ({}): {}", spec.label, spec.field, why));
    }
  }
  SweepOptions options;
  options.output = a.output.empty() ? plan.output : a.output;
  options.jobs = a.jobs;
  options.resume = a.resume;
  // A folder with results of an earlier run is never emptied unasked.
  if (const std::size_t earlier = earlier_points(options.output, !a.mpi); earlier > 0 && !a.resume && !a.fresh)
    throw InputError(options.output, "results.jsonl",
                     fmt::format("holds {} finished point{} of an earlier run; --resume runs only the points missing, "
                                 "--fresh deletes them and starts over (or -o names another folder)",
                                 earlier, earlier == 1 ? "" : "s"));
  // Outside MPI, the shards of an earlier MPI run count as its results: --fresh removes them too,
  // and --resume asks for them to be merged first (a single process reads results.jsonl only).
  if (!a.mpi) {
    const std::vector<fs::path> shards = result_shards(options.output);
    if (a.fresh)
      for (const fs::path& shard : shards) fs::remove(shard);
    else if (a.resume && !shards.empty())
      throw InputError(shards.front().string(), "",
                       fmt::format("an MPI run's shard; `placesim merge {}` joins the shards into results.jsonl, "
                                   "then --resume runs the points missing",
                                   shell_quoted(options.output)));
  }
  const std::string again = fmt::format("placesim run {} --resume{}", shell_quoted(a.scenario),
                                        a.output.empty() ? "" : " -o " + shell_quoted(a.output));
  interrupted_message() =
      a.mpi ? fmt::format("\ninterrupted: each rank's finished points are in {}/results.rank<r>.jsonl; `mpirun ... {} "
                          "--mpi` runs the rest\n",
                          options.output, again)
            : fmt::format("\ninterrupted: the finished points are in {}/results.jsonl; `{}` runs the rest\n",
                          options.output, again);
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  options.debug_abort_point = a.debug_abort_point;
  options.debug_stop_after = a.debug_stop_after;
  if (!a.mpi) {
    run_sweep(plan, options, std::cerr);
    return report_points(options.output);
  }
#ifdef PLACESIM_HAVE_MPI
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &options.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &options.ranks);
  try {
    run_sweep(plan, options, std::cerr);
    MPI_Barrier(MPI_COMM_WORLD);  // every shard is complete
    if (options.rank == 0 && options.ranks > 1) merge_result_shards(options.output, options.ranks);
  } catch (const std::exception& e) {
    // The other ranks would wait at the barrier for ever.
    std::cerr << fmt::format("error: rank {}: {}\n", options.rank, e.what()) << std::flush;
    MPI_Abort(MPI_COMM_WORLD, kExitBadInput);
  }
  const int rc = options.rank == 0 ? report_points(options.output) : kExitOk;
  MPI_Finalize();
  return rc;
#else
  throw InputError("command line", "--mpi", "this placesim was built without MPI (install libopenmpi-dev and rebuild)");
#endif
}

// The reproductions: scenarios/papers/*.yaml of the data folder ($PLACESIM_PAPERS overrides).
std::filesystem::path papers_dir() {
  if (const char* env = std::getenv("PLACESIM_PAPERS"); env && *env) return env;
  return data_dir() / "scenarios" / "papers";
}

struct ReproduceArgs {
  std::string name, output;
  int jobs = 2;
  std::size_t max_points = kDefaultMaxPoints;
  bool list = false, fresh = false, no_plots = false;
  std::string gpu = "a100";  // reproduce validation: the GPU (a preset or a YAML file)
};

// The families of reproductions: a prefix P of names "P-..." shared by two files or more that is
// not itself a reproduction's name (`nest` for nest-experiment1, nest-experiment1-contention, ...),
// so that the name a paper's experiments go by runs all of them. Members are in name order.
std::map<std::string, std::vector<std::string>> reproduction_families(const std::vector<std::string>& names) {
  const std::set<std::string> exact(names.begin(), names.end());
  std::map<std::string, std::vector<std::string>> families;
  for (const auto& n : names)
    for (std::size_t i = n.find('-'); i != std::string::npos; i = n.find('-', i + 1))
      if (i > 0 && !exact.contains(n.substr(0, i))) families[n.substr(0, i)].push_back(n);
  std::erase_if(families, [](const auto& f) { return f.second.size() < 2; });
  return families;
}

// Runs one reproduction: its sweep (resuming what a previous run finished unless --fresh), then
// the comparison table, the scenario's own tables (report/pivot.md) and the plots, into `output`
// (empty: the scenario's own).
int reproduce_one(const ReproduceArgs& a, const std::filesystem::path& file, const std::string& output) {
  namespace fs = std::filesystem;
  const std::string name = file.stem().string();
  const auto started = std::chrono::steady_clock::now();
  SweepPlan plan = load_scenario_sweep(file.string(), plan_options(a.max_points));
  SweepOptions options;
  options.output = output.empty() ? plan.output : output;
  options.jobs = a.jobs;
  options.resume = !a.fresh;
  if (a.fresh) fs::remove(fs::path(options.output) / "results.jsonl");
  const SweepSummary summary = run_sweep(plan, options, std::cerr);
  ReportOptions report;
  report.results = options.output;
  report.plots = !a.no_plots;
  report.pivots = plan.variants.front().report.tables;
  report.gantt_strategy = plan.variants.front().report.gantt_strategy;
  report.summary = plan.variants.front().report.summary;
  const int rc = report_exit_code(run_report(report, std::cout, std::cerr));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // A status line, so on stderr with the others (stdout holds the tables only).
  std::cerr << fmt::format("reproduce {}: {} {} ({} run now, {} kept from before, {} failed) in {}, results in {}\n", name,
                           summary.points, summary.points == 1 ? "point" : "points", summary.points - summary.skipped,
                           summary.skipped, summary.failed, format_duration(seconds), options.output);
  return summary.failed > 0 ? kExitFailed : rc;
}

// `reproduce NAME`: scenarios/papers/NAME.yaml, or, when there is no such file, every file of the
// family NAME-*.yaml in turn (reproduction_families).
int cmd_reproduce(const ReproduceArgs& a) {
  namespace fs = std::filesystem;
  const fs::path dir = papers_dir();
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
  // By name, not path: "nest-experiment1.yaml" sorts after "nest-experiment1-scale.yaml" ('.' > '-'),
  // and a family runs its main experiment first.
  std::sort(files.begin(), files.end(),
            [](const fs::path& x, const fs::path& y) { return x.stem().string() < y.stem().string(); });
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.stem().string());
  const auto families = reproduction_families(names);
  if (a.list || a.name.empty()) {
    std::size_t width = 0;
    for (const auto& n : names) width = std::max(width, n.size());
    for (const auto& [family, members] : families) width = std::max(width, family.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string description = load_scenario_description(files[i].string());
      const std::string run_time = load_scenario_run_time(files[i].string());
      std::cout << fmt::format("{:<{}}  {}{}\n", names[i], width, description.empty() ? "(no description)" : description,
                               run_time.empty() ? "" : fmt::format(" [{}]", run_time));
    }
    std::cout << fmt::format("{:<{}}  {} [2 s]\n", "nccl-tests", width, kNcclTestsDescription);
    std::cout << fmt::format("{:<{}}  {} [2 min]\n", "validation", width, kValidationDescription);
    if (!families.empty()) std::cout << "\nfamilies (`placesim reproduce FAMILY` runs each of them in turn):\n";
    for (const auto& [family, members] : families)
      std::cout << fmt::format("{:<{}}  {}\n", family, width, fmt::join(members, ", "));
    if (!a.list) throw InputError("command line", "name", "expected a reproduction name (listed above)");
    return 0;
  }
  if (a.name == "nccl-tests") return reproduce_nccl_tests(a.output, !a.no_plots);
  if (a.name == "validation") return reproduce_validation(a.output, !a.no_plots, a.gpu);
  if (a.gpu != ReproduceArgs{}.gpu) throw InputError("command line", "--gpu", "only `reproduce validation` takes a GPU");
  if (const fs::path file = dir / (a.name + ".yaml"); fs::exists(file)) return reproduce_one(a, file, a.output);
  const auto family = families.find(a.name);
  if (family == families.end()) {
    std::string all, groups;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    std::vector<std::string> candidates(names.begin(), names.end());
    for (const auto& [f, members] : families) {
      groups += (groups.empty() ? "" : ", ") + f;
      candidates.push_back(f);
    }
    const std::string hint = nearest_word(a.name, candidates);
    throw InputError("command line", "name",
                     fmt::format("no reproduction '{}' in {}{} (there are: {}{}{})", a.name, dir.string(),
                                 hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint), all,
                                 groups.empty() ? "" : "; families, each run whole: ", groups));
  }
  const std::vector<std::string>& members = family->second;
  std::cerr << fmt::format("reproduce {}: {} reproductions in turn: {}\n", a.name, members.size(), fmt::join(members, ", "));
  const auto started = std::chrono::steady_clock::now();
  int rc = kExitOk;
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::string& m = members[i];
    std::cerr << fmt::format("reproduce {}: [{}/{}] {}\n", a.name, i + 1, members.size(), m) << std::flush;
    // stdout holds the tables: a heading says whose they are.
    std::cout << fmt::format("{}# {} ({} of {} in {})\n\n", i == 0 ? "" : "\n", m, i + 1, members.size(), a.name) << std::flush;
    // One --output is one folder per member, as each writes its results.jsonl and report/.
    const std::string output = a.output.empty() ? "" : (fs::path(a.output) / m).string();
    int member_rc = kExitOk;
    try {
      member_rc = reproduce_one(a, dir / (m + ".yaml"), output);
    } catch (const std::exception&) {
      // Bad input stops the family (the rest would likely fail alike); say how far it got.
      const std::string done = i == 0 ? "none" : fmt::format("{}", fmt::join(members.begin(), members.begin() + i, ", "));
      std::cerr << fmt::format("reproduce {}: stopped at {} ({} of {}); finished before it: {}\n", a.name, m, i + 1,
                               members.size(), done);
      throw;
    }
    if (member_rc != kExitOk) failed.push_back(m);
    // As for one reproduction: failed points (1) say more than a report that could not be made.
    if (member_rc == kExitFailed || rc == kExitFailed) rc = kExitFailed;
    else rc = std::max(rc, member_rc);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cerr << fmt::format("reproduce {}: {} reproductions in {}{}\n", a.name, members.size(), format_duration(seconds),
                           failed.empty() ? "" : fmt::format(" ({} with failures: {})", failed.size(), fmt::join(failed, ", ")));
  return rc;
}

struct SimulateArgs {
  std::string graph_path, placement_path, cluster_path, format = "auto", engine = "both", trace, chakra, replay, replay_prefix;
  bool json = false;
};

// `placesim simulate`'s report: the engines' latencies, the bounds, each GPU's memory and busy
// time, the busiest links.
void print_simulation(const std::string& graph_label, const Graph& graph, const Cluster& cluster, const Measurement& m) {
  std::cout << fmt::format("graph           {} ({} operator{}, {} tensor{})\n", graph_label, graph.num_operators(),
                           graph.num_operators() == 1 ? "" : "s", graph.num_tensors(),
                           graph.num_tensors() == 1 ? "" : "s");
  std::cout << fmt::format("cluster         {}\n", cluster.description);
  for (const EngineRun& run : m.runs.runs)
    std::cout << fmt::format("{:<16}{}{}\n", run.engine, format_duration(run.latency),
                             run.engine == kEvaluator ? std::string() : fmt::format(" (simulated in {})", format_duration(run.wall_s)));
  std::cout << fmt::format("lower bounds    critical path {}, work/GPU {}\n", format_duration(m.bounds.critical_path),
                           format_duration(m.bounds.work_per_device));
  for (int d = 0; d < cluster.num_devices(); ++d)
    std::cout << fmt::format("{:<15} memory {} of {}{}, busy {}\n", cluster.device(d).name, format_bytes(m.memory[d]),
                             format_bytes(cluster.device(d).memory_bytes),
                             m.memory[d] > cluster.device(d).memory_bytes ? " (OOM)" : "", format_duration(m.evaluator_schedule()->busy[d]));
  for (std::size_t k = 0; k < m.links.size() && k < 10; ++k)
    std::cout << fmt::format("link {:<24} {} busy {:.1f}% utilisation {:.1f}%\n", m.links[k].name, format_bytes(m.links[k].bytes),
                             100 * m.links[k].busy_fraction, 100 * m.links[k].mean_utilisation);
}

// `placesim simulate --json`: the same values, exactly (doubles in their shortest round-trip form),
// for programs (the Python module's tests compare placesim.evaluate with it bit for bit).
nlohmann::ordered_json simulation_json(const std::string& graph_label, const Graph& graph, const Cluster& cluster,
                                       const Measurement& m) {
  nlohmann::ordered_json out;
  out["graph"] = graph_label;
  out["operators"] = graph.num_operators();
  out["tensors"] = graph.num_tensors();
  out["cluster"] = cluster.description;
  for (const EngineRun& run : m.runs.runs) {
    out[run.engine + "_latency"] = run.latency;
    out[run.engine + "_wall_time"] = run.wall_s;
  }
  out["lower_bound_critical_path"] = m.bounds.critical_path;
  out["lower_bound_work_per_gpu"] = m.bounds.work_per_device;
  out["memory_per_gpu"] = m.memory;
  out["peak_memory"] = m.peak_memory;
  out["oom"] = m.oom;
  out["busy_per_gpu"] = m.evaluator_schedule()->busy;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const LinkUse& l : m.links)
    links.push_back({{"name", l.name}, {"bytes", l.bytes}, {"busy_s", l.busy_s}, {"busy_fraction", l.busy_fraction},
                     {"mean_utilisation", l.mean_utilisation}});
  out["links"] = std::move(links);
  return out;
}

int cmd_simulate(const SimulateArgs& a) {
  Graph graph;
  std::vector<DeviceId> placement;
  std::string placement_path = a.placement_path, graph_label = a.graph_path;
  std::optional<ChakraTraces> replayed;
  if (!a.replay.empty()) {
    if (!a.graph_path.empty() || !a.placement_path.empty())
      throw InputError("command line", "--replay", "replays the traces' own graph and placement: give no --graph or --placement");
    replayed = read_chakra_traces(a.replay, a.replay_prefix, ChakraCollectives::Keep);
    for (const auto& w : replayed->warnings) std::cerr << "warning: " << w << "\n";
    placement_path = a.replay;
    graph_label = "Chakra traces in " + a.replay;
  } else {
    if (a.graph_path.empty() || a.placement_path.empty())
      throw InputError("command line", a.graph_path.empty() ? "--graph" : "--placement",
                       "expected --graph and --placement (or --replay with a directory of Chakra traces)");
    LoadResult loaded = load_command_graph(a.graph_path, a.format);
    graph = std::move(loaded.graph);
    placement = load_placement(graph, a.placement_path);
  }
  const Cluster cluster = load_cluster_file(a.cluster_path);
  std::vector<AppendedCollective> collectives;  // of the replayed traces, for --chakra
  if (replayed) {
    if (replayed->ranks > cluster.num_devices())
      throw InputError(a.cluster_path, "cluster", fmt::format("has {} GPUs; the traces in {} ran on {} ranks", cluster.num_devices(),
                                                              a.replay, replayed->ranks));
    // Other tools' collectives run as placesim's on this cluster.
    ExecutionGraph replay = replay_graph(*replayed, cluster);
    graph = std::move(replay.graph);
    placement = std::move(replay.placement);
    collectives = std::move(replay.collectives);
  }
  validate_placement(graph, cluster, placement, placement_path);
  // A tensor between GPUs that cannot reach each other has no transfer time: SimGrid refuses it and
  // the evaluator's latency is infinite. The placement is what the user can change.
  for (const Tensor& t : graph.tensors())
    if (t.bytes > 0 && !cluster.reachable(placement[t.src], placement[t.dst]))
      throw InputError(placement_path, "placement." + graph.op(t.dst).name,
                       fmt::format("tensor '{}' -> '{}' ({}) goes from {} to {}, which cannot reach each other in {} "
                                   "(no route between them; `placesim topology info {}` lists the pairs): place "
                                   "both operators on GPUs that can",
                                   graph.op(t.src).name, graph.op(t.dst).name, format_bytes(t.bytes),
                                   cluster.device(placement[t.src]).name, cluster.device(placement[t.dst]).name,
                                   a.cluster_path, a.cluster_path));
  const EngineSet engines = EngineSet::parse(a.engine, "command line", "--engine");
  if (engines.has(kEstimate))
    throw InputError("command line", "--engine", "the estimate prices plans (`placesim plan`, a scenario's workload), not placements");
  const Measurement m = measure_placement(graph, cluster, placement, engines);
  if (a.json) {
    std::cout << simulation_json(graph_label, graph, cluster, m).dump() << "\n";
    return m.oom ? kExitFailed : kExitOk;
  }
  print_simulation(graph_label, graph, cluster, m);
  if (!a.trace.empty()) {
    write_trace(a.trace, graph, cluster, placement, m);
    std::cout << "trace           " << a.trace << "\n";
  }
  if (replayed && replayed->run)
    std::cout << fmt::format("recorded        {} by {} when placesim wrote the traces ({})\n", format_duration(replayed->run->latency_s),
                             replayed->run->engine, replayed->run->source);
  if (!a.chakra.empty()) {
    const ChakraRun run = chakra_run_of(m, graph_label);
    // The traces are named after the graph file (or the replayed directory, a trailing '/' or not).
    std::filesystem::path named_after = std::filesystem::path(a.replay.empty() ? a.graph_path : a.replay).lexically_normal();
    if (!named_after.has_filename()) named_after = named_after.parent_path();
    const ChakraWritten written =
        write_chakra_traces(a.chakra, named_after.stem().string(), graph, placement, cluster.num_devices(), chakra_start_of(m), run,
                            collectives);
    for (const auto& w : written.warnings) std::cerr << "warning: " << a.chakra << ": " << w << "\n";
    std::cout << fmt::format("chakra          {} ({} rank{}, the {} timeline)\n", a.chakra, cluster.num_devices(),
                             cluster.num_devices() == 1 ? "" : "s", run.engine);
  }
  if (m.oom) {
    // An infeasible point, as a sweep records it: the run itself went well.
    std::cerr << "simulate: the placement does not fit: a GPU holds more than its memory (OOM above)\n";
    return kExitFailed;
  }
  return kExitOk;
}

// The roofline's rate a graph was timed at ("fp32 peak 19.5 TFLOP/s"), and a line that says so
// where `plan`'s kernel model runs the GPU at another precision: the two defaults differ (the
// zoo's and ONNX graphs are fp32 training graphs), and the output says which ran.
std::string roofline_rate(const models::GpuSpec& gpu) {
  using models::Precision;
  if (!gpu.roofline_precision) return format_flops(gpu.peak_flops) + " as given";
  return fmt::format("{} peak {}", enum_name<Precision>(models::kPrecisionNames, *gpu.roofline_precision), format_flops(gpu.peak_flops));
}
// What a graph's times were computed for, as the file's "timed_on" object.
std::string timed_on(const models::GpuSpec& gpu) {
  nlohmann::ordered_json j;
  j["gpu"] = gpu.name;
  if (!gpu.model.empty()) j["model"] = gpu.model;
  j["precision"] = gpu.roofline_precision ? std::string(enum_name<models::Precision>(models::kPrecisionNames, *gpu.roofline_precision))
                                          : std::string("as given");
  j["peak_flops"] = gpu.peak_flops;
  j["memory_bandwidth"] = gpu.memory_bandwidth;
  j["efficiency"] = gpu.efficiency;
  j["launch_overhead_s"] = gpu.launch_overhead_s;
  return j.dump();
}
std::string roofline_note(const models::GpuSpec& gpu) {
  using models::Precision;
  if (!gpu.roofline_precision || !gpu.has(gpu.default_precision()) || gpu.dense(gpu.default_precision()) == gpu.peak_flops) return "";
  const std::string_view plan = enum_name<Precision>(models::kPrecisionNames, gpu.default_precision());
  return fmt::format("precision       timed at {}{}; `plan --gpu {}` runs {}: --precision {} times this graph at that peak ({})\n",
                     enum_name<Precision>(models::kPrecisionNames, *gpu.roofline_precision),
                     *gpu.roofline_precision == Precision::Fp32 ? " (graphs' default: they are fp32 training graphs)" : "", gpu.name,
                     plan, plan, format_flops(gpu.dense(gpu.default_precision())));
}

struct GenerateArgs {
  std::string model, output, style = "tensorflow", optimizer = "adam", gpu = "rtx3070", precision;
  long batch = 0, seq = 0, layers = 0, heads = 0, hidden = 0, ffn = 0, vocab = 0, image = 0, classes = 0;
  double efficiency = 0;
};

int cmd_generate(const GenerateArgs& a) {
  models::ModelConfig c;
  c.model = a.model;
  c.batch = a.batch, c.seq = a.seq, c.layers = a.layers, c.heads = a.heads, c.hidden = a.hidden;
  c.ffn = a.ffn, c.vocab = a.vocab, c.image = a.image, c.classes = a.classes;
  c.style = models::parse_graph_style(a.style, "command line", "--style");
  c.optimizer = models::parse_optimizer(a.optimizer, "command line", "--optimizer");
  YAML::Node gpu;
  try {
    gpu = YAML::Load(a.gpu);  // a preset name or a flow mapping such as '{preset: v100, efficiency: 0.6}'
  } catch (const YAML::Exception& e) {
    throw InputError("command line", "--gpu", "malformed YAML: " + e.msg);
  }
  c.gpu = models::gpu_from_yaml(gpu, "command line", "--gpu");
  if (!a.precision.empty())
    models::set_roofline_precision(c.gpu, enum_parse<models::Precision>(models::kPrecisionNames, a.precision, "command line", "--precision"),
                                   "command line", "--precision", gpu, "--gpu");
  if (a.efficiency > 0) c.gpu.efficiency = a.efficiency;
  models::validate_gpu(c.gpu, "command line", "--gpu");
  c = models::resolve_model_config(c, "command line", "");
  const models::ModelBuilder recorded = models::record_model(c);
  const Graph g = recorded.to_graph(c.gpu, "model " + c.model);
  const models::ModelSummary s = models::summarize(recorded, c.batch);
  save_placesim_json(g, a.output, timed_on(c.gpu));
  std::cout << fmt::format("wrote {} ({} operators: {} forward, {} backward, {} optimizer; {} tensors)\n", a.output, g.num_operators(),
                           s.forward_operators, s.backward_operators, s.optimizer_operators, g.num_tensors());
  std::cout << fmt::format("{}: {:.4g} M trainable parameters, {:.4g} GMAC forward per sample, batch {}\n", c.model,
                           static_cast<double>(s.parameters) / 1e6, s.forward_macs_per_sample / 1e9, c.batch);
  std::cout << fmt::format("on {} ({}, {}, efficiency {}, launch {}): compute {} per iteration, memory {}\n", c.gpu.name,
                           roofline_rate(c.gpu), format_bandwidth(c.gpu.memory_bandwidth), c.gpu.efficiency,
                           format_duration(c.gpu.launch_overhead_s), format_duration(g.total_compute()), format_bytes(g.total_memory()));
  std::cout << roofline_note(c.gpu);
  return 0;
}

// `graph import`: an ONNX model to placesim JSON. The flags are the keys of a scenario's
// `graph: {onnx: ...}` mapping (models::onnx_import_schema), parsed by the same schema.
struct ImportArgs {
  std::string input, output;
  std::map<std::string, std::string> options;  // schema key -> the flag's text (empty: not given)
};

int cmd_import(const ImportArgs& a) {
  YAML::Node node;
  node["onnx"] = a.input;
  models::OnnxImportOptions options;
  try {
    for (const auto& [key, value] : a.options) {
      if (value.empty()) continue;
      try {
        // A mapping, such as --gpu '{preset: v100, efficiency: 0.6}', or a scalar as written.
        if (value.front() == '{') node[key] = YAML::Load(value);
        else node[key] = value;
      } catch (const YAML::Exception& e) {
        throw InputError("command line", key, "malformed YAML mapping: " + e.msg);
      }
    }
    options = models::onnx_import_schema().parse(YamlFields(node, "command line", ""));
  } catch (const InputError& e) {
    // The schema names its keys; on the command line they are flags.
    throw InputError(e.file(), e.field().empty() || e.file() != "command line" ? e.field() : "--" + e.field(), e.reason());
  }
  const models::OnnxImport imported = models::import_onnx(options);
  for (const auto& w : imported.warnings) std::cerr << "warning: " << w << "\n";
  const Graph g = imported.recorded.to_graph(options.gpu, options.onnx);
  const models::ModelSummary s = models::summarize(imported.recorded, imported.batch);
  save_placesim_json(g, a.output, timed_on(options.gpu));
  std::string nodes;
  for (const auto& [type, count] : imported.node_types) nodes += fmt::format("{}{} {}", nodes.empty() ? "" : ", ", type, count);
  int node_count = 0;
  for (const auto& [type, count] : imported.node_types) node_count += count;
  std::cout << fmt::format("read {}: {} ONNX nodes ({}), batch {}\n", options.onnx, node_count, nodes, imported.batch);
  std::cout << fmt::format("wrote {} ({} operators: {} forward, {} backward, {} optimizer; {} tensors)\n", a.output, g.num_operators(),
                           s.forward_operators, s.backward_operators, s.optimizer_operators, g.num_tensors());
  std::cout << fmt::format("{:.4g} M trainable parameters; {:.4g} GFLOP forward, {:.4g} GFLOP backward, {:.4g} GFLOP optimizer\n",
                           static_cast<double>(s.parameters) / 1e6, imported.forward_flops / 1e9, imported.backward_flops / 1e9,
                           imported.optimizer_flops / 1e9);
  std::cout << fmt::format("on {} ({}, {}, efficiency {}): compute {} per iteration, memory {}\n", options.gpu.name,
                           roofline_rate(options.gpu), format_bandwidth(options.gpu.memory_bandwidth),
                           options.gpu.efficiency, format_duration(g.total_compute()), format_bytes(g.total_memory()));
  std::cout << roofline_note(options.gpu);
  return 0;
}

// A cluster file or a scenario file (its `cluster:` block): counts, bandwidth levels, bisection.
int cmd_topology_info(const std::string& path, const std::string& dot, bool links) {
  refuse_graph(load_yaml_file(path), path, "a scenario or cluster file");
  const Cluster cluster = load_cluster_file(path);
  if (links) {  // the names a cluster's `faults:` take
    for (const Link& l : cluster.links())
      std::cout << fmt::format("{}  {}  latency {}{}\n", l.name, format_bandwidth(l.bandwidth), format_duration(l.latency),
                               l.logical ? "  (a rate cap, not a cable)" : "");
    return 0;
  }
  std::cout << format_topology_info(cluster, describe_topology(cluster));
  if (!dot.empty()) {
    write_file_atomically(dot, topology_dot(cluster));
    std::cout << "dot               " << dot << " (render: dot -Tsvg " << dot << " -o topology.svg)\n";
  }
  return 0;
}

int cmd_strategies(bool json) {
  if (json) {
    std::cout << strategies_to_json().dump(2) << "\n";
    return 0;
  }
  auto list = [](const std::string& name, const std::string& description, std::span<const OptionDoc> options) {
    std::cout << fmt::format("{}\n  {}\n", name, description);
    for (const auto& o : options) {
      std::string line = fmt::format("    {} ({}): {}", o.key, o.default_text, o.help);
      if (!o.choices.empty()) line += fmt::format(" [{}]", fmt::join(o.choices, ", "));
      std::cout << line << "\n";
    }
  };
  std::cout << "Placement strategies (a scenario's `graph:`):\n\n";
  for (const auto& s : strategy_registry()) list(s.name, s.description, s.options);
  std::cout << "\nPlanners (a scenario's `workload:`, a layer-level model):\n\n";
  for (const auto& p : planner_registry()) list(p.name, p.description, p.options);
  return 0;
}

int cmd_topology_types(bool json) {
  if (json) std::cout << topologies_to_json().dump(2) << "\n";
  else std::cout << format_topology_types();
  return 0;
}

// `placesim gpus`: every GPU preset with one meaning (gpu.h).
int cmd_gpus(bool json) {
  using models::Precision;
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (const models::GpuSpec& g : models::gpu_presets()) {
    nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
    for (const auto& p : models::kPrecisionNames)
      if (g.has(p.value)) peaks[std::string(p.name)] = g.dense(p.value);
    nlohmann::ordered_json j = {{"name", g.name},
                        {"model", g.model},
                        {"dense_flops", peaks},
                        {"default_precision", std::string(enum_name<Precision>(models::kPrecisionNames, g.default_precision()))},
                        {"memory_bytes", g.memory_bytes},
                        {"memory_bandwidth", g.memory_bandwidth},
                        {"sms", g.sms},
                        {"boost_clock_hz", g.boost_clock_hz},
                        {"kernel_model", g.gemm_efficiency > 0},
                        {"source", g.source}};
    if (g.gemm_efficiency > 0)
      j["efficiencies"] = {{"gemm", g.gemm_efficiency},
                           {"memory", g.memory_efficiency},
                           {"attention_forward", g.attention_forward_efficiency},
                           {"attention_backward", g.attention_backward_efficiency},
                           {"kernel_gap_s", g.kernel_gap_s},
                           {"source", g.efficiency_source}};
    all.push_back(j);
  }
  if (json) {
    std::cout << all.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& j : all) {
    std::string peaks;
    for (const auto& [p, v] : j["dense_flops"].items()) peaks += fmt::format("{}{} {:g}", peaks.empty() ? "" : ", ", p, v.get<double>() / 1e12);
    std::cout << fmt::format("{:<13} {}: {} TFLOP/s dense (default {}), {} at {}{}\n", j["name"].get<std::string>(),
                             j["model"].get<std::string>(), peaks, j["default_precision"].get<std::string>(),
                             format_bytes(j["memory_bytes"].get<double>()), format_bandwidth(j["memory_bandwidth"].get<double>()),
                             j["sms"].get<int>() > 0 ? fmt::format(", {} SMs", j["sms"].get<int>()) : "");
    std::cout << fmt::format("{:<13} source: {}\n", "", j["source"].get<std::string>());
    if (j.contains("efficiencies")) {
      const auto& e = j["efficiencies"];
      std::cout << fmt::format("{:<13} kernel model: GEMM {:.1f}% of peak, memory {:.1f}% of bandwidth, fused attention {:.0f}%/{:.0f}% "
                               "(forward/backward), {} a kernel; {}\n",
                               "", 100 * e["gemm"].get<double>(), 100 * e["memory"].get<double>(),
                               100 * e["attention_forward"].get<double>(), 100 * e["attention_backward"].get<double>(),
                               format_duration(e["kernel_gap_s"].get<double>()), e["source"].get<std::string>());
    } else {
      std::cout << fmt::format("{:<13} kernel model: none (no tensor-core figures): graphs only, on the roofline\n", "");
    }
  }
  return kExitOk;
}

int cmd_topology_presets(bool json) {
  if (json) std::cout << presets_to_json().dump(2) << "\n";
  else std::cout << format_presets();
  return 0;
}

}  // namespace

// The `--engine` values, from the engine registry (sim/engines/engine.h); `estimate` (a workload's
// plans priced by NEST's model) only where plans run: `placesim run`.
std::vector<std::string> engine_names(bool with_estimate) {
  std::vector<std::string> out;
  for (const std::string& n : EngineSet::names())
    if (with_estimate || n != kEstimate) out.push_back(n);
  return out;
}
std::string engine_choices(bool with_estimate) {
  const std::vector<std::string> names = engine_names(with_estimate);
  return join_choices(std::vector<std::string_view>(names.begin(), names.end()));
}

// Every subcommand's arguments and its command, filled by the add_* functions below, read by run_command.
struct Cli {
  RunArgs run_args;
  CLI::App* run = nullptr;
  std::string merge_dir;
  CLI::App* merge = nullptr;
  SimulateArgs sim_args;
  CLI::App* sim = nullptr;
  std::string info_path, info_format = "auto";
  CLI::App* info = nullptr;
  std::string conv_in, conv_out, conv_format = "auto";
  bool conv_wcc = false;
  CLI::App* convert = nullptr;
  GenerateArgs gen;
  CLI::App* generate = nullptr;
  ImportArgs imp;
  CLI::App* import = nullptr;
  bool strategies_json = false;
  CLI::App* strategies = nullptr;
  std::string topo_path, topo_dot;
  bool topo_links = false;
  CLI::App* topo_info = nullptr;
  bool types_json = false;
  CLI::App* topo_types = nullptr;
  bool presets_json = false;
  CLI::App* topo_presets = nullptr;
  bool gpus_json = false;
  CLI::App* gpus = nullptr;
  ReportOptions report_opts;
  PivotSpec pivot;
  bool report_no_plots = false;
  std::string report_summary;
  CLI::App* report = nullptr;
  ReproduceArgs repro;
  CLI::App* reproduce = nullptr;
  CollectiveArgs collective_args;
  CLI::App* collective = nullptr;
  PlanArgs plan_args;
  CLI::App* plan = nullptr;
  SearchArgs search_args;
  GoodputArgs goodput_args;
  CLI::App* goodput = nullptr;
  CLI::App* search = nullptr;
};

// `run` and `merge`.
void add_run_commands(CLI::App& app, Cli& cli) {
  cli.run = app.add_subcommand("run", "run a scenario file (every point of its sweep): each strategy places the graph, then it is simulated");
  cli.run->add_option("scenario", cli.run_args.scenario, "scenario YAML file")->required()->check(CLI::ExistingFile);
  cli.run->add_option("-o,--output", cli.run_args.output, "output folder (default: the scenario's `output`)");
  cli.run->add_option("--engine", cli.run_args.engine, engine_choices(true) + " (default: the scenario's)")
      ->check(one_of(engine_names(true)));
  cli.run->add_option("-j,--jobs", cli.run_args.jobs, "points run at a time, each in a worker process of its own")->check(whole_number(1, 1024));
  cli.run->add_option("--max-points", cli.run_args.max_points,
                  fmt::format("refuse a scenario of more points than this (they are all planned in memory; default {})",
                              kDefaultMaxPoints))
      ->check(whole_number(1));
  auto* resume = cli.run->add_flag("--resume", cli.run_args.resume, "skip the points already in the output folder's results.jsonl");
  cli.run->add_flag("--fresh", cli.run_args.fresh, "delete the output folder's results of an earlier run and start over")
      ->excludes(resume);
  cli.run->add_flag("--mpi", cli.run_args.mpi, "under mpirun: rank r runs the points with index % ranks == r, rank 0 merges the shards");
  // Test hooks, hidden from --help (empty group).
  cli.run->add_option("--debug-abort-point", cli.run_args.debug_abort_point, "the worker of this point index calls abort()")
      ->check(whole_number(0))
      ->group("");
  cli.run->add_option("--debug-stop-after", cli.run_args.debug_stop_after, "SIGKILL the runner after this many points are recorded")
      ->check(whole_number(0))
      ->group("");

  cli.merge = app.add_subcommand("merge", "join the MPI shards results.rank<r>.jsonl of a results folder into results.jsonl");
  cli.merge->add_option("folder", cli.merge_dir, "results folder")->required()->check(CLI::ExistingDirectory);

}

void add_simulate_command(CLI::App& app, Cli& cli) {
  cli.sim = app.add_subcommand("simulate", "simulate one given placement of a graph on a cluster");
  cli.sim->add_option("--graph", cli.sim_args.graph_path, "graph file")->check(CLI::ExistingFile);
  cli.sim->add_option("--placement", cli.sim_args.placement_path, "placement JSON file")->check(CLI::ExistingFile);
  cli.sim->add_option("--cluster", cli.sim_args.cluster_path, "cluster YAML file (a `cluster:` block)")->required()->check(CLI::ExistingFile);
  cli.sim->add_option("--format", cli.sim_args.format, "graph format: auto, quickp, msr, placesim");
  cli.sim->add_option("--engine", cli.sim_args.engine, engine_choices(false))->check(one_of(engine_names(false)));
  auto* trace = cli.sim->add_option("--trace", cli.sim_args.trace, "write a Chrome trace (open in Perfetto; gzip'd when the file ends in .gz)");
  auto* chakra = cli.sim->add_option("--chakra", cli.sim_args.chakra, "write Chakra execution traces of the iteration, one per GPU (<graph>.<rank>.et), into this directory");
  cli.sim->add_flag("--json", cli.sim_args.json,
                    "print the measurement as one JSON object (latency and wall time per engine, bounds, memory and busy "
                    "time per GPU, links), every number exact")
      ->excludes(trace)
      ->excludes(chakra);
  auto* replay = cli.sim->add_option("--replay", cli.sim_args.replay,
                                 "simulate the graph and placement of a directory of Chakra traces (instead of --graph, "
                                 "--placement); their collectives run as placesim's on --cluster")
                     ->check(CLI::ExistingDirectory);
  cli.sim->add_option("--prefix", cli.sim_args.replay_prefix, "--replay: the traces' <prefix> when the directory holds several runs")
      ->needs(replay);

}

// `graph info`, `convert`, `generate`, `import`.
void add_graph_commands(CLI::App& app, Cli& cli) {
  auto* graph = app.add_subcommand("graph", "inspect and convert graphs");
  graph->require_subcommand(1);
  cli.info = graph->add_subcommand("info", "operator and edge counts, total compute and bytes, critical path, parallelism");
  cli.info->add_option("file", cli.info_path, "graph file")->required()->check(CLI::ExistingFile);
  cli.info->add_option("--format", cli.info_format, "auto, quickp, msr, placesim");
  cli.convert = graph->add_subcommand("convert", "write a graph in placesim's own JSON format");
  cli.convert->add_option("input", cli.conv_in, "graph file")->required()->check(CLI::ExistingFile);
  cli.convert->add_option("output", cli.conv_out, "placesim JSON file to write")->required();
  cli.convert->add_option("--format", cli.conv_format, "input format: auto, quickp, msr, placesim");
  cli.convert->add_flag("--largest-component", cli.conv_wcc, "keep only the largest weakly connected component");

  cli.generate = graph->add_subcommand("generate", "write a model-zoo graph (" + models::zoo_model_names() + ") as placesim JSON");
  cli.generate->add_option("model", cli.gen.model, "zoo model")->required();
  cli.generate->add_option("-o,--output", cli.gen.output, "placesim JSON file to write")->required();
  cli.generate->add_option("--batch", cli.gen.batch, "batch size (default: the model's)")->check(whole_number(1));
  cli.generate->add_option("--seq", cli.gen.seq, "sequence length")->check(whole_number(1));
  cli.generate->add_option("--layers", cli.gen.layers, "layers (transformer blocks, LSTM layers per stack)")->check(whole_number(1));
  cli.generate->add_option("--heads", cli.gen.heads, "attention heads")->check(whole_number(1));
  cli.generate->add_option("--hidden", cli.gen.hidden, "model width")->check(whole_number(1));
  cli.generate->add_option("--ffn", cli.gen.ffn, "feed-forward width")->check(whole_number(1));
  cli.generate->add_option("--vocab", cli.gen.vocab, "vocabulary size")->check(whole_number(1));
  cli.generate->add_option("--image", cli.gen.image, "image height and width")->check(whole_number(1));
  cli.generate->add_option("--classes", cli.gen.classes, "classes")->check(whole_number(1));
  cli.generate->add_option("--style", cli.gen.style, "tensorflow (Keras, unfused) or fused (one kernel per layer)");
  cli.generate->add_option("--optimizer", cli.gen.optimizer, "adam or sgd");
  cli.generate->add_option("--gpu", cli.gen.gpu,
                       "GPU preset (" + models::gpu_preset_names() + ") or a mapping '{flops: 30TFLOP/s, memory_bandwidth: 1TB/s}'");
  cli.generate->add_option("--precision", cli.gen.precision,
                           "the roofline's rate: the GPU's dense peak at fp32, tf32, fp16, bf16 or fp8 (default fp32: the zoo's "
                           "graphs are fp32 training graphs, their tensors fp32 whatever the rate)");
  cli.generate->add_option("--efficiency", cli.gen.efficiency, "achieved fraction of the GPU's peaks (default: the preset's)")
      ->check(number_in({0, 1, /*min_open=*/true, /*max_open=*/false}));

  cli.import = graph->add_subcommand("import", "write an ONNX model's training graph as placesim JSON (tools/export_onnx.py "
                                                 "exports PyTorch models)");
  cli.import->add_option("model", cli.imp.input, "the .onnx file")->required()->check(CLI::ExistingFile);
  cli.import->add_option("-o,--output", cli.imp.output, "placesim JSON file to write")->required();
  for (const auto& doc : models::onnx_import_schema().docs()) {
    if (doc.key == "onnx") continue;
    std::string* target = &cli.imp.options[doc.key];  // std::map: the reference stays valid for CLI11
    std::string help = fmt::format("{} (default {})", doc.help, doc.default_text);
    if (!doc.choices.empty()) help += fmt::format(": {}", fmt::join(doc.choices, ", "));
    cli.import->add_option("--" + doc.key, *target, help);
  }

}

// `strategies`, `topology info`, `topology types`, `topology presets`.
void add_listing_commands(CLI::App& app, Cli& cli) {
  cli.strategies = app.add_subcommand("strategies", "list the registered placement strategies and planners with their options");
  cli.strategies->add_flag("--json", cli.strategies_json, "as JSON: name, description, options (key, kind, default, help, choices, example)");

  auto* topology = app.add_subcommand("topology", "inspect cluster topologies");
  topology->require_subcommand(1);
  cli.topo_info = topology->add_subcommand("info", "GPU count, bandwidth levels between GPU pairs, bisection, oversubscription");
  cli.topo_info->add_option("file", cli.topo_path, "scenario or cluster YAML file")->required()->check(CLI::ExistingFile);
  cli.topo_info->add_option("--dot", cli.topo_dot, "also write a Graphviz drawing of the topology to this file");
  cli.topo_info->add_flag("--links", cli.topo_links, "list the one-way links by name, bandwidth and latency (the names `faults:` takes)");
  cli.topo_types = topology->add_subcommand("types", "list the cluster types and their keys");
  cli.topo_types->add_flag("--json", cli.types_json, "as JSON: type, aliases, description, options");
  cli.topo_presets = topology->add_subcommand(
      "presets", "list the cluster presets (`cluster: {preset: dgx-h100, servers: 64}`) with their figures and sources");
  cli.topo_presets->add_flag("--json", cli.presets_json, "as JSON: name, description, type, keys, figures (key, value, source)");
  cli.gpus = app.add_subcommand("gpus", "list the GPU presets (`--gpu a100`): dense peaks per precision, memory, SMs, the kernel "
                                        "model's efficiencies, and their sources");
  cli.gpus->add_flag("--json", cli.gpus_json, "as JSON: one object per GPU");

}

// `report` and `reproduce`.
void add_report_commands(CLI::App& app, Cli& cli) {
  cli.report = app.add_subcommand("report", "comparison table and plots (PNG, SVG) of what `placesim run` wrote");
  cli.report->add_option("results", cli.report_opts.results, "results folder, results.jsonl or results.json")->required()->check(CLI::ExistingPath);
  cli.report->add_option("-o,--output", cli.report_opts.output, "folder for the table and plots (default: <results>/report)");
  cli.report->add_flag("--no-plots", cli.report_no_plots, "tables only (no python3-matplotlib needed)");
  cli.report->add_option("--gantt-strategy", cli.report_opts.gantt_strategy, "draw this strategy's timeline (default: any strategy's; of the points that fit in memory, the slowest on the most GPUs, using the most of them)");
  cli.report->add_option("--rows", cli.pivot.rows, "also print a pivot table: row fields (graph, strategy, gpus or a swept key)")->delimiter(',');
  cli.report->add_option("--columns", cli.pivot.columns, "pivot column fields")->delimiter(',');
  cli.report->add_option("--value", cli.pivot.value, "pivot value: latency, search_time, evaluator_latency, simgrid_latency, peak_memory or a strategy report key");
  cli.report->add_option("--summary", cli.report_summary, "also a per-strategy summary: robustness (report/robustness.md)");

  cli.reproduce = app.add_subcommand(
      "reproduce", "run a paper reproduction of scenarios/papers/ (or a family of them) end to end: its sweep, tables and plots");
  cli.reproduce->add_option("name", cli.repro.name,
                        "reproduction name (see --list), or a family: a name with no file of its own that prefixes "
                        "several (nest: nest-experiment1, nest-experiment1-contention, ...) runs each of them in turn");
  cli.reproduce->add_flag("--list", cli.repro.list, "list the reproductions and their families");
  cli.reproduce->add_option("-j,--jobs", cli.repro.jobs, "points run at a time (default 2)")->check(whole_number(1, 1024));
  cli.reproduce->add_option("-o,--output", cli.repro.output,
                        "output folder (default: the scenario's `output`); for a family, one subfolder per reproduction");
  cli.reproduce->add_option("--max-points", cli.repro.max_points,
                        fmt::format("refuse a reproduction of more points than this (default {})", kDefaultMaxPoints))
      ->check(whole_number(1));
  cli.reproduce->add_flag("--fresh", cli.repro.fresh, "start over instead of keeping the points a previous run finished");
  cli.reproduce->add_flag("--no-plots", cli.repro.no_plots, "tables only");
  cli.reproduce->add_option("--gpu", cli.repro.gpu,
                            "validation: the GPU, a preset or a YAML file ({preset: a100, gemm_efficiency: ...}): how "
                            "tools/fit_kernels.py tries its candidates")
      ->capture_default_str();

}

// Runs the command the parse chose.
int run_command(Cli& cli) {
  if (*cli.run) return cmd_run(cli.run_args);
  if (*cli.merge) {
    const std::size_t n = merge_result_shards(cli.merge_dir, std::nullopt);
    std::cout << fmt::format("merged {} point{} into {}/results.jsonl (and results.json, results.csv)\n", n, n == 1 ? "" : "s",
                             cli.merge_dir);
    return 0;
  }
  if (*cli.sim) return cmd_simulate(cli.sim_args);
  if (*cli.info) {
    const LoadResult loaded = load_command_graph(cli.info_path, cli.info_format);
    std::cout << "graph: " << cli.info_path << " (" << graph_format_name(loaded.format) << " format)\n"
              << format_stats(compute_stats(loaded.graph));
    return 0;
  }
  if (*cli.generate) return cmd_generate(cli.gen);
  if (*cli.import) return cmd_import(cli.imp);
  if (*cli.convert) {
    LoadResult loaded = load_command_graph(cli.conv_in, cli.conv_format);
    const Graph g = cli.conv_wcc ? largest_weakly_connected_component(loaded.graph) : std::move(loaded.graph);
    save_placesim_json(g, cli.conv_out);
    std::cout << fmt::format("wrote {} ({} operator{}, {} tensor{})\n", cli.conv_out, g.num_operators(),
                             g.num_operators() == 1 ? "" : "s", g.num_tensors(), g.num_tensors() == 1 ? "" : "s");
    return 0;
  }
  if (*cli.strategies) return cmd_strategies(cli.strategies_json);
  if (*cli.reproduce) return cmd_reproduce(cli.repro);
  if (*cli.report) {
    cli.report_opts.plots = !cli.report_no_plots;
    if (cli.pivot.rows.empty() && (cli.report->count("--columns") || cli.report->count("--value")))
      throw InputError("command line", "--rows", "expected with --columns and --value: the pivot's row fields");
    if (!cli.pivot.rows.empty()) cli.report_opts.pivots.push_back(cli.pivot);
    if (!cli.report_summary.empty())
      cli.report_opts.summary = enum_parse<ReportSummary>(kReportSummaryNames, cli.report_summary, "command line", "--summary");
    return report_exit_code(run_report(cli.report_opts, std::cout, std::cerr));
  }
  if (*cli.collective) return cmd_collective(cli.collective_args);
  if (*cli.plan) return cmd_plan(cli.plan_args);
  if (*cli.search) return cmd_search(cli.search_args);
  if (*cli.goodput) return cmd_goodput(cli.goodput_args);
  if (*cli.topo_info) return cmd_topology_info(cli.topo_path, cli.topo_dot, cli.topo_links);
  if (*cli.topo_types) return cmd_topology_types(cli.types_json);
  if (*cli.topo_presets) return cmd_topology_presets(cli.presets_json);
  if (*cli.gpus) return cmd_gpus(cli.gpus_json);
  return kExitOk;
}

int main(int argc, char** argv) {
  CLI::App app{"placesim: a discrete-event cluster simulator for device placement of DNN training", "placesim"};
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", version_text(), "print the version, the commit and the optional parts built, and exit");
  app.footer(kExitCodesHelp);
  Cli cli;
  add_run_commands(app, cli);
  add_simulate_command(app, cli);
  add_graph_commands(app, cli);
  add_listing_commands(app, cli);
  add_report_commands(app, cli);
  add_placeto_commands(app);
  cli.collective = add_collective_command(app, cli.collective_args);
  cli.plan = add_plan_command(app, cli.plan_args);
  cli.search = add_search_command(app, cli.search_args);
  cli.goodput = add_goodput_command(app, cli.goodput_args);

  try {
    if (const CLI::App* incomplete = check_command_words(app, argc, argv)) {
      std::cerr << short_usage(*incomplete);
      return kExitBadInput;
    }
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {  // a command run inside the parse (placeto train) has said why
    return e.get_exit_code() == kExitBadInput ? kExitBadInput : kExitFailed;
  } catch (const CLI::ParseError& e) {
    const CLI::App* command = &app;
    while (!command->get_subcommands().empty()) command = command->get_subcommands().back();
    std::cerr << "error: command line: " << e.what() << " ('" << command_path(*command) << " --help' lists the options)\n";
    return kExitBadInput;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {  // never std::terminate's abort (134): exit codes are 0, 1 and 2
    std::cerr << "placesim: internal error: " << e.what() << "\n";
    return kExitFailed;
  }
  try {
    return run_command(cli);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "placesim: internal error: " << e.what() << "\n";
    return kExitFailed;
  }
}
