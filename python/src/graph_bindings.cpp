// placesim.Graph: loading every format a scenario's `graph:` reads (files, the model zoo, ONNX,
// builtins, Chakra traces), its operators and tensors as NumPy arrays and pandas frames, its
// statistics (`placesim graph info`), and graphs built from Python.
#include <filesystem>
#include <fmt/format.h>

#include "common.h"
#include "scenarios/runner/scenario.h"
#include "sim/core/errors.h"
#include "sim/core/graph_stats.h"
#include "sim/io/graph_io.h"
#include "sim/models/zoo.h"

namespace placesim::python {

namespace {

void warn(const std::vector<std::string>& warnings) {
  if (warnings.empty()) return;
  py::object warn_fn = py::module_::import("warnings").attr("warn");
  for (const auto& w : warnings) warn_fn(w, py::module_::import("builtins").attr("UserWarning"), 3);
}

// A graph file, as `placesim graph info FILE --format F` reads it.
GraphPtr load_file(const std::string& path, const std::string& format) {
  if (format == "onnx") refuse_onnx_model(path, "format");
  LoadResult loaded = load_graph(path, parse_graph_format(format, "python", "format"));
  warn(loaded.warnings);
  return std::make_shared<Graph>(std::move(loaded.graph));
}

// A scenario's `graph:` mapping ({model: ...}, {onnx: ...}, {file: ...}, {builtin: ...},
// {chakra: ...}), paths relative to the working directory.
GraphPtr load_source(const py::dict& spec) {
  const GraphSource source = graph_source_from_yaml(to_yaml(spec), "python", "graph");
  std::vector<std::string> warnings;
  Graph g = load_graph_source(source, "python", warnings);
  warn(warnings);
  return std::make_shared<Graph>(std::move(g));
}

py::dict operator_columns(const Graph& g) {
  const std::size_t n = g.num_operators();
  py::list names(n), types(n);
  py::array_t<double> compute(n), memory(n), flops(n);
  py::array_t<std::int32_t> colocation(n);
  py::array_t<bool> communication(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Operator& op = g.op(static_cast<OpId>(i));
    names[i] = py::str(op.name);
    types[i] = py::str(op.type);
    compute.mutable_at(i) = op.compute_s;
    memory.mutable_at(i) = op.memory_bytes;
    flops.mutable_at(i) = op.flops;
    colocation.mutable_at(i) = op.colocation_class;
    communication.mutable_at(i) = op.communication;
  }
  py::dict out;
  out["name"] = names;
  out["type"] = types;
  out["compute_s"] = compute;
  out["memory_bytes"] = memory;
  out["colocation_class"] = colocation;
  out["communication"] = communication;
  out["flops"] = flops;
  return out;
}

py::dict tensor_columns(const Graph& g) {
  const std::size_t n = g.num_tensors();
  py::array_t<std::int32_t> src(n), dst(n), latencies(n);
  py::array_t<double> bytes(n);
  py::array_t<bool> gradient(n);
  py::list src_name(n), dst_name(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Tensor& t = g.tensor(static_cast<EdgeId>(i));
    src.mutable_at(i) = t.src;
    dst.mutable_at(i) = t.dst;
    bytes.mutable_at(i) = t.bytes;
    gradient.mutable_at(i) = t.gradient;
    latencies.mutable_at(i) = t.latencies;
    src_name[i] = py::str(g.op(t.src).name);
    dst_name[i] = py::str(g.op(t.dst).name);
  }
  py::dict out;
  out["src"] = src;
  out["dst"] = dst;
  out["src_name"] = src_name;
  out["dst_name"] = dst_name;
  out["bytes"] = bytes;
  out["gradient"] = gradient;
  out["latencies"] = latencies;
  return out;
}

py::dict stats_dict(const Graph& g) {
  const GraphStats s = compute_stats(g);
  py::dict out;
  out["operators"] = s.operators;
  out["tensors"] = s.tensors;
  out["total_compute_s"] = s.total_compute_s;
  out["total_tensor_bytes"] = s.total_tensor_bytes;
  out["total_memory_bytes"] = s.total_memory_bytes;
  out["critical_path_s"] = s.critical_path_s;
  out["max_parallelism"] = s.max_parallelism;
  out["average_parallelism"] = s.average_parallelism;
  out["weakly_connected_components"] = s.weakly_connected_components;
  out["largest_component_operators"] = s.largest_component_operators;
  out["colocation_classes"] = s.colocation_classes;
  py::list histogram;
  for (const ComputeBucket& b : s.compute_histogram) {
    py::dict bucket;
    bucket["label"] = b.label;
    bucket["count"] = b.count;
    bucket["compute_s"] = b.compute_s;
    bucket["share"] = b.compute_s > 0 ? b.share : 0.0;
    histogram.append(bucket);
  }
  out["compute_histogram"] = histogram;
  return out;
}

// A graph from Python: operators (a DataFrame or dict of columns: name, compute_s, and optionally
// type, memory_bytes, colocation_class, flops) and tensors (src, dst as names or indices, bytes,
// optionally gradient).
GraphPtr graph_from_columns(const py::object& operators, const py::object& tensors, const std::string& source) {
  auto column = [](const py::object& table, const char* key) -> py::object {
    if (py::hasattr(table, "columns")) {  // a DataFrame
      py::object cols = table.attr("columns");
      return cols.attr("__contains__")(key).cast<bool>() ? table[key].attr("tolist")() : py::none().cast<py::object>();
    }
    py::dict d = table.cast<py::dict>();
    if (!d.contains(key)) return py::none();
    py::object v = d[key];
    return py::hasattr(v, "tolist") ? v.attr("tolist")() : v;
  };
  py::object names = column(operators, "name"), compute = column(operators, "compute_s");
  if (names.is_none() || compute.is_none()) throw InputError(source, "operators", "expected the columns name and compute_s");
  py::object types = column(operators, "type"), memory = column(operators, "memory_bytes"),
             classes = column(operators, "colocation_class"), flops = column(operators, "flops");
  Graph g;
  const std::size_t n = py::len(names);
  for (std::size_t i = 0; i < n; ++i) {
    Operator op;
    op.name = py::str(names[py::int_(i)]).cast<std::string>();
    op.compute_s = compute[py::int_(i)].cast<double>();
    if (!types.is_none()) op.type = py::str(types[py::int_(i)]).cast<std::string>();
    if (!memory.is_none()) op.memory_bytes = memory[py::int_(i)].cast<double>();
    if (!classes.is_none()) op.colocation_class = classes[py::int_(i)].cast<std::int32_t>();
    if (!flops.is_none()) op.flops = flops[py::int_(i)].cast<double>();
    g.add_operator(std::move(op));
  }
  py::object src = column(tensors, "src"), dst = column(tensors, "dst"), bytes = column(tensors, "bytes"),
             gradient = column(tensors, "gradient");
  if (src.is_none() || dst.is_none() || bytes.is_none()) throw InputError(source, "tensors", "expected the columns src, dst and bytes");
  std::unordered_map<std::string, OpId> by_name;
  for (std::size_t i = 0; i < n; ++i) by_name[g.op(static_cast<OpId>(i)).name] = static_cast<OpId>(i);
  auto endpoint = [&](py::handle v, std::size_t row, const char* which) -> OpId {
    if (py::isinstance<py::str>(v)) {
      const auto it = by_name.find(v.cast<std::string>());
      if (it == by_name.end())
        throw InputError(source, fmt::format("tensors[{}].{}", row, which), fmt::format("no operator '{}'", v.cast<std::string>()));
      return it->second;
    }
    const long long k = v.cast<long long>();
    if (k < 0 || k >= static_cast<long long>(n))
      throw InputError(source, fmt::format("tensors[{}].{}", row, which), fmt::format("operator index {} out of range", k));
    return static_cast<OpId>(k);
  };
  for (std::size_t i = 0, m = py::len(src); i < m; ++i)
    g.add_tensor(endpoint(src[py::int_(i)], i, "src"), endpoint(dst[py::int_(i)], i, "dst"), bytes[py::int_(i)].cast<double>(),
                 !gradient.is_none() && gradient[py::int_(i)].cast<bool>());
  g.finalize(source);
  return std::make_shared<Graph>(std::move(g));
}

}  // namespace

void bind_graph(py::module_& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph",
                                            "A computation graph of one training iteration: operators (compute time, memory) "
                                            "and the tensors between them. Units: seconds and bytes.")
      .def_property_readonly("num_operators", &Graph::num_operators, "Number of operators.")
      .def_property_readonly("num_tensors", &Graph::num_tensors, "Number of tensors (edges).")
      .def("__len__", &Graph::num_operators)
      .def("operator_arrays", &operator_columns,
           "The operators as a dict of NumPy arrays (and lists of names): name, type, compute_s, memory_bytes, "
           "colocation_class, communication, flops.")
      .def("tensor_arrays", &tensor_columns,
           "The tensors as a dict of NumPy arrays: src, dst (operator indices), src_name, dst_name, bytes, gradient, "
           "latencies.")
      .def(
          "operators", [](const Graph& g) { return dataframe(operator_columns(g)); },
          "The operators as a pandas DataFrame, one row per operator in id order (the placement's order).")
      .def(
          "tensors", [](const Graph& g) { return dataframe(tensor_columns(g)); },
          "The tensors as a pandas DataFrame, one row per tensor.")
      .def("info", &stats_dict,
           "What `placesim graph info` says, as a dict: counts, total compute, memory and bytes, critical path, "
           "parallelism, components, colocation classes and the compute-time histogram.")
      .def("__str__", [](const Graph& g) { return format_stats(compute_stats(g)); })
      .def("__repr__",
           [](const Graph& g) {
             return fmt::format("<placesim.Graph: {} operators, {} tensors>", g.num_operators(), g.num_tensors());
           })
      .def_property_readonly("total_compute", &Graph::total_compute, "Sum of the operators' compute time, seconds.")
      .def_property_readonly("total_memory", &Graph::total_memory, "Sum of the operators' memory, bytes.")
      .def_property_readonly("num_colocation_classes", &Graph::num_colocation_classes)
      .def("find", &Graph::find, py::arg("name"), "The id of the operator named `name`, or None.")
      .def(
          "critical_path", [](const Graph& g) { return critical_path(g); },
          "The longest compute-only path, seconds: no placement is faster.")
      .def(
          "largest_component", [](const Graph& g) { return std::make_shared<Graph>(largest_weakly_connected_component(g)); },
          "A new graph of the largest weakly connected component only.")
      .def(
          "to_json", [](const Graph& g) { return to_placesim_json(g); }, "The graph in placesim's JSON format, as text.")
      .def(
          "save", [](const Graph& g, const std::filesystem::path& path) { save_placesim_json(g, path.string()); },
          py::arg("path"), "Writes the graph in placesim's JSON format (docs/graph-format.md).")
      .def(py::pickle([](const Graph& g) { return to_placesim_json(g); },
                      [](const std::string& text) { return std::make_shared<Graph>(parse_graph(text, "pickle").graph); }));

  m.def(
      "_load_graph_file", [](const std::filesystem::path& path, const std::string& format) { return load_file(path.string(), format); },
      py::arg("path"), py::arg("format") = "auto");
  m.def("_load_graph_source", &load_source, py::arg("spec"));
  m.def("_graph_from_columns", &graph_from_columns, py::arg("operators"), py::arg("tensors"), py::arg("source") = "python");
  m.def("_parse_graph_json", [](const std::string& text, const std::string& source) {
    LoadResult loaded = parse_graph(text, source);
    warn(loaded.warnings);
    return std::make_shared<Graph>(std::move(loaded.graph));
  });
  m.def("_zoo_models", [] {
    py::list out;
    for (const models::ZooModel& z : models::zoo_models()) {
      py::dict d;
      d["name"] = z.name;
      d["description"] = z.description;
      d["keys"] = z.keys;
      out.append(d);
    }
    return out;
  });
}

}  // namespace placesim::python
