#pragma once
// Placement files: {"format": "placesim-placement", "version": 1, "placement": {"op name": gpu, ...}}.
// A plain JSON list of GPU indices (one per operator, in the graph's operator order) is accepted too.
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

// Throws OutputError when the file cannot be written.
void save_placement(const Graph& graph, const std::vector<DeviceId>& placement, const std::string& path);
// Every operator must be named exactly once; errors name the file and the operator.
std::vector<DeviceId> load_placement(const Graph& graph, const std::string& path);

// Writes `text` to `path` through a temporary file and a rename, so a crash never leaves a
// half-written result behind. A failed write (a full disk) removes the temporary file and throws
// OutputError naming `path` and the reason.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace placesim
