#pragma once
// The collective algorithms: each one file under sim/collectives/algorithms/ that describes it as
// the phases it runs (sim/collectives/shape.h), registered by one line in
// sim/collectives/algorithms/registry.cpp. The message graph, the lockstep steps and the closed
// forms follow from the phases; nothing else switches on the algorithm.
#include <span>
#include <string>
#include <vector>

#include "sim/collectives/collectives.h"
#include "sim/collectives/shape.h"
#include "sim/core/registry.h"

namespace placesim {

// Per level (from the server up), its rings of ranks: collective_levels' answer.
using CollectiveLevels = std::vector<std::vector<std::vector<int>>>;

// What an algorithm's shape may depend on beyond the spec.
struct ShapeContext {
  CollectiveLevels levels;                // collective_levels' answer for an algorithm with `levels`
  std::vector<std::vector<int>> servers;  // the group's ranks by server (ranks_by_server)
  bool nccl = false;                      // the cluster runs NCCL (Cluster::nccl): NCCL's trees
};

struct CollectiveAlgorithmInfo : RegistryEntry {
  std::vector<CollectiveOp> ops;  // the operations it has
  bool power_of_two = false;      // needs a group of 2^k ranks
  bool levels = false;            // runs over the fabric's levels (collective_levels)
  // Its phases for a spec collective_problem accepts.
  CollectiveShape (*shape)(const CollectiveSpec& spec, const ShapeContext& context) = nullptr;
  bool nvls = false;              // needs NVLink SHARP; the group in one server unless across_servers
  bool across_servers = false;    // nvls: reduces in each server's switch, then across servers (NVLS-tree)
};

// Every algorithm, in registration order: the built-ins first, in the order of
// CollectiveAlgorithm's enumerators (an algorithm's value is its position).
const Registry<CollectiveAlgorithmInfo>& collective_algorithm_registry();
const CollectiveAlgorithmInfo& collective_algorithm(CollectiveAlgorithm algorithm);
bool collective_supports(CollectiveOp op, CollectiveAlgorithm algorithm);
// The algorithms `op` has, by name, comma-separated.
std::string collective_algorithms_of(CollectiveOp op);

// The phases of a spec that collective_problem accepts.
CollectiveShape collective_shape(const CollectiveSpec& spec, const Cluster& cluster);

// Bytes of a message of a tree phase from GPU a to GPU b per byte of its share: the phase's
// in_server_scale between two GPUs of one server, else 1.
inline double in_server_scale(const TreePhase& tree, const Cluster& cluster, DeviceId a, DeviceId b) {
  return cluster.device(a).server == cluster.device(b).server ? tree.in_server_scale : 1.0;
}

// A tree over the servers of a group in heap order of a binary tree (server_order: server
// indices by heap slot; a slot's parent is slot (slot - 1) / 2), each server's ranks starting at
// its c-th (modulo its size): that rank hangs below the parent slot's first, the server's others
// below it, as a chain (NCCL's tree) or all directly (`star`: NVLS-tree's switch). Returns the
// ranks in tree order and the position of each one's parent.
std::pair<std::vector<int>, std::vector<int>> servers_tree(const std::vector<std::vector<int>>& servers,
                                                           const std::vector<int>& server_order, int c, bool star);

// Ranks first, first + 1, ... (mod n): a ring's or a tree's order.
std::vector<int> ranks_in_order(int n, int first = 0);

}  // namespace placesim
