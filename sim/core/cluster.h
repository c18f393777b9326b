#pragma once
// The cluster: GPUs, the one-way links between them, and the route of every ordered GPU pair.
//
// A route is one path (a list of links) or several paths, each carrying a fixed share of the
// bytes: ECMP splits a transfer equally over the equal-cost paths, multi-NIC striping splits it
// in proportion to the rate each NIC gives the destination. The SimGrid engine sends one sub-flow
// per path (the tensor has arrived when the last one has), so concurrent transfers share links.
// Strategies see the alpha-beta view (latency + bytes / bandwidth per pair, no contention), which
// is exactly the time of a lone transfer in SimGrid.
//
// Routes are not stored per pair: the cluster's Routing (sim/core/routing.h) answers "the route
// of a -> b" from the fabric's structure (server, rail, leaf, pod) when asked, as a product of
// stages, each a set of alternative paths (path set): [server A's NIC up] x [the 64 paths between
// two edge switches] x [server B's NIC down] gives 64 paths of 6 links whose shares are the
// products of the stages' shares. So a 16,384-GPU fabric is built in well under a second. The
// view of a pair is computed from its stages' views; clusters of up to kDenseViewMaxGpus GPUs
// also keep it per pair, for the evaluator's hot loop (the same doubles either way).
//
// Units: seconds, bytes, bytes per second.
#include <any>
#include <cstdint>
#include <memory>
#include <optional>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "sim/core/graph.h"
#include "sim/core/nccl_costs.h"
#include "sim/core/routing.h"

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

// What a lone transfer sees of a GPU pair: latency + bytes * inv_bandwidth.
struct PairView {
  double latency = 0;        // seconds: the largest path latency, summed over the stages
  double inv_bandwidth = 0;  // seconds per byte: the largest link load / bandwidth; inf if unreachable
};

// A link at a fraction of its bandwidth (0 < fraction <= 1), or down (fraction 0).
struct LinkFault {
  int link = -1;
  double fraction = 0;
};

class Cluster {
 public:
  // Route id of a pair that has no bandwidth at all (a multi-NIC allocation of zero).
  static constexpr std::int64_t kUnreachable = kUnreachableRoute;
  // Up to this many GPUs the view is also kept per ordered pair (16 bytes a pair: 64 MiB at
  // 2,048 GPUs); above, each call computes it from the route (a few stage look-ups).
  static constexpr int kDenseViewMaxGpus = 2048;

  std::string description;  // one line, for reports
  FabricInfo fabric;
  // The servers' NVSwitches reduce in the switch (NVLink SHARP): NCCL's NVLS algorithm runs.
  bool nvlink_sharp = false;
  // The GPU's name as the cluster file or its preset gives it ("H100-SXM5-80GB"); empty if unsaid.
  std::string gpu_model;
  std::shared_ptr<const ClusterRecipe> recipe;  // set by the fabric builders of topologies/
  // The communication library's costs: when set, every collective runs as NCCL runs it
  // (sim/collectives/nccl.h); when not, at line rate with no latency floor.
  std::optional<NcclCosts> nccl;

  int add_device(Device d);
  int add_link(Link l);
  int add_node(TopologyNode n);
  // A set of alternative paths (a stage of a route). Shares must be positive and sum to 1.
  int add_path_set(std::vector<RoutePath> paths);
  int num_path_sets() const { return static_cast<int>(path_sets_.size()); }

  // The fabric's routing, which answers every pair (fabric builders; see sim/core/routing.h).
  void set_routing(std::shared_ptr<const Routing> routing);
  // Or a table, for clusters built by hand (a cluster has one or the other):
  // A route whose paths are the product of the given path sets (a path takes one path of each
  // stage, in order; its share is the product of theirs). Stages must not share links.
  int add_route(std::vector<int> stages);
  // The pair src -> dst (src != dst) follows `route`; many pairs may use one route.
  void use_route(DeviceId src, DeviceId dst, int route);
  // Shorthand for a one-path route: links traversed in the given order.
  void set_route(DeviceId src, DeviceId dst, std::vector<int> links);
  // src -> dst has no bandwidth: a transfer takes forever (the view says so; SimGrid refuses it).
  void set_unreachable(DeviceId src, DeviceId dst);
  // Checks devices, links, path sets and routes (a table: that every pair has a route or is
  // unreachable; a routing: one generated set of each class), then computes the views of the path
  // sets and, up to kDenseViewMaxGpus GPUs, of every pair. Throws InputError naming `source`.
  void finalize(const std::string& source = "");

  // The cluster of the given GPUs only (distinct, in that order; GPU k of the result is
  // devices[k]), with the links and routes they use here, so that a strategy can be confined to
  // one server or one bandwidth domain. Servers are renumbered densely; no recipe is kept.
  Cluster restricted_to(std::span<const DeviceId> devices) const;

  // The cluster with some links degraded or down. A down link's paths leave every stage of every
  // route, and the paths left carry the stage's bytes in proportion to their shares (ECMP over the
  // spines that remain); a route with a stage left without a path is unreachable. Degraded links
  // keep their paths at their new bandwidth. Throws std::invalid_argument on an unknown link or a
  // fraction outside [0, 1].
  Cluster with_link_faults(std::span<const LinkFault> faults) const;

  int num_devices() const { return static_cast<int>(devices_.size()); }
  int num_servers() const;
  std::span<const Device> devices() const { return devices_; }
  const Device& device(DeviceId d) const { return devices_[d]; }
  // A GPU's compute speed changed (variability's perturbed copies, a straggler): > 0.
  void set_compute_speed(DeviceId d, double speed);
  std::span<const Link> links() const { return links_; }
  const Link& link(int id) const { return links_[id]; }
  std::span<const TopologyNode> nodes() const { return nodes_; }

  // The route's id (shared by the pairs that route alike), or kUnreachable.
  std::int64_t route_id(DeviceId src, DeviceId dst) const { return routing_->route(src, dst).id; }
  bool reachable(DeviceId src, DeviceId dst) const { return src == dst || route_id(src, dst) >= 0; }
  // Every GPU reaches every other (as of finalize): groups need no pairwise check.
  bool all_pairs_reachable() const { return all_pairs_reachable_; }
  // GPUs of two servers route as their servers do (Routing::routes_by_server).
  bool routes_by_server() const { return routing_ && routing_->routes_by_server(); }
  // GPUs of two servers see their servers' first GPUs' view (Routing::views_by_server).
  bool views_by_server() const { return routing_ && routing_->views_by_server(); }
  // Route ids are below this.
  std::int64_t num_routes() const { return routing_->num_routes(); }
  // Number of paths of the pair's route (0 if unreachable).
  int num_paths(DeviceId src, DeviceId dst) const;
  // Every path of the pair's route with its share (shares sum to 1); empty if unreachable.
  std::vector<RoutePath> paths(DeviceId src, DeviceId dst) const;
  // The first path of the pair's route: for one-path routes, the route itself. Empty if unreachable.
  std::vector<int> route(DeviceId src, DeviceId dst) const;

  // The pairwise view: a lone transfer of `bytes` takes latency + bytes / bandwidth, where
  // latency is the largest path latency (the engine waits it once, then sends every sub-flow) and
  // bandwidth = 1 / max over links of (share of the bytes crossing the link / link bandwidth).
  // For disjoint paths that is min over paths of bottleneck / share. Unreachable: bandwidth 0.
  double bandwidth(DeviceId src, DeviceId dst) const { return 1.0 / view(src, dst).inv_bandwidth; }
  double latency(DeviceId src, DeviceId dst) const { return view(src, dst).latency; }
  // Time for a lone transfer: zero on the same device or for a zero-byte (control) tensor. It
  // pays the path's latency `latencies` times (Tensor::latencies).
  // pays the path's latency `latencies` times (Tensor::latencies), plus `overhead` seconds
  // (Tensor::overhead_s).
  double transfer_time(DeviceId src, DeviceId dst, double bytes, std::int32_t latencies = 1, double overhead = 0) const {
    if (src == dst || bytes <= 0) return 0.0;
    const PairView v = view(src, dst);
    return v.latency * latencies + overhead + bytes * v.inv_bandwidth;
  }
  double transfer_time(DeviceId src, DeviceId dst, const Tensor& t) const {
    return transfer_time(src, dst, t.bytes, t.latencies, t.overhead_s);
  }
  // What a transfer of `t` between distinct GPUs waits before its bytes move (engines: the flow's
  // start delay).
  double transfer_alpha(DeviceId src, DeviceId dst, const Tensor& t) const {
    return latency(src, dst) * t.latencies + t.overhead_s;
  }
  // The pair's view as kept per pair (small clusters) or computed from its route.
  PairView view(DeviceId src, DeviceId dst) const {
    return dense_view_.empty() ? route_view(src, dst) : dense_view_[index(src, dst)];
  }
  // The pair's view computed from its route's stages, never from the per-pair copy.
  PairView route_view(DeviceId src, DeviceId dst) const;
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
  // The table of a hand-built cluster, until finalize turns it into its routing.
  struct RouteTable {
    std::vector<std::int32_t> route_first_stage, route_num_stages;
    std::vector<std::int64_t> stages;
    // Per ordered pair, its route (-1 unset, kUnreachable); laid out for `stride` devices.
    std::vector<std::int32_t> pair_route;
    std::size_t stride = 0;
  };

  std::size_t index(DeviceId a, DeviceId b) const {
    return static_cast<std::size_t>(a) * devices_.size() + static_cast<std::size_t>(b);
  }
  // Per link, the load of the path set being checked (zero between sets), and the links loaded.
  struct PathSetScratch {
    std::vector<double> load;
    std::vector<std::int32_t> touched;
  };
  void ensure_pair_table();
  PairView path_set_view(std::span<const PathRec> paths, std::span<const std::int32_t> path_links, PathSetScratch& scratch,
                         const std::string& source, const char* kind, std::int64_t number) const;
  void finalize_path_sets(const std::string& source, PathSetScratch& scratch);
  void finalize_table(const std::string& source);
  void finalize_generated_views(const std::string& source, PathSetScratch& scratch);
  PairView stages_view(const Route& r) const;
  // The view of one generated set from its paths (a set of Routing::kOwnClass).
  PairView generated_set_view(std::int64_t set) const;
  std::int32_t stage_num_paths(std::int64_t set) const;
  // Appends path k of the stage to `links`; returns its share.
  double append_stage_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const;
  void append_product_paths(const Route& r, std::vector<RoutePath>& out) const;

  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<TopologyNode> nodes_;
  std::vector<PathRec> paths_;
  std::vector<std::int32_t> path_links_;
  std::vector<PathSetRec> path_sets_;
  RouteTable table_;
  std::shared_ptr<const Routing> routing_;
  // The view of each class of generated path sets (Routing::generated_class).
  std::vector<PairView> generated_views_;
  // with_link_faults: the classes' views are the unfaulted cluster's (its faulted sets are
  // kOwnClass), kept through finalize.
  bool inherit_generated_views_ = false;
  // Per ordered pair, up to kDenseViewMaxGpus GPUs (bandwidth is 1 / inv_bandwidth: infinite on
  // the diagonal, 0 when unreachable); empty above.
  std::vector<PairView> dense_view_;
  bool all_pairs_reachable_ = false;
};

}  // namespace placesim
