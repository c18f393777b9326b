#pragma once
// `placesim placeto ...`: training Placeto policies from the command line.
//
//   placesim placeto train --graphs G... --gpus N --episodes E --out policy.pt [--resume]
//
// trains one policy over a set of graphs on N GPUs of NVLink servers (2 per server, the QuickP
// setup), printing progress (episode, mean reward, best latency) and writing the policy file
// every --checkpoint-every episodes, so that --resume continues an interrupted run from the
// saved episode count, weights, optimizer state and baselines.
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace CLI {
class App;
}

namespace placesim {

// Adds the `placeto` command group to the CLI.
void add_placeto_commands(CLI::App& app);

// The graphs named by --graphs specs, each one of:
//   a graph file (any format load_graph reads);
//   synthetic:S or synthetic:A-B   placeto_family_graph(seed) for seed S, or for A..B;
//   zoo:MODEL                       a model-zoo graph with its default sizes.
// Bad specs are InputErrors naming `field` and the spec.
struct NamedGraph {
  std::string name;
  Graph graph;
};
std::vector<NamedGraph> placeto_training_graphs(const std::vector<std::string>& specs, const std::string& field = "--graphs");

}  // namespace placesim
