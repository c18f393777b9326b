#include "sim/models/kernels.h"

#include <algorithm>
#include <cmath>

namespace placesim::models {

namespace {

constexpr int kTiles[][2] = {{256, 128}, {128, 256}, {128, 128}};

double waves_of(const GpuSpec& gpu, double m, double n, double batch, int tm, int tn) {
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn) * batch;
  return std::ceil(tiles / gpu.sms);
}

}  // namespace

GemmTiling gemm_tiling(const GpuSpec& gpu, double m, double n, double batch) {
  // The tile whose waves take least: each wave costs Tm x Tn of work per SM.
  GemmTiling best;
  double best_work = 0;
  for (const auto& t : kTiles) {
    const double waves = waves_of(gpu, m, n, batch, t[0], t[1]);
    const double work = waves * t[0] * t[1];
    if (best.tile_m == 0 || work < best_work) {
      best = {t[0], t[1], std::ceil(m / t[0]) * std::ceil(n / t[1]) * batch, waves};
      best_work = work;
    }
  }
  return best;
}

KernelCost gemm(const GpuSpec& gpu, Precision p, double m, double n, double k, double batch) {
  KernelCost c;
  c.flops = 2 * m * n * k * batch;
  c.bytes = (m * k + k * n + m * n) * batch * precision_bytes(p);
  c.kernels = 1;
  if (c.flops <= 0) return c;
  const GemmTiling t = gemm_tiling(gpu, m, n, batch);
  const double per_sm = gpu.dense(p) / gpu.sms * gpu.gemm_efficiency;
  const double compute = t.waves * 2.0 * t.tile_m * t.tile_n * k / per_sm;
  const double memory = c.bytes / (gpu.memory_bandwidth * gpu.memory_efficiency);
  c.seconds = std::max(compute, memory) + gpu.kernel_gap_s;
  return c;
}

KernelCost gemm_backward(const GpuSpec& gpu, Precision p, double m, double n, double k, double batch) {
  KernelCost c = gemm(gpu, p, m, k, n, batch);  // input's gradient: dC (m x n) B^T (n x k)
  c += gemm(gpu, p, k, n, m, batch);            // weight's gradient: A^T (k x m) dC (m x n)
  return c;
}

KernelCost memory_bound(const GpuSpec& gpu, double bytes) {
  KernelCost c;
  c.bytes = bytes;
  c.kernels = 1;
  c.seconds = bytes / (gpu.memory_bandwidth * gpu.memory_efficiency) + gpu.kernel_gap_s;
  return c;
}

KernelCost fused_attention(const GpuSpec& gpu, Precision p, double batch_heads, double sequence, double head_dim, bool causal,
                           bool backward) {
  KernelCost c;
  const double forward = 4 * batch_heads * sequence * sequence * head_dim * (causal ? 0.5 : 1.0);
  c.flops = backward ? 2.5 * forward : forward;
  // Q, K, V and the output (and in the backward their gradients) cross memory once.
  c.bytes = (backward ? 8 : 4) * batch_heads * sequence * head_dim * precision_bytes(gpu.outside_fp8(p));
  c.kernels = 1;
  const double efficiency = backward ? gpu.attention_backward_efficiency : gpu.attention_forward_efficiency;
  // fp8 attention is not modelled: it runs at the 16-bit peak.
  const double peak = gpu.dense(p == Precision::Fp32 ? gpu.default_precision() : gpu.outside_fp8(p));
  c.seconds = std::max(c.flops / (peak * efficiency), c.bytes / (gpu.memory_bandwidth * gpu.memory_efficiency)) + gpu.kernel_gap_s;
  return c;
}

}  // namespace placesim::models
