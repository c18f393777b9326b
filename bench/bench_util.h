#pragma once
// Helpers shared by the benchmarks.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>
#include <string>

#include "sim/graph_io.h"

namespace placesim::benchutil {

// Path of a profiled graph under ../shared/graphs, or "" when that folder is absent.
inline std::string shared_graph(const char* relative) {
  for (std::string root : {std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared/graphs", std::string("../shared/graphs")})
    if (std::filesystem::exists(root + "/" + relative)) return root + "/" + relative;
  return "";
}

// The profiled graph ../shared/graphs/<relative>, loaded once per process; nullptr, with the
// benchmark marked skipped and the reason given, when the folder is absent.
inline const Graph* shared_graph_or_skip(benchmark::State& state, const char* relative) {
  static std::map<std::string, Graph> loaded;
  const std::string path = shared_graph(relative);
  if (path.empty()) {
    state.SkipWithError((std::string("../shared/graphs/") + relative + " is absent").c_str());
    return nullptr;
  }
  auto it = loaded.find(path);
  if (it == loaded.end()) it = loaded.emplace(path, load_graph(path).graph).first;
  return &it->second;
}

}  // namespace placesim::benchutil
