// The flow engine (sim/engines/flow_engine.h) against the SimGrid engine: with the same per-GPU order
// (`simulation.order: scheduler`, the evaluator's) every operator must finish at the same time to
// 1e-6 relative, on every registered fabric and on the real graphs; without contention it is the
// evaluator.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <fmt/format.h>
#include <iostream>
#include <limits>
#include <map>
#include <random>

#include "scenarios/runner/record.h"
#include "scenarios/runner/runner.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/io/graph_io.h"
#include "sim/engines/simgrid_engine.h"
#include "tests/contention_cases.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/registry.h"

using namespace placesim;
using namespace placesim::testutil;

// GCC flags free() in a replaced operator delete as mismatched once it is inlined into callers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Counts every allocation of this test binary (the replaceable global operator new), so that a
// test can check that an evaluation allocates nothing once the engine is warm. Not under a
// sanitizer: ASan's own operator new finds new/delete mismatches in every other test.
#if defined(__SANITIZE_ADDRESS__)
#define PLACESIM_COUNT_ALLOCATIONS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLACESIM_COUNT_ALLOCATIONS 0
#endif
#endif
#ifndef PLACESIM_COUNT_ALLOCATIONS
#define PLACESIM_COUNT_ALLOCATIONS 1
#endif
namespace {
std::atomic<long> g_allocations{0};
}  // namespace
#if PLACESIM_COUNT_ALLOCATIONS
[[gnu::noinline]] void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace {

// The bound of the cross-check.
constexpr double kRelative = 1e-6;

// Contiguous blocks of the topological order over `gpus` GPUs (colocation classes kept together),
// every 7th operator moved to another GPU: pipeline traffic plus contention.
std::vector<DeviceId> mixed_placement(const Graph& g, int gpus) {
  std::vector<DeviceId> p(g.num_operators());
  std::vector<DeviceId> class_gpu(g.num_colocation_classes(), -1);
  auto topo = g.topological_order();
  for (std::size_t k = 0; k < topo.size(); ++k) {
    const Operator& op = g.op(topo[k]);
    DeviceId d = static_cast<DeviceId>(k * gpus / topo.size());
    if (k % 7 == 3) d = static_cast<DeviceId>((k * 5) % gpus);
    if (op.colocation_class >= 0) {
      if (class_gpu[op.colocation_class] < 0) class_gpu[op.colocation_class] = d;
      d = class_gpu[op.colocation_class];
    }
    p[topo[k]] = d;
  }
  return p;
}

double relative(double a, double b) {
  if (a == b) return 0.0;
  return std::fabs(a - b) / std::max(std::fabs(a), std::fabs(b));
}

struct Comparison {
  double max_relative = 0;  // over every operator's finish time
  std::size_t flows = 0;
  bool contended = false;  // the flow engine's latency is above the evaluator's
};

// SimGrid and the flow engine, both in the evaluator's order; every finish time compared.
Comparison compare_with_simgrid(const Graph& g, const Cluster& c, const std::vector<DeviceId>& p) {
  Evaluator ev(g, c);
  const Schedule s = ev.schedule(p);
  const SimulationResult r = simulate(g, c, p, s.device_order);
  FlowEngine flow(g, c);
  const Schedule f = flow.replay(p, s.device_order);
  Comparison out;
  out.flows = r.flows.size();
  out.contended = f.latency > s.latency * (1 + 1e-9);
  for (std::size_t i = 0; i < p.size(); ++i) {
    out.max_relative = std::max(out.max_relative, relative(f.finish[i], r.finish[i]));
    EXPECT_LE(relative(f.finish[i], r.finish[i]), kRelative)
        << "operator " << i << ": flow " << f.finish[i] << " s, SimGrid " << r.finish[i] << " s";
    EXPECT_LE(relative(f.start[i], r.start[i]), kRelative) << "operator " << i;
  }
  EXPECT_LE(relative(f.latency, r.latency), kRelative);
  // The same engine, called again, gives the same answer (buffers are reset).
  EXPECT_EQ(flow.replay_latency(p, s.device_order), f.latency);
  return out;
}

}  // namespace

TEST(FlowEngine, LoneTransferTakesTheView) {
  NvlinkServersConfig cfg;
  cfg.gpus = 2;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("t");
  Graph g = testutil::fig31_graph(5e-6 * 50e9);
  std::vector<DeviceId> p = {0, 0, 1};
  Evaluator ev(g, c);
  FlowEngine flow(g, c);
  const Schedule s = ev.schedule(p);
  EXPECT_NEAR(flow.latency(p), s.latency, 1e-9 * s.latency);
  EXPECT_NEAR(flow.replay(p, s.device_order).latency, 15e-6, 1e-9 * 15e-6);
}

TEST(FlowEngine, SharedLinkHalvesTheRates) {
  // As CrossCheck.SharedLinkMakesSimgridSlower: A on gpu0 feeds B and C on gpu1; the two 5 us
  // transfers share gpu0's NVLink and both arrive at 15 us; B (10 us) and C (5 us) follow: 30 us.
  NvlinkServersConfig cfg;
  cfg.gpus = 2;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("t");
  Graph g = testutil::fig31_graph(5e-6 * 50e9);
  std::vector<DeviceId> p = {0, 1, 1};
  FlowEngine flow(g, c);
  EXPECT_NEAR(flow.latency(p), 30e-6, 1e-9 * 30e-6);
  Evaluator ev(g, c);
  EXPECT_NEAR(flow.replay(p, ev.schedule(p).device_order).latency, 30e-6, 1e-9 * 30e-6);
}

TEST(FlowEngine, WithoutContentionItIsTheEvaluator) {
  // One GPU pair per transfer at a time on a dedicated mesh with a chain: never two flows at once.
  std::mt19937 rng(7);
  Graph g;
  for (int i = 0; i < 40; ++i) g.add_operator({"op" + std::to_string(i), "op", 1e-6 * (1 + i % 5), 1e6});
  for (int i = 1; i < 40; ++i) g.add_tensor(i - 1, i, 1e5 * (1 + i % 3));
  g.finalize("chain");
  Cluster c = testutil::dedicated_mesh(4, 5e9, 2e-6);
  std::vector<DeviceId> p(40);
  for (auto& d : p) d = static_cast<DeviceId>(rng() % 4);
  Evaluator ev(g, c);
  FlowEngine flow(g, c);
  const Schedule s = ev.schedule(p);
  const Schedule f = flow.schedule(p);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(f.finish[i], s.finish[i], 1e-12 * s.latency) << i;
  EXPECT_EQ(f.device_order, s.device_order);
}

TEST(FlowEngine, UnreachablePairNeverArrives) {
  Cluster c = cluster_from_yaml(
      YAML::Load("{type: multi-nic, servers: 2, gpus_per_server: 1, nics_per_server: 1, allocation: [[0, 0], [1GB/s, 0]]}"), "t");
  Graph g = testutil::fig31_graph(1e6);
  std::vector<DeviceId> p = {0, 1, 0};
  FlowEngine flow(g, c);
  EXPECT_EQ(flow.latency(p), std::numeric_limits<double>::infinity());
}

// At a clock of 1e9 s a 1-byte transfer (~0.1 ns) is far below a double's resolution (~0.1 us):
// `now + 1e-12` rounds to `now`. The engine must still take what is due at `now` and end, within a
// few ulps of the clock per step of the evaluator's answer. (Before, it spun without end; ctest's
// timeout stops a regression.)
TEST(FlowEngine, TransfersBelowTheClocksResolutionStillEnd) {
  const Cluster c = cluster_from_yaml(YAML::Load("{type: fat-tree, k: 4, servers: 4, gpus_per_server: 1}"), "t");
  Graph g;
  constexpr int kOps = 6;
  for (int i = 0; i < kOps; ++i) g.add_operator({"op" + std::to_string(i), "op", i == 0 ? 1e9 : 1e-6, 1});
  for (int i = 1; i < kOps; ++i) g.add_tensor(i - 1, i, 1);
  g.finalize("slow-chain");
  std::vector<DeviceId> p(kOps);
  for (int i = 0; i < kOps; ++i) p[i] = static_cast<DeviceId>(i % 4);
  const double evaluator = Evaluator(g, c).schedule(p).latency;
  FlowEngine flow(g, c);
  const double latency = flow.latency(p);
  ASSERT_TRUE(std::isfinite(latency));
  const double ulp = std::nextafter(1e9, 2e9) - 1e9;  // 2^-23 s, the spacing of doubles near the clock
  // Two events per step (a transfer and an operator), each at most one ulp off the evaluator's sum.
  EXPECT_NEAR(latency, evaluator, 2 * kOps * ulp);
  EXPECT_GE(latency, 1e9);
}

TEST(FlowEngine, ReusesItsBuffersAcrossPlacements) {
  std::mt19937 rng(11);
  Graph g = random_dag(rng, 80);
  Cluster c = cluster_from_yaml(YAML::Load("{type: fat-tree, k: 4, servers: 8, gpus_per_server: 2}"), "t");
  FlowEngine flow(g, c);
  std::vector<double> first;
  std::vector<std::vector<DeviceId>> placements;
  for (int k = 0; k < 5; ++k) placements.push_back(random_placement(rng, g, c));
  for (const auto& p : placements) first.push_back(flow.latency(p));
  for (std::size_t k = 0; k < placements.size(); ++k) EXPECT_EQ(flow.latency(placements[k]), first[k]);
}

TEST(FlowEngine, AllocatesNothingOnceWarm) {
  if (!PLACESIM_COUNT_ALLOCATIONS) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  std::mt19937 rng(5);
  Graph g = random_dag(rng, 120);
  Cluster c = cluster_from_yaml(YAML::Load("{type: spine-leaf, servers: 4, gpus_per_server: 2, oversubscription: 4}"), "t");
  const auto p = random_placement(rng, g, c);
  Evaluator ev(g, c);
  const auto order = ev.schedule(p).device_order;
  FlowEngine flow(g, c);
  const double a = flow.latency(p), b = flow.replay_latency(p, order);  // warm-up
  double again[6];
  const long before = g_allocations.load();
  for (int k = 0; k < 3; ++k) {
    again[2 * k] = flow.latency(p);
    again[2 * k + 1] = flow.replay_latency(p, order);
  }
  const long allocations = g_allocations.load() - before;
  EXPECT_EQ(allocations, 0);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(again[2 * k], a);
    EXPECT_EQ(again[2 * k + 1], b);
  }
  EXPECT_GT(flow.solves(), 0);
}

// The cross-check on synthetic graphs: every fabric of the registry (each key's
// example too), several random graphs and placements each.
TEST(FlowEngineCrossCheck, EveryRegisteredFabricAgreesWithSimgrid) {
  std::mt19937 rng(2026);
  std::map<std::string, Comparison> per_fabric;
  for (const auto& [type, yaml] : registry_variants()) {
    SCOPED_TRACE(yaml);
    const Cluster c = cluster_from_yaml(YAML::Load(yaml), "c.yaml");
    for (int trial = 0; trial < 2; ++trial) {
      const Graph g = random_dag(rng, 60 + static_cast<int>(rng() % 60));
      const auto p = random_placement(rng, g, c);
      bool reachable = true;
      for (const Tensor& t : g.tensors()) reachable &= t.bytes <= 0 || c.reachable(p[t.src], p[t.dst]);
      if (!reachable) continue;
      const Comparison k = compare_with_simgrid(g, c, p);
      Comparison& agg = per_fabric[type];
      agg.max_relative = std::max(agg.max_relative, k.max_relative);
      agg.flows += k.flows;
      agg.contended |= k.contended;
    }
  }
  EXPECT_EQ(per_fabric.size(), topology_registry().size());
  for (const auto& [type, k] : per_fabric) {
    std::cout << fmt::format("[ flow vs SimGrid ] {:<16} {:>6} flows, max relative difference {:.3g}{}\n", type,
                             k.flows, k.max_relative, k.contended ? "" : " (no contention seen)");
    EXPECT_TRUE(k.contended) << type << ": the cross-check never saw two flows share a link";
  }
}

// The real graphs on the fabrics of the contention tables: a fat-tree and a 4:1 spine-leaf of 4-GPU
// servers, and the thesis's multi-NIC cluster shape.
TEST(FlowEngineCrossCheck, RealGraphsAgreeWithSimgrid) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const std::string root = testutil::shared_graphs();
  const std::pair<const char*, const char*> fabrics[] = {
      {"fat-tree", "{type: fat-tree, k: 4, servers: 4, gpus_per_server: 4, nic_bandwidth: 100Gbps, gpu_memory: 100TB}"},
      {"spine-leaf 4:1",
       "{type: spine-leaf, leaves: 2, servers_per_leaf: 2, spines: 2, gpus_per_server: 4, nic_bandwidth: 100Gbps, "
       "oversubscription: 4, gpu_memory: 100TB}"},
      {"multi-nic", "{type: multi-nic, servers: 4, gpus_per_server: 2, nics_per_server: 2, gpu_memory: 100TB}"},
  };
  for (const char* rel : {"quickp/small.json", "quickp/alexnet.json", "msr-fiddle/bert_l-3_training.json"}) {
    const Graph g = load_graph(root + "/" + rel).graph;
    for (const auto& [name, yaml] : fabrics) {
      SCOPED_TRACE(fmt::format("{} on {}", rel, name));
      const Cluster c = cluster_from_yaml(YAML::Load(yaml), "c.yaml");
      const Comparison k = compare_with_simgrid(g, c, mixed_placement(g, c.num_devices()));
      std::cout << fmt::format("[ flow vs SimGrid ] {:<34} {:<15} {:>6} flows, max relative difference {:.3g}{}\n", rel,
                               name, k.flows, k.max_relative, k.contended ? "" : " (no contention)");
    }
  }
}

// First come, first served (`simulation.order: fcfs`): SimGrid picks by the arrival times it
// simulates, the flow engine by its own; with the same network model they pick alike. (A GPU that
// becomes idle at the instant another operator's input arrives sees it in the flow engine, which
// dispatches after every event of an instant; in SimGrid that depends on which actor runs first,
// so exact ties between an arrival and a finish could order differently. Random times make such
// ties unlikely; this test reports the largest difference it sees.)
TEST(FlowEngineCrossCheck, FcfsAgreesWithSimgrid) {
  std::mt19937 rng(99);
  double worst = 0;
  for (const char* yaml : {"{type: fat-tree, k: 4, servers: 4, gpus_per_server: 2}",
                           "{type: spine-leaf, servers: 4, gpus_per_server: 2, oversubscription: 4}",
                           "{type: multi-nic, servers: 3, gpus_per_server: 2, nics_per_server: 2}"}) {
    SCOPED_TRACE(yaml);
    const Cluster c = cluster_from_yaml(YAML::Load(yaml), "c.yaml");
    for (int trial = 0; trial < 3; ++trial) {
      const Graph g = random_dag(rng, 80);
      const auto p = random_placement(rng, g, c);
      Evaluator ev(g, c);
      const Schedule s = ev.schedule(p, GpuQueue::Fcfs);
      const SimulationResult r = simulate(g, c, p, s.device_order, GpuQueue::Fcfs);
      FlowEngine flow(g, c);
      const Schedule f = flow.schedule(p, GpuQueue::Fcfs);
      for (std::size_t i = 0; i < p.size(); ++i) {
        worst = std::max(worst, relative(f.finish[i], r.finish[i]));
        EXPECT_LE(relative(f.finish[i], r.finish[i]), kRelative) << "operator " << i;
      }
    }
  }
  std::cout << fmt::format("[ flow vs SimGrid ] fcfs: max relative difference {:.3g}\n", worst);
}

// `simulation.engine: flow | all` (scenarios/runner/scenario.h): the runner measures with the flow engine
// in SimGrid's order, and records and tables carry flow_latency.
TEST(FlowEngine, EngineOptionRecordsAndTable) {
  EXPECT_EQ(EngineSet::parse("all", "s.yaml", "simulation.engine"), EngineSet::of({kEvaluator, kFlow, kSimGrid}));
  EXPECT_EQ(EngineSet::parse("flow", "s.yaml", "simulation.engine"), EngineSet::of({kFlow}));
  EXPECT_THROW(EngineSet::parse("ns3", "s.yaml", "simulation.engine"), InputError);
  for (const std::string& n : EngineSet::names()) EXPECT_EQ(EngineSet::parse(n, "", "").name(), n);

  std::mt19937 rng(3);
  const Graph g = random_dag(rng, 40);
  const Cluster c = cluster_from_yaml(YAML::Load("{type: fat-tree, k: 4, servers: 4, gpus_per_server: 2}"), "t");
  const auto p = random_placement(rng, g, c);
  const Measurement all = measure_placement(g, c, p, EngineSet::of({kEvaluator, kFlow, kSimGrid}));
  ASSERT_TRUE(all.latency(kFlow) && all.latency(kSimGrid));
  EXPECT_LE(relative(*all.latency(kFlow), *all.latency(kSimGrid)), kRelative);
  const Measurement flow = measure_placement(g, c, p, EngineSet::of({kFlow}));
  EXPECT_FALSE(flow.latency(kSimGrid));
  ASSERT_TRUE(flow.latency(kFlow));
  EXPECT_EQ(*flow.latency(kFlow), *all.latency(kFlow));
  EXPECT_FALSE(measure_placement(g, c, p, EngineSet::of({kEvaluator, kSimGrid})).latency(kFlow));

  PointRecord r;
  r.key = "k";
  r.scenario = "s";
  r.graph = "g";
  r.gpus = 8;
  r.cluster = "c";
  r.label = r.strategy = "round-robin";
  r.engines = EngineSet::of({kFlow});
  r.measurement.emplace();
  r.measurement->set_latency(kEvaluator, 1e-3);
  r.measurement->set_latency(kFlow, 1.5e-3);
  const PointRecord back = record_from_json(to_json(r), "results.jsonl", "line 1");
  EXPECT_EQ(back.engines, EngineSet::of({kFlow}));
  ASSERT_TRUE(back.measurement && back.measurement->latency(kFlow));
  EXPECT_EQ(*back.measurement->latency(kFlow), 1.5e-3);
  EXPECT_EQ(back.latency(), 1.5e-3);
  EXPECT_EQ(dump_json(to_json(back)), dump_json(to_json(r)));
  const std::string table = format_point_table(std::span<const PointRecord>(&r, 1));
  EXPECT_NE(table.find("flow"), std::string::npos) << table;
  EXPECT_NE(records_to_csv(std::span<const PointRecord>(&r, 1)).find("flow_latency_s"), std::string::npos);
  std::erase_if(r.measurement->engines, [](const EngineLatency& e) { return e.engine == kFlow; });
  EXPECT_FALSE(to_json(r).contains("flow_latency"));
  EXPECT_EQ(format_point_table(std::span<const PointRecord>(&r, 1)).find(" flow"), std::string::npos);
}
