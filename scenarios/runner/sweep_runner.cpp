#include "scenarios/runner/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <unistd.h>

#include "scenarios/runner/jobs.h"
#include "scenarios/runner/pool.h"
#include "scenarios/runner/results_store.h"
#include "scenarios/runner/runner.h"
#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

namespace fs = std::filesystem;

PointRecord point_header(const SweepPlan& plan, const SweepPoint& point) {
  const Scenario& scenario = plan.variants[point.variant];
  const StrategySpec& spec = scenario.strategies[point.strategy];
  PointRecord r;
  r.key = point.key;
  r.index = point.index;
  r.scenario = plan.name;
  r.graph = source_name(scenario);
  r.gpus = scenario.cluster.num_devices();
  r.cluster = scenario.cluster.description;
  for (const auto& [path, value] : plan.variant_values[point.variant]) r.sweep.emplace_back(path, value);
  if (std::any_of(plan.axes.begin(), plan.axes.end(), [](const SweepAxis& a) { return a.path == "strategy"; }))
    r.sweep.emplace_back("strategy", spec.label);
  r.label = spec.label;
  r.strategy = spec.name;
  r.seed = point.seed;
  r.repetition = point.repetition;
  r.engines = scenario.simulation.engines;
  r.order = scenario.simulation.order;
  r.collectives = scenario.simulation.collectives;
  return r;
}

namespace {

PointRecord failed_record(const SweepPlan& plan, const SweepPoint& point, const std::string& error) {
  PointRecord r = point_header(plan, point);
  r.status = PointStatus::Failed;
  r.reason = error;
  return r;
}

// What every record of job `j` of a point of jobs starts with: the point's header, keyed and
// labelled by the job, with its graph or workload, its GPUs and the allocation as a swept value.
PointRecord job_header(const SweepPlan& plan, const SweepPoint& point, std::size_t j) {
  const Scenario& scenario = plan.variants[point.variant];
  const JobSpec& job = scenario.jobs[j];
  PointRecord r = point_header(plan, point);
  r.key = job_record_key(point.key, job.name);
  r.label = job.name;
  r.strategy = job.strategy.name;
  r.graph = source_name(job.graph, job.workload);
  r.gpus = job.gpu_list.empty() ? job.gpus : static_cast<int>(job.gpu_list.size());
  r.sweep.emplace_back("allocation", scenario.strategies[point.strategy].label);
  return r;
}

// The point's failure as its records: per job for a scenario of jobs.
std::vector<PointRecord> failed_records(const SweepPlan& plan, const SweepPoint& point, const std::string& error) {
  const Scenario& scenario = plan.variants[point.variant];
  if (scenario.jobs.empty()) return {failed_record(plan, point, error)};
  std::vector<PointRecord> out;
  for (std::size_t j = 0; j < scenario.jobs.size(); ++j) {
    PointRecord r = job_header(plan, point, j);
    r.status = PointStatus::Failed;
    r.reason = error;
    out.push_back(std::move(r));
  }
  return out;
}

// The keys of the point's records.
std::vector<std::string> record_keys(const SweepPlan& plan, const SweepPoint& point) {
  const Scenario& scenario = plan.variants[point.variant];
  if (scenario.jobs.empty()) return {point.key};
  std::vector<std::string> out;
  for (const JobSpec& job : scenario.jobs) out.push_back(job_record_key(point.key, job.name));
  return out;
}

// What a worker sends instead of a record when it cannot write into the results folder.
constexpr const char* kOutputErrorKey = "output_error";

// Runs in the worker process; the record travels to the runner as its JSON line, or an output
// error as {"output_error": {"file", "reason"}}, which stops the run.
// A point runs on a graph (placement strategies) or on a layer-level workload (planners).
struct PointInput {
  const Graph* graph = nullptr;
  const LayerWorkload* workload = nullptr;
  const std::vector<std::string>* warnings = nullptr;
  std::span<const JobInput> jobs;  // a scenario of jobs: each job's
};

// A scenario of jobs: one record per job, sent as a JSON array. Each is keyed by the point's key
// and the job, labelled by the job, with the allocation as a swept value.
std::string run_jobs(const SweepPlan& plan, const SweepPoint& point, const PointInput& input, const std::string& dir) {
  const Scenario& scenario = plan.variants[point.variant];
  const StrategySpec allocation = point_strategy(plan, point);
  const std::vector<PointOutcome> outcomes = run_jobs_point(scenario, allocation, input.jobs, dir, point.file_stem);
  nlohmann::ordered_json records = nlohmann::ordered_json::array();
  for (std::size_t j = 0; j < outcomes.size(); ++j) {
    PointRecord r = job_header(plan, point, j);
    if (outcomes[j].compiled)
      r.graph_size = PointRecord::GraphSize{outcomes[j].compiled->first, outcomes[j].compiled->second, {}};
    r.status = outcomes[j].status;
    r.reason = outcomes[j].reason;
    r.measurement = outcomes[j].measurement;
    records.push_back(to_json(r));
  }
  return dump_json(records);
}

std::string run_point(const SweepPlan& plan, const SweepPoint& point, const PointInput& input, const std::string& dir) {
  const Scenario& scenario = plan.variants[point.variant];
  PointOutcome out;
  if (!scenario.jobs.empty()) {
    try {
      return run_jobs(plan, point, input, dir);
    } catch (const OutputError& e) {
      nlohmann::ordered_json j;
      j[kOutputErrorKey] = {{"file", e.file()}, {"reason", e.reason()}};
      return dump_json(j);
    } catch (const std::exception& e) {
      // Whatever failed before the jobs ran (the allocation policy, say): every job's record says so.
      nlohmann::ordered_json records = nlohmann::ordered_json::array();
      for (const PointRecord& r : failed_records(plan, point, e.what())) records.push_back(to_json(r));
      return dump_json(records);
    }
  }
  try {
    out = input.workload ? run_plan_point(scenario, point_strategy(plan, point), *input.workload, dir, point.file_stem)
                         : run_strategy_point(scenario, point_strategy(plan, point), *input.graph, dir, point.file_stem);
  } catch (const OutputError& e) {
    nlohmann::ordered_json j;
    j[kOutputErrorKey] = {{"file", e.file()}, {"reason", e.reason()}};
    return dump_json(j);
  }
  PointRecord r = point_header(plan, point);
  if (input.graph)
    r.graph_size = PointRecord::GraphSize{input.graph->num_operators(), input.graph->num_tensors(), *input.warnings};
  else if (out.compiled)  // the execution graph the plan compiled into
    r.graph_size = PointRecord::GraphSize{out.compiled->first, out.compiled->second, *input.warnings};
  r.status = out.status;
  r.reason = out.reason;
  r.measurement = std::move(out.measurement);
  return dump_json(to_json(r));
}

std::string format_eta(double seconds) {
  if (!(seconds >= 0) || seconds > 1e7) return "?";
  const long s = std::lround(seconds);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

// Points done, running and failed, with an ETA: a redrawn bar on a terminal, else plain lines.
class Progress {
 public:
  Progress(std::ostream& out, std::size_t total, bool enabled, std::string prefix)
      : out_(out), total_(total), enabled_(enabled), prefix_(std::move(prefix)),
        tty_(enabled && ::isatty(STDERR_FILENO) && &out == &std::cerr),
        start_(std::chrono::steady_clock::now()) {}

  void started() {
    ++running_;
    starts_.push_back(std::chrono::steady_clock::now());
    draw();
  }
  // `ran`: the point had a worker (started() counted it as running).
  void finished(const PointRecord& record, bool ran) {
    if (ran) {
      --running_;
      if (!starts_.empty()) {
        busy_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - starts_.front()).count();
        ++ran_;
        starts_.pop_front();  // the longest running: an approximation when several run at once
      }
    }
    ++done_;
    if (record.status == PointStatus::Failed || record.status == PointStatus::TimedOut) ++failed_;
    if (!enabled_) return;
    std::string what;
    if (record.status == PointStatus::Infeasible) {
      what = "infeasible: " + record.reason;
    } else if (record.failed()) {
      what = std::string(point_status_name(record.status)) + ": " + record.reason;
    } else if (const auto latency = record.latency()) {
      what = format_duration(*latency);
      if (record.status == PointStatus::Oom) what += " (OOM)";
    } else {
      // No engine ran (simulation.engine estimate): NEST's estimate of the plan.
      const auto estimate = record.measurement->latency(kEstimate);
      what = estimate ? "estimate " + format_duration(*estimate) : std::string("no engine ran");
    }
    const std::string line = fmt::format("{}[{}/{}] {}: {}", prefix_, done_, total_, record.key, what);
    if (tty_) {
      out_ << "\r\x1b[K" << line << "\n";
      draw();
    } else {
      out_ << line << fmt::format("  ({} running, {} failed, ETA {})", running_, failed_, eta()) << "\n" << std::flush;
    }
  }
  // A worker ended without a record (the run is stopping): it no longer runs.
  void stopped() {
    --running_;
    if (!starts_.empty()) starts_.pop_front();
    draw();
  }
  void tick() { draw(); }
  void close() {
    if (tty_) out_ << "\r\x1b[K" << std::flush;
  }

 private:
  // From the points done and their rate; none ("?") before any is done, or while a running point
  // has taken longer than twice the points done took on average (one long search among quick
  // points, an mcmc-plan of many steps: the rate says nothing of it).
  std::string eta() const {
    if (done_ == 0) return "?";
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (!starts_.empty() && ran_ > 0) {
      const double mean = busy_ / static_cast<double>(ran_);
      const double longest = std::chrono::duration<double>(now - starts_.front()).count();
      if (longest > 2 * mean) return fmt::format("? (a point has run {} so far, the points done {} on average)", format_eta(longest), format_eta(mean));
    }
    return format_eta(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  }
  void draw() {
    if (!tty_) return;
    constexpr int kWidth = 30;
    const int filled = total_ ? static_cast<int>(kWidth * done_ / total_) : kWidth;
    out_ << "\r\x1b[K" << prefix_ << "[" << std::string(filled, '#') << std::string(kWidth - filled, '.') << "] "
         << fmt::format("{}/{} done, {} running, {} failed, ETA {}", done_, total_, running_, failed_, eta()) << std::flush;
  }

  std::ostream& out_;
  std::size_t total_, done_ = 0, running_ = 0, failed_ = 0;
  bool enabled_;
  std::string prefix_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::deque<std::chrono::steady_clock::time_point> starts_;  // of the points running, oldest first
  double busy_ = 0;     // seconds the points done ran
  std::size_t ran_ = 0;  // points done that ran here
};

// What the log lines of this process start with.
std::string prefix_of(const SweepOptions& options) {
  return options.ranks > 1 ? fmt::format("rank {}: ", options.rank) : std::string();
}

// What is already done: this process's file, and with MPI also the merged file of earlier runs
// (--resume); without --resume the files are removed.
std::vector<PointRecord> earlier_records(const std::string& results_file, const std::string& merged,
                                         const SweepOptions& options, std::ostream& log) {
  const int ranks = std::max(1, options.ranks);
  std::vector<PointRecord> records;
  if (!options.resume) {
    std::error_code ec;
    fs::remove(results_file, ec);
    if (ranks > 1 && options.rank == 0) fs::remove(merged, ec);
    return records;
  }
  if (const auto warning = repair_last_line(results_file)) log << prefix_of(options) << "warning: " << *warning << "\n";
  records = read_result_lines(results_file);
  if (ranks > 1) {
    std::vector<std::string> warnings;
    for (PointRecord& r : read_result_lines(merged, &warnings)) records.push_back(std::move(r));
    for (const auto& w : warnings) log << prefix_of(options) << "warning: " << w << "\n";
  }
  return records;
}

// Appends each finished point's record to the results file, counts it, and rewrites the
// aggregates every 2 s. The first file that could not be written is kept: no point starts after
// it, and the run ends with it once the running points are in (their records may still fit).
class PointRecorder {
 public:
  PointRecorder(SweepSummary& summary, std::vector<PointRecord> earlier, Progress& progress, const SweepOptions& options,
                std::string dir)
      : records(std::move(earlier)), summary_(summary), progress_(progress), options_(options), dir_(std::move(dir)) {}

  void record(PointRecord record, bool ran) {
    try {
      if (!output_error) append_record(summary_.results_file, record);
    } catch (const OutputError& e) {
      output_error = e;
    }
    if (output_error) {
      if (ran) progress_.stopped();
      return;
    }
    switch (record.status) {
      case PointStatus::Ok: ++summary_.ok; break;
      case PointStatus::Oom: ++summary_.oom; break;
      case PointStatus::Infeasible: ++summary_.infeasible; break;
      case PointStatus::Failed:
      case PointStatus::TimedOut: ++summary_.failed; break;
    }
    progress_.finished(record, ran);
    records.push_back(std::move(record));
    ++appended_;
    if (options_.debug_stop_after >= 0 && static_cast<long>(appended_) >= options_.debug_stop_after) ::raise(SIGKILL);
    // The aggregates are for reading along; results.jsonl is the record. Rewriting them after every
    // point would be quadratic in a long sweep.
    if (std::max(1, options_.ranks) == 1 && std::chrono::steady_clock::now() - last_aggregate_ > std::chrono::seconds(2)) {
      try {
        write_aggregates(dir_, records);
      } catch (const OutputError& e) {
        output_error = e;
      }
      last_aggregate_ = std::chrono::steady_clock::now();
    }
  }

  std::vector<PointRecord> records;  // earlier ones and this run's
  std::optional<OutputError> output_error;

 private:
  SweepSummary& summary_;
  Progress& progress_;
  const SweepOptions& options_;
  std::string dir_;
  std::size_t appended_ = 0;
  std::chrono::steady_clock::time_point last_aggregate_ = std::chrono::steady_clock::now();
};

// Graphs are loaded (or built) in the runner's process, once per distinct `graph:`, before the
// workers that need them fork: the workers share them copy-on-write. Workloads likewise.
struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<LayerWorkload> workload;
  std::vector<std::string> warnings;
  // A scenario of jobs: each job's graph or workload.
  std::vector<std::unique_ptr<Graph>> job_graphs;
  std::vector<std::unique_ptr<LayerWorkload>> job_workloads;
  std::vector<JobInput> jobs;
};

// Every job's graph or workload of a scenario of jobs, loaded into `loaded`.
void load_jobs(const Scenario& variant, const std::string& file, LoadedGraph& loaded, std::ostream& log,
               const std::string& prefix) {
  for (const JobSpec& job : variant.jobs) {
    try {
      if (job.workload) {
        loaded.job_workloads.push_back(std::make_unique<LayerWorkload>(load_workload_source(*job.workload, file)));
        loaded.jobs.push_back({nullptr, loaded.job_workloads.back().get()});
      } else {
        std::vector<std::string> warnings;
        loaded.job_graphs.push_back(std::make_unique<Graph>(load_graph_source(job.graph, file, warnings)));
        loaded.jobs.push_back({loaded.job_graphs.back().get(), nullptr});
        for (const auto& w : warnings) log << prefix << "warning: " << job.field << ": " << w << "\n";
      }
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError(file, job.field + (job.workload ? ".workload" : ".graph"), fmt::format("cannot be built: {}", e.what()));
    }
  }
}

}  // namespace

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& log) {
  const fs::path dir = options.output;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw OutputError(options.output, "cannot create the output folder: " + ec.message());
  const int ranks = std::max(1, options.ranks);
  SweepSummary summary;
  summary.results_file = (dir / results_file_name(options.rank, ranks)).string();
  // The papers' numbers the report's plots draw beside these results (report.published).
  if (options.rank == 0 && !plan.variants.empty()) write_published(dir.string(), plan.variants.front().report.published);
  const std::string merged = (dir / "results.jsonl").string();

  // Graphs are loaded (or built) in this process, once per distinct `graph:`, before the workers
  // that need them fork: the workers share them copy-on-write. Workloads likewise. All of this
  // rank's graphs load before anything is written or removed: a graph the scenario names that is
  // not a graph (a cycle, a dangling tensor, a non-finite cost) is an input error of the scenario
  // (exit 2, one line), not a failed row per strategy; so is any other failure to build one.
  std::map<std::string, LoadedGraph> graphs;
  const std::string prefix = prefix_of(options);
  for (const SweepPoint& p : plan.points) {
    if (static_cast<int>(p.index % static_cast<std::size_t>(ranks)) != options.rank) continue;
    auto [it, fresh] = graphs.try_emplace(plan.variant_graph[p.variant]);
    if (!fresh) continue;
    const Scenario& variant = plan.variants[p.variant];
    load_jobs(variant, plan.file, it->second, log, prefix);
    if (!variant.jobs.empty()) continue;
    try {
      if (variant.workload)
        it->second.workload = std::make_unique<LayerWorkload>(load_workload_source(*variant.workload, plan.file));
      else
        it->second.graph = std::make_unique<Graph>(load_graph_source(variant.graph, plan.file, it->second.warnings));
      for (const auto& w : it->second.warnings) log << prefix << "warning: " << w << "\n";
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw InputError(plan.file, variant.workload ? "workload" : "graph", fmt::format("cannot be built: {}", e.what()));
    }
  }

  std::vector<PointRecord> records = earlier_records(summary.results_file, merged, options, log);
  std::set<std::string> done;
  for (const PointRecord& r : records) done.insert(r.key);

  std::vector<std::size_t> todo;
  for (const SweepPoint& p : plan.points) {
    if (static_cast<int>(p.index % static_cast<std::size_t>(ranks)) != options.rank) continue;
    ++summary.points;
    const std::vector<std::string> keys = record_keys(plan, p);
    if (std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return done.count(k) > 0; })) ++summary.skipped;
    else todo.push_back(p.index);
  }
  // Records still to come: a point of jobs resumed with some of its records stored writes the others.
  std::size_t records_to_come = 0;
  for (std::size_t i : todo)
    for (const std::string& k : record_keys(plan, plan.points[i])) records_to_come += done.count(k) == 0;
  if (options.progress)
    // "worker processes" (--jobs): a scenario's `jobs:` are something else.
    log << fmt::format("{}scenario {}: {} point{}{}, {} to run in {} worker process{} (--jobs)\n", prefix, plan.name,
                       summary.points, summary.points == 1 ? "" : "s",
                       summary.skipped ? fmt::format(" ({} already done)", summary.skipped) : std::string(), todo.size(),
                       options.jobs, options.jobs == 1 ? "" : "es")
        << std::flush;

  Progress progress(log, records_to_come, options.progress, prefix);
  PointRecorder recorder(summary, std::move(records), progress, options, dir.string());
  auto record_point = [&](PointRecord record, bool ran) { recorder.record(std::move(record), ran); };
  // A point's records: the first ends its worker's run; a job's record already stored (a resumed
  // point that had written some) is not written twice.
  auto record_all = [&](std::vector<PointRecord> of_point) {
    bool running = true;  // the point's worker still counts as running until a record ends it
    for (PointRecord& r : of_point) {
      if (!done.insert(r.key).second) continue;
      record_point(std::move(r), running);
      running = false;
    }
    if (running) progress.stopped();  // every record was stored already
  };
  std::optional<OutputError>& output_error = recorder.output_error;

  const std::string out_dir = dir.string();
  ProcessPoolHooks hooks;
  hooks.stop = [&] { return output_error.has_value(); };
  hooks.started = [&](std::size_t) { progress.started(); };
  hooks.tick = [&] { progress.tick(); };
  hooks.time_limit = [&](std::size_t task) { return plan.variants[plan.points[task].variant].simulation.time_limit_s; };
  hooks.finished = [&](const WorkerExit& exit) {
    const SweepPoint& point = plan.points[exit.task];
    if (exit.timed_out) {
      std::vector<PointRecord> timed_out = failed_records(
          plan, point,
          fmt::format("stopped after {}: the point (search and engines) ran longer than simulation.time_limit",
                      format_duration(exit.wall_seconds)));
      for (PointRecord& r : timed_out) r.status = PointStatus::TimedOut;
      record_all(std::move(timed_out));
      return;
    }
    if (!exit.completed) {
      record_all(failed_records(plan, point, "worker crashed: " + exit.failure));
      return;
    }
    std::vector<PointRecord> received;
    try {
      const auto j = nlohmann::ordered_json::parse(exit.output);
      if (j.is_object() && j.contains(kOutputErrorKey)) {
        progress.stopped();
        if (!output_error)
          output_error = OutputError(j[kOutputErrorKey].value("file", out_dir), j[kOutputErrorKey].value("reason", ""));
        return;
      }
      if (j.is_array())
        for (const auto& one : j) received.push_back(record_from_json(one, "worker", point.key));
      else
        received.push_back(record_from_json(j, "worker", point.key));
    } catch (const std::exception& e) {
      received = failed_records(plan, point, fmt::format("worker sent an unreadable result: {}", e.what()));
    }
    record_all(std::move(received));
  };
  const long abort_point = options.debug_abort_point;
  run_process_pool(todo, options.jobs, [&](std::size_t index) {
    const SweepPoint& point = plan.points[index];
    if (options.in_worker) options.in_worker();
    if (static_cast<long>(index) == abort_point) std::abort();
    const LoadedGraph& g = graphs.at(plan.variant_graph[point.variant]);
    return run_point(plan, point, {g.graph.get(), g.workload.get(), &g.warnings, g.jobs}, out_dir);
  }, hooks);
  progress.close();
  if (output_error) throw *output_error;
  if (ranks == 1) write_aggregates(dir.string(), std::move(recorder.records));
  return summary;
}

}  // namespace placesim
