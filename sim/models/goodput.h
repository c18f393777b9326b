#pragma once
// Failures and goodput of a long training run: how much of the wall time trains, the checkpoint
// interval that maximises it, and the wall time to train a token budget (`placesim goodput`,
// docs/shared-clusters.md).
//
// The run is a sequence of segments: `interval` seconds of training, then a checkpoint of
// `checkpoint` seconds. A failure anywhere in a segment loses the segment; the job then takes
// `restart` seconds (detection, rescheduling onto a spare, reloading the last checkpoint) before it
// trains again, and a failure during the restart starts the restart over. Components fail
// independently at constant rates, so the job's failures form a Poisson process of rate
// gpus * per_gpu + servers * per_server + links * per_link (one failed part stops a synchronous job).
// Under these assumptions Daly's expected wall time (Daly 2006, "A higher order estimate of the
// optimum checkpoint interval for restart dumps", eq. 13) is exact; `simulate_run` draws the same
// process event by event, an independent path that also takes Weibull failures, where the formula
// does not hold.
#include <cstdint>
#include <string>
#include <vector>

namespace placesim {

// Failures per second of one component of each kind.
struct FailureRates {
  double per_gpu = 0, per_server = 0, per_link = 0;
  std::string source;  // where the numbers came from, one line
};

// Meta's Llama 3 405B pre-training (Llama 3 Herd of Models, 2024, sec. 3.3.4 and table 5): 419
// unexpected interruptions in 54 days on 16,384 H100s in 2,048 servers. GPUs (faulty GPU, HBM3,
// SRAM, GPU system processor, NVLink: 58.7%) per GPU; network switches and cables (35) per link,
// over two cables per GPU (its NIC's and its share of the switch tiers above: an assumption, the
// paper gives no cable count); the rest (host maintenance, software, CPU, memory, SSD, power, ...)
// per server.
FailureRates llama3_failure_rates();

struct RunShape {
  std::int64_t gpus = 0, servers = 0, links = 0;
};

// Mean time between the job's failures, seconds (infinite when nothing fails).
double job_mtbf(const RunShape& shape, const FailureRates& rates);

// The optimum interval of Young (1974): sqrt(2 * checkpoint * mtbf).
double young_interval(double checkpoint_s, double mtbf_s);
// Daly's higher-order estimate (2006, eq. 37): sqrt(2 d M) [1 + sqrt(d / 2M) / 3 + (d / 2M) / 9] - d
// for d < 2M, else M.
double daly_interval(double checkpoint_s, double mtbf_s);
// Daly's expected wall time (eq. 13) of `work_s` seconds of training in segments of `interval_s`:
// M e^(R/M) (e^((tau + d)/M) - 1) work / tau.
double daly_wall_time(double work_s, double interval_s, double checkpoint_s, double restart_s, double mtbf_s);
// The interval that minimises daly_wall_time, exactly (its derivative's root, by bisection):
// the optimum Young's and Daly's formulas approximate.
double optimal_interval(double checkpoint_s, double mtbf_s);

struct RunInputs {
  double work_s = 0;        // failure-free training time of the whole run
  double interval_s = 0;    // training between checkpoints
  double checkpoint_s = 0;  // one checkpoint's cost
  double restart_s = 0;     // from a failure until training resumes
  double mtbf_s = 0;        // the job's mean time between failures
  // Shape of the Weibull distribution of the times between failures (1: exponential, Daly's
  // assumption; < 1: failures cluster after each restart, as new and repaired parts do).
  double weibull_shape = 1.0;
  // Spare servers (-1: as many as needed, Daly's assumption). A failure takes a server out with
  // probability `swap_probability`: the job restarts on a spare while the failed server is repaired
  // (`repair_s`), and waits for the first repaired one when no spare is left.
  int spares = -1;
  double repair_s = 0;
  double swap_probability = 0;
};

// The share of a server's own failures (GPUs aside) that take it out for repair: Meta attributes
// about 78% of Llama 3's interruptions to hardware (sec. 3.3.4); taking away the GPUs' 58.7% and
// the network's 8.4% leaves 10.9% of the interruptions, a third of the 32.9% counted per server.
// GPU failures always take their server out, cable failures never (the fabric reroutes).
double llama3_server_swap_share();
// The probability that one of the job's failures takes a server out, from its rates and shape.
double swap_probability(const RunShape& shape, const FailureRates& rates, double server_swap_share);

struct SimulatedRun {
  int runs = 0;
  double mean_wall_s = 0, stderr_wall_s = 0;  // over the runs
  double mean_failures = 0;
  double mean_wait_s = 0;  // waiting for a spare server, per run
};

// `runs` runs drawn event by event (seeded); each failure's time is drawn afresh after every
// restart (the failed part replaced, the job's clock restarted).
SimulatedRun simulate_run(const RunInputs& inputs, int runs, std::uint64_t seed);

}  // namespace placesim
