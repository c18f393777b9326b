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
  bool nvls = false;              // needs NVLink SHARP and the group in one server
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

// Ranks first, first + 1, ... (mod n): a ring's or a tree's order.
std::vector<int> ranks_in_order(int n, int first = 0);

}  // namespace placesim
