#include "goodput_cli.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli_conventions.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/models/goodput.h"
#include "topologies/registry.h"

namespace placesim {
namespace {

const std::string kCommandLine = "command line";

// A duration flag: with its unit, as every quantity placesim reads (units.h).
double duration_flag(const std::string& text, const char* flag) {
  refuse_bare_quantity(text, "duration", "30s, 10min, 2h or 54d", kCommandLine, flag);
  return parse_duration(text, kCommandLine, flag);
}

// A count with an optional decimal suffix: 15T, 2.5M, 4096.
double parse_count(const std::string& text, const std::string& field) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = used ? text.substr(used) : "";
  const double scale = suffix.empty()                     ? 1
                       : suffix == "k" || suffix == "K"   ? 1e3
                       : suffix == "M"                    ? 1e6
                       : suffix == "B" || suffix == "G"   ? 1e9
                       : suffix == "T"                    ? 1e12
                                                          : 0;
  if (!used || scale == 0 || !(value > 0) || !std::isfinite(value))
    throw InputError(kCommandLine, field, fmt::format("expected a positive count, optionally with K, M, B or T (15T), got '{}'", text));
  return value * scale;
}

// "3.09 h", "18.6 min", "40.2 d": durations of hours and days in the units people plan them in.
std::string long_duration(double s) {
  if (!std::isfinite(s)) return "never";
  if (s >= 2 * 86400) return fmt::format("{:.4g} d", s / 86400);
  if (s >= 2 * 3600) return fmt::format("{:.4g} h", s / 3600);
  if (s >= 120) return fmt::format("{:.4g} min", s / 60);
  return format_duration(s);
}

struct Job {
  RunShape shape;
  FailureRates rates;
  double checkpoint_s = 0, restart_s = 0, work_s = 0, tokens = 0, tokens_per_s = 0;
};

Job job_from_args(const GoodputArgs& a) {
  Job job;
  if (!a.cluster.empty()) {
    const Cluster cluster = load_cluster_file(a.cluster);
    job.shape.gpus = cluster.num_devices();
    job.shape.servers = cluster.num_servers();
    std::int64_t cables = 0;
    for (const Link& l : cluster.links()) cables += l.logical ? 0 : 1;
    job.shape.links = cables / 2;  // a full-duplex cable is two links
  }
  if (a.gpus > 0) {
    if (!a.cluster.empty() && a.gpus > job.shape.gpus)
      throw InputError(kCommandLine, "--gpus", fmt::format("{} GPUs: the cluster {} has {}", a.gpus, a.cluster, job.shape.gpus));
    const double share = job.shape.gpus > 0 ? static_cast<double>(a.gpus) / static_cast<double>(job.shape.gpus) : 0;
    job.shape.links = a.cluster.empty() ? 2 * a.gpus : std::llround(static_cast<double>(job.shape.links) * share);
    // The cluster's GPUs per server, or the flag's without one.
    const long long per_server = a.cluster.empty() ? a.gpus_per_server : std::max<long long>(1, job.shape.gpus / job.shape.servers);
    job.shape.gpus = a.gpus;
    job.shape.servers = (a.gpus + per_server - 1) / per_server;
  }
  if (job.shape.gpus == 0) throw InputError(kCommandLine, "--gpus", "give the job's GPUs (--gpus N) or a --cluster file");
  if (a.links >= 0) job.shape.links = a.links;
  job.rates = llama3_failure_rates();
  std::vector<std::string> given;
  const auto rate = [&](const std::string& mtbf, const char* flag, double& out) {
    if (mtbf.empty()) return;
    const double seconds = duration_flag(mtbf, flag);
    if (!(seconds > 0)) throw InputError(kCommandLine, flag, mtbf + ": an MTBF must be positive");
    out = 1.0 / seconds;
    given.push_back(flag);
  };
  rate(a.mtbf_gpu, "--mtbf-gpu", job.rates.per_gpu);
  rate(a.mtbf_server, "--mtbf-server", job.rates.per_server);
  rate(a.mtbf_link, "--mtbf-link", job.rates.per_link);
  if (!given.empty()) job.rates.source = fmt::format("{} as given, the rest from {}", fmt::join(given, ", "), job.rates.source);
  job.checkpoint_s = duration_flag(a.checkpoint, "--checkpoint");
  job.restart_s = duration_flag(a.restart, "--restart");
  if (!a.work.empty()) {
    job.work_s = duration_flag(a.work, "--work");
  } else {
    job.tokens = parse_count(a.tokens, "--tokens");
    job.tokens_per_s = parse_count(a.tokens_per_second, "--tokens-per-second");
    job.work_s = job.tokens / job.tokens_per_s;
  }
  if (!(job.work_s > 0)) throw InputError(kCommandLine, "--work", "the run's training time must be positive");
  return job;
}

struct Row {
  double interval_s, daly_wall_s;
  SimulatedRun simulated;
};

}  // namespace

CLI::App* add_goodput_command(CLI::App& app, GoodputArgs& a) {
  auto* c = app.add_subcommand("goodput",
                               "what failures cost a long run: goodput, the best checkpoint interval (Young, Daly, exact), the wall "
                               "time of a token budget (docs/shared-clusters.md)");
  c->add_option("--cluster", a.cluster, "a cluster file: the job's GPUs, servers and cables (default: --gpus alone)")
      ->check(CLI::ExistingFile);
  c->add_option("--gpus", a.gpus, "GPUs of the job (default: the cluster's)")->check(whole_number(1, 1LL << 30));
  c->add_option("--gpus-per-server", a.gpus_per_server, "without a cluster: GPUs per server")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--links", a.links, "cables whose failure stops the job (default: the cluster's, or 2 per GPU)")
      ->check(whole_number(0, 1LL << 40));
  c->add_option("--checkpoint", a.checkpoint, "time one checkpoint stops training, e.g. 30s")->required();
  c->add_option("--restart", a.restart, "from a failure until training resumes (detect, reschedule, reload), e.g. 10min")->required();
  c->add_option("--interval", a.intervals, "training between checkpoints, comma-separated, each a row beside the best")->delimiter(',');
  auto* work = c->add_option("--work", a.work, "the run's training time without failures, e.g. 54d");
  auto* tokens = c->add_option("--tokens", a.tokens, "or a token budget, e.g. 15T, at --tokens-per-second");
  auto* rate = c->add_option("--tokens-per-second", a.tokens_per_second, "the job's throughput (plan prints it), e.g. 2.5M");
  work->excludes(tokens)->excludes(rate);
  tokens->needs(rate);
  rate->needs(tokens);
  c->add_option("--mtbf-gpu", a.mtbf_gpu, "one GPU's mean time between failures (default: Meta's Llama 3 run's)");
  c->add_option("--mtbf-server", a.mtbf_server, "one server's, GPUs aside (default: Meta's)");
  c->add_option("--mtbf-link", a.mtbf_link, "one cable's (default: Meta's)");
  c->add_option("--weibull-shape", a.weibull_shape, "shape of the times between failures in the simulated runs (1: exponential, Daly's)")
      ->check(number_in({0.1, 10}))
      ->capture_default_str();
  c->add_option("--spares", a.spares, "spare servers; a failure that takes a server out waits for a repaired one when none is left "
                                      "(default: always one ready, as Daly assumes)")
      ->check(whole_number(0, 1LL << 30));
  c->add_option("--repair", a.repair, "with --spares: a failed server's time back, e.g. 3d");
  c->add_option("--server-swap-share", a.server_swap_share,
                "of a server's own failures (GPUs aside), the share that take it out (default: Meta's, 0.33)")
      ->check(number_in({0, 1}));
  c->add_option("--runs", a.runs, "simulated runs per interval")->check(whole_number(1, 1000000))->capture_default_str();
  c->add_option("--seed", a.seed, "seed of the simulated runs")->check(whole_number(0))->capture_default_str();
  c->add_flag("--json", a.json, "one JSON object");
  return c;
}

int cmd_goodput(const GoodputArgs& a) {
  if (a.work.empty() && a.tokens.empty())
    throw InputError(kCommandLine, "--work", "give the run's length: --work 54d, or --tokens 15T --tokens-per-second 2.5M");
  const Job job = job_from_args(a);
  const double mtbf = job_mtbf(job.shape, job.rates);
  const double best = optimal_interval(job.checkpoint_s, mtbf);
  std::vector<double> intervals;
  for (const std::string& text : a.intervals) {
    intervals.push_back(duration_flag(text, "--interval"));
    if (!(intervals.back() > 0)) throw InputError(kCommandLine, "--interval", text + ": an interval must be positive");
  }
  // The best interval is always a row: given intervals are read beside it.
  intervals.push_back(std::isfinite(best) && best > 0 ? best : job.work_s);
  std::vector<Row> rows;
  if ((a.spares >= 0) != !a.repair.empty())
    throw InputError(kCommandLine, a.spares >= 0 ? "--repair" : "--spares",
                     a.spares >= 0 ? "missing: --spares N needs --repair D, a failed server's time back (e.g. 2d)"
                                   : "missing: --repair D needs --spares N, the spare servers it repairs for");
  const double repair_s = a.repair.empty() ? 0 : duration_flag(a.repair, "--repair");
  const double swap_share = a.server_swap_share >= 0 ? a.server_swap_share : llama3_server_swap_share();
  const double p_swap = swap_probability(job.shape, job.rates, swap_share);
  for (double interval : intervals) {
    RunInputs in{job.work_s, interval, job.checkpoint_s, job.restart_s, mtbf, a.weibull_shape,
                 static_cast<int>(a.spares), repair_s, p_swap};
    rows.push_back({interval, daly_wall_time(job.work_s, interval, job.checkpoint_s, job.restart_s, mtbf),
                    simulate_run(in, a.runs, static_cast<std::uint64_t>(a.seed))});
  }
  const double rate_total = 1 / mtbf;
  const auto share = [&](double n, double r) { return std::isfinite(mtbf) ? n * r / rate_total : 0.0; };
  const double gpu_share = share(static_cast<double>(job.shape.gpus), job.rates.per_gpu);
  const double server_share = share(static_cast<double>(job.shape.servers), job.rates.per_server);
  const double link_share = share(static_cast<double>(job.shape.links), job.rates.per_link);
  if (a.json) {
    nlohmann::json j = {{"gpus", job.shape.gpus}, {"servers", job.shape.servers}, {"links", job.shape.links},
                        {"failure_source", job.rates.source}, {"mtbf_s", mtbf},
                        {"failure_share", {{"gpu", gpu_share}, {"server", server_share}, {"link", link_share}}},
                        {"checkpoint_s", job.checkpoint_s}, {"restart_s", job.restart_s}, {"work_s", job.work_s},
                        {"optimal_interval_s", best}, {"young_interval_s", young_interval(job.checkpoint_s, mtbf)},
                        {"daly_interval_s", daly_interval(job.checkpoint_s, mtbf)}, {"weibull_shape", a.weibull_shape}};
    for (const Row& r : rows)
      j["intervals"].push_back({{"interval_s", r.interval_s}, {"daly_wall_s", r.daly_wall_s}, {"daly_goodput", job.work_s / r.daly_wall_s},
                                {"simulated_wall_s", r.simulated.mean_wall_s}, {"simulated_stderr_s", r.simulated.stderr_wall_s},
                                {"simulated_goodput", job.work_s / r.simulated.mean_wall_s},
                                {"simulated_failures", r.simulated.mean_failures}, {"simulated_wait_for_spares_s", r.simulated.mean_wait_s},
                                {"runs", r.simulated.runs}});
    if (a.spares >= 0) j["spares"] = {{"servers", a.spares}, {"repair_s", repair_s}, {"swap_probability", p_swap}};
    std::cout << j.dump() << "\n";
    return kExitOk;
  }
  fmt::print("job: {} GPUs, {} server(s), {} cables; failure rates: {}\n", job.shape.gpus, job.shape.servers, job.shape.links,
             job.rates.source);
  fmt::print("  one component's MTBF: GPU {}, server {}, cable {}\n", long_duration(1 / job.rates.per_gpu),
             long_duration(1 / job.rates.per_server), long_duration(1 / job.rates.per_link));
  fmt::print("  the job's MTBF: {} (GPUs {:.1f}%, servers {:.1f}%, cables {:.1f}% of its failures)\n", long_duration(mtbf),
             100 * gpu_share, 100 * server_share, 100 * link_share);
  fmt::print("checkpoint {}, restart {}, training {} without failures", long_duration(job.checkpoint_s), long_duration(job.restart_s),
             long_duration(job.work_s));
  if (job.tokens > 0) fmt::print(" ({:.4g} tokens at {:.4g} tokens/s)", job.tokens, job.tokens_per_s);
  fmt::print("\nbest checkpoint interval: {} (the exact optimum of Daly's model); Young's formula {}, Daly's {}\n",
             long_duration(best), long_duration(young_interval(job.checkpoint_s, mtbf)),
             long_duration(daly_interval(job.checkpoint_s, mtbf)));
  if (a.spares >= 0)
    fmt::print("spares: {} server(s), a failed one back after {}; {:.1f}% of the job's failures take a server out (GPUs, and {:.0f}% "
               "of the servers' own)\n", a.spares, long_duration(repair_s), 100 * p_swap, 100 * swap_share);
  fmt::print("{:>12}  {:>13}  {:>11}  {:>22}  {:>12}  {:>10}{}\n", "interval", "goodput Daly", "wall Daly",
             fmt::format("goodput {} runs", a.runs), "wall runs", "failures", a.spares >= 0 ? "  waiting for spares" : "");
  for (const Row& r : rows) {
    const double g = job.work_s / r.simulated.mean_wall_s;
    const double g_err = g * r.simulated.stderr_wall_s / r.simulated.mean_wall_s;
    const bool is_best = &r == &rows.back();
    fmt::print("{:>12}  {:>12.2f}%  {:>11}  {:>22}  {:>12}  {:>10.2f}{}{}\n", long_duration(r.interval_s), 100 * job.work_s / r.daly_wall_s,
               long_duration(r.daly_wall_s),
               a.runs > 1 ? fmt::format("{:.2f}% +- {:.2f}%", 100 * g, 100 * g_err) : fmt::format("{:.2f}% (one run)", 100 * g),
               long_duration(r.simulated.mean_wall_s), r.simulated.mean_failures,
               a.spares >= 0 ? fmt::format("  {:>18}", long_duration(r.simulated.mean_wait_s)) : std::string(),
               is_best ? "  (best)" : "");
  }
  fmt::print("note: Daly's columns assume exponential failures (a Poisson process); the runs draw failures event by event");
  if (a.weibull_shape != 1) fmt::print(", here Weibull of shape {} (renewed at each restart), where Daly's formula does not hold", a.weibull_shape);
  if (a.spares >= 0) fmt::print("; Daly's assume a spare is always ready, the runs wait for one when none is left");
  fmt::print("\n");
  return kExitOk;
}

}  // namespace placesim
