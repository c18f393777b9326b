#include "scenarios/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <spawn.h>
#include <unistd.h>
#include <sys/wait.h>

#include "scenarios/record.h"
#include "scenarios/results_store.h"
#include "sim/data_dir.h"
#include "sim/errors.h"
#include "sim/placement_io.h"
#include "sim/units.h"
#include "sim/yaml_fields.h"

namespace placesim {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The swept values in path order (as the report has always listed them).
std::vector<const SweepValue*> sorted_sweep(const PointRecord& r) {
  std::vector<const SweepValue*> values;
  for (const SweepValue& v : r.sweep) values.push_back(&v);
  std::sort(values.begin(), values.end(), [](const SweepValue* a, const SweepValue* b) { return a->path < b->path; });
  return values;
}

// The parameters that tell groups apart: every swept value except the strategy.
std::string group_name(const PointRecord& r) {
  std::string name = fmt::format("{} on {} GPUs", r.graph, r.gpus);
  for (const SweepValue* v : sorted_sweep(r)) {
    // The graph, GPU count and strategy have their own columns.
    if (v->path == "graph" || v->path == "cluster.gpus" || v->path == "strategy") continue;
    name += fmt::format(", {}={}", v->path, v->printed());
  }
  return name;
}

std::string field_text(const PointRecord& r, const std::string& field) {
  if (field == "graph") return r.graph;
  if (field == "strategy") return r.label;
  if (field == "gpus") return std::to_string(r.gpus);
  if (const SweepValue* v = r.sweep_value(field)) return v->printed();
  return "-";
}

std::optional<double> value_of(const PointRecord& r, const std::string& value) {
  if (!r.measurement) return std::nullopt;
  const PointMeasurement& m = *r.measurement;
  if (value == "latency") return r.latency();
  if (value == "evaluator_latency") return m.evaluator_latency;
  if (value == "simgrid_latency") return m.simgrid_latency;
  if (value == "search_time") return m.search_time;
  if (value == "peak_memory") return m.peak_memory;
  if (value == "lower_bound") return m.bounds.best();
  if (auto it = m.strategy_report.find(value); it != m.strategy_report.end() && it->is_number())
    return it->get<double>();
  return std::nullopt;
}

std::string format_value(const std::string& value, double v) {
  if (value.find("latency") != std::string::npos || value == "search_time" || value == "lower_bound" ||
      value.ends_with("seconds") ||
      value.ends_with("_s"))
    return format_duration(v);
  if (value == "peak_memory" || value.ends_with("bytes")) return format_bytes(v);
  return fmt::format("{:.4g}", v);
}

std::string joined(const PointRecord& r, const std::vector<std::string>& fields) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? "" : " / ") + field_text(r, f);
  return s;
}

}  // namespace

std::vector<PointRecord> load_report_records(const std::string& path) {
  return read_results(results_file_in(path));
}

std::string format_comparison_table(std::span<const PointRecord> records) {
  // group -> strategy (in first-seen order) -> records
  std::vector<std::string> group_order;
  std::map<std::string, std::vector<std::string>> strategy_order;
  std::map<std::pair<std::string, std::string>, std::vector<const PointRecord*>> cells;
  for (const auto& r : records) {
    const std::string g = group_name(r);
    if (std::find(group_order.begin(), group_order.end(), g) == group_order.end()) group_order.push_back(g);
    auto& so = strategy_order[g];
    if (std::find(so.begin(), so.end(), r.label) == so.end()) so.push_back(r.label);
    cells[{g, r.label}].push_back(&r);
  }
  std::ostringstream out;
  for (const auto& g : group_order) {
    struct Row {
      std::string strategy;
      std::optional<double> latency, search;
      double memory = 0;
      bool oom = false;
      std::size_t runs = 0, failures = 0;
      std::string error;
    };
    std::vector<Row> rows;
    for (const auto& s : strategy_order[g]) {
      Row row;
      row.strategy = s;
      std::vector<double> lat, search;
      for (const PointRecord* r : cells[{g, s}]) {
        ++row.runs;
        if (!r->measurement) {
          ++row.failures;
          if (row.error.empty()) row.error = r->error;
          continue;
        }
        lat.push_back(*r->latency());
        search.push_back(r->measurement->search_time);
        row.memory = std::max(row.memory, r->measurement->peak_memory);
        row.oom = row.oom || r->measurement->oom;
      }
      if (!lat.empty()) row.latency = median(lat);
      if (!search.empty()) row.search = median(search);
      rows.push_back(row);
    }
    out << g << "\n";
    out << fmt::format("  {:<24} {:>12} {:>9} {:>11} {:>11} {:>5}  {}\n", "strategy", "latency", "speed-up",
                       "search", "peak mem", "OOM", "runs");
    for (const Row& row : rows) {
      // Speed-up over the best *other* strategy; OOM placements do not count as competitors.
      std::optional<double> best_other;
      for (const Row& o : rows)
        if (&o != &row && o.latency && !o.oom) best_other = std::min(best_other.value_or(*o.latency), *o.latency);
      std::string runs = std::to_string(row.runs);
      if (row.failures) runs += fmt::format(" ({} failed: {})", row.failures, row.error);
      out << fmt::format("  {:<24} {:>12} {:>9} {:>11} {:>11} {:>5}  {}\n", row.strategy,
                         row.latency ? fmt::format("{:.4g} ms", *row.latency * 1e3) : "failed",
                         row.latency && best_other ? fmt::format("{:.3f}x", *best_other / *row.latency) : "-",
                         row.search ? format_duration(*row.search) : "-",
                         row.latency ? format_bytes(row.memory) : "-", row.oom ? "yes" : "", runs);
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json records_to_json(std::span<const PointRecord> records, const std::string& dir) {
  json out = json::array();
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  for (const auto& r : records) {
    json params = json::object();
    for (const SweepValue& v : r.sweep) params[v.path] = v.quantity ? json(v.quantity->value) : json(v.text);
    const PointMeasurement* m = r.measurement ? &*r.measurement : nullptr;
    std::string trace;
    if (m && !m->trace_file.empty()) {
      const fs::path p(m->trace_file);
      trace = (p.is_absolute() ? p : fs::path(dir) / p).lexically_normal().string();
    }
    out.push_back({{"graph", r.graph},
                   {"strategy", r.label},
                   {"gpus", r.gpus},
                   {"params", params},
                   {"latency", opt(r.latency())},
                   {"evaluator_latency", opt(m ? std::optional(m->evaluator_latency) : std::nullopt)},
                   {"simgrid_latency", opt(m ? m->simgrid_latency : std::nullopt)},
                   {"search_time", opt(m ? std::optional(m->search_time) : std::nullopt)},
                   {"peak_memory", m ? m->peak_memory : 0.0},
                   {"oom", m && m->oom},
                   {"failed", r.failed()},
                   {"error", r.error},
                   {"trace_file", trace},
                   {"strategy_report", m ? json(m->strategy_report) : json::object()}});
  }
  return out;
}

namespace {

// A list of names, or one name.
std::vector<std::string> names_from_yaml(const YamlFields& f, std::string_view key) {
  std::vector<std::string> out;
  if (!f.has(key)) return out;
  const YAML::Node n = f.node(key);
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence()) throw InputError(f.file(), f.field(key), "expected a name or a list of names");
  for (const auto& item : n) {
    if (!item.IsScalar() || item.Scalar().empty())
      throw InputError(f.file(), f.field(key), "expected a list of names");
    out.push_back(item.Scalar());
  }
  return out;
}

}  // namespace

ReportSpec report_spec_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"tables", "gantt_strategy"});
  ReportSpec spec;
  spec.gantt_strategy = f.string_or("gantt_strategy", "");
  if (!f.has("tables")) return spec;
  const YAML::Node tables = f.node("tables");
  if (!tables.IsSequence()) throw InputError(file, f.field("tables"), "expected a list of tables");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    YamlFields t(tables[i], file, fmt::format("{}.tables[{}]", path, i));
    t.allow_only({"title", "rows", "columns", "value", "strategies"});
    PivotSpec p;
    p.title = t.string_or("title", "");
    p.rows = names_from_yaml(t, "rows");
    p.columns = names_from_yaml(t, "columns");
    p.value = t.string_or("value", "latency");
    p.strategies = names_from_yaml(t, "strategies");
    if (p.rows.empty()) throw InputError(file, t.field("rows"), "expected at least one row field (graph, strategy, gpus or a swept path)");
    spec.tables.push_back(std::move(p));
  }
  return spec;
}

std::string format_pivot_table(std::span<const PointRecord> records, const PivotSpec& spec) {
  std::vector<std::string> row_keys, column_keys;
  std::map<std::pair<std::string, std::string>, std::vector<double>> cells;
  std::set<std::pair<std::string, std::string>> oom, failed;
  for (const auto& r : records) {
    if (!spec.strategies.empty() &&
        std::find(spec.strategies.begin(), spec.strategies.end(), r.label) == spec.strategies.end())
      continue;
    const std::string row = joined(r, spec.rows), column = joined(r, spec.columns);
    if (std::find(row_keys.begin(), row_keys.end(), row) == row_keys.end()) row_keys.push_back(row);
    if (std::find(column_keys.begin(), column_keys.end(), column) == column_keys.end()) column_keys.push_back(column);
    if (r.failed()) {
      failed.insert({row, column});
      continue;
    }
    if (r.measurement->oom) oom.insert({row, column});
    if (auto v = value_of(r, spec.value)) cells[{row, column}].push_back(*v);
  }
  std::ostringstream out;
  if (!spec.title.empty()) out << "**" << spec.title << "**\n\n";
  std::string header = "| " + (spec.rows.empty() ? std::string() : [&] {
    std::string s;
    for (const auto& f : spec.rows) s += (s.empty() ? "" : " / ") + f;
    return s;
  }());
  std::string rule = "|---";
  for (const auto& c : column_keys) {
    header += " | " + c;
    rule += "|---:";
  }
  out << header << " |\n" << rule << "|\n";
  for (const auto& row : row_keys) {
    out << "| " << row;
    for (const auto& c : column_keys) {
      auto it = cells.find({row, c});
      std::string cell = it != cells.end() ? format_value(spec.value, median(it->second))
                         : failed.count({row, c}) ? "failed"
                                                  : "";
      if (oom.count({row, c})) cell += " (OOM)";
      out << " | " << cell;
    }
    out << " |\n";
  }
  return out.str();
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  write_file_atomically(path.string(), text);
}

// python3 SCRIPT ARGS..., without a shell (paths may hold spaces). Returns the exit status, or -1
// when python3 cannot be started.
int run_python(const std::vector<std::string>& args) {
  const std::string python = plot_python();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(python.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::string plot_python() {
  if (const char* env = std::getenv("PLACESIM_PYTHON"); env && *env) return env;
  if (fs::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

int run_report(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  const std::string file = results_file_in(options.results);
  const std::vector<PointRecord> records = read_results(file);
  if (records.empty()) throw InputError(options.results, "", "holds no results");
  fs::path dir = options.output;
  if (dir.empty()) {
    const fs::path base = fs::is_directory(options.results) ? fs::path(options.results) : fs::path(options.results).parent_path();
    dir = base / "report";
  }
  fs::create_directories(dir);
  const std::string table = format_comparison_table(records);
  out << table;
  write_text(dir / "table.txt", table);
  if (!options.pivots.empty()) {
    std::string md;
    for (const auto& p : options.pivots) md += format_pivot_table(records, p) + "\n";
    out << md;
    write_text(dir / "pivot.md", md);
  }
  // A stray byte that is not UTF-8 becomes U+FFFD rather than an exception (see dump_json).
  const nlohmann::json records_json = records_to_json(records, fs::path(file).parent_path().string());
  write_text(dir / "records.json", records_json.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  out << fmt::format("report: {}/table.txt, {}/records.json\n", dir.string(), dir.string());
  if (!options.plots) return 0;
  std::string script = options.plot_script;
  if (script.empty()) {
    const char* env = std::getenv("PLACESIM_PLOT_SCRIPT");
    script = env && *env ? env : (data_dir() / "tools" / "plot_results.py").string();
  }
  if (!fs::exists(script)) {
    err << "report: plots skipped: the plot script " << script << " is missing (set PLACESIM_PLOT_SCRIPT)\n";
    return 1;
  }
  std::vector<std::string> args = {script, (dir / "records.json").string(), "--out", dir.string()};
  if (!options.gantt_strategy.empty()) {
    args.push_back("--gantt-strategy");
    args.push_back(options.gantt_strategy);
  }
  const int status = run_python(args);
  if (status != 0) {
    err << (status < 0 ? "report: plots skipped: " + plot_python() + " cannot be started"
                       : fmt::format("report: plots failed ({} exited with {}); tools/install-deps.sh installs "
                                     "python3-matplotlib",
                                     plot_python(), status))
        << "\n";
    return 1;
  }
  return 0;
}

}  // namespace placesim
