#pragma once
// The fabric registry: every cluster type a scenario's `cluster:` block may name, each with its
// key schema (sim/config/options.h) and a builder that returns a finalized cluster carrying its recipe.
// One file per fabric under topologies/ defines its config struct, builder and registry entry;
// topologies/registry.cpp lists the entries, one line each. For example:
//
//   cluster:
//     type: fat-tree            # k-ary fat-tree, ECMP by default
//     k: 4
//     servers: 16               # at most k^3/4; default: a full tree
//     gpus_per_server: 4
//     nic_bandwidth: 100Gbps
//     server_overrides: [{server: 3, gpu_memory: 80GiB, gpu_speed: 2}]
//
// `placesim topology types` lists every type and key. Latencies default to 0, as in the papers.
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/bandwidth_allocation.h"
#include "sim/core/cluster.h"
#include "sim/config/options.h"
#include "topologies/servers.h"

namespace placesim {

// A fabric: its name is the `type:` a cluster file gives, its options every key but `type`.
struct TopologyType : RegistryEntry {
  // A finalized cluster (with its recipe) from a `cluster:` mapping; errors name the file and key.
  std::function<Cluster(const YamlFields& f)> from_yaml;
};

// Errors from a builder name "<path>.<key>", with the line when the key is in the mapping.
ConfigSource yaml_config_source(const YamlFields& f);

// The TopologyType of a fabric whose builder is `build(config, source)`:
//   return topology_type<FatTreeConfig>("fat-tree", {}, "one line", fat_tree_schema(), make_fat_tree);
template <class Config>
TopologyType topology_type(std::string type, std::vector<std::string> aliases, std::string description,
                           OptionSchema<Config> schema, Cluster (*build)(const Config&, const ConfigSource&)) {
  std::vector<std::string> keys = schema.keys();
  keys.insert(keys.begin(), "type");
  TopologyType t;
  t.name = std::move(type);
  t.aliases = std::move(aliases);
  t.description = std::move(description);
  t.options = schema.docs();
  t.from_yaml = [schema = std::move(schema), keys, build](const YamlFields& f) {
    check_known_keys(f, keys);
    return build(schema.parse_known(f), yaml_config_source(f));
  };
  return t;
}

// Stores `config` as the cluster's recipe and finalizes it: the last step of every builder.
template <class Config>
void finish_cluster(Cluster& c, std::string type, const Config& config, const std::string& source) {
  c.recipe = std::make_shared<const ClusterRecipe>(ClusterRecipe{std::move(type), config});
  c.finalize(source);
}

// Every registered fabric, in registration order (topologies/registry.cpp).
const Registry<TopologyType>& topology_registry();

// Builds a cluster from a `cluster:` mapping; errors name `file` and the field.
Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path = "cluster");
// A YAML file holding either a `cluster:` mapping at top level (a scenario file, say) or the
// mapping itself.
Cluster load_cluster_file(const std::string& path);

// The cluster rebuilt from its recipe with a per-destination bandwidth allocation (a strategy's
// PlacementResult::bandwidth_allocation). Throws InputError when the cluster's fabric has no
// allocation to change (only multi-nic has), naming `what` (the strategy).
Cluster with_bandwidth_allocation(const Cluster& cluster, const BandwidthAllocation& allocation, const std::string& what);

// Every type with its keys, for `placesim topology types --json`.
nlohmann::ordered_json topologies_to_json();
std::string format_topology_types();

}  // namespace placesim
