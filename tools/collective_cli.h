#pragma once
// `placesim collective`: one collective on a cluster over a range of sizes, per engine beside the
// closed form, in the convention of nccl-tests (size, time, algorithm and bus bandwidth).
#include <CLI/CLI.hpp>
#include <string>

namespace placesim {

struct CollectiveArgs {
  std::string cluster, op = "all-reduce", algorithm = "auto", protocol = "auto", bytes = "1MiB:1GiB", engine = "auto",
              group, model = "auto", type = "float";
  int channels = 0;  // 0: NCCL's (one per rank of a server across servers)
  double factor = 2;
  int gpus = 0, chunks = 1, root = 0;
  bool json = false;
  bool nccl_tests = false;  // the table as nccl-tests prints it, for one engine
  bool full_graph = false;  // message models: every rank built (default: one block of servers standing for all alike)
};

// Declares the command and its options on `app`.
CLI::App* add_collective_command(CLI::App& app, CollectiveArgs& args);
// Runs it: the table (or JSON lines) on stdout. Throws InputError on bad input.
int cmd_collective(const CollectiveArgs& args);

}  // namespace placesim
