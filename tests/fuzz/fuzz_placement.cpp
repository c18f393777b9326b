// Fuzz target: placement files (sim/io/placement_io.h) for a fixed graph of three operators, read
// through a scratch file as `placesim evaluate --placement` reads them. A placement that loads
// names a GPU for every operator, and writes and loads back the same.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/io/placement_io.h"
#include "tests/fuzz/fuzz_common.h"

using namespace placesim;

namespace {
Graph three_operators() {
  Graph g;
  const OpId a = g.add_operator({"a", "MatMul", 1e-3, 1e6});
  const OpId b = g.add_operator({"b", "Relu", 1e-4, 0});
  const OpId c = g.add_operator({"c", "Softmax", 2e-4, 1e3});
  g.add_tensor(a, b, 1024);
  g.add_tensor(b, c, 1024);
  g.finalize("fuzz graph");
  return g;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Graph graph = three_operators();
  static fuzz::ScratchFile input("placement.json");
  static fuzz::ScratchFile saved("saved.json");
  const std::string& path = input.write(data, size);
  return fuzz::run_one([&] {
    const std::vector<DeviceId> placement = load_placement(graph, path);
    if (placement.size() != graph.num_operators()) fuzz::finding("load_placement returned the wrong number of GPUs");
    for (DeviceId d : placement)
      if (d < 0) fuzz::finding("load_placement returned a negative GPU index");
    save_placement(graph, placement, saved.path());
    if (load_placement(graph, saved.path()) != placement) fuzz::finding("a saved placement does not load back the same");
  });
}
