#pragma once
// Helpers shared by the benchmarks.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <algorithm>

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "sim/io/graph_io.h"

namespace placesim::benchutil {

// Path of a file under ../shared (beside the source tree, or the working directory), or "" when
// it is absent.
inline std::string shared_file(const std::string& relative) {
  for (std::string root : {std::string(PLACESIM_TEST_SOURCE_DIR) + "/../shared", std::string("../shared")})
    if (std::filesystem::exists(root + "/" + relative)) return root + "/" + relative;
  return "";
}

// Path of a profiled graph under ../shared/graphs, or "" when that folder is absent.
inline std::string shared_graph(const char* relative) { return shared_file(std::string("graphs/") + relative); }

// The larger of this process's peak resident memory and its children's (SimGrid runs in a
// forked child), GiB.
inline double peak_rss_gib() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return static_cast<double>(std::max(self.ru_maxrss, children.ru_maxrss)) / (1024.0 * 1024.0);
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
