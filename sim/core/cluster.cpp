#include "sim/core/cluster.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// The routing of a hand-built cluster: its table of pairs, as add_route and use_route filled it.
class TableRouting final : public Routing {
 public:
  TableRouting(std::vector<std::int32_t> pair_route, std::size_t stride, std::vector<std::int32_t> route_first_stage,
               std::vector<std::int32_t> route_num_stages, std::vector<std::int64_t> stages, bool all_pairs_reachable)
      : pair_route_(std::move(pair_route)),
        stride_(stride),
        route_first_stage_(std::move(route_first_stage)),
        route_num_stages_(std::move(route_num_stages)),
        stages_(std::move(stages)),
        all_pairs_reachable_(all_pairs_reachable) {}

  Route route(DeviceId src, DeviceId dst) const override {
    Route r;
    const std::int32_t id = pair_route_[static_cast<std::size_t>(src) * stride_ + static_cast<std::size_t>(dst)];
    if (id < 0) return r;  // finalize left no pair unset: unreachable
    r.id = id;
    r.num_stages = route_num_stages_[id];
    std::copy_n(stages_.begin() + route_first_stage_[id], r.num_stages, r.stages.begin());
    return r;
  }
  std::int64_t num_routes() const override { return static_cast<std::int64_t>(route_first_stage_.size()); }
  bool all_pairs_reachable() const override { return all_pairs_reachable_; }

 private:
  std::vector<std::int32_t> pair_route_;
  std::size_t stride_;
  std::vector<std::int32_t> route_first_stage_, route_num_stages_;
  std::vector<std::int64_t> stages_;
  bool all_pairs_reachable_;
};

// The routing of Cluster::restricted_to: GPU k is the original cluster's GPU devices[k].
class RestrictedRouting final : public Routing {
 public:
  RestrictedRouting(std::shared_ptr<const Routing> base, std::vector<DeviceId> devices)
      : base_(std::move(base)), devices_(std::move(devices)) {
    all_pairs_reachable_ = base_->all_pairs_reachable();
    const auto n = static_cast<DeviceId>(devices_.size());
    for (DeviceId a = 0; a < n && !all_pairs_reachable_; ++a)
      for (DeviceId b = 0; b < n; ++b)
        if (a != b && !route(a, b).reachable()) return;
    all_pairs_reachable_ = true;
  }

  Route route(DeviceId src, DeviceId dst) const override { return base_->route(devices_[src], devices_[dst]); }
  std::int64_t num_routes() const override { return base_->num_routes(); }
  bool all_pairs_reachable() const override { return all_pairs_reachable_; }
  std::int32_t generated_num_paths(std::int64_t set) const override { return base_->generated_num_paths(set); }
  double append_generated_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const override {
    return base_->append_generated_path(set, k, links);
  }
  std::int32_t generated_class(std::int64_t set) const override { return base_->generated_class(set); }
  std::vector<std::int64_t> generated_class_representatives() const override {
    return base_->generated_class_representatives();
  }

 private:
  std::shared_ptr<const Routing> base_;
  std::vector<DeviceId> devices_;
  bool all_pairs_reachable_ = false;
};

}  // namespace


void Cluster::set_compute_speed(DeviceId d, double speed) {
  if (!(speed > 0) || !std::isfinite(speed))
    throw std::invalid_argument(fmt::format("GPU {}: a compute speed of {} cannot be set", d, speed));
  devices_[static_cast<std::size_t>(d)].compute_speed = speed;
}

int Cluster::add_device(Device d) {
  devices_.push_back(std::move(d));
  return num_devices() - 1;
}

int Cluster::add_link(Link l) {
  links_.push_back(std::move(l));
  return static_cast<int>(links_.size() - 1);
}

int Cluster::add_node(TopologyNode n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size() - 1);
}

int Cluster::add_path_set(std::vector<RoutePath> paths) {
  PathSetRec set;
  set.first_path = static_cast<std::int32_t>(paths_.size());
  set.num_paths = static_cast<std::int32_t>(paths.size());
  for (RoutePath& p : paths) {
    paths_.push_back({static_cast<std::int32_t>(path_links_.size()), static_cast<std::int32_t>(p.links.size()), p.share});
    path_links_.insert(path_links_.end(), p.links.begin(), p.links.end());
  }
  path_sets_.push_back(set);
  return static_cast<int>(path_sets_.size() - 1);
}

int Cluster::add_route(std::vector<int> stages) {
  table_.route_first_stage.push_back(static_cast<std::int32_t>(table_.stages.size()));
  table_.route_num_stages.push_back(static_cast<std::int32_t>(stages.size()));
  table_.stages.insert(table_.stages.end(), stages.begin(), stages.end());
  return static_cast<int>(table_.route_first_stage.size() - 1);
}

// The pair table is laid out for the current device count; devices added later re-lay it out.
void Cluster::ensure_pair_table() {
  const std::size_t n = devices_.size();
  if (table_.stride == n && table_.pair_route.size() == n * n) return;
  std::vector<std::int32_t> table(n * n, -1);
  const std::size_t old = table_.stride;
  for (std::size_t a = 0; a < std::min(old, n); ++a)
    for (std::size_t b = 0; b < std::min(old, n); ++b) table[a * n + b] = table_.pair_route[a * old + b];
  table_.pair_route = std::move(table);
  table_.stride = n;
}

void Cluster::use_route(DeviceId src, DeviceId dst, int route) {
  if (routing_) throw std::logic_error("use_route: this cluster has a fabric's routing");
  ensure_pair_table();
  table_.pair_route[index(src, dst)] = route;
}

void Cluster::set_route(DeviceId src, DeviceId dst, std::vector<int> links) {
  use_route(src, dst, add_route({add_path_set({RoutePath{std::move(links), 1.0}})}));
}

void Cluster::set_unreachable(DeviceId src, DeviceId dst) {
  use_route(src, dst, static_cast<int>(kUnreachable));
}

void Cluster::set_routing(std::shared_ptr<const Routing> routing) {
  if (!table_.route_first_stage.empty() || !table_.pair_route.empty())
    throw std::logic_error("set_routing: this cluster has routes set by hand");
  routing_ = std::move(routing);
}

Cluster Cluster::restricted_to(std::span<const DeviceId> devices) const {
  Cluster c;
  c.fabric = fabric;
  c.nccl = nccl;
  c.nvlink_sharp = nvlink_sharp;
  c.gpu_model = gpu_model;
  c.links_ = links_;
  c.nodes_ = nodes_;
  c.paths_ = paths_;
  c.path_links_ = path_links_;
  c.path_sets_ = path_sets_;
  std::vector<int> server_of(num_servers(), -1);
  std::vector<std::uint8_t> named(devices_.size(), 0);
  int servers = 0;
  for (DeviceId d : devices) {
    if (d < 0 || d >= num_devices()) throw std::invalid_argument(fmt::format("restricted_to: no GPU {}", d));
    if (named[d]++) throw std::invalid_argument("restricted_to: a GPU named twice");
    Device dev = devices_[d];
    if (server_of[dev.server] < 0) server_of[dev.server] = servers++;
    dev.server = server_of[dev.server];
    c.add_device(std::move(dev));
  }
  c.routing_ = std::make_shared<RestrictedRouting>(routing_, std::vector<DeviceId>(devices.begin(), devices.end()));
  c.description = fmt::format("{} of {} GPUs of {}", c.num_devices(), num_devices(), description);
  // The same generated sets and classes: their views are this cluster's (a faulted cluster's
  // representatives may have lost paths; its views are the healthy ones).
  c.generated_views_ = generated_views_;
  c.inherit_generated_views_ = true;
  c.finalize("restricted cluster");
  c.inherit_generated_views_ = false;
  return c;
}

int Cluster::num_servers() const {
  int servers = 0;
  for (const Device& d : devices_) servers = std::max(servers, d.server + 1);
  return servers;
}

std::int32_t Cluster::stage_num_paths(std::int64_t set) const {
  return set >= 0 ? path_sets_[set].num_paths : routing_->generated_num_paths(set);
}

double Cluster::append_stage_path(std::int64_t set, std::int32_t k, std::vector<int>& links) const {
  if (set < 0) return routing_->append_generated_path(set, k, links);
  const PathRec& path = paths_[path_sets_[set].first_path + k];
  links.insert(links.end(), path_links_.begin() + path.first_link, path_links_.begin() + path.first_link + path.num_links);
  return path.share;
}

int Cluster::num_paths(DeviceId src, DeviceId dst) const {
  if (src == dst) return 0;
  const Route r = routing_->route(src, dst);
  if (!r.reachable()) return 0;
  int count = 1;
  for (int s = 0; s < r.num_stages; ++s) count *= stage_num_paths(r.stages[s]);
  return count;
}

// Enumerates the product of the stages like an odometer, the last stage turning fastest.
void Cluster::append_product_paths(const Route& r, std::vector<RoutePath>& out) const {
  std::array<std::int32_t, Route::kMaxStages> digit{}, size{};
  for (int s = 0; s < r.num_stages; ++s) size[s] = stage_num_paths(r.stages[s]);
  for (;;) {
    RoutePath p;
    for (int s = 0; s < r.num_stages; ++s) p.share *= append_stage_path(r.stages[s], digit[s], p.links);
    out.push_back(std::move(p));
    int s = r.num_stages - 1;
    for (; s >= 0; --s) {
      if (++digit[s] < size[s]) break;
      digit[s] = 0;
    }
    if (s < 0) return;
  }
}

std::vector<RoutePath> Cluster::paths(DeviceId src, DeviceId dst) const {
  std::vector<RoutePath> out;
  if (src == dst) return out;
  const Route r = routing_->route(src, dst);
  if (r.reachable()) append_product_paths(r, out);
  return out;
}

std::vector<int> Cluster::route(DeviceId src, DeviceId dst) const {
  std::vector<int> links;
  if (src == dst) return links;
  const Route r = routing_->route(src, dst);
  if (!r.reachable()) return links;
  for (int s = 0; s < r.num_stages; ++s) append_stage_path(r.stages[s], 0, links);
  return links;
}

// Stages add latencies; the slowest stage bounds the bandwidth.
PairView Cluster::stages_view(const Route& r) const {
  if (!r.reachable()) return {0.0, kInf};
  PairView v;
  for (int s = 0; s < r.num_stages; ++s) {
    const std::int64_t set = r.stages[s];
    PairView stage;
    if (set >= 0) {
      stage = {path_sets_[set].latency, path_sets_[set].inv_bandwidth};
    } else {
      const std::int32_t cls = routing_->generated_class(set);
      stage = cls == Routing::kOwnClass ? generated_set_view(set) : generated_views_[cls];
    }
    v.latency += stage.latency;
    v.inv_bandwidth = std::max(v.inv_bandwidth, stage.inv_bandwidth);
  }
  return v;
}

PairView Cluster::route_view(DeviceId src, DeviceId dst) const {
  return src == dst ? PairView{} : stages_view(routing_->route(src, dst));
}

// The view of a path set (its largest path latency; its largest link load per unit of bandwidth,
// where the load of a link is the share of the bytes crossing it, summed over paths), after
// checking its paths. `load` (one per link, zero) and `touched` are scratch.
PairView Cluster::path_set_view(std::span<const PathRec> paths, std::span<const std::int32_t> path_links,
                                PathSetScratch& scratch, const std::string& source, const char* kind,
                                std::int64_t number) const {
  // Named only on an error: a cluster has tens of thousands of path sets.
  auto name = [&] { return fmt::format("{} #{}", kind, number); };
  if (paths.empty()) throw InputError(source, "cluster", fmt::format("{} has no path", name()));
  const int num_links = static_cast<int>(links_.size());
  PairView view;
  double shares = 0;
  scratch.touched.clear();
  for (const PathRec& p : paths) {
    if (p.num_links == 0) throw InputError(source, "cluster", fmt::format("{} has an empty path", name()));
    if (!(p.share > 0) || !std::isfinite(p.share))
      throw InputError(source, "cluster", fmt::format("{} has a path with share {}", name(), p.share));
    shares += p.share;
    double latency = 0;
    for (int k = 0; k < p.num_links; ++k) {
      const int id = path_links[p.first_link + k];
      if (id < 0 || id >= num_links) throw InputError(source, "cluster", fmt::format("{} names unknown link #{}", name(), id));
      for (int j = 0; j < k; ++j)
        if (path_links[p.first_link + j] == id)
          throw InputError(source, "cluster", fmt::format("a path of {} crosses link '{}' twice", name(), links_[id].name));
      latency += links_[id].latency;
      if (scratch.load[id] == 0) scratch.touched.push_back(id);
      scratch.load[id] += p.share;
    }
    view.latency = std::max(view.latency, latency);
  }
  if (std::abs(shares - 1.0) > 1e-9)
    throw InputError(source, "cluster", fmt::format("the shares of {} sum to {}, not 1", name(), shares));
  for (std::int32_t id : scratch.touched) {
    view.inv_bandwidth = std::max(view.inv_bandwidth, scratch.load[id] / links_[id].bandwidth);
    scratch.load[id] = 0;
  }
  return view;
}

void Cluster::finalize_path_sets(const std::string& source, PathSetScratch& scratch) {
  for (std::size_t ps = 0; ps < path_sets_.size(); ++ps) {
    PathSetRec& set = path_sets_[ps];
    const PairView v = path_set_view(std::span<const PathRec>(paths_).subspan(set.first_path, set.num_paths), path_links_,
                                     scratch, source, "path set", static_cast<std::int64_t>(ps));
    set.latency = v.latency;
    set.inv_bandwidth = v.inv_bandwidth;
  }
}

// One view per class of generated path sets, from the path set the routing names for it.
void Cluster::finalize_generated_views(const std::string& source, PathSetScratch& scratch) {
  if (inherit_generated_views_) return;
  generated_views_.clear();
  std::vector<PathRec> paths;
  std::vector<std::int32_t> path_links;
  std::vector<int> links;
  for (std::int64_t set : routing_->generated_class_representatives()) {
    if (set >= 0) throw std::logic_error(fmt::format("a routing names stored path set #{} as a generated one", set));
    paths.clear();
    path_links.clear();
    const std::int32_t num_paths = routing_->generated_num_paths(set);
    for (std::int32_t k = 0; k < num_paths; ++k) {
      links.clear();
      const double share = routing_->append_generated_path(set, k, links);
      paths.push_back({static_cast<std::int32_t>(path_links.size()), static_cast<std::int32_t>(links.size()), share});
      path_links.insert(path_links.end(), links.begin(), links.end());
    }
    generated_views_.push_back(
        path_set_view(paths, path_links, scratch, source, "generated path set", generated_index(set)));
  }
}

// Checks the table of a hand-built cluster and makes it the routing.
void Cluster::finalize_table(const std::string& source) {
  const int n = num_devices();
  ensure_pair_table();
  const auto num_routes = static_cast<std::int32_t>(table_.route_first_stage.size());
  const auto num_links = static_cast<int>(links_.size());
  std::vector<std::int32_t> link_stage(num_links, -1), link_route(num_links, -1);
  for (std::int32_t r = 0; r < num_routes; ++r) {
    const std::int32_t num_stages = table_.route_num_stages[r];
    if (num_stages == 0) throw InputError(source, "cluster", fmt::format("route #{} has no stage", r));
    if (num_stages > Route::kMaxStages)
      throw InputError(source, "cluster", fmt::format("route #{} has {} stages, more than {}", r, num_stages, Route::kMaxStages));
    // A link in two stages would carry both loads, so it is refused.
    for (int s = 0; s < num_stages; ++s) {
      const std::int64_t ps = table_.stages[table_.route_first_stage[r] + s];
      if (ps < 0 || ps >= static_cast<std::int64_t>(path_sets_.size()))
        throw InputError(source, "cluster", fmt::format("route #{} names unknown path set #{}", r, ps));
      if (num_stages == 1) continue;
      const PathSetRec& set = path_sets_[ps];
      for (int i = 0; i < set.num_paths; ++i) {
        const PathRec& p = paths_[set.first_path + i];
        for (int k = 0; k < p.num_links; ++k) {
          const int id = path_links_[p.first_link + k];
          if (link_route[id] == r && link_stage[id] != s)
            throw InputError(source, "cluster", fmt::format("route #{} crosses link '{}' in two of its stages", r, links_[id].name));
          link_route[id] = r;
          link_stage[id] = s;
        }
      }
    }
  }
  bool all_reachable = true;
  for (DeviceId a = 0; a < n; ++a)
    for (DeviceId b = 0; b < n; ++b) {
      if (a == b) continue;
      const std::int32_t r = table_.pair_route[index(a, b)];
      if (r == kUnreachable) {
        all_reachable = false;
        continue;
      }
      if (r == -1)
        throw InputError(source, "cluster", fmt::format("no route from '{}' to '{}'", devices_[a].name, devices_[b].name));
      if (r < 0 || r >= num_routes)
        throw InputError(source, "cluster", fmt::format("route {} -> {} names unknown route #{}", a, b, r));
    }
  routing_ = std::make_shared<TableRouting>(std::move(table_.pair_route), table_.stride, std::move(table_.route_first_stage),
                                            std::move(table_.route_num_stages), std::move(table_.stages), all_reachable);
  table_ = RouteTable{};
}

void Cluster::finalize(const std::string& source) {
  const int n = num_devices();
  if (n == 0) throw InputError(source, "cluster", "expected at least one GPU");
  for (const auto& d : devices_) {
    if (!(d.memory_bytes > 0) || !std::isfinite(d.memory_bytes))
      throw InputError(source, "cluster.gpu_memory",
                       fmt::format("GPU '{}' needs a positive finite memory capacity", d.name));
    if (!(d.compute_speed > 0) || !std::isfinite(d.compute_speed))
      throw InputError(source, "cluster.gpu_speed", fmt::format("GPU '{}' needs a positive finite compute speed", d.name));
  }
  for (const auto& l : links_) {
    if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a positive finite bandwidth", l.name));
    if (!(l.latency >= 0) || !std::isfinite(l.latency))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a finite non-negative latency", l.name));
  }
  PathSetScratch scratch{std::vector<double>(links_.size(), 0.0), {}};
  finalize_path_sets(source, scratch);
  if (!routing_) finalize_table(source);
  finalize_generated_views(source, scratch);
  all_pairs_reachable_ = routing_->all_pairs_reachable();

  dense_view_.clear();
  if (n > kDenseViewMaxGpus) return;
  dense_view_.assign(static_cast<std::size_t>(n) * n, PairView{});
  for (DeviceId a = 0; a < n; ++a) {
    Route last;
    PairView last_view;
    for (DeviceId b = 0; b < n; ++b) {
      if (a == b) continue;
      const Route r = routing_->route(a, b);
      // Neighbouring pairs often route alike (the GPUs of one server): one view per run.
      if (!r.reachable() || r.id != last.id) {
        last = r;
        last_view = stages_view(r);
      }
      dense_view_[index(a, b)] = last_view;
    }
  }
}

}  // namespace placesim
