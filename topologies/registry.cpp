// The fabric registry: one line per fabric. A new fabric is a new file under topologies/ (its
// config struct, builder and `..._topology()` entry) plus one line here.
#include "topologies/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/errors.h"
#include "sim/core/names.h"
#include "sim/core/units.h"
#include <algorithm>
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

namespace {

// `faults:` of a cluster: each entry a link by name, down or at a fraction of its bandwidth, one
// way or both (the link between the same two nodes the other way).
std::vector<LinkFault> link_faults_from_yaml(const YAML::Node& list, const Cluster& c, const std::string& file,
                                             const std::string& path) {
  if (!list.IsSequence())
    throw InputError(file, path, "expected a list of faults, e.g. [{link: leaf0-to-spine1, down: true}]");
  std::vector<std::string> names;
  for (const Link& l : c.links()) names.push_back(l.name);
  std::vector<LinkFault> faults;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlFields f(list[i], file, fmt::format("{}[{}]", path, i));
    f.allow_only({"link", "down", "fraction", "both_directions"});
    const std::string name = f.string("link");
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw InputError(file, f.field("link"), fmt::format("no link '{}' in this cluster{} (`placesim topology info --links` lists them)",
                                                          name, suggestion(name, names)));
    const bool down = f.boolean_or("down", false);
    if (down == f.has("fraction"))
      throw InputError(file, f.field("link"), "give `down: true` or `fraction:` (of the link's bandwidth, above 0, at most 1)");
    const double fraction = down ? 0.0 : f.number_or("fraction", 1.0);
    if (!down && !(fraction > 0 && fraction <= 1))
      throw InputError(file, f.field("fraction"), fmt::format("{}: expected a fraction above 0 and at most 1 (down: true for 0)", fraction));
    const int id = static_cast<int>(it - names.begin());
    faults.push_back({id, fraction});
    if (!f.boolean_or("both_directions", false)) continue;
    const Link& l = c.link(id);
    int back = -1;
    for (int j = 0; j < static_cast<int>(c.links().size()) && back < 0; ++j)
      if (l.from >= 0 && c.link(j).from == l.to && c.link(j).to == l.from && !c.link(j).logical) back = j;
    if (back < 0) throw InputError(file, f.field("both_directions"), fmt::format("link '{}' has no link back", name));
    faults.push_back({back, fraction});
  }
  return faults;
}

// The cluster with its faults, or an error naming the first pair they disconnect.
Cluster apply_link_faults(const Cluster& healthy, std::span<const LinkFault> faults, const std::string& file, const std::string& path) {
  Cluster c = healthy.with_link_faults(faults);
  std::vector<std::string> said;
  for (const LinkFault& f : faults)
    said.push_back(f.fraction == 0 ? healthy.link(f.link).name + " down"
                                   : fmt::format("{} at {:.3g}% of {}", healthy.link(f.link).name, 100 * f.fraction,
                                                 format_bandwidth(healthy.link(f.link).bandwidth)));
  c.description += fmt::format("; faults: {}", fmt::join(said, ", "));
  c.fabric.notes.push_back(fmt::format("faults: {}; routes take the paths left", fmt::join(said, ", ")));
  if (!c.all_pairs_reachable()) {
    const int n = c.num_devices();
    for (DeviceId a = 0; a < n; ++a)
      for (DeviceId b = 0; b < n; ++b)
        if (a != b && !c.reachable(a, b))
          throw InputError(file, path, fmt::format("with {}, GPU {} (server {}) cannot reach GPU {} (server {}): no path is left",
                                                   fmt::join(said, ", "), a, c.device(a).server, b, c.device(b).server));
  }
  // Rebuilding from the recipe (a bandwidth allocation) would drop the faults: none is kept.
  c.recipe = nullptr;
  return c;
}

}  // namespace

Cluster cluster_from_yaml(const YAML::Node& node, const std::string& file, const std::string& path) {
  if (node.IsMap() && node["faults"]) {
    YAML::Node healthy = YAML::Clone(node);
    healthy.remove("faults");
    const Cluster c = cluster_from_yaml(healthy, file, path);
    const std::string field = path.empty() ? "faults" : path + ".faults";
    return apply_link_faults(c, link_faults_from_yaml(node["faults"], c, file, field), file, field);
  }
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
