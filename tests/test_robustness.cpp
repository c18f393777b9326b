// Regression tests: inputs that crashed placesim, left a results folder --resume could not read,
// or ended in "internal error". One test (or more) per numbered item, named after it, each
// reproducing the reported input where it can and checking what the user sees.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>

#include "placement/strategies/heft/heft.h"
#include "scenarios/runner/record.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/runner.h"
#include "scenarios/runner/sweep.h"
#include "scenarios/runner/sweep_runner.h"
#include "sim/core/errors.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"
#include "sim/io/placement_io.h"
#include "sim/core/units.h"
#include "sim/config/yaml_fields.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

namespace fs = std::filesystem;
using testutil::run_cli;

fs::path temp_dir(const std::string& name) { return testutil::fresh_temp_dir("robust-" + name); }

void write(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The reported graph for items 1, 2 and 7: two operators of 1e308 s joined by a zero-byte tensor.
const char* kHugeComputeGraph = R"({"format": "placesim-graph", "version": 1,
  "operators": [{"name": "a", "compute_s": 1e308}, {"name": "b", "compute_s": 1e308}],
  "tensors": [{"src": "a", "dst": "b", "bytes": 0}]})";

// Two GPUs where 0 -> 1 has no bandwidth (as a multi-NIC allocation of zero leaves it) and
// 1 -> 0 is a 10 GB/s link. GPU 0 holds 1 GB, GPU 1 16 GB.
Cluster one_way_pair() {
  Cluster c;
  c.add_device({"gpu0", 0, 1e9});
  c.add_device({"gpu1", 1, 16e9});
  c.set_unreachable(0, 1);
  c.set_route(1, 0, {c.add_link({"l1_0", 10e9, 0})});
  c.finalize("one-way pair");
  return c;
}

// ---------------------------------------------------------------------------------------------
// Item 1: HEFT read out of bounds when every candidate finish time was infinite (`best` stayed -1).

TEST(Robustness, Item1HeftAllInfiniteFinishTimes) {
  // The reported input, built in memory (the loaders now refuse 1e308 s: item 7): b can start only
  // after a's 1e308 s, so b finishes at infinity on either GPU.
  Graph g;
  g.add_operator({"a", "op", 1e308, 0});
  g.add_operator({"b", "op", 1e308, 0});
  g.add_tensor(0, 1, 0);
  g.finalize("huge");
  FullMeshConfig mesh;
  mesh.gpus = 2;
  const HeftSchedule s = heft_schedule(g, make_full_mesh(mesh), HeftConfig{});
  ASSERT_EQ(s.placement.size(), 2u);
  for (DeviceId d : s.placement) EXPECT_TRUE(d == 0 || d == 1) << d;
  EXPECT_TRUE(std::isinf(s.makespan));
}

TEST(Robustness, Item1HeftColocatedOperatorWhoseInputCannotArrive) {
  // c (class 0, 2 GB) fits only GPU 1; a goes to GPU 0 (idle, earliest); b joins c's class on
  // GPU 1, but a's tensor cannot cross 0 -> 1: b's only candidate finishes at infinity.
  Graph g;
  g.add_operator({"a", "op", 1e-3, 0});
  g.add_operator({"b", "op", 1e-3, 0, 0});
  g.add_operator({"c", "op", 10e-3, 2e9, 0});
  g.add_tensor(0, 1, 100);
  g.finalize("one-way");
  const HeftSchedule s = heft_schedule(g, one_way_pair(), HeftConfig{});
  EXPECT_EQ(s.placement, (std::vector<DeviceId>{0, 1, 1}));
  EXPECT_TRUE(std::isinf(s.finish[1]));
}

// ---------------------------------------------------------------------------------------------
// Item 2: a non-finite latency was written as null with status ok, and --resume then crashed.

// round-robin puts fig3.1's A on GPU 0 and B on GPU 1, which a zero allocation leaves unreachable.
const char* kUnreachableScenario = R"(graph: {builtin: fig3.1}
cluster:
  type: multi-nic
  servers: 2
  gpus_per_server: 1
  nics_per_server: 1
  link_bandwidth: 10GB/s
  allocation: [[0, 0], [0, 0]]
strategies: [round-robin, single-device]
simulation: {engine: evaluator, trace: false}
)";

TEST(Robustness, Item2NonFiniteLatencyIsAFailedPointWithItsReason) {
  const fs::path dir = temp_dir("item2");
  const std::vector<PointRecord> records =
      testutil::run_plan(plan_sweep(YAML::Load(kUnreachableScenario), "s.yaml"), dir);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].status, PointStatus::Failed);
  EXPECT_TRUE(contains(records[0].reason, "the evaluator's latency is inf, not a finite number"
                                         ": tensor 'A' -> 'B' goes from GPU 0 to GPU 1, which the cluster cannot reach"))
      << records[0].reason;
  EXPECT_EQ(records[1].status, PointStatus::Ok);  // single-device needs no transfer
  const std::string text = read(dir / "results.jsonl");
  EXPECT_FALSE(contains(text, "\"evaluator_latency\":null")) << "no latency is written as null: " << text;

  std::string out;
  write(dir / "s.yaml", kUnreachableScenario);
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --resume -o " + dir.string(), out), 1) << out;
  EXPECT_TRUE(contains(out, "2 points (2 already done), 0 to run")) << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item2ResumeReadsAnOldOkLineWithANullLatencyAsFailed) {
  // The line an earlier placesim wrote for the reported single-device run on the 1e308 s graph.
  const fs::path dir = temp_dir("item2-resume");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [single-device]\n"
                        "simulation: {engine: evaluator, trace: false}\n");
  write(dir / "results.jsonl",
        R"({"key":"strategy=single-device rep=0","index":0,"scenario":"s","graph":"big","gpus":2,"cluster":"c","sweep":{},)"
        R"("label":"single-device","strategy":"single-device","seed":null,"repetition":0,"engine":"evaluator",)"
        R"("order":"scheduler","operators":2,"tensors":1,"status":"ok","search_time":4e-06,"evaluator_latency":null,)"
        R"("simgrid_latency":null,"simgrid_wall_time":null,"lower_bound_critical_path":null,"lower_bound_work_per_gpu":null,)"
        R"("memory_per_gpu":[0,0],"peak_memory":0,"oom":false,"busy_per_gpu":[null,0],"links":[],"strategy_report":{},)"
        R"("placement_file":"placement-single-device.json","trace_file":"","warnings":[]})"
        "\n");
  const std::vector<PointRecord> records = read_result_lines((dir / "results.jsonl").string());
  ASSERT_EQ(records.size(), 1u);
  EXPECT_TRUE(records[0].failed());
  EXPECT_TRUE(contains(records[0].reason, "\"evaluator_latency\": null")) << records[0].reason;

  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --resume -o " + dir.string(), out), 1) << out;
  EXPECT_TRUE(contains(out, "1 point (1 already done), 0 to run")) << out;
  EXPECT_TRUE(contains(out, "failed: recorded as ok with \"evaluator_latency\": null")) << out;
  EXPECT_FALSE(contains(out, "internal error")) << out;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Item 3: a YAML key that is a list or a mapping escaped as "internal error: yaml-cpp: bad
// conversion".

TEST(Robustness, Item3NonScalarKeysAreInputErrorsWithTheirLine) {
  const std::string base = "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft]\n";
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(base + "? [a]\n: 1\n"), "s.yaml"), "(line 4)",
                     "expected a plain word as key, got a list or mapping");
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load("graph: {builtin: fig3.1}\ncluster:\n  type: full-mesh\n  gpus: 2\n  [x]: 1\n"
                                           "strategies: [heft]\n"),
                                "s.yaml"),
                     "cluster (line 5)", "expected a plain word as key");
  EXPECT_INPUT_ERROR(plan_sweep(YAML::Load(base + "sweep: {[x]: [1, 2]}\n"), "s.yaml"), "sweep (line 4)",
                     "expected a field path such as cluster.gpus as key");

  const fs::path dir = temp_dir("item3");
  write(dir / "top.yaml", base + "? [a]\n: 1\n");
  write(dir / "cluster.yaml", "graph: {builtin: fig3.1}\ncluster:\n  type: full-mesh\n  [x]: 1\nstrategies: [heft]\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "top.yaml").string() + " -o " + (dir / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "top.yaml: <key> (line 4): expected a plain word as key")) << out;
  EXPECT_EQ(run_cli("run " + (dir / "cluster.yaml").string() + " -o " + (dir / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "cluster.yaml: cluster (line 4): expected a plain word as key")) << out;
  EXPECT_FALSE(contains(out, "internal error")) << out;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Item 4: a scenario name that is not UTF-8 crashed after the work was done (json type_error 316).

TEST(Robustness, Item4ScenarioTextThatIsNotUtf8IsRefusedAtLoad) {
  const fs::path dir = temp_dir("item4");
  write(dir / "s.yaml", "name: caf\xe9\ngraph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft]\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "s.yaml: name (line 1): expected UTF-8 text, got the byte 0xE9 at character 4")) << out;
  EXPECT_FALSE(fs::exists(dir / "out")) << "refused before anything ran";
  // Deeper fields and keys are named too.
  write(dir / "deep.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies:\n  - name: heft\n"
                           "    label: h\xc3\n");
  EXPECT_INPUT_ERROR(load_sweep((dir / "deep.yaml").string()), "strategies[0].label (line 5)", "0xC3");
  // An escaped \xe9 in double quotes is the character U+00E9, which is fine.
  write(dir / "escaped.yaml", "name: \"caf\\xe9\"\ngraph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                              "strategies: [round-robin]\nsimulation: {engine: evaluator, trace: false}\n");
  EXPECT_EQ(run_cli("run " + (dir / "escaped.yaml").string() + " -o " + (dir / "out").string(), out), 0) << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item4TheLoadCheckRefusesAliasCyclesAndWalksSharedNodesOnce) {
  const fs::path dir = temp_dir("item4-alias");
  write(dir / "cycle.yaml", "graph: {builtin: fig3.1}\ncluster: &c {type: full-mesh, gpus: 2, z: *c}\nstrategies: [heft]\n");
  EXPECT_INPUT_ERROR(load_yaml_file((dir / "cycle.yaml").string()), "cluster.z (line 2)",
                     "an alias (*name) refers to a mapping or list that contains it");
  // 10^30 paths through 31 lists: checked once each, so this returns at once.
  std::string laughs = "l0: &l0 [a, a]\n";
  for (int i = 1; i <= 30; ++i)
    laughs += fmt::format("l{0}: &l{0} [*l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}, *l{1}]\n", i, i - 1);
  write(dir / "laughs.yaml", laughs + "bad: \xff\n");
  EXPECT_INPUT_ERROR(load_yaml_file((dir / "laughs.yaml").string()), "bad (line 32)", "0xFF");
  fs::remove_all(dir);
}

// A key given twice: yaml-cpp keeps both and reads the first, so the value a user edited last
// (often the lower one) would be ignored without a word. Every YAML file placesim reads refuses it.
TEST(Robustness, AKeyGivenTwiceInOneMappingIsRefusedWithBothLines) {
  const fs::path dir = temp_dir("duplicate-keys");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft]\n"
                        "graph: {builtin: fig3.2}\n");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "s.yaml: graph (line 4): the key is given twice in one mapping (first on line 1)")) << out;
  EXPECT_FALSE(fs::exists(dir / "out")) << "refused before anything ran";
  // Inside a flow mapping and a list item, named by their path.
  write(dir / "nested.yaml", "cluster: {type: full-mesh, gpus: 2, gpus: 4}\nstrategies:\n  - {name: heft, label: a, label: b}\n");
  EXPECT_INPUT_ERROR(load_yaml_file((dir / "nested.yaml").string()), "cluster.gpus (line 1)", "first on line 1");
  write(dir / "item.yaml", "strategies:\n  - name: heft\n    label: a\n    label: b\n");
  EXPECT_INPUT_ERROR(load_yaml_file((dir / "item.yaml").string()), "strategies[0].label (line 4)", "first on line 3");
  // The same mapping reached through two aliases is one mapping, not a repeat.
  write(dir / "alias.yaml", "a: &m {x: 1}\nb: *m\nc: *m\n");
  EXPECT_NO_THROW(load_yaml_file((dir / "alias.yaml").string()));
  // A model file for `plan --model-file`.
  write(dir / "m.yaml", "family: gpt\nlayers: 2\nhidden: 256\nheads: 4\nlayers: 4\n");
  write(dir / "c.yaml", "type: full-mesh\ngpus: 2\n");
  EXPECT_EQ(run_cli("plan --model-file " + (dir / "m.yaml").string() + " --cluster " + (dir / "c.yaml").string() + " --gpu a100", out),
            2)
      << out;
  EXPECT_TRUE(contains(out, "m.yaml: layers (line 5): the key is given twice")) << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item4Utf8CheckFollowsRfc3629) {
  EXPECT_EQ(first_invalid_utf8("plain ascii"), std::string_view::npos);
  EXPECT_EQ(first_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string_view::npos);
  EXPECT_EQ(first_invalid_utf8("caf\xe9"), 3u);            // Latin-1
  EXPECT_EQ(first_invalid_utf8("x\xc0\x80"), 1u);          // overlong NUL
  EXPECT_EQ(first_invalid_utf8("x\xed\xa0\x80"), 1u);      // a UTF-16 surrogate
  EXPECT_EQ(first_invalid_utf8("x\xf4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(first_invalid_utf8("ab\xe2\x82"), 2u);         // cut short
}

TEST(Robustness, Item4TheResultsWriterNeverThrowsOnAStrayByte) {
  PointRecord r;
  r.key = "k";
  r.scenario = "caf\xe9";
  r.reason = "failed";
  std::string line;
  ASSERT_NO_THROW(line = dump_json(to_json(r)));
  EXPECT_TRUE(contains(line, "\"scenario\":\"caf\xef\xbf\xbd\"")) << "U+FFFD in place of the bad byte: " << line;
}

// ---------------------------------------------------------------------------------------------
// Item 5: spine-leaf with 65536 leaves of 65536 servers overflowed an int and blamed
// `cluster.servers`, a key the user never set.

TEST(Robustness, Item5SpineLeafTooManyServersBlamesTheLeaves) {
  const fs::path dir = temp_dir("item5");
  write(dir / "c.yaml", "cluster:\n  type: spine-leaf\n  leaves: 65536\n  servers_per_leaf: 65536\n");
  std::string out;
  EXPECT_EQ(run_cli("topology info " + (dir / "c.yaml").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "c.yaml: cluster.leaves (line 3): 65536 leaves of 65536 servers make 4294967296 servers")) << out;
  EXPECT_FALSE(contains(out, "cluster.servers")) << out;
  fs::remove_all(dir);

  // The builder, called from C++ without `servers`, says the same.
  SpineLeafConfig cfg;
  cfg.servers = 0;
  cfg.leaves = 4096;
  cfg.servers_per_leaf = 4096;
  EXPECT_INPUT_ERROR(make_spine_leaf(cfg), "cluster.leaves", "4096 leaves of 4096 servers make 16777216 servers");
}

// ---------------------------------------------------------------------------------------------
// Item 6: a placement file's GPU index of 2^32 was read as GPU 0.

TEST(Robustness, Item6PlacementGpuIndexBeyondAnIntIsRefused) {
  const fs::path dir = temp_dir("item6");
  const Graph g = testutil::fig31_graph();
  write(dir / "named.json", R"({"format":"placesim-placement","version":1,"placement":{"A":4294967296,"B":1,"C":0}})");
  EXPECT_INPUT_ERROR(load_placement(g, (dir / "named.json").string()), "placement.A",
                     "expected a GPU index (a whole number from 0 to 2147483647), got 4294967296");
  write(dir / "list.json", "[0, 2147483648, 0]");
  EXPECT_INPUT_ERROR(load_placement(g, (dir / "list.json").string()), "[1]", "got 2147483648");
  write(dir / "largest.json", "[0, 2147483647, 0]");
  EXPECT_EQ(load_placement(g, (dir / "largest.json").string())[1], 2147483647);  // read as is; the cluster judges it

  // Through the CLI: exit 2, naming the file and the operator.
  write(dir / "g.json", R"({"format": "placesim-graph", "version": 1,
    "operators": [{"name": "a", "compute_s": 1e-3}, {"name": "b", "compute_s": 1e-3}],
    "tensors": [{"src": "a", "dst": "b", "bytes": 1000}]})");
  write(dir / "p.json", R"({"format":"placesim-placement","version":1,"placement":{"a":4294967296,"b":1}})");
  write(dir / "c.yaml", "type: full-mesh\ngpus: 2\n");
  std::string out;
  EXPECT_EQ(run_cli("simulate --graph " + (dir / "g.json").string() + " --placement " + (dir / "p.json").string() +
                        " --cluster " + (dir / "c.yaml").string() + " --engine evaluator",
                    out),
            2)
      << out;
  EXPECT_TRUE(contains(out, "p.json: placement.a: expected a GPU index")) << out;
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Item 7: finite values that overflow on the way (1e308 s, 1e-320 B/s) are refused at load,
// naming the field; the ranges are sim/core/units.h's, the same for every loader.

TEST(Robustness, Item7GraphFilesAreBoundedPerField) {
  EXPECT_INPUT_ERROR(parse_graph(kHugeComputeGraph, "big.json"), "operators[0].compute_s",
                     "expected a duration from 0 to 1e+09 s", "'1e+308 seconds'");
  auto native = [](const std::string& op, const std::string& tensor_bytes) {
    return R"({"format": "placesim-graph", "version": 1, "operators": [)" + op +
           R"(, {"name": "z", "compute_s": 0}], "tensors": [{"src": "a", "dst": "z", "bytes": )" + tensor_bytes + "}]}";
  };
  EXPECT_INPUT_ERROR(parse_graph(native(R"({"name": "a", "compute_s": 1, "memory_bytes": 2e14})", "0"), "g.json"),
                     "operators[0].memory_bytes", "expected a size from 0 to 1e+14 bytes");
  EXPECT_INPUT_ERROR(parse_graph(native(R"({"name": "a", "compute_s": 1})", "1e15"), "g.json"), "tensors[0].bytes",
                     "1e+14 bytes");
  // The largest values load.
  EXPECT_NO_THROW(parse_graph(native(R"({"name": "a", "compute_s": 1e9, "memory_bytes": 1e14})", "1e14"), "g.json"));

  // QuickP: microseconds per device (the mean of two 1e308 us costs was infinite), bytes, bits.
  const std::string quickp_node = R"({"id": "a", "op_type": "x", "mem": 0, "comp_cost": {"gpu0": 1e308, "gpu1": 1e308}})";
  EXPECT_INPUT_ERROR(parse_graph(R"({"nodes": [)" + quickp_node + R"(], "links": []})", "q.json"),
                     "nodes[0].comp_cost.gpu0", "'1e+308 microseconds'");
  EXPECT_INPUT_ERROR(parse_graph(R"({"nodes": [{"id": "a", "op_type": "x", "mem": 0, "comp_cost": {"gpu0": 1}},
      {"id": "b", "op_type": "x", "mem": 0, "comp_cost": {"gpu0": 1}}],
      "links": [{"source": "a", "target": "b", "tensor_size_in_bit": 1e16}]})", "q.json"),
                     "links[0].tensor_size_in_bit", "'1e+16 bits'");
  // msr-fiddle: milliseconds.
  EXPECT_INPUT_ERROR(parse_graph(R"({"nodes": [{"id": 1, "name": "a", "fpgaLatency": 1e300, "size": 0, "isBackwardNode": 0}],
      "edges": []})", "m.json", GraphFormat::Msr),
                     "nodes[0].fpgaLatency", "milliseconds");

  // The CLI: `graph info` on the reported graph is one line naming the field, exit 2 (the
  // parallelism was -nan).
  const fs::path dir = temp_dir("item7");
  write(dir / "big.json", kHugeComputeGraph);
  std::string out;
  EXPECT_EQ(run_cli("graph info " + (dir / "big.json").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "big.json: operators[0].compute_s: expected a duration from 0 to 1e+09 s")) << out;
  EXPECT_FALSE(contains(out, "nan")) << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item7ScenarioQuantitiesAreBoundedPerField) {
  EXPECT_INPUT_ERROR(parse_bandwidth("1e-320B/s", "s.yaml", "cluster.ethernet_bandwidth"), "cluster.ethernet_bandwidth",
                     "expected a bandwidth from 1 B/s to 1e+18 B/s, got '1e-320B/s'");
  EXPECT_INPUT_ERROR(parse_bandwidth("2e18", "s.yaml", "b"), "b", "1e+18 B/s");
  EXPECT_INPUT_ERROR(parse_duration("1e308s", "s.yaml", "cluster.nic_latency"), "cluster.nic_latency", "1e+09 s");
  EXPECT_INPUT_ERROR(parse_bytes("200TB", "s.yaml", "cluster.gpu_memory"), "cluster.gpu_memory", "1e+14 bytes");
  EXPECT_INPUT_ERROR(parse_flops("1e-300FLOP/s", "s.yaml", "graph.gpu.flops"), "graph.gpu.flops", "from 1 FLOP/s");
  EXPECT_DOUBLE_EQ(parse_bandwidth("1B/s", "s.yaml", "b"), 1.0);
  EXPECT_DOUBLE_EQ(parse_duration("1e9s", "s.yaml", "d"), 1e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1e14", "s.yaml", "m"), 1e14);

  // Through the cluster parser, with the field's line (as reported: `ethernet_bandwidth: 1e-320B/s`).
  auto cluster = [](const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "s.yaml", "cluster"); };
  EXPECT_INPUT_ERROR(cluster("type: nvlink-servers\ngpus: 4\nethernet_bandwidth: 1e-320B/s\n"),
                     "cluster.ethernet_bandwidth (line 3)", "expected a bandwidth from 1 B/s");
  EXPECT_INPUT_ERROR(cluster("type: non-blocking\nservers: 2\ngpu_speed: 1e-300\n"), "cluster.gpu_speed (line 3)",
                     "expected a number in [1e-06, 1e+06]");
  EXPECT_INPUT_ERROR(cluster("type: non-blocking\nservers: 2\nserver_overrides: [{server: 1, gpu_speed: 1e300}]\n"),
                     "gpu_speed", "expected a ratio from 1e-06 to 1e+06");
  EXPECT_INPUT_ERROR(cluster("type: spine-leaf\nservers: 4\noversubscription: '1:1e300'\n"),
                     "cluster.oversubscription (line 3)", "expected a ratio from 1e-06 to 1e+06");
}

TEST(Robustness, Item7ModelZooSizesThatOverflowNameTheOperator) {
  models::ModelConfig c;
  c.model = "bert-base";
  c.hidden = 1'000'000'000;
  c.heads = 1;
  const std::string message = testutil::input_error_message([&] { models::zoo_graph(c); });
  EXPECT_TRUE(contains(message, "more than the 1e+14 bytes placesim simulates; give smaller model sizes")) << message;
}

TEST(Robustness, Item7TheLargestValuesStayFiniteInBothEngines) {
  // The extremes the ranges allow: a 1e9 s operator sends 1e14 bytes over a 1 B/s link with 1e9 s
  // of latency, then a chain of nanosecond operators follows. Both engines give finite, equal times.
  Graph g;
  g.add_operator({"big", "op", kMaxDuration, kMaxBytes});
  for (int i = 0; i < 20; ++i) g.add_operator({fmt::format("t{}", i), "op", 1e-9, 0});
  g.add_tensor(0, 1, kMaxBytes);
  for (int i = 1; i < 20; ++i) g.add_tensor(i, i + 1, 1e-3);
  g.finalize("extremes");
  const Cluster c = testutil::dedicated_mesh(2, kMinBandwidth, kMaxDuration, kMaxBytes);
  std::vector<DeviceId> placement(g.num_operators());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = static_cast<DeviceId>(i % 2);
  const Measurement m = measure_placement(g, c, placement, EngineSet::of({kEvaluator, kSimGrid}));
  ASSERT_TRUE(m.latency(kSimGrid));
  EXPECT_TRUE(std::isfinite(*m.latency(kEvaluator)) && std::isfinite(*m.latency(kSimGrid)));
  EXPECT_GT(*m.latency(kEvaluator), kMaxBytes / kMinBandwidth);
  EXPECT_NEAR(*m.latency(kSimGrid), *m.latency(kEvaluator), 1e-9 * *m.latency(kEvaluator));
}

// ---------------------------------------------------------------------------------------------
// Item 11: an output folder that cannot be written, or a full disk, was "internal error" (exit 1)
// and left *.tmp files; a partial last line of results.jsonl blocked --resume.

TEST(Robustness, Item11AFailedAtomicWriteLeavesNoTemporaryFile) {
  const fs::path dir = temp_dir("item11-atomic");
  // The temporary file is /dev/full: every write fails with ENOSPC, as on a full disk.
  fs::create_symlink("/dev/full", dir / "results.json.tmp");
  try {
    write_file_atomically((dir / "results.json").string(), std::string(1 << 16, 'x'));
    ADD_FAILURE() << "no error";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.file(), (dir / "results.json").string());
    EXPECT_TRUE(contains(e.what(), "No space left on device")) << e.what();
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(dir / "results.json.tmp"))) << "the temporary file is removed";
  EXPECT_FALSE(fs::exists(dir / "results.json"));
  fs::remove_all(dir);
}

// Every file under `dir` whose name ends in .tmp.
std::vector<std::string> temporary_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tmp") found.push_back(e.path().string());
  return found;
}

TEST(Robustness, Item11AFullDiskEndsTheRunWithOneLineAndExitCode2) {
  const fs::path dir = temp_dir("item11-full");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\n"
                        "strategies: [heft, round-robin, single-device]\n");
  // Files may grow to 512 bytes (dash counts 512-byte blocks): a placement file fits, a trace or
  // a results line does not. SIGXFSZ is ignored so that writes fail with EFBIG instead of killing.
  std::string out;
  const int rc = run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "out").string(), out,
                         "trap '' XFSZ; ulimit -f 1; ");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_TRUE(contains(out, "error: " + (dir / "out").string() + "/")) << "the line names the path: " << out;
  EXPECT_TRUE(contains(out, "File too large")) << out;
  EXPECT_FALSE(contains(out, "internal error")) << out;
  EXPECT_EQ(temporary_files(dir), std::vector<std::string>{});
  // No point is recorded as failed for it, so a --resume with room runs every point.
  EXPECT_TRUE(read_result_lines((dir / "out" / "results.jsonl").string()).empty());
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --resume -o " + (dir / "out").string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "3 points, 3 to run")) << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item11AnOutputFolderThatCannotBeCreatedIsOneLine) {
  const fs::path dir = temp_dir("item11-folder");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft]\n");
  write(dir / "a-file", "");
  std::string out;
  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + (dir / "a-file" / "out").string(), out), 2) << out;
  EXPECT_TRUE(contains(out, "error: " + (dir / "a-file" / "out").string() + ": cannot create the output folder: Not a directory"))
      << out;
  fs::remove_all(dir);
}

TEST(Robustness, Item11ResumeSkipsAPartialLastLineWithAWarning) {
  const fs::path dir = temp_dir("item11-partial");
  write(dir / "s.yaml", "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft, round-robin]\n"
                        "simulation: {engine: evaluator, trace: false}\n");
  std::string out;
  ASSERT_EQ(run_cli("run " + (dir / "s.yaml").string() + " -o " + dir.string(), out), 0) << out;
  // Keep the first line whole and cut the second short, as a full disk or another writer would.
  const std::string text = read(dir / "results.jsonl");
  const std::size_t first_end = text.find('\n') + 1;
  write(dir / "results.jsonl", text.substr(0, first_end) + text.substr(first_end, 40));

  std::vector<std::string> warnings;
  EXPECT_EQ(read_result_lines((dir / "results.jsonl").string(), &warnings).size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "line 2: skipped a partial last line (40 bytes without a newline)")) << warnings[0];

  EXPECT_EQ(run_cli("run " + (dir / "s.yaml").string() + " --resume -o " + dir.string(), out), 0) << out;
  EXPECT_TRUE(contains(out, "warning: " + (dir / "results.jsonl").string() + ": removed a partial last line (40 bytes"))
      << out;
  EXPECT_TRUE(contains(out, "2 points (1 already done), 1 to run")) << out;
  const std::string repaired = read(dir / "results.jsonl");
  EXPECT_EQ(std::count(repaired.begin(), repaired.end(), '\n'), 2) << repaired;
  EXPECT_EQ(read_result_lines((dir / "results.jsonl").string()).size(), 2u);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Item 12: `run` reported "(line 1)" for every scenario error, and the progress line showed
// "18446744073709551615 running" when a graph failed to load.

TEST(Robustness, Item12RunReportsTheLineOfAScenarioError) {
  const fs::path dir = temp_dir("item12-line");
  const std::string scenario = "name: x\ngraph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft]\n"
                               "simulation:\n  engine: both\n  tracee: true\n";
  write(dir / "s.yaml", scenario);
  write(dir / "sweep.yaml", scenario + "sweep: {cluster.gpus: [2, 3]}\n");
  std::string out;
  for (const char* file : {"s.yaml", "sweep.yaml"}) {
    EXPECT_EQ(run_cli("run " + (dir / file).string() + " -o " + (dir / "out").string(), out), 2) << out;
    EXPECT_TRUE(contains(out, std::string(file) + ": simulation.tracee (line 7): unknown key; did you mean 'trace'?")) << out;
  }
  fs::remove_all(dir);
}

// A graph that is not one (here a negative compute time) is an error of the scenario, found when
// the sweep reads its graphs: nothing runs, nothing is written, no failed row per strategy.
TEST(Robustness, Item12AGraphThatFailsToLoadStopsTheSweepBeforeAnyPoint) {
  const fs::path dir = temp_dir("item12-progress");
  write(dir / "bad.json", R"({"format": "placesim-graph", "version": 1, "operators": [{"name": "a", "compute_s": -1}],
                             "tensors": []})");
  write(dir / "s.yaml", "graph: {file: bad.json}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [heft, round-robin]\n"
                        "simulation: {engine: evaluator, trace: false}\n"
                        "sweep: {graph: [{builtin: fig3.1}, {file: bad.json}]}\n");
  SweepOptions options;
  options.output = (dir / "out").string();
  options.jobs = 2;
  std::ostringstream log;
  EXPECT_INPUT_ERROR(run_sweep(load_sweep((dir / "s.yaml").string()), options, log), "", "bad.json", "compute_s");
  EXPECT_FALSE(fs::exists(dir / "out" / "results.jsonl"));
  EXPECT_FALSE(contains(log.str(), "failed")) << log.str();
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Findings of the fuzz targets (tests/fuzz): inputs that escaped as something other than an
// InputError, each reduced to what it takes.

// fuzz_placement: a number too large for a double is nlohmann's out_of_range (406), not a
// parse_error; it escaped load_placement and `placesim simulate --placement` said "internal error".
TEST(Robustness, FuzzPlacementNumberTooLargeForADoubleIsAnInputError) {
  const fs::path dir = temp_dir("fuzz-placement");
  const Graph g = testutil::fig31_graph();
  write(dir / "named.json", R"({"placement": {"A": 31e308, "B": 0, "C": 0}})");
  EXPECT_INPUT_ERROR(load_placement(g, (dir / "named.json").string()), "", "malformed JSON", "number overflow");
  write(dir / "list.json", "[0, 1e400, 0]");
  EXPECT_INPUT_ERROR(load_placement(g, (dir / "list.json").string()), "", "malformed JSON", "number overflow");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim
