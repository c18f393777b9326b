#include "common.h"

#include "sim/config/yaml_fields.h"

#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "sim/core/errors.h"

namespace placesim::python {

namespace {

// The shortest text that reads back as `v` (Python's repr), "inf"/"-inf"/"nan" as YAML writes them.
std::string number_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  return py::repr(py::float_(v)).cast<std::string>();
}

}  // namespace

YAML::Node to_yaml(py::handle value) {
  if (value.is_none()) return YAML::Node(YAML::NodeType::Null);
  if (py::isinstance<py::bool_>(value)) return YAML::Node(value.cast<bool>() ? "true" : "false");
  if (py::isinstance<py::str>(value)) return YAML::Node(value.cast<std::string>());
  if (py::isinstance<py::dict>(value)) {
    YAML::Node map(YAML::NodeType::Map);
    for (auto item : value.cast<py::dict>()) map[py::str(item.first).cast<std::string>()] = to_yaml(item.second);
    return map;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    YAML::Node seq(YAML::NodeType::Sequence);
    for (auto item : value) seq.push_back(to_yaml(item));
    return seq;
  }
  // NumPy arrays as lists, NumPy scalars and other numbers by their Python value.
  if (py::hasattr(value, "tolist") && py::hasattr(value, "ndim") && value.attr("ndim").cast<int>() > 0)
    return to_yaml(value.attr("tolist")());
  // Python's numbers are in base units (seconds, bytes, bytes per second): tagged so (kBaseUnitsTag).
  auto base_units = [](YAML::Node n) {
    n.SetTag(kBaseUnitsTag);
    return n;
  };
  if (py::hasattr(value, "__index__"))
    return base_units(YAML::Node(py::str(py::int_(py::reinterpret_borrow<py::object>(value))).cast<std::string>()));
  if (py::hasattr(value, "__float__"))
    return base_units(YAML::Node(number_text(py::float_(py::reinterpret_borrow<py::object>(value)).cast<double>())));
  if (py::hasattr(value, "__fspath__")) return YAML::Node(py::str(value.attr("__fspath__")()).cast<std::string>());
  throw py::type_error(fmt::format("cannot turn a {} into a scenario value (expected a dict, list, str, number, bool or None)",
                                   py::str(value.get_type().attr("__name__")).cast<std::string>()));
}

namespace {

// A Python function looked up once and kept for the process: never released (releasing it after
// the interpreter has finalized, as a static's destructor would, crashes).
const py::object& kept(const char* module, const char* name) {
  return *new py::object(py::module_::import(module).attr(name));
}

}  // namespace

py::object to_python(const nlohmann::json& value) {
  // json.loads reads doubles back exactly (both sides use the shortest round-trip form).
  static const py::object& loads = kept("json", "loads");
  return loads(value.dump());
}

py::object to_python(const nlohmann::ordered_json& value) {
  static const py::object& loads = kept("json", "loads");
  return loads(value.dump());
}

py::object dataframe(const py::dict& columns) {
  static const py::object& frame = kept("pandas", "DataFrame");
  return frame(columns);
}

std::vector<DeviceId> to_placement(py::handle placement, const std::string& who) {
  // The common case first, without a call into Python: a 1-D int32 or int64 array.
  if (py::isinstance<py::array_t<DeviceId, py::array::c_style>>(placement)) {
    auto a = py::reinterpret_borrow<py::array_t<DeviceId, py::array::c_style>>(placement);
    if (a.ndim() == 1) return std::vector<DeviceId>(a.data(), a.data() + a.size());
  }
  // Otherwise a C-contiguous int64 copy reads any integer array or sequence; floats are refused.
  py::module_ np = py::module_::import("numpy");
  py::array raw = np.attr("asarray")(placement);
  if (raw.ndim() != 1)
    throw InputError(who, "placement", fmt::format("expected a 1-D array of GPU indices, got {} dimensions", raw.ndim()));
  const std::string kind = py::str(raw.dtype().attr("kind")).cast<std::string>();
  if (raw.size() > 0 && kind != "i" && kind != "u")
    throw InputError(who, "placement",
                     fmt::format("expected whole numbers (GPU indices), got an array of dtype {}",
                                 py::str(raw.dtype()).cast<std::string>()));
  auto values = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(raw);
  std::vector<DeviceId> out(static_cast<std::size_t>(values.size()));
  const std::int64_t* data = values.data();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (data[i] < std::numeric_limits<DeviceId>::min() || data[i] > std::numeric_limits<DeviceId>::max())
      throw InputError(who, fmt::format("placement[{}]", i), fmt::format("GPU {} is out of range", data[i]));
    out[i] = static_cast<DeviceId>(data[i]);
  }
  return out;
}

}  // namespace placesim::python
