// The SimGrid engine, on graphs and clusters small enough to work out by hand. SimGrid runs once
// per process, so every test goes through `simulate` (a forked child per call).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <unistd.h>


#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/simgrid_engine.h"
#include "sim/io/trace.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

// 20 GB/s and 100 kB tensors: a transfer on a dedicated link takes exactly 5 us, as in Fig. 3.1.
constexpr double kBw = 20e9;
constexpr double kBytes = 5e-6 * kBw;

// The engine must agree with hand computations to 1e-9 relative.
double tol(double expected) { return 1e-9 * std::abs(expected) + 1e-15; }
#define EXPECT_TIME(actual, expected) EXPECT_NEAR((actual), (expected), tol(expected))

// Per GPU, its operators in topological order: always a valid, deadlock-free order.
std::vector<std::vector<OpId>> topological_order_per_gpu(const Graph& g, std::span<const DeviceId> placement,
                                                         int num_devices) {
  std::vector<std::vector<OpId>> order(num_devices);
  for (OpId op : g.topological_order()) order[placement[op]].push_back(op);
  return order;
}

SimulationResult run(const Graph& g, const Cluster& c, const std::vector<DeviceId>& placement) {
  return simulate(g, c, placement, topological_order_per_gpu(g, placement, c.num_devices()));
}

// Two producer/consumer pairs, g0 -> g2 and g1 -> g3, whose routes share the link "core"
// (1 GB/s) but nothing else (4 GB/s up and down links); every link has 1 us latency, so each
// route has alpha = 3 us. The other pairs have dedicated links.
Cluster shared_core_cluster() {
  Cluster c;
  for (int i = 0; i < 4; ++i) c.add_device({fmt::format("g{}", i), i, 16e9});
  const int up0 = c.add_link({"up0", 4e9, 1e-6});
  const int up1 = c.add_link({"up1", 4e9, 1e-6});
  const int core = c.add_link({"core", 1e9, 1e-6});
  const int down2 = c.add_link({"down2", 4e9, 1e-6});
  const int down3 = c.add_link({"down3", 4e9, 1e-6});
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) c.set_route(a, b, {c.add_link({fmt::format("d{}{}", a, b), 8e9, 0})});
  c.set_route(0, 2, {up0, core, down2});
  c.set_route(1, 3, {up1, core, down3});
  c.finalize("shared core");
  return c;
}

int link_id(const Cluster& c, const std::string& name) {
  for (int i = 0; i < static_cast<int>(c.links().size()); ++i)
    if (c.link(i).name == name) return i;
  ADD_FAILURE() << "no link " << name;
  return 0;
}

}  // namespace

TEST(SimGridEngine, Fig31OneGpuTakes20us) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  SimulationResult r = simulate(g, c, std::vector<DeviceId>{0, 0, 0}, {{0, 1, 2}, {}});
  EXPECT_TIME(r.latency, 20e-6);
  EXPECT_TIME(r.start[2], 15e-6);
  EXPECT_TRUE(r.flows.empty());
  EXPECT_GT(r.wall_seconds, 0);
}

TEST(SimGridEngine, Fig31TwoGpusTakes15us) {
  // A 0-5 and B 5-15 on gpu0; A's tensor reaches gpu1 at 10; C 10-15 on gpu1.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  SimulationResult r = simulate(g, c, std::vector<DeviceId>{0, 0, 1}, {{0, 1}, {2}});
  EXPECT_TIME(r.latency, 15e-6);
  EXPECT_TIME(r.start[1], 5e-6);
  EXPECT_TIME(r.start[2], 10e-6);
  ASSERT_EQ(r.flows.size(), 1u);
  EXPECT_EQ(r.flows[0].edge, 1);
  EXPECT_EQ(r.flows[0].src, 0);
  EXPECT_EQ(r.flows[0].dst, 1);
  EXPECT_EQ(r.flows[0].bytes, kBytes);
  EXPECT_TIME(r.flows[0].start, 5e-6);
  EXPECT_TIME(r.flows[0].end, 10e-6);
}

TEST(SimGridEngine, LoneTransferTakesLatencyPlusBytesOverBandwidth) {
  Graph g;
  g.add_operator({"p", "op", 2e-6, 0});
  g.add_operator({"q", "op", 1e-6, 0});
  g.add_tensor(0, 1, 1e6);
  g.finalize("pair");
  {
    Cluster c = testutil::dedicated_mesh(2, 1.25e9, 3e-6);
    SimulationResult r = run(g, c, {0, 1});
    EXPECT_TIME(r.flows.at(0).end, 2e-6 + 3e-6 + 1e6 / 1.25e9);
    EXPECT_TIME(r.latency, 2e-6 + 3e-6 + 1e6 / 1.25e9 + 1e-6);
  }
  {
    // Two hops: latencies add up, the slower link is the bottleneck; a fractional byte count.
    Graph h;
    h.add_operator({"p", "op", 2e-6, 0});
    h.add_operator({"q", "op", 1e-6, 0});
    h.add_tensor(0, 1, 1234.5);
    h.finalize("pair");
    Cluster c;
    c.add_device({"a", 0, 16e9});
    c.add_device({"b", 0, 16e9});
    const int fast = c.add_link({"fast", 4e9, 1e-6});
    const int slow = c.add_link({"slow", 1e9, 2e-6});
    c.set_route(0, 1, {fast, slow});
    c.set_route(1, 0, {c.add_link({"back", 1e9, 0})});
    c.finalize("two hops");
    SimulationResult r = run(h, c, {0, 1});
    EXPECT_TIME(r.flows.at(0).end, 2e-6 + 3e-6 + 1234.5 / 1e9);
    EXPECT_TIME(r.start[1], 2e-6 + 3e-6 + 1234.5 / 1e9);
  }
}

TEST(SimGridEngine, FlowsSharingALinkSplitItsBandwidth) {
  // p0 (g0) sends 1 MB to c0 (g2) and p1 (g1) sends 3 MB to c1 (g3); both routes cross "core".
  // Both producers finish at 1 us and sleep alpha = 3 us: bytes move from 4 us. Sharing core
  // they get 0.5 GB/s each: flow 0 ends at 4 us + 2 ms, having let flow 1 move 1 MB; flow 1's
  // other 2 MB then go at the full 1 GB/s: it ends at 4 us + 4 ms.
  Graph g;
  g.add_operator({"p0", "op", 1e-6, 0});
  g.add_operator({"p1", "op", 1e-6, 0});
  g.add_operator({"c0", "op", 1e-6, 0});
  g.add_operator({"c1", "op", 1e-6, 0});
  g.add_tensor(0, 2, 1e6);
  g.add_tensor(1, 3, 3e6);
  g.finalize("two pairs");
  Cluster c = shared_core_cluster();
  SimulationResult r = run(g, c, {0, 1, 2, 3});
  ASSERT_EQ(r.flows.size(), 2u);
  EXPECT_TIME(r.flows[0].start, 1e-6);
  EXPECT_TIME(r.flows[0].end, 4e-6 + 2e-3);
  EXPECT_TIME(r.flows[1].end, 4e-6 + 4e-3);
  EXPECT_TIME(r.start[2], 4e-6 + 2e-3);
  EXPECT_TIME(r.latency, 4e-6 + 4e-3 + 1e-6);

  // Link statistics: busy while bytes move (not during alpha).
  ASSERT_EQ(r.links.size(), c.links().size());
  EXPECT_TIME(r.links[link_id(c, "core")].bytes, 4e6);
  EXPECT_TIME(r.links[link_id(c, "core")].busy_s, 4e-3);
  EXPECT_TIME(r.links[link_id(c, "up0")].bytes, 1e6);
  EXPECT_TIME(r.links[link_id(c, "up0")].busy_s, 2e-3);
  EXPECT_TIME(r.links[link_id(c, "down3")].bytes, 3e6);
  EXPECT_TIME(r.links[link_id(c, "down3")].busy_s, 4e-3);
  EXPECT_EQ(r.links[link_id(c, "d02")].bytes, 0);
  EXPECT_EQ(r.links[link_id(c, "d02")].busy_s, 0);
}

TEST(SimGridEngine, Fig31BothConsumersOnOneGpuShareTheLink) {
  // A's two tensors leave together over the same link at half speed each: both arrive at
  // 5 + 10 us. Then B 15-25 and C 25-30 on gpu1.
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  SimulationResult r = simulate(g, c, std::vector<DeviceId>{0, 1, 1}, {{0}, {1, 2}});
  ASSERT_EQ(r.flows.size(), 2u);
  EXPECT_TIME(r.flows[0].end, 15e-6);
  EXPECT_TIME(r.flows[1].end, 15e-6);
  EXPECT_TIME(r.start[2], 25e-6);
  EXPECT_TIME(r.latency, 30e-6);
  EXPECT_TIME(r.links[0].bytes, 2 * kBytes);  // l0_1
  EXPECT_TIME(r.links[0].busy_s, 10e-6);
  EXPECT_EQ(r.links[1].bytes, 0);  // l1_0
}

TEST(SimGridEngine, LinkBusyTimeIsTheUnionOfTransfers) {
  // a (g0) -> b (g1) -> c (g0) -> d (g1), 1 us each, 5 us transfers: l0_1 carries two transfers
  // (1-6 and 13-18 us) and is busy 10 us, not the 17 us they span.
  Graph g;
  for (const char* n : {"a", "b", "c", "d"}) g.add_operator({n, "op", 1e-6, 0});
  for (int i = 0; i < 3; ++i) g.add_tensor(i, i + 1, kBytes);
  g.finalize("ping-pong");
  Cluster c = testutil::dedicated_mesh(2, kBw);
  SimulationResult r = run(g, c, {0, 1, 0, 1});
  EXPECT_TIME(r.latency, 19e-6);
  EXPECT_TIME(r.links[0].bytes, 2 * kBytes);
  EXPECT_TIME(r.links[0].busy_s, 10e-6);
  EXPECT_TIME(r.links[1].bytes, kBytes);
  EXPECT_TIME(r.links[1].busy_s, 5e-6);
}

TEST(SimGridEngine, ZeroByteCrossGpuTensorIsFree) {
  // Control dependencies cost nothing, even over a link with 1 ms latency.
  Graph g = testutil::fig31_graph(0.0);
  Cluster c = testutil::dedicated_mesh(2, kBw, 1e-3);
  SimulationResult r = run(g, c, {0, 0, 1});
  EXPECT_TIME(r.start[2], 5e-6);
  EXPECT_TIME(r.latency, 15e-6);
  EXPECT_TRUE(r.flows.empty());
  for (const auto& l : r.links) {
    EXPECT_EQ(l.bytes, 0);
    EXPECT_EQ(l.busy_s, 0);
  }
}

TEST(SimGridEngine, MatchesAHandComputedChainToOneInABillion) {
  // A long chain hopping between GPUs at random: at most one transfer at a time, so the answer
  // is a plain sum. Random computes, fractional and zero byte counts, several latencies.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> compute(0, 50e-6), bytes(0, 5e6);
  const int n = 400, gpus = 4;
  Graph g;
  std::vector<DeviceId> placement(n);
  for (int i = 0; i < n; ++i) {
    g.add_operator({fmt::format("op{}", i), "op", i % 7 == 0 ? 0.0 : compute(rng), 0});
    placement[i] = static_cast<DeviceId>(rng() % gpus);
  }
  for (int i = 0; i + 1 < n; ++i) g.add_tensor(i, i + 1, i % 5 == 0 ? 0.0 : bytes(rng));
  g.finalize("chain");
  Cluster c = testutil::dedicated_mesh(gpus, 12.5e9, 1.5e-6);
  SimulationResult r = run(g, c, placement);
  double t = 0;
  for (int i = 0; i < n; ++i) {
    if (i > 0) t += c.transfer_time(placement[i - 1], placement[i], g.tensor(i - 1).bytes);
    EXPECT_TIME(r.start[i], t);
    t += g.op(i).compute_s;
    EXPECT_TIME(r.finish[i], t);
  }
  EXPECT_TIME(r.latency, t);
}

TEST(SimGridEngine, SyntheticGraphRespectsTheScheduleRules) {
  // ~3,700 operators on 8 GPUs in 4 servers (GPUs share NICs): contention can only delay
  // things relative to the contention-free replay of the same order.
  SyntheticGraphConfig cfg;
  cfg.layers = 170;
  Graph g = synthetic_training_graph(cfg);
  NvlinkServersConfig cc;
  cc.gpus = 8;
  cc.nvlink_latency = 1e-6;
  cc.ethernet_latency = 5e-6;
  Cluster c = make_nvlink_servers(cc);
  c.finalize("servers");
  std::vector<DeviceId> placement(g.num_operators());
  for (std::size_t i = 0; i < placement.size(); ++i) placement[i] = static_cast<DeviceId>((i / 3 * 7919) % 8);
  Evaluator ev(g, c);
  Schedule s = ev.schedule(placement);
  SimulationResult r = simulate(g, c, placement, s.device_order);
  Schedule replay = replay_order(g, c, placement, s.device_order);
  // Wall time is a benchmark figure (bench/bench_simgrid.cpp), not a unit-test assertion.
  EXPECT_GE(r.latency, replay.latency * (1 - 1e-9));
  std::vector<double> arrival(g.num_tensors(), -1);
  for (EdgeId e = 0; e < static_cast<EdgeId>(g.num_tensors()); ++e) arrival[e] = r.finish[g.tensor(e).src];
  for (const FlowRecord& f : r.flows) {
    arrival[f.edge] = f.end;
    EXPECT_EQ(f.start, r.finish[g.tensor(f.edge).src]);
    EXPECT_GE(f.end - f.start, c.transfer_time(f.src, f.dst, f.bytes) * (1 - 1e-9));
  }
  for (OpId i = 0; i < static_cast<OpId>(g.num_operators()); ++i) {
    EXPECT_GE(r.finish[i], replay.finish[i] * (1 - 1e-9));
    EXPECT_TIME(r.finish[i] - r.start[i], g.op(i).compute_s);
    for (EdgeId e : g.in_edges(i)) EXPECT_GE(r.start[i], arrival[e]);
  }
  for (const auto& order : s.device_order)
    for (std::size_t k = 1; k < order.size(); ++k) EXPECT_GE(r.start[order[k]], r.finish[order[k - 1]]);
  double bytes = 0;
  for (const FlowRecord& f : r.flows) bytes += f.bytes * static_cast<double>(c.route(f.src, f.dst).size());
  double link_bytes = 0;
  for (const LinkStats& l : r.links) {
    link_bytes += l.bytes;
    EXPECT_LE(l.busy_s, r.latency);
  }
  EXPECT_NEAR(link_bytes, bytes, 1e-9 * bytes);
}

TEST(SimGridEngine, ForkedSimulateIsRepeatable) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  const std::vector<DeviceId> placement = {0, 0, 1};
  SimulationResult first = run(g, c, placement);
  for (int i = 0; i < 10; ++i) {
    SimulationResult r = run(g, c, placement);
    EXPECT_EQ(r.latency, first.latency);
    EXPECT_EQ(r.start, first.start);
    EXPECT_EQ(r.finish, first.finish);
    ASSERT_EQ(r.flows.size(), 1u);
    EXPECT_EQ(r.flows[0].end, first.flows[0].end);
  }
  EXPECT_TIME(first.latency, 15e-6);
}

TEST(SimGridEngine, ChildIsSilentAndDoesNotRepeatBufferedOutput) {
  // SimGrid logs nothing at the default level, and the child must not flush a copy of what the
  // parent had buffered (unterminated lines stay in stdio buffers).
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  std::printf("marker");
  SimulationResult r = run(g, c, {0, 0, 1});
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "marker");
  EXPECT_EQ(err, "");
  EXPECT_TIME(r.latency, 15e-6);
}

TEST(SimGridEngine, ErrorsInTheChildAreReported) {
  // SimGrid sizes are 64-bit integers: an absurd tensor fails in the child, and says why.
  Graph g = testutil::fig31_graph(1e30);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  try {
    run(g, c, {0, 0, 1});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
}

TEST(SimGridEngine, InvalidPlacementOrOrderThrows) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  using Order = std::vector<std::vector<OpId>>;
  const std::vector<DeviceId> ok = {0, 0, 1};
  EXPECT_NO_THROW(simulate(g, c, ok, Order{{0, 1}, {2}}));
  EXPECT_THROW(simulate(g, c, std::vector<DeviceId>{0, 0}, Order{{0, 1}}), std::invalid_argument);
  EXPECT_THROW(simulate(g, c, std::vector<DeviceId>{0, 0, 2}, Order{{0, 1}, {2}}), std::invalid_argument);
  EXPECT_THROW(simulate(g, c, ok, Order{{0, 1}, {}}), std::invalid_argument);         // C missing
  EXPECT_THROW(simulate(g, c, ok, Order{{0, 1, 1}, {2}}), std::invalid_argument);     // B twice
  EXPECT_THROW(simulate(g, c, ok, Order{{0}, {1, 2}}), std::invalid_argument);        // B on the wrong GPU
  EXPECT_THROW(simulate(g, c, ok, Order{{0, 1}, {2}, {}}), std::invalid_argument);    // a third GPU
  EXPECT_THROW(simulate(g, c, ok, Order{{0, 1}, {7}}), std::invalid_argument);        // no operator 7
  EXPECT_THROW(simulate(g, c, std::vector<DeviceId>{0, 0, 0}, Order{{1, 0, 2}}), std::invalid_argument);

  // Across GPUs: x, y on gpu0 and u, v on gpu1 with y -> u and v -> x: x waits for v, which
  // runs after u, which waits for y, which runs after x.
  Graph h;
  for (const char* n : {"x", "y", "u", "v"}) h.add_operator({n, "op", 1e-6, 0});
  h.add_tensor(1, 2, 10);
  h.add_tensor(3, 0, 10);
  h.finalize("cross");
  try {
    simulate(h, c, std::vector<DeviceId>{0, 0, 1, 1}, Order{{0, 1}, {2, 3}});
    FAIL() << "expected a deadlock";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(simulate(h, c, std::vector<DeviceId>{0, 0, 1, 1}, Order{{1, 0}, {2, 3}}));
}

TEST(SimGridTrace, WritesValidChromeTraceJson) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  const std::vector<DeviceId> placement = {0, 1, 1};
  SimulationResult r = run(g, c, placement);
  const auto path = std::filesystem::temp_directory_path() / fmt::format("placesim_trace_{}.json", ::getpid());
  write_chrome_trace(path.string(), g, c, placement, r.start, r.finish, r.flows);

  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> tracks;
  std::map<std::string, nlohmann::json> ops;
  int begins = 0, ends = 0;
  std::set<long> ids;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "M" && e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (ph == "M" && e.at("name") == "thread_name") tracks[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
    if (ph == "X") ops[e.at("name")] = e;
    if (ph == "b") {
      ++begins;
      ids.insert(e.at("id").get<long>());
      EXPECT_EQ(e.at("name"), "l0_1");
      EXPECT_EQ(e.at("args").at("bytes"), kBytes);
      EXPECT_NEAR(e.at("ts").get<double>(), 5.0, 1e-6);  // microseconds
    }
    if (ph == "e") {
      ++ends;
      EXPECT_NEAR(e.at("ts").get<double>(), 15.0, 1e-6);
    }
  }
  ASSERT_EQ(processes.size(), 2u);
  int gpus_pid = -1, links_pid = -1;
  for (const auto& [pid, name] : processes) (name == "GPUs" ? gpus_pid : links_pid) = pid;
  ASSERT_EQ(processes[links_pid], "links");
  EXPECT_EQ(tracks[std::make_pair(gpus_pid, 0)], "gpu0");
  EXPECT_EQ(tracks[std::make_pair(gpus_pid, 1)], "gpu1");
  EXPECT_EQ(tracks[std::make_pair(links_pid, 0)], "l0_1");
  EXPECT_EQ(tracks.count(std::make_pair(links_pid, 1)), 0u);  // l1_0 carried nothing
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops["B"].at("tid"), 1);
  EXPECT_NEAR(ops["B"].at("ts").get<double>(), 15.0, 1e-6);
  EXPECT_NEAR(ops["B"].at("dur").get<double>(), 10.0, 1e-6);
  EXPECT_EQ(ops["B"].at("args").at("type"), "op");
  EXPECT_EQ(ops["B"].at("args").at("compute"), 10e-6);
  EXPECT_EQ(ops["B"].at("args").count("memory"), 1u);
  EXPECT_EQ(begins, 2);  // two flows over the one link of their route
  EXPECT_EQ(ends, 2);
  EXPECT_EQ(ids.size(), 2u);
}

TEST(SimGridTrace, ScheduleWithoutFlowsAndUnwritablePath) {
  Graph g = testutil::fig31_graph(kBytes);
  Cluster c = testutil::dedicated_mesh(2, kBw);
  const std::vector<DeviceId> placement = {0, 0, 1};
  const std::vector<double> start = {0, 5e-6, 10e-6}, finish = {5e-6, 15e-6, 15e-6};
  const auto path = std::filesystem::temp_directory_path() / fmt::format("placesim_trace2_{}.json", ::getpid());
  write_chrome_trace(path.string(), g, c, placement, start, finish, {});
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  int x = 0;
  for (const auto& e : trace.at("traceEvents")) {
    x += e.at("ph") == "X";
    EXPECT_NE(e.at("ph"), "b");
    if (e.at("name") == "process_name") {
      EXPECT_EQ(e.at("args").at("name"), "GPUs");
    }
  }
  EXPECT_EQ(x, 3);
  EXPECT_THROW(write_chrome_trace("/nonexistent-dir/trace.json", g, c, placement, start, finish, {}), InputError);
  // A path ending in .gz: the same JSON, gzip'd.
  const auto gz = std::filesystem::temp_directory_path() / fmt::format("placesim_trace2_{}.json.gz", ::getpid());
  write_chrome_trace(gz.string(), g, c, placement, start, finish, {});
  const std::optional<std::string> text = testutil::read_gzip_file(gz);
  ASSERT_TRUE(text.has_value());
  std::ifstream raw(gz, std::ios::binary);
  EXPECT_EQ(raw.get(), 0x1f);  // gzip's magic
  std::filesystem::remove(gz);
  EXPECT_EQ(nlohmann::json::parse(*text), trace);
  EXPECT_THROW(write_chrome_trace("/nonexistent-dir/trace.json.gz", g, c, placement, start, finish, {}), InputError);
}
