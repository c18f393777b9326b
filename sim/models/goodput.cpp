#include "sim/models/goodput.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <random>

namespace placesim {

FailureRates llama3_failure_rates() {
  // Llama 3 Herd of Models (Meta, 2024), sec. 3.3.4: 419 unexpected interruptions in a 54-day
  // snapshot on 16,384 H100 GPUs (2,048 servers of 8); 58.7% GPU issues (faulty GPU incl. NVLink,
  // HBM3, SRAM, system processor, thermal); 35 network switch and cable.
  constexpr double kSeconds = 54.0 * 86400.0;
  constexpr double kGpus = 16384, kServers = 2048, kLinks = 2 * kGpus;
  constexpr double kInterruptions = 419, kGpuShare = 0.587, kNetwork = 35;
  const double gpu = kGpuShare * kInterruptions;
  FailureRates r;
  r.per_gpu = gpu / (kGpus * kSeconds);
  r.per_link = kNetwork / (kLinks * kSeconds);
  r.per_server = (kInterruptions - gpu - kNetwork) / (kServers * kSeconds);
  r.source = "Llama 3 405B pre-training (Meta 2024, sec. 3.3.4): 419 unexpected interruptions in 54 days on 16,384 H100s";
  return r;
}

double job_mtbf(const RunShape& shape, const FailureRates& rates) {
  const double rate = static_cast<double>(shape.gpus) * rates.per_gpu + static_cast<double>(shape.servers) * rates.per_server +
                      static_cast<double>(shape.links) * rates.per_link;
  return rate > 0 ? 1.0 / rate : std::numeric_limits<double>::infinity();
}

double llama3_server_swap_share() { return (0.78 - 0.587 - 35.0 / 419.0) / (1 - 0.587 - 35.0 / 419.0); }

double swap_probability(const RunShape& shape, const FailureRates& rates, double server_swap_share) {
  const double gpu = static_cast<double>(shape.gpus) * rates.per_gpu, server = static_cast<double>(shape.servers) * rates.per_server;
  const double total = gpu + server + static_cast<double>(shape.links) * rates.per_link;
  return total > 0 ? (gpu + server_swap_share * server) / total : 0.0;
}

double young_interval(double checkpoint_s, double mtbf_s) { return std::sqrt(2 * checkpoint_s * mtbf_s); }

double daly_interval(double checkpoint_s, double mtbf_s) {
  const double d = checkpoint_s, m = mtbf_s;
  if (d >= 2 * m) return m;
  const double x = d / (2 * m);
  return std::sqrt(2 * d * m) * (1 + std::sqrt(x) / 3 + x / 9) - d;
}

double daly_wall_time(double work_s, double interval_s, double checkpoint_s, double restart_s, double mtbf_s) {
  if (!std::isfinite(mtbf_s)) return work_s * (interval_s + checkpoint_s) / interval_s;
  const double m = mtbf_s;
  return m * std::exp(restart_s / m) * std::expm1((interval_s + checkpoint_s) / m) * work_s / interval_s;
}

double optimal_interval(double checkpoint_s, double mtbf_s) {
  // d/dtau [(e^((tau+d)/M) - 1) / tau] = 0  <=>  g(tau) = e^((tau+d)/M) (1 - tau/M) - 1 = 0, and g
  // falls from e^(d/M) - 1 > 0 at 0 to -1 at M (g' = -(tau/M^2) e^(...) < 0): one root in (0, M).
  const double m = mtbf_s, d = checkpoint_s;
  if (!std::isfinite(m)) return std::numeric_limits<double>::infinity();
  if (d <= 0) return 0;
  const auto g = [&](double tau) { return std::exp((tau + d) / m) * (1 - tau / m) - 1; };
  double lo = 0, hi = m;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * m; ++i) {
    const double mid = 0.5 * (lo + hi);
    (g(mid) > 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

SimulatedRun simulate_run(const RunInputs& in, int runs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double k = in.weibull_shape;
  // The Weibull of shape k with mean M has scale M / Gamma(1 + 1/k).
  std::weibull_distribution<double> time_to_failure(k, in.mtbf_s / std::tgamma(1 + 1 / k));
  const bool fails = std::isfinite(in.mtbf_s);
  const auto draw = [&] { return fails ? time_to_failure(rng) : std::numeric_limits<double>::infinity(); };
  const auto segments = static_cast<std::int64_t>(std::ceil(in.work_s / in.interval_s - 1e-9));
  double sum = 0, sum_sq = 0, failures = 0, waited = 0;
  // The swaps draw from their own stream: spares change no failure's time.
  std::mt19937_64 swap_rng(seed ^ 0x9e3779b97f4a7c15ULL);
  std::bernoulli_distribution takes_server(std::clamp(in.swap_probability, 0.0, 1.0));
  for (int r = 0; r < runs; ++r) {
    // Spares left, and when each server in repair comes back.
    int spares = in.spares;
    std::priority_queue<double, std::vector<double>, std::greater<>> repaired;
    // A failure at time t: with a spare, the job restarts on it; without, it waits for the first repair.
    const auto failed_at = [&](double& t) {
      ++failures;
      if (in.spares < 0 || !takes_server(swap_rng)) return;
      for (; !repaired.empty() && repaired.top() <= t; repaired.pop()) ++spares;
      if (spares > 0) {
        --spares;
      } else if (repaired.empty()) {  // no spare at all: the failed server itself, once repaired
        waited += in.repair_s;
        t += in.repair_s;
        return;
      } else {
        waited += repaired.top() - t;
        t = repaired.top();
        repaired.pop();
      }
      repaired.push(t + in.repair_s);
    };
    double t = 0, until_failure = draw();
    for (std::int64_t s = 0; s < segments; ++s) {
      const double train = s + 1 < segments ? in.interval_s : in.work_s - static_cast<double>(segments - 1) * in.interval_s;
      const double length = train + in.checkpoint_s;
      while (until_failure < length) {  // the segment is lost; restart, a failure during it restarts it
        t += until_failure;
        failed_at(t);
        for (until_failure = draw(); until_failure < in.restart_s; until_failure = draw()) {
          t += until_failure;
          failed_at(t);
        }
        t += in.restart_s;
        until_failure -= in.restart_s;
      }
      t += length;
      until_failure -= length;
    }
    sum += t;
    sum_sq += t * t;
  }
  SimulatedRun out;
  out.runs = runs;
  out.mean_wall_s = sum / runs;
  const double variance = runs > 1 ? std::max(0.0, (sum_sq - sum * sum / runs) / (runs - 1)) : 0.0;
  out.stderr_wall_s = std::sqrt(variance / runs);
  out.mean_failures = failures / runs;
  out.mean_wait_s = waited / runs;
  return out;
}

}  // namespace placesim
