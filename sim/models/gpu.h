#pragma once
// The GPU cost model of the model zoo: a roofline. An operator that runs a kernel takes
//   max(FLOPs / (peak FLOP/s * efficiency), bytes moved / (memory bandwidth * efficiency))
//   + launch overhead;
// bookkeeping operators that run no kernel (constants, variable reads, reshapes, shape
// arithmetic kept on the host) take zero. These are estimates, not measurements: see
// docs/model-zoo.md for the sources of the presets and how the estimates were checked.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/names.h"

namespace placesim::models {

// The number formats a GPU's arithmetic runs in. Training's mixed precision keeps fp32 master
// weights and optimizer states whatever the matrix products run in.
enum class Precision { Fp32, Tf32, Fp16, Bf16, Fp8 };
inline constexpr EnumName<Precision> kPrecisionNames[] = {
    {Precision::Fp32, "fp32"}, {Precision::Tf32, "tf32"}, {Precision::Fp16, "fp16"},
    {Precision::Bf16, "bf16"}, {Precision::Fp8, "fp8"},
};
// Bytes of one value (tf32 is stored as fp32).
double precision_bytes(Precision p);

struct GpuSpec {
  std::string name;               // the preset's key: "a100"
  std::string model;              // what the vendor calls it: "A100-SXM4-80GB"
  double peak_flops = 0;          // the roofline's rate: dense FP32 FLOP/s (one fused multiply-add counts 2)
  // The precision whose dense peak peak_flops is (set_roofline_precision); unset: a rate given as flops.
  std::optional<Precision> roofline_precision = Precision::Fp32;
  double memory_bandwidth = 0;    // bytes/s of device memory
  double memory_bytes = 0;        // device memory (informational: clusters set their own)
  double launch_overhead_s = 2e-6;  // the roofline's: added to every kernel
  double efficiency = 0.75;       // the roofline's achieved fraction of both peaks
  // Dense peaks per precision (index: Precision), 0 where the chip has none (no sparsity):
  // fp32 on the CUDA cores, the rest on tensor cores.
  std::array<double, 5> dense_flops{};
  int sms = 0;                    // streaming multiprocessors (the kernel model's waves)
  double boost_clock_hz = 0;      // informational
  // The kernel model's efficiencies (sim/models/kernels.h), fitted once per GPU generation:
  double gemm_efficiency = 0;     // of the dense peak, a full wave of large tiles
  double memory_efficiency = 0;   // of memory_bandwidth, memory-bound kernels
  double attention_forward_efficiency = 0, attention_backward_efficiency = 0;  // fused attention, of the peak
  double kernel_gap_s = 0;        // between two kernels of a stream
  std::string source;             // where the figures come from
  std::string efficiency_source;  // where the kernel model's efficiencies come from

  double dense(Precision p) const { return dense_flops[static_cast<std::size_t>(p)]; }
  // Whether the kernel model can time matrix products at `p` on it.
  bool has(Precision p) const { return dense(p) > 0; }
  // The precision a command takes when none is given: bf16 where the chip has it (A100 and
  // later), else fp16 on tensor cores (V100), else fp32.
  Precision default_precision() const;
  // What an fp8 run keeps outside its fp8 matrix products (attention, the output layer, the peak
  // MFU is reported against): the 16-bit default; any other precision is itself.
  Precision outside_fp8(Precision p) const { return p == Precision::Fp8 ? default_precision() : p; }
};

// K80 (one GK210 die), V100 (SXM2 32 GB), RTX 3070, RTX 4080 Super, A100 (SXM4 80 GB; a100-40gb), H100 (SXM5
// 80 GB), H200 (SXM 141 GB), B200 (HGX, 180 GB).
const std::vector<GpuSpec>& gpu_presets();
std::optional<GpuSpec> find_gpu_preset(std::string_view name);
std::string gpu_preset_names();  // "k80, v100, ..." for messages
// The presets the kernel model can time (those with a tensor-core peak and fitted efficiencies).
std::vector<std::string> kernel_model_gpu_names();

// Times the roofline at the GPU's dense peak at `p` (a graph's operators at bf16 on tensor cores,
// say; their tensors keep the bytes they were recorded with). Throws InputError naming `file` and
// `field` when the GPU has no such peak, or when `given_as` (what the GPU was given as, named
// `given_field`; null: a default) is a mapping that sets the rate itself (precision or flops).
void set_roofline_precision(GpuSpec& gpu, Precision p, const std::string& file, const std::string& field,
                            const YAML::Node& given_as = YAML::Node(), std::string_view given_field = "gpu");

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
