// placesim.evaluate: one placement measured by the engines, in process (`placesim simulate`'s
// measurement, measure_placement, without a process or a file per call), and placesim.CostModel,
// the latency a search minimises, for tight loops.
#include <chrono>
#include <cmath>
#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "common.h"
#include "scenarios/runner/runner.h"
#include "sim/core/errors.h"
#include "sim/engines/cost_model.h"
#include "sim/engines/engine.h"

namespace placesim::python {

namespace {

// What evaluate returns: the measurement, with the graph, cluster and placement it was made of
// (for the links' routed bytes, computed when asked).
struct Evaluation {
  GraphPtr graph;
  ClusterPtr cluster;
  std::vector<DeviceId> placement;
  EngineSet engines;
  Measurement m;

  // The engine `latency` reports: the one asked, or of a set the one that models the most
  // (SimGrid, then the flow engine, then the evaluator).
  const EngineRun& main_run() const {
    for (std::string_view e : {kSimGrid, kFlow, kEvaluator})
      if (engines.has(e))
        if (const EngineRun* r = m.runs.find(e)) return *r;
    return m.runs.runs.back();
  }
};

// The checks `placesim simulate` makes before it measures: the placement's length, GPUs and
// colocation classes, and no tensor between GPUs that cannot reach each other.
void check_placement(const Graph& graph, const Cluster& cluster, const std::vector<DeviceId>& placement) {
  validate_placement(graph, cluster, placement, "placement");
  if (cluster.all_pairs_reachable()) return;
  for (const Tensor& t : graph.tensors())
    if (t.bytes > 0 && !cluster.reachable(placement[t.src], placement[t.dst]))
      throw InputError("placement", "placement[" + std::to_string(t.dst) + "]",
                       fmt::format("tensor '{}' -> '{}' goes from {} to {}, which cannot reach each other", graph.op(t.src).name,
                                   graph.op(t.dst).name, cluster.device(placement[t.src]).name,
                                   cluster.device(placement[t.dst]).name));
}

EngineSet parse_engines(const std::string& engine) {
  const EngineSet engines = EngineSet::parse(engine, "python", "engine");
  if (engines.has(kEstimate))
    throw InputError("python", "engine", "the estimate prices plans (placesim.plan), not placements");
  return engines;
}

Evaluation evaluate(const GraphPtr& graph, const ClusterPtr& cluster, py::handle placement, const std::string& engine,
                    const std::string& order) {
  Evaluation out{graph, cluster, to_placement(placement, "placement"), parse_engines(engine), {}};
  const RunOrder run_order = enum_parse<RunOrder>(kRunOrderNames, order, "python", "order");
  check_placement(*graph, *cluster, out.placement);
  {
    py::gil_scoped_release released;
    out.m = measure_placement(*graph, *cluster, out.placement, out.engines, run_order);
  }
  return out;
}

// Links that carried traffic: SimGrid's statistics when it ran (as `placesim simulate` prints them
// and results.jsonl records them), else the bytes each link carries by the routes' shares, with
// the busy time and utilisation unknown (NaN).
py::object links_frame(const Evaluation& e) {
  std::vector<LinkUse> links = e.m.links;
  if (!e.m.runs.find(kSimGrid)) {
    std::vector<double> bytes(e.cluster->links().size(), 0.0);
    for (const Tensor& t : e.graph->tensors()) {
      const DeviceId s = e.placement[t.src], d = e.placement[t.dst];
      if (t.bytes <= 0 || s == d) continue;
      for (const RoutePath& path : e.cluster->paths(s, d))
        for (int l : path.links) bytes[l] += t.bytes * path.share;
    }
    const double nan = std::nan("");
    for (std::size_t l = 0; l < bytes.size(); ++l)
      if (bytes[l] > 0) links.push_back({e.cluster->link(static_cast<int>(l)).name, bytes[l], nan, nan, nan});
    std::stable_sort(links.begin(), links.end(), [](const LinkUse& a, const LinkUse& b) { return a.bytes > b.bytes; });
  }
  py::list name;
  std::vector<double> bytes, busy, fraction, utilisation;
  for (const LinkUse& l : links) {
    name.append(l.name);
    bytes.push_back(l.bytes);
    busy.push_back(l.busy_s);
    fraction.push_back(l.busy_fraction);
    utilisation.push_back(l.mean_utilisation);
  }
  py::dict columns;
  columns["name"] = name;
  columns["bytes"] = to_array(bytes);
  columns["busy_s"] = to_array(busy);
  columns["busy_fraction"] = to_array(fraction);
  columns["mean_utilisation"] = to_array(utilisation);
  return dataframe(columns);
}

py::dict engine_values(const Evaluation& e, bool wall) {
  py::dict out;
  for (const EngineRun& r : e.m.runs.runs) out[py::str(r.engine)] = wall ? r.wall_s : r.latency;
  return out;
}

void bind_evaluation(py::module_& m) {
  py::class_<Evaluation>(m, "Evaluation", "What the engines measured of one placement (placesim.evaluate).")
      .def_property_readonly(
          "latency", [](const Evaluation& e) { return e.main_run().latency; },
          "Iteration latency in seconds by the engine asked (of `all` or `both`: SimGrid's, else the flow engine's).")
      .def_property_readonly(
          "engine", [](const Evaluation& e) { return e.main_run().engine; }, "The engine `latency` is from.")
      .def_property_readonly(
          "latencies", [](const Evaluation& e) { return engine_values(e, false); },
          "Per engine that ran, its latency in seconds (the evaluator always runs: its schedule gives the order).")
      .def_property_readonly(
          "wall_times", [](const Evaluation& e) { return engine_values(e, true); },
          "Per engine that ran, the host time it took, seconds.")
      .def_property_readonly(
          "busy", [](const Evaluation& e) { return to_array(e.m.evaluator_schedule()->busy); },
          "Per GPU, seconds spent computing (NumPy array).")
      .def_property_readonly(
          "memory", [](const Evaluation& e) { return to_array(e.m.memory); },
          "Per GPU, bytes of the operators placed there (NumPy array).")
      .def_property_readonly(
          "peak_memory", [](const Evaluation& e) { return e.m.peak_memory; }, "The largest of `memory`, bytes.")
      .def_property_readonly(
          "oom", [](const Evaluation& e) { return e.m.oom; }, "Some GPU holds more than its memory.")
      .def_property_readonly(
          "lower_bounds",
          [](const Evaluation& e) {
            py::dict d;
            d["critical_path"] = e.m.bounds.critical_path;
            d["work_per_gpu"] = e.m.bounds.work_per_device;
            d["memory_per_gpu"] = e.m.bounds.memory_per_device;
            d["best"] = e.m.bounds.best();
            return d;
          },
          "Lower bounds of any placement: critical path, work per GPU (seconds), memory per GPU (bytes).")
      .def_property_readonly(
          "start", [](const Evaluation& e) { return to_array(e.main_run().schedule->start); },
          "Per operator, its start time in the run of `engine` (NumPy array, seconds).")
      .def_property_readonly(
          "finish", [](const Evaluation& e) { return to_array(e.main_run().schedule->finish); },
          "Per operator, its finish time in the run of `engine` (NumPy array, seconds).")
      .def_property_readonly("links", &links_frame,
                             "Links that carried traffic, most bytes first, as a pandas DataFrame: name, bytes, busy_s, "
                             "busy_fraction, mean_utilisation. SimGrid's statistics when it ran; otherwise the bytes the "
                             "routes put on each link, busy time and utilisation NaN.")
      .def(
          "to_dict",
          [](const Evaluation& e) {
            py::dict d;
            d["latency"] = e.main_run().latency;
            d["engine"] = e.main_run().engine;
            d["latencies"] = engine_values(e, false);
            d["wall_times"] = engine_values(e, true);
            d["busy"] = e.m.evaluator_schedule()->busy;
            d["memory"] = e.m.memory;
            d["peak_memory"] = e.m.peak_memory;
            d["oom"] = e.m.oom;
            return d;
          },
          "The scalar and per-GPU values as a dict of plain Python values.")
      .def("__repr__", [](const Evaluation& e) {
        return fmt::format("<placesim.Evaluation: {} latency {:.6g} s, peak memory {:.4g} B{}>", e.main_run().engine,
                           e.main_run().latency, e.m.peak_memory, e.m.oom ? " (OOM)" : "");
      });
}

// A CostModel that keeps its graph and cluster alive.
struct PyCostModel {
  GraphPtr graph;
  ClusterPtr cluster;
  CostModel model;
  PyCostModel(GraphPtr g, ClusterPtr c, CostModelKind kind) : graph(std::move(g)), cluster(std::move(c)), model(*graph, *cluster, kind) {}
};

}  // namespace

void bind_evaluate(py::module_& m) {
  bind_evaluation(m);
  m.def("evaluate", &evaluate, py::arg("graph"), py::arg("cluster"), py::arg("placement"), py::arg("engine") = "flow",
        py::arg("order") = "scheduler",
        "Measures one placement (a NumPy array of GPU indices, one per operator) with the engines: what `placesim "
        "simulate` measures, in process. engine: evaluator, flow, simgrid, all or both; order: scheduler or fcfs.");
  py::class_<PyCostModel>(m, "CostModel",
                          "The latency a search strategy minimises (`cost_model: list | flow`), reusing its buffers: the "
                          "fastest way to score many placements of one graph on one cluster. One per thread.")
      .def(py::init([](const GraphPtr& g, const ClusterPtr& c, const std::string& kind) {
             return std::make_unique<PyCostModel>(g, c, enum_parse<CostModelKind>(kCostModelNames, kind, "python", "kind"));
           }),
           py::arg("graph"), py::arg("cluster"), py::arg("kind") = "flow")
      .def(
          "latency",
          [](PyCostModel& c, py::handle placement) {
            const std::vector<DeviceId> p = to_placement(placement, "placement");
            validate_placement(*c.graph, *c.cluster, p, "placement");
            py::gil_scoped_release released;
            return c.model.latency(p);
          },
          py::arg("placement"),
          "Iteration latency in seconds (+inf when a tensor crosses between GPUs that cannot reach each other). With "
          "kind='flow' it equals placesim.evaluate(..., engine='flow').latency.")
      .def_property_readonly("kind", [](const PyCostModel& c) { return std::string(cost_model_name(c.model.kind())); });

  // The benchmark's reference (bench/bench_python.py): `repeat` calls of measure_placement timed in
  // C++, seconds each, with no Python between them.
  m.def(
      "_time_measure",
      [](const GraphPtr& graph, const ClusterPtr& cluster, py::handle placement, const std::string& engine, int repeat) {
        const std::vector<DeviceId> p = to_placement(placement, "placement");
        const EngineSet engines = parse_engines(engine);
        std::vector<double> seconds;
        py::gil_scoped_release released;
        for (int i = 0; i < repeat; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          const Measurement measured = measure_placement(*graph, *cluster, p, engines);
          seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          if (!std::isfinite(measured.runs.runs.back().latency)) throw std::runtime_error("not finite");
        }
        return seconds;
      },
      py::arg("graph"), py::arg("cluster"), py::arg("placement"), py::arg("engine") = "flow", py::arg("repeat") = 100);
}

}  // namespace placesim::python
