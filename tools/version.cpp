#include "version.h"

#include <fmt/format.h>

#include "placesim_commit.h"

namespace placesim {

std::string version_text() {
#ifdef PLACESIM_HAVE_TORCH
  constexpr const char* torch = "yes (the placeto strategy)";
#else
  constexpr const char* torch = "no (the placeto strategy is not built)";
#endif
#ifdef PLACESIM_HAVE_MPI
  constexpr const char* mpi = "yes (run --mpi)";
#else
  constexpr const char* mpi = "no (run --mpi is not built)";
#endif
  // ONNX import and Chakra traces are always built (CMake requires libonnx-dev and protobuf).
  return fmt::format(
      "placesim {} (commit {})\n"
      "  LibTorch: {}\n"
      "  MPI: {}\n"
      "  ONNX import: yes\n"
      "  Chakra traces: yes\n"
      "  SimGrid: {}",
      PLACESIM_VERSION, PLACESIM_COMMIT, torch, mpi, PLACESIM_SIMGRID_VERSION);
}

}  // namespace placesim
