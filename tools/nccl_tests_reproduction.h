#pragma once
// `placesim reproduce nccl-tests`: NCCL 2.18's all-reduce and all-gather on one DGX H100 as
// nccl-tests measured them (../shared/validation/nccl-tests_nd-h100-v5_1x8.csv) beside placesim's
// NCCL model on the dgx-h100 preset (algorithm auto, flow engine, step model): a table of the
// error per size, nccl-tests.csv and, with plots, time and bus bandwidth against size.
#include <string>

namespace placesim {

inline constexpr const char* kNcclTestsDescription =
    "NCCL 2.18 all-reduce and all-gather on one 8 x H100 server (nccl-tests, the calibration file) beside placesim's NCCL "
    "model on the dgx-h100 preset";

// Runs it into `output` (default: out/nccl-tests, beside the other reproductions' out/<name>). Returns 0, 1 when the plots failed; throws
// InputError (exit 2) when the measurements are absent.
int reproduce_nccl_tests(const std::string& output, bool plots);

}  // namespace placesim
