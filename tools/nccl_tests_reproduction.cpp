#include "nccl_tests_reproduction.h"
#include "validation_reproduction.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "scenarios/runner/report.h"
#include "sim/collectives/collective_steps.h"
#include "sim/collectives/nccl.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"
#include "sim/io/placement_io.h"
#include "topologies/registry.h"

namespace placesim {

namespace {

namespace fs = std::filesystem;

struct Row {
  std::string op;
  double bytes = 0, measured_s = 0, simulated_s = 0;
  std::string ran;
};

fs::path measurements() { return validation_file("nccl-tests_nd-h100-v5_1x8.csv"); }

std::vector<Row> simulate(const fs::path& file) {
  const Cluster cluster = cluster_from_yaml(YAML::Load("{preset: dgx-h100, servers: 1}"), "the dgx-h100 preset");
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  if (line != "bytes,all_reduce_time_us,all_gather_time_us")
    throw InputError(file.string(), "header", fmt::format("expected bytes,all_reduce_time_us,all_gather_time_us, got '{}'", line));
  std::vector<Row> rows;
  for (int number = 2; std::getline(in, line); ++number) {
    std::vector<double> v;
    std::stringstream fields(line);
    for (std::string f; std::getline(fields, f, ',');) {
      try {
        v.push_back(std::stod(f));
      } catch (const std::exception&) {
        throw InputError(file.string(), fmt::format("line {}", number), fmt::format("expected numbers, got '{}'", f));
      }
    }
    if (v.size() != 3) throw InputError(file.string(), fmt::format("line {}", number), "expected 3 columns");
    for (auto [op, measured] : {std::pair{CollectiveOp::AllReduce, v[1]}, {CollectiveOp::AllGather, v[2]}}) {
      CollectiveSpec s;
      s.op = op;
      s.tuned = true;
      for (int g = 0; g < 8; ++g) s.group.push_back(g);
      s.bytes = v[0];
      const CollectiveSpec ran = nccl_resolved(s, cluster);
      const double t = *run_collective_steps(ran, cluster, EngineSet::of({kFlow})).latency(kFlow);
      rows.push_back({std::string(enum_name<CollectiveOp>(kCollectiveOpNames, op)), v[0], measured * 1e-6, t,
                      collective_choice_text(ran, cluster)});
    }
  }
  return rows;
}

double busbw(const Row& r, double seconds) {
  return r.bytes / seconds * bus_bandwidth_factor(r.op == "all-reduce" ? CollectiveOp::AllReduce : CollectiveOp::AllGather, 8);
}

}  // namespace

int reproduce_nccl_tests(const std::string& output, bool plots) {
  const fs::path file = measurements();
  const fs::path dir = output.empty() ? fs::path("out/nccl-tests") : fs::path(output);
  fs::create_directories(dir);
  const std::vector<Row> rows = simulate(file);
  std::string csv = "op,bytes,measured_us,simulated_us,error,measured_busbw_GBps,simulated_busbw_GBps,ran\n";
  std::cout << fmt::format("# {} ({}), flow engine, algorithm auto\n", kNcclTestsDescription, file.string());
  std::cout << fmt::format("{:>12} | {:>10} {:>10} {:>7} {:>14} | {:>10} {:>10} {:>7} {:>14}\n", "size", "all-reduce", "placesim",
                           "error", "ran", "all-gather", "placesim", "error", "ran");
  double worst_large = 0, worst_small = 0;
  for (std::size_t i = 0; i + 1 < rows.size(); i += 2) {
    std::string line = fmt::format("{:>12.0f}", rows[i].bytes);
    for (const Row& r : {rows[i], rows[i + 1]}) {
      const double error = r.simulated_s / r.measured_s - 1;
      (r.bytes >= (1 << 20) ? worst_large : worst_small) = std::max(r.bytes >= (1 << 20) ? worst_large : worst_small, std::abs(error));
      line += fmt::format(" | {:>8.2f}us {:>8.2f}us {:>+6.1f}% {:>14}", r.measured_s * 1e6, r.simulated_s * 1e6, 100 * error, r.ran);
      csv += fmt::format("{},{:.0f},{:.4f},{:.4f},{:.5f},{:.4f},{:.4f},{}\n", r.op, r.bytes, r.measured_s * 1e6, r.simulated_s * 1e6,
                         error, busbw(r, r.measured_s) / 1e9, busbw(r, r.simulated_s) / 1e9, r.ran);
    }
    std::cout << line << "\n";
  }
  std::cout << fmt::format("# largest error: {:.1f}% from 1 MiB up (tolerance 10%), {:.1f}% below (tolerance 25%); the "
                           "costs were fitted to these rows once (docs/collectives.md)\n",
                           100 * worst_large, 100 * worst_small)
            << std::flush;
  write_file_atomically((dir / "nccl-tests.csv").string(), csv);
  std::cerr << fmt::format("reproduce nccl-tests: wrote {}\n", (dir / "nccl-tests.csv").string());
  if (!plots) return 0;
  return draw_reproduction("plot_nccl_tests.py", dir / "nccl-tests.csv", dir, "reproduce nccl-tests");
}

}  // namespace placesim
