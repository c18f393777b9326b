#include "scenarios/runner/record.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "sim/core/errors.h"

namespace placesim {

using ojson = nlohmann::ordered_json;

SweepValue::SweepValue(std::string path_, std::string text_)
    : path(std::move(path_)), text(std::move(text_)), quantity(parse_any_quantity(text)) {}

std::string SweepValue::printed() const { return quantity ? format_quantity(*quantity) : text; }

std::string_view point_status_name(PointStatus status) { return enum_name<PointStatus>(kPointStatusNames, status); }

const EngineLatency* PointMeasurement::engine(std::string_view name) const {
  for (const EngineLatency& e : engines)
    if (e.engine == name) return &e;
  return nullptr;
}

const std::optional<double> PointMeasurement::latency(std::string_view name) const {
  const EngineLatency* e = engine(name);
  return e ? std::optional<double>(e->latency) : std::nullopt;
}

void PointMeasurement::set_latency(std::string_view name, double latency, double wall_s) {
  std::erase_if(engines, [&](const EngineLatency& e) { return e.engine == name; });
  engines.push_back({std::string(name), latency, wall_s});
  std::vector<std::string> order = engine_registry().names();
  auto rank = [&](const EngineLatency& e) { return std::find(order.begin(), order.end(), e.engine) - order.begin(); };
  std::stable_sort(engines.begin(), engines.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
}

std::optional<double> PointRecord::latency() const {
  if (!measurement) return std::nullopt;
  for (std::string_view engine : {kSimGrid, kFlow, kEvaluator, kEstimate})
    if (const auto l = measurement->latency(engine)) return l;
  return std::nullopt;
}

const SweepValue* PointRecord::sweep_value(std::string_view path) const {
  auto it = std::find_if(sweep.begin(), sweep.end(), [&](const SweepValue& v) { return v.path == path; });
  return it != sweep.end() ? &*it : nullptr;
}

namespace {

// The fields of one JSON object, read with errors that name the file, the line and the field.
class FieldReader {
 public:
  FieldReader(const ojson& j, std::string file, std::string where)
      : j_(j), file_(std::move(file)), where_(std::move(where)) {
    if (!j.is_object()) fail("", "expected a JSON object (a record that `placesim run` writes)");
  }

  bool has(const char* key) const { return j_.contains(key); }
  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }
  const ojson& at(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, "missing");
    return *it;
  }
  // One of `names`, by name.
  template <class E>
  E choice(const char* key, std::span<const EnumName<E>> names) const {
    const std::string text = string(key);
    for (const auto& n : names)
      if (n.name == text) return n.value;
    std::vector<std::string_view> choices;
    for (const auto& n : names) choices.push_back(n.name);
    fail(key, "expected " + join_choices(choices));
  }
  std::string string(const char* key) const {
    const ojson& v = at(key);
    if (!v.is_string()) fail(key, "expected a string");
    return v.get<std::string>();
  }
  template <class Int>
  Int integer(const char* key) const {
    const ojson& v = at(key);
    if (!v.is_number_integer()) fail(key, "expected a whole number");
    return v.get<Int>();
  }
  // A number; null stands for a value JSON cannot hold (NaN or infinity are written as null).
  double number(const char* key) const { return number_of(at(key), key); }
  std::optional<double> optional_number(const char* key) const {
    const ojson& v = at(key);
    if (v.is_null()) return std::nullopt;
    return number_of(v, key);
  }
  bool boolean(const char* key) const {
    const ojson& v = at(key);
    if (!v.is_boolean()) fail(key, "expected true or false");
    return v.get<bool>();
  }
  std::vector<double> numbers(const char* key) const {
    std::vector<double> out;
    for (const ojson& v : array(key)) out.push_back(number_of(v, key));
    return out;
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    for (const ojson& v : array(key)) {
      if (!v.is_string()) fail(key, "expected a list of strings");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  const ojson& array(const char* key) const {
    const ojson& v = at(key);
    if (!v.is_array()) fail(key, "expected a list");
    return v;
  }
  const ojson& object(const char* key) const {
    const ojson& v = at(key);
    if (!v.is_object()) fail(key, "expected an object");
    return v;
  }
  // A reader of an object inside this one, whose errors name it (`links[2]`).
  FieldReader inner(const ojson& j, const std::string& name) const { return FieldReader(j, file_, where_ + ": " + name); }
  [[noreturn]] void fail(std::string_view key, const std::string& what) const {
    throw InputError(file_, where_, key.empty() ? what : fmt::format("\"{}\": {}", key, what));
  }

 private:
  double number_of(const ojson& v, const char* key) const {
    if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!v.is_number()) fail(key, "expected a number");
    return v.get<double>();
  }

  const ojson& j_;
  std::string file_, where_;
};

PointMeasurement measurement_from_json(const FieldReader& f) {
  PointMeasurement m;
  m.search_time = f.number("search_time");
  // Every registered engine's latency where it ran (older runners wrote simgrid_latency: null
  // where SimGrid did not).
  for (const EngineInfo& engine : engine_registry()) {
    const std::string key = engine.name + "_latency", wall = engine.name + "_wall_time";
    if (!f.has(key.c_str())) continue;
    const std::optional<double> latency = f.optional_number(key.c_str());
    if (!latency) continue;
    m.engines.push_back({engine.name, *latency, f.has(wall.c_str()) ? f.optional_number(wall.c_str()).value_or(0.0) : 0.0});
  }
  if (f.has("estimate_note")) m.estimate_note = f.string("estimate_note");
  m.bounds.critical_path = f.number("lower_bound_critical_path");
  m.bounds.work_per_device = f.number("lower_bound_work_per_gpu");
  // Older runners did not write these (lower_bound is max of the two above).
  if (f.has("lower_bound_memory_per_gpu")) m.bounds.memory_per_device = f.number("lower_bound_memory_per_gpu");
  if (f.has("single_device_latency")) m.single_device_latency = f.number("single_device_latency");
  m.memory_per_gpu = f.numbers("memory_per_gpu");
  m.peak_memory = f.number("peak_memory");
  m.oom = f.boolean("oom");
  m.busy_per_gpu = f.numbers("busy_per_gpu");
  const ojson& links = f.array("links");
  for (std::size_t i = 0; i < links.size(); ++i) {
    const FieldReader link = f.inner(links[i], fmt::format("links[{}]", i));
    m.links.push_back({link.string("link"), link.number("bytes"), link.number("busy_time"), link.number("busy_fraction"),
                       link.number("mean_utilisation")});
  }
  if (f.has("time_limit")) m.facts.time_limit_s = f.number("time_limit");
  if (f.has("over_time_limit")) m.facts.over_time_limit = f.boolean("over_time_limit");
  if (f.has("cost_model")) m.facts.cost_model = f.choice<CostModelKind>("cost_model", kCostModelNames);
  if (f.has("portfolio_winner")) m.facts.portfolio_winner = f.string("portfolio_winner");
  if (f.has("memory_fallback")) m.facts.memory_fallback = f.string("memory_fallback");
  if (f.has("warm_start")) m.facts.warm_start = f.string("warm_start");
  m.strategy_report = f.object("strategy_report");
  m.placement_file = f.string("placement_file");
  m.trace_file = f.string("trace_file");
  return m;
}

}  // namespace

ojson to_json(const PointRecord& r) {
  ojson j;
  j["key"] = r.key;
  j["index"] = r.index;
  j["scenario"] = r.scenario;
  j["graph"] = r.graph;
  j["gpus"] = r.gpus;
  j["cluster"] = r.cluster;
  ojson sweep = ojson::object();
  for (const SweepValue& v : r.sweep) sweep[v.path] = v.text;
  j["sweep"] = std::move(sweep);
  j["label"] = r.label;
  j["strategy"] = r.strategy;
  j["seed"] = r.seed ? ojson(*r.seed) : ojson(nullptr);
  j["repetition"] = r.repetition;
  j["engine"] = r.engines.name();
  j["order"] = std::string(enum_name<RunOrder>(kRunOrderNames, r.order));
  j["collectives"] = std::string(enum_name<CollectiveDetail>(kCollectiveDetailNames, r.collectives));
  if (r.graph_size) {
    j["operators"] = r.graph_size->operators;
    j["tensors"] = r.graph_size->tensors;
  }
  j["status"] = std::string(point_status_name(r.status));
  if (!r.measurement) {
    j["error"] = r.reason;
  } else {
    const PointMeasurement& m = *r.measurement;
    j["search_time"] = m.search_time;
    for (const EngineLatency& e : m.engines) {
      j[e.engine + "_latency"] = e.latency;
      j[e.engine + "_wall_time"] = e.wall_s;
    }
    if (!m.estimate_note.empty()) j["estimate_note"] = m.estimate_note;
    j["lower_bound_critical_path"] = m.bounds.critical_path;
    j["lower_bound_work_per_gpu"] = m.bounds.work_per_device;
    j["lower_bound"] = m.bounds.best();
    j["lower_bound_memory_per_gpu"] = m.bounds.memory_per_device;
    if (m.single_device_latency) j["single_device_latency"] = *m.single_device_latency;
    j["memory_per_gpu"] = m.memory_per_gpu;
    j["peak_memory"] = m.peak_memory;
    j["oom"] = m.oom;
    j["busy_per_gpu"] = m.busy_per_gpu;
    ojson links = ojson::array();
    for (const auto& l : m.links)
      links.push_back({{"link", l.name}, {"bytes", l.bytes}, {"busy_time", l.busy_s},
                       {"busy_fraction", l.busy_fraction}, {"mean_utilisation", l.mean_utilisation}});
    j["links"] = std::move(links);
    if (m.facts.time_limit_s) j["time_limit"] = *m.facts.time_limit_s;
    if (m.facts.time_limit_s) j["over_time_limit"] = m.facts.over_time_limit;
    if (m.facts.cost_model) j["cost_model"] = std::string(cost_model_name(*m.facts.cost_model));
    if (m.facts.portfolio_winner) j["portfolio_winner"] = *m.facts.portfolio_winner;
    if (m.facts.memory_fallback) j["memory_fallback"] = *m.facts.memory_fallback;
    if (m.facts.warm_start) j["warm_start"] = *m.facts.warm_start;
    j["strategy_report"] = m.strategy_report;
    j["placement_file"] = m.placement_file;
    j["trace_file"] = m.trace_file;
  }
  if (r.graph_size) j["warnings"] = r.graph_size->warnings;
  return j;
}

std::string dump_json(const ojson& j, int indent) { return j.dump(indent, ' ', false, ojson::error_handler_t::replace); }

PointRecord record_from_json(const ojson& j, const std::string& file, const std::string& where) {
  const FieldReader f(j, file, where);
  PointRecord r;
  r.key = f.string("key");
  r.index = f.integer<std::size_t>("index");
  r.scenario = f.string("scenario");
  r.graph = f.string("graph");
  r.gpus = f.integer<int>("gpus");
  r.cluster = f.string("cluster");
  for (const auto& [path, value] : f.object("sweep").items()) {
    if (!value.is_string()) f.fail("sweep", fmt::format("\"{}\": expected the value as written (a string)", path));
    r.sweep.emplace_back(path, value.get<std::string>());
  }
  r.label = f.string("label");
  r.strategy = f.string("strategy");
  if (!f.at("seed").is_null()) r.seed = f.integer<long>("seed");
  r.repetition = f.integer<int>("repetition");
  r.engines = EngineSet::parse(f.string("engine"), f.file(), f.where() + ": \"engine\"");
  r.order = f.choice<RunOrder>("order", kRunOrderNames);
  // Absent from records written before simulation.collectives.
  if (f.has("collectives")) r.collectives = f.choice<CollectiveDetail>("collectives", kCollectiveDetailNames);
  if (f.has("operators")) {
    // Braced, not emplace(): clang decides whether the nested GraphSize is default-constructible
    // while PointRecord is still incomplete, and says it is not.
    r.graph_size = PointRecord::GraphSize{f.integer<std::size_t>("operators"), f.integer<std::size_t>("tensors"),
                                          f.strings("warnings")};
  }
  r.status = f.choice<PointStatus>("status", kPointStatusNames);
  if (r.status == PointStatus::Failed || r.status == PointStatus::Infeasible || r.status == PointStatus::TimedOut) {
    r.reason = f.string("error");
  } else {
    r.measurement = measurement_from_json(f);
    if (r.measurement->oom != (r.status == PointStatus::Oom))
      f.fail("status", fmt::format("'{}' disagrees with \"oom\"", point_status_name(r.status)));
    // Older runners wrote an infinite or NaN latency as null with status ok: such a point did not
    // measure anything comparable, so it reads as the failed point it is (and --resume goes on).
    if (f.has("evaluator_latency") && !r.measurement->latency(kEvaluator)) {
      r.measurement.reset();
      r.reason = fmt::format("recorded as {} with \"evaluator_latency\": null: the latency was not a finite number",
                             point_status_name(r.status));
      r.status = PointStatus::Failed;
    }
    // Only a point that ran no engine but the estimate has no evaluator latency.
    if (r.measurement && !r.engines.estimate_only() && !f.has("evaluator_latency"))
      f.fail("evaluator_latency", fmt::format("missing, but the point ran on engine {}", r.engines.name()));
  }
  return r;
}

std::vector<std::string> sweep_paths(std::span<const PointRecord> records) {
  std::vector<std::string> paths;
  for (const PointRecord& r : records)
    for (const SweepValue& v : r.sweep)
      if (std::find(paths.begin(), paths.end(), v.path) == paths.end()) paths.push_back(v.path);
  return paths;
}

ojson results_document(std::span<const PointRecord> records) {
  ojson j;
  const PointRecord* first = records.empty() ? nullptr : &records.front();
  j["scenario"] = first ? first->scenario : std::string();
  j["cluster"] = first ? first->cluster : std::string();
  j["operators"] = first && first->graph_size ? first->graph_size->operators : std::size_t{0};
  j["tensors"] = first && first->graph_size ? first->graph_size->tensors : std::size_t{0};
  j["units"] = {{"time", "s"}, {"memory", "B"}, {"bandwidth", "B/s"}};
  std::vector<std::string> warnings;
  for (const PointRecord& r : records)
    if (r.graph_size)
      for (const auto& w : r.graph_size->warnings)
        if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  j["warnings"] = warnings;
  j["sweep"] = sweep_paths(records);
  ojson all = ojson::array();
  for (const PointRecord& r : records) all.push_back(to_json(r));
  j["strategies"] = std::move(all);
  return j;
}

namespace {

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string answer_note(const PointRecord& record) {
  if (!record.measurement) return "";
  const SearchFacts& facts = record.measurement->facts;
  std::vector<std::string> notes;
  if (facts.portfolio_winner && *facts.portfolio_winner != record.strategy) notes.push_back("portfolio: " + *facts.portfolio_winner);
  if (facts.memory_fallback && *facts.memory_fallback != "none fits") notes.push_back("memory fallback: " + *facts.memory_fallback);
  if (facts.warm_start) notes.push_back("from: " + *facts.warm_start);
  return fmt::format("{}", fmt::join(notes, "; "));
}

std::string shown_label(const PointRecord& record) {
  const std::string note = answer_note(record);
  return note.empty() ? record.label : fmt::format("{} [{}]", record.label, note);
}

std::string records_to_csv(std::span<const PointRecord> records) {
  const std::vector<std::string> paths = sweep_paths(records);
  std::string csv = "key,scenario,strategy,label";
  for (const auto& p : paths) csv += "," + csv_quote(p);
  csv += ",seed,repetition,status";
  for (const EngineInfo& e : engine_registry()) csv += fmt::format(",{}_latency_s", e.name);
  csv += ",search_time_s,peak_memory_bytes,oom,portfolio_winner,answer_note,error\n";
  for (const PointRecord& r : records) {
    csv += fmt::format("{},{},{},{}", csv_quote(r.key), csv_quote(r.scenario), csv_quote(r.strategy), csv_quote(r.label));
    for (const auto& p : paths) {
      const SweepValue* v = r.sweep_value(p);
      csv += "," + (v ? csv_quote(v->text) : std::string());
    }
    csv += fmt::format(",{},{},{}", r.seed ? std::to_string(*r.seed) : std::string(), r.repetition,
                       point_status_name(r.status));
    if (const auto& m = r.measurement) {
      for (const EngineInfo& e : engine_registry()) {
        const auto latency = m->latency(e.name);
        csv += "," + (latency ? fmt::format("{:.9g}", *latency) : std::string());
      }
      csv += fmt::format(",{:.6g},{:.0f},{},{},{},", m->search_time, m->peak_memory, m->oom ? "true" : "false",
                         m->facts.portfolio_winner ? csv_quote(*m->facts.portfolio_winner) : std::string(),
                         csv_quote(answer_note(r)));
    } else {
      csv += std::string(engine_registry().size() + 5, ',') + "," + csv_quote(r.reason);
    }
    csv += "\n";
  }
  return csv;
}

namespace {

// For one group of points (no sweep): which placement that fits is fastest under contention
// (SimGrid's latency, else the flow engine's), and, when the contention-free evaluator ranks
// another first, that one with its latency under contention: the gap the search cost model makes.
std::string fastest_lines(std::span<const PointRecord> records, const ColumnUnit& unit) {
  const PointRecord *contended_best = nullptr, *free_best = nullptr;
  const char* whose = nullptr;
  auto contended = [](const PointMeasurement& m) { return m.latency(kSimGrid) ? m.latency(kSimGrid) : m.latency(kFlow); };
  for (const PointRecord& r : records) {
    if (!r.measurement || r.measurement->oom || !r.measurement->latency(kEvaluator)) continue;
    const PointMeasurement& m = *r.measurement;
    if (!free_best || *m.latency(kEvaluator) < *free_best->measurement->latency(kEvaluator)) free_best = &r;
    if (const auto c = contended(m); c && (!contended_best || *c < *contended(*contended_best->measurement))) {
      contended_best = &r;
      whose = m.latency(kSimGrid) ? "SimGrid" : "flow engine";
    }
  }
  if (!contended_best) return "";
  std::string out = fmt::format("fastest under contention ({}): {}, {} {}\n", whose, shown_label(*contended_best),
                                format_number_in(*contended(*contended_best->measurement), unit), unit.name);
  if (free_best != contended_best)
    out += fmt::format("fastest without contention (evaluator): {}, {} {}, but {} {} under contention\n",
                       shown_label(*free_best), format_number_in(*free_best->measurement->latency(kEvaluator), unit), unit.name,
                       format_number_in(*contended(*free_best->measurement), unit), unit.name);
  return out;
}

}  // namespace

std::string format_jobs_table(std::span<const PointRecord> records) {
  // A job's record: measured (a slowdown), or one that did not run (keyed by its job, allocation swept).
  auto measured = [](const PointRecord& r) {
    return r.measurement && r.measurement->strategy_report.contains("slowdown") && r.measurement->strategy_report.contains("shared");
  };
  std::vector<const PointRecord*> jobs;
  std::vector<double> times;
  std::string engine;
  for (const PointRecord& r : records)
    if (measured(r)) {
      jobs.push_back(&r);
      times.push_back(r.measurement->strategy_report["alone_latency"].get<double>());
      times.push_back(r.measurement->strategy_report["shared_latency"].get<double>());
      if (engine.empty()) engine = r.measurement->strategy_report["shared"].value("engine", std::string("?"));
    } else if (!r.measurement && r.sweep_value("allocation") && r.key.find(" job=") != std::string::npos) {
      jobs.push_back(&r);
    }
  if (jobs.empty()) return "";
  const ColumnUnit unit = duration_unit(times);
  if (engine.empty()) engine = "no job ran";
  // The other swept values first, then the allocation.
  auto point_of = [](const PointRecord& r) {
    std::string point;
    for (const SweepValue& v : r.sweep)
      if (v.path != "strategy" && v.path != "allocation") point += (point.empty() ? "" : " ") + v.path + "=" + v.text;
    if (r.seed) point += fmt::format("{}seed={}", point.empty() ? "" : " ", *r.seed);
    const SweepValue* a = r.sweep_value("allocation");
    return point + (point.empty() ? "" : " ") + (a ? a->text : std::string("-"));
  };
  std::size_t allocation_width = 10, job_width = 3;
  for (const PointRecord* r : jobs) {
    allocation_width = std::max(allocation_width, point_of(*r).size());
    job_width = std::max(job_width, r->label.size());
  }
  std::string out = fmt::format("jobs on one cluster ({}; alone: the same job on the same GPUs with the fabric to itself; an "
                                "iteration's mean over the iterations that cover the longest job's; GPUs used/given where some "
                                "stay idle; iterations (N%) where 64 covered only N% of the window):\n", engine);
  const bool swept = std::any_of(jobs.begin(), jobs.end(), [&](const PointRecord* r) { return point_of(*r).find(' ') != std::string::npos; });
  out += fmt::format("{:<{}} {:<{}} {:>6} {:>10} {:>14} {:>14} {:>9}\n", swept ? "point, allocation" : "allocation", allocation_width, "job", job_width, "GPUs",
                     "iterations", fmt::format("alone ({})", unit.name), fmt::format("shared ({})", unit.name), "slowdown");
  for (const PointRecord* r : jobs) {
    if (!measured(*r)) {
      out += fmt::format("{:<{}} {:<{}} {:>6} {}: {}\n", point_of(*r), allocation_width, r->label, job_width, r->gpus,
                         point_status_name(r->status), r->reason);
      continue;
    }
    const auto& report = r->measurement->strategy_report;
    // GPUs used of those given, when some stay idle; iterations cut short by the cap, with the
    // share of the window they cover.
    const std::size_t used = report["shared"].value("gpus_used", static_cast<std::size_t>(r->gpus));
    const std::string gpus = used == static_cast<std::size_t>(r->gpus) ? fmt::format("{}", r->gpus) : fmt::format("{}/{}", used, r->gpus);
    const double covers = report["shared"].value("covers_window", 1.0);
    const std::string iterations = covers < 0.99 ? fmt::format("{} ({:.0f}%)", report["shared"].value("iterations", 1), 100 * covers)
                                                 : fmt::format("{}", report["shared"].value("iterations", 1));
    out += fmt::format("{:<{}} {:<{}} {:>6} {:>10} {:>14} {:>14} {:>9.3f}\n", point_of(*r), allocation_width,
                       r->label, job_width, gpus, iterations,
                       format_number_in(report["alone_latency"].get<double>(), unit),
                       format_number_in(report["shared_latency"].get<double>(), unit), report["slowdown"].get<double>());
    if (report["shared"].contains("against_others")) {
      const auto& a = report["shared"]["against_others"];
      if (a.contains("shared_latency"))
        out += fmt::format("{:<{}}   chosen against the others' load: alone {}, shared {} {}, slowdown {:.3f}: {} than chosen alone\n", "",
                           allocation_width, format_number_in(a["alone_latency"].get<double>(), unit),
                           format_number_in(a["shared_latency"].get<double>(), unit), unit.name, a["slowdown"].get<double>(),
                           a["beats_choosing_alone"].get<bool>() ? "faster" : "no faster");
      else
        out += fmt::format("{:<{}}   chosen against the others' load: {}: {}\n", "", allocation_width,
                           a.value("status", std::string("?")), a.value("reason", std::string()));
    }
    if (report["shared"].contains("all_adapted")) {
      const auto& a = report["shared"]["all_adapted"];
      std::string who;
      for (const auto& name : a["jobs_adapted"]) who += (who.empty() ? "" : ", ") + name.get<std::string>();
      if (a.contains("shared_latency"))
        out += fmt::format("{:<{}}   with every adapted choice together ({}): shared {} {}, slowdown {:.3f}\n", "", allocation_width, who,
                           format_number_in(a["shared_latency"].get<double>(), unit), unit.name, a["slowdown"].get<double>());
      else
        out += fmt::format("{:<{}}   with every adapted choice together ({}): {}: {}\n", "", allocation_width, who,
                           a.value("status", std::string("?")), a.value("reason", std::string()));
    }
    if (report["shared"].contains("without"))
      for (const auto& w : report["shared"]["without"])
        out += fmt::format("{:<{}}   (shared without {}, {})\n", "", allocation_width, w.value("job", std::string("?")),
                           w.value("status", std::string("?")));
  }
  return out;
}

std::string format_point_table(std::span<const PointRecord> records) {
  // The point column: sweep values, seed and repetition (the strategy has a column of its own).
  const bool repeated = std::any_of(records.begin(), records.end(), [](const PointRecord& r) { return r.repetition > 0; });
  auto point_of = [&](const PointRecord& r) {
    std::string point;
    for (const SweepValue& v : r.sweep)
      if (v.path != "strategy") point += (point.empty() ? "" : " ") + v.path + "=" + v.text;
    if (r.seed) point += fmt::format("{}seed={}", point.empty() ? "" : " ", *r.seed);
    if (repeated) point += fmt::format("{}rep={}", point.empty() ? "" : " ", r.repetition);
    return point;
  };
  std::size_t width = 0;
  for (const PointRecord& r : records) width = std::max(width, point_of(r).size());
  // One unit per column, named in the header (both latencies in one, to be compared).
  std::vector<double> latencies, searches, memories;
  for (const PointRecord& r : records)
    if (r.measurement) {
      if (r.measurement->latency(kEvaluator)) latencies.push_back(*r.measurement->latency(kEvaluator));
      if (const auto e = r.measurement->latency(kEstimate)) latencies.push_back(*e);
      if (r.measurement->latency(kSimGrid)) latencies.push_back(*r.measurement->latency(kSimGrid));
      if (r.measurement->latency(kFlow)) latencies.push_back(*r.measurement->latency(kFlow));
      searches.push_back(r.measurement->search_time);
      memories.push_back(r.measurement->peak_memory);
    }
  const ColumnUnit latency = duration_unit(latencies), search = duration_unit(searches), memory = bytes_unit(memories);
  const std::string point_head = width ? fmt::format("{:<{}} ", "point", width) : std::string();
  // The flow engine's column only when it ran for some point.
  const bool flow = std::any_of(records.begin(), records.end(),
                                [](const PointRecord& r) { return r.measurement && r.measurement->latency(kFlow); });
  // NEST's estimate's column where some point ran no engine (simulation.engine estimate).
  const bool estimated = std::any_of(records.begin(), records.end(),
                                     [](const PointRecord& r) { return r.measurement && !r.measurement->latency(kEvaluator); });
  std::size_t label_width = 20;
  for (const PointRecord& r : records) label_width = std::max(label_width, shown_label(r).size());
  std::string out = point_head + fmt::format("{:<{}} {:>14} {:>14}{} {:>12} {:>18} {:>5}\n", "strategy", label_width,
                                             fmt::format("evaluator ({})", latency.name),
                                             fmt::format("simgrid ({})", latency.name),
                                             (flow ? fmt::format(" {:>14}", fmt::format("flow ({})", latency.name))
                                                   : std::string()) +
                                                 (estimated ? fmt::format(" {:>16}", fmt::format("estimate ({})", latency.name))
                                                            : std::string()),
                                             fmt::format("search ({})", search.name),
                                             fmt::format("peak mem/GPU ({})", memory.name), "OOM");
  for (const PointRecord& r : records) {
    const std::string point = width ? fmt::format("{:<{}} ", point_of(r), width) : std::string();
    if (!r.measurement) {
      out += point + fmt::format("{:<{}} {}: {}\n", r.label, label_width, point_status_name(r.status), r.reason);
      continue;
    }
    const PointMeasurement& m = *r.measurement;
    out += point + fmt::format("{:<{}} {:>14} {:>14}{} {:>12} {:>18} {:>5}\n", shown_label(r), label_width,
                               m.latency(kEvaluator) ? format_number_in(*m.latency(kEvaluator), latency) : std::string("-"),
                               m.latency(kSimGrid) ? format_number_in(*m.latency(kSimGrid), latency) : std::string("-"),
                               (!flow ? std::string()
                                      : fmt::format(" {:>14}", m.latency(kFlow) ? format_number_in(*m.latency(kFlow), latency)
                                                                             : std::string("-"))) +
                                   (!estimated ? std::string()
                                               : fmt::format(" {:>16}", m.latency(kEstimate) ? format_number_in(*m.latency(kEstimate), latency)
                                                                                           : std::string("-"))),
                               format_number_in(m.search_time, search), format_number_in(m.peak_memory, memory),
                               m.oom ? "yes" : "no");
  }
  if (!width) out += fastest_lines(records, latency);
  const std::string jobs = format_jobs_table(records);
  return out + (jobs.empty() ? "" : "\n" + jobs);
}

}  // namespace placesim
