// The extension module placesim._placesim: the C++ side of the Python package `placesim`
// (python/placesim/__init__.py wraps it with keyword arguments, pandas frames and docstrings).
#include "common.h"
#include "placement/framework/strategy.h"
#include "sim/core/errors.h"
#include "version.h"

PYBIND11_MODULE(_placesim, m) {
  namespace py = pybind11;
  using namespace placesim;
  m.doc() = "placesim's simulator, strategies and scenarios (the C++ side of the placesim package)";
  m.attr("__version__") = PLACESIM_VERSION;
  m.def("_version_text", &version_text);
  // Bad input is a ValueError naming the file and the field, as the CLI's one-line errors do.
  // The exception types are kept for the process (never released: a static's destructor would run
  // after the interpreter has finalized).
  static const auto* input_error = new py::exception<InputError>(m, "InputError", PyExc_ValueError);
  static const auto* infeasible = new py::exception<InfeasibleProblem>(m, "InfeasibleProblem", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(input_error->ptr(), e.what());
    } catch (const InfeasibleProblem& e) {
      PyErr_SetString(infeasible->ptr(), e.what());
    }
  });
  placesim::python::bind_graph(m);
  placesim::python::bind_cluster(m);
  placesim::python::bind_evaluate(m);
  placesim::python::bind_strategies(m);
  placesim::python::bind_scenarios(m);
  placesim::python::bind_plans(m);
  placesim::python::bind_python_strategy(m);
}
