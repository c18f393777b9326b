// Model-zoo generation time. Target: the largest models (GPT-2, a 24-layer
// Transformer: tens of thousands of operators) are generated in under a second.
#include <benchmark/benchmark.h>

#include "sim/models/zoo.h"

using namespace placesim;
using namespace placesim::models;

namespace {

ModelConfig make(const char* model, std::int64_t layers = 0) {
  ModelConfig c;
  c.model = model;
  c.layers = layers;
  return resolve_model_config(c);
}

// Recording the iteration (forward, autodiff, optimizer) only.
void run_record(benchmark::State& state, const ModelConfig& c) {
  std::size_t ops = 0;
  for (auto _ : state) {
    const ModelBuilder b = record_model(c);
    ops = b.ops().size();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["operators"] = static_cast<double>(ops);
}

// Recording plus the roofline costs and the finalized placesim Graph: what a scenario pays.
void run_graph(benchmark::State& state, const ModelConfig& c) {
  std::size_t ops = 0;
  for (auto _ : state) {
    const Graph g = zoo_graph(c);
    ops = g.num_operators();
    benchmark::DoNotOptimize(ops);
  }
  state.counters["operators"] = static_cast<double>(ops);
}

void BM_RecordTransformer24(benchmark::State& s) { run_record(s, make("transformer", 24)); }
void BM_GraphTransformer24(benchmark::State& s) { run_graph(s, make("transformer", 24)); }
void BM_GraphGpt2(benchmark::State& s) { run_graph(s, make("gpt2")); }
void BM_GraphGpt2Xl(benchmark::State& s) {
  ModelConfig c;
  c.model = "gpt2";
  c.layers = 48;
  c.hidden = 1600;
  c.heads = 25;
  run_graph(s, resolve_model_config(c));
}
void BM_GraphBertBase(benchmark::State& s) { run_graph(s, make("bert-base")); }
void BM_GraphInceptionV3(benchmark::State& s) { run_graph(s, make("inception-v3")); }
void BM_GraphGnmt(benchmark::State& s) { run_graph(s, make("gnmt")); }
void BM_GraphVgg16(benchmark::State& s) { run_graph(s, make("vgg16")); }

BENCHMARK(BM_RecordTransformer24)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphTransformer24)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphGpt2)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphGpt2Xl)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphBertBase)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphInceptionV3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphGnmt)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GraphVgg16)->Unit(benchmark::kMillisecond);

}  // namespace
