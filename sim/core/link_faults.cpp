// Cluster::with_link_faults: links degraded or down, and the routes around the down ones.
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>
#include <unordered_map>
#include <algorithm>

#include "sim/core/cluster.h"

namespace placesim {
namespace {

// The routing of a cluster with down links: each generated path set keeps its paths that cross no
// down link, their shares scaled to sum to 1; a route with a stage left empty (generated or
// stored) is unreachable. Sets that lost a path or cross a degraded link are a class of their own.
class FaultedRouting final : public Routing {
 public:
  FaultedRouting(std::shared_ptr<const Routing> base, std::vector<std::uint8_t> link_state, std::vector<std::uint8_t> dead_stored)
      : base_(std::move(base)), link_state_(std::move(link_state)), dead_stored_(std::move(dead_stored)) {}

  static constexpr std::uint8_t kHealthy = 0, kDegraded = 1, kDown = 2;

  Route route(DeviceId src, DeviceId dst) const override {
    Route r = base_->route(src, dst);
    for (int s = 0; s < r.num_stages && r.reachable(); ++s) {
      const std::int64_t set = r.stages[s];
      if (set >= 0 ? dead_stored_[static_cast<std::size_t>(set)] != 0 : survivors(set).count == 0) r = Route{};
    }
    return r;
  }
  std::int64_t num_routes() const override { return base_->num_routes(); }
  bool all_pairs_reachable() const override { return all_pairs_reachable_; }
  bool routes_by_server() const override { return base_->routes_by_server(); }
  // A NIC's fault changes its own GPUs' view: only routing by server keeps views by server.
  bool views_by_server() const override { return base_->routes_by_server(); }
  std::int32_t generated_num_paths(std::int64_t set) const override { return survivors(set).count; }
  double append_generated_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const override {
    const Survivors alive = survivors(set);
    std::vector<int> path;
    for (std::int32_t j = 0, seen = 0; j < base_->generated_num_paths(set); ++j) {
      path.clear();
      const double share = base_->append_generated_path(set, j, path);
      if (worst(path) == kDown) continue;
      if (seen++ == k) {
        links.insert(links.end(), path.begin(), path.end());
        return share / alive.share;
      }
    }
    throw std::out_of_range(fmt::format("generated path set #{} has no path {}", generated_index(set), k));
  }
  std::int32_t generated_class(std::int64_t set) const override {
    return survivors(set).touched ? kOwnClass : base_->generated_class(set);
  }
  std::vector<std::int64_t> generated_class_representatives() const override {
    return base_->generated_class_representatives();
  }
  // Ends the scan of the pairs: from here the routing is immutable and shared by threads.
  void set_all_pairs_reachable(bool reachable) {
    all_pairs_reachable_ = reachable;
    frozen_ = true;
  }

 private:
  struct Survivors {
    std::int32_t count = 0;
    double share = 0;
    bool touched = false;  // a path down or degraded
  };
  std::uint8_t worst(const std::vector<int>& path) const {
    std::uint8_t w = kHealthy;
    for (int l : path) w = std::max(w, link_state_[static_cast<std::size_t>(l)]);
    return w;
  }
  // A set's survivors, from the cache the scan of the pairs filled, or worked out.
  Survivors survivors(std::int64_t set) const {
    if (auto it = cache_.find(set); it != cache_.end()) return it->second;
    const Survivors out = count_survivors(set);
    if (!frozen_) cache_.emplace(set, out);
    return out;
  }
  Survivors count_survivors(std::int64_t set) const {
    Survivors out;
    std::vector<int> path;
    for (std::int32_t j = 0; j < base_->generated_num_paths(set); ++j) {
      path.clear();
      const double share = base_->append_generated_path(set, j, path);
      const std::uint8_t w = worst(path);
      out.touched = out.touched || w != kHealthy;
      if (w == kDown) continue;
      ++out.count;
      out.share += share;
    }
    return out;
  }

  std::shared_ptr<const Routing> base_;
  std::vector<std::uint8_t> link_state_;   // per link: kHealthy, kDegraded, kDown
  std::vector<std::uint8_t> dead_stored_;  // per stored path set: every path crosses a down link
  bool all_pairs_reachable_ = false;
  // Filled while with_link_faults scans the pairs (one thread), read-only once frozen.
  mutable std::unordered_map<std::int64_t, Survivors> cache_;
  bool frozen_ = false;
};

}  // namespace

PairView Cluster::generated_set_view(std::int64_t set) const {
  PairView view;
  std::vector<std::pair<int, double>> load;  // (link, share of the bytes): a set has few links
  std::vector<int> links;
  for (std::int32_t k = 0; k < routing_->generated_num_paths(set); ++k) {
    links.clear();
    const double share = routing_->append_generated_path(set, k, links);
    double latency = 0;
    for (int l : links) {
      latency += links_[l].latency;
      auto it = std::find_if(load.begin(), load.end(), [&](const auto& e) { return e.first == l; });
      if (it == load.end()) load.emplace_back(l, share);
      else it->second += share;
    }
    view.latency = std::max(view.latency, latency);
  }
  for (const auto& [l, share] : load) view.inv_bandwidth = std::max(view.inv_bandwidth, share / links_[l].bandwidth);
  return view;
}

Cluster Cluster::with_link_faults(std::span<const LinkFault> faults) const {
  Cluster c = *this;
  std::vector<std::uint8_t> state(links_.size(), 0);
  for (const LinkFault& f : faults) {
    if (f.link < 0 || f.link >= static_cast<int>(links_.size())) throw std::invalid_argument(fmt::format("no link #{}", f.link));
    if (!(f.fraction >= 0 && f.fraction <= 1)) throw std::invalid_argument(fmt::format("a link at {} of its bandwidth", f.fraction));
    auto& s = state[static_cast<std::size_t>(f.link)];
    if (f.fraction == 0) {
      s = FaultedRouting::kDown;
    } else {
      c.links_[f.link].bandwidth *= f.fraction;
      s = std::max(s, FaultedRouting::kDegraded);
    }
  }
  // Stored sets keep the paths that cross no down link, their shares scaled; a set with none is
  // kept whole (finalize checks it) and its routes are unreachable.
  std::vector<std::uint8_t> dead(path_sets_.size(), 0);
  c.paths_.clear();
  c.path_links_.clear();
  for (std::size_t ps = 0; ps < path_sets_.size(); ++ps) {
    const PathSetRec& set = path_sets_[ps];
    const auto down = [&](const PathRec& p) {
      for (int k = 0; k < p.num_links; ++k)
        if (state[static_cast<std::size_t>(path_links_[p.first_link + k])] == FaultedRouting::kDown) return true;
      return false;
    };
    double alive = 0;
    for (int k = 0; k < set.num_paths; ++k)
      if (const PathRec& p = paths_[set.first_path + k]; !down(p)) alive += p.share;
    dead[ps] = alive == 0;
    PathSetRec& out = c.path_sets_[ps];
    out.first_path = static_cast<std::int32_t>(c.paths_.size());
    out.num_paths = 0;
    for (int k = 0; k < set.num_paths; ++k) {
      const PathRec& p = paths_[set.first_path + k];
      if (!dead[ps] && down(p)) continue;
      c.paths_.push_back({static_cast<std::int32_t>(c.path_links_.size()), p.num_links, dead[ps] ? p.share : p.share / alive});
      c.path_links_.insert(c.path_links_.end(), path_links_.begin() + p.first_link, path_links_.begin() + p.first_link + p.num_links);
      ++out.num_paths;
    }
  }
  auto routing = std::make_shared<FaultedRouting>(routing_, state, dead);
  // Reachability: every pair, or a GPU per server when the routing goes by server (no fault
  // inside a server is then checked here; an engine refuses a transfer that cannot be routed).
  bool reachable = true;
  const int n = num_devices();
  if (routing->routes_by_server()) {
    std::vector<DeviceId> first(static_cast<std::size_t>(num_servers()), -1);
    for (DeviceId d = n - 1; d >= 0; --d) first[static_cast<std::size_t>(devices_[d].server)] = d;
    for (DeviceId a : first)
      for (DeviceId b : first)
        if (a >= 0 && b >= 0 && a != b && !routing->route(a, b).reachable()) reachable = false;
  } else if (n > 4096) {
    // Too many pairs to walk: each GPU to and from those of servers 0 and 1 (a down NIC cuts its GPU
    // off from both); a pair missed here is refused by the engine that routes it.
    for (DeviceId a = 0; a < n && reachable; ++a)
      for (DeviceId b = 0; b < n && devices_[b].server <= 1; ++b)
        if (a != b && (!routing->route(a, b).reachable() || !routing->route(b, a).reachable())) reachable = false;
  } else {
    for (DeviceId a = 0; a < n && reachable; ++a)
      for (DeviceId b = 0; b < n; ++b)
        if (a != b && !routing->route(a, b).reachable()) {
          reachable = false;
          break;
        }
  }
  routing->set_all_pairs_reachable(reachable);
  c.routing_ = routing;
  c.inherit_generated_views_ = true;
  c.finalize(description);
  c.inherit_generated_views_ = false;
  return c;
}

}  // namespace placesim
