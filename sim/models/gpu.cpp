#include "sim/models/gpu.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"
#include "sim/config/yaml_fields.h"

namespace placesim::models {

namespace {

constexpr double kGiB = 1073741824.0;

// Peak dense FP32 rates and memory bandwidths from the vendors' datasheets (boost clocks).
std::vector<GpuSpec> make_presets() {
  auto gpu = [](std::string name, double tflops, double gbps, double gib, std::string source) {
    GpuSpec g;
    g.name = std::move(name);
    g.peak_flops = tflops * 1e12;
    g.memory_bandwidth = gbps * 1e9;
    g.memory_bytes = gib * kGiB;
    g.source = std::move(source);
    return g;
  };
  auto with_tensor = [](GpuSpec g, double tflops, const std::string& source) {
    g.tensor_flops = tflops * 1e12;
    g.source += "; " + source;
    return g;
  };
  return {
      // The board has two GK210 dies (8.73 TFLOP/s, 480 GB/s, 24 GB in all); a framework sees
      // each die as one device, so a preset is one die.
      gpu("k80", 4.37, 240, 12, "NVIDIA Tesla K80 datasheet: 8.73 TFLOP/s FP32 boost, 480 GB/s, 24 GB per board of two GK210 dies; one die"),
      with_tensor(gpu("v100", 15.7, 900, 16, "NVIDIA V100 datasheet, SXM2: 15.7 TFLOP/s FP32, 900 GB/s HBM2, 16 GB"), 125,
                  "125 TFLOP/s tensor performance"),
      gpu("rtx3070", 20.3, 448, 8, "NVIDIA GeForce RTX 3070 specifications: 5,888 CUDA cores at 1.725 GHz boost (20.3 TFLOP/s FP32), 448 GB/s GDDR6, 8 GB"),
      gpu("rtx4080super", 52.2, 736, 16, "NVIDIA GeForce RTX 4080 Super specifications: 10,240 CUDA cores at 2.55 GHz boost (52.2 TFLOP/s FP32), 736 GB/s GDDR6X, 16 GB"),
      with_tensor(gpu("a100", 19.5, 1555, 40, "NVIDIA A100 datasheet, 40 GB SXM: 19.5 TFLOP/s FP32 (156 TFLOP/s TF32 tensor cores not used), 1,555 GB/s HBM2, 40 GB"),
                  312, "312 TFLOP/s BF16/FP16 tensor core, dense"),
      with_tensor(gpu("h100", 67, 3350, 80, "NVIDIA H100 datasheet, SXM5: 67 TFLOP/s FP32, 3.35 TB/s HBM3, 80 GB"), 989,
                  "1,979 TFLOP/s BF16 with sparsity, 989 dense"),
  };
}

}  // namespace

const std::vector<GpuSpec>& gpu_presets() {
  static const std::vector<GpuSpec> presets = make_presets();
  return presets;
}

std::optional<GpuSpec> find_gpu_preset(std::string_view name) {
  for (const auto& g : gpu_presets())
    if (g.name == name) return g;
  return std::nullopt;
}

std::string gpu_preset_names() {
  std::string out;
  for (const auto& g : gpu_presets()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

double roofline_seconds(const GpuSpec& gpu, double flops, double bytes_moved) {
  const double compute = flops / (gpu.peak_flops * gpu.efficiency);
  const double memory = bytes_moved / (gpu.memory_bandwidth * gpu.efficiency);
  return std::max(compute, memory) + gpu.launch_overhead_s;
}

void validate_gpu(const GpuSpec& gpu, const std::string& file, const std::string& path) {
  auto positive = [&](double v, const char* key) {
    if (!std::isfinite(v) || v <= 0) throw InputError(file, path + "." + key, fmt::format("expected a positive value, got {}", v));
  };
  positive(gpu.peak_flops, "flops");
  positive(gpu.memory_bandwidth, "memory_bandwidth");
  if (!std::isfinite(gpu.launch_overhead_s) || gpu.launch_overhead_s < 0)
    throw InputError(file, path + ".launch_overhead", "expected a non-negative duration");
  if (!(gpu.efficiency > 0 && gpu.efficiency <= 1))
    throw InputError(file, path + ".efficiency", fmt::format("expected a fraction in (0, 1], got {}", gpu.efficiency));
}

GpuSpec gpu_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  auto unknown_preset = [&](const std::string& name, const std::string& field) {
    std::vector<std::string> names;
    for (const auto& g : gpu_presets()) names.push_back(g.name);
    const std::string hint = nearest_word(name, names);
    return InputError(file, field,
                      fmt::format("unknown GPU '{}'{} (presets: {}; or give a mapping with flops and memory_bandwidth)", name,
                                  hint.empty() ? "" : "; did you mean '" + hint + "'?", gpu_preset_names()));
  };
  if (node.IsScalar()) {
    auto preset = find_gpu_preset(node.Scalar());
    if (!preset) throw unknown_preset(node.Scalar(), path);
    return *preset;
  }
  YamlFields f(node, file, path);
  f.allow_only({"preset", "name", "flops", "memory_bandwidth", "memory", "launch_overhead", "efficiency"});
  GpuSpec g;
  if (f.has("preset")) {
    const std::string name = f.string("preset");
    auto preset = find_gpu_preset(name);
    if (!preset) throw unknown_preset(name, f.field("preset"));
    g = *preset;
  } else {
    if (!f.has("flops")) throw InputError(file, path + ".flops", "required without a preset: the peak FP32 rate, e.g. 30TFLOP/s");
    if (!f.has("memory_bandwidth"))
      throw InputError(file, path + ".memory_bandwidth", "required without a preset: the memory bandwidth, e.g. 1TB/s");
    g.name = "custom";
    g.source = "user-defined in the scenario";
  }
  g.name = f.string_or("name", g.name);
  if (f.has("flops")) g.peak_flops = parse_flops(f.string("flops"), file, f.field("flops"));
  g.memory_bandwidth = f.bandwidth_or("memory_bandwidth", g.memory_bandwidth);
  g.memory_bytes = f.bytes_or("memory", g.memory_bytes);
  g.launch_overhead_s = f.duration_or("launch_overhead", g.launch_overhead_s);
  g.efficiency = f.number_or("efficiency", g.efficiency);
  if (!(g.efficiency > 0 && g.efficiency <= 1))
    throw InputError(file, f.field("efficiency"), fmt::format("expected a fraction in (0, 1], got {}", g.efficiency));
  validate_gpu(g, file, path);
  return g;
}

}  // namespace placesim::models
