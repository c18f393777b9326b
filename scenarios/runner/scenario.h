#pragma once
// Scenario files: what to place (graph), where (cluster), with which strategies, and how to
// measure it. Paths inside a scenario are relative to the scenario file. Documented field by
// field in scenarios/README.md.
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "placement/framework/planner.h"
#include "placement/stages/coarsening/coarsening.h"
#include "placement/stages/refine/refine.h"
#include "sim/plans/data_parallel.h"
#include "scenarios/runner/report.h"
#include "sim/models/builtin_graphs.h"
#include "sim/core/cluster.h"
#include "sim/engines/engine.h"
#include "sim/core/graph.h"
#include "sim/config/options.h"
#include "sim/plans/layer_model.h"
#include "sim/models/layer_zoo.h"
#include "sim/models/onnx_import.h"
#include "sim/models/zoo.h"

namespace placesim {

struct GraphSource {
  std::string builtin;               // "fig3.1" or "synthetic"; empty when `file` is set
  SyntheticGraphConfig synthetic;    // options of the synthetic generator
  std::string file;                  // a graph file (resolved against the scenario's folder)
  std::string format = "auto";       // auto, quickp, msr, placesim
  bool largest_component = false;    // keep only the largest weakly connected component
  std::optional<models::ModelConfig> model;  // a model-zoo network (`model: bert-base`), resolved
  std::optional<models::OnnxImportOptions> onnx;  // an ONNX model (`onnx: model.onnx`), path as written
  std::string chakra;                // a directory of Chakra execution traces (`chakra: DIR`), re-placed
  std::string chakra_prefix;         // their <prefix> when the directory holds several runs'
  // `memory: regression` (zoo models only): operator memory predicted from the model at three
  // small batches by per-operator linear regression (Celeritas's standard evaluation) instead of
  // taken from the large-batch graph; `memory: built` (the default) keeps the built memory.
  bool memory_regression = false;
};

// A layer-level workload (`workload:`), which planners (placement/framework/planner.h) plan instead of a
// graph: a model of the layer zoo (sim/models/layer_zoo.h) with its options, or a per-layer
// workload file (NEST's JSON, sim/plans/layer_model.h).
struct WorkloadSource {
  std::string model;            // a layer-zoo model; empty when `file` or `model_file` is set
  std::string model_file;       // a model by its dimensions (layer_zoo.h, load_model_file), as given
  models::LayerZooOptions zoo;  // its options
  std::string file;             // a workload file (resolved against the scenario's folder)
};

struct StrategySpec {
  std::string name;     // registry name
  std::string label;    // how results name it (defaults to the name; must be unique)
  YAML::Node options;   // the strategy's own `options:` mapping
  std::optional<CoarseningConfig> coarsen;  // place a coarsened graph, then expand (`coarsen:`)
  std::optional<RefineConfig> refine;       // then improve the placement by local search (`refine:`)
  // Place on one replica's GPUs, run `replicas` copies with the gradients all-reduced (`data_parallel:`).
  std::optional<DataParallelConfig> data_parallel;
  std::string field;    // "strategies[i]", for error messages
};

// One job of a shared cluster (`jobs:`, scenarios/runner/jobs.h): a graph with a placement
// strategy, or a workload with a planner, on a GPU count (filled by the allocation policy) or list.
struct JobSpec {
  std::string name;
  GraphSource graph;                       // unset when `workload` is
  std::optional<WorkloadSource> workload;  // a layer-level workload: `strategy` is a planner
  StrategySpec strategy;
  int gpus = 0;                            // a count, or
  std::vector<DeviceId> gpu_list;          // these GPUs
  std::string field;                       // "jobs[1]"
  std::string gpus_field;                  // "jobs[1].gpus (line 9)"
  // `against_others: true`: placed or planned a second time against the other jobs' traffic as a
  // fixed load (their average use of each link taken from its capacity), and run again with them.
  bool against_others = false;
};

// A `strategies:` entry (a name, or {name, label, options, coarsen, refine, data_parallel}), its
// strategy or planner built once so that option errors surface now. `cluster` checks
// data_parallel's replicas (null: checked when the point runs).
StrategySpec strategy_from_yaml(const YAML::Node& node, const std::string& file, const std::string& field,
                                const Cluster* cluster, bool planner, bool portfolio);

// Why the scenario cannot run on engine `estimate` ("" when it can, or runs on another engine):
// it places a graph, or asks for Chakra traces.
struct Scenario;
std::string estimate_problem(const Scenario& scenario);

struct SimulationSpec {
  // Which engines measure each point (`simulation.engine`: an engine's name, `all` or `both`; the
  // evaluator always runs with an event engine, its schedule gives the order the others follow).
  // `estimate` runs no engine: a workload's plans are priced by NEST's analytical estimate alone
  // and their memory, without building their execution graphs, for plans at the scale of NEST's
  // experiments (1,024 GPUs, 4,096 sequences).
  EngineSet engines = EngineSet::of({kEvaluator, kSimGrid});
  RunOrder order = RunOrder::Scheduler;
  // How the ring phases of every collective run (plans' and data_parallel's): message by
  // message, or condensed to a flow per ring neighbour for plans of hundreds of replicas.
  CollectiveDetail collectives = CollectiveDetail::Messages;
  // A plan's data-parallel replicas (sim/plans/plan_folding.h): folded, exact where the fabric is
  // symmetric (else the full graph when small, else folded approximately, as `placesim plan`), or
  // every one built (`full_graph: true`).
  bool full_graph = false;
  bool trace = true;             // write a Chrome trace per strategy
  bool trace_gzip = false;       // `trace: gzip`: written gzip'd (trace-<label>.json.gz)
  int repetitions = 1;           // runs of each (sweep point, strategy, seed)
  std::vector<long> seeds;       // each is one run of every strategy that takes a `seed` option
  // Wall-clock limit of one point (search and engines), `simulation.time_limit`; a point over it
  // is stopped and recorded as timed out. Unbounded by default.
  double time_limit_s = std::numeric_limits<double>::infinity();
};

struct Scenario {
  std::string file;
  std::string name;
  std::string description;  // one line, for listings (`placesim reproduce --list`); may be empty
  std::string run_time;     // how long a run takes here, as measured (`run_time: "6 min"`); may be empty
  GraphSource graph;                      // unset when `workload` is
  std::optional<WorkloadSource> workload;  // a layer-level workload: `strategies:` are planners
  Cluster cluster;
  // With `jobs:` (graph and workload unset), `strategies` are the allocation policies: a point
  // each, every job of `jobs` in it.
  std::vector<StrategySpec> strategies;
  std::vector<JobSpec> jobs;
  SimulationSpec simulation;
  std::string output;  // output folder; relative paths are relative to the working directory
  bool chakra = false; // `output: {chakra: true}`: Chakra traces per placement (chakra-<point>/<point>.<rank>.et)
  ReportSpec report;   // the tables `placesim reproduce` prints (scenarios/README.md)
};

// A file with a `sweep:` block parses as its base scenario (the sweep is not applied; see
// scenarios/runner/sweep.h for the points).
Scenario load_scenario(const std::string& path);
// The `description:` of a scenario file ("" when it has none), without parsing the rest.
std::string load_scenario_description(const std::string& path);
// The `run_time:` of a scenario file ("" when it has none), without parsing the rest.
std::string load_scenario_run_time(const std::string& path);
Scenario parse_scenario(const YAML::Node& root, const std::string& file);
// Throws InputError naming a strategy's options when a planner among `strategies` (indices into
// scenario.strategies) cannot plan with them on the scenario's workload and cluster
// (Planner::options_problem: a fixed plan's degrees, say). Not part of parse_scenario: a sweep
// checks each combination it runs, not each value against the base it replaces.
void check_planner_options(const Scenario& scenario, std::span<const std::size_t> strategies);

// Builds or loads the graph a scenario names; loader warnings are appended to `warnings`.
Graph load_graph_source(const GraphSource& source, const std::string& scenario_file,
                        std::vector<std::string>& warnings);

// Why `simulation.collectives: condensed` has nothing to condense among the scenario's
// `strategies` (indices): no plan and no data_parallel strategy, or engine estimate; "" when it
// has or is `messages`. Checked per sweep combination, on the strategies it runs.
std::string collectives_problem(const Scenario& scenario, std::span<const std::size_t> strategies);

WorkloadSource workload_source_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);
// Builds or loads the workload: a zoo model at every tensor-parallel width it can be split into.
LayerWorkload load_workload_source(const WorkloadSource& source, const std::string& scenario_file);
// The model a workload is built from, for planners that build it again (Planner::set_model_source);
// unset for a per-layer workload file.
std::optional<ModelSource> model_source_of(const WorkloadSource& source, const std::string& scenario_file);
// What results call the graph or workload: the model, builtin or file stem.
std::string source_name(const Scenario& scenario);
// A graph's or workload's (with `jobs:`, source_name joins the jobs' with "+").
std::string source_name(const GraphSource& graph, const std::optional<WorkloadSource>& workload);

GraphSource graph_source_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);

}  // namespace placesim
