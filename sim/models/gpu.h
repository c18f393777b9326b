#pragma once
// The GPU cost model of the model zoo: a roofline. An operator that runs a kernel takes
//   max(FLOPs / (peak FLOP/s * efficiency), bytes moved / (memory bandwidth * efficiency))
//   + launch overhead;
// bookkeeping operators that run no kernel (constants, variable reads, reshapes, shape
// arithmetic kept on the host) take zero. These are estimates, not measurements: see
// docs/model-zoo.md for the sources of the presets and how the estimates were checked.
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace placesim::models {

struct GpuSpec {
  std::string name;
  double peak_flops = 0;          // dense FP32 FLOP/s (one fused multiply-add counts 2)
  double memory_bandwidth = 0;    // bytes/s of device memory
  double memory_bytes = 0;        // device memory (informational: clusters set their own)
  double launch_overhead_s = 2e-6;  // added to every kernel
  double efficiency = 0.75;       // achieved fraction of both peaks
  // Dense fp16/bf16 tensor-core FLOP/s, 0 when the preset gives none: what the layer-level zoo
  // (sim/models/layer_zoo.h) times matrix products against. The roofline above does not use it.
  double tensor_flops = 0;
  std::string source;             // where the figures come from
};

// K80 (one GK210 die), V100 (SXM2), RTX 3070, RTX 4080 Super, A100 (40 GB SXM), H100 (SXM).
const std::vector<GpuSpec>& gpu_presets();
std::optional<GpuSpec> find_gpu_preset(std::string_view name);
std::string gpu_preset_names();  // "k80, v100, ..." for messages

// The roofline time of one kernel, in seconds.
double roofline_seconds(const GpuSpec& gpu, double flops, double bytes_moved);

// A GPU from a scenario: either a preset name (`gpu: v100`) or a mapping
// `{preset: v100, efficiency: 0.6}` / `{name: mygpu, flops: 30TFLOP/s, memory_bandwidth: 1TB/s,
// memory: 16GiB, launch_overhead: 5us, efficiency: 0.7}` (flops and memory_bandwidth are required
// without a preset). Errors name `file` and `path` ("graph.gpu").
GpuSpec gpu_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path);

// Checks a spec's values; throws InputError naming `file` and `path`.
void validate_gpu(const GpuSpec& gpu, const std::string& file, const std::string& path);

}  // namespace placesim::models
