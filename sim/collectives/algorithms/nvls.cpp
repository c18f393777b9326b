// NVLS: all-reduce by NVLink SHARP inside one server (NCCL's NVLS algorithm on H100). Each GPU
// sends its buffer to the NVSwitch, which reduces as it reads (multimem.ld_reduce: S out of every
// GPU, S / n of the result back to each), then multicasts each reduced share to every GPU
// (S / n out of each, S into each): S (1 + 1/n) on every GPU's NVLink, each direction, against a
// ring's 2 S (n - 1) / n. NCCL pipelines the two halves, so both directions carry it at once.
// placesim's flows go GPU to GPU, so the phase is an exchange whose every GPU sends and receives
// that same S (1 + 1/n): S (1 + 1/n) / (n - 1) to each other GPU, crossing the same NVLink links
// with the same bytes as the switch's traffic (the switch itself is not a bottleneck).
#include "sim/collectives/algorithms.h"

namespace placesim {

namespace {
CollectiveShape nvls_shape(const CollectiveSpec& spec, const ShapeContext&) {
  const int n = static_cast<int>(spec.group.size());
  ExchangePhase all{{}, static_cast<double>(n) * (n - 1) / (n + 1)};
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      if (q != r) all.messages.emplace_back(r, q);
  return {{"nvls", std::move(all)}};
}
}  // namespace

CollectiveAlgorithmInfo nvls_algorithm() {
  CollectiveAlgorithmInfo info{{"nvls", {}, "NVLink SHARP all-reduce in the NVSwitch (one server whose switches reduce: nvlink_sharp)", {}},
                               {CollectiveOp::AllReduce},
                               false,
                               false,
                               nvls_shape};
  info.nvls = true;
  return info;
}

}  // namespace placesim
