// QuickP P3: joint placement and per-destination bandwidth allocation on the multi-NIC cluster.
#include <gtest/gtest.h>

#include <cmath>

#include "placement/strategies/quickp/bandwidth.h"
#include "placement/strategies/quickp/quickp.h"
#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/engines/evaluator.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

// 3 servers of one GPU, 2 NICs of 10 GB/s: B = 20 GB/s of egress per server.
MultiNicConfig three_servers() {
  MultiNicConfig cfg;
  cfg.servers = 3;
  cfg.gpus_per_server = 1;
  cfg.nics_per_server = 2;
  cfg.link_bandwidth = 10e9;
  cfg.gpu_memory = 16e9;
  return cfg;
}

// A (10 us) sends 3 MB to B and 1 MB to C (10 us each). Every operator holds 10 GB, so on 16 GB
// GPUs no two share one: A, B and C sit on three servers.
Graph fan_out() {
  Graph g;
  g.add_operator({"A", "op", 10e-6, 10e9});
  g.add_operator({"B", "op", 10e-6, 10e9});
  g.add_operator({"C", "op", 10e-6, 10e9});
  g.add_tensor(0, 1, 3e6);
  g.add_tensor(0, 2, 1e6);
  g.finalize("fan-out");
  return g;
}

Cluster multi_nic(const MultiNicConfig& cfg, const BandwidthAllocation* allocation = nullptr) {
  Cluster c = allocation ? make_multi_nic(cfg, *allocation) : make_multi_nic(cfg);
  c.finalize("test multi-NIC cluster");
  return c;
}

std::unique_ptr<Strategy> make_quickp(const std::string& yaml) {
  return quickp_strategy_info().make(YamlFields(YAML::Load(yaml), "s.yaml", "strategies[0].options"));
}

}  // namespace

TEST(QuickPP3, ReadsTheMultiNicConfigBack) {
  MultiNicConfig cfg = three_servers();
  cfg.gpus_per_server = 2;
  cfg.nvlink_bandwidth = 40e9;
  cfg.link_latency = 1e-6;
  const Cluster c = multi_nic(cfg);
  const MultiNicConfig* back = multi_nic_config_of(c);  // the cluster's recipe
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(*back, cfg);
  EXPECT_EQ(back->servers, 3);
  EXPECT_EQ(back->gpus_per_server, 2);
  EXPECT_EQ(back->nics_per_server, 2);
  EXPECT_DOUBLE_EQ(back->link_bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(back->link_latency, 1e-6);
  EXPECT_DOUBLE_EQ(back->nvlink_bandwidth, 40e9);
  EXPECT_DOUBLE_EQ(back->gpu_memory, 16e9);
  // The uniform allocation: B / 2 = 10 GB/s per pair, as the pairwise view sees it.
  const BandwidthAllocation a = allocation_of(c);
  EXPECT_DOUBLE_EQ(a(0, 1), 10e9);
  EXPECT_DOUBLE_EQ(a(2, 0), 10e9);
  EXPECT_EQ(multi_nic_config_of(make_non_blocking(NonBlockingConfig{})), nullptr);
}

TEST(QuickPP3, AllocationSplitsEgressInProportionToBytes) {
  // A on server 0 sends 3 MB to server 1 and 1 MB to server 2 at once; the makespan is
  // 10 us + max(3 MB / b01, 1 MB / b02) + 10 us with b01 + b02 <= 20 GB/s. The max is least when
  // both transfers end together: 3 MB / b01 = 1 MB / b02, so b01 = 15 GB/s and b02 = 5 GB/s, each
  // transfer 200 us: 220 us (uniform, 10 GB/s each: 10 + 300 + 10 = 320 us). Servers 1 and 2 send
  // nothing: their rows stay uniform (10 GB/s to each).
  const Graph g = fan_out();
  const MultiNicConfig cfg = three_servers();
  const Cluster uniform = multi_nic(cfg);
  const std::vector<DeviceId> placement{0, 1, 2};
  const Schedule sched = Evaluator(g, uniform).schedule(placement);
  EXPECT_NEAR(sched.latency, 320e-6, 1e-12);
  const AllocationResult r = allocate_bandwidth(g, uniform, cfg, placement, sched.device_order);
  EXPECT_NEAR(r.allocation(0, 1), 15e9, 15e9 * 1e-5);
  EXPECT_NEAR(r.allocation(0, 2), 5e9, 5e9 * 1e-5);
  EXPECT_NEAR(r.allocation(1, 0), 10e9, 1);
  EXPECT_NEAR(r.allocation(2, 1), 10e9, 1);
  EXPECT_LE(r.allocation.row_sum(0), 20e9);
  EXPECT_NEAR(r.lp_makespan, 220e-6, 220e-6 * 1e-5);
  const Cluster allocated = multi_nic(cfg, &r.allocation);
  EXPECT_NEAR(Evaluator(g, allocated).latency(placement), 220e-6, 220e-6 * 1e-5);
  EXPECT_FALSE(r.stopped_at_deadline);
  // With its deadline passed, the LP stops at once and proposes nothing new.
  AllocationOptions late;
  late.stop = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const AllocationResult stopped = allocate_bandwidth(g, uniform, cfg, placement, sched.device_order, late);
  EXPECT_TRUE(stopped.stopped_at_deadline);
  EXPECT_NEAR(stopped.allocation(0, 1), 10e9, 1);
}

TEST(QuickPP3, StrategyReturnsPlacementAndAllocation) {
  // The same toy through the strategy (no co-location: grouping A with B would not fit in memory),
  // memory forces one operator per server; the allocation
  // brings 320 us down to 220 us (derivation above).
  const Graph g = fan_out();
  const MultiNicConfig cfg = three_servers();
  const Cluster uniform = multi_nic(cfg);
  auto q = make_quickp("{alpha: 0, colocation: false, mip_gap: 0, bandwidth_allocation: true}");
  PlacementResult r = q->place(g, uniform);
  ASSERT_TRUE(r.bandwidth_allocation.has_value());
  EXPECT_NEAR(r.details["latency_uniform_s"].get<double>(), 320e-6, 1e-12);
  const Cluster allocated = multi_nic(cfg, &*r.bandwidth_allocation);
  EXPECT_NEAR(Evaluator(g, allocated).latency(r.placement), 220e-6, 220e-6 * 1e-5);
  EXPECT_NEAR(r.details["latency_s"].get<double>(), 220e-6, 220e-6 * 1e-5);
  EXPECT_GE(r.details["allocation_accepted"].get<int>(), 1);
  // The cluster a run would use: the allocation applied to the cluster's recipe gives 220 us too.
  const Cluster rebuilt = with_bandwidth_allocation(uniform, *r.bandwidth_allocation, "test");
  EXPECT_NEAR(Evaluator(g, rebuilt).latency(r.placement), 220e-6, 220e-6 * 1e-5);
  // Any other fabric has no allocation to apply: an error naming the strategy, never a silent run.
  EXPECT_THROW(with_bandwidth_allocation(make_non_blocking(NonBlockingConfig{}), *r.bandwidth_allocation, "test"), InputError);
  // Not a multi-NIC cluster: no allocation, and the report says why.
  PlacementResult plain = q->place(g, [] { Cluster c = make_non_blocking(NonBlockingConfig{}); c.finalize("t"); return c; }());
  EXPECT_FALSE(plain.bandwidth_allocation.has_value());
  EXPECT_TRUE(plain.details["allocation"].is_string());
  // Options are validated.
  EXPECT_INPUT_ERROR(make_quickp("{allocation_rounds: 0}"), "options.allocation_rounds");
}

TEST(QuickPP3, P2IsExactOnAnAllocatedCluster) {
  // 3 servers of 2 GPUs with an uneven allocation (every server pair its own rate): P2 prices a
  // transfer by its server pair. Its objective must equal the replay of its own order, and be at
  // most the best list schedule over all 6^4 placements of the diamond A -> B, C -> D (P2 also
  // chooses the order).
  MultiNicConfig cfg = three_servers();
  cfg.gpus_per_server = 2;
  BandwidthAllocation a(3);
  a.set(0, 1, 15e9), a.set(0, 2, 5e9), a.set(1, 0, 2e9), a.set(1, 2, 18e9), a.set(2, 0, 10e9), a.set(2, 1, 10e9);
  const Cluster c = multi_nic(cfg, &a);
  Graph g;
  for (const char* name : {"A", "B", "C", "D"}) g.add_operator({name, "op", 100e-6, 1});
  g.add_tensor(0, 1, 2e6);
  g.add_tensor(0, 2, 1e6);
  g.add_tensor(1, 3, 1e6);
  g.add_tensor(2, 3, 3e6);
  g.finalize("diamond");
  P2Options o;
  o.mip_gap = 0;
  o.max_nodes = 0;
  Colocation none;
  none.group_of.assign(4, -1);
  const P2Solution s = solve_p2(g, c, none, o);
  ASSERT_EQ(s.status, P2Status::Optimal);
  // Server-pair pricing: per edge one y and 6 w (ordered server pairs), 28 in all, against 4 x 30
  // z per GPU pair; plus 24 x, 4 s, C and one order binary (B, C): 58 columns.
  EXPECT_EQ(s.columns, 58);
  EXPECT_NEAR(replay_order(g, c, s.placement, s.device_order).latency, s.objective, 1e-9 * s.objective);
  Evaluator ev(g, c);
  double best = 1e9;
  std::vector<DeviceId> p(4);
  for (int code = 0; code < 6 * 6 * 6 * 6; ++code) {
    for (int i = 0, rest = code; i < 4; ++i, rest /= 6) p[i] = rest % 6;
    best = std::min(best, ev.latency(p));
  }
  EXPECT_LE(s.objective, best * (1 + 1e-9));
}

TEST(QuickPP3, FourServersFanOut) {
  // 4 servers of one GPU, B = 20 GB/s. A (10 us) sends 3, 2 and 1 MB to B, C, D (10 us each);
  // memory puts each on its own server. Uniform (20/3 GB/s per pair): the 3 MB transfer takes
  // 450 us: 10 + 450 + 10 = 470 us. Allocated in proportion to the bytes (10, 20/3 and 10/3 GB/s)
  // every transfer takes 300 us: 320 us. Servers B, C, D send nothing: uniform rows.
  Graph g;
  for (const char* name : {"A", "B", "C", "D"}) g.add_operator({name, "op", 10e-6, 10e9});
  g.add_tensor(0, 1, 3e6);
  g.add_tensor(0, 2, 2e6);
  g.add_tensor(0, 3, 1e6);
  g.finalize("fan-out 4");
  MultiNicConfig cfg = three_servers();
  cfg.servers = 4;
  auto q = make_quickp("{alpha: 0, colocation: false, mip_gap: 0, bandwidth_allocation: true}");
  PlacementResult r = q->place(g, multi_nic(cfg));
  ASSERT_TRUE(r.bandwidth_allocation.has_value());
  EXPECT_NEAR(r.details["latency_uniform_s"].get<double>(), 470e-6, 1e-12);
  EXPECT_NEAR(Evaluator(g, multi_nic(cfg, &*r.bandwidth_allocation)).latency(r.placement), 320e-6, 320e-6 * 1e-5);
  const int a = r.placement[0];
  const int b = r.placement[1], c = r.placement[2], d = r.placement[3];  // one GPU per server
  EXPECT_NEAR((*r.bandwidth_allocation)(a, b), 10e9, 10e9 * 1e-5);
  EXPECT_NEAR((*r.bandwidth_allocation)(a, c), 20e9 / 3, 20e9 / 3 * 1e-5);
  EXPECT_NEAR((*r.bandwidth_allocation)(a, d), 10e9 / 3, 10e9 / 3 * 1e-5);
  EXPECT_NEAR((*r.bandwidth_allocation)(b, a), 20e9 / 3, 1);
}

TEST(QuickPP3, FourServersNeverWorseThanUniform) {
  // Synthetic training graphs on 4 multi-NIC servers of 2 GPUs (2 NICs of 40 Gb/s): QuickP's
  // placement with its allocation is never slower than its first placement on the uniform
  // allocation, and the allocation respects every NIC budget.
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    SyntheticGraphConfig gc;
    gc.layers = 4;
    gc.branches = 8;
    gc.ops_per_branch = 2;
    gc.mean_compute_s = 2e-3;
    gc.mean_tensor_bytes = 8e6;
    gc.seed = seed;
    const Graph g = synthetic_training_graph(gc);
    MultiNicConfig cfg;
    cfg.servers = 4;
    cfg.gpus_per_server = 2;
    cfg.nics_per_server = 2;
    cfg.link_bandwidth = 5e9;
    const Cluster uniform = multi_nic(cfg);
    auto q = make_quickp("{bandwidth_allocation: true, max_nodes: 5, portfolio: false, polish: 0}");
    PlacementResult r = q->place(g, uniform);
    ASSERT_TRUE(r.bandwidth_allocation.has_value());
    const double with = Evaluator(g, multi_nic(cfg, &*r.bandwidth_allocation)).latency(r.placement);
    const double without = r.details["latency_uniform_s"].get<double>();
    EXPECT_LE(with, without * (1 + 1e-12)) << seed;
    EXPECT_NEAR(with, r.details["latency_s"].get<double>(), 1e-12) << seed;
    for (int s = 0; s < 4; ++s) EXPECT_LE(r.bandwidth_allocation->row_sum(s), 2 * 5e9 * (1 + 1e-9));
  }
}
