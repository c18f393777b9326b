// placesim.Cluster: from a cluster or scenario YAML file, or a `cluster:` mapping given as a dict
// (the fabric registry, topologies/registry.h); its GPUs, links and pairwise view; what
// `placesim topology info` says of it.
#include <filesystem>
#include <algorithm>
#include <fmt/format.h>
#include <limits>

#include "common.h"
#include "topologies/registry.h"
#include "topologies/topology_info.h"

namespace placesim::python {

namespace {

py::dict topology_dict(const Cluster& c) {
  const TopologyInfo t = describe_topology(c);
  py::dict out;
  out["description"] = c.description;
  out["type"] = c.fabric.type;
  out["gpus"] = t.gpus;
  out["servers"] = t.servers;
  out["physical_links"] = t.physical_links;
  out["logical_links"] = t.logical_links;
  out["max_paths"] = t.max_paths;
  out["oversubscription"] = c.fabric.oversubscription;
  out["bisection_bandwidth"] = t.bisection_bandwidth;
  out["allocated_bisection"] = t.allocated_bisection;
  py::list levels;
  for (const BandwidthLevel& l : t.levels) {
    py::dict level;
    level["bandwidth"] = l.bandwidth;
    level["latency"] = l.latency;
    level["pairs"] = l.pairs;
    level["example"] = py::make_tuple(l.example_src, l.example_dst);
    levels.append(level);
  }
  out["bandwidth_levels"] = levels;
  out["notes"] = c.fabric.notes;
  return out;
}

py::dict device_columns(const Cluster& c) {
  const std::size_t n = static_cast<std::size_t>(c.num_devices());
  py::list names(n);
  py::array_t<std::int32_t> server(n);
  py::array_t<double> memory(n), speed(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Device& d = c.device(static_cast<DeviceId>(i));
    names[i] = py::str(d.name);
    server.mutable_at(i) = d.server;
    memory.mutable_at(i) = d.memory_bytes;
    speed.mutable_at(i) = d.compute_speed;
  }
  py::dict out;
  out["name"] = names;
  out["server"] = server;
  out["memory_bytes"] = memory;
  out["compute_speed"] = speed;
  return out;
}

py::dict link_columns(const Cluster& c) {
  const std::size_t n = c.links().size();
  py::list names(n);
  py::array_t<double> bandwidth(n), latency(n);
  py::array_t<bool> logical(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Link& l = c.link(static_cast<int>(i));
    names[i] = py::str(l.name);
    bandwidth.mutable_at(i) = l.bandwidth;
    latency.mutable_at(i) = l.latency;
    logical.mutable_at(i) = l.logical;
  }
  py::dict out;
  out["name"] = names;
  out["bandwidth"] = bandwidth;
  out["latency"] = latency;
  out["logical"] = logical;
  return out;
}

// Per ordered pair, the lone-transfer view: bandwidth (bytes/s; inf on the diagonal, 0 when
// unreachable) or latency (seconds).
py::array_t<double> pair_matrix(const Cluster& c, bool bandwidth) {
  const py::ssize_t n = c.num_devices();
  py::array_t<double> out({n, n});
  auto a = out.mutable_unchecked<2>();
  for (DeviceId s = 0; s < n; ++s)
    for (DeviceId d = 0; d < n; ++d)
      a(s, d) = s == d ? (bandwidth ? std::numeric_limits<double>::infinity() : 0.0)
                       : (bandwidth ? c.bandwidth(s, d) : c.latency(s, d));
  return out;
}

}  // namespace

void bind_cluster(py::module_& m) {
  py::class_<Cluster, std::shared_ptr<Cluster>>(m, "Cluster",
                                                "GPU servers and the fabric between them: GPUs, one-way links and the "
                                                "route of every GPU pair. Units: seconds, bytes, bytes per second.",
                                                py::dynamic_attr())
      .def_property_readonly("num_gpus", &Cluster::num_devices, "Number of GPUs.")
      .def_property_readonly("num_servers", &Cluster::num_servers, "Number of servers.")
      .def_property_readonly("description", [](const Cluster& c) { return c.description; }, "One line describing it.")
      .def("__len__", &Cluster::num_devices)
      .def("info", &topology_dict,
           "What `placesim topology info` says, as a dict: GPUs, servers, links, bandwidth levels between GPU pairs, "
           "bisection bandwidth, oversubscription.")
      .def("__str__", [](const Cluster& c) { return format_topology_info(c, describe_topology(c)); })
      .def("__repr__", [](const Cluster& c) { return fmt::format("<placesim.Cluster: {}>", c.description); })
      .def(
          "gpus", [](const Cluster& c) { return dataframe(device_columns(c)); },
          "The GPUs as a pandas DataFrame: name, server, memory_bytes, compute_speed.")
      .def(
          "links", [](const Cluster& c) { return dataframe(link_columns(c)); },
          "The one-way links as a pandas DataFrame: name, bandwidth, latency, logical.")
      .def(
          "bandwidth_matrix", [](const Cluster& c) { return pair_matrix(c, true); },
          "Per ordered GPU pair, the bandwidth a lone transfer sees (bytes/s).")
      .def(
          "latency_matrix", [](const Cluster& c) { return pair_matrix(c, false); },
          "Per ordered GPU pair, the latency a lone transfer pays (seconds).")
      .def(
          "transfer_time",
          [](const Cluster& c, DeviceId src, DeviceId dst, double bytes, std::int32_t latencies) {
            return c.transfer_time(src, dst, bytes, latencies);
          },
          py::arg("src"), py::arg("dst"), py::arg("bytes"), py::arg("latencies") = 1,
          "Seconds for a lone transfer of `bytes` from GPU src to GPU dst.")
      .def("dot", &topology_dot, "The topology as a Graphviz drawing (text).");

  m.def(
      "_load_cluster_file", [](const std::filesystem::path& path) { return std::make_shared<Cluster>(load_cluster_file(path.string())); },
      py::arg("path"));
  m.def(
      "_cluster_from_mapping",
      [](const py::dict& mapping) { return std::make_shared<Cluster>(cluster_from_yaml(to_yaml(mapping), "python", "cluster")); },
      py::arg("mapping"));
  m.def("_topology_types", [] { return to_python(topologies_to_json()); });
}

}  // namespace placesim::python
