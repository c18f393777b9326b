#pragma once
// The kernel model: what one GPU kernel of a training step takes, from its shape, its precision
// and the GPU (sim/models/gpu.h), instead of one assumed fraction of the peak (`--mfu`). Kernels of
// one stream run one after another, each followed by the GPU's kernel gap.
//  - A matrix product C[m x n] = A[m x k] B[k x n] (`batch` of them): the output is cut into tiles
//    (256 x 128, 128 x 256 or 128 x 128, whichever ends first, as cuBLAS's heuristics choose),
//    the tiles run in waves of one per SM, and a wave of tiles takes 2 Tm Tn k FLOPs per SM at
//    gemm_efficiency of the SM's share of the dense peak: a partial last wave costs a whole one
//    (wave quantization), a partial tile a whole tile. At least the operands and the result
//    crossing device memory once at the memory rate.
//  - A memory-bound kernel (element-wise, normalisation, softmax, dropout, casts, the optimizer
//    step): its bytes at memory_efficiency of the memory bandwidth.
//  - Fused attention (FlashAttention): its FLOPs (4 x heads x s^2 x head_dim forward, half of it
//    causal; the backward 2.5 times the forward: five products of that size against two,
//    recomputing the scores) at the GPU's published fused-attention fraction of the peak.
// FLOPs are counted directly (a multiply-add counts 2); bytes are device-memory traffic.
#include "sim/models/gpu.h"

namespace placesim::models {

struct KernelCost {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
  int kernels = 0;
  KernelCost& operator+=(const KernelCost& o) {
    seconds += o.seconds;
    flops += o.flops;
    bytes += o.bytes;
    kernels += o.kernels;
    return *this;
  }
};

// One matrix product of `batch` independent m x n x k products in `p` (operands and result in
// p's width; the GPU must have a peak in p).
KernelCost gemm(const GpuSpec& gpu, Precision p, double m, double n, double k, double batch = 1);
// A matrix product's backward: the input's gradient (m x k from m x n and n x k) and the
// weight's (k x n from k x m and m x n): two products.
KernelCost gemm_backward(const GpuSpec& gpu, Precision p, double m, double n, double k, double batch = 1);
// A memory-bound kernel moving `bytes`.
KernelCost memory_bound(const GpuSpec& gpu, double bytes);
// Fused attention over `batch_heads` heads of `sequence` tokens and `head_dim` each.
KernelCost fused_attention(const GpuSpec& gpu, Precision p, double batch_heads, double sequence, double head_dim, bool causal,
                           bool backward);

// The wave count and the tile of a product (for tests and explanations).
struct GemmTiling {
  int tile_m = 0, tile_n = 0;
  double tiles = 0, waves = 0;
};
GemmTiling gemm_tiling(const GpuSpec& gpu, double m, double n, double batch = 1);

}  // namespace placesim::models
