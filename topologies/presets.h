#pragma once
// Cluster presets: machines as they are built, each figure with its public source, so a user need
// not know and type the NVSwitch and NIC figures of a DGX. In any scenario or cluster file:
//
//   cluster: {preset: dgx-h100, servers: 64}
//
// The preset supplies `type` and its keys; any key given beside `preset` wins over the preset's
// (unknown keys are errors as for any cluster). `placesim topology presets [--json]` lists every
// preset with its figures and sources. One entry per preset in topologies/presets.cpp.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/registry.h"

namespace placesim {

// One key a preset sets: its value as a cluster file writes it, and where the figure comes from.
struct PresetFigure {
  std::string key, value, source;
};

struct ClusterPreset : RegistryEntry {
  std::string type;                   // the fabric (topologies/registry.h)
  std::vector<PresetFigure> figures;  // the keys it sets, in listing order
};

// Every preset, in listing order.
const Registry<ClusterPreset>& preset_registry();

// The `cluster:` mapping `node` (whose field path is `path` in `file`) with its `preset:` replaced
// by the preset's type and keys, the keys given beside it winning. An unknown preset, or a `type`
// other than the preset's, is an InputError naming the file and the field.
YAML::Node expand_preset(const YAML::Node& node, const std::string& file, const std::string& path);

// [{name, description, type, keys: {key: value}, figures: [{key, value, source}]}].
nlohmann::ordered_json presets_to_json();
std::string format_presets();

}  // namespace placesim
