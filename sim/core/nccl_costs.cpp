#include "sim/core/nccl_costs.h"

namespace placesim {

NcclCosts nccl_calibrated_costs() {
  constexpr double us = 1e-6;
  NcclCosts c;
  // Fitted to the H100 nccl-tests file (tools/fit_nccl.py prints these).
  c.base_s = {4.611 * us, 8.743 * us, 9.241 * us};
  c.nvls_base_s = 53.46 * us;
  c.hop_s[static_cast<int>(HopKind::NvLink)] = {0.7454 * us, 1.284 * us, 1.656 * us};
  c.protocol_fraction = {0.2755, 0.7356, 1.0};
  c.link_efficiency[static_cast<int>(HopKind::NvLink)] = 0.7914;
  c.nvls_fraction = 0.8439;
  // Not in the calibration file (one server): NCCL 2.18's own per-hop network latencies for rings
  // (src/graph/tuning.cc, hwLat[NET][Ring]: LL 2.7, LL128 4.0, Simple 9.6 us), and the data share
  // of an InfiniBand link (an assumption: 4 KiB MTU payloads behind their headers, and credits).
  c.hop_s[static_cast<int>(HopKind::Network)] = {2.7 * us, 4.0 * us, 9.6 * us};
  c.link_efficiency[static_cast<int>(HopKind::Network)] = 0.96;
  return c;
}

}  // namespace placesim
