#pragma once
// The "human expert" baseline of Placeto (Addanki et al., NeurIPS 2019, Sec. 4): "for NMT models,
// we place each LSTM layer on a separate device ... for vision models, we place each parallel
// branch on a different device". Without a human at hand, layers are read off operator names.
//
// Layers. Names are split on '/'. An operator's layer is its name scope -- every component but
// the last -- cut to its first `prefix_depth` components ("sequential_1/conv2d_1/Conv2D" is in
// "sequential_1/conv2d_1" at depth 2, "l0/a" in "l0"). An operator whose full name, cut to
// `prefix_depth` components, is itself some other operator's layer joins that layer instead (TF
// names an op's helpers after it: "adam/Sub_2" belongs with "adam/Sub_2/ReadVariableOp").
// Operators without a '/' have no layer: in topological order each takes the layer of its first
// predecessor (in input order) that has one; those still without take, in reverse topological
// order, the layer of their first successor that has one; any left (isolated, or a graph with no
// scoped names at all) become a layer of their own, so an unnamed graph degrades to one layer per
// operator. Layers are ordered by the topological position of their first operator.
//
// mode `layers` (default): the ordered layer sequence is cut into min(#GPUs, #layers) non-empty
// contiguous chunks whose largest compute sum is as small as possible (binary search on that
// bound with greedy packing; chunks are then split, never raising it, until there are enough),
// chunk i on GPU i. With as many layers as GPUs, one layer per GPU.
//
// mode `branches`: layers form a layer graph (an edge where a tensor crosses layers); layers on a
// cycle of it are merged, since they cannot run in parallel. Each layer gets a level, its longest
// path (in edges) from a source; layers sharing a level have no path between them, so they are
// parallel branches. In topological order: a layer whose only predecessor has it as only
// successor continues that branch (same GPU); a layer alone at its level (a trunk or a join)
// goes with the predecessor it receives the most bytes from; any other layer (a branch head, or
// a source) starts a new branch on the next GPU in round-robin order.
//
// Gradient scopes: with `backward_with_forward` (default), a leading "gradient_tape/" component
// (how TensorFlow 2 names the backward pass) is ignored when reading layers, so a layer's gradient
// operators join the layer they differentiate, as a human placing layers per GPU would do;
// otherwise the whole backward pass is one layer.
//
// Colocation classes are then honoured: each class goes to the GPU of its first member in
// topological order. Memory is not considered (Placeto's expert NMT placement ran out of it).
#include <string>

#include "placement/framework/strategy.h"

namespace placesim {

struct ExpertConfig {
  enum class Mode { Layers, Branches };
  Mode mode = Mode::Layers;
  int prefix_depth = 2;  // name components that identify a layer
  bool backward_with_forward = true;  // "gradient_tape/<layer>/..." belongs to <layer>
  bool operator==(const ExpertConfig&) const = default;
};

inline constexpr EnumName<ExpertConfig::Mode> kExpertModeNames[] = {
    {ExpertConfig::Mode::Layers, "layers"},
    {ExpertConfig::Mode::Branches, "branches"},
};

class Expert : public Strategy {
 public:
  explicit Expert(ExpertConfig config = {}) : Strategy("expert"), config_(config) {}
  const ExpertConfig& config() const { return config_; }

 private:
  // report: mode, layers, unscoped_operators (had no '/'), own_layer_operators (fell back to a
  // layer of their own), gpu_compute_s (per GPU), first_layer_per_gpu (name of each GPU's
  // first layer, "" when it has none).
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  ExpertConfig config_;
};

OptionSchema<ExpertConfig> expert_schema();
StrategyInfo expert_strategy_info();

}  // namespace placesim
