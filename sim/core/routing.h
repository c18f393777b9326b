#pragma once
// Routing: the links from GPU a to GPU b, answered when asked rather than stored per pair.
//
// A route is a product of stages, each a set of alternative paths (a path set): [server A's NIC
// up] x [the paths between two switches] x [server B's NIC down]. A stage is either a path set the
// cluster stores (id >= 0, Cluster::add_path_set) or one the routing generates from the fabric's
// structure when asked (id < 0, generated_set(k)): a fat-tree has a set of equal-cost paths per
// pair of edge switches, too many to store at 16,384 GPUs, each a formula of the two switches.
//
// The fabric builders of topologies/ supply a Routing (Cluster::set_routing); clusters built by
// hand with Cluster::use_route and set_route get a table of their pairs. A Routing is immutable
// and shared by the copies of a cluster, so threads may ask it at will.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

// Route id of a pair that has no bandwidth at all (a multi-NIC allocation of zero).
constexpr std::int64_t kUnreachableRoute = -2;

// The id of the k-th generated path set, and back.
constexpr std::int64_t generated_set(std::int64_t k) { return -1 - k; }
constexpr std::int64_t generated_index(std::int64_t set) { return -1 - set; }

// One route: its stages in order, and its id. Pairs with the same id route alike: the engines
// expand a route's paths once per id, and transfers on one path of one route share a path class.
struct Route {
  static constexpr int kMaxStages = 4;
  std::int64_t id = kUnreachableRoute;
  std::int32_t num_stages = 0;
  std::array<std::int64_t, kMaxStages> stages{};
  bool reachable() const { return id >= 0; }
};

class Routing {
 public:
  virtual ~Routing() = default;
  // The route of src -> dst (src != dst); id kUnreachableRoute and no stage when there is none.
  virtual Route route(DeviceId src, DeviceId dst) const = 0;
  // Route ids are in [0, num_routes()).
  virtual std::int64_t num_routes() const = 0;
  virtual bool all_pairs_reachable() const = 0;
  // Whether GPUs of different servers route as their servers do (one NIC per server): any GPU of
  // server A to any GPU of server B alike, so a walk over the pairs can take servers instead.
  virtual bool routes_by_server() const { return false; }
  // Whether GPUs of different servers see, for a lone transfer, what their servers' first GPUs see
  // (bandwidth, latency, paths), though their routes may differ: a NIC each, all alike.
  virtual bool views_by_server() const { return routes_by_server(); }

  // Generated path sets (stage ids < 0); a routing that generates none keeps these.
  virtual std::int32_t generated_num_paths(std::int64_t set) const;
  // Appends the links of path k of the set to `links`; returns the path's share of the bytes.
  virtual double append_generated_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const;
  // Generated sets fall in classes whose members are alike for a lone transfer (the same shares,
  // and links of the same bandwidth and latency in the same places), so the cluster computes the
  // view (latency, bandwidth) of one member per class: classes are 0 .. size of the list of
  // representatives - 1.
  // kOwnClass: a set like no other (one that lost a path to a failed link), whose view the cluster
  // computes from its paths when asked.
  static constexpr std::int32_t kOwnClass = -1;
  virtual std::int32_t generated_class(std::int64_t set) const;
  virtual std::vector<std::int64_t> generated_class_representatives() const { return {}; }
};

}  // namespace placesim
