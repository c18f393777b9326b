#pragma once
// The cluster: GPUs, the one-way links between them, and a route for every ordered GPU pair.
//
// A route is one path (a list of links) or several paths, each carrying a fixed share of the
// bytes: ECMP splits a transfer equally over the equal-cost paths, multi-NIC striping splits it
// in proportion to the rate each NIC gives the destination. The SimGrid engine sends one sub-flow
// per path (the tensor has arrived when the last one has), so concurrent transfers share links.
// Strategies see the alpha-beta view (latency + bytes / bandwidth per pair, no contention), which
// is exactly the time of a lone transfer in SimGrid.
//
// Storage is shared, so a 1,024-GPU fat-tree with 64 equal-cost paths per pair takes megabytes:
// a route is stored once and used by every GPU pair that routes the same way (all GPU pairs of
// two servers), and a route is a product of stages, each a set of alternative paths (path set):
// [server A's NIC up] x [the 64 paths between two edge switches] x [server B's NIC down] gives 64
// paths of 6 links whose shares are the products of the stages' shares.
//
// Units: seconds, bytes, bytes per second.
#include <any>
#include <cstdint>
#include <memory>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

struct Device {
  std::string name;
  int server = 0;
  double memory_bytes = 0;
  // Relative to the GPU the graph's compute times were measured on: an operator takes
  // compute_s / compute_speed on this GPU (Cluster::compute_time). 1 unless a heterogeneous
  // cluster says otherwise.
  double compute_speed = 1.0;
};

// A one-way link: a full-duplex cable is two Links.
struct Link {
  std::string name;
  double bandwidth = 0;  // bytes per second
  double latency = 0;    // seconds
  // Endpoints in the node graph (Cluster::nodes), for drawing the topology and computing its
  // bisection; -1 when the builder recorded none.
  int from = -1, to = -1;
  // A rate cap rather than a cable: a per-destination queue on a NIC (multi-NIC clusters). It is
  // drawn dashed and left out of the physical bisection.
  bool logical = false;
};

// Vertices of the physical topology, for `placesim topology info` (links name their endpoints).
enum class NodeKind : std::uint8_t { Gpu, Server, Switch };
struct TopologyNode {
  std::string name;
  NodeKind kind = NodeKind::Switch;
  int server = -1;  // Gpu and Server nodes: the server index
};

// One path of a route and the fraction of a transfer's bytes it carries.
struct RoutePath {
  std::vector<int> links;
  double share = 1.0;
};

// What the builder knows about the fabric as a whole, for reports; empty for ad-hoc clusters.
struct FabricInfo {
  std::string type;                 // "fat-tree", "spine-leaf", "non-blocking", "multi-nic", ...
  double oversubscription = 0;      // worst downlink : uplink capacity ratio of a switch tier; 0 unknown
  std::vector<std::string> notes;   // routing, allocation, ... one line each
};

// How a cluster was built: the fabric's registered type and its typed configuration (the fabric's
// config struct, in std::any), so that topologies/ can rebuild it with a change, such as a
// bandwidth allocation, without reading anything back from link names. Empty for ad-hoc clusters.
struct ClusterRecipe {
  std::string type;
  std::any config;
};

class Cluster {
 public:
  // Route id of a pair that has no bandwidth at all (a multi-NIC allocation of zero).
  static constexpr int kUnreachable = -2;

  std::string description;  // one line, for reports
  FabricInfo fabric;
  std::shared_ptr<const ClusterRecipe> recipe;  // set by the fabric builders of topologies/

  int add_device(Device d);
  int add_link(Link l);
  int add_node(TopologyNode n);
  // A set of alternative paths (a stage of a route). Shares must be positive and sum to 1.
  int add_path_set(std::vector<RoutePath> paths);
  // A route whose paths are the product of the given path sets (a path takes one path of each
  // stage, in order; its share is the product of theirs). Stages must not share links.
  int add_route(std::vector<int> stages);
  // The pair src -> dst (src != dst) follows `route`; many pairs may use one route.
  void use_route(DeviceId src, DeviceId dst, int route);
  // Shorthand for a one-path route: links traversed in the given order.
  void set_route(DeviceId src, DeviceId dst, std::vector<int> links);
  // src -> dst has no bandwidth: a transfer takes forever (the view says so; SimGrid refuses it).
  void set_unreachable(DeviceId src, DeviceId dst);
  // Checks devices, links, path sets, routes and that every pair has a route or is unreachable,
  // then computes the pairwise view. Throws InputError naming `source`.
  void finalize(const std::string& source = "");

  // The cluster of the given GPUs only (distinct, in that order; GPU k of the result is
  // devices[k]), with the links and routes they use here, so that a strategy can be confined to
  // one server or one bandwidth domain. Servers are renumbered densely; no recipe is kept.
  Cluster restricted_to(std::span<const DeviceId> devices) const;

  int num_devices() const { return static_cast<int>(devices_.size()); }
  int num_servers() const;
  std::span<const Device> devices() const { return devices_; }
  const Device& device(DeviceId d) const { return devices_[d]; }
  std::span<const Link> links() const { return links_; }
  const Link& link(int id) const { return links_[id]; }
  std::span<const TopologyNode> nodes() const { return nodes_; }

  // The route's id (shared by the pairs that route alike), or kUnreachable.
  int route_id(DeviceId src, DeviceId dst) const { return pair_route_[index(src, dst)]; }
  bool reachable(DeviceId src, DeviceId dst) const { return src == dst || route_id(src, dst) >= 0; }
  // Every GPU reaches every other (as of finalize): groups need no pairwise check.
  bool all_pairs_reachable() const { return all_pairs_reachable_; }
  int num_routes() const { return static_cast<int>(routes_.size()); }
  // Number of paths of the pair's route (0 if unreachable).
  int num_paths(DeviceId src, DeviceId dst) const;
  // Every path of the pair's route with its share (shares sum to 1); empty if unreachable.
  std::vector<RoutePath> paths(DeviceId src, DeviceId dst) const;
  std::vector<RoutePath> route_paths(int route) const;
  // The first path of the pair's route: for one-path routes, the route itself. Empty if unreachable.
  std::span<const int> route(DeviceId src, DeviceId dst) const;

  // The pairwise view: a lone transfer of `bytes` takes latency + bytes / bandwidth, where
  // latency is the largest path latency (the engine waits it once, then sends every sub-flow) and
  // bandwidth = 1 / max over links of (share of the bytes crossing the link / link bandwidth).
  // For disjoint paths that is min over paths of bottleneck / share. Unreachable: bandwidth 0.
  double bandwidth(DeviceId src, DeviceId dst) const { return 1.0 / inv_bandwidth_[index(src, dst)]; }
  double latency(DeviceId src, DeviceId dst) const { return latency_[index(src, dst)]; }
  // Time for a lone transfer: zero on the same device or for a zero-byte (control) tensor. It
  // pays the path's latency `latencies` times (Tensor::latencies).
  double transfer_time(DeviceId src, DeviceId dst, double bytes, std::int32_t latencies = 1) const {
    if (src == dst || bytes <= 0) return 0.0;
    const std::size_t k = index(src, dst);
    return latency_[k] * latencies + bytes * inv_bandwidth_[k];
  }
  // Time an operator measured at `compute_s` takes on GPU d.
  double compute_time(DeviceId d, double compute_s) const { return compute_s / devices_[d].compute_speed; }

 private:
  struct PathRec {
    std::int32_t first_link, num_links;
    double share;
  };
  struct PathSetRec {
    std::int32_t first_path, num_paths;
    double latency = 0;       // largest path latency
    double inv_bandwidth = 0; // max over links of load / bandwidth
  };
  struct RouteRec {
    std::int32_t first_stage, num_stages;
    std::int32_t first_path_begin = 0, first_path_size = 0;  // into first_path_links_
    double latency = 0, inv_bandwidth = 0;
  };

  std::size_t index(DeviceId a, DeviceId b) const {
    return static_cast<std::size_t>(a) * devices_.size() + static_cast<std::size_t>(b);
  }
  void ensure_pair_table();
  void append_product_paths(const RouteRec& r, std::vector<RoutePath>& out) const;

  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<TopologyNode> nodes_;
  std::vector<PathRec> paths_;
  std::vector<std::int32_t> path_links_;
  std::vector<PathSetRec> path_sets_;
  std::vector<RouteRec> routes_;
  std::vector<std::int32_t> route_stages_;
  std::vector<std::int32_t> first_path_links_;
  // Per ordered pair, its route id (-1 unset, kUnreachable); laid out for pair_stride_ devices.
  std::vector<std::int32_t> pair_route_;
  std::size_t pair_stride_ = 0;
  // The view, per ordered pair (bandwidth is 1 / inv_bandwidth: infinite on the diagonal, 0 when
  // unreachable).
  std::vector<double> inv_bandwidth_, latency_;
  bool all_pairs_reachable_ = false;
};

}  // namespace placesim
