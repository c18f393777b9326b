#pragma once
// `placesim goodput`: what failures cost a long run, the checkpoint interval that costs least, and
// the wall time to train a token budget (sim/models/goodput.h, docs/shared-clusters.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace placesim {

struct GoodputArgs {
  std::string cluster;                  // a cluster file: its GPUs, servers and cables
  long long gpus = 0, gpus_per_server = 8, links = -1;  // links -1: the cluster's cables, or 2 per GPU
  std::string checkpoint, restart;      // durations
  std::vector<std::string> intervals;   // durations; empty: the optimum
  std::string work;                     // failure-free training time of the run
  std::string tokens, tokens_per_second;  // or a token budget at a throughput (counts: 15T, 2.5M)
  std::string mtbf_gpu, mtbf_server, mtbf_link;  // per-component MTBFs replacing Meta's
  double weibull_shape = 1;
  long long spares = -1;                // spare servers; -1: as many as needed
  std::string repair;                   // a server's repair time, with --spares
  double server_swap_share = -1;        // of a server's own failures, those that take it out; -1: Meta's
  int runs = 1000;
  long long seed = 1;
  bool json = false;
};

CLI::App* add_goodput_command(CLI::App& app, GoodputArgs& args);
int cmd_goodput(const GoodputArgs& args);

}  // namespace placesim
