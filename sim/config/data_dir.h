#pragma once
// Where placesim finds the files it reads at run time (scenarios/papers, tools/plot_results.py,
// the LibTorch plugin), found from the running executable rather than compiled in, so that a build
// tree and an installed placesim (`cmake --install`) both work and can be moved.
#include <filesystem>
#include <string>

namespace placesim {

// The folder of the running executable (/proc/self/exe).
std::filesystem::path executable_dir();

// The data root, holding scenarios/ and tools/: $PLACESIM_DATA_DIR when set; in a build tree, the
// source tree named by the file placesim-data-root beside the executable (CMake writes it);
// installed, <prefix>/share/placesim (found as ../share/placesim from bin/). Throws InputError
// when none exists.
std::filesystem::path data_dir();

// The plugin file `name`: beside the executable in a build tree, else in <prefix>/lib/placesim.
// Returns the installed location when neither exists (the caller's load error names it).
std::filesystem::path plugin_path(const std::string& name);

}  // namespace placesim
