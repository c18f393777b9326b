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

// Peak dense rates and memory bandwidths from the vendors' datasheets (boost clocks; dense, no
// 2:4 sparsity), SM counts and clocks from the architecture whitepapers.
struct Peaks {
  double fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;  // TFLOP/s
};

GpuSpec gpu(std::string name, std::string model, Peaks tflops, double gbps, double gib, std::string source) {
  GpuSpec g;
  g.name = std::move(name);
  g.model = std::move(model);
  g.dense_flops = {tflops.fp32 * 1e12, tflops.tf32 * 1e12, tflops.fp16 * 1e12, tflops.bf16 * 1e12, tflops.fp8 * 1e12};
  g.peak_flops = g.dense(Precision::Fp32);
  g.memory_bandwidth = gbps * 1e9;
  g.memory_bytes = gib * kGiB;
  g.source = std::move(source);
  return g;
}

GpuSpec with_chip(GpuSpec g, int sms, double mhz) {
  g.sms = sms;
  g.boost_clock_hz = mhz * 1e6;
  return g;
}

// The kernel model's efficiencies (sim/models/kernels.h). gemm and memory were fitted once, on
// the A100 rows of ../shared/validation/korthikanti2022_table5.csv (tools/fit_kernels.py,
// docs/validation.md). Other GPUs take the A100's memory fraction and its GEMM fraction scaled by
// how their best dense BF16 matmul compares with the A100's (the "maximum achievable matmul
// FLOPS" of Bekman's ML Engineering, compute/accelerator: A100 SXM 271.2 of 312, 86.9%; H100 SXM
// 794.5 of 989, 80.3%; GH200 828.6 of 989, 83.6%, for the H200; B200 1,745 of 2,250, 77.6%; no
// V100 figure: the A100's). The fused-attention fractions are FlashAttention-2's published A100
// figures (Dao 2023: forward up to 73%, backward up to 63% of the peak; the long-sequence
// headline, shorter sequences reach less) and FlashAttention-3's on H100 (Shah et al. 2024:
// forward about 75% of the BF16 peak, backward about 55%). No calibration data of Hopper or
// Blackwell is given: their predictions are held out.
constexpr double kGemmEfficiency = 0.761;
constexpr double kMemoryEfficiency = 0.660;
constexpr double kA100Matmul = 0.869;  // the A100's best matmul, of its peak (above)
constexpr double kKernelGap = 2e-6;  // a kernel launch's gap on a busy stream, about 2 us (CUDA launch latency)

// `matmul`: the GPU's best dense BF16 matmul as a fraction of its peak (above).
GpuSpec with_kernels(GpuSpec g, double matmul, double attention_forward, double attention_backward, std::string attention_source) {
  g.gemm_efficiency = kGemmEfficiency * matmul / kA100Matmul;
  g.memory_efficiency = kMemoryEfficiency;
  g.attention_forward_efficiency = attention_forward;
  g.attention_backward_efficiency = attention_backward;
  g.kernel_gap_s = kKernelGap;
  g.efficiency_source = fmt::format(
      "GEMM and memory efficiencies fitted once on Megatron-LM's A100 iteration times "
      "(../shared/validation/korthikanti2022_table5.csv, docs/validation.md), GEMM scaled by the best matmul's {:.1f}% of the "
      "peak against the A100's 86.9% (Bekman, ML Engineering){}; fused attention: {}",
      100 * matmul, matmul == kA100Matmul && g.name != "a100" && g.name != "a100-40gb" ? " (no figure of its own: the A100's)" : "",
      attention_source);
  return g;
}

std::vector<GpuSpec> make_presets() {
  const std::string fa2 = "FlashAttention-2 on A100 (Dao 2023): forward 70%, backward 60% of the peak";
  const std::string fa3 = "FlashAttention-3 on H100 (Shah et al. 2024): forward 75%, backward 55% of the BF16 peak";
  return {
      // The board has two GK210 dies (8.73 TFLOP/s, 480 GB/s, 24 GB in all); a framework sees
      // each die as one device, so a preset is one die.
      gpu("k80", "Tesla K80 (one GK210 die)", {4.37}, 240, 12,
          "NVIDIA Tesla K80 datasheet: 8.73 TFLOP/s FP32 boost, 480 GB/s, 24 GB per board of two GK210 dies; one die"),
      with_kernels(with_chip(gpu("v100", "V100-SXM2-16GB", {.fp32 = 15.7, .fp16 = 125}, 900, 16,
                                 "NVIDIA V100 datasheet, SXM2: 15.7 TFLOP/s FP32, 125 TFLOP/s tensor (fp16), 900 GB/s HBM2, 16 GB"),
                             80, 1530),
                   kA100Matmul, 0.5, 0.4, "no FlashAttention-2 on Volta; assumed 50% forward, 40% backward"),
      gpu("rtx3070", "GeForce RTX 3070", {20.3}, 448, 8,
          "NVIDIA GeForce RTX 3070 specifications: 5,888 CUDA cores at 1.725 GHz boost (20.3 TFLOP/s FP32), 448 GB/s GDDR6, 8 GB"),
      gpu("rtx4080super", "GeForce RTX 4080 Super", {52.2}, 736, 16,
          "NVIDIA GeForce RTX 4080 Super specifications: 10,240 CUDA cores at 2.55 GHz boost (52.2 TFLOP/s FP32), 736 GB/s "
          "GDDR6X, 16 GB"),
      with_kernels(with_chip(gpu("a100", "A100-SXM4-80GB", {.fp32 = 19.5, .tf32 = 156, .fp16 = 312, .bf16 = 312}, 2039, 80,
                                 "NVIDIA A100 datasheet, 80 GB SXM: 19.5 TFLOP/s FP32, 156 TF32, 312 BF16/FP16 tensor (dense), "
                                 "2,039 GB/s HBM2e, 80 GB; 108 SMs at 1,410 MHz (A100 whitepaper)"),
                             108, 1410),
                   kA100Matmul, 0.70, 0.60, fa2),
      with_kernels(with_chip(gpu("a100-40gb", "A100-SXM4-40GB", {.fp32 = 19.5, .tf32 = 156, .fp16 = 312, .bf16 = 312}, 1555, 40,
                                 "NVIDIA A100 datasheet, 40 GB SXM: 19.5 TFLOP/s FP32, 156 TF32, 312 BF16/FP16 tensor (dense), "
                                 "1,555 GB/s HBM2, 40 GB; 108 SMs at 1,410 MHz"),
                             108, 1410),
                   kA100Matmul, 0.70, 0.60, fa2),
      with_kernels(with_chip(gpu("h100", "H100-SXM5-80GB", {.fp32 = 67, .tf32 = 494.7, .fp16 = 989.4, .bf16 = 989.4, .fp8 = 1978.9},
                                 3350, 80,
                                 "NVIDIA H100 datasheet, SXM5: 67 TFLOP/s FP32, 989 TF32 / 1,979 BF16 / 3,958 FP8 with sparsity "
                                 "(half dense), 3.35 TB/s HBM3, 80 GB; 132 SMs at 1,980 MHz (H100 whitepaper)"),
                             132, 1980),
                   0.803, 0.75, 0.55, fa3),
      with_kernels(with_chip(gpu("h200", "H200-SXM-141GB", {.fp32 = 67, .tf32 = 494.7, .fp16 = 989.4, .bf16 = 989.4, .fp8 = 1978.9},
                                 4800, 141e9 / kGiB,
                                 "NVIDIA H200 datasheet, SXM: the H100's compute (989 BF16, 1,979 FP8 dense), 4.8 TB/s HBM3e, "
                                 "141 GB; 132 SMs"),
                             132, 1980),
                   0.836, 0.75, 0.55, fa3),
      with_kernels(with_chip(gpu("b200", "B200 (HGX, 1,000 W)", {.fp32 = 80, .tf32 = 1100, .fp16 = 2250, .bf16 = 2250, .fp8 = 4500},
                                 8000, 180e9 / kGiB,
                                 "NVIDIA HGX B200 datasheet, per GPU: 2.2 PFLOP/s TF32, 4.5 FP16/BF16, 9 FP8 with sparsity (half "
                                 "dense), 80 TFLOP/s FP32, 8 TB/s HBM3e, 180 GB; 148 SMs (third-party die analyses; NVIDIA "
                                 "publishes no SM count or clock)"),
                             148, 0),
                   0.776, 0.75, 0.55, fa3 + " (assumed alike on Blackwell)"),
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

double precision_bytes(Precision p) {
  switch (p) {
    case Precision::Fp32:
    case Precision::Tf32: return 4;
    case Precision::Fp16:
    case Precision::Bf16: return 2;
    case Precision::Fp8: return 1;
  }
  return 4;
}

Precision GpuSpec::default_precision() const {
  if (has(Precision::Bf16)) return Precision::Bf16;
  if (has(Precision::Fp16)) return Precision::Fp16;
  return Precision::Fp32;
}

std::vector<std::string> kernel_model_gpu_names() {
  std::vector<std::string> names;
  for (const auto& g : gpu_presets())
    if (g.gemm_efficiency > 0 && g.sms > 0 && g.has(g.default_precision())) names.push_back(g.name);
  return names;
}

std::string gpu_preset_names() {
  std::string out;
  for (const auto& g : gpu_presets()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

void set_roofline_precision(GpuSpec& gpu, Precision p, const std::string& file, const std::string& field,
                            const YAML::Node& given_as, std::string_view given_field) {
  if (given_as.IsMap() && (given_as["precision"] || given_as["flops"]))
    throw InputError(file, field, fmt::format("{} gives the roofline's rate already (its precision or flops): give one", given_field));
  if (!gpu.has(p))
    throw InputError(file, field,
                     fmt::format("{} has no {} peak{}", gpu.model.empty() ? gpu.name : gpu.model, enum_name<Precision>(kPrecisionNames, p),
                                 gpu.name == "custom" ? " (a custom GPU gives flops)" : ""));
  gpu.peak_flops = gpu.dense(p);
  gpu.roofline_precision = p;
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
  f.allow_only({"preset", "name", "precision", "flops", "memory_bandwidth", "memory", "launch_overhead", "efficiency", "tf32_flops",
                "fp16_flops", "bf16_flops", "fp8_flops", "sms", "gemm_efficiency", "memory_efficiency",
                "attention_forward_efficiency", "attention_backward_efficiency", "kernel_gap"});
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
  // The roofline's rate: the preset's dense peak at `precision` (fp32 unless given), or `flops`.
  if (f.has("precision")) {
    if (f.has("flops")) throw InputError(file, f.field("precision"), "give either precision (a preset's peak) or flops, not both");
    set_roofline_precision(g, enum_parse<Precision>(kPrecisionNames, f.string("precision"), file, f.field("precision")), file,
                           f.field("precision"));
  }
  if (f.has("flops")) {
    g.peak_flops = parse_flops(f.string("flops"), file, f.field("flops"));
    g.roofline_precision = std::nullopt;
  }
  g.memory_bandwidth = f.bandwidth_or("memory_bandwidth", g.memory_bandwidth);
  g.memory_bytes = f.bytes_or("memory", g.memory_bytes);
  g.launch_overhead_s = f.duration_or("launch_overhead", g.launch_overhead_s);
  g.efficiency = f.number_or("efficiency", g.efficiency);
  // The kernel model's figures (kernels.h): tensor-core peaks, SMs and efficiencies.
  if (f.has("flops")) g.dense_flops[static_cast<std::size_t>(Precision::Fp32)] = g.peak_flops;
  for (const auto& [key, p] : {std::pair{"tf32_flops", Precision::Tf32}, {"fp16_flops", Precision::Fp16},
                               {"bf16_flops", Precision::Bf16}, {"fp8_flops", Precision::Fp8}})
    if (f.has(key)) g.dense_flops[static_cast<std::size_t>(p)] = parse_flops(f.string(key), file, f.field(key));
  if (f.has("sms")) {
    const long sms = f.integer("sms");
    if (sms < 1 || sms > 100000) throw InputError(file, f.field("sms"), fmt::format("expected a count of SMs from 1, got {}", sms));
    g.sms = static_cast<int>(sms);
  }
  for (const auto& [key, member] : {std::pair{"gemm_efficiency", &GpuSpec::gemm_efficiency}, {"memory_efficiency", &GpuSpec::memory_efficiency},
                                    {"attention_forward_efficiency", &GpuSpec::attention_forward_efficiency},
                                    {"attention_backward_efficiency", &GpuSpec::attention_backward_efficiency}}) {
    if (!f.has(key)) continue;
    const double v = f.number_or(key, 0);
    if (!(v > 0 && v <= 1)) throw InputError(file, f.field(key), fmt::format("expected a fraction in (0, 1], got {}", v));
    g.*member = v;
    g.efficiency_source = "set in " + file;
  }
  g.kernel_gap_s = f.duration_or("kernel_gap", g.kernel_gap_s);
  if (!std::isfinite(g.kernel_gap_s) || g.kernel_gap_s < 0) throw InputError(file, f.field("kernel_gap"), "expected a non-negative duration");
  if (!(g.efficiency > 0 && g.efficiency <= 1))
    throw InputError(file, f.field("efficiency"), fmt::format("expected a fraction in (0, 1], got {}", g.efficiency));
  validate_gpu(g, file, path);
  return g;
}

}  // namespace placesim::models
