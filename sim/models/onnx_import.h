#pragma once
// ONNX in: a model exported by PyTorch (tools/export_onnx.py) or any ONNX exporter, made into
// placesim's training graph. ONNX shape inference (Debian's libonnx) gives every tensor its shape;
// each node is recorded in the model zoo's builder (sim/models/builder.h, fused style, one kernel
// per node as PyTorch runs it) with its FLOPs and the bytes it moves, so it is costed on a GPU's
// roofline (sim/models/gpu.h). The builder's autodiff then adds the gradient operators from the
// rules in onnx_import.cpp, the loss when the model has none, and the optimizer's update per
// parameter. Documented in docs/graph-format.md ("ONNX models").
//
// Units: an ONNX file holds shapes and element types, no times; times are the roofline's, in
// seconds; memory and tensor sizes are bytes (parameters and optimizer state in fp32).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/graph.h"
#include "sim/models/builder.h"
#include "sim/models/gpu.h"
#include "sim/models/zoo.h"
#include "sim/config/options.h"

namespace placesim::models {

// What to do with a node that needs a gradient and has no rule here.
enum class UnsupportedOps : std::uint8_t { Error, ForwardOnly };
inline constexpr EnumName<UnsupportedOps> kUnsupportedOpsNames[] = {{UnsupportedOps::Error, "error"},
                                                                   {UnsupportedOps::ForwardOnly, "forward-only"}};

struct OnnxImportOptions {
  std::string onnx;              // the .onnx file (a scenario resolves it against its own folder)
  std::int64_t batch = 0;        // the first dimension of every graph input; 0: as the file has it
  GpuSpec gpu = *find_gpu_preset("rtx3070");  // the zoo's default
  std::optional<Precision> precision;          // the roofline's peak (set_roofline_precision); unset: fp32's
  bool training = true;          // forward, backward and optimizer; false: the forward graph alone
  UnsupportedOps unsupported = UnsupportedOps::Error;
  OptimizerKind optimizer = OptimizerKind::Adam;
};

// The keys of a scenario's `graph: {onnx: ...}` mapping and of `placesim graph import`.
const OptionSchema<OnnxImportOptions>& onnx_import_schema();

struct OnnxImport {
  ModelBuilder recorded{{GraphStyle::Fused, OptimizerKind::Adam}};
  std::int64_t batch = 0;                        // the batch imported at
  std::map<std::string, int> node_types;         // ONNX op type -> nodes
  std::vector<std::string> warnings;             // forward-only nodes, the added loss, ...
  double forward_flops = 0, backward_flops = 0, optimizer_flops = 0;
};

// Reads, infers shapes and records `options.onnx`. Throws InputError naming the file and, where
// one is at fault, the node ("node '/layer1/Conv' (Conv)") or graph input.
OnnxImport import_onnx(const OnnxImportOptions& options);

// The placesim graph of an import (warnings appended to `warnings`).
Graph onnx_graph(const OnnxImportOptions& options, std::vector<std::string>& warnings);

}  // namespace placesim::models
