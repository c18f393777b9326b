// The goodput model (sim/models/goodput.h): the formulas by hand, the exact optimum against Young's
// and Daly's approximations, and the event-by-event runs against Daly's expected wall time, the
// independent path.
#include <cmath>
#include <gtest/gtest.h>
#include <limits>

#include "sim/models/goodput.h"
#include "test_util.h"

namespace placesim {
namespace {
using testutil::run_cli;

TEST(Goodput, MetasRatesGiveItsInterruptionsOnItsCluster) {
  // 16,384 GPUs, 2,048 servers and two cables a GPU: 419 interruptions in 54 days.
  const FailureRates r = llama3_failure_rates();
  const double mtbf = job_mtbf({16384, 2048, 2 * 16384}, r);
  EXPECT_NEAR(mtbf, 54.0 * 86400 / 419, 1e-6);
  // GPUs 58.7% of them, cables 35.
  EXPECT_NEAR(16384 * r.per_gpu * mtbf, 0.587, 1e-12);
  EXPECT_NEAR(2 * 16384 * r.per_link * 54 * 86400, 35, 1e-9);
  // Nothing fails: never.
  EXPECT_TRUE(std::isinf(job_mtbf({8, 1, 16}, FailureRates{})));
}

TEST(Goodput, YoungAndDalyByHand) {
  // d = 60 s, M = 3,600 s: Young sqrt(2 * 60 * 3600) = sqrt(432,000) = 657.267 s; Daly with
  // x = d / 2M = 1/120: 657.267 (1 + sqrt(1/120) / 3 + 1/1080) - 60 = 617.876 s.
  EXPECT_NEAR(young_interval(60, 3600), 657.2671, 1e-3);
  EXPECT_NEAR(daly_interval(60, 3600), 617.876, 1e-3);
  // A checkpoint of twice the MTBF or more: Daly's interval is the MTBF.
  EXPECT_EQ(daly_interval(7200, 3600), 3600);
  // Daly's wall time: M e^(R/M) (e^((tau + d)/M) - 1) W / tau; with tau + d = M and R = 0,
  // M (e - 1) W / tau.
  EXPECT_NEAR(daly_wall_time(1000, 900, 100, 0, 1000), 1000 * (std::exp(1.0) - 1) * 1000 / 900, 1e-9);
  // Without failures: the checkpoints alone.
  EXPECT_DOUBLE_EQ(daly_wall_time(1000, 100, 10, 50, std::numeric_limits<double>::infinity()), 1100);
}

TEST(Goodput, TheExactOptimumIsDalysWhereDalysSeriesHolds) {
  for (const double m : {3600.0, 11135.0, 86400.0}) {
    const double d = 60;
    const double tau = optimal_interval(d, m);
    // The derivative's root: e^((tau + d)/M) (1 - tau/M) = 1.
    EXPECT_NEAR(std::exp((tau + d) / m) * (1 - tau / m), 1.0, 1e-9);
    // No interval beside it does better.
    const double best = daly_wall_time(1e6, tau, d, 600, m);
    EXPECT_LT(best, daly_wall_time(1e6, 0.9 * tau, d, 600, m));
    EXPECT_LT(best, daly_wall_time(1e6, 1.1 * tau, d, 600, m));
    // Daly's series within 1% of it; Young's above both (it leaves out the -d).
    EXPECT_NEAR(daly_interval(d, m) / tau, 1.0, 0.01);
    EXPECT_GT(young_interval(d, m), tau);
  }
}

TEST(Goodput, SimulatedRunsMatchDalysWallTimeWithinOnePercent) {
  // Failures often (M = 4 intervals), a checkpoint and a restart that matter: Daly's formula is exact
  // for this process, the runs draw it event by event.
  RunInputs in{/*work_s=*/100 * 3600.0, /*interval_s=*/3600, /*checkpoint_s=*/300, /*restart_s=*/1800, /*mtbf_s=*/4 * 3600};
  const SimulatedRun run = simulate_run(in, 4000, 7);
  const double daly = daly_wall_time(in.work_s, in.interval_s, in.checkpoint_s, in.restart_s, in.mtbf_s);
  EXPECT_NEAR(run.mean_wall_s / daly, 1.0, 0.01);
  EXPECT_LT(run.stderr_wall_s / daly, 0.003);  // the tolerance is not all noise
  // Poisson failures over the whole wall time (Wald): E[failures] = E[wall] / M.
  EXPECT_NEAR(run.mean_failures / (run.mean_wall_s / in.mtbf_s), 1.0, 0.02);
  // Weibull failures of shape 0.7, with the same mean (clustered after restarts, then long quiet
  // spells): Daly's formula no longer holds, here by over 2% (measured: 5% less).
  in.weibull_shape = 0.7;
  EXPECT_GT(std::abs(simulate_run(in, 4000, 7).mean_wall_s / daly - 1), 0.02);
  // No failures: the checkpoints alone, the last segment shorter.
  in.mtbf_s = std::numeric_limits<double>::infinity();
  in.work_s = 2.5 * 3600;
  EXPECT_DOUBLE_EQ(simulate_run(in, 3, 1).mean_wall_s, 2.5 * 3600 + 3 * 300);
}

TEST(Goodput, SpareServersThatRunOutMakeTheJobWaitForRepairs) {
  // Meta's breakdown: GPUs 58.7% of the failures, and a third of the servers' own 32.9% host
  // hardware (78% hardware in all, less the GPUs' and the network's 8.4%): 69.6% take a server out.
  const RunShape meta{16384, 2048, 2 * 16384};
  EXPECT_NEAR(llama3_server_swap_share(), (0.78 - 0.587 - 35.0 / 419) / (1 - 0.587 - 35.0 / 419), 1e-12);
  EXPECT_NEAR(swap_probability(meta, llama3_failure_rates(), llama3_server_swap_share()), 0.696, 1e-3);
  RunInputs in{/*work_s=*/100 * 3600.0, /*interval_s=*/3600, /*checkpoint_s=*/300, /*restart_s=*/1800, /*mtbf_s=*/4 * 3600};
  in.repair_s = 6 * 3600;
  in.swap_probability = 1;
  // No spare: every failure waits for its own server's repair, exactly.
  in.spares = 0;
  const SimulatedRun none = simulate_run(in, 500, 3);
  EXPECT_GT(none.mean_failures, 20);
  EXPECT_NEAR(none.mean_wait_s, none.mean_failures * in.repair_s, 1e-6 * none.mean_wait_s);
  // As many spares as failures: nobody waits, and the wall time is Daly's (a spare always ready).
  in.spares = 1000;
  const SimulatedRun plenty = simulate_run(in, 4000, 3);
  EXPECT_EQ(plenty.mean_wait_s, 0.0);
  EXPECT_NEAR(plenty.mean_wall_s, daly_wall_time(in.work_s, in.interval_s, in.checkpoint_s, in.restart_s, in.mtbf_s),
              0.01 * plenty.mean_wall_s);
  // Spares repaired at once change nothing: the swaps draw from a stream of their own.
  in.spares = 4;
  in.repair_s = 0;
  RunInputs without = in;
  without.spares = -1;
  EXPECT_DOUBLE_EQ(simulate_run(in, 200, 5).mean_wall_s, simulate_run(without, 200, 5).mean_wall_s);
  in.repair_s = 6 * 3600;
  // One spare, repairs of 1.5 MTBFs: some failures find it in use and wait, less than without.
  in.spares = 1;
  const SimulatedRun one = simulate_run(in, 500, 3);
  EXPECT_GT(one.mean_wait_s, 0.0);
  EXPECT_LT(one.mean_wait_s, 0.5 * none.mean_wait_s);
  EXPECT_LT(one.mean_wall_s, none.mean_wall_s);
  EXPECT_GT(one.mean_wall_s, plenty.mean_wall_s);
}

TEST(Goodput, TheCommandPrintsTheJobAndRefusesBadCounts) {
  std::string out;
  ASSERT_EQ(run_cli("goodput --gpus 16384 --checkpoint 1min --restart 10min --work 54d --runs 200", out), 0) << out;
  EXPECT_NE(out.find("the job's MTBF: 3.093 h"), std::string::npos) << out;
  EXPECT_NE(out.find("GPUs 58.7%"), std::string::npos) << out;
  EXPECT_NE(out.find("best checkpoint interval:"), std::string::npos) << out;
  EXPECT_EQ(run_cli("goodput --gpus 8 --checkpoint 1min --restart 10min --tokens 15X --tokens-per-second 1M", out), 2) << out;
  EXPECT_NE(out.find("--tokens"), std::string::npos) << out;
  EXPECT_NE(out.find("15X"), std::string::npos) << out;
  EXPECT_EQ(run_cli("goodput --gpus 8 --checkpoint 60 --restart 10min --work 1d", out), 2) << out;
  EXPECT_NE(out.find("--checkpoint"), std::string::npos) << out;
  // Spares: with a repair time, a column of the time spent waiting for them.
  ASSERT_EQ(run_cli("goodput --gpus 16384 --checkpoint 30s --restart 3min --work 54d --runs 50 --spares 8 --repair 2d", out), 0) << out;
  EXPECT_NE(out.find("spares: 8 server(s), a failed one back after 2 d; 69.6% of the job's failures take a server out"), std::string::npos)
      << out;
  EXPECT_NE(out.find("waiting for spares"), std::string::npos) << out;
  EXPECT_EQ(run_cli("goodput --gpus 8 --checkpoint 1min --restart 10min --work 1d --spares 2", out), 2) << out;
  EXPECT_NE(out.find("--repair: missing: --spares N needs --repair D"), std::string::npos) << out;
}

}  // namespace
}  // namespace placesim
