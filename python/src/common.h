#pragma once
// What the binding files of the Python module share: conversions between Python values and the
// YAML and JSON placesim reads and writes, NumPy arrays and pandas frames, and one registration
// function per file (module.cpp calls them in order).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/cluster.h"
#include "sim/core/graph.h"

namespace placesim::python {

namespace py = pybind11;

// A Python value as the YAML node a scenario file would hold: a dict is a mapping (keys as text), a
// list or tuple a sequence, None null, True/False `true`/`false`, an int or float its shortest
// decimal text ("inf" for infinity), a str as it is, a pathlib.Path its text.
YAML::Node to_yaml(py::handle value);
// A JSON document as Python values (dict, list, float, int, str, bool, None).
py::object to_python(const nlohmann::json& value);
py::object to_python(const nlohmann::ordered_json& value);

// A pandas DataFrame of `columns` (name -> list or NumPy array), pandas imported on first use.
py::object dataframe(const py::dict& columns);

template <class T>
py::array_t<T> to_array(std::span<const T> values) {
  py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}
template <class T>
py::array_t<T> to_array(const std::vector<T>& values) {
  return to_array(std::span<const T>(values));
}

// A placement from Python (a NumPy array or any sequence of whole numbers): one GPU index per
// operator. Throws InputError ("placement", `who`) for a value that is not a whole number or does
// not fit an int32; the length and the GPUs are the callers' to check (validate_placement).
std::vector<DeviceId> to_placement(py::handle placement, const std::string& who);

// The graph and cluster objects of the module: shared, so that a Python object keeps them alive.
using GraphPtr = std::shared_ptr<Graph>;
using ClusterPtr = std::shared_ptr<Cluster>;

// Registration, one per file.
void bind_graph(py::module_& m);
void bind_cluster(py::module_& m);
void bind_evaluate(py::module_& m);
void bind_strategies(py::module_& m);
void bind_scenarios(py::module_& m);
void bind_plans(py::module_& m);
void bind_python_strategy(py::module_& m);

}  // namespace placesim::python
