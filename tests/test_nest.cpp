// nest and nest-unaware (placement/planners/nest): the DP against brute force over every plan of small
// models on 8 GPUs in 2 servers (two bandwidth levels), nest never worse than nest-unaware by its
// own estimate, a model that fits nowhere, and NEST's GPT-3 workload end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "placement/planners/nest/nest.h"
#include "scenarios/runner/sweep_runner.h"
#include "tests/layer_test_models.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;
using testutil::one_server;
using testutil::random_moe_workload;
using testutil::random_workload;
using testutil::uniform_chain;
using testutil::two_servers;

namespace {

constexpr double ms = 1e-3;

// Every plan: widths, ZeRO stages, replicas, stage counts and every split into contiguous stages.
double brute_force(const LayerWorkload& w, const Cluster& cluster, const NestConfig& config, const NestNetwork& network) {
  double best = std::numeric_limits<double>::infinity();
  const int n = cluster.num_devices();
  for (const auto& entry : w.by_tensor_parallel) {
    // (Not a structured binding: the lambda below captures the model, which clang 14 refuses.)
    const int t = entry.first;
    const LayerModel& model = entry.second;
    const int L = static_cast<int>(model.layers.size());
    // Expert widths: 1, and those up to max_ep dividing the experts when the model has some.
    int experts = 0;
    for (const Layer& l : model.layers)
      if (l.expert_parameter_bytes > 0) experts = l.experts;
    std::vector<int> widths{1};
    for (int ep = 2; ep <= std::min(config.max_ep, experts); ++ep)
      if (experts % ep == 0) widths.push_back(ep);
    for (int ep : widths)
    for (int d = ep; t * d <= n; d += ep)
      for (int z = 0; z <= (config.zero && d > 1 ? 3 : 0); ++z)
        for (int S = 1; S <= L && t * d * S <= n; ++S)
          for (const GpuOrder order : {GpuOrder::TpPpDp, GpuOrder::TpDpPp}) {
          ParallelPlan plan;
          plan.gpus = gpus_in_order(t, S, d, order);
          plan.tp = t;
          plan.pp = S;
          plan.dp = d;
          plan.ep = ep;
          plan.zero = z;
          plan.micro_batches = (config.micro_batches + d - 1) / d;
          plan.gradient_algorithm = config.gradient_algorithm;
          plan.assumptions = config;
          std::vector<int> starts{0};
          std::function<void(int)> split = [&](int from) {
            if (static_cast<int>(starts.size()) == S) {
              plan.stage_starts = starts;
              const NestEstimate e = nest_estimate(model, plan, network, config.reduction);
              if (e.fits) best = std::min(best, e.time_per_batch);
              return;
            }
            for (int next = from + 1; next <= L - (S - static_cast<int>(starts.size())); ++next) {
              starts.push_back(next);
              split(next);
              starts.pop_back();
            }
          };
          split(0);
        }
  }
  return best;
}

// nest (aware) or nest-unaware's search of w, checked against brute force: the same time, the DP's
// own value the estimate of the plan it returns, a plan that fits; nullopt when nothing fits
// (and the search says why).
std::optional<NestSearch> search_equal_to_brute_force(const LayerWorkload& w, const Cluster& cluster,
                                                      const NestConfig& config, bool aware) {
  const double expected =
      brute_force(w, cluster, config, aware ? NestNetwork::aware(cluster) : NestNetwork::unaware(cluster));
  NestSearch found = nest_search(w, cluster, config, aware);
  if (!std::isfinite(expected)) {
    EXPECT_FALSE(found.why_none.empty());
    return std::nullopt;
  }
  EXPECT_TRUE(found.why_none.empty()) << found.why_none;
  if (!found.why_none.empty()) return std::nullopt;
  EXPECT_NEAR(found.estimate.time_per_batch, expected, 1e-9 * expected);
  EXPECT_NEAR(found.dp_time_per_batch, found.estimate.time_per_batch, 1e-9 * expected);
  EXPECT_TRUE(found.estimate.fits);
  return found;
}

TEST(Nest, DpEqualsBruteForceOverEveryPlan) {
  std::mt19937 rng(2024);
  int tight = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const LayerWorkload w = random_workload(rng, 6);
    // Ample memory, or so little that most plans do not fit.
    const double memory = trial % 2 ? 1e12 : 1.5e9;
    const Cluster cluster = two_servers(memory);
    NestConfig config;
    config.micro_batches = 8 + trial;
    config.zero = trial % 3 != 0;
    // Ring, NCCL's tree and halving-doubling (powers of two only) price the reductions apart.
    constexpr CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree,
                                                   CollectiveAlgorithm::HalvingDoubling};
    config.gradient_algorithm = kAlgorithms[(trial / 2) % 3];
    for (bool aware : {true, false})
    for (NestReduction reduction : {NestReduction::Stage, NestReduction::PerLayer, NestReduction::Overlapped}) {
      config.reduction = reduction;
      SCOPED_TRACE(testing::Message() << "trial " << trial << (aware ? " nest" : " nest-unaware") << " reduction "
                                      << enum_name<NestReduction>(kNestReductionNames, reduction) << " by "
                                      << enum_name<CollectiveAlgorithm>(collective_algorithm_names(), config.gradient_algorithm));
      const std::optional<NestSearch> found = search_equal_to_brute_force(w, cluster, config, aware);
      if (!found) continue;
      // Memory binds: the optimum is slower than with ample memory.
      const Cluster ample = two_servers(1e12);
      if (memory < 1e11 &&
          found->estimate.time_per_batch >
              (1 + 1e-9) * brute_force(w, ample, config, aware ? NestNetwork::aware(ample) : NestNetwork::unaware(ample)))
        ++tight;
    }
  }
  EXPECT_GT(tight, 2);
}

// Under NEST's assumptions, alone and together (SGD, its memory model, its recomputation charge,
// its units), on chains with every operator's output and a skip edge (what enters a stage is not
// what it relays), the DP still equals brute force over every plan, and NEST's memory model binds.
TEST(Nest, DpEqualsBruteForceUnderNestsAssumptions) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  PlanAssumptions all;
  all.optimizer = Optimizer::Sgd;
  all.memory_model = MemoryModel::Nest;
  all.recompute = RecomputeCharge::Nest;
  all.compute_units = ComputeUnits::Nest;
  std::vector<PlanAssumptions> variants(5, PlanAssumptions{});
  variants[0] = all;
  variants[1].optimizer = Optimizer::Sgd;
  variants[2].memory_model = MemoryModel::Nest;
  variants[3].recompute = RecomputeCharge::Nest;
  variants[4].compute_units = ComputeUnits::Nest;
  int bound = 0;
  for (int trial = 0; trial < 10; ++trial) {
    LayerWorkload w = random_workload(rng, 6);
    for (auto& [t, model] : w.by_tensor_parallel) {
      model.nest_recomputation = trial % 3 != 2;
      model.nest_time_scale = 1000;
      const int L = static_cast<int>(model.layers.size());
      for (int l = 0; l + 1 < L; ++l) model.edges.push_back({l, l + 1, model.layers[l].output_bytes});
      model.edges.push_back({0, L - 1, 2e6});
      for (Layer& l : model.layers) l.activation_bytes = u(rng) * 4e8 / t;
    }
    const Cluster cluster = two_servers(trial % 2 ? 1e12 : 1.5e9);
    NestConfig config;
    static_cast<PlanAssumptions&>(config) = variants[trial % variants.size()];
    config.micro_batches = 8 + trial;
    config.zero = trial % 4 != 0;
    for (bool aware : {true, false}) {
      SCOPED_TRACE(testing::Message() << "trial " << trial << (aware ? " nest" : " nest-unaware"));
      const std::optional<NestSearch> found = search_equal_to_brute_force(w, cluster, config, aware);
      if (!found) continue;
      EXPECT_EQ(found->plan.assumptions, static_cast<const PlanAssumptions&>(config));
      if (config.memory_model == MemoryModel::Nest && trial % 2 == 0) {
        NestConfig placesim = config;
        placesim.memory_model = MemoryModel::Placesim;
        bound += nest_search(w, cluster, placesim, aware).estimate.time_per_batch < found->estimate.time_per_batch;
      }
    }
  }
  EXPECT_GT(bound, 0) << "NEST's memory model binds where placesim's does not";
}

// NEST's assumptions change the plan, by hand: 4 layers of 1 ms forward and 2 ms backward, 0.1 GB
// of parameters (fp16), 0.4 GB of every operator output and 50 MB between layers each, built
// with recomputation, 8 micro-batches, no ZeRO, on 2 GPUs of 2 GB on NVLink (100 GB/s). Adam:
// 0.8 GB a layer, so one stage of 4 (3.2 GB) does not fit and two stages of 2 do (1.6 GB + 2 x
// 100 MB in flight on the first): (6 ms + a 50 MB send, 0.5 ms) x (8 + 1) = 58.5 ms. SGD: one
// stage of 4 layers fits (0.8 GB + 200 MB), so 2 replicas of it: 12 ms x 4 micro-batches + a
// ring all-reduce of 0.4 GB between 2 GPUs (4 ms) = 52 ms, the better. NEST's memory model adds
// every output of the micro-batch in compute: one stage needs 0.8 + 1.6 GB and does not fit,
// two stages do (0.4 GB + 0.8 GB + one more stash of 50 MB on the first): the pipeline again.
TEST(Nest, NestsAssumptionsChangeThePlanByHand) {
  LayerWorkload w = uniform_chain(4, 1e8, 50e6);
  LayerModel& model = w.by_tensor_parallel.at(1);
  model.nest_recomputation = true;
  for (Layer& l : model.layers) {
    l.activation_bytes = 4e8;
    l.stashed_bytes = 50e6;
  }
  const Cluster cluster = one_server(2, 2e9);
  NestConfig config;
  config.micro_batches = 8;
  config.zero = false;
  auto degrees = [](const NestSearch& found) { return std::pair{found.plan.pp, found.plan.dp}; };
  const NestSearch adam = nest_search(w, cluster, config, true);
  ASSERT_TRUE(adam.why_none.empty()) << adam.why_none;
  EXPECT_EQ(degrees(adam), (std::pair{2, 1}));
  config.optimizer = Optimizer::Sgd;
  const NestSearch sgd = nest_search(w, cluster, config, true);
  ASSERT_TRUE(sgd.why_none.empty()) << sgd.why_none;
  EXPECT_EQ(degrees(sgd), (std::pair{1, 2}));
  EXPECT_EQ(sgd.plan.assumptions.optimizer, Optimizer::Sgd);
  EXPECT_NEAR(sgd.estimate.max_stage_load, 12e-3, 1e-12);
  EXPECT_LT(sgd.estimate.time_per_batch, adam.estimate.time_per_batch);
  config.memory_model = MemoryModel::Nest;
  const NestSearch nest_memory = nest_search(w, cluster, config, true);
  ASSERT_TRUE(nest_memory.why_none.empty()) << nest_memory.why_none;
  EXPECT_EQ(degrees(nest_memory), (std::pair{2, 1}));
  EXPECT_TRUE(nest_memory.plan.overlap_grad_reduce);
  // Every planner's plans carry the reductions' overlap as given (Megatron's default, none).
  config.overlap_grad_reduce = false;
  EXPECT_FALSE(nest_search(w, cluster, config, true).plan.overlap_grad_reduce);
  // A workload that gives no operator's output is refused, naming the option.
  LayerWorkload plain = uniform_chain(4, 1e8, 50e6);
  EXPECT_THROW(nest_search(plain, cluster, config, true), std::invalid_argument);
}

// A model whose experts the plan spreads (built for ep 1): the DP over expert widths too equals
// brute force over every plan, and on a cluster whose memory binds, spreading is what fits.
TEST(Nest, DpOverExpertWidthsEqualsBruteForce) {
  std::mt19937 rng(7);
  int spread = 0;
  for (int trial = 0; trial < 8; ++trial) {
    LayerWorkload w = random_workload(rng, 5);
    w.by_tensor_parallel.erase(2);
    for (Layer& l : w.by_tensor_parallel.at(1).layers)
      if (&l != &w.by_tensor_parallel.at(1).layers.front()) {
        l.experts = 4;
        l.parameter_bytes *= 4;  // four experts of the dense layer's size, 3/4 of them experts'
        l.expert_parameter_bytes = 0.75 * l.parameter_bytes;
        l.expert_alltoall_bytes = 2 * l.output_bytes;
      }
    const Cluster cluster = two_servers(trial % 2 ? 1e12 : 3e9);
    NestConfig config;
    config.micro_batches = 8;
    config.max_ep = trial % 4 == 3 ? 2 : 4;
    config.reduction = trial % 4 < 2 ? NestReduction::Stage : trial % 4 == 2 ? NestReduction::PerLayer : NestReduction::Overlapped;
    for (bool aware : {true, false}) {
      SCOPED_TRACE(testing::Message() << "trial " << trial << (aware ? " nest" : " nest-unaware"));
      const std::optional<NestSearch> found = search_equal_to_brute_force(w, cluster, config, aware);
      if (!found) continue;
      EXPECT_LE(found->plan.ep, config.max_ep);
      EXPECT_EQ(plan_problem(w.by_tensor_parallel.at(1), found->plan, cluster), "");
      spread += found->plan.ep > 1;
    }
  }
  EXPECT_GT(spread, 0);
}

// Per-layer pricing counts only the layers that have gradients of each kind: a layer with no
// parameters, one whose parameters are all experts' and mixed ones; the DP equals brute force.
TEST(Nest, PerLayerPricingCountsOnlyLayersWithGradients) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 4; ++trial) {
    LayerWorkload w = random_workload(rng, 5);
    w.by_tensor_parallel.erase(2);
    auto& layers = w.by_tensor_parallel.at(1).layers;
    for (std::size_t i = 1; i < layers.size(); ++i) {
      layers[i].experts = 4;
      layers[i].parameter_bytes *= 4;
      layers[i].expert_parameter_bytes = (i == 2 ? 1.0 : 0.75) * layers[i].parameter_bytes;  // layer 2: experts only
    }
    layers[0].parameter_bytes = 0;  // no gradient at all
    const Cluster cluster = two_servers(trial % 2 ? 1e12 : 3e9);
    NestConfig config;
    config.micro_batches = 8;
    config.reduction = NestReduction::PerLayer;
    for (bool aware : {true, false}) {
      SCOPED_TRACE(testing::Message() << "trial " << trial << (aware ? " nest" : " nest-unaware"));
      search_equal_to_brute_force(w, cluster, config, aware);
    }
  }
}

// Searching both GPU orders is the better of searching each. A model whose gradients dwarf its
// activations keeps its replicas inside a server (NEST's order): 4 layers of 3 ms and 100 MB of
// parameters, 1 kB activations, 8 GPUs in 2 servers (NVLink 100 GB/s, Ethernet 1 GB/s), 8
// micro-batches: 2 stages of 4 replicas, each stage in a server, take (6 ms + a 1 kB send) x
// (2 + 1) + a ring all-reduce of 200 MB among 4 NVLink GPUs (3 ms) = 21.05 ms; with the stages
// inside a server the replicas reduce over Ethernet.
TEST(Nest, BothOrdersAreTheBetterOfEach) {
  const LayerWorkload w = uniform_chain(4, 1e8, 1e3);
  const Cluster cluster = two_servers(1e12, 100e9, 1e9);
  NestConfig config;
  config.micro_batches = 8;
  std::map<NestOrders, NestSearch> found;
  for (NestOrders orders : {NestOrders::Both, NestOrders::TpDpPp, NestOrders::TpPpDp}) {
    config.orders = orders;
    found[orders] = nest_search(w, cluster, config, true);
  }
  const double both = found[NestOrders::Both].estimate.time_per_batch;
  EXPECT_DOUBLE_EQ(both, std::min(found[NestOrders::TpDpPp].estimate.time_per_batch,
                                  found[NestOrders::TpPpDp].estimate.time_per_batch));
  EXPECT_NEAR(both, 21.05 * ms, 0.01 * ms);
  EXPECT_EQ(found[NestOrders::Both].plan.gpus, gpus_in_order(1, 2, 4, GpuOrder::TpDpPp));
  EXPECT_GT(found[NestOrders::TpPpDp].estimate.time_per_batch, 1.4 * both);
}

TEST(Nest, NeverWorseThanNestUnawareByItsOwnEstimate) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 8; ++trial) {
    const LayerWorkload w = random_workload(rng, 8);
    const Cluster cluster = two_servers(1e12, 100e9, trial % 2 ? 1e9 : 10e9);
    NestConfig config;
    config.micro_batches = 16;
    const NestSearch aware = nest_search(w, cluster, config, true);
    const NestSearch unaware = nest_search(w, cluster, config, false);
    const NestEstimate unaware_on_real =
        nest_estimate(w.by_tensor_parallel.at(unaware.plan.tp), unaware.plan, NestNetwork::aware(cluster));
    EXPECT_LE(aware.estimate.time_per_batch, unaware_on_real.time_per_batch * (1 + 1e-12)) << trial;
    // The unaware planner believes every pair is NVLink: its own estimate is optimistic.
    EXPECT_LE(unaware.estimate.time_per_batch, unaware_on_real.time_per_batch * (1 + 1e-12)) << trial;
  }
}

// Hand-derived: 4 layers of 1 ms forward, 2 ms backward and 1 GB of parameters, nothing sent
// between layers, 8 micro-batches, 2 GPUs of one server at 100 GB/s, ample memory, no ZeRO.
TEST(Nest, HandDerivedPipelineBeatsReplicasWhenParametersDominate) {
  const LayerWorkload w = uniform_chain(4, 1e9, 0);
  const Cluster cluster = one_server(2, 1e12, 100e9);
  NestConfig config;
  config.micro_batches = 8;
  config.zero = false;
  // Two stages of 2 layers: 6 ms x (8 + 1) = 54 ms. Two replicas of 4 layers: 12 ms x 4 + a ring
  // all-reduce of 4 GB over 100 GB/s (2 x 1 x 2 GB / 100 GB/s = 40 ms) = 88 ms. One GPU: 96 ms.
  const NestSearch found = nest_search(w, cluster, config, true);
  EXPECT_EQ(found.plan.pp, 2);
  EXPECT_EQ(found.plan.dp, 1);
  EXPECT_NEAR(found.estimate.time_per_batch, 54 * ms, 1e-12);
}

// reduction: per-layer prices a collective per layer. 4 layers of 1 ms forward, 2 ms backward
// and 1 MB of parameters, nothing sent between layers, 8 micro-batches, 2 GPUs of one server at
// 100 GB/s with 1 ms of latency, no ZeRO. Two replicas: 4 x 12 ms + a ring all-reduce of 2 ranks,
// 2 (alpha + S/2B): by NEST's stage pricing one of 4 MB, 2.04 ms, 50.04 ms in all; per layer four
// of 1 MB, 4 x 2.01 ms, 56.04 ms. Two stages: 6 ms x (8 + 1) = 54 ms, no reduction. So NEST's
// pricing takes the replicas, per-layer the stages.
TEST(Nest, PerLayerReductionsPayTheLatencyOfEachBucket) {
  const LayerWorkload w = uniform_chain(4, 1e6, 0);
  NvlinkServersConfig c;
  c.gpus = 2;
  c.gpus_per_server = 2;
  c.nvlink_bandwidth = 100e9;
  c.nvlink_latency = 0.5e-3;  // per link: 1 ms from GPU to GPU
  c.gpu_memory = 1e12;
  const Cluster cluster = make_nvlink_servers(c);
  NestConfig config;
  config.micro_batches = 8;
  config.zero = false;
  const NestSearch stage = nest_search(w, cluster, config, true);
  EXPECT_EQ(stage.plan.dp, 2);
  EXPECT_NEAR(stage.estimate.time_per_batch, 50.04 * ms, 1e-12);
  config.reduction = NestReduction::PerLayer;
  const NestSearch per_layer = nest_search(w, cluster, config, true);
  EXPECT_EQ(per_layer.plan.pp, 2);
  EXPECT_NEAR(per_layer.estimate.time_per_batch, 54 * ms, 1e-12);
  EXPECT_NEAR(nest_estimate(w.by_tensor_parallel.at(1), stage.plan, NestNetwork::aware(cluster), NestReduction::PerLayer)
                  .time_per_batch,
              56.04 * ms, 1e-12);
  // The option, by name.
  auto planner = make_planner("nest", YAML::Load("{micro_batches: 8, zero: false, reduction: per-layer}"), "t.yaml",
                              "strategies[0]");
  EXPECT_EQ(planner->plan(w, cluster).plan.pp, 2);
  // Overlapped, each layer's all-reduce (2.01 ms) starts when its last backward is done (the
  // last micro-batch's backward runs layer 3 at 0-2 ms, 2 at 2-4, 1 at 4-6, 0 at 6-8): they end
  // at 4.01, 6.02, 8.03 and 10.04 ms, 2.04 ms after the backward: the replicas' 48 + 2.04 ms.
  config.reduction = NestReduction::Overlapped;
  const NestSearch overlapped = nest_search(w, cluster, config, true);
  EXPECT_EQ(overlapped.plan.dp, 2);
  EXPECT_NEAR(overlapped.estimate.time_per_batch, 50.04 * ms, 1e-12);
  EXPECT_NEAR(overlapped.estimate.gradient_reduction, 2.04 * ms, 1e-12);
}

TEST(Nest, AModelThatFitsNowhereSaysWhy) {
  std::mt19937 rng(1);
  const LayerWorkload w = random_workload(rng, 4);
  const Cluster cluster = two_servers(1e6);  // 1 MB GPUs
  const NestSearch found = nest_search(w, cluster, {}, true);
  EXPECT_NE(found.why_none.find("largest layer"), std::string::npos) << found.why_none;
  auto planner = make_planner("nest", YAML::Node(), "t.yaml", "strategies[0]");
  EXPECT_THROW(planner->plan(w, cluster), InfeasibleProblem);
}

// Each layer fits a GPU alone, but 4 layers do not fit on 2 GPUs: the reason names the stages.
TEST(Nest, TooFewGpusForTheStagesSaysSo) {
  // 1e8 parameter bytes: 8e8 bytes with gradients and Adam's states; two layers need 1.6e9.
  const LayerWorkload w = uniform_chain(4, 1e8, 0);
  const NestSearch found = nest_search(w, one_server(2, 1e9), {}, true);
  EXPECT_NE(found.why_none.find("the 2 GPUs hold at most 2 stages of 1 GPU at tensor width 1,"), std::string::npos)
      << found.why_none;
  EXPECT_EQ(found.why_none.find("largest layer"), std::string::npos) << found.why_none;
}

// The stages the GPUs hold depend on the width: said for each width searched, not for the widest
// alone (8 GPUs hold 8 stages at width 1, not "1 stages"). 8 layers of 1.5e8 parameter bytes at
// width 1, 1.5e8 / t at width t: 1.2e9 bytes a layer at width 1 (more than a GPU), 1.5e8 at
// width 8, and 9.6e9 in all, 1.2e9 per GPU however the 8 GPUs share it, ZeRO or not.
TEST(Nest, TheStagesTheGpusHoldAreSaidAtEveryWidth) {
  LayerWorkload w = uniform_chain(8, 1.5e8, 0);
  for (int t : {2, 4, 8}) {
    LayerModel m = w.by_tensor_parallel.at(1);
    m.tensor_parallel = t;
    for (Layer& l : m.layers) l.parameter_bytes /= t;
    w.by_tensor_parallel[t] = m;
  }
  for (bool aware : {true, false}) {
    const NestSearch found = nest_search(w, one_server(8, 1e9), {}, aware);
    EXPECT_NE(found.why_none.find("each of its 8 layers fits a GPU alone"), std::string::npos) << found.why_none;
    EXPECT_NE(found.why_none.find("the 8 GPUs hold at most 8 stages of 1 GPU at tensor width 1, 4 stages of 2 GPUs at "
                                  "tensor width 2, 2 stages of 4 GPUs at tensor width 4, 1 stage of 8 GPUs at tensor "
                                  "width 8, and no split"),
              std::string::npos)
        << found.why_none;
    EXPECT_EQ(found.why_none.find(" 1 stages"), std::string::npos) << found.why_none;
  }
}

// Replica 1 of a 3-stage plan on two servers of 4 GPUs holds GPUs 3, 4, 5: its first send
// crosses Ethernet, and that replica sets the stage load.
TEST(Nest, TheSlowestReplicaSetsTheStageLoad) {
  const LayerWorkload w = uniform_chain(3, 1e6, 5e6);
  const LayerModel& m = w.by_tensor_parallel.at(1);
  const Cluster cluster = two_servers(1e12);  // NVLink 100 GB/s + 1 us, Ethernet 5 GB/s + 5 us
  ParallelPlan plan;
  plan.pp = 3;
  plan.dp = 2;
  plan.micro_batches = 4;
  plan.stage_starts = {0, 1, 2};
  const NestEstimate e = nest_estimate(m, plan, NestNetwork::aware(cluster));
  // Stage 1 of replica 1 (GPU 4): 3 ms, 5 MB to GPU 5 over NVLink (50 us + two 1 us links), its
  // gradient back to GPU 3 over Ethernet (1 ms + NIC up and down, 5 us each). Replica 0's worst
  // stage is 3 + 2 x 0.052 = 3.104 ms.
  EXPECT_NEAR(e.max_stage_load, (3 + 0.052 + 1.010) * ms, 1e-12);
  NestConfig config;
  config.micro_batches = 8;
  const NestSearch found = nest_search(w, cluster, config, true);
  EXPECT_NEAR(found.dp_time_per_batch, found.estimate.time_per_batch, 1e-12);
}

// GPipe holds every micro-batch's activations, 1F1B at most the stages after it: with 1 GB
// stashed per micro-batch and layer, 4 micro-batches on 2 stages of 3 GB GPUs, stage 0 holds 2 GB
// under 1F1B (fits) and 4 GB under GPipe (does not). The time is (m + S - 1) x load for both.
TEST(Nest, TheEstimateHoldsGPipesActivations) {
  LayerModel m;
  m.name = "stash";
  for (int l = 0; l < 2; ++l) m.layers.push_back({"l" + std::to_string(l), 1e-3, 2e-3, 1e6, 1e9, 0});
  ParallelPlan plan;
  plan.pp = 2;
  plan.micro_batches = 4;
  plan.stage_starts = {0, 1};
  const Cluster cluster = one_server(2, 3e9);
  const NestNetwork network = NestNetwork::aware(cluster);
  const NestEstimate one_f_one_b = nest_estimate(m, plan, network);
  plan.schedule = PipelineSchedule::GPipe;
  const NestEstimate gpipe = nest_estimate(m, plan, network);
  EXPECT_TRUE(one_f_one_b.fits);
  EXPECT_FALSE(gpipe.fits);
  EXPECT_GT(gpipe.memory_ratio, 4e9 / 3e9);
  EXPECT_EQ(gpipe.time_per_batch, one_f_one_b.time_per_batch);
}

TEST(Nest, Gpt3OnNestsFatTreeOfOneThousandTwentyFourGpus) {
  const std::string root = std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared/workloads/nest";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " is absent: NEST's workloads are not available";
  const LayerWorkload w = load_nest_workload(root + "/gpt3.tpuv4_fatTree.mbs1.json");
  FatTreeConfig f;
  f.k = 8;
  f.servers = 128;
  f.gpus_per_server = 8;
  f.nic_bandwidth = 100.0 * (1ull << 30);
  f.gpu_memory = 64.0 * (1ull << 30);
  const Cluster cluster = make_fat_tree(f);
  ASSERT_EQ(cluster.num_devices(), 1024);
  const NestSearch found = nest_search(w, cluster, {}, true);
  ASSERT_TRUE(found.why_none.empty()) << found.why_none;
  EXPECT_TRUE(found.estimate.fits);
  EXPECT_LE(static_cast<long>(found.plan.tp) * found.plan.pp * found.plan.dp, 1024);
  EXPECT_EQ(plan_problem(w.by_tensor_parallel.at(found.plan.tp), found.plan, cluster), "");
}

}  // namespace

namespace {

// Every option of nest takes effect (threads: the same plan on one thread as on all).
TEST(Nest, EveryOptionTakesEffect) {
  std::mt19937 rng(11);
  const LayerWorkload w = random_workload(rng, 6);
  const Cluster cluster = two_servers(1.5e9);
  auto plan_with = [&](const std::string& yaml) {
    auto planner = make_planner("nest", YAML::Load(yaml), "t.yaml", "strategies[0]");
    const PlanResult r = planner->plan(w, cluster);
    return plan_to_json(r.plan).dump() + r.details.dump();
  };
  const std::string base = plan_with("{micro_batches: 16}");
  EXPECT_NE(plan_with("{micro_batches: 64}"), base);
  EXPECT_NE(plan_with("{micro_batches: 16, max_tp: 1}"), base);
  EXPECT_NE(plan_with("{micro_batches: 16, zero: false}"), base);
  EXPECT_NE(plan_with("{micro_batches: 16, gradient_algorithm: halving-doubling}"), base);
  EXPECT_EQ(plan_with("{micro_batches: 16, threads: 1}"), base);
  EXPECT_NE(plan_with("{micro_batches: 16, orders: tp-pp-dp}"), base);
  EXPECT_NE(base.find("\"tp\":2"), std::string::npos) << base;
  // max_ep, on a model whose experts nest spreads: 1 keeps them whole.
  const LayerWorkload moe = random_moe_workload(rng, 5);
  const Cluster small = two_servers(1e12);  // the experts reduced over fewer replicas, 1/ep each
  auto ep_of = [&](const std::string& yaml) {
    return make_planner("nest", YAML::Load(yaml), "t.yaml", "strategies[0]")->plan(moe, small).plan.ep;
  };
  EXPECT_GT(ep_of("{micro_batches: 16}"), 1);
  EXPECT_EQ(ep_of("{micro_batches: 16, max_ep: 1}"), 1);
}

}  // namespace

namespace {

// Hierarchical reductions need as many of the group's GPUs in every server: replica counts that
// break that are skipped, not a crash (5 replicas of 1 GPU on servers of 4).
TEST(Nest, AlgorithmsAGroupCannotRunAreSkipped) {
  std::mt19937 rng(3);
  const LayerWorkload w = random_workload(rng, 4);
  NestConfig config;
  config.micro_batches = 16;
  config.gradient_algorithm = CollectiveAlgorithm::Hierarchical;
  const Cluster cluster = two_servers(1e12);
  const NestSearch found = nest_search(w, cluster, config, true);
  ASSERT_TRUE(found.why_none.empty()) << found.why_none;
  EXPECT_TRUE(std::isfinite(found.estimate.time_per_batch));
  EXPECT_NE(found.plan.dp, 5);
}

// Tree all-reduces with ZeRO: the reduce-scatters and all-gathers are NCCL's rings
// (zero_collective_algorithm), in the estimate as in the compiled plan, so the plans the search
// returns with ZeRO run. Memory tight enough that some chosen plans shard.
TEST(Nest, TreeReductionsWithZeroArePricedAndRunAsRings) {
  const Cluster cluster = two_servers(1.5e9);
  const NestNetwork network = NestNetwork::aware(cluster);
  const std::vector<DeviceId> group = {0, 1, 4, 5};
  for (int zero = 1; zero <= 3; ++zero)
    EXPECT_DOUBLE_EQ(network.reduction(group, 1e8, CollectiveAlgorithm::Tree, zero),
                     network.reduction(group, 1e8, CollectiveAlgorithm::Ring, zero));
  EXPECT_NE(network.reduction(group, 1e8, CollectiveAlgorithm::Tree, 0), network.reduction(group, 1e8, CollectiveAlgorithm::Ring, 0));
  std::mt19937 rng(2024);
  int sharded = 0;
  for (int trial = 0; trial < 8; ++trial) {
    const LayerWorkload w = random_workload(rng, 6);
    auto planner = make_planner("nest", YAML::Load("{micro_batches: 8, gradient_algorithm: tree}"), "t.yaml", "strategies[0]");
    try {
      const PlanResult r = planner->plan(w, cluster);  // throws std::runtime_error on a plan that cannot run
      if (r.plan.zero > 0 && r.plan.dp > 1) ++sharded;
    } catch (const InfeasibleProblem&) {
    }
  }
  EXPECT_GT(sharded, 0);
}

// Experts the plan spreads (a zoo model, built for ep 1): the estimate charges each expert layer's
// four all-to-alls and reduces the experts' gradients among the replicas holding the same ones.
// By hand, one expert layer (f 1 ms, b 2 ms, 10 MB to all-to-all, 2 experts of 20 MB, 10 MB of
// other weights) on 2 GPUs at 10 GB/s, ep 2, one micro-batch: each all-to-all sends 5 MB each way,
// 0.5 ms, so the stage takes 3 + 4 x 0.5 = 5 ms; the 10 MB of dense gradients are all-reduced by
// ring over both replicas (2 x 5 MB: 1 ms), the experts' (10 MB each) among one replica: nothing.
// 6 ms, as the evaluator runs the compiled plan.
TEST(Nest, TheEstimateChargesTheExpertsAPlanSpreads) {
  LayerModel m;
  m.name = "moe";
  Layer layer;
  layer.name = "experts";
  layer.forward_s = 1 * ms;
  layer.backward_s = 2 * ms;
  layer.parameter_bytes = 30e6;
  layer.expert_parameter_bytes = 20e6;
  layer.expert_alltoall_bytes = 10e6;
  layer.experts = 2;
  m.layers.push_back(layer);
  const Cluster cluster = testutil::dedicated_mesh(2, 10e9, 0.0, 1e12);
  ParallelPlan plan;
  plan.dp = plan.ep = 2;
  ASSERT_EQ(plan_problem(m, plan, cluster), "");
  const NestEstimate e = nest_estimate(m, plan, NestNetwork::aware(cluster));
  EXPECT_NEAR(e.max_stage_load, 5 * ms, 1e-12);
  EXPECT_NEAR(e.gradient_reduction, 1 * ms, 1e-12);
  EXPECT_NEAR(e.time_per_batch, 6 * ms, 1e-12);
  EXPECT_NEAR(testutil::run_all_engines(compile_plan(m, plan, cluster).graph, cluster).evaluator, 6 * ms, 1e-12);
}

}  // namespace

namespace {

// The time limit: a search cut short says which limit passed and returns nothing, never a plan
// that reads as the optimum. Every limit either stops the search with that error or gives the
// plan (and case count) of the search with no limit.
TEST(Nest, TheTimeLimitStopsTheSearchAndNamesTheLimit) {
  std::mt19937 rng(5);
  const LayerWorkload w = random_workload(rng, 12);
  const Cluster cluster = two_servers(1e12);
  for (const std::string name : {"nest", "nest-unaware"}) {
    SCOPED_TRACE(name);
    const PlanResult full = make_planner(name, YAML::Load("{time_limit: inf}"), "t.yaml", "strategies[0]")->plan(w, cluster);
    const std::string full_plan = plan_to_json(full.plan).dump();
    int stopped = 0;
    for (const char* limit : {"1us", "10us", "100us", "1ms", "10ms", "1s"}) {
      SCOPED_TRACE(limit);
      auto planner = make_planner(name, YAML::Load(fmt::format("{{time_limit: {}}}", limit)), "t.yaml", "strategies[0]");
      try {
        const PlanResult r = planner->plan(w, cluster);
        EXPECT_EQ(plan_to_json(r.plan).dump(), full_plan);
        EXPECT_EQ(r.details["cases"], full.details["cases"]);
        EXPECT_EQ(r.details["estimate"], full.details["estimate"]);
      } catch (const InfeasibleProblem& e) {
        ADD_FAILURE() << "a search cut short is not a proof that nothing fits: " << e.what();
      } catch (const std::runtime_error& e) {
        ++stopped;
        const std::string what = e.what();
        EXPECT_NE(what.find(name + ": the time limit ("), std::string::npos) << what;
        EXPECT_NE(what.find(fmt::format(" passed before the {} cases were searched", full.details["cases"].get<long>())),
                  std::string::npos)
            << what;
      }
    }
    EXPECT_GE(stopped, 1);  // 1 us is past before the first of thousands of cases is done
    try {
      make_planner(name, YAML::Load("{time_limit: 1us}"), "t.yaml", "strategies[0]")->plan(w, cluster);
      ADD_FAILURE() << "1 us is not enough";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("the time limit (1e-06 s) passed"), std::string::npos) << e.what();
    }
  }
}

// A layer-level point whose planner finds no plan that fits is infeasible, with the planner's
// reason, as an operator-graph point is; one cut short by its time limit failed (it proves
// nothing). Llama 2 7B's 7e9 parameters need about 112 GB with Adam: 8 GPUs of 1 GiB hold none.
TEST(Nest, AScenarioWhoseModelFitsNowhereIsInfeasible) {
  namespace fs = std::filesystem;
  const fs::path dir = testutil::fresh_temp_dir("nest-infeasible-scenario");
  std::ofstream(dir / "s.yaml") << "workload: {model: llama2-7b}\n"
                                   "cluster: {type: full-mesh, gpus: 8, bandwidth: 10GB/s, gpu_memory: 1GiB}\n"
                                   "strategies:\n"
                                   "  - nest\n"
                                   "  - nest-unaware\n"
                                   "  - {name: nest, label: late, options: {time_limit: 1us}}\n"
                                   "simulation: {engine: evaluator}\n";
  SweepOptions options;
  options.output = (dir / "out").string();
  options.progress = false;
  std::ostringstream log;
  const SweepSummary summary = run_sweep(load_sweep((dir / "s.yaml").string()), options, log);
  EXPECT_EQ(summary.infeasible, 2u) << log.str();
  EXPECT_EQ(summary.failed, 1u) << log.str();
  std::map<std::string, nlohmann::json> by_label;
  std::ifstream in(dir / "out" / "results.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    by_label[j["label"]] = j;
  }
  for (const std::string label : {"nest", "nest-unaware"}) {
    SCOPED_TRACE(label);
    ASSERT_TRUE(by_label.contains(label)) << log.str();
    EXPECT_EQ(by_label[label]["status"], "infeasible") << by_label[label].dump();
    const std::string why = by_label[label]["error"];
    EXPECT_NE(why.find(label + ": no plan of llama2-7b fits"), std::string::npos) << why;
    EXPECT_NE(why.find("1 GiB"), std::string::npos) << why;  // the memory a GPU has
    EXPECT_NE(why.find("at tensor width 8, ZeRO 3 over 1 replica), but the 8 GPUs hold at most 8 stages of 1 GPU at "
                       "tensor width 1,"),
              std::string::npos)
        << why;
  }
  ASSERT_TRUE(by_label.contains("late")) << log.str();
  EXPECT_EQ(by_label["late"]["status"], "failed") << by_label["late"].dump();
  EXPECT_NE(by_label["late"]["error"].get<std::string>().find("the time limit (1e-06 s) passed"), std::string::npos)
      << by_label["late"].dump();
  fs::remove_all(dir);
}

}  // namespace
