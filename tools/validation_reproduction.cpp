#include "validation_reproduction.h"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "scenarios/runner/report.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"
#include "sim/engines/engine.h"
#include "sim/io/placement_io.h"
#include "sim/models/layer_zoo.h"
#include "sim/plans/parallel_plan.h"
#include "topologies/registry.h"

namespace placesim {

namespace fs = std::filesystem;

fs::path validation_file(const std::string& name) {
  const char* env = std::getenv("PLACESIM_SHARED_DIR");
  const fs::path root = env && *env ? fs::path(env) : data_dir().parent_path() / "shared";
  const fs::path file = root / "validation" / name;
  if (!fs::exists(file))
    throw InputError(file.string(), "", "the measurements are absent (they come with ../shared; set PLACESIM_SHARED_DIR to its folder)");
  return file;
}

namespace {

constexpr const char* kTable = "korthikanti2022_table5.csv";
constexpr const char* kHeader =
    "model,heads,hidden,layers,vocab,sequence,tp,pp,dp,gpus,global_batch,micro_batch,virtual_stages,iteration_s_full_recompute,"
    "iteration_s_sequence_parallel_selective_recompute";

struct TableRow {
  std::string model;
  std::map<std::string, double> v;  // the numeric columns by name
};

std::vector<TableRow> read_table(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  if (line != kHeader) throw InputError(file.string(), "header", fmt::format("expected {}, got '{}'", kHeader, line));
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string f; std::getline(header, f, ',');) names.push_back(f);
  std::vector<TableRow> rows;
  for (int number = 2; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    std::stringstream fields(line);
    TableRow row;
    std::size_t i = 0;
    for (std::string f; std::getline(fields, f, ','); ++i) {
      if (i == 0) {
        row.model = f;
        continue;
      }
      if (i >= names.size()) throw InputError(file.string(), fmt::format("line {}", number), "more columns than the header");
      try {
        row.v[names[i]] = std::stod(f);
      } catch (const std::exception&) {
        throw InputError(file.string(), fmt::format("line {}, {}", number, names[i]), fmt::format("expected a number, got '{}'", f));
      }
    }
    if (i != names.size()) throw InputError(file.string(), fmt::format("line {}", number), fmt::format("expected {} columns", names.size()));
    rows.push_back(std::move(row));
  }
  return rows;
}

// One row in one mode: GPT with Megatron's layout (the transformer layers evenly over the pp x v
// stages, the embedding with the first, the head with the last), fp16, attention unfused (the
// 2022 Megatron-LM's softmax kernels), on {preset: dgx-a100, servers: gpus / 8}.
ValidationRun run_row(const TableRow& r, bool selective, const std::string& gpu) {
  auto count = [&](const char* key) { return static_cast<int>(std::lround(r.v.at(key))); };
  models::TransformerShape shape;
  shape.name = shape.description = r.model;
  shape.layers = count("layers");
  shape.hidden = count("hidden");
  shape.heads = shape.kv_heads = count("heads");
  shape.ffn = 4 * shape.hidden;
  shape.vocab = count("vocab");
  shape.sequence = count("sequence");
  models::LayerZooOptions o;
  o.micro_batch = count("micro_batch");
  o.gpu = gpu;
  o.precision = models::Precision::Fp16;
  o.fused_attention = false;
  o.recompute = selective ? models::Recompute::Selective : models::Recompute::Full;
  o.sequence_parallel = selective;
  ParallelPlan plan;
  plan.tp = count("tp");
  plan.pp = count("pp");
  plan.dp = count("dp");
  plan.micro_batches = count("global_batch") / (o.micro_batch * plan.dp);
  plan.virtual_stages = count("virtual_stages");
  plan.sequence_parallel = selective;
  plan.blocking_sends = true;  // Megatron-LM's pipeline sends wait for their arrival
  const int stages = plan.pp * plan.virtual_stages;
  if (shape.layers % stages != 0)
    throw InputError(kTable, r.model, fmt::format("{} layers do not split evenly over {} stages", shape.layers, stages));
  plan.stage_starts.push_back(0);
  for (int s = 1; s < stages; ++s) plan.stage_starts.push_back(1 + s * (shape.layers / stages));
  const LayerWorkload w = models::build_layer_model(shape, o, {plan.tp}, kTable);
  const int servers = std::max(1, count("gpus") / 8);
  const Cluster cluster = cluster_from_yaml(YAML::Load(fmt::format("{{preset: dgx-a100, servers: {}}}", servers)), "the dgx-a100 preset");
  if (const std::string why = plan_problem(w, plan, cluster); !why.empty()) throw InputError(kTable, r.model, why);
  const CompiledPlan c = compile_plan(w, plan, cluster, CollectiveDetail::Condensed);
  const double t = *run_engines(c.graph, cluster, EngineSet::of({kFlow}), RunOrder::Fcfs).latency(kFlow);
  const LayerModel& m = w.by_tensor_parallel.at(plan.tp);
  ValidationRun run;
  run.model = r.model;
  run.mode = selective ? "selective + sequence parallel" : "full recompute";
  run.gpus = count("gpus");
  run.measured_s = r.v.at(selective ? "iteration_s_sequence_parallel_selective_recompute" : "iteration_s_full_recompute");
  run.predicted_s = t;
  run.mfu = m.model_flops * plan.micro_batches * plan.dp / t / run.gpus / models::kernel_model_gpu(gpu, kTable).dense(models::Precision::Fp16);
  return run;
}

}  // namespace

std::vector<ValidationRun> run_validation(const std::string& gpu) {
  const fs::path file = validation_file(kTable);
  std::vector<ValidationRun> runs;
  std::cout << fmt::format("{:<14} {:<30} {:>6} | {:>9} {:>9} {:>7} {:>6}\n", "model", "mode", "GPUs", "measured", "placesim", "error",
                           "MFU");
  for (bool selective : {false, true})
    for (const TableRow& r : read_table(file)) {
      runs.push_back(run_row(r, selective, gpu));
      const ValidationRun& v = runs.back();
      std::cout << fmt::format("{:<14} {:<30} {:>6} | {:>8.2f}s {:>8.2f}s {:>+6.1f}% {:>5.1f}%\n", v.model, v.mode, v.gpus, v.measured_s,
                               v.predicted_s, 100 * (v.predicted_s / v.measured_s - 1), 100 * v.mfu)
                << std::flush;
    }
  return runs;
}

int reproduce_validation(const std::string& output, bool plots, const std::string& gpu) {
  const fs::path dir = output.empty() ? fs::path("results/validation") : fs::path(output);
  fs::create_directories(dir);
  std::cout << fmt::format("# {} ({}); GPU {}, flow engine, collectives condensed\n", kValidationDescription,
                           validation_file(kTable).string(), gpu);
  const std::vector<ValidationRun> runs = run_validation(gpu);
  std::string csv = "model,mode,gpus,measured_s,predicted_s,error,mfu\n";
  std::map<std::string, std::pair<double, double>> by_mode;  // mode: sum of |error|, worst
  std::map<std::string, int> rows;
  for (const ValidationRun& v : runs) {
    const double error = v.predicted_s / v.measured_s - 1;
    csv += fmt::format("{},{},{},{:.4f},{:.4f},{:.5f},{:.4f}\n", v.model, v.mode, v.gpus, v.measured_s, v.predicted_s, error, v.mfu);
    auto& [sum, worst] = by_mode[v.mode];
    sum += std::abs(error);
    worst = std::max(worst, std::abs(error));
    ++rows[v.mode];
  }
  for (const auto& [mode, e] : by_mode)
    std::cout << fmt::format("# {}: mean absolute error {:.1f}%, worst {:.1f}% (targets 5% and 10%)\n", mode, 100 * e.first / rows[mode],
                             100 * e.second);
  std::cout << "# fitted to these rows once: the GEMM and memory efficiencies of the a100 preset (docs/validation.md)\n" << std::flush;
  write_file_atomically((dir / "validation.csv").string(), csv);
  std::cerr << fmt::format("reproduce validation: wrote {}\n", (dir / "validation.csv").string());
  if (!plots) return 0;
  return draw_reproduction("plot_validation.py", dir / "validation.csv", dir, "reproduce validation");
}

int draw_reproduction(const std::string& script, const fs::path& csv, const fs::path& dir, const std::string& command) {
  const std::string path = (data_dir() / "tools" / script).string();
  const int status = run_python({path, csv.string(), "--out", dir.string()});
  if (status == 0) return 0;
  std::cerr << fmt::format("{}: plots failed ({} exited with {}); tools/install-deps.sh installs python3-matplotlib\n", command,
                           plot_python(), status);
  return 1;
}

}  // namespace placesim
