#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scenarios/runner/scenario.h"
#include "scenarios/runner/sweep.h"
#include "sim/core/errors.h"
#include "tests/test_util.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

std::string parse_error(const std::string& yaml) {
  return testutil::input_error_message([&] { parse_scenario(YAML::Load(yaml), "bad.yaml"); });
}

const char* kCluster = "cluster: {type: full-mesh, gpus: 2, bandwidth: 10GB/s}\n";

using testutil::run_cli;

fs::path temp_dir(const std::string& name) { return testutil::fresh_temp_dir("test-" + name); }

}  // namespace

TEST(Scenario, ParsesTheQuickstart) {
  Scenario s = load_scenario(std::string(PLACESIM_TEST_SOURCE_DIR) + "/scenarios/quickstart.yaml");
  EXPECT_EQ(s.name, "quickstart");
  EXPECT_EQ(s.cluster.num_devices(), 8);
  ASSERT_EQ(s.strategies.size(), 11u);
  EXPECT_EQ(s.strategies[10].label, "quickp-flow");
  EXPECT_EQ(s.simulation.engines, EngineSet::of({kEvaluator, kFlow, kSimGrid}));
  ASSERT_TRUE(s.graph.model.has_value());
  EXPECT_EQ(s.graph.model->model, "bert-base");
  EXPECT_EQ(s.graph.model->layers, 4);
}

TEST(Scenario, ErrorsNameTheFieldAndSuggest) {
  std::string m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster + "strategies: [single-devise]\n");
  EXPECT_NE(m.find("unknown strategy 'single-devise'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean 'single-device'"), std::string::npos) << m;
  EXPECT_NE(m.find("round-robin"), std::string::npos) << "lists the valid ones: " << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster + "strategies: [single-device]\nstrategy: x\n");
  EXPECT_NE(m.find("did you mean 'strategies'"), std::string::npos) << m;

  m = parse_error(std::string(kCluster) + "strategies: [single-device]\n");
  EXPECT_NE(m.find("graph"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster + "strategies: []\n");
  EXPECT_NE(m.find("non-empty list"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster +
                  "strategies: [{name: single-device, options: {device: -1}}]\n");
  EXPECT_NE(m.find("strategies[0].options.device"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster +
                  "strategies: [{name: round-robin, options: {skip: true}}]\n");
  EXPECT_NE(m.find("unknown key"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster + "strategies: [round-robin, round-robin]\n");
  EXPECT_NE(m.find("used twice"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") +
                  "cluster: {type: full-mesh, gpus: 2, bandwidth: 0B/s}\nstrategies: [round-robin]\n");
  EXPECT_NE(m.find("cluster.bandwidth"), std::string::npos) << m;

  m = parse_error(std::string("graph: {file: x.json, builtin: fig3.1}\n") + kCluster + "strategies: [round-robin]\n");
  EXPECT_NE(m.find("exactly one of"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: synthetic, layers: 0}\n") + kCluster + "strategies: [round-robin]\n");
  EXPECT_NE(m.find("graph.layers"), std::string::npos) << m;

  m = parse_error(std::string("graph: {builtin: fig3.1}\n") + kCluster +
                  "strategies: [round-robin]\nsimulation: {engine: ns3}\n");
  EXPECT_NE(m.find("simulation.engine"), std::string::npos) << m;
}

TEST(Scenario, MalformedYamlGivesLineAndColumn) {
  fs::path dir = temp_dir("yaml");
  std::ofstream(dir / "broken.yaml") << "graph: {builtin: fig3.1\ncluster: [\n";
  EXPECT_INPUT_ERROR(load_scenario((dir / "broken.yaml").string()), "", "broken.yaml", "line", "malformed YAML");
  EXPECT_THROW(load_scenario((dir / "missing.yaml").string()), InputError);
  fs::remove_all(dir);
}

// A path that names nothing is a bad input when the scenario is read (exit 2, the field named), not
// a point that fails when it runs; relative paths are the scenario's folder's.
TEST(Scenario, MissingInputPathsAreRefusedWhenRead) {
  const fs::path dir = temp_dir("missing-inputs");
  const std::string scenario = (dir / "s.yaml").string();
  std::ofstream(dir / "there.json") << "{}";
  auto refused = [&](const std::string& source) {
    return testutil::input_error_message([&] { parse_scenario(YAML::Load(source + kCluster + "strategies: [round-robin]\n"), scenario); });
  };
  std::string m = refused("graph: {file: nothere.json}\n");
  EXPECT_NE(m.find("graph.file"), std::string::npos) << m;
  EXPECT_NE(m.find((dir / "nothere.json").string() + "' does not exist; expected a graph file"), std::string::npos) << m;
  m = refused("graph: {chakra: nodir}\n");
  EXPECT_NE(m.find("graph.chakra"), std::string::npos) << m;
  EXPECT_NE(m.find("directory of Chakra traces"), std::string::npos) << m;
  m = refused("graph: {chakra: there.json}\n");  // a file where a directory belongs
  EXPECT_NE(m.find("there.json' is not a directory of Chakra traces"), std::string::npos) << m;
  m = refused("graph: {onnx: model.onnx}\n");
  EXPECT_NE(m.find("graph.onnx"), std::string::npos) << m;
  EXPECT_NE(m.find("export_onnx.py"), std::string::npos) << m;
  m = refused("workload: {file: layers.json}\n");
  EXPECT_NE(m.find("workload.file"), std::string::npos) << m;
  EXPECT_NE(m.find("layers.json' does not exist; expected a workload file"), std::string::npos) << m;
  m = refused("graph: {file: .}\n");  // a directory where a file belongs
  EXPECT_NE(m.find("is not a graph file"), std::string::npos) << m;
  // A sweep over graphs names the value at fault.
  m = testutil::input_error_message([&] {
    plan_sweep(YAML::Load(std::string("graph: {file: there.json}\n") + kCluster +
                          "strategies: [round-robin]\nsweep: {graph: [{file: there.json}, {file: gone.json}]}\n"),
               scenario);
  });
  EXPECT_NE(m.find("sweep.graph"), std::string::npos) << m;
  EXPECT_NE(m.find("gone.json' does not exist"), std::string::npos) << m;
  EXPECT_NO_THROW(parse_scenario(YAML::Load(std::string("graph: {file: there.json}\n") + kCluster + "strategies: [round-robin]\n"), scenario));
  fs::remove_all(dir);
}

TEST(Cli, RunsTheFig31ScenarioAndWritesResults) {
  fs::path dir = temp_dir("fig31");
  std::string out;
  const int rc = run_cli(std::string("run ") + PLACESIM_TEST_SOURCE_DIR + "/scenarios/fig31.yaml -o " + dir.string(), out);
  ASSERT_EQ(rc, 0) << out;
  nlohmann::json r = nlohmann::json::parse(std::ifstream(dir / "results.json"));
  ASSERT_EQ(r["strategies"].size(), 2u);
  EXPECT_NEAR(r["strategies"][0]["evaluator_latency"].get<double>(), 20e-6, 1e-12);
  EXPECT_NEAR(r["strategies"][0]["simgrid_latency"].get<double>(), 20e-6, 1e-12);
  EXPECT_TRUE(fs::exists(dir / "results.csv"));
  EXPECT_TRUE(fs::exists(dir / "trace-single-device.json"));
  EXPECT_TRUE(fs::exists(dir / "placement-round-robin.json"));
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(dir / "trace-round-robin.json")));

  fs::remove_all(dir);
}

TEST(Cli, SimulateRunsAGivenPlacement) {
  fs::path dir = temp_dir("simulate");
  // Fig. 3.1 in placesim's own format: 100 kB at 20 GB/s is 5 us per transfer.
  std::ofstream(dir / "fig31.json") << R"({"format": "placesim-graph", "version": 1,
    "operators": [{"name": "A", "type": "op", "compute_s": 5e-6, "memory_bytes": 0},
                  {"name": "B", "type": "op", "compute_s": 10e-6, "memory_bytes": 0},
                  {"name": "C", "type": "op", "compute_s": 5e-6, "memory_bytes": 0}],
    "tensors": [{"src": "A", "dst": "B", "bytes": 100000}, {"src": "A", "dst": "C", "bytes": 100000}]})";
  std::ofstream(dir / "placement.json") << R"({"placement": {"A": 0, "B": 0, "C": 1}})";
  std::ofstream(dir / "cluster.yaml") << "cluster: {type: full-mesh, gpus: 2, bandwidth: 20GB/s}\n";
  std::string out;
  const std::string args = "simulate --graph " + (dir / "fig31.json").string() + " --placement " +
                           (dir / "placement.json").string() + " --cluster " + (dir / "cluster.yaml").string() +
                           " --trace " + (dir / "t.json").string();
  ASSERT_EQ(run_cli(args, out), 0) << out;
  EXPECT_NE(out.find("evaluator       15 us"), std::string::npos) << out;
  EXPECT_NE(out.find("simgrid         15 us"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "t.json"));

  std::ofstream(dir / "bad-placement.json") << R"({"placement": {"A": 0, "B": 0, "Z": 1}})";
  EXPECT_EQ(run_cli("simulate --graph " + (dir / "fig31.json").string() + " --placement " +
                        (dir / "bad-placement.json").string() + " --cluster " + (dir / "cluster.yaml").string(),
                    out),
            2);
  EXPECT_NE(out.find("placement.Z"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(Cli, BadInputsExitWithOneClearLine) {
  fs::path dir = temp_dir("bad");
  std::ofstream(dir / "s.yaml") << "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [metis-x]\n";
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string(), out), 2);
  EXPECT_NE(out.find("error: "), std::string::npos) << out;
  EXPECT_NE(out.find("s.yaml: strategies[0].name: unknown strategy 'metis-x'"), std::string::npos) << out;
  EXPECT_EQ(out.find("terminate"), std::string::npos) << out;

  std::ofstream(dir / "g.json") << "{\"nodes\": [";
  EXPECT_EQ(run_cli("graph info " + (dir / "g.json").string(), out), 2);
  EXPECT_NE(out.find("g.json"), std::string::npos) << out;
  fs::remove_all(dir);
}

TEST(Cli, StrategiesListsEveryRegisteredStrategy) {
  std::string out;
  ASSERT_EQ(run_cli("strategies", out), 0);
  EXPECT_NE(out.find("single-device"), std::string::npos);
  EXPECT_NE(out.find("round-robin"), std::string::npos);
}

// Celeritas's standard evaluation on a zoo model: memory from three small batches by linear
// regression. The zoo's memory is exactly a + b x batch per operator, so the prediction at batch
// 512 from 16, 32 and 64 equals the directly built graph to rounding.
TEST(Scenario, ModelMemoryByRegressionMatchesTheBuiltGraph) {
  const Scenario built = parse_scenario(YAML::Load(std::string("graph: {model: alexnet, batch: 512}\n") + kCluster +
                                                   "strategies: [single-device]\n"),
                                        "s.yaml");
  const Scenario fitted = parse_scenario(
      YAML::Load(std::string("graph: {model: alexnet, batch: 512, memory: regression}\n") + kCluster +
                 "strategies: [single-device]\n"),
      "s.yaml");
  EXPECT_TRUE(fitted.graph.memory_regression);
  std::vector<std::string> warnings;
  const Graph a = load_graph_source(built.graph, "s.yaml", warnings);
  EXPECT_TRUE(warnings.empty());
  const Graph b = load_graph_source(fitted.graph, "s.yaml", warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("predicted from batches 16, 32, 64"), std::string::npos) << warnings[0];
  ASSERT_EQ(a.num_operators(), b.num_operators());
  for (OpId i = 0; i < static_cast<OpId>(a.num_operators()); ++i)
    EXPECT_NEAR(b.op(i).memory_bytes, a.op(i).memory_bytes, 1e-6 * std::max(1.0, a.op(i).memory_bytes)) << a.op(i).name;
  EXPECT_NE(parse_error(std::string("graph: {model: alexnet, memory: guess}\n") + kCluster + "strategies: [single-device]\n")
                .find("graph.memory"),
            std::string::npos);
}

// `portfolio: true` for a scenario: every strategy that takes the key gets it unless its own
// options say otherwise; mcmc starts its chain from the portfolio; the others are left alone.
TEST(Scenario, PortfolioForTheScenarioTurnsItOnWhereAStrategyTakesIt) {
  const Scenario s = parse_scenario(
      YAML::Load("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nportfolio: true\n"
                 "strategies: [celeritas, {name: quickp, options: {portfolio: false}}, mcmc, heft, "
                 "{name: mcmc, label: m2, options: {init: random}}]\n"),
      "s.yaml");
  EXPECT_TRUE(s.strategies[0].options["portfolio"].as<bool>());
  EXPECT_FALSE(s.strategies[1].options["portfolio"].as<bool>());
  EXPECT_EQ(s.strategies[2].options["init"].as<std::string>(), "portfolio");
  EXPECT_FALSE(s.strategies[3].options && s.strategies[3].options["portfolio"]);
  EXPECT_EQ(s.strategies[4].options["init"].as<std::string>(), "random");
  const Scenario off = parse_scenario(
      YAML::Load("graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [celeritas]\n"), "s.yaml");
  EXPECT_FALSE(off.strategies[0].options && off.strategies[0].options["portfolio"]);
}
