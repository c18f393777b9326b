#pragma once
// Helpers shared by the benchmarks.
#include <filesystem>
#include <string>

namespace placesim::benchutil {

// Path of a profiled graph under ../shared/graphs, or "" when that folder is absent.
inline std::string shared_graph(const char* relative) {
  for (std::string root : {std::string(PLACESIM_SOURCE_DIR) + "/../shared/graphs", std::string("../shared/graphs")})
    if (std::filesystem::exists(root + "/" + relative)) return root + "/" + relative;
  return "";
}

}  // namespace placesim::benchutil
