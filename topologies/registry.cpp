// The fabric registry: one line per fabric. A new fabric is a new file under topologies/ (its
// config struct, builder and `..._topology()` entry) plus one line here.
#include "topologies/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/errors.h"
#include "sim/config/yaml_fields.h"
#include "topologies/fat_tree.h"
#include "topologies/full_mesh.h"
#include "topologies/multi_nic.h"
#include "topologies/non_blocking.h"
#include "topologies/nvlink_servers.h"
#include "topologies/presets.h"
#include "topologies/rail_only.h"
#include "topologies/rail_optimized.h"
#include "topologies/spine_leaf.h"

namespace placesim {

const Registry<TopologyType>& topology_registry() {
  static const Registry<TopologyType> registry("cluster type", {
      nvlink_servers_topology(),
      full_mesh_topology(),
      non_blocking_topology(),
      fat_tree_topology(),
      spine_leaf_topology(),
      multi_nic_topology(),
      rail_only_topology(),
      rail_optimized_topology(),
  });
  return registry;
}

ConfigSource yaml_config_source(const YamlFields& f) {
  return {f.file(), [f](const std::string& key) {
            return f.has(key) ? f.field(key) : (f.path().empty() ? key : f.path() + "." + key);
          }};
}

Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  // `preset: dgx-h100` (topologies/presets.h): the preset's type and keys, the ones given beside it winning.
  if (node.IsMap() && node["preset"]) return cluster_from_yaml(expand_preset(node, file, path), file, path);
  const YamlFields f(node, file, path);
  return topology_registry().get(f.string("type"), file, f.field("type")).from_yaml(f);
}

Cluster load_cluster_file(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  if (root.IsMap() && root["cluster"]) return cluster_from_yaml(root["cluster"], path, "cluster");
  return cluster_from_yaml(root, path, "");
}

Cluster with_bandwidth_allocation(const Cluster& cluster, const BandwidthAllocation& allocation, const std::string& what) {
  const MultiNicConfig* config = multi_nic_config_of(cluster);
  if (!config)
    throw InputError(what, "bandwidth_allocation",
                     fmt::format("a bandwidth allocation was chosen for a {} cluster; only multi-nic clusters have one",
                                 cluster.recipe ? cluster.recipe->type : std::string("hand-built")));
  return make_multi_nic(*config, allocation, ConfigSource{what, {}});
}

nlohmann::ordered_json topologies_to_json() { return topology_registry().to_json(); }

std::string format_topology_types() { return topology_registry().to_text(); }

}  // namespace placesim
