// Chakra execution traces (sim/io/chakra/chakra_trace.h): the nodes of a hand-made placement, the
// round trips (graph -> traces -> graph; traces -> simulate --replay), traces of other tools, a
// reading with Python's protobuf against the .proto, and bad directories.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <google/protobuf/util/delimited_message_util.h>
#include <gtest/gtest.h>
#include <regex>
#include <set>
#include <tuple>
#include <unistd.h>

#include "scenarios/runner/runner.h"
#include "scenarios/runner/scenario.h"
#include "sim/models/builtin_graphs.h"
#include "sim/collectives/collectives.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"
#include "sim/io/chakra/chakra_et.pb.h"
#include "sim/io/chakra/chakra_trace.h"
#include "sim/engines/evaluator.h"
#include "sim/core/execution_graph.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"
#include "sim/io/placement_io.h"
#include "tests/test_util.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("placesim-chakra-{}-{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct RankNodes {
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

RankNodes parse(const fs::path& file) {
  RankNodes r;
  std::ifstream in(file, std::ios::binary);
  google::protobuf::io::IstreamInputStream stream(&in);
  bool eof = false;
  EXPECT_TRUE(google::protobuf::util::ParseDelimitedFromZeroCopyStream(&r.meta, &stream, &eof));
  for (;;) {
    pb::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &eof)) break;
    r.nodes.push_back(n);
  }
  EXPECT_TRUE(eof) << file << " ends inside a message";
  return r;
}

const pb::AttributeProto* attr(const pb::Node& n, const std::string& name) {
  for (const auto& a : n.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

// The traces as another tool reads them: the GlobalMetadata's attributes and every node's
// placesim.* attributes removed, Chakra's fields alone left (comm_type, comm_size, pg_name, the
// dependencies, the durations) beside <prefix>.comm_groups.json.
void strip_to_chakra(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".et") continue;
    RankNodes r = parse(entry.path());
    r.meta.clear_attr();
    std::ofstream out(entry.path(), std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(r.meta, &out));
    for (pb::Node& n : r.nodes) {
      auto* attrs = n.mutable_attr();
      attrs->erase(std::remove_if(attrs->begin(), attrs->end(),
                                  [](const pb::AttributeProto& a) { return a.name().starts_with("placesim."); }),
                   attrs->end());
      ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
    }
  }
}

// a (GPU 0) -> b (GPU 0), 100 bytes; a -> c (GPU 1), 1,000 bytes; b -> d, c -> d (GPU 1); a
// zero-byte control edge b -> c; fractional bytes and FLOPs and a colocation class to come back
// exactly; the FLOPs of a and c known, of b and d not.
Graph four_ops() {
  Graph g;
  g.add_operator({"a", "MatMul", 10e-6, 1e6, 0, false, 2e6 + 0.25});
  g.add_operator({"b", "Relu", 2.5e-6, 0, 0});
  g.add_operator({"c", "MatMul", 7e-6, 5e5, -1, false, 7e5});
  g.add_operator({"d", "Add", 1e-6, 0, -1});
  g.add_tensor(0, 1, 100);
  g.add_tensor(0, 2, 1000.5, false, 1, 3e-6);  // with an overhead (NCCL's, Tensor::overhead_s)
  g.add_tensor(1, 3, 64);
  g.add_tensor(2, 3, 32);
  g.add_tensor(1, 2, 0);
  g.finalize("four_ops");
  return g;
}

// four_ops() placed a, b on GPU 0 and c, d on GPU 1 of a mesh of `gpus`, measured by `engine`,
// its traces written into `dir` as four.<rank>.et.
struct FourOpsRun {
  Graph graph = four_ops();
  std::vector<DeviceId> placement{0, 0, 1, 1};
  Measurement measurement;
  std::vector<std::string> files;
};
FourOpsRun write_four_ops(const fs::path& dir, int gpus, EngineSet engine) {
  FourOpsRun run;
  run.measurement = measure_placement(run.graph, testutil::dedicated_mesh(gpus, 1e9), run.placement, engine);
  run.files = write_chakra_traces(dir.string(), "four", run.graph, run.placement, gpus, chakra_start_of(run.measurement),
                                  chakra_run_of(run.measurement, "four_ops")).files;
  return run;
}

TEST(Chakra, NodesOfAHandMadePlacement) {
  const fs::path dir = scratch("nodes");
  const auto files = write_four_ops(dir, 2, EngineSet::of({kEvaluator})).files;
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[1]).filename(), "four.1.et");
  const RankNodes r0 = parse(files[0]), r1 = parse(files[1]);
  EXPECT_EQ(r0.meta.version(), "0.0.4");
  // Rank 0 ran a, its send to c, b, b's send to d and b's (zero-byte) send to c.
  std::vector<std::pair<pb::NodeType, std::string>> kinds0;
  for (const auto& n : r0.nodes) kinds0.emplace_back(n.type(), n.name());
  ASSERT_EQ(r0.nodes.size(), 5u);
  EXPECT_EQ(r0.nodes[0].type(), pb::COMP_NODE);
  EXPECT_EQ(r0.nodes[0].name(), "a");
  EXPECT_EQ(r0.nodes[0].duration_micros(), 10u);
  EXPECT_EQ(r0.nodes[1].type(), pb::COMM_SEND_NODE);
  EXPECT_EQ(attr(r0.nodes[1], "comm_dst")->int32_val(), 1);
  EXPECT_EQ(attr(r0.nodes[1], "comm_size")->int64_val(), 1001);  // Chakra's bytes are whole; placesim.bytes is exact
  EXPECT_EQ(attr(r0.nodes[1], "placesim.bytes")->double_val(), 1000.5);
  ASSERT_EQ(r0.nodes[1].data_deps_size(), 1);
  EXPECT_EQ(r0.nodes[1].data_deps(0), r0.nodes[0].id());
  const pb::Node& b = r0.nodes[2];
  EXPECT_EQ(b.name(), "b");
  ASSERT_EQ(b.data_deps_size(), 1);
  EXPECT_EQ(b.data_deps(0), r0.nodes[0].id());  // same GPU: on the producer itself
  ASSERT_EQ(b.ctrl_deps_size(), 1);
  EXPECT_EQ(b.ctrl_deps(0), r0.nodes[0].id());  // the GPU ran a before b
  // Rank 1: the receive of a's tensor before c, then c, the receives for d, d.
  ASSERT_GE(r1.nodes.size(), 4u);
  EXPECT_EQ(r1.nodes[0].type(), pb::COMM_RECV_NODE);
  EXPECT_EQ(attr(r1.nodes[0], "comm_src")->int32_val(), 0);
  EXPECT_EQ(attr(r1.nodes[0], "comm_tag")->int32_val(), attr(r0.nodes[1], "comm_tag")->int32_val());
  int comp = 0, send = 0, recv = 0;
  for (const auto* r : {&r0, &r1})
    for (const auto& n : r->nodes) {
      comp += n.type() == pb::COMP_NODE;
      send += n.type() == pb::COMM_SEND_NODE;
      recv += n.type() == pb::COMM_RECV_NODE;
    }
  EXPECT_EQ(comp, 4);
  EXPECT_EQ(send, 3);  // a -> c, b -> d, b -> c
  EXPECT_EQ(recv, 3);
  fs::remove_all(dir);
}

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(to_placesim_json(a), to_placesim_json(b));
  for (std::size_t i = 0; i < a.num_operators(); ++i) {
    EXPECT_EQ(a.op(i).compute_s, b.op(i).compute_s) << a.op(i).name;  // bit for bit
    EXPECT_EQ(a.op(i).memory_bytes, b.op(i).memory_bytes) << a.op(i).name;
    EXPECT_EQ(a.op(i).flops, b.op(i).flops) << a.op(i).name;
  }
  for (std::size_t e = 0; e < a.num_tensors(); ++e) {
    EXPECT_EQ(a.tensor(e).bytes, b.tensor(e).bytes);
    EXPECT_EQ(a.tensor(e).latencies, b.tensor(e).latencies);
    EXPECT_EQ(a.tensor(e).overhead_s, b.tensor(e).overhead_s);
  }
}

TEST(Chakra, RoundTripGivesTheSameGraphAndPlacement) {
  const fs::path dir = scratch("roundtrip");
  const FourOpsRun run = write_four_ops(dir, 3, EngineSet::of({kEvaluator, kSimGrid}));
  const ChakraTraces back = read_chakra_traces(dir.string());
  EXPECT_TRUE(back.exact);
  EXPECT_EQ(back.ranks, 3);  // rank 2 ran nothing and still has its file
  EXPECT_EQ(back.placement, run.placement);
  expect_same_graph(run.graph, back.graph);
  ASSERT_TRUE(back.run);
  EXPECT_EQ(back.run->engine, "simgrid");
  EXPECT_EQ(back.run->latency_s, *run.measurement.latency(kSimGrid));
  fs::remove_all(dir);
}

// A model of the zoo (a 2-layer BERT, 700-odd operators) dealt over 4 GPUs.
TEST(Chakra, RoundTripOfAZooModel) {
  models::ModelConfig c;
  c.model = "bert-base";
  c.layers = 2;
  c.style = models::GraphStyle::Fused;
  const Graph g = models::zoo_graph(c);
  std::vector<DeviceId> placement(g.num_operators());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = static_cast<DeviceId>((i / 16) % 4);
  // Operators of a colocation class share a GPU: the one of the class's first operator.
  std::map<int, DeviceId> class_gpu;
  for (std::size_t i = 0; i < placement.size(); ++i)
    if (g.op(i).colocation_class >= 0) placement[i] = class_gpu.try_emplace(g.op(i).colocation_class, placement[i]).first->second;
  const Cluster cluster = testutil::dedicated_mesh(4, 10e9);
  const Measurement m = measure_placement(g, cluster, placement, EngineSet::of({kEvaluator}));
  const fs::path dir = scratch("zoo");
  write_chakra_traces(dir.string(), "bert", g, placement, 4, chakra_start_of(m), chakra_run_of(m, "bert"));
  const ChakraTraces back = read_chakra_traces(dir.string());
  EXPECT_EQ(back.placement, placement);
  expect_same_graph(g, back.graph);
  const Measurement again = measure_placement(back.graph, cluster, back.placement, EngineSet::of({kEvaluator}));
  EXPECT_EQ(again.latency(kEvaluator), m.latency(kEvaluator));
  fs::remove_all(dir);
}

void expect_same_collectives(std::span<const AppendedCollective> a, std::span<const AppendedCollective> b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t c = 0; c < a.size(); ++c) {
    EXPECT_EQ(a[c].name, b[c].name);
    EXPECT_EQ(a[c].op, b[c].op) << a[c].name;
    EXPECT_EQ(a[c].group, b[c].group) << a[c].name;
    EXPECT_EQ(a[c].bytes, b[c].bytes) << a[c].name;
    EXPECT_EQ(a[c].first, b[c].first) << a[c].name;
    EXPECT_EQ(a[c].end, b[c].end) << a[c].name;
  }
}

// On each of 4 GPUs, grad (1 ms), a ring all-reduce of 4 MB over the 4 GPUs (1 GB/s, no latency),
// then update (0.5 ms), its traces written into `dir` as ar.<rank>.et. The ring takes 2(n - 1)
// steps of S/n/B = 1 ms: 6 ms, from 1 ms on.
struct AllReduceRun {
  Cluster cluster = testutil::dedicated_mesh(4, 1e9);
  ExecutionGraph g;
  Measurement measurement;
  std::vector<std::string> files;
};
AllReduceRun write_allreduce_between_compute(const fs::path& dir) {
  AllReduceRun run;
  ExecutionGraph& g = run.g;
  std::vector<OpId> grads;
  for (int r = 0; r < 4; ++r) grads.push_back(g.add({fmt::format("grad{}", r), "MatMul", 1e-3}, r));
  const CollectiveSpec spec{CollectiveOp::AllReduce, CollectiveAlgorithm::Ring, {0, 1, 2, 3}, 4e6};
  const std::vector<OpId> reduced = append_collective(g, spec, run.cluster, "grads.allreduce", grads);
  for (int r = 0; r < 4; ++r) g.depend(reduced[r], g.add({fmt::format("update{}", r), "Add", 0.5e-3}, r));
  g.graph.finalize("all-reduce between compute");
  run.measurement = measure_placement(g.graph, run.cluster, g.placement, EngineSet::of({kEvaluator}));
  run.files = write_chakra_traces(dir.string(), "ar", g.graph, g.placement, 4, chakra_start_of(run.measurement),
                                  chakra_run_of(run.measurement, "all-reduce"), g.collectives).files;
  return run;
}

// Each rank's trace holds grad, one collective node and update, and none of the ring's 24 messages.
TEST(Chakra, CollectivesAreCollectiveNodes) {
  const fs::path dir = scratch("collective");
  const AllReduceRun run = write_allreduce_between_compute(dir);
  const ExecutionGraph& g = run.g;
  const Measurement& m = run.measurement;
  const std::vector<std::string>& files = run.files;
  EXPECT_DOUBLE_EQ(*m.latency(kEvaluator), 1e-3 + 6e-3 + 0.5e-3);
  ASSERT_EQ(files.size(), 5u);  // four ranks and the process groups
  for (int r = 0; r < 4; ++r) {
    const RankNodes t = parse(files[r]);
    ASSERT_EQ(t.nodes.size(), 3u) << "rank " << r;
    const pb::Node &grad = t.nodes[0], &coll = t.nodes[1], &update = t.nodes[2];
    EXPECT_EQ(grad.type(), pb::COMP_NODE);
    EXPECT_EQ(grad.name(), fmt::format("grad{}", r));
    EXPECT_EQ(coll.type(), pb::COMM_COLL_NODE);
    EXPECT_EQ(coll.name(), "grads.allreduce");
    EXPECT_EQ(attr(coll, "comm_type")->int64_val(), pb::ALL_REDUCE);
    EXPECT_EQ(attr(coll, "comm_size")->int64_val(), 4000000);
    EXPECT_EQ(attr(coll, "pg_name")->string_val(), "1");
    EXPECT_FALSE(attr(coll, "is_cpu_op")->bool_val());
    EXPECT_EQ(coll.start_time_micros(), 1000u);
    EXPECT_EQ(coll.duration_micros(), 6000u);
    EXPECT_EQ(std::vector<std::uint64_t>(coll.data_deps().begin(), coll.data_deps().end()), std::vector<std::uint64_t>{grad.id()});
    EXPECT_EQ(coll.ctrl_deps_size(), 0);  // beside the GPU's kernels
    EXPECT_EQ(update.name(), fmt::format("update{}", r));
    EXPECT_EQ(update.start_time_micros(), 7000u);
    EXPECT_EQ(std::vector<std::uint64_t>(update.data_deps().begin(), update.data_deps().end()), std::vector<std::uint64_t>{coll.id()});
    EXPECT_EQ(std::vector<std::uint64_t>(update.ctrl_deps().begin(), update.ctrl_deps().end()), std::vector<std::uint64_t>{grad.id()});
  }
  std::ifstream groups(files[4]);
  EXPECT_EQ(fs::path(files[4]).filename(), "ar.comm_groups.json");
  EXPECT_EQ(nlohmann::json::parse(groups), nlohmann::json::parse(R"({"1": [0, 1, 2, 3]})"));

  // Back exactly: the steps, their messages and the collective; replayed, the same latency.
  const ChakraTraces back = read_chakra_traces(dir.string());
  EXPECT_TRUE(back.exact);
  EXPECT_EQ(back.placement, g.placement);
  expect_same_graph(g.graph, back.graph);
  expect_same_collectives(g.collectives, back.collectives);
  EXPECT_EQ(measure_placement(back.graph, run.cluster, back.placement, EngineSet::of({kEvaluator})).latency(kEvaluator), m.latency(kEvaluator));
  fs::remove_all(dir);
}

// A plan with every kind of collective the planners use (tensor-parallel all-reduces, the
// scatter-gather's all-gathers, expert all-to-alls, ZeRO's reduce-scatters and all-gathers over
// the replicas): a collective node per collective and rank of its group, no send or receive
// inside one nor from one to a rank of its group, and the round trip exact.
TEST(Chakra, APlanRoundTripsWithItsCollectives) {
  // Message by message, and with its ring phases condensed (each flow pays several latencies).
  for (const CollectiveDetail detail : {CollectiveDetail::Messages, CollectiveDetail::Condensed}) {
    SCOPED_TRACE(enum_name<CollectiveDetail>(kCollectiveDetailNames, detail));
    const fs::path dir = scratch("plan");
    LayerModel model;
    model.name = "moe";
    model.tensor_parallel = 2;
    for (int l = 0; l < 4; ++l) {
      Layer layer{fmt::format("l{}", l), 1e-3, 2e-3, 4e6, 1e6, 2e6};
      layer.tp_allreduce_forward_bytes = layer.tp_allreduce_backward_bytes = 1e6;
      if (l % 2) {
        layer.expert_parameter_bytes = 2e6;
        layer.expert_alltoall_bytes = 1e6;
        layer.experts = 2;
      }
      model.layers.push_back(layer);
    }
    ParallelPlan plan;
    plan.tp = 2;
    plan.pp = 2;
    plan.dp = 2;
    plan.ep = 2;
    plan.zero = 3;
    plan.micro_batches = 2;
    const Cluster cluster = testutil::dedicated_mesh(8, 10e9, 1e-6);
    const CompiledPlan c = compile_plan(model, plan, cluster, detail);
    ASSERT_EQ(c.infeasible, "");
    const auto tensors = c.graph.graph.tensors();
    EXPECT_EQ(std::any_of(tensors.begin(), tensors.end(), [](const Tensor& t) { return t.latencies > 1; }),
              detail == CollectiveDetail::Condensed);
    std::set<CollectiveOp> kinds;
    for (const auto& coll : c.graph.collectives) kinds.insert(coll.op);
    EXPECT_EQ(kinds, (std::set<CollectiveOp>{CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllGather,
                                             CollectiveOp::AllToAll}));
    const Measurement m = measure_placement(c.graph.graph, cluster, c.graph.placement, EngineSet::of({kEvaluator, kSimGrid}));
    const auto files = write_chakra_traces(dir.string(), "plan", c.graph.graph, c.graph.placement, 8, chakra_start_of(m),
                                           chakra_run_of(m, "plan"), c.graph.collectives).files;
    ASSERT_EQ(files.size(), 9u);
    for (int r = 0; r < 8; ++r) {
      std::size_t expected = 0;
      for (const auto& coll : c.graph.collectives) expected += std::count(coll.group.begin(), coll.group.end(), r);
      std::size_t collective_nodes = 0;
      for (const pb::Node& n : parse(files[r]).nodes) {
        collective_nodes += n.type() == pb::COMM_COLL_NODE;
        if (n.type() == pb::COMM_SEND_NODE || n.type() == pb::COMM_RECV_NODE) {
          const Tensor& t = c.graph.graph.tensor(static_cast<EdgeId>(attr(n, "placesim.tensor")->int64_val()));
          const int receiving = n.type() == pb::COMM_SEND_NODE ? c.graph.placement[t.dst] : r;
          for (const auto& coll : c.graph.collectives) {
            EXPECT_FALSE(t.src >= coll.first && t.src < coll.end && t.dst >= coll.first && t.dst < coll.end)
                << "a message of " << coll.name << " written as " << n.name();
            // Condensed, a rank goes on from its ring's barrier, held by the first rank: it waits
            // for its own collective node, not for a message from that rank.
            if (t.bytes == 0 && t.src >= coll.first && t.src < coll.end) {
              EXPECT_EQ(std::count(coll.group.begin(), coll.group.end(), receiving), 0)
                  << "rank " << receiving << " waits for a message of " << coll.name << ": " << n.name();
            }
          }
        }
      }
      EXPECT_EQ(collective_nodes, expected) << "rank " << r;
    }
    const ChakraTraces back = read_chakra_traces(dir.string());
    EXPECT_TRUE(back.exact);
    EXPECT_EQ(back.placement, c.graph.placement);
    expect_same_graph(c.graph.graph, back.graph);
    expect_same_collectives(c.graph.collectives, back.collectives);
    const Measurement again = measure_placement(back.graph, cluster, back.placement, EngineSet::of({kEvaluator, kSimGrid}));
    EXPECT_EQ(again.latency(kEvaluator), m.latency(kEvaluator));
    EXPECT_EQ(*again.latency(kSimGrid), *m.latency(kSimGrid));
    fs::remove_all(dir);
  }
}

// The CLI's round trip: `simulate --chakra` then `simulate --replay` print the same latencies.
TEST(Chakra, ReplayGivesTheLatencyOfTheRunThatWroteTheTraces) {
  const fs::path dir = scratch("replay");
  const Graph g = fig31_graph();
  save_placesim_json(g, (dir / "g.json").string());
  std::vector<DeviceId> placement(g.num_operators());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = static_cast<DeviceId>(i % 2);
  save_placement(g, placement, (dir / "p.json").string());
  std::ofstream(dir / "c.yaml") << "cluster: {type: full-mesh, gpus: 2, bandwidth: 1GB/s}\n";
  std::string first, second;
  ASSERT_EQ(testutil::run_cli(fmt::format("simulate --graph {0}/g.json --placement {0}/p.json --cluster {0}/c.yaml --chakra {0}/et",
                                          dir.string()),
                              first),
            0)
      << first;
  EXPECT_TRUE(fs::exists(dir / "et" / "g.0.et")) << first;
  // Replayed from "et/" and written again: the traces are named after the directory, "et".
  ASSERT_EQ(testutil::run_cli(fmt::format("simulate --replay {0}/et/ --cluster {0}/c.yaml --chakra {0}/again", dir.string()), second), 0)
      << second;
  EXPECT_TRUE(fs::exists(dir / "again" / "et.1.et")) << second;
  auto line = [](const std::string& out, const std::string& key) {
    std::smatch m;
    return std::regex_search(out, m, std::regex("\n" + key + " +([^ (\n]+ ?[a-z]*)")) ? m[1].str() : std::string("missing");
  };
  EXPECT_NE(line(first, "simgrid"), "missing") << first;
  EXPECT_EQ(line(first, "simgrid"), line(second, "simgrid")) << first << second;
  EXPECT_EQ(line(first, "evaluator"), line(second, "evaluator")) << first << second;
  EXPECT_EQ(line(first, "flow"), line(second, "flow")) << first << second;
  EXPECT_NE(second.find("recorded        " + line(first, "simgrid") + " by simgrid"), std::string::npos) << second;
  // --replay with --graph is refused, saying why.
  EXPECT_EQ(testutil::run_cli(fmt::format("simulate --replay {0}/et --graph {0}/g.json --cluster {0}/c.yaml", dir.string()), second), 2);
  EXPECT_NE(second.find("give no --graph or --placement"), std::string::npos) << second;
  fs::remove_all(dir);
}

// `placesim plan --chakra DIR`: a trace per GPU of the cluster and the process groups of a ZeRO-3
// plan of GPT-2 on 4 GPUs (its gathers of the parameters written with Chakra's comm_size, one
// rank's quarter); `simulate --replay DIR` on the same cluster prints the plan's latencies, and in
// process the traces replay at the latency they recorded, to 1e-9.
TEST(Chakra, PlanWritesTracesThatReplayAtThePlansLatency) {
  const fs::path dir = scratch("plan-cli");
  std::ofstream(dir / "c.yaml") << "cluster: {type: full-mesh, gpus: 4, bandwidth: 25GB/s, latency: 2us}\n";
  std::string planned, replayed;
  ASSERT_EQ(testutil::run_cli(fmt::format("plan --model gpt2 --cluster {0}/c.yaml --dp 4 --zero 3 --micro-batches 2 "
                                          "--order scheduler --engine all --chakra {0}/et",
                                          dir.string()),
                              planned),
            0)
      << planned;
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir / "et")) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"gpt2.0.et", "gpt2.1.et", "gpt2.2.et", "gpt2.3.et", "gpt2.comm_groups.json"})) << planned;
  EXPECT_NE(planned.find(fmt::format("chakra          {}/et (4 ranks, the simgrid timeline)", dir.string())), std::string::npos)
      << planned;
  std::size_t gathers = 0;
  for (const pb::Node& n : parse(dir / "et" / "gpt2.2.et").nodes)
    if (n.type() == pb::COMM_COLL_NODE && attr(n, "comm_type")->int64_val() == pb::ALL_GATHER) {
      ++gathers;
      EXPECT_EQ(static_cast<double>(attr(n, "comm_size")->int64_val()), std::round(attr(n, "placesim.bytes")->double_val() / 4))
          << n.name();
    }
  EXPECT_GT(gathers, 0u);
  ASSERT_EQ(testutil::run_cli(fmt::format("simulate --replay {0}/et --cluster {0}/c.yaml --engine all", dir.string()), replayed), 0)
      << replayed;
  auto line = [](const std::string& out, const std::string& key) {
    std::smatch m;
    return std::regex_search(out, m, std::regex("\n" + key + " +([^ (\n]+ ?[a-z]*)")) ? m[1].str() : std::string("missing");
  };
  for (const std::string engine : {"evaluator", "flow", "simgrid"}) {
    EXPECT_NE(line(planned, engine), "missing") << planned;
    EXPECT_EQ(line(planned, engine), line(replayed, engine)) << engine << "\n" << planned << replayed;
  }
  const ChakraTraces traces = read_chakra_traces((dir / "et").string());
  ASSERT_TRUE(traces.exact);
  ASSERT_TRUE(traces.run);
  EXPECT_EQ(traces.run->engine, "simgrid");
  const Cluster cluster = load_cluster_file((dir / "c.yaml").string());
  const ExecutionGraph again = replay_graph(traces, cluster);
  const double latency = *measure_placement(again.graph, cluster, again.placement, EngineSet::of({kEvaluator, kSimGrid})).latency(kSimGrid);
  EXPECT_NEAR(latency, traces.run->latency_s, 1e-9 * traces.run->latency_s);
  // As ASTRA-sim reads them, Chakra's fields alone: the same collectives (type, ranks, bytes; an
  // all-gather's 4 x its comm_size, a whole number of bytes each rank gives, so to 4 bytes).
  // Replayed they take longer (26.6 ms against 23.8 ms): a process group's collectives are then
  // issued one after the other, NCCL's order, which the plan's overlap did not follow.
  strip_to_chakra(dir / "et");
  const ChakraTraces theirs = read_chakra_traces((dir / "et").string(), "", ChakraCollectives::Keep);
  ASSERT_FALSE(theirs.exact);
  using Sized = std::tuple<CollectiveOp, std::vector<DeviceId>, double>;
  std::vector<Sized> ours, chakra;
  for (const AppendedCollective& coll : traces.collectives) ours.emplace_back(coll.op, coll.group, coll.bytes);
  for (const TraceCollective& coll : theirs.trace_collectives) chakra.emplace_back(coll.op, coll.group, coll.bytes);
  std::sort(ours.begin(), ours.end());
  std::sort(chakra.begin(), chakra.end());
  ASSERT_EQ(ours.size(), chakra.size());
  for (std::size_t k = 0; k < ours.size(); ++k) {
    EXPECT_EQ(std::get<0>(ours[k]), std::get<0>(chakra[k])) << k;
    EXPECT_EQ(std::get<1>(ours[k]), std::get<1>(chakra[k])) << k;
    EXPECT_NEAR(std::get<2>(ours[k]), std::get<2>(chakra[k]), 4.0) << k;
  }
  // Refused before anything runs: a file where the directory goes, the estimate's no timeline.
  EXPECT_EQ(testutil::run_cli(fmt::format("plan --model gpt2 --cluster {0}/c.yaml --dp 4 --chakra {0}/c.yaml", dir.string()), planned), 2);
  EXPECT_NE(planned.find("--chakra"), std::string::npos) << planned;
  EXPECT_EQ(testutil::run_cli(fmt::format("plan --model gpt2 --cluster {0}/c.yaml --dp 4 --engine estimate --chakra {0}/x", dir.string()),
                              planned),
            2);
  EXPECT_NE(planned.find("no timeline"), std::string::npos) << planned;
  fs::remove_all(dir);
}

// A scenario writes traces per placement (`output: {chakra: true}`); another scenario re-places
// the graph read back from them (`graph: {chakra: DIR}`).
TEST(Chakra, ScenariosWriteAndReadTraces) {
  const fs::path dir = scratch("scenario");
  std::ofstream(dir / "write.yaml") << fmt::format(
      "graph: {{builtin: fig3.1}}\ncluster: {{type: full-mesh, gpus: 2, bandwidth: 20GB/s}}\n"
      "strategies: [m-etf]\nsimulation: {{engine: evaluator, trace: false}}\noutput: {{dir: {}, chakra: true}}\n",
      (dir / "out").string());
  std::string out;
  ASSERT_EQ(testutil::run_cli("run " + (dir / "write.yaml").string(), out), 0) << out;
  std::vector<fs::path> written;
  for (const auto& e : fs::directory_iterator(dir / "out"))
    if (e.is_directory() && e.path().filename().string().starts_with("chakra-")) written.push_back(e.path());
  ASSERT_EQ(written.size(), 1u) << out;
  const ChakraTraces traces = read_chakra_traces(written[0].string());
  EXPECT_EQ(traces.ranks, 2);
  EXPECT_EQ(to_placesim_json(traces.graph), to_placesim_json(fig31_graph()));
  std::ofstream(dir / "read.yaml") << fmt::format(
      "graph: {{chakra: {}}}\ncluster: {{type: full-mesh, gpus: 4, bandwidth: 20GB/s}}\n"
      "strategies: [m-etf, single-device]\nsimulation: {{engine: evaluator, trace: false}}\noutput: {}\n",
      written[0].string(), (dir / "out2").string());
  ASSERT_EQ(testutil::run_cli("run " + (dir / "read.yaml").string(), out), 0) << out;
  EXPECT_INPUT_ERROR(load_scenario((dir / "nowhere.yaml").string()), "");
  std::ofstream(dir / "bad.yaml") << "graph: {builtin: fig3.1}\ncluster: {type: full-mesh, gpus: 2}\nstrategies: [m-etf]\n"
                                     "output: {dir: x, chakraa: true}\n";
  EXPECT_INPUT_ERROR(load_scenario((dir / "bad.yaml").string()), "output", "chakraa");
  fs::remove_all(dir);
}

void write_trace(const fs::path& file, const std::vector<pb::Node>& nodes) {
  std::ofstream out(file, std::ios::binary);
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
  for (const auto& n : nodes) ASSERT_TRUE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
}

pb::Node node(std::uint64_t id, const std::string& name, pb::NodeType type, std::vector<std::uint64_t> deps,
              std::uint64_t duration_us = 0) {
  pb::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  for (auto d : deps) n.add_data_deps(d);
  n.set_duration_micros(duration_us);
  return n;
}

void comm(pb::Node& n, int src, int dst, int tag, std::int64_t bytes) {
  auto add = [&](const char* name) {
    auto* a = n.add_attr();
    a->set_name(name);
    return a;
  };
  add("comm_src")->set_int32_val(src);
  add("comm_dst")->set_int32_val(dst);
  add("comm_tag")->set_int32_val(tag);
  add("comm_size")->set_int64_val(bytes);
}

// Another tool's traces: compute nodes and send/receive pairs, a collective in between.
TEST(Chakra, ReadsOtherToolsTraces) {
  const fs::path dir = scratch("foreign");
  pb::Node send = node(1, "send", pb::COMM_SEND_NODE, {0});
  comm(send, 0, 1, 7, 4096);
  pb::Node recv = node(0, "recv", pb::COMM_RECV_NODE, {});
  comm(recv, 0, 1, 7, 4096);
  write_trace(dir / "w.0.et", {node(0, "a", pb::COMP_NODE, {}, 10), send});
  write_trace(dir / "w.1.et", {recv, node(1, "b", pb::COMP_NODE, {0}, 20), node(2, "allreduce", pb::COMM_COLL_NODE, {1}),
                               node(3, "d", pb::COMP_NODE, {2}, 5)});
  const ChakraTraces t = read_chakra_traces(dir.string());
  EXPECT_FALSE(t.exact);
  ASSERT_EQ(t.graph.num_operators(), 3u);
  EXPECT_EQ(t.graph.op(0).name, "a");
  EXPECT_DOUBLE_EQ(t.graph.op(0).compute_s, 10e-6);
  EXPECT_EQ(t.placement, (std::vector<DeviceId>{0, 1, 1}));
  ASSERT_EQ(t.graph.num_tensors(), 2u);
  EXPECT_EQ(t.graph.tensor(0).src, 0);
  EXPECT_EQ(t.graph.tensor(0).dst, 1);
  EXPECT_EQ(t.graph.tensor(0).bytes, 4096);
  EXPECT_EQ(t.graph.tensor(1).src, 1);  // b -> d through the collective
  EXPECT_EQ(t.graph.tensor(1).dst, 2);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("1 node neither compute nor send/receive"), std::string::npos) << t.warnings[0];
  fs::remove_all(dir);
}

// ASTRA-sim's roofline costs a compute node by num_ops (int64) over tensor_size (uint64): num_ops
// is the operator's FLOPs where known (whole: a's 2,000,000.25 is 2,000,000; placesim.flops keeps
// the exact value), absent where not (b, d); tensor_size the bytes it reads: a nothing, b 100,
// c 1,000.5 + 0 (a whole 1,001), d 64 + 32.
TEST(Chakra, ComputeNodesCarryNumOpsAndTensorSize) {
  const fs::path dir = scratch("num-ops");
  const auto files = write_four_ops(dir, 2, EngineSet::of({kEvaluator})).files;
  std::map<std::string, const pb::Node*> comp;
  const RankNodes r0 = parse(files[0]), r1 = parse(files[1]);
  for (const auto* r : {&r0, &r1})
    for (const auto& n : r->nodes)
      if (n.type() == pb::COMP_NODE) comp[n.name()] = &n;
  ASSERT_EQ(comp.size(), 4u);
  const std::map<std::string, std::optional<std::int64_t>> num_ops{{"a", 2'000'000}, {"b", std::nullopt}, {"c", 700'000}, {"d", std::nullopt}};
  const std::map<std::string, std::uint64_t> tensor_size{{"a", 0}, {"b", 100}, {"c", 1001}, {"d", 96}};
  for (const auto& [name, n] : comp) {
    SCOPED_TRACE(name);
    const pb::AttributeProto* ops = attr(*n, "num_ops");
    ASSERT_EQ(ops != nullptr, num_ops.at(name).has_value());
    if (ops) {
      EXPECT_EQ(ops->value_case(), pb::AttributeProto::kInt64Val);  // Chakra reads int64: any other type is 0 there
      EXPECT_EQ(ops->int64_val(), *num_ops.at(name));
    }
    const pb::AttributeProto* size = attr(*n, "tensor_size");
    ASSERT_NE(size, nullptr);
    EXPECT_EQ(size->value_case(), pb::AttributeProto::kUint64Val);
    EXPECT_EQ(size->uint64_val(), tensor_size.at(name));
  }
  EXPECT_EQ(attr(*comp.at("a"), "placesim.flops")->double_val(), 2e6 + 0.25);
  // Read back: exactly, from placesim's traces.
  const ChakraTraces back = read_chakra_traces(dir.string());
  EXPECT_EQ(back.graph.op(*back.graph.find("a")).flops, 2e6 + 0.25);
  EXPECT_EQ(back.graph.op(*back.graph.find("c")).flops, 7e5);
  EXPECT_EQ(back.graph.op(*back.graph.find("b")).flops, 0);
  // Another tool's traces: num_ops becomes the operator's FLOPs.
  const fs::path other = scratch("num-ops-other");
  pb::Node a = node(0, "a", pb::COMP_NODE, {}, 10);
  auto* a_ops = a.add_attr();
  a_ops->set_name("num_ops");
  a_ops->set_int64_val(123'456);
  write_trace(other / "w.0.et", {a, node(1, "b", pb::COMP_NODE, {0}, 5)});
  const ChakraTraces theirs = read_chakra_traces(other.string());
  EXPECT_EQ(theirs.graph.op(0).flops, 123'456);
  EXPECT_EQ(theirs.graph.op(1).flops, 0);
  fs::remove_all(dir);
  fs::remove_all(other);
}

pb::Node collective_node(std::uint64_t id, const std::string& name, std::int64_t type, std::int64_t bytes,
                         const std::string& pg, std::vector<std::uint64_t> deps) {
  pb::Node n = node(id, name, pb::COMM_COLL_NODE, std::move(deps));
  auto* t = n.add_attr();
  t->set_name("comm_type");
  t->set_int64_val(type);
  auto* b = n.add_attr();
  b->set_name("comm_size");
  b->set_int64_val(bytes);
  auto* g = n.add_attr();
  g->set_name("pg_name");
  g->set_string_val(pg);
  return n;
}

// Another tool's traces replayed with their collectives: on each of 2 ranks, a (10 us), an
// all-reduce of 1 MB (pg "0"), b (5 us). On a 2-GPU mesh of 1 GB/s without latency the ring
// sends 2(n - 1)/n x 1 MB = 1 MB per rank: 1 ms. The iteration: 10 us + 1 ms + 5 us. Read to be
// re-placed instead, the collective costs nothing: 15 us.
TEST(Chakra, ReplaysOtherToolsCollectives) {
  const fs::path dir = scratch("foreign-collective");
  for (int r = 0; r < 2; ++r)
    write_trace(dir / fmt::format("w.{}.et", r), {node(0, "a", pb::COMP_NODE, {}, 10),
                                                  collective_node(1, "nccl:all_reduce", pb::ALL_REDUCE, 1'000'000, "0", {0}),
                                                  node(2, "b", pb::COMP_NODE, {1}, 5)});
  const Cluster cluster = testutil::dedicated_mesh(2, 1e9);
  const ChakraTraces kept = read_chakra_traces(dir.string(), "", ChakraCollectives::Keep);
  ASSERT_EQ(kept.trace_collectives.size(), 1u);
  EXPECT_EQ(kept.trace_collectives[0].op, CollectiveOp::AllReduce);
  EXPECT_EQ(kept.trace_collectives[0].group, (std::vector<DeviceId>{0, 1}));
  EXPECT_EQ(kept.trace_collectives[0].bytes, 1e6);
  const ExecutionGraph replay = replay_graph(kept, cluster);
  EXPECT_EQ(replay.collectives.size(), 1u);
  const EngineRuns runs = run_engines(replay, cluster, EngineSet::of({kEvaluator, kFlow, kSimGrid}), RunOrder::Fcfs);
  EXPECT_NEAR(*runs.latency(kEvaluator), 10e-6 + 1e-3 + 5e-6, 1e-12);
  EXPECT_NEAR(*runs.latency(kFlow), 10e-6 + 1e-3 + 5e-6, 1e-12);
  EXPECT_NEAR(*runs.latency(kSimGrid), 10e-6 + 1e-3 + 5e-6, 1e-9);
  const ChakraTraces followed = read_chakra_traces(dir.string());
  EXPECT_TRUE(followed.trace_collectives.empty());
  EXPECT_NEAR(*measure_placement(followed.graph, cluster, followed.placement, EngineSet::of({kEvaluator})).latency(kEvaluator), 15e-6, 1e-12);

  // The group from comm_groups.json, and ranks that disagree.
  std::ofstream(dir / "w.comm_groups.json") << R"({"0": [1, 0]})";
  EXPECT_EQ(read_chakra_traces(dir.string(), "", ChakraCollectives::Keep).trace_collectives.at(0).group,
            (std::vector<DeviceId>{1, 0}));
  write_trace(dir / "w.1.et", {node(0, "a", pb::COMP_NODE, {}, 10), node(2, "b", pb::COMP_NODE, {0}, 5)});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "", ChakraCollectives::Keep), "pg_name '0'",
                     "rank 1 issues 0 collectives of process group '0', rank 0 issues 1");
  write_trace(dir / "w.1.et", {collective_node(1, "x", 3, 8, "0", {})});  // GATHER
  write_trace(dir / "w.0.et", {collective_node(1, "x", 3, 8, "0", {})});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "", ChakraCollectives::Keep), "node 1 ('x')",
                     "comm_type 3 is no collective placesim runs");
  fs::remove_all(dir);
}

// Every collective placesim runs, between compute on each of 4 GPUs: pre (10 us), the collective
// of 4 MiB as placesim counts it (ring; all-to-all direct; broadcast and reduce from rank 0), post
// (5 us), on links of 10 GB/s and 2 us. Its Chakra traces replay at the time it ran, on every
// engine, read back exactly and read as another tool reads them (Chakra's fields alone); their
// comm_size is Chakra's: an all-gather's is one rank's piece, 1 MiB, every other one's 4 MiB.
TEST(Chakra, EveryCollectiveKeepsItsTimeWrittenAndReplayed) {
  const Cluster cluster = testutil::dedicated_mesh(4, 10e9, 2e-6);
  const EngineSet engines = EngineSet::of({kEvaluator, kFlow, kSimGrid});
  constexpr double kBytes = 4 * 1048576.0;
  for (const auto& kind : kCollectiveOpNames) {
    const CollectiveOp op = kind.value;
    const std::string name(kind.name);
    SCOPED_TRACE(name);
    ExecutionGraph g;
    std::vector<OpId> pre;
    for (int r = 0; r < 4; ++r) pre.push_back(g.add({fmt::format("pre{}", r), "MatMul", 10e-6}, r));
    const CollectiveSpec spec{op, op == CollectiveOp::AllToAll ? CollectiveAlgorithm::Direct : CollectiveAlgorithm::Ring,
                              {0, 1, 2, 3}, kBytes};
    const std::vector<OpId> done = append_collective(g, spec, cluster, name, pre);
    for (int r = 0; r < 4; ++r) g.depend(done[r], g.add({fmt::format("post{}", r), "Add", 5e-6}, r));
    g.graph.finalize(name + " between compute");
    const Measurement m = measure_placement(g.graph, cluster, g.placement, engines);
    const fs::path dir = scratch("every-" + name);
    write_chakra_traces(dir.string(), "c", g.graph, g.placement, 4, chakra_start_of(m), chakra_run_of(m, name), g.collectives);
    const std::int64_t comm_size = op == CollectiveOp::AllGather ? 1048576 : 4 * 1048576;
    EXPECT_EQ(chakra_comm_size(op, kBytes, 4), static_cast<double>(comm_size));
    EXPECT_EQ(collective_bytes_of_comm_size(op, static_cast<double>(comm_size), 4), kBytes);
    for (int r = 0; r < 4; ++r) {
      std::size_t collectives = 0;
      for (const pb::Node& n : parse(dir / fmt::format("c.{}.et", r)).nodes) {
        if (n.type() != pb::COMM_COLL_NODE) continue;
        ++collectives;
        EXPECT_EQ(attr(n, "comm_size")->int64_val(), comm_size) << "rank " << r;
        EXPECT_EQ(attr(n, "placesim.bytes")->double_val(), kBytes) << "rank " << r;
      }
      EXPECT_EQ(collectives, 1u) << "rank " << r;
    }
    auto replayed = [&](const ChakraTraces& traces) {
      const ExecutionGraph again = replay_graph(traces, cluster);
      return measure_placement(again.graph, cluster, again.placement, engines);
    };
    const ChakraTraces exact = read_chakra_traces(dir.string(), "", ChakraCollectives::Keep);
    ASSERT_TRUE(exact.exact);
    const Measurement back = replayed(exact);
    strip_to_chakra(dir);
    const ChakraTraces theirs = read_chakra_traces(dir.string(), "", ChakraCollectives::Keep);
    ASSERT_FALSE(theirs.exact);
    ASSERT_EQ(theirs.trace_collectives.size(), 1u);
    EXPECT_EQ(theirs.trace_collectives[0].op, op);
    EXPECT_EQ(theirs.trace_collectives[0].group, (std::vector<DeviceId>{0, 1, 2, 3}));
    EXPECT_EQ(theirs.trace_collectives[0].bytes, kBytes);
    const Measurement other = replayed(theirs);
    for (const std::string_view engine : {kEvaluator, kFlow, kSimGrid}) {
      SCOPED_TRACE(engine);
      const double latency = *m.latency(engine);
      EXPECT_GT(latency, 15e-6 + 2e-6);  // the collective takes time
      EXPECT_NEAR(*back.latency(engine), latency, 1e-9 * latency);
      EXPECT_NEAR(*other.latency(engine), latency, 1e-9 * latency);
    }
    fs::remove_all(dir);
  }
}

// ASTRA-sim's microbenchmark traces (astra-sim/astra-sim, examples/workload/microbenchmarks/
// <collective>/4npus_1MB, written by generator_scripts/<collective>.py): on each of 4 NPUs one
// COMM_COLL_NODE, its id the NPU's index, named <collective>_4npus_1MB, is_cpu_op false,
// comm_type and comm_size 1 MiB (int64), no pg_name and no communicator groups. placesim reads
// the sizes ASTRA-sim's Ring (astra-sim/system/astraccl/native_collectives/collective_algorithm/
// Ring.cc) moves: an all-reduce 2(n - 1) messages of size/n into each NPU, an all-gather n - 1
// of the whole size (3 MiB into each NPU: its comm_size is one NPU's piece), a reduce-scatter
// n - 1 of size/n, an all-to-all size/n from each other NPU. On ASTRA-sim's Ring_4npus network
// (50 GB/s, GB = 2^30 B; 500 ns) each message of m bytes takes 500 ns + m / 50 GB/s, so the
// replay takes what ASTRA-sim's message schedule does, less ASTRA-sim's endpoint delay and local
// reductions, which placesim does not model: (n - 1) or 2(n - 1) messages one after the other
// round the ring; the all-to-all, direct in placesim, its three messages at once.
TEST(Chakra, AstraSimMicrobenchmarksMoveWhatAstraSimMoves) {
  constexpr double kSize = 1048576, kLatency = 500e-9, kBandwidth = 50.0 * (1 << 30);
  struct Case {
    std::string name;
    pb::CollectiveCommType type;
    CollectiveOp op;
    double bytes, into_each, seconds;
  };
  const Case cases[] = {
      {"all_reduce", pb::ALL_REDUCE, CollectiveOp::AllReduce, kSize, 6 * kSize / 4, 6 * (kLatency + kSize / 4 / kBandwidth)},
      {"all_gather", pb::ALL_GATHER, CollectiveOp::AllGather, 4 * kSize, 3 * kSize, 3 * (kLatency + kSize / kBandwidth)},
      {"reduce_scatter", pb::REDUCE_SCATTER, CollectiveOp::ReduceScatter, kSize, 3 * kSize / 4,
       3 * (kLatency + kSize / 4 / kBandwidth)},
      {"all_to_all", pb::ALL_TO_ALL, CollectiveOp::AllToAll, kSize, 3 * kSize / 4, kLatency + kSize / 4 / kBandwidth},
  };
  const Cluster cluster = testutil::dedicated_mesh(4, kBandwidth, kLatency);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = scratch("astra-" + c.name);
    for (int npu = 0; npu < 4; ++npu) {
      pb::Node n = node(static_cast<std::uint64_t>(npu), c.name + "_4npus_1MB", pb::COMM_COLL_NODE, {});
      auto* cpu = n.add_attr();
      cpu->set_name("is_cpu_op");
      cpu->set_bool_val(false);
      auto* type = n.add_attr();
      type->set_name("comm_type");
      type->set_int64_val(c.type);
      auto* size = n.add_attr();
      size->set_name("comm_size");
      size->set_int64_val(static_cast<std::int64_t>(kSize));
      write_trace(dir / fmt::format("{}.{}.et", c.name, npu), {n});
    }
    const ChakraTraces t = read_chakra_traces(dir.string(), "", ChakraCollectives::Keep);
    ASSERT_EQ(t.trace_collectives.size(), 1u);
    EXPECT_EQ(t.trace_collectives[0].op, c.op);
    EXPECT_EQ(t.trace_collectives[0].group, (std::vector<DeviceId>{0, 1, 2, 3}));
    EXPECT_EQ(t.trace_collectives[0].bytes, c.bytes);
    const ExecutionGraph replay = replay_graph(t, cluster);
    std::vector<double> received(4, 0.0);
    for (const Tensor& tensor : replay.graph.tensors())
      if (replay.placement[tensor.src] != replay.placement[tensor.dst]) received[replay.placement[tensor.dst]] += tensor.bytes;
    for (int npu = 0; npu < 4; ++npu) EXPECT_DOUBLE_EQ(received[npu], c.into_each) << "NPU " << npu;
    const Measurement m = measure_placement(replay.graph, cluster, replay.placement, EngineSet::of({kEvaluator, kFlow}));
    EXPECT_NEAR(*m.latency(kEvaluator), c.seconds, 1e-9 * c.seconds);
    EXPECT_NEAR(*m.latency(kFlow), c.seconds, 1e-9 * c.seconds);
    fs::remove_all(dir);
  }
}

// A chain of 200 collectives, each depending twice (data and control) on the one before: read
// once per node, not once per path (2^200), and a cycle is an error.
TEST(Chakra, ChainsAndCyclesOfOtherNodes) {
  const fs::path dir = scratch("chain");
  std::vector<pb::Node> nodes{node(0, "a", pb::COMP_NODE, {}, 1)};
  for (std::uint64_t k = 1; k <= 200; ++k) {
    pb::Node c = node(k, "coll", pb::COMM_COLL_NODE, {k - 1});
    c.add_ctrl_deps(k - 1);
    nodes.push_back(c);
  }
  nodes.push_back(node(201, "b", pb::COMP_NODE, {200}, 1));
  write_trace(dir / "w.0.et", nodes);
  const ChakraTraces t = read_chakra_traces(dir.string());
  ASSERT_EQ(t.graph.num_tensors(), 1u);
  EXPECT_EQ(t.graph.tensor(0).src, 0);
  pb::Node x = node(0, "x", pb::COMM_COLL_NODE, {1});
  pb::Node y = node(1, "y", pb::COMM_COLL_NODE, {0});
  write_trace(dir / "w.0.et", {x, y, node(2, "b", pb::COMP_NODE, {1}, 1)});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "", "dependency cycle");
  fs::remove_all(dir);
}

TEST(Chakra, BadDirectoriesAreInputErrors) {
  const fs::path dir = scratch("bad");
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "", "holds no Chakra trace");
  write_trace(dir / "w.0.et", {node(0, "a", pb::COMP_NODE, {}, 1)});
  write_trace(dir / "w.2.et", {node(0, "b", pb::COMP_NODE, {}, 1)});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "", "has no trace of rank 1");
  write_trace(dir / "v.0.et", {});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "", "several runs (v, w)", "simulate --prefix");
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "zz"), "", "holds no Chakra trace zz.<rank>.et (its prefixes: v, w)");
  fs::remove(dir / "w.2.et");
  std::ofstream(dir / "w.1.et", std::ios::binary) << "\x7f" << "short";
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "w"), "GlobalMetadata", "not a Chakra execution trace");
  pb::Node recv = node(0, "recv", pb::COMM_RECV_NODE, {});
  comm(recv, 0, 1, 3, 8);
  write_trace(dir / "w.1.et", {recv, node(1, "b", pb::COMP_NODE, {0}, 1)});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "w"), "node 0 ('recv')", "no matching send");
  // A receive in rank 1's trace that says it arrives at rank 0; two nodes of one id.
  pb::Node stray = node(0, "stray", pb::COMM_RECV_NODE, {});
  comm(stray, 1, 0, 3, 8);
  write_trace(dir / "w.1.et", {stray});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "w"), "node 0 ('stray')", "comm_dst is 0, but the node is in rank 1's trace");
  write_trace(dir / "w.1.et", {node(4, "b", pb::COMP_NODE, {}, 1), node(4, "c", pb::COMP_NODE, {}, 1)});
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string(), "w"), "node 4 ('c')", "a node id used twice");
  fs::remove_all(dir);
}

// placesim's own traces, tampered with: counts beyond what the files hold are refused before
// anything is allocated; a colocation class out of range is named.
TEST(Chakra, TamperedPlacesimTracesAreInputErrors) {
  const fs::path dir = scratch("tampered");
  write_four_ops(dir, 2, EngineSet::of({kEvaluator}));
  const RankNodes r0 = parse(dir / "four.0.et");
  auto rewrite = [&](pb::GlobalMetadata meta, const std::vector<pb::Node>& nodes) {
    std::ofstream out(dir / "four.0.et", std::ios::binary | std::ios::trunc);
    google::protobuf::util::SerializeDelimitedToOstream(meta, &out);
    for (const auto& n : nodes) google::protobuf::util::SerializeDelimitedToOstream(n, &out);
  };
  pb::GlobalMetadata huge = r0.meta;
  for (auto& a : *huge.mutable_attr())
    if (a.name() == "placesim.operators") a.set_int64_val(1LL << 30);
  rewrite(huge, r0.nodes);
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "GlobalMetadata.placesim.operators", "the traces hold 4 compute nodes");
  std::vector<pb::Node> bad_class = r0.nodes;
  for (auto& a : *bad_class[0].mutable_attr())
    if (a.name() == "placesim.colocation_class") a.set_int64_val(-7);
  rewrite(r0.meta, bad_class);
  EXPECT_INPUT_ERROR(read_chakra_traces(dir.string()), "node 0 ('a')", "placesim.colocation_class -7 out of range");
  fs::remove_all(dir);
}

// The traces parse with Python's protobuf (Debian python3-protobuf) against placesim's .proto,
// compiled by protoc: what a Chakra tool in Python would do.
TEST(Chakra, PythonProtobufReadsTheTraces) {
  std::string out;
  auto have = [](const std::string& cmd) {
    std::string ignored;
    return testutil::run_command(cmd, ignored) == 0;
  };
  std::string python;
  for (const char* p : {"python3", "/usr/bin/python3"})
    if (have(std::string(p) + " -c 'import google.protobuf'")) {
      python = p;
      break;
    }
  // Both are what the traces are to be checked with, and tools/install-deps.sh installs
  // them: missing, the check fails rather than passing unseen.
  ASSERT_FALSE(python.empty()) << "Python's protobuf is missing for python3 and /usr/bin/python3 (Debian: apt-get install "
                                  "python3-protobuf; tools/install-deps.sh installs it)";
  ASSERT_TRUE(have("protoc --version")) << "protoc is missing (Debian: apt-get install protobuf-compiler; tools/install-deps.sh "
                                           "installs it)";
  const fs::path dir = scratch("python");
  write_four_ops(dir / "et", 2, EngineSet::of({kEvaluator}));
  write_allreduce_between_compute(dir / "et");
  ASSERT_TRUE(have(fmt::format("protoc -I {0}/sim/io/chakra --python_out={1} {0}/sim/io/chakra/chakra_et.proto", PLACESIM_TEST_SOURCE_DIR,
                               dir.string())));
  std::ofstream(dir / "read.py") << R"(import sys
sys.path.insert(0, sys.argv[1])
import chakra_et_pb2 as et
from google.protobuf.internal.decoder import _DecodeVarint32
for name, rank in (("four", 0), ("four", 1), ("ar", 2)):
    data = open(f"{sys.argv[1]}/et/{name}.{rank}.et", "rb").read()
    pos, messages = 0, []
    while pos < len(data):
        size, pos = _DecodeVarint32(data, pos)
        messages.append(data[pos:pos + size])
        pos += size
    meta = et.GlobalMetadata()
    meta.ParseFromString(messages[0])
    kinds = []
    for raw in messages[1:]:
        n = et.Node()
        n.ParseFromString(raw)
        attrs = {a.name: a for a in n.attr}
        if n.type == et.COMM_SEND_NODE:
            kinds.append(f"send:{attrs['comm_dst'].int32_val}:{attrs['comm_size'].int64_val}")
        elif n.type == et.COMM_RECV_NODE:
            kinds.append(f"recv:{attrs['comm_src'].int32_val}:{attrs['comm_size'].int64_val}")
        elif n.type == et.COMM_COLL_NODE:
            kinds.append(f"coll:{n.name}:{et.CollectiveCommType.Name(attrs['comm_type'].int64_val)}:"
                         f"{attrs['comm_size'].int64_val}:pg{attrs['pg_name'].string_val}:{n.duration_micros}:"
                         f"{len(attrs['placesim.step_names'].string_list.values)}")
        else:
            cost = f":{attrs['num_ops'].int64_val}/{attrs['tensor_size'].uint64_val}" if "num_ops" in attrs else ""
            kinds.append(f"comp:{n.name}:{n.duration_micros}{cost}")
    print(rank, meta.version, " ".join(kinds))
)";
  EXPECT_EQ(testutil::run_command(fmt::format("{} {}/read.py {}", python, dir.string(), dir.string()), out), 0) << out;
  EXPECT_NE(out.find("0 0.0.4 comp:a:10:2000000/0 send:1:1001 comp:b:3 send:1:64 send:1:0"), std::string::npos) << out;
  EXPECT_NE(out.find("1 0.0.4 recv:0:1001 recv:0:0 comp:c:7:700000/1001 recv:0:64 comp:d:1"), std::string::npos) << out;
  // Rank 2 of the ring holds 13 steps: start, 6 steps, done, and a sender for each of its 5 later
  // messages to rank 3 (sim/collectives/message_graph.cpp: the first leaves from start).
  EXPECT_NE(out.find("2 0.0.4 comp:grad2:1000 coll:grads.allreduce:ALL_REDUCE:4000000:pg1:6000:13 comp:update2:500"), std::string::npos)
      << out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace placesim
