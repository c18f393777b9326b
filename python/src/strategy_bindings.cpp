// Strategies from Python: every registered strategy with its options as keyword arguments
// (placesim.place), and the host of the `python` strategy (placement/strategies/python): the
// PythonPlacer that calls a class written in Python, installed when the module is imported.
#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "common.h"
#include "placement/framework/planner.h"
#include "placement/framework/strategy.h"
#include "placement/strategies/python/python_strategy.h"
#include "sim/core/errors.h"

namespace placesim::python {

namespace {

py::dict facts_dict(const SearchFacts& f) {
  py::dict d;
  if (f.time_limit_s) d["time_limit"] = *f.time_limit_s;
  d["over_time_limit"] = f.over_time_limit;
  if (f.cost_model) d["cost_model"] = std::string(cost_model_name(*f.cost_model));
  if (f.portfolio_winner) d["portfolio_winner"] = *f.portfolio_winner;
  if (f.memory_fallback) d["memory_fallback"] = *f.memory_fallback;
  if (f.warm_start) d["warm_start"] = *f.warm_start;
  return d;
}

// One strategy, made from its options as a scenario's `options:` mapping, places the graph.
py::dict place(const GraphPtr& graph, const ClusterPtr& cluster, const std::string& strategy, const py::dict& options) {
  std::unique_ptr<Strategy> s = make_strategy(strategy, to_yaml(options), "python", "strategy");
  PlacementResult r;
  {
    // Released for the strategy (LibTorch refuses to run its autograd under the GIL); a `python`
    // strategy takes it back.
    py::gil_scoped_release released;
    r = s->place(*graph, *cluster);
  }
  py::dict out;
  out["placement"] = to_array(r.placement);
  out["search_seconds"] = r.search_seconds;
  out["details"] = to_python(r.details);
  out["facts"] = facts_dict(r.facts);
  out["bandwidth_allocation"] = py::bool_(r.bandwidth_allocation.has_value());
  return out;
}

// Calls placesim._strategies.call (the package's Python side), which imports the module (or finds
// the registered class), makes the object and calls place(); it returns (placement, details JSON)
// or raises with the error said in one line. Anything raised becomes a std::runtime_error with
// that line: the point's failure.
PythonPlacement call_python(const PythonStrategyConfig& config, const Graph& graph, const Cluster& cluster,
                            const Deadline& deadline) {
  py::gil_scoped_acquire gil;
  const std::string who = config.module.empty() ? config.class_name : config.module + "." + config.class_name;
  try {
    py::object call = py::module_::import("placesim._strategies").attr("call");
    py::tuple result = call(config.module, config.class_name, config.path, config.args_yaml, std::make_shared<Graph>(graph),
                            std::make_shared<Cluster>(cluster), deadline);
    PythonPlacement placed;
    placed.placement = to_placement(result[0], "python strategy " + who);
    placed.details = nlohmann::json::parse(result[1].cast<std::string>());
    return placed;
  } catch (py::error_already_set& e) {
    // The message alone (the traceback is the Python side's to give): "KeyError: 'x'".
    std::string message = e.what();
    if (const auto cut = message.find("\n\nAt:"); cut != std::string::npos) message.resize(cut);
    throw std::runtime_error(message);
  }
}

}  // namespace

void bind_strategies(py::module_& m) {
  m.def("_strategies", [] { return to_python(strategies_to_json()); });
  m.def("_place", &place, py::arg("graph"), py::arg("cluster"), py::arg("strategy"), py::arg("options"));

  py::class_<Deadline>(m, "Deadline",
                       "The wall-clock budget of one place() call (the strategy's `time_limit`): check expired() in "
                       "loops.")
      .def(py::init<double>(), py::arg("seconds") = std::numeric_limits<double>::infinity())
      .def_property_readonly("limit", &Deadline::limit, "The budget in seconds (inf: unbounded).")
      .def_property_readonly("bounded", &Deadline::bounded)
      .def("elapsed", &Deadline::elapsed, "Seconds since the call started.")
      .def("remaining", &Deadline::remaining, "Seconds left (inf when unbounded).")
      .def("expired", &Deadline::expired, "The budget is spent.")
      .def("__repr__", [](const Deadline& d) {
        return d.bounded() ? fmt::format("<placesim.Deadline: {:.3g} s of {:.3g} s left>", d.remaining(), d.limit())
                           : std::string("<placesim.Deadline: unbounded>");
      });
}

void bind_python_strategy(py::module_& m) {
  set_python_placer(&call_python);
  // The interpreter ends before the process's static objects are destroyed: drop the placer first.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { set_python_placer({}); }));
  m.def("_python_placer_installed", &python_placer_installed);
}

}  // namespace placesim::python
