// Run-time data and plugin lookup, relative to the executable (see data_dir.h).
#include "sim/config/data_dir.h"

#include <cstdlib>
#include <fstream>
#include <system_error>

#include "sim/core/errors.h"

// The installed layout, relative to bin/ (CMakeLists.txt sets both from GNUInstallDirs).
#ifndef PLACESIM_BIN_TO_DATA
#define PLACESIM_BIN_TO_DATA "../share/placesim"
#endif
#ifndef PLACESIM_BIN_TO_PLUGINS
#define PLACESIM_BIN_TO_PLUGINS "../lib/placesim"
#endif

namespace placesim {

namespace fs = std::filesystem;

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw InputError("/proc/self/exe", "", "cannot find the running executable: " + ec.message());
  return exe.parent_path();
}

fs::path data_dir() {
  if (const char* env = std::getenv("PLACESIM_DATA_DIR"); env && *env) return env;
  const fs::path exe_dir = executable_dir();
  // A build tree: CMake wrote the source tree's path here.
  if (std::ifstream marker(exe_dir / "placesim-data-root"); marker) {
    std::string root;
    std::getline(marker, root);
    if (!root.empty() && fs::is_directory(root)) return root;
  }
  const fs::path installed = (exe_dir / PLACESIM_BIN_TO_DATA).lexically_normal();
  if (fs::is_directory(installed)) return installed;
  throw InputError(installed.string(), "",
                   "placesim's data folder is missing (neither installed here nor a build tree's "
                   "placesim-data-root beside the executable; set PLACESIM_DATA_DIR)");
}

fs::path plugin_path(const std::string& name) {
  const fs::path exe_dir = executable_dir();
  if (fs::exists(exe_dir / name)) return exe_dir / name;
  return (exe_dir / PLACESIM_BIN_TO_PLUGINS / name).lexically_normal();
}

}  // namespace placesim
