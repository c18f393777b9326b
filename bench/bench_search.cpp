// `placesim search` end to end (placement/planners/search/plan_search.h): enumerate, lay out, estimate, the 10 best
// estimates simulated on the flow engine (2 and 1 of them at 4,096 and 16,384 GPUs, where each
// takes minutes), 2 at a time, as `placesim search --threads 2 --top K` runs it.
// First argument, the case:
//   0  Llama-2 7B (zoo), sequence 4,096, global batch 256, on 64 H100s ({preset: dgx-h100, servers: 8})
//   1  Llama-3 70B, sequence 8,192, global batch 1,024, on 1,024 H100s (servers: 128): the case
//      (target: the whole process under 2 minutes)
//   2  the same model, global batch 4,096, on 4,096 H100s (servers: 512)
//   3  the same, global batch 16,384, on 16,384 H100s (servers: 2,048)
// Counters: configurations enumerated, fitting in memory, estimated and simulated, each phase's
// seconds, configurations laid out per second, the best iteration time, the process's peak memory.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "bench/bench_util.h"
#include "placement/planners/search/plan_search.h"

using namespace placesim;

namespace {

struct SearchCase {
  const char* label;
  bool llama3_70b;
  int servers;
  long global_batch;
  int top;  // simulated: at 4,096 GPUs and more a plan takes a minute or more on the flow engine
};

constexpr SearchCase kCases[] = {
    {"Llama-2 7B, 64 H100s", false, 8, 256, 10},
    {"Llama-3 70B, 1,024 H100s", true, 128, 1024, 10},
    {"Llama-3 70B, 4,096 H100s", true, 512, 4096, 2},
    {"Llama-3 70B, 16,384 H100s", true, 2048, 16384, 1},
};

void BM_Search(benchmark::State& state) {
  const SearchCase& k = kCases[state.range(0)];
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("placesim-bench-search-{}", state.range(0));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "cluster.yaml") << fmt::format("cluster: {{preset: dgx-h100, servers: {}}}\n", k.servers);
  std::ofstream(dir / "llama3-70b.yaml") << "family: llama\nlayers: 80\nhidden: 8192\nheads: 64\nkv_heads: 8\n"
                                            "ffn_hidden: 28672\nvocab: 128256\nsequence: 8192\n";
  SearchRequest r;
  if (k.llama3_70b) r.base.model_file = (dir / "llama3-70b.yaml").string();
  else r.base.model = "llama2-7b";
  r.base.cluster = (dir / "cluster.yaml").string();
  r.global_batch = k.global_batch;
  r.threads = 2;
  r.top = k.top;
  SearchResult result;
  for (auto _ : state) result = search_plans(r);
  state.counters["enumerated"] = static_cast<double>(result.enumerated);
  state.counters["fitting"] = static_cast<double>(result.fitting);
  state.counters["estimated"] = static_cast<double>(result.estimated);
  state.counters["simulated"] = static_cast<double>(result.simulated);
  for (const SearchPhase& p : result.phases) state.counters[p.name.substr(0, p.name.find(' ')) + "_s"] = p.seconds;
  if (!result.phases.empty()) state.counters["laid_out_per_s"] = static_cast<double>(result.enumerated) / result.phases.front().seconds;
  if (!result.ranked.empty()) state.counters["best_s"] = result.ranked.front().iteration_s;
  state.counters["peak_rss_gib"] = benchutil::peak_rss_gib();
  state.SetLabel(k.label);
}

}  // namespace

BENCHMARK(BM_Search)->DenseRange(0, 3)->Unit(benchmark::kSecond)->Iterations(1);
