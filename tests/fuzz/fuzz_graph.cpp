// Fuzz target: the graph loaders (sim/io/graph_io.h) on JSON text, with the format detected from the
// content as `placesim graph info` and scenarios do, so seeds of each format (native, QuickP's
// node-link JSON, msr-fiddle) keep the mutations inside their loader. A graph that loads must
// also survive the native writer and load back with the same operators and tensors, bit for bit
// (graph_io.h promises it).
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/io/graph_io.h"
#include "tests/fuzz/fuzz_common.h"

using namespace placesim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return fuzz::run_one([&] {
    const LoadResult loaded = parse_graph(text, "fuzz.json");
    const Graph& g = loaded.graph;
    const std::string saved = to_placesim_json(g);
    LoadResult again;
    try {
      again = parse_graph(saved, "saved.json", GraphFormat::Placesim);
    } catch (const std::exception& e) {
      fuzz::finding(std::string("a loaded graph does not load back from the native format: ") + e.what());
    }
    const Graph& h = again.graph;
    if (h.num_operators() != g.num_operators() || h.num_tensors() != g.num_tensors())
      fuzz::finding("the native format does not keep the operator and tensor counts");
    for (std::size_t i = 0; i < g.num_operators(); ++i) {
      const Operator& a = g.op(static_cast<OpId>(i));
      const Operator& b = h.op(static_cast<OpId>(i));
      if (a.name != b.name || a.type != b.type || a.compute_s != b.compute_s || a.memory_bytes != b.memory_bytes ||
          a.colocation_class != b.colocation_class)
        fuzz::finding("the native format does not keep operator '" + a.name + "'");
      if (!std::isfinite(a.compute_s) || !std::isfinite(a.memory_bytes))
        fuzz::finding("a loaded operator has a value that is not finite: '" + a.name + "'");
    }
    for (std::size_t i = 0; i < g.num_tensors(); ++i) {
      const Tensor& a = g.tensor(static_cast<EdgeId>(i));
      const Tensor& b = h.tensor(static_cast<EdgeId>(i));
      if (a.src != b.src || a.dst != b.dst || a.bytes != b.bytes) fuzz::finding("the native format does not keep a tensor");
      if (!std::isfinite(a.bytes)) fuzz::finding("a loaded tensor has a size that is not finite");
    }
  });
}
