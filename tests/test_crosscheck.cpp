// Cross-checks between two independent paths: the fast evaluator (analytic, no contention) and the
// SimGrid engine (flows sharing links). They must agree exactly when no link is ever shared, and
// SimGrid must never be faster when the per-GPU order is the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "sim/engines/flow_engine.h"
#include "sim/io/graph_io.h"
#include "sim/engines/simgrid_engine.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

// A random DAG: each operator takes inputs from up to 2 earlier operators.
Graph random_dag(std::mt19937& rng, int n) {
  Graph g;
  std::uniform_real_distribution<double> compute(1e-6, 50e-6), bytes(1e3, 2e6);
  for (int i = 0; i < n; ++i) g.add_operator({"op" + std::to_string(i), "op", compute(rng), 1e6});
  for (int i = 1; i < n; ++i) {
    const int inputs = 1 + static_cast<int>(rng() % 2);
    std::vector<int> used;
    for (int k = 0; k < inputs; ++k) {
      int src = static_cast<int>(rng() % i);
      if (std::find(used.begin(), used.end(), src) != used.end()) continue;
      used.push_back(src);
      g.add_tensor(src, i, (rng() % 8 == 0) ? 0.0 : bytes(rng));
    }
  }
  g.finalize("random");
  return g;
}

// True when, in the evaluator's schedule, no two transfers are ever on one link at the same time.
bool no_link_shared(const Graph& g, const Cluster& c, const std::vector<DeviceId>& p, const Schedule& s) {
  std::vector<std::vector<std::pair<double, double>>> busy(c.links().size());
  for (const Tensor& t : g.tensors()) {
    const DeviceId a = p[t.src], b = p[t.dst];
    if (a == b || t.bytes <= 0) continue;
    const double begin = s.finish[t.src] + c.latency(a, b);
    const double end = s.finish[t.src] + c.transfer_time(a, b, t.bytes);
    for (int l : c.route(a, b)) busy[l].push_back({begin, end});
  }
  for (auto& intervals : busy) {
    std::sort(intervals.begin(), intervals.end());
    for (std::size_t k = 1; k < intervals.size(); ++k)
      if (intervals[k].first < intervals[k - 1].second) return false;
  }
  return true;
}

}  // namespace

TEST(CrossCheck, AgreeExactlyWhenNoLinkIsShared) {
  std::mt19937 rng(2024);
  int compared = 0;
  for (int trial = 0; trial < 5000 && compared < 12; ++trial) {
    const int gpus = 2 + static_cast<int>(rng() % 3);
    Graph g = random_dag(rng, 10 + static_cast<int>(rng() % 30));
    Cluster c = testutil::dedicated_mesh(gpus, 5e9, (trial % 2) ? 3e-6 : 0.0);
    // Mostly follow an input's GPU, sometimes jump: enough cross-GPU flows to be a test, few
    // enough that some schedules never put two of them on one link at once.
    std::vector<DeviceId> p(g.num_operators(), 0);
    for (OpId i = 0; i < static_cast<OpId>(p.size()); ++i) {
      auto in = g.in_edges(i);
      p[i] = (in.empty() || rng() % 3 == 0) ? static_cast<DeviceId>(rng() % gpus) : p[g.tensor(in[0]).src];
    }
    Evaluator ev(g, c);
    Schedule s = ev.schedule(p);
    if (!no_link_shared(g, c, p, s)) continue;
    bool has_flow = false;
    for (const Tensor& t : g.tensors()) has_flow |= p[t.src] != p[t.dst] && t.bytes > 0;
    if (!has_flow) continue;
    ++compared;
    SimulationResult r = simulate(g, c, p, s.device_order);
    EXPECT_NEAR(r.latency, s.latency, 1e-9 * s.latency) << "trial " << trial;
    for (std::size_t i = 0; i < p.size(); ++i) {
      EXPECT_NEAR(r.start[i], s.start[i], 1e-9 * s.latency) << "trial " << trial << " op " << i;
      EXPECT_NEAR(r.finish[i], s.finish[i], 1e-9 * s.latency) << "trial " << trial << " op " << i;
    }
  }
  EXPECT_GE(compared, 10) << "too few contention-free cases were generated to compare";
}

TEST(CrossCheck, Fig31OnTheQuickpCluster) {
  NvlinkServersConfig cfg;
  cfg.gpus = 2;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("t");
  Graph g = testutil::fig31_graph(5e-6 * 50e9);  // 5 us over NVLink
  Evaluator ev(g, c);
  std::vector<DeviceId> p = {0, 0, 1};
  Schedule s = ev.schedule(p);
  EXPECT_NEAR(s.latency, 15e-6, 1e-15);
  EXPECT_NEAR(simulate(g, c, p, s.device_order).latency, 15e-6, 1e-9 * 15e-6);
}

TEST(CrossCheck, SharedLinkMakesSimgridSlower) {
  // A on gpu0 feeds B and C, both on gpu1: the two 5 us transfers share gpu0's NVLink, so each
  // gets half the bandwidth and both arrive at 5 + 10 = 15 us instead of 10 us. Then B (10 us)
  // and C (5 us) run back to back on gpu1: 15 + 15 = 30 us, against 25 us in the evaluator.
  NvlinkServersConfig cfg;
  cfg.gpus = 2;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("t");
  Graph g = testutil::fig31_graph(5e-6 * 50e9);
  Evaluator ev(g, c);
  std::vector<DeviceId> p = {0, 1, 1};
  Schedule s = ev.schedule(p);
  EXPECT_NEAR(s.latency, 25e-6, 1e-15);
  SimulationResult r = simulate(g, c, p, s.device_order);
  EXPECT_NEAR(r.latency, 30e-6, 1e-9 * 30e-6);
}

TEST(CrossCheck, RealGraphsSimgridNeverBelowEvaluator) {
  PLACESIM_REQUIRE_SHARED_GRAPHS();
  const std::string root = testutil::shared_graphs();
  for (const char* rel : {"quickp/alexnet.json", "quickp/small.json", "msr-fiddle/gnmt_training.json",
                          "msr-fiddle/bert_l-3_training.json"}) {
    SCOPED_TRACE(rel);
    Graph g = load_graph(root + "/" + rel).graph;
    NvlinkServersConfig cfg;
    cfg.gpus = 4;
    cfg.gpu_memory = 1e15;
    Cluster c = make_nvlink_servers(cfg);
    c.finalize("t");
    // Contiguous blocks of the topological order, colocation classes kept together.
    std::vector<DeviceId> p(g.num_operators());
    std::vector<DeviceId> class_gpu(g.num_colocation_classes(), -1);
    auto topo = g.topological_order();
    for (std::size_t k = 0; k < topo.size(); ++k) {
      const Operator& op = g.op(topo[k]);
      DeviceId d = static_cast<DeviceId>(k * 4 / topo.size());
      if (op.colocation_class >= 0) {
        if (class_gpu[op.colocation_class] < 0) class_gpu[op.colocation_class] = d;
        d = class_gpu[op.colocation_class];
      }
      p[topo[k]] = d;
    }
    Evaluator ev(g, c);
    Schedule s = ev.schedule(p);
    SimulationResult r = simulate(g, c, p, s.device_order);
    EXPECT_GE(r.latency, s.latency * (1 - 1e-9));
    for (std::size_t i = 0; i < p.size(); ++i) EXPECT_GE(r.finish[i], s.finish[i] * (1 - 1e-9) - 1e-15) << i;
    // Same GPU for everything: no flows, so both paths give the total compute.
    std::vector<DeviceId> one(g.num_operators(), 0);
    Schedule s1 = ev.schedule(one);
    EXPECT_NEAR(s1.latency, g.total_compute(), 1e-9 * g.total_compute());
    EXPECT_NEAR(simulate(g, c, one, s1.device_order).latency, s1.latency, 1e-9 * s1.latency);
  }
}

TEST(CrossCheck, FasterGpuShortensComputeInBothPaths) {
  // Fig. 3.1 with gpu1 twice as fast: A (5 us) and C (5 us) on gpu0, B (10 us of work) on gpu1.
  // B's input arrives at 5 + 5 = 10 us and B takes 10 / 2 = 5 us: 15 us, against 20 us when
  // gpu1 has the ordinary speed. The evaluator and SimGrid must both see it.
  Cluster c;
  c.add_device({"gpu0", 0, 16e9});
  Device fast{"gpu1", 1, 16e9};
  fast.compute_speed = 2.0;
  c.add_device(fast);
  c.set_route(0, 1, {c.add_link({"up", 20e9, 0})});
  c.set_route(1, 0, {c.add_link({"down", 20e9, 0})});
  c.finalize("heterogeneous");
  Graph g = testutil::fig31_graph(5e-6 * 20e9);
  Evaluator ev(g, c);
  std::vector<DeviceId> p = {0, 1, 0};
  Schedule s = ev.schedule(p);
  EXPECT_NEAR(s.latency, 15e-6, 1e-15);
  EXPECT_NEAR(s.busy[1], 5e-6, 1e-15);
  EXPECT_NEAR(ev.lower_bounds().critical_path, 7.5e-6, 1e-15);  // A then B, both at speed 2
  EXPECT_NEAR(simulate(g, c, p, s.device_order).latency, 15e-6, 1e-9 * 15e-6);
  EXPECT_NEAR(replay_order(g, c, p, s.device_order).latency, 15e-6, 1e-15);
}

TEST(CrossCheck, CommunicationStepsDoNotWaitForTheirGpu) {
  // GPU 0 computes A for 10 ms. C, a communication step on GPU 0 with no inputs, sends 10 MB to D
  // on GPU 1 (1 ms at 10 GB/s). C runs beside A, not after it: D starts at 1 ms and ends at 2 ms,
  // the makespan is A's 10 ms, in every engine; C is in no GPU's order. (As an ordinary zero-time
  // operator, C would wait for A, by rank or first come: D would start at 11 ms.)
  Graph g;
  const OpId a = g.add_operator({"A", "op", 10e-3, 0});
  const OpId c = g.add_operator({"C", "collective", 0, 0, -1, /*communication=*/true});
  const OpId d = g.add_operator({"D", "op", 1e-3, 0});
  g.add_tensor(c, d, 10e6);
  g.finalize("test");
  const Cluster cluster = testutil::dedicated_mesh(2, 10e9);
  const std::vector<DeviceId> placement = {0, 0, 1};
  for (GpuQueue priority : {GpuQueue::Rank, GpuQueue::Fcfs}) {
    const Schedule s = Evaluator(g, cluster).schedule(placement, priority);
    EXPECT_NEAR(s.start[d], 1e-3, 1e-12);
    EXPECT_NEAR(s.latency, 10e-3, 1e-12);
    EXPECT_EQ(s.device_order[0], std::vector<OpId>{a});
    const SimulationResult r = simulate(g, cluster, placement, s.device_order, GpuQueue::Fcfs);
    EXPECT_NEAR(r.start[d], 1e-3, 1e-9);
    EXPECT_NEAR(r.latency, 10e-3, 1e-9);
    EXPECT_NEAR(r.start[c], 0.0, 1e-12);
    const Schedule f = FlowEngine(g, cluster).schedule(placement, priority);
    EXPECT_NEAR(f.start[d], 1e-3, 1e-12);
    EXPECT_NEAR(f.latency, 10e-3, 1e-12);
    EXPECT_NEAR(FlowEngine(g, cluster).replay(placement, s.device_order).start[d], 1e-3, 1e-12);
    EXPECT_NEAR(replay_order(g, cluster, placement, s.device_order).start[d], 1e-3, 1e-12);
  }
  // An order that lists the communication step is refused, and so is one with compute time.
  EXPECT_THROW(check_device_order(g, 2, placement, {{a, c}, {d}}), std::invalid_argument);
  Graph bad;
  bad.add_operator({"C", "collective", 1e-3, 0, -1, /*communication=*/true});
  EXPECT_THROW(bad.finalize("test"), InputError);
}

TEST(CrossCheck, ACommunicationStepAfterTheCutoffProvesTheMakespanAboveIt) {
  // A (1 ms, GPU 0), then the communication steps C1 on GPU 0 and C2 on GPU 1, 10 MB apart (1 ms
  // at 10 GB/s): the makespan is C2's arrival, 2 ms, after every compute operator has ended.
  Graph g;
  const OpId a = g.add_operator({"A", "op", 1e-3, 0});
  const OpId c1 = g.add_operator({"C1", "collective", 0, 0, -1, /*communication=*/true});
  const OpId c2 = g.add_operator({"C2", "collective", 0, 0, -1, /*communication=*/true});
  g.add_tensor(a, c1, 0);
  g.add_tensor(c1, c2, 10e6);
  g.finalize("test");
  const Cluster cluster = testutil::dedicated_mesh(2, 10e9);
  const std::vector<DeviceId> placement = {0, 0, 1};
  Evaluator e(g, cluster);
  EXPECT_NEAR(e.latency(placement), 2e-3, 1e-15);
  EXPECT_EQ(e.latency_with_cutoff(placement, 1.5e-3), std::numeric_limits<double>::infinity());
  EXPECT_NEAR(e.latency_with_cutoff(placement, 2.5e-3), 2e-3, 1e-15);
  FlowEngine f(g, cluster);
  const std::vector<std::vector<OpId>> order = {{a}, {}};
  EXPECT_EQ(f.replay_latency_with_cutoff(placement, order, 1.5e-3), std::numeric_limits<double>::infinity());
  EXPECT_NEAR(f.replay_latency_with_cutoff(placement, order, 2.5e-3), 2e-3, 1e-12);
}
