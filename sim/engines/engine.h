#pragma once
// The engines: given an execution graph (sim/core/execution_graph.h) and a cluster, a run.
//
//   evaluator  the list schedule, contention-free (sim/engines/evaluator.h): what the papers search with
//   flow       every transfer a flow sharing links max-min fair, in process (sim/engines/flow_engine.h)
//   simgrid    the same on SimGrid, in a forked child (sim/engines/simgrid_engine.h)
//   estimate   NEST's analytical estimate of a compiled plan (sim/engines/estimate.h): no schedule
//
// Every engine is an Engine registered in sim/engines/registry.cpp; which ones a run uses is an
// EngineSet, how each GPU picks its next operator a GpuQueue, and how the engines of one run agree
// on that a RunOrder. run_engines is the one dispatcher: the scenario runner, `placesim simulate`,
// `plan` and `collective` all run their engines through it.
//
// A new engine is one file (its Engine and its EngineInfo) and one line in registry.cpp.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/core/execution_graph.h"
#include "sim/core/names.h"
#include "sim/core/registry.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/folded_network.h"
#include "sim/engines/simgrid_engine.h"

namespace placesim {

// The built-in engines' names: results call their latencies "<name>_latency".
inline constexpr std::string_view kEvaluator = "evaluator";
inline constexpr std::string_view kFlow = "flow";
inline constexpr std::string_view kSimGrid = "simgrid";
inline constexpr std::string_view kEstimate = "estimate";

// How the engines of one run order each GPU's operators (`simulation.order`, `--order`).
enum class RunOrder {
  // The evaluator list-schedules by computation rank; the flow engine and SimGrid run its per-GPU
  // order under contention (GpuQueue::Fixed), so the three differ by contention alone.
  Scheduler,
  // Every engine runs first come, first served on its own arrival times (GpuQueue::Fcfs).
  Fcfs,
};
inline constexpr EnumName<RunOrder> kRunOrderNames[] = {{RunOrder::Scheduler, "scheduler"}, {RunOrder::Fcfs, "fcfs"}};

// What an engine runs: an execution graph, viewed (a strategy's placement of a scenario's graph
// is run without copying the graph into an ExecutionGraph).
struct PlacedGraph {
  const Graph& graph;
  std::span<const DeviceId> placement;
  const PlanOrigin* plan = nullptr;  // the plan it was compiled from, for the estimate
  const Folding* fold = nullptr;     // the copies it stands for (sim/core/folding.h), or null
  PlacedGraph(const ExecutionGraph& g) : graph(g.graph), placement(g.placement), plan(g.plan.get()), fold(g.fold.get()) {}  // NOLINT: a view
  PlacedGraph(const Graph& g, std::span<const DeviceId> p) : graph(g), placement(p) {}
};

struct EngineRequest {
  GpuQueue queue = GpuQueue::Fcfs;
  // GpuQueue::Fixed: per GPU, its operators in the order to run them.
  const std::vector<std::vector<OpId>>* order = nullptr;
  // A folded graph's network (fold_network), computed once for every engine of a run; null: the
  // engine computes it when the graph is folded.
  const FoldedNetwork* network = nullptr;
};

// What one engine measured.
struct EngineRun {
  std::string engine;  // its registered name
  double latency = 0;  // seconds: the iteration's makespan, or the estimate
  double wall_s = 0;   // host time the engine took
  // Per operator start and finish (and the evaluator's per-GPU order, busy time and memory);
  // unset for the estimate, which schedules nothing.
  std::optional<Schedule> schedule;
  // SimGrid's flows, sub-flows and link statistics.
  std::optional<SimulationResult> network;
};

// What a run of a folded graph (sim/core/folding.h) stood for: how many copies, whether the fold
// was exact (every route's copies alike) and, if not, the first route whose copies differ.
struct FoldSummary {
  int copies = 1;
  std::string description;
  std::int64_t routes = 0, split_routes = 0, link_classes = 0;
  std::string first_split;
  bool exact() const { return split_routes == 0; }
};

class Engine {
 public:
  virtual ~Engine() = default;
  // Why it cannot run `graph` ("" when it can): the estimate prices compiled plans only.
  virtual std::string problem(const PlacedGraph& graph) const { return ""; }
  // Throws std::invalid_argument when the request does not suit the engine or the graph (a queue it
  // has not, an order that deadlocks, a transfer between GPUs that cannot reach each other).
  virtual EngineRun run(const PlacedGraph& graph, const Cluster& cluster, const EngineRequest& request) const = 0;
};

struct EngineInfo : RegistryEntry {
  std::function<std::unique_ptr<Engine>()> make;
  std::vector<GpuQueue> queues;  // the queues it takes (none: it schedules nothing)
};

// Every engine, in registration order (sim/engines/registry.cpp).
const Registry<EngineInfo>& engine_registry();

// A set of registered engines, by registry index. Users name a set by one engine's name, `all`
// (every engine that runs the execution graph: evaluator, flow, simgrid) or `both` (evaluator and
// simgrid, the scenarios' default).
class EngineSet {
 public:
  EngineSet() = default;
  // The engines named (each a registered name; std::invalid_argument otherwise).
  static EngineSet of(std::initializer_list<std::string_view> engines);
  // `text` as above; an unknown name is an InputError naming `file` and `field`.
  static EngineSet parse(std::string_view text, const std::string& file, const std::string& field);
  // The words parse takes, for help texts and checks: each engine, then `all` and `both`.
  static std::vector<std::string> names();

  bool has(std::string_view engine) const;
  EngineSet with(std::string_view engine) const;
  bool empty() const { return bits_ == 0; }
  // Runs only engines that need no execution graph (the estimate).
  bool estimate_only() const;
  // The word it parses from: an engine's name, `all`, `both`, or the names joined by "+".
  std::string name() const;
  // The engines' names, in registry order.
  std::vector<std::string_view> engines() const;
  bool operator==(const EngineSet&) const = default;

 private:
  std::uint32_t bits_ = 0;
};

struct EngineRuns {
  std::vector<EngineRun> runs;  // one per engine asked, in registry order
  std::optional<FoldSummary> fold;  // set when the graph was folded
  const EngineRun* find(std::string_view engine) const;
  const std::optional<double> latency(std::string_view engine) const;
  // The run that models contention best among those that scheduled operators: SimGrid's, else the
  // flow engine's, else the evaluator's (else any other's); null when none scheduled.
  const EngineRun* contended() const;
};

// Runs the engines of `which` on the graph. Under RunOrder::Scheduler the evaluator list-schedules
// by rank first (its run is kept when asked for; otherwise its time counts in the next engine's) and
// the other schedulers replay its per-GPU order; under RunOrder::Fcfs each runs first come, first
// served. The estimate runs on a compiled plan's graph (a graph whose `plan` is set), even one
// compiled without operators (plan_layout). Throws std::invalid_argument with an engine's problem.
EngineRuns run_engines(const PlacedGraph& graph, const Cluster& cluster, EngineSet which, RunOrder order);

}  // namespace placesim
