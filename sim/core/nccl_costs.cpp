#include "sim/core/nccl_costs.h"

namespace placesim {

NcclCosts nccl_calibrated_costs() {
  constexpr double us = 1e-6;
  NcclCosts c;
  // Fitted to the H100 nccl-tests file (tools/fit_nccl.py prints these) on top of the dgx-h100
  // preset's NVLink path latency (0.6 us per GPU-to-GPU hop), which every message also pays.
  c.base_s = {5.624 * us, 12.76 * us, 6.2 * us};
  c.nvls_base_s = 62.14 * us;
  c.hop_s[static_cast<int>(HopKind::NvLink)] = {0.1079 * us, 0.2364 * us, 2.372 * us};
  c.protocol_fraction = {0.3001, 0.8471, 1.0};
  c.link_efficiency[static_cast<int>(HopKind::NvLink)] = 0.7672;
  c.nvls_fraction = 0.9191;
  // Not in the calibration file (one server): NCCL 2.18's own per-hop network latencies for rings
  // (src/graph/tuning.cc, hwLat[NET][Ring]: LL 2.7, LL128 4.0, Simple 9.6 us), and the data share
  // of an InfiniBand link (an assumption: 4 KiB MTU payloads behind their headers, and credits).
  c.hop_s[static_cast<int>(HopKind::Network)] = {2.7 * us, 4.0 * us, 9.6 * us};
  c.link_efficiency[static_cast<int>(HopKind::Network)] = 0.96;
  return c;
}

}  // namespace placesim
