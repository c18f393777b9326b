#include "scenarios/sweep_runner.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <stdexcept>
#include <unistd.h>

#include "scenarios/pool.h"
#include "scenarios/runner.h"
#include "sim/errors.h"
#include "sim/placement_io.h"
#include "sim/units.h"

namespace placesim {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string results_file_name(int rank, int ranks) {
  return ranks > 1 ? fmt::format("results.rank{}.jsonl", rank) : std::string("results.jsonl");
}

void append_line(const std::string& path, const std::string& line) {
  const std::string data = line + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open for appending: {}", path, std::strerror(errno)));
  ssize_t n;
  do n = ::write(fd, data.data(), data.size());
  while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  // Never complete a short write with a second one: the line would no longer be one write.
  if (n != static_cast<ssize_t>(data.size()))
    throw std::runtime_error(fmt::format("{}: short write ({} of {} bytes): {}", path, n, data.size(), std::strerror(err)));
}

std::vector<ojson> read_result_lines(const std::string& path) {
  std::vector<ojson> records;
  std::ifstream in(path);
  if (!in) return records;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    ojson record;
    try {
      record = ojson::parse(line);
    } catch (const std::exception& e) {
      throw InputError(path, fmt::format("line {}", number), fmt::format("is not JSON: {}", e.what()));
    }
    if (!record.is_object() || !record.contains("key") || !record["key"].is_string())
      throw InputError(path, fmt::format("line {}", number), "expected a JSON object with a string \"key\"");
    records.push_back(std::move(record));
  }
  return records;
}

namespace {

// ojson's const operator[] is undefined for a missing key; this is the safe read.
const ojson& field_of(const ojson& r, const char* key) {
  static const ojson null_value;
  auto it = r.find(key);
  return it != r.end() ? *it : null_value;
}

std::string graph_name(const GraphSource& g) {
  if (g.model) return g.model->model;
  if (!g.builtin.empty()) return g.builtin;
  return fs::path(g.file).stem().string();
}

// What every record of a point starts with, whether it ran or not.
ojson point_header(const SweepPlan& plan, const SweepPoint& point) {
  const Scenario& scenario = plan.variants[point.variant];
  const StrategySpec& spec = scenario.strategies[point.strategy];
  ojson r;
  r["key"] = point.key;
  r["index"] = point.index;
  r["scenario"] = plan.name;
  r["graph"] = graph_name(scenario.graph);
  r["gpus"] = scenario.cluster.num_devices();
  r["cluster"] = scenario.cluster.description;
  ojson sweep = ojson::object();
  for (const auto& [path, value] : plan.variant_values[point.variant]) sweep[path] = value;
  if (std::any_of(plan.axes.begin(), plan.axes.end(), [](const SweepAxis& a) { return a.path == "strategy"; }))
    sweep["strategy"] = spec.label;
  r["sweep"] = std::move(sweep);
  r["label"] = spec.label;
  r["strategy"] = spec.name;
  r["seed"] = point.seed ? ojson(*point.seed) : ojson(nullptr);
  r["repetition"] = point.repetition;
  r["engine"] = scenario.simulation.engine == Engine::Both ? "both" : scenario.simulation.engine == Engine::SimGrid ? "simgrid" : "evaluator";
  r["order"] = std::string(op_order_name(scenario.simulation.order));
  return r;
}

ojson failed_record(const SweepPlan& plan, const SweepPoint& point, const std::string& error) {
  ojson r = point_header(plan, point);
  r["status"] = "failed";
  r["error"] = error;
  return r;
}

// Runs in the worker process.
std::string run_point(const SweepPlan& plan, const SweepPoint& point, const Graph& graph,
                      const std::vector<std::string>& warnings, const std::string& dir) {
  const Scenario& scenario = plan.variants[point.variant];
  const StrategyOutcome out = run_strategy_point(scenario, point_strategy(plan, point), graph, dir, point.file_stem);
  ojson r = point_header(plan, point);
  r["operators"] = graph.num_operators();
  r["tensors"] = graph.num_tensors();
  r["status"] = !out.error.empty() ? "failed" : out.measurement.oom ? "oom" : "ok";
  const ojson measured = outcome_to_json(out);  // named: items() of a temporary would dangle
  for (const auto& [k, v] : measured.items())
    if (k != "label" && k != "strategy") r[k] = v;
  r["warnings"] = warnings;
  return r.dump();
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

  void started() { ++running_; draw(); }
  void finished(const ojson& record) {
    --running_;
    ++done_;
    const std::string status = record.value("status", "");
    if (status == "failed") ++failed_;
    if (!enabled_) return;
    std::string what;
    if (status == "failed") {
      what = "failed: " + record.value("error", "");
    } else {
      const ojson& sim = field_of(record, "simgrid_latency");
      what = format_duration(sim.is_number() ? sim.get<double>() : record.value("evaluator_latency", 0.0));
      if (status == "oom") what += " (OOM)";
    }
    const std::string line = fmt::format("{}[{}/{}] {}: {}", prefix_, done_, total_, record.value("key", ""), what);
    if (tty_) {
      out_ << "\r\x1b[K" << line << "\n";
      draw();
    } else {
      out_ << line << fmt::format("  ({} running, {} failed, ETA {})", running_, failed_, eta()) << "\n" << std::flush;
    }
  }
  void tick() { draw(); }
  void close() {
    if (tty_) out_ << "\r\x1b[K" << std::flush;
  }

 private:
  std::string eta() const {
    if (done_ == 0) return "?";
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
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
};

double number_or(const ojson& r, const char* key, double fallback) {
  auto it = r.find(key);
  return it != r.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

void write_aggregates(const std::string& dir, std::vector<ojson> records) {
  std::stable_sort(records.begin(), records.end(), [](const ojson& a, const ojson& b) {
    return a.value("index", std::size_t{0}) < b.value("index", std::size_t{0});
  });
  ojson j;
  const ojson first = records.empty() ? ojson::object() : records.front();
  j["scenario"] = first.value("scenario", "");
  j["cluster"] = first.value("cluster", "");
  j["operators"] = first.value("operators", std::size_t{0});
  j["tensors"] = first.value("tensors", std::size_t{0});
  j["units"] = {{"time", "s"}, {"memory", "B"}, {"bandwidth", "B/s"}};
  std::vector<std::string> warnings, sweep_paths;
  for (const ojson& r : records) {
    if (auto it = r.find("warnings"); it != r.end() && it->is_array())
      for (const auto& w : *it)
        if (w.is_string() && std::find(warnings.begin(), warnings.end(), w.get<std::string>()) == warnings.end())
          warnings.push_back(w.get<std::string>());
    if (auto it = r.find("sweep"); it != r.end() && it->is_object())
      for (const auto& [path, value] : it->items())
        if (std::find(sweep_paths.begin(), sweep_paths.end(), path) == sweep_paths.end()) sweep_paths.push_back(path);
  }
  j["warnings"] = warnings;
  j["sweep"] = sweep_paths;
  j["strategies"] = records;
  write_file_atomically((fs::path(dir) / "results.json").string(), j.dump(2) + "\n");

  std::string csv = "key,scenario,strategy,label";
  for (const auto& p : sweep_paths) csv += "," + csv_quote(p);
  csv += ",seed,repetition,status,evaluator_latency_s,simgrid_latency_s,search_time_s,peak_memory_bytes,oom,error\n";
  for (const ojson& r : records) {
    csv += fmt::format("{},{},{},{}", csv_quote(r.value("key", "")), csv_quote(r.value("scenario", "")),
                       csv_quote(r.value("strategy", "")), csv_quote(r.value("label", "")));
    const ojson sweep = r.value("sweep", ojson::object());
    for (const auto& p : sweep_paths) csv += "," + (sweep.contains(p) ? csv_quote(sweep[p].get<std::string>()) : std::string());
    const bool ran = r.value("status", "") != "failed";
    csv += fmt::format(",{},{},{}", field_of(r, "seed").is_number() ? std::to_string(field_of(r, "seed").get<long>()) : std::string(),
                       r.value("repetition", 0), r.value("status", ""));
    if (ran) {
      const ojson& sim = field_of(r, "simgrid_latency");
      csv += fmt::format(",{:.9g},{},{:.6g},{:.0f},{},", number_or(r, "evaluator_latency", 0),
                         sim.is_number() ? fmt::format("{:.9g}", sim.get<double>()) : std::string(),
                         number_or(r, "search_time", 0), number_or(r, "peak_memory", 0), r.value("oom", false) ? "true" : "false");
    } else {
      csv += ",,,,,," + csv_quote(r.value("error", ""));
    }
    csv += "\n";
  }
  write_file_atomically((fs::path(dir) / "results.csv").string(), csv);
}

std::string format_point_table(const std::vector<ojson>& records) {
  // The point column: sweep values, seed and repetition (the strategy has a column of its own).
  const bool repeated = std::any_of(records.begin(), records.end(), [](const ojson& r) { return r.value("repetition", 0) > 0; });
  auto point_of = [&](const ojson& r) {
    std::string point;
    const ojson sweep = r.value("sweep", ojson::object());
    for (const auto& [path, value] : sweep.items())
      if (path != "strategy") point += (point.empty() ? "" : " ") + path + "=" + value.get<std::string>();
    if (const ojson& seed = field_of(r, "seed"); seed.is_number()) point += fmt::format("{}seed={}", point.empty() ? "" : " ", seed.get<long>());
    if (repeated) point += fmt::format("{}rep={}", point.empty() ? "" : " ", r.value("repetition", 0));
    return point;
  };
  std::size_t width = 0;
  for (const ojson& r : records) width = std::max(width, point_of(r).size());
  const std::string point_head = width ? fmt::format("{:<{}} ", "point", width) : std::string();
  std::string out = point_head + fmt::format("{:<20} {:>14} {:>14} {:>12} {:>14} {:>5}\n", "strategy", "evaluator", "simgrid",
                                             "search", "peak mem/GPU", "OOM");
  for (const ojson& r : records) {
    const std::string point = width ? fmt::format("{:<{}} ", point_of(r), width) : std::string();
    if (r.value("status", "") == "failed") {
      out += point + fmt::format("{:<20} failed: {}\n", r.value("label", ""), r.value("error", ""));
      continue;
    }
    const ojson& sim = field_of(r, "simgrid_latency");
    out += point + fmt::format("{:<20} {:>14} {:>14} {:>12} {:>14} {:>5}\n", r.value("label", ""),
                               format_duration(number_or(r, "evaluator_latency", 0)),
                               sim.is_number() ? format_duration(sim.get<double>()) : std::string("-"),
                               format_duration(number_or(r, "search_time", 0)), format_bytes(number_or(r, "peak_memory", 0)),
                               r.value("oom", false) ? "yes" : "no");
  }
  return out;
}

SweepSummary run_sweep(const SweepPlan& plan, const SweepOptions& options, std::ostream& log) {
  const fs::path dir = options.output;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw InputError(options.output, "output", "cannot create the output folder: " + ec.message());
  const int ranks = std::max(1, options.ranks);
  SweepSummary summary;
  summary.results_file = (dir / results_file_name(options.rank, ranks)).string();
  const std::string merged = (dir / "results.jsonl").string();

  // What is already done: this process's file, and with MPI also the merged file of earlier runs.
  std::set<std::string> done;
  std::vector<ojson> records;
  if (options.resume) {
    records = read_result_lines(summary.results_file);
    if (ranks > 1)
      for (ojson& r : read_result_lines(merged)) records.push_back(std::move(r));
    for (const ojson& r : records) done.insert(r["key"].get<std::string>());
  } else {
    fs::remove(summary.results_file, ec);
    if (ranks > 1 && options.rank == 0) fs::remove(merged, ec);
  }

  std::vector<std::size_t> todo;
  for (const SweepPoint& p : plan.points) {
    if (static_cast<int>(p.index % static_cast<std::size_t>(ranks)) != options.rank) continue;
    ++summary.points;
    if (done.count(p.key)) ++summary.skipped;
    else todo.push_back(p.index);
  }
  const std::string prefix = ranks > 1 ? fmt::format("rank {}: ", options.rank) : std::string();
  if (options.progress)
    log << fmt::format("{}scenario {}: {} points{}, {} to run with {} job{}\n", prefix, plan.name, summary.points,
                       summary.skipped ? fmt::format(" ({} already done)", summary.skipped) : std::string(), todo.size(),
                       options.jobs, options.jobs == 1 ? "" : "s")
        << std::flush;

  // Graphs are loaded (or built) in this process, once per distinct `graph:`, before the workers
  // that need them fork: the workers share them copy-on-write.
  struct LoadedGraph {
    std::unique_ptr<Graph> graph;
    std::vector<std::string> warnings;
    std::string error;
  };
  std::map<std::string, LoadedGraph> graphs;
  auto graph_of = [&](const SweepPoint& p) -> LoadedGraph& {
    auto [it, fresh] = graphs.try_emplace(plan.variant_graph[p.variant]);
    if (fresh) {
      try {
        it->second.graph = std::make_unique<Graph>(
            load_graph_source(plan.variants[p.variant].graph, plan.file, it->second.warnings));
        for (const auto& w : it->second.warnings) log << prefix << "warning: " << w << "\n";
      } catch (const std::exception& e) {
        it->second.error = e.what();
      }
    }
    return it->second;
  };

  Progress progress(log, todo.size(), options.progress, prefix);
  std::size_t appended = 0;
  auto last_aggregate = std::chrono::steady_clock::now();
  auto record_point = [&](ojson record) {
    append_line(summary.results_file, record.dump());
    const std::string status = record.value("status", "");
    if (status == "ok") ++summary.ok;
    else if (status == "oom") ++summary.oom;
    else ++summary.failed;
    progress.finished(record);
    records.push_back(std::move(record));
    ++appended;
    if (options.debug_stop_after >= 0 && static_cast<long>(appended) >= options.debug_stop_after) ::raise(SIGKILL);
    // The aggregates are for reading along; results.jsonl is the record. Rewriting them after every
    // point would be quadratic in a long sweep.
    if (ranks == 1 && std::chrono::steady_clock::now() - last_aggregate > std::chrono::seconds(2)) {
      write_aggregates(dir.string(), records);
      last_aggregate = std::chrono::steady_clock::now();
    }
  };

  // A point whose graph cannot be loaded fails without a worker.
  std::vector<std::size_t> runnable;
  for (std::size_t index : todo) {
    LoadedGraph& g = graph_of(plan.points[index]);
    if (!g.error.empty()) record_point(failed_record(plan, plan.points[index], "graph: " + g.error));
    else runnable.push_back(index);
  }

  ProcessPoolHooks hooks;
  hooks.started = [&](std::size_t) { progress.started(); };
  hooks.tick = [&] { progress.tick(); };
  hooks.finished = [&](const WorkerExit& exit) {
    const SweepPoint& point = plan.points[exit.task];
    if (!exit.completed) {
      record_point(failed_record(plan, point, "worker crashed: " + exit.failure));
      return;
    }
    ojson record;
    try {
      record = ojson::parse(exit.output);
    } catch (const std::exception& e) {
      record = failed_record(plan, point, fmt::format("worker sent an unreadable result: {}", e.what()));
    }
    record_point(std::move(record));
  };
  const std::string out_dir = dir.string();
  const long abort_point = options.debug_abort_point;
  run_process_pool(runnable, options.jobs, [&](std::size_t index) {
    const SweepPoint& point = plan.points[index];
    if (static_cast<long>(index) == abort_point) std::abort();
    const LoadedGraph& g = graphs.at(plan.variant_graph[point.variant]);
    return run_point(plan, point, *g.graph, g.warnings, out_dir);
  }, hooks);
  progress.close();
  if (ranks == 1) write_aggregates(dir.string(), std::move(records));
  return summary;
}

std::size_t merge_result_shards(const std::string& dir, std::optional<int> ranks) {
  const fs::path folder = dir;
  std::vector<std::string> shards;
  if (ranks) {
    for (int r = 0; r < *ranks; ++r) shards.push_back((folder / results_file_name(r, 2)).string());
  } else {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.starts_with("results.rank") && name.ends_with(".jsonl")) shards.push_back(entry.path().string());
    }
    if (ec) throw InputError(dir, "", "cannot list the folder: " + ec.message());
    std::sort(shards.begin(), shards.end());
  }
  const std::string merged = (folder / "results.jsonl").string();
  std::map<std::string, ojson> by_key;
  // The key is read before the record moves (ojson's operator= takes its argument by value, and
  // the right operand of = is evaluated first).
  auto keep = [&](ojson& r) {
    const std::string key = r["key"].get<std::string>();
    by_key[key] = std::move(r);
  };
  for (ojson& r : read_result_lines(merged)) keep(r);
  for (const auto& shard : shards)
    for (ojson& r : read_result_lines(shard)) keep(r);
  std::string text;
  std::vector<ojson> records;
  for (auto& [key, r] : by_key) {
    text += r.dump() + "\n";
    records.push_back(std::move(r));
  }
  write_file_atomically(merged, text);
  std::error_code ec;
  for (const auto& shard : shards) fs::remove(shard, ec);
  write_aggregates(dir, std::move(records));
  return by_key.size();
}

}  // namespace placesim
