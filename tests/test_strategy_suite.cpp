// The typed strategy suite: every registered strategy, with its default options, on toy and real
// graphs, on 2 and 4 GPUs (two-GPU NVLink servers). Strategies registered later are covered
// automatically: the suite is instantiated over strategy_registry().
//
// For every run it checks what the runner relies on:
//  * every operator is placed on an existing GPU and colocation classes are respected;
//  * memory: the per-GPU memory and OOM flag the runner computes agree with device_memory(), and
//    a strategy's own report agrees with them too (`oom` / `memory_overflow` booleans, per-GPU
//    `*memory_bytes` arrays); a graph that cannot fit still gets a placement, flagged OOM;
//  * the iteration latency is finite and not below the lower bounds;
//  * the same seed (default options, a fresh instance) gives the same placement;
//  * the search time is measured (positive, within the wall time of the call) and the report is
//    a JSON object.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <functional>
#include <gtest/gtest-spi.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placement/framework/strategy.h"
#include "scenarios/runner/runner.h"
#include "sim/models/builtin_graphs.h"
#include "sim/engines/evaluator.h"
#include "sim/io/graph_io.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

std::vector<std::string> registered_strategies() {
  std::vector<std::string> names;
  // Strategies written in Python run where the placesim Python module does: the pytest suite checks
  // them (python/tests/test_python_strategy.py).
  for (const auto& info : strategy_registry())
    if (info.name != "python") names.push_back(info.name);
  return names;
}

Cluster gpus(int n, double memory = kDefaultGpuMemory) {
  NvlinkServersConfig config;
  config.gpus = n;
  config.gpu_memory = memory;
  Cluster cluster = make_nvlink_servers(config);
  cluster.finalize("suite cluster");
  return cluster;
}

// Builds a fresh strategy instance (default options).
using StrategyFactory = std::function<std::unique_ptr<Strategy>()>;

StrategyFactory registered(const std::string& name) {
  return [name] { return make_strategy(name, YAML::Node(), "suite", "strategies[0]"); };
}

PlacementResult place_once(const StrategyFactory& make, const std::string& name, const Graph& graph,
                           const Cluster& cluster) {
  auto s = make();
  return s->place(graph, cluster);  // validates size, GPUs and colocation
}

void check_strategy(const StrategyFactory& make, const std::string& strategy, const Graph& graph,
                    const Cluster& cluster, const std::string& what) {
  SCOPED_TRACE(strategy + " on " + what + ", " + std::to_string(cluster.num_devices()) + " GPUs");
  PlacementResult first, second;
  std::chrono::duration<double> first_wall{};
  try {
    const auto t0 = std::chrono::steady_clock::now();
    first = place_once(make, strategy, graph, cluster);
    first_wall = std::chrono::steady_clock::now() - t0;
    second = place_once(make, strategy, graph, cluster);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  const std::vector<DeviceId>& p = first.placement;
  ASSERT_EQ(p.size(), graph.num_operators());
  std::map<int, DeviceId> class_device;
  for (OpId op = 0; op < static_cast<OpId>(graph.num_operators()); ++op) {
    ASSERT_GE(p[op], 0) << graph.op(op).name;
    ASSERT_LT(p[op], cluster.num_devices()) << graph.op(op).name;
    const int cls = graph.op(op).colocation_class;
    if (cls < 0) continue;
    auto [it, fresh] = class_device.emplace(cls, p[op]);
    ASSERT_EQ(it->second, p[op]) << "colocation class " << cls << " split at " << graph.op(op).name;
  }
  EXPECT_EQ(second.placement, p) << "the same seed must give the same placement";
  // The search time is the wall time of place() alone: positive, and inside the whole call's.
  EXPECT_GT(first.search_seconds, 0.0);
  EXPECT_LE(first.search_seconds, first_wall.count());
  ASSERT_TRUE(first.details.is_object()) << first.details.dump();

  // Memory: what the runner reports, what device_memory says, and what the strategy says.
  const Measurement m = measure_placement(graph, cluster, p, EngineSet::of({kEvaluator}));
  const std::vector<double> memory = device_memory(graph, p, cluster.num_devices());
  bool oom = false;
  for (int d = 0; d < cluster.num_devices(); ++d) {
    EXPECT_NEAR(m.memory[d], memory[d], 1e-9 * memory[d] + 1e-6);
    oom = oom || memory[d] > cluster.device(d).memory_bytes;
  }
  EXPECT_EQ(m.oom, oom);
  for (const char* key : {"oom", "memory_overflow"})
    if (first.details.contains(key) && first.details[key].is_boolean()) {
      EXPECT_EQ(first.details[key].get<bool>(), oom) << "report." << key;
    }
  for (const auto& [key, value] : first.details.items()) {
    if (!key.ends_with("memory_bytes") || !value.is_array() || value.size() != memory.size()) continue;
    for (int d = 0; d < cluster.num_devices(); ++d)
      EXPECT_NEAR(value[d].get<double>(), memory[d], 1e-9 * memory[d] + 1e-6) << "report." << key << "[" << d << "]";
  }

  EXPECT_TRUE(std::isfinite(*m.latency(kEvaluator)));
  EXPECT_GE(*m.latency(kEvaluator), m.bounds.best() * (1 - 1e-9)) << "no placement beats the lower bounds";
}

// Forward f1 -> f2 -> f3 -> loss, backward loss -> b3 -> b2 -> b1, each gradient also reading its
// forward activation; f_i and b_i share colocation class i (as Tarnawski et al.'s colorClass
// pairs do), and an unclassed side branch f1 -> aux -> loss.
Graph colocation_graph() {
  Graph g;
  const double mb = 1e6;
  const OpId f1 = g.add_operator({"f1", "op", 40e-6, 64 * mb, 0});
  const OpId f2 = g.add_operator({"f2", "op", 60e-6, 64 * mb, 1});
  const OpId f3 = g.add_operator({"f3", "op", 50e-6, 64 * mb, 2});
  const OpId aux = g.add_operator({"aux", "op", 30e-6, 16 * mb});
  const OpId loss = g.add_operator({"loss", "op", 10e-6, 0});
  const OpId b3 = g.add_operator({"b3", "op", 100e-6, 0, 2});
  const OpId b2 = g.add_operator({"b2", "op", 120e-6, 0, 1});
  const OpId b1 = g.add_operator({"b1", "op", 80e-6, 0, 0});
  g.add_tensor(f1, f2, 4 * mb);
  g.add_tensor(f2, f3, 4 * mb);
  g.add_tensor(f3, loss, 4 * mb);
  g.add_tensor(f1, aux, 2 * mb);
  g.add_tensor(aux, loss, 2 * mb);
  g.add_tensor(loss, b3, 4 * mb);
  g.add_tensor(b3, b2, 4 * mb);
  g.add_tensor(b2, b1, 4 * mb);
  g.add_tensor(f3, b3, 4 * mb);
  g.add_tensor(f2, b2, 4 * mb);
  g.add_tensor(f1, b1, 4 * mb);
  g.finalize("colocation graph");
  return g;
}

// Four 10 GB operators on 8 GB GPUs: no placement fits, yet every strategy must return one.
Graph oversized_graph() {
  Graph g;
  for (int i = 0; i < 4; ++i) g.add_operator({"big" + std::to_string(i), "op", 1e-4, 10e9});
  g.add_tensor(0, 1, 1e6);
  g.add_tensor(0, 2, 1e6);
  g.add_tensor(1, 3, 1e6);
  g.add_tensor(2, 3, 1e6);
  g.finalize("oversized graph");
  return g;
}

class StrategySuite : public ::testing::TestWithParam<std::string> {};

// Broken strategies, to show that the suite's checks catch what they claim to.
class SplitsClasses : public Strategy {  // operator i on GPU i mod n, ignoring colocation
 public:
  SplitsClasses() : Strategy("splits-classes") {}

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) override {
    PlacementResult r;
    for (OpId op = 0; op < static_cast<OpId>(graph.num_operators()); ++op) r.placement.push_back(op % cluster.num_devices());
    return r;
  }
};

class ClaimsToFit : public Strategy {  // everything on GPU 0, reporting that memory fits
 public:
  ClaimsToFit() : Strategy("claims-to-fit") {}

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster&, const Deadline&) override {
    PlacementResult r;
    r.placement.assign(graph.num_operators(), 0);
    r.details["oom"] = false;
    return r;
  }
};

class ChangesEveryRun : public Strategy {  // the k-th instance puts everything on GPU k mod n
 public:
  explicit ChangesEveryRun(int k) : Strategy("changes-every-run"), k_(k) {}

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline&) override {
    PlacementResult r;
    r.placement.assign(graph.num_operators(), k_ % cluster.num_devices());
    return r;
  }

  int k_;
};

template <class S>
StrategyFactory factory_of() {
  return [] { return std::make_unique<S>(); };
}

StrategyFactory changing_factory() {
  auto runs = std::make_shared<int>(0);
  return [runs] { return std::make_unique<ChangesEveryRun>((*runs)++); };
}

}  // namespace

TEST(StrategySuiteChecks, CatchBrokenStrategies) {
  EXPECT_FATAL_FAILURE(check_strategy(factory_of<SplitsClasses>(), "splits", colocation_graph(), gpus(2), "g"),
                       "colocation class");
  EXPECT_NONFATAL_FAILURE(check_strategy(factory_of<ClaimsToFit>(), "claims", oversized_graph(), gpus(4, 16e9), "g"),
                          "report.oom");
  EXPECT_NONFATAL_FAILURE(check_strategy(changing_factory(), "changes", colocation_graph(), gpus(2), "g"),
                          "the same seed");
}

TEST_P(StrategySuite, Fig31) {
  const Graph g = testutil::fig31_graph(1e5);
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "fig3.1");
}

TEST_P(StrategySuite, ColocationClasses) {
  const Graph g = colocation_graph();
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "the colocation graph");
}

TEST_P(StrategySuite, SyntheticTrainingGraph) {
  SyntheticGraphConfig config;
  config.layers = 3;
  config.branches = 2;
  config.ops_per_branch = 2;
  const Graph g = synthetic_training_graph(config);
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "a small synthetic graph");
}

TEST_P(StrategySuite, MemoryThatCannotFitIsInfeasible) {
  // Four 10 GB operators on two 8 GB GPUs: no placement fits, and no strategy is asked for one.
  const Graph g = oversized_graph();
  const Cluster c = gpus(2, 8e9);
  EXPECT_THROW(place_once(registered(GetParam()), GetParam(), g, c), InfeasibleProblem);
}

TEST_P(StrategySuite, MemoryThatFitsOnlyWhenSpread) {
  // Four 6 GB operators on 16 GiB GPUs: one GPU holds at most two. Strategies may still
  // overflow (single-device does); the check is that the flag says so.
  Graph g;
  for (int i = 0; i < 4; ++i) g.add_operator({"w" + std::to_string(i), "op", 1e-4, 6e9});
  g.add_tensor(0, 1, 1e6);
  g.add_tensor(1, 2, 1e6);
  g.add_tensor(2, 3, 1e6);
  g.finalize("tight graph");
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "the tight graph");
}

TEST_P(StrategySuite, QuickpSmall) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/quickp/small.json").graph;
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "quickp small.json");
}

TEST_P(StrategySuite, MsrGnmtWithColorClasses) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const Graph g = load_graph(testutil::shared_graphs() + "/msr-fiddle/gnmt_training.json").graph;
  ASSERT_GT(g.num_colocation_classes(), 0);
  for (int n : {2, 4}) check_strategy(registered(GetParam()), GetParam(), g, gpus(n), "msr-fiddle gnmt_training.json");
}

INSTANTIATE_TEST_SUITE_P(Registered, StrategySuite, ::testing::ValuesIn(registered_strategies()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name;
                           for (char ch : param.param) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });
