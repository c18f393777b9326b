#include "scenarios/runner/report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <spawn.h>
#include <unistd.h>
#include <sys/wait.h>

#include "scenarios/runner/record.h"
#include "scenarios/runner/results_store.h"
#include "sim/config/data_dir.h"
#include "sim/core/errors.h"
#include "sim/io/placement_io.h"
#include "sim/core/units.h"
#include "sim/config/yaml_fields.h"

namespace placesim {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "1 point", "2 points".
std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The records in the scenario's order: by point index (the sweep's axes in the order written, the
// last fastest, then the strategies in the order listed). results.jsonl holds them in the order
// the points finished; the tables and plots must not depend on that.
std::vector<const PointRecord*> in_scenario_order(std::span<const PointRecord> records) {
  std::vector<const PointRecord*> out;
  out.reserve(records.size());
  for (const PointRecord& r : records) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const PointRecord* a, const PointRecord* b) { return a->index < b->index; });
  return out;
}

// The number and unit of a quantity as written ("10Gbps" -> {"10", "Gbps"}); nullopt for other text.
std::optional<std::pair<std::string, std::string>> number_and_unit(const SweepValue& v) {
  if (!v.quantity) return std::nullopt;
  const std::string& t = v.text;
  std::size_t end = 0;
  while (end < t.size() && (std::isdigit(static_cast<unsigned char>(t[end])) || std::strchr(".+-eE", t[end]))) ++end;
  // An exponent's 'e' belongs to the number only when a digit or sign follows.
  while (end > 0 && (t[end - 1] == 'e' || t[end - 1] == 'E')) --end;
  std::size_t unit = end;
  while (unit < t.size() && std::isspace(static_cast<unsigned char>(t[unit]))) ++unit;
  if (end == 0) return std::nullopt;
  return std::pair{t.substr(0, end), t.substr(unit)};
}

// How the tables print swept values: a path whose values were all written in one unit keeps it
// ("10 Gbps", as the scenario and its paper say), else each value in placesim's units (printed()).
class SweepText {
 public:
  explicit SweepText(std::span<const PointRecord> records) {
    std::map<std::string, std::set<std::string>> units;
    std::set<std::string> mixed;
    for (const PointRecord& r : records)
      for (const SweepValue& v : r.sweep) {
        if (const auto nu = number_and_unit(v)) units[v.path].insert(nu->second);
        else mixed.insert(v.path);
      }
    for (const auto& [path, u] : units)
      if (u.size() == 1 && !mixed.count(path)) as_written_.insert(path);
  }
  std::string operator()(const SweepValue& v) const {
    if (as_written_.count(v.path)) {
      const auto nu = number_and_unit(v);
      return nu->second.empty() ? nu->first : nu->first + " " + nu->second;
    }
    return v.printed();
  }

 private:
  std::set<std::string> as_written_;
};

// The parameters that tell groups apart: every swept value except the strategy, in the sweep's
// order.
std::string group_name(const PointRecord& r, const SweepText& text) {
  std::string name = fmt::format("{} on {}", r.graph, count_of(static_cast<std::size_t>(std::max(r.gpus, 0)), "GPU", "GPUs"));
  for (const SweepValue& v : r.sweep) {
    // The graph, GPU count and strategy have their own columns.
    if (v.path == "graph" || v.path == "cluster.gpus" || v.path == "strategy") continue;
    name += fmt::format(", {}={}", v.path, text(v));
  }
  return name;
}

std::string field_text(const PointRecord& r, const std::string& field, const SweepText& text) {
  if (field == "graph") return r.graph;
  if (field == "strategy") return r.label;
  if (field == "gpus") return std::to_string(r.gpus);
  if (const SweepValue* v = r.sweep_value(field)) return text(*v);
  return "-";
}

const char* const kValueFields[] = {"latency",      "search_time",      "evaluator_latency", "simgrid_latency",
                                    "flow_latency", "estimate_latency", "peak_memory",       "lower_bound"};

std::optional<double> value_of(const PointRecord& r, const std::string& value) {
  if (!r.measurement) return std::nullopt;
  const PointMeasurement& m = *r.measurement;
  if (value == "latency") return r.latency();
  if (value.ends_with("_latency")) return m.latency(value.substr(0, value.size() - std::string_view("_latency").size()));
  if (value == "search_time") return m.search_time;
  if (value == "peak_memory") return m.peak_memory;
  if (value == "lower_bound") return m.bounds.best();
  // A figure of the strategy's own report, named by the scenario's report spec.
  if (auto it = m.strategy_report.find(value); it != m.strategy_report.end() && it->is_number())
    return it->get<double>();
  return std::nullopt;
}

// One unit for every cell of a pivot of `value`, chosen from the cells.
ColumnUnit unit_of(const std::string& value, std::span<const double> cells) {
  if (value.find("latency") != std::string::npos || value == "search_time" || value == "lower_bound" ||
      value.ends_with("seconds") ||
      value.ends_with("_s"))
    return duration_unit(cells);
  if (value == "peak_memory" || value.ends_with("bytes")) return bytes_unit(cells);
  return number_unit();
}

std::string joined(const PointRecord& r, const std::vector<std::string>& fields, const SweepText& text) {
  std::string s;
  for (const auto& f : fields) s += (s.empty() ? "" : " / ") + field_text(r, f, text);
  return s;
}

}  // namespace

std::vector<PointRecord> load_report_records(const std::string& path) {
  return read_results(results_file_in(path));
}

std::string format_comparison_table(std::span<const PointRecord> records) {
  // group -> strategy (both in the scenario's order) -> records
  std::vector<std::string> group_order;
  std::map<std::string, std::vector<std::string>> strategy_order;
  std::map<std::pair<std::string, std::string>, std::vector<const PointRecord*>> cells;
  bool any_simgrid = false, any_evaluator_only = false, any_estimate_only = false;
  const SweepText text(records);
  // A point's time: the latency of the engines that ran, or NEST's estimate where none did
  // (simulation.engine estimate).
  auto time_of = [](const PointRecord& r) -> std::optional<double> {
    if (auto latency = r.latency()) return latency;
    return r.measurement->latency(kEstimate);
  };
  for (const PointRecord* r : in_scenario_order(records)) {
    const std::string g = group_name(*r, text);
    if (std::find(group_order.begin(), group_order.end(), g) == group_order.end()) group_order.push_back(g);
    auto& so = strategy_order[g];
    if (std::find(so.begin(), so.end(), r->label) == so.end()) so.push_back(r->label);
    cells[{g, r->label}].push_back(r);
    if (r->measurement)
      (r->measurement->latency(kSimGrid)           ? any_simgrid
       : r->measurement->latency(kEvaluator) ? any_evaluator_only
                                           : any_estimate_only) = true;
  }
  struct Row {
    std::string strategy;
    std::optional<double> latency, search;
    double memory = 0;
    bool oom = false;
    std::size_t runs = 0, failures = 0;
    bool all_infeasible = true;  // every run without a measurement was infeasible (nothing fits)
    std::string error;
  };
  std::vector<std::vector<Row>> tables;
  std::vector<double> all_latency, all_search, all_memory;  // the medians, to choose each column's unit
  for (const auto& g : group_order) {
    std::vector<Row>& rows = tables.emplace_back();
    for (const auto& s : strategy_order[g]) {
      Row row;
      row.strategy = s;
      // Whose answers the row holds where a portfolio, a memory fallback or a warm start ran.
      std::set<std::string> notes;
      std::size_t noted = 0;
      for (const PointRecord* r : cells[{g, s}])
        if (const std::string note = answer_note(*r); !note.empty()) {
          notes.insert(note);
          ++noted;
        }
      if (notes.size() == 1 && noted == cells[{g, s}].size()) row.strategy += " [" + *notes.begin() + "]";
      else if (noted) row.strategy += fmt::format(" [{} of {} runs: {}]", noted, cells[{g, s}].size(), fmt::join(notes, "; "));
      std::vector<double> lat, search;
      for (const PointRecord* r : cells[{g, s}]) {
        ++row.runs;
        if (!r->measurement) {
          ++row.failures;
          row.all_infeasible = row.all_infeasible && r->status == PointStatus::Infeasible;
          if (row.error.empty()) row.error = r->reason;
          continue;
        }
        if (const auto t = time_of(*r)) lat.push_back(*t);
        search.push_back(r->measurement->search_time);
        row.memory = std::max(row.memory, r->measurement->peak_memory);
        row.oom = row.oom || r->measurement->oom;
      }
      if (!lat.empty()) {
        row.latency = median(lat);
        all_latency.push_back(*row.latency);
        all_memory.push_back(row.memory);
      }
      if (!search.empty()) all_search.push_back(*(row.search = median(search)));
      rows.push_back(row);
    }
  }
  // One unit per column across every table, named in the header; the cells are bare numbers.
  const ColumnUnit latency_unit = duration_unit(all_latency), search_unit = duration_unit(all_search),
                   memory_unit = bytes_unit(all_memory);
  const std::string latency_name = any_estimate_only ? (any_simgrid || any_evaluator_only ? "latency" : "NEST estimate")
                                   : any_simgrid && !any_evaluator_only ? "SimGrid latency"
                                   : any_simgrid                        ? "latency"
                                                                        : "evaluator latency";
  const std::string latency_head = fmt::format("{} ({})", latency_name, latency_unit.name),
                    speedup_head = "speed-up vs best other", search_head = fmt::format("search ({})", search_unit.name),
                    memory_head = fmt::format("peak mem ({})", memory_unit.name);
  std::size_t strategy_width = 8;
  for (const auto& rows : tables)
    for (const Row& row : rows) strategy_width = std::max(strategy_width, row.strategy.size());
  auto line = [&](std::string_view strategy, std::string_view latency, std::string_view speedup, std::string_view search,
                  std::string_view memory, std::string_view oom, std::string_view runs) {
    return fmt::format("  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:>3}  {}\n", strategy, strategy_width, latency,
                       latency_head.size(), speedup, speedup_head.size(), search, search_head.size(), memory,
                       memory_head.size(), oom, runs);
  };
  std::ostringstream out;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const std::vector<Row>& rows = tables[t];
    out << group_order[t] << "\n";
    out << line("strategy", latency_head, speedup_head, search_head, memory_head, "OOM", "runs");
    for (const Row& row : rows) {
      // Speed-up over the best *other* strategy; OOM placements do not count as competitors.
      std::optional<double> best_other;
      for (const Row& o : rows)
        if (&o != &row && o.latency && !o.oom) best_other = std::min(best_other.value_or(*o.latency), *o.latency);
      std::string runs = std::to_string(row.runs);
      const char* status = row.all_infeasible ? "infeasible" : "failed";
      if (row.failures) runs += fmt::format(" ({} {}: {})", row.failures, status, row.error);
      // A row with runs and no time: an estimate-only point whose plan had no estimate.
      out << line(row.strategy, row.latency ? format_number_in(*row.latency, latency_unit) : row.failures ? status : "-",
                  // An OOM row has no speed-up: its placement does not fit, so it is no answer.
                  row.oom ? "OOM"
                  : row.latency && best_other ? fmt::format("{:.3f}x", *best_other / *row.latency)
                                              : "-",
                  row.search ? format_number_in(*row.search, search_unit) : "-",
                  row.latency ? format_number_in(row.memory, memory_unit) : "-", row.oom ? "yes" : "", runs);
    }
    out << "\n";
  }
  if (!tables.empty()) {
    if (any_estimate_only && (any_simgrid || any_evaluator_only))
      out << "latency: per iteration, SimGrid's where SimGrid ran, else the evaluator's, else (no engine ran) NEST's "
             "estimate; the median of a strategy's runs\n";
    else if (any_simgrid && any_evaluator_only)
      out << "latency: per iteration, SimGrid's where SimGrid ran, else the evaluator's; the median of a strategy's runs\n";
    else
      out << fmt::format("{}: per iteration; the median of a strategy's runs\n", latency_name);
    out << "speed-up vs best other: the latency of the fastest other strategy in the same table that fits in memory, "
           "divided by this one's (> 1: this one is the fastest); none for a strategy whose placement does not fit (OOM)\n";
  }
  return out.str();
}

namespace {

// Whether a published point stands beside the record: each of its fields (graph, gpus, strategy)
// and swept paths has the record's value, as written or as the same quantity ("10Gbps", "10 Gbps").
bool published_matches(const PointRecord& r, const PublishedPoint& p) {
  for (const auto& [field, want] : p.match) {
    const SweepValue* swept = r.sweep_value(field);
    if (field == "graph" && (r.graph == want || (swept && swept->text == want))) continue;
    if (field == "strategy" && r.label == want) continue;
    if (field == "gpus" && std::to_string(r.gpus) == want) continue;
    if (field == "graph" || field == "strategy" || field == "gpus" || !swept) return false;
    if (swept->text == want) continue;
    const SweepValue other(field, want);
    const auto& a = swept->quantity;
    const auto& b = other.quantity;
    if (!a || !b || a->dimension != b->dimension || std::fabs(a->value - b->value) > 1e-12 * std::fabs(a->value)) return false;
  }
  return true;
}

std::string published_point_text(const PublishedSeries& s, const PublishedPoint& p) {
  std::string where;
  for (const auto& [field, value] : p.match) where += (where.empty() ? "" : " ") + field + "=" + value;
  return fmt::format("{}{}: {} ({}, {})", s.source, s.table.empty() ? "" : ", " + s.table, where, p.written, p.field);
}

}  // namespace

std::vector<std::string> unmatched_published(std::span<const PointRecord> records, std::span<const PublishedSeries> series) {
  std::vector<std::string> out;
  for (const PublishedSeries& s : series)
    for (const PublishedPoint& p : s.points)
      if (std::none_of(records.begin(), records.end(), [&](const PointRecord& r) { return published_matches(r, p); }))
        out.push_back(published_point_text(s, p));
  return out;
}

nlohmann::ordered_json records_to_json(std::span<const PointRecord> records, const std::string& dir,
                                       std::span<const PublishedSeries> published) {
  using ojson = nlohmann::ordered_json;
  ojson out = ojson::array();
  auto opt = [](const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); };
  for (const PointRecord* record : in_scenario_order(records)) {
    const PointRecord& r = *record;
    // params keeps the sweep's order (an ordered object), so the plots follow the scenario too.
    ojson params = ojson::object(), written = ojson::object();
    for (const SweepValue& v : r.sweep) {
      params[v.path] = v.quantity ? ojson(v.quantity->value) : ojson(v.text);
      written[v.path] = v.text;
    }
    const PointMeasurement* m = r.measurement ? &*r.measurement : nullptr;
    std::string trace;
    if (m && !m->trace_file.empty()) {
      const fs::path p(m->trace_file);
      trace = (p.is_absolute() ? p : fs::path(dir) / p).lexically_normal().string();
    }
    out.push_back({{"index", r.index},
                   {"scenario", r.scenario},
                   {"graph", r.graph},
                   {"cluster", r.cluster},
                   {"strategy", r.label},
                   {"answer_note", answer_note(r)},
                   {"gpus", r.gpus},
                   {"seed", r.seed ? ojson(*r.seed) : ojson(nullptr)},
                   {"params", params},
                   {"params_text", written},
                   {"latency", opt(r.latency())},
                   {"latency_source", !m || !r.latency()       ? ""
                                     : m->latency(kSimGrid)  ? "simgrid"
                                     : m->latency(kFlow)      ? "flow"
                                     : m->latency(kEvaluator) ? "evaluator"
                                                              : "estimate"},
                   {"evaluator_latency", opt(m ? m->latency(kEvaluator) : std::nullopt)},
                   {"simgrid_latency", opt(m ? m->latency(kSimGrid) : std::nullopt)},
                   {"flow_latency", opt(m ? m->latency(kFlow) : std::nullopt)},
                   {"search_time", opt(m ? std::optional(m->search_time) : std::nullopt)},
                   {"peak_memory", m ? m->peak_memory : 0.0},
                   {"gpus_used", m ? std::count_if(m->busy_per_gpu.begin(), m->busy_per_gpu.end(), [](double b) { return b > 0; })
                                   : std::ptrdiff_t{0}},
                   {"status", std::string(enum_name<PointStatus>(kPointStatusNames, r.status))},
                   {"oom", m && m->oom},
                   {"failed", r.failed()},
                   {"error", r.reason},
                   {"trace_file", trace},
                   {"strategy_report", m ? ojson(m->strategy_report) : ojson::object()}});
    ojson mine = ojson::array();
    for (const PublishedSeries& series : published)
      for (const PublishedPoint& p : series.points)
        if (published_matches(r, p))
          mine.push_back({{"source", series.source},
                          {"table", series.table},
                          {"note", series.note},
                          {"value", series.value},
                          {"number", p.value ? ojson(*p.value) : ojson(nullptr)},
                          {"text", p.written},
                          {"oom", !p.value}});
    out.back()["published"] = std::move(mine);
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

namespace {

// One point of a published series: {strategy: quickp, graph: alexnet, gpus: 2, published: 1.3}.
PublishedPoint published_point_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path,
                                         const std::string& unit, const std::string& unit_field) {
  YamlFields f(node, file, path);
  PublishedPoint p;
  p.field = path;
  if (!f.has("strategy")) throw InputError(file, f.field("strategy"), "missing: the strategy label the number is of");
  if (!f.has("published"))
    throw InputError(file, f.field("published"), fmt::format("missing: the paper's number, in {}, or OOM", unit));
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (!kv.second.IsScalar() || kv.second.Scalar().empty())
      throw InputError(file, f.field(key), key == "published" ? "expected a number or OOM" : "expected a value as written in the sweep");
    if (key != "published") p.match.emplace_back(key, kv.second.Scalar());
  }
  const std::string text = f.string("published");
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "oom") {
    p.written = "OOM";
    return p;
  }
  const std::optional<Quantity> number = parse_any_quantity(text);
  if (!number || number->dimension != Dimension::Number)
    throw InputError(file, f.field("published"),
                     fmt::format("expected a number in {} ({}) or OOM, got '{}'", unit, unit_field, text));
  p.value = parse_duration(text + unit, file, f.field("published"));
  p.written = fmt::format("{} {}", text, unit);
  return p;
}

PublishedSeries published_series_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"source", "table", "value", "unit", "note", "points"});
  PublishedSeries s;
  s.source = f.string("source");
  s.table = f.string_or("table", "");
  s.note = f.string_or("note", "");
  s.value = f.string("value");
  const std::vector<std::string> values(std::begin(kPublishedValues), std::end(kPublishedValues));
  if (std::find(values.begin(), values.end(), s.value) == values.end()) {
    const std::string hint = nearest_word(s.value, values);
    throw InputError(file, f.field("value"),
                     fmt::format("unknown value '{}'{} (valid: {}: the values the plots draw)", s.value,
                                 hint.empty() ? "" : "; did you mean '" + hint + "'?", fmt::join(values, ", ")));
  }
  s.unit = f.string("unit");
  parse_duration("1" + s.unit, file, f.field("unit"));  // a duration unit: s, ms, us, ns, min
  const YAML::Node points = f.node("points");
  if (!points.IsSequence() || points.size() == 0)
    throw InputError(file, f.field("points"), "expected a list of points ({strategy, graph, gpus, published})");
  for (std::size_t i = 0; i < points.size(); ++i)
    s.points.push_back(published_point_from_yaml(points[i], file, fmt::format("{}.points[{}]", path, i), s.unit, f.field("unit")));
  return s;
}

}  // namespace

ReportSpec report_spec_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  YamlFields f(node, file, path);
  f.allow_only({"tables", "gantt_strategy", "summary", "published"});
  ReportSpec spec;
  spec.gantt_strategy = f.string_or("gantt_strategy", "");
  if (f.has("summary"))
    spec.summary = enum_parse<ReportSummary>(kReportSummaryNames, f.string_or("summary", ""), file, f.field("summary"));
  if (f.has("published")) {
    const YAML::Node published = f.node("published");
    if (!published.IsSequence()) throw InputError(file, f.field("published"), "expected a list of published tables");
    for (std::size_t i = 0; i < published.size(); ++i)
      spec.published.push_back(published_series_from_yaml(published[i], file, fmt::format("{}.published[{}]", path, i)));
  }
  if (!f.has("tables")) return spec;
  const YAML::Node tables = f.node("tables");
  if (!tables.IsSequence()) throw InputError(file, f.field("tables"), "expected a list of tables");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    YamlFields t(tables[i], file, fmt::format("{}.tables[{}]", path, i));
    t.allow_only({"title", "rows", "columns", "value", "strategies", "relative_to"});
    PivotSpec p;
    p.title = t.string_or("title", "");
    p.rows = names_from_yaml(t, "rows");
    p.columns = names_from_yaml(t, "columns");
    p.value = t.string_or("value", "latency");
    p.strategies = names_from_yaml(t, "strategies");
    p.relative_to = t.string_or("relative_to", "");
    p.relative_to_field = t.field("relative_to");
    if (!p.relative_to.empty() && p.columns != std::vector<std::string>{"strategy"})
      throw InputError(file, t.field("relative_to"), "expected `columns: strategy` with relative_to (the speed-up is along a row)");
    p.file = file;
    p.rows_field = t.field("rows");
    p.columns_field = t.field("columns");
    p.value_field = t.field("value");
    p.strategies_field = t.field("strategies");
    if (p.rows.empty()) throw InputError(file, t.field("rows"), "expected at least one row field (graph, strategy, gpus or a swept path)");
    spec.tables.push_back(std::move(p));
  }
  return spec;
}

nlohmann::ordered_json published_to_json(std::span<const PublishedSeries> series) {
  using ojson = nlohmann::ordered_json;
  ojson out = ojson::array();
  for (const PublishedSeries& s : series) {
    ojson points = ojson::array();
    for (const PublishedPoint& p : s.points) {
      ojson match = ojson::object();
      for (const auto& [field, value] : p.match) match[field] = value;
      points.push_back({{"match", match}, {"number", p.value ? ojson(*p.value) : ojson(nullptr)}, {"text", p.written},
                        {"field", p.field}});
    }
    out.push_back({{"source", s.source}, {"table", s.table}, {"note", s.note}, {"value", s.value}, {"unit", s.unit},
                   {"points", points}});
  }
  return {{"units", {{"time", "s"}}}, {"published", out}};
}

std::vector<PublishedSeries> published_from_json(const nlohmann::ordered_json& j, const std::string& file) {
  std::vector<PublishedSeries> out;
  try {
    for (const auto& js : j.at("published")) {
      PublishedSeries& s = out.emplace_back();
      s.source = js.at("source").get<std::string>();
      s.table = js.at("table").get<std::string>();
      s.note = js.at("note").get<std::string>();
      s.value = js.at("value").get<std::string>();
      s.unit = js.at("unit").get<std::string>();
      for (const auto& jp : js.at("points")) {
        PublishedPoint& p = s.points.emplace_back();
        for (const auto& [field, value] : jp.at("match").items()) p.match.emplace_back(field, value.get<std::string>());
        if (!jp.at("number").is_null()) p.value = jp.at("number").get<double>();
        p.written = jp.at("text").get<std::string>();
        p.field = jp.at("field").get<std::string>();
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file, "", fmt::format("is not the published numbers `placesim run` writes: {}", e.what()));
  }
  return out;
}

std::vector<PublishedSeries> load_published(const std::string& results_dir) {
  const fs::path file = fs::path(results_dir) / "published.json";
  if (!fs::exists(file)) return {};
  std::ifstream in(file);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file.string(), "", fmt::format("is not JSON: {}", e.what()));
  }
  return published_from_json(j, file.string());
}

void write_published(const std::string& results_dir, std::span<const PublishedSeries> series) {
  const fs::path file = fs::path(results_dir) / "published.json";
  if (series.empty()) {
    std::error_code ec;
    fs::remove(file, ec);
    return;
  }
  write_file_atomically(file.string(), published_to_json(series).dump(1) + "\n");
}

namespace {

// "unknown field 'x'; did you mean 'y'? (valid: a, b, c)"
[[noreturn]] void unknown(const std::string& file, const std::string& field, std::string_view what, const std::string& name,
                          const std::vector<std::string>& valid) {
  const std::string hint = nearest_word(name, valid);
  throw InputError(file, field,
                   fmt::format("unknown {} '{}'{} (valid: {})", what, name, hint.empty() ? "" : "; did you mean '" + hint + "'?",
                               fmt::join(valid, ", ")));
}

}  // namespace

void check_pivot_fields(std::span<const PointRecord> records, const PivotSpec& spec) {
  std::vector<std::string> fields = {"graph", "strategy", "gpus"};
  for (const std::string& path : sweep_paths(records))
    if (std::find(fields.begin(), fields.end(), path) == fields.end()) fields.push_back(path);
  for (const auto& [names, where] : {std::pair{&spec.rows, &spec.rows_field}, std::pair{&spec.columns, &spec.columns_field}})
    for (const std::string& name : *names)
      if (std::find(fields.begin(), fields.end(), name) == fields.end()) unknown(spec.file, *where, "field", name, fields);
  std::vector<std::string> values(std::begin(kValueFields), std::end(kValueFields));
  for (const PointRecord& r : records)
    if (r.measurement)
      for (const auto& [key, v] : r.measurement->strategy_report.items())
        if (v.is_number() && std::find(values.begin(), values.end(), key) == values.end()) values.push_back(key);
  if (std::find(values.begin(), values.end(), spec.value) == values.end())
    unknown(spec.file, spec.value_field, "value", spec.value, values);
  std::vector<std::string> labels;
  for (const PointRecord* r : in_scenario_order(records))
    if (std::find(labels.begin(), labels.end(), r->label) == labels.end()) labels.push_back(r->label);
  for (const std::string& s : spec.strategies)
    if (std::find(labels.begin(), labels.end(), s) == labels.end()) unknown(spec.file, spec.strategies_field, "strategy", s, labels);
  if (!spec.relative_to.empty() && std::find(labels.begin(), labels.end(), spec.relative_to) == labels.end())
    unknown(spec.file, spec.relative_to_field, "strategy", spec.relative_to, labels);
}

std::string format_pivot_table(std::span<const PointRecord> records, const PivotSpec& spec) {
  std::vector<std::string> row_keys, column_keys;
  std::map<std::pair<std::string, std::string>, std::vector<double>> cells;
  std::set<std::pair<std::string, std::string>> oom, failed, infeasible;
  const SweepText text(records);
  for (const PointRecord* record : in_scenario_order(records)) {
    const PointRecord& r = *record;
    if (!spec.strategies.empty() &&
        std::find(spec.strategies.begin(), spec.strategies.end(), r.label) == spec.strategies.end())
      continue;
    const std::string row = joined(r, spec.rows, text), column = joined(r, spec.columns, text);
    if (std::find(row_keys.begin(), row_keys.end(), row) == row_keys.end()) row_keys.push_back(row);
    if (std::find(column_keys.begin(), column_keys.end(), column) == column_keys.end()) column_keys.push_back(column);
    if (r.failed()) {
      (r.status == PointStatus::Infeasible ? infeasible : failed).insert({row, column});
      continue;
    }
    if (r.measurement->oom) oom.insert({row, column});
    if (auto v = value_of(r, spec.value)) cells[{row, column}].push_back(*v);
  }
  // One unit for the whole table (its cells are one quantity, compared along rows and columns).
  std::map<std::pair<std::string, std::string>, double> medians;
  std::vector<double> all;
  for (const auto& [key, values] : cells) all.push_back(medians[key] = median(values));
  const ColumnUnit unit = unit_of(spec.value, all);
  std::ostringstream out;
  if (!spec.title.empty()) out << "**" << spec.title << "**\n\n";
  if (!spec.relative_to.empty()) {
    // Speed-ups: the reference's median in the row over the cell's; no reference, no number.
    std::map<std::pair<std::string, std::string>, double> ratios;
    for (const auto& [key, value] : medians) {
      auto ref = medians.find({key.first, spec.relative_to});
      ratios[key] = ref != medians.end() && value > 0 ? ref->second / value : std::numeric_limits<double>::quiet_NaN();
    }
    medians = std::move(ratios);
    out << "(" << spec.value << " of " << spec.relative_to << " / the cell's: above 1 is faster)\n\n";
  }
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
      auto it = medians.find({row, c});
      // A cell of several points that did not all run says the first reason: failed, then infeasible.
      std::string cell = it != medians.end()           ? (spec.relative_to.empty() ? format_in(it->second, unit)
                                                          : std::isnan(it->second) ? "-"
                                                                                   : fmt::format("{:.2f}x", it->second))
                         : failed.count({row, c})     ? "failed"
                         : infeasible.count({row, c}) ? "infeasible"
                                                      : "";
      // A speed-up of a placement that does not fit is no speed-up: the cell says OOM alone.
      if (oom.count({row, c})) cell = spec.relative_to.empty() ? cell + " (OOM)" : "OOM";
      out << " | " << cell;
    }
    out << " |\n";
  }
  return out.str();
}

namespace {

// The points of one case: one scenario, the same swept values (the strategy aside).
std::string case_key(const PointRecord& r) {
  std::string key = r.scenario;
  for (const SweepValue& v : r.sweep)
    if (v.path != "strategy") key += fmt::format("\n{}={}", v.path, v.text);
  return key;
}

// What a case's points are compared with: the best latencies among the points that fit, and
// single-device's evaluator latency when it fits.
struct CaseBest {
  std::optional<double> evaluator, simgrid, single_device;
};

std::map<std::string, CaseBest> case_bests(std::span<const PointRecord> records) {
  std::map<std::string, CaseBest> bests;
  auto lower = [](std::optional<double>& best, double v) { best = std::min(best.value_or(v), v); };
  for (const PointRecord& r : records) {
    CaseBest& best = bests[case_key(r)];
    if (r.status != PointStatus::Ok) continue;
    const PointMeasurement& m = *r.measurement;
    if (!m.latency(kEvaluator)) continue;  // no engine ran
    lower(best.evaluator, *m.latency(kEvaluator));
    if (m.latency(kSimGrid)) lower(best.simgrid, *m.latency(kSimGrid));
    if (m.single_device_latency) lower(best.single_device, *m.single_device_latency);
  }
  return bests;
}

// A time limit is honoured within 10% or 0.5 s, whichever is more.
bool overran_time_limit(const PointRecord& r) {
  const SearchFacts& facts = r.measurement->facts;
  if (!facts.time_limit_s) return false;
  const double seconds = r.measurement->search_time, allowed = *facts.time_limit_s;
  return seconds > allowed * 1.1 && seconds > allowed + 0.5;
}

// Latencies within this relative difference are the same (sums in another order).
constexpr double kSameLatency = 1e-9;

std::optional<double> ratio(double latency, const std::optional<double>& best) {
  if (!best || *best <= 0) return std::nullopt;
  return latency / *best;
}

std::string ratio_text(const std::optional<double>& r) { return r ? fmt::format("{:.3f}x", *r) : "-"; }

}  // namespace

std::size_t count_cases(std::span<const PointRecord> records) {
  std::set<std::string> keys;
  for (const PointRecord& r : records) keys.insert(case_key(r));
  return keys.size();
}

std::vector<RobustnessRow> robustness_summary(std::span<const PointRecord> records) {
  const std::map<std::string, CaseBest> bests = case_bests(records);
  std::vector<RobustnessRow> rows;
  struct Ratios {
    std::vector<double> evaluator, simgrid, lower_bound;
  };
  std::vector<Ratios> ratios;
  for (const PointRecord* record : in_scenario_order(records)) {
    const PointRecord& r = *record;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const RobustnessRow& row) { return row.strategy == r.label; });
    if (it == rows.end()) {
      rows.emplace_back().strategy = r.label;
      ratios.emplace_back();
      it = rows.end() - 1;
    }
    RobustnessRow& row = *it;
    Ratios& of_row = ratios[static_cast<std::size_t>(it - rows.begin())];
    const CaseBest& best = bests.at(case_key(r));
    ++row.points;
    const PointStatus status = r.status;
    if (status == PointStatus::Failed || status == PointStatus::TimedOut) ++row.failed;
    if (status == PointStatus::Infeasible) ++row.infeasible;
    if (!r.measurement) continue;
    const PointMeasurement& m = *r.measurement;
    if (!m.latency(kEvaluator)) continue;  // no engine ran
    const double evaluator = *m.latency(kEvaluator);
    if (status == PointStatus::Oom && best.evaluator) ++row.oom_where_another_fits;
    if (overran_time_limit(r)) ++row.over_time_limit;
    if (best.single_device && evaluator > *best.single_device * (1 + kSameLatency)) ++row.slower_than_single_device;
    if (status != PointStatus::Ok) continue;
    if (const auto e = ratio(evaluator, best.evaluator)) {
      of_row.evaluator.push_back(*e);
      if (*e <= 1.05 * (1 + kSameLatency)) ++row.within_5_percent;
    }
    if (m.latency(kSimGrid))
      if (const auto g = ratio(*m.latency(kSimGrid), best.simgrid)) of_row.simgrid.push_back(*g);
    if (const auto b = ratio(evaluator, m.bounds.best())) of_row.lower_bound.push_back(*b);
  }
  auto median_of = [](const std::vector<double>& v) { return v.empty() ? std::nullopt : std::optional(median(v)); };
  auto worst_of = [](const std::vector<double>& v) {
    return v.empty() ? std::nullopt : std::optional(*std::max_element(v.begin(), v.end()));
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].compared = ratios[i].evaluator.size();
    rows[i].median_ratio = median_of(ratios[i].evaluator);
    rows[i].worst_ratio = worst_of(ratios[i].evaluator);
    rows[i].median_simgrid_ratio = median_of(ratios[i].simgrid);
    rows[i].worst_simgrid_ratio = worst_of(ratios[i].simgrid);
    rows[i].median_lower_bound_ratio = median_of(ratios[i].lower_bound);
  }
  return rows;
}

std::string format_robustness_summary(std::span<const RobustnessRow> rows, std::size_t cases) {
  std::size_t points = 0;
  for (const RobustnessRow& row : rows) points += row.points;
  std::ostringstream out;
  out << fmt::format("**Robustness: {}, {}, {}**\n\n", count_of(rows.size(), "strategy", "strategies"),
                     count_of(cases, "case", "cases"), count_of(points, "point", "points"));
  out << "| strategy | points | failed | infeasible | OOM, another fits | over time limit | slower than single-device "
         "| evaluator / best: median | worst | within 5% of best | SimGrid / best: median | worst "
         "| evaluator / lower bound: median |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const RobustnessRow& row : rows) {
    const std::string within =
        row.compared ? fmt::format("{}/{} ({:.0f}%)", row.within_5_percent, row.compared,
                                   100.0 * static_cast<double>(row.within_5_percent) / static_cast<double>(row.compared))
                     : "-";
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", row.strategy, row.points,
                       row.failed, row.infeasible, row.oom_where_another_fits, row.over_time_limit,
                       row.slower_than_single_device, ratio_text(row.median_ratio), ratio_text(row.worst_ratio), within,
                       ratio_text(row.median_simgrid_ratio), ratio_text(row.worst_simgrid_ratio),
                       ratio_text(row.median_lower_bound_ratio));
  }
  out << "\nA case is one combination of the swept values; a point fits when its status is ok. OOM, another fits: "
         "out-of-memory answers where some strategy's point of the case fits. Over time limit: search time above the "
         "strategy's time_limit by more than 10% and 0.5 s. Slower than single-device: evaluator latency above "
         "single-device's, where single-device fits. Ratios: a point that fits against the lowest latency of the "
         "points of its case that fit (evaluator; SimGrid where it ran), and against the whole problem's lower bound "
         "(max of critical path and work per GPU).\n";
  return out.str();
}

namespace {

void write_text(const fs::path& path, const std::string& text) {
  write_file_atomically(path.string(), text);
}


}  // namespace

std::string plot_python() {
  if (const char* env = std::getenv("PLACESIM_PYTHON"); env && *env) return env;
  if (fs::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
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

// The plan the search planner chose at each point (its strategy_report.best), one row per record:
// how the best plan changes along the sweep. "" when no record has one.
std::string format_search_table(std::span<const PointRecord> records) {
  const SweepText text(records);
  struct Row {
    std::string point, label;
    nlohmann::json best;
    std::optional<double> latency;
  };
  std::vector<Row> rows;
  std::size_t width = 5;  // "point"
  for (const PointRecord* r : in_scenario_order(records)) {
    if (!r->measurement) continue;
    const auto it = r->measurement->strategy_report.find("best");
    if (it == r->measurement->strategy_report.end() || !it->is_object() || !it->contains("tp")) continue;
    const std::string point = group_name(*r, text);
    rows.push_back({point.empty() ? "-" : point, r->label, *it, r->latency()});
    width = std::max(width, rows.back().point.size());
  }
  if (rows.empty()) return "";
  auto line = [&](const std::string& point, const std::string& label, auto tp, auto pp, auto dp, auto cp, auto ep, auto v, auto mbs,
                  const std::string& recompute, const std::string& sp, const std::string& optimizer, const std::string& time,
                  const std::string& mfu) {
    return fmt::format("{:<{}} {:<10} {:>3} {:>3} {:>4} {:>3} {:>3} {:>3} {:>4} {:<9} {:<3} {:<11} {:>10} {:>6}\n", point, width, label, tp,
                       pp, dp, cp, ep, v, mbs, recompute, sp, optimizer, time, mfu);
  };
  std::string out = "\nthe plan the search chose at each point (strategy_report.best; every plan it simulated in .ranked):\n" +
                    line("point", "strategy", "tp", "pp", "dp", "cp", "ep", "v", "mbs", "recompute", "sp", "optimizer", "iteration", "MFU");
  for (const Row& r : rows) {
    const nlohmann::json& b = r.best;
    out += line(r.point, r.label, b.value("tp", 0), b.value("pp", 0), b.value("dp", 0), b.value("cp", 0), b.value("ep", 0),
                b.value("virtual_stages", 0), b.value("micro_batch_size", 0), b.value("recompute", std::string()),
                b.value("sequence_parallel", false) ? "on" : "off", b.value("optimizer", std::string()),
                r.latency ? format_duration(*r.latency) : std::string("-"), fmt::format("{:.1f}%", 100 * b.value("mfu", 0.0)));
  }
  return out;
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
  for (const auto& p : options.pivots) check_pivot_fields(records, p);  // before anything is printed or written
  fs::create_directories(dir);
  // Jobs on one cluster: per job and allocation, alone, shared and the slowdown (a comparison of
  // strategies would compare jobs).
  const std::string jobs = format_jobs_table(records);
  const std::string table = (jobs.empty() ? format_comparison_table(records) : jobs) + format_search_table(records);
  out << table;
  write_text(dir / "table.txt", table);
  if (!options.pivots.empty()) {
    std::string md;
    for (const auto& p : options.pivots) md += format_pivot_table(records, p) + "\n";
    out << md;
    write_text(dir / "pivot.md", md);
  }
  const fs::path summary_file = dir / fmt::format("{}.md", enum_name<ReportSummary>(kReportSummaryNames, options.summary));
  if (options.summary == ReportSummary::Robustness) {
    const std::string md = format_robustness_summary(robustness_summary(records), count_cases(records));
    out << md;
    write_text(summary_file, md);
  }
  // The papers' numbers the plots draw beside placesim's; one that matches no record is said.
  const std::vector<PublishedSeries> published =
      options.published.empty() ? load_published(fs::path(file).parent_path().string()) : options.published;
  for (const std::string& p : unmatched_published(records, published))
    err << "report: a published number matches no result and is not drawn: " << p << "\n";
  // A stray byte that is not UTF-8 becomes U+FFFD rather than an exception (see dump_json).
  const nlohmann::ordered_json records_json = records_to_json(records, fs::path(file).parent_path().string(), published);
  write_text(dir / "records.json", records_json.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  // Tables to `out`, what was done to `err`; `out` is flushed before the plot script (which
  // writes to the same stderr) runs, so that nothing lands in the middle of a table.
  out << std::flush;
  err << fmt::format("report: wrote {}/table.txt{}{}, {}/records.json\n", dir.string(),
                     options.pivots.empty() ? "" : ", " + (dir / "pivot.md").string(),
                     options.summary == ReportSummary::None ? "" : ", " + summary_file.string(), dir.string())
      << std::flush;
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
