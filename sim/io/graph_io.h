#pragma once
// Reading computation graphs from the formats placesim meets, and writing its own.
//
// Units are converted here, at the edge: every loader returns a Graph in seconds and bytes.
//
// Formats (auto-detected from content, or named explicitly):
//
//  * "placesim" — the native format, written by save_placesim_json():
//      {
//        "format": "placesim-graph",
//        "version": 1,
//        "units": {"time": "s", "memory": "B", "tensor": "B"},
//        "operators": [
//          {"name": "conv1", "type": "Conv2D", "compute_s": 1.2e-05, "memory_bytes": 4096,
//           "colocation_class": 0}
//        ],
//        "tensors": [{"src": "conv1", "dst": "relu1", "bytes": 1048576}]
//      }
//    Required: format, version (1), operators[].name (unique, non-empty), operators[].compute_s,
//    tensors[].src/dst (operator names), tensors[].bytes. Optional: units (if present it must be
//    exactly the above), operators[].type (default ""), operators[].memory_bytes (default 0),
//    operators[].colocation_class (a non-negative integer or a non-empty string; operators
//    sharing a value must share a device). Classes are renumbered densely 0..k-1 on load:
//    integers in ascending order first, then strings in order of first appearance, so a saved
//    graph whose classes are already dense loads back identically. Unknown keys are reported as
//    warnings (they are usually typos such as "memory" for "memory_bytes").
//
//  * "quickp" — networkx node-link JSON from the QuickP authors: see load_quickp_json() in
//    graph_io.cpp for the fields and units (comp_cost in microseconds, tensors in bits).
//
//  * "msr" — the JSON of Tarnawski et al. (msr-fiddle): see load_msr_json() in graph_io.cpp
//    (latencies in milliseconds, sizes in bytes).
//
// Every bad input raises one InputError naming the file, the JSON field (e.g.
// "nodes[12].comp_cost") and what was expected.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

enum class GraphFormat { Auto, QuickP, Msr, Placesim };

// "auto", "quickp", "msr", "placesim"; anything else is an InputError naming `field`.
GraphFormat parse_graph_format(std::string_view name, const std::string& file = "",
                               const std::string& field = "format");
std::string_view graph_format_name(GraphFormat format);

struct LoadResult {
  Graph graph;                      // finalized
  GraphFormat format = GraphFormat::Auto;  // the format actually read (never Auto)
  // Oddities that do not stop loading (e.g. devices disagreeing on an operator's compute time);
  // each is one line, prefixed with the file name, for the CLI to print.
  std::vector<std::string> warnings;
  // Per-device memory the source suggests, in bytes (msr: maxSizePerFPGA); metadata only.
  std::optional<double> suggested_device_memory;
};

// Reads and parses `path`. The file name in errors and warnings is `path` as given. An ONNX model
// (a .onnx name, or ONNX's first byte) is refused as refuse_onnx_model says.
LoadResult load_graph(const std::string& path, GraphFormat format = GraphFormat::Auto);
LoadResult load_graph(const std::string& path, std::string_view format_name);

// ONNX models are imported (sim/models/onnx_import.h), not loaded as graph files: throws an
// InputError naming `path` and `field` that says how to import it.
[[noreturn]] void refuse_onnx_model(const std::string& path, const std::string& field = "");

// Parses JSON text already in memory; `source` names it in errors (usually a file name).
LoadResult parse_graph(std::string_view text, const std::string& source,
                       GraphFormat format = GraphFormat::Auto);

// The native format as text (one operator or tensor per line) and as a file. Doubles are written
// in their shortest round-trip form, so load(save(g)) reproduces g bit for bit.
// `timed_on`, when given, is written as the file's "timed_on" object: what the operators' times
// were computed for (the GPU, its precision and rates, by `graph generate` and `graph import`);
// informational, read back by nothing.
std::string to_placesim_json(const Graph& g, const std::string& timed_on_json = "");
// Throws InputError naming `path` when the file cannot be written.
void save_placesim_json(const Graph& g, const std::string& path, const std::string& timed_on_json = "");

}  // namespace placesim
