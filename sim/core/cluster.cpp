#include "sim/core/cluster.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

#include "sim/core/errors.h"

namespace placesim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

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
  RouteRec r;
  r.first_stage = static_cast<std::int32_t>(route_stages_.size());
  r.num_stages = static_cast<std::int32_t>(stages.size());
  route_stages_.insert(route_stages_.end(), stages.begin(), stages.end());
  routes_.push_back(r);
  return static_cast<int>(routes_.size() - 1);
}

// The pair table is laid out for the current device count; devices added later re-lay it out.
void Cluster::ensure_pair_table() {
  const std::size_t n = devices_.size();
  if (pair_stride_ == n && pair_route_.size() == n * n) return;
  std::vector<std::int32_t> table(n * n, -1);
  const std::size_t old = pair_stride_;
  for (std::size_t a = 0; a < std::min(old, n); ++a)
    for (std::size_t b = 0; b < std::min(old, n); ++b) table[a * n + b] = pair_route_[a * old + b];
  pair_route_ = std::move(table);
  pair_stride_ = n;
}

void Cluster::use_route(DeviceId src, DeviceId dst, int route) {
  ensure_pair_table();
  pair_route_[index(src, dst)] = route;
}

void Cluster::set_route(DeviceId src, DeviceId dst, std::vector<int> links) {
  use_route(src, dst, add_route({add_path_set({RoutePath{std::move(links), 1.0}})}));
}

void Cluster::set_unreachable(DeviceId src, DeviceId dst) { use_route(src, dst, kUnreachable); }

Cluster Cluster::restricted_to(std::span<const DeviceId> devices) const {
  Cluster c;
  c.fabric = fabric;
  c.links_ = links_;
  c.nodes_ = nodes_;
  c.paths_ = paths_;
  c.path_links_ = path_links_;
  c.path_sets_ = path_sets_;
  c.routes_ = routes_;
  c.route_stages_ = route_stages_;
  std::vector<int> server_of(num_servers(), -1);
  int servers = 0;
  for (DeviceId d : devices) {
    if (d < 0 || d >= num_devices()) throw std::invalid_argument(fmt::format("restricted_to: no GPU {}", d));
    Device dev = devices_[d];
    if (server_of[dev.server] < 0) server_of[dev.server] = servers++;
    dev.server = server_of[dev.server];
    c.add_device(std::move(dev));
  }
  const int n = c.num_devices();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (devices[a] == devices[b] && a != b) throw std::invalid_argument("restricted_to: a GPU named twice");
      if (a != b) c.use_route(a, b, route_id(devices[a], devices[b]));
    }
  c.description = fmt::format("{} of {} GPUs of {}", n, num_devices(), description);
  c.finalize("restricted cluster");
  return c;
}

int Cluster::num_servers() const {
  int servers = 0;
  for (const Device& d : devices_) servers = std::max(servers, d.server + 1);
  return servers;
}

int Cluster::num_paths(DeviceId src, DeviceId dst) const {
  const int r = src == dst ? -1 : route_id(src, dst);
  if (r < 0) return 0;
  int count = 1;
  for (int s = 0; s < routes_[r].num_stages; ++s) count *= path_sets_[route_stages_[routes_[r].first_stage + s]].num_paths;
  return count;
}

// Enumerates the product of the stages like an odometer, the last stage turning fastest.
void Cluster::append_product_paths(const RouteRec& r, std::vector<RoutePath>& out) const {
  std::vector<std::int32_t> digit(r.num_stages, 0);
  for (;;) {
    RoutePath p;
    for (int s = 0; s < r.num_stages; ++s) {
      const PathSetRec& set = path_sets_[route_stages_[r.first_stage + s]];
      const PathRec& path = paths_[set.first_path + digit[s]];
      p.links.insert(p.links.end(), path_links_.begin() + path.first_link,
                     path_links_.begin() + path.first_link + path.num_links);
      p.share *= path.share;
    }
    out.push_back(std::move(p));
    int s = r.num_stages - 1;
    for (; s >= 0; --s) {
      if (++digit[s] < path_sets_[route_stages_[r.first_stage + s]].num_paths) break;
      digit[s] = 0;
    }
    if (s < 0) return;
  }
}

std::vector<RoutePath> Cluster::route_paths(int route) const {
  std::vector<RoutePath> out;
  if (route >= 0) append_product_paths(routes_[route], out);
  return out;
}

std::vector<RoutePath> Cluster::paths(DeviceId src, DeviceId dst) const {
  return src == dst ? std::vector<RoutePath>{} : route_paths(route_id(src, dst));
}

std::span<const int> Cluster::route(DeviceId src, DeviceId dst) const {
  const int r = src == dst ? -1 : route_id(src, dst);
  if (r < 0) return {};
  return std::span<const int>(first_path_links_).subspan(routes_[r].first_path_begin, routes_[r].first_path_size);
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
  const int num_links = static_cast<int>(links_.size());
  for (const auto& l : links_) {
    if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a positive finite bandwidth", l.name));
    if (!(l.latency >= 0) || !std::isfinite(l.latency))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a finite non-negative latency", l.name));
  }

  // Path sets: the view of a stage is its largest path latency and its largest link load per
  // unit of bandwidth (load = the share of the bytes crossing the link, summed over paths).
  std::vector<double> load(num_links, 0.0);
  std::vector<std::int32_t> touched;
  for (std::size_t ps = 0; ps < path_sets_.size(); ++ps) {
    PathSetRec& set = path_sets_[ps];
    if (set.num_paths == 0) throw InputError(source, "cluster", fmt::format("path set #{} has no path", ps));
    double shares = 0;
    set.latency = 0;
    touched.clear();
    for (int i = 0; i < set.num_paths; ++i) {
      const PathRec& p = paths_[set.first_path + i];
      if (p.num_links == 0) throw InputError(source, "cluster", fmt::format("path set #{} has an empty path", ps));
      if (!(p.share > 0) || !std::isfinite(p.share))
        throw InputError(source, "cluster", fmt::format("path set #{} has a path with share {}", ps, p.share));
      shares += p.share;
      double latency = 0;
      for (int k = 0; k < p.num_links; ++k) {
        const int id = path_links_[p.first_link + k];
        if (id < 0 || id >= num_links)
          throw InputError(source, "cluster", fmt::format("path set #{} names unknown link #{}", ps, id));
        for (int j = 0; j < k; ++j)
          if (path_links_[p.first_link + j] == id)
            throw InputError(source, "cluster", fmt::format("a path of path set #{} crosses link '{}' twice", ps, links_[id].name));
        latency += links_[id].latency;
        if (load[id] == 0) touched.push_back(id);
        load[id] += p.share;
      }
      set.latency = std::max(set.latency, latency);
    }
    if (std::abs(shares - 1.0) > 1e-9)
      throw InputError(source, "cluster", fmt::format("the shares of path set #{} sum to {}, not 1", ps, shares));
    set.inv_bandwidth = 0;
    for (std::int32_t id : touched) {
      set.inv_bandwidth = std::max(set.inv_bandwidth, load[id] / links_[id].bandwidth);
      load[id] = 0;
    }
  }

  // Routes: stages add latencies; a link in two stages would carry both loads, so it is refused.
  std::vector<std::int32_t> link_stage(num_links, -1), link_route(num_links, -1);
  first_path_links_.clear();
  for (std::size_t r = 0; r < routes_.size(); ++r) {
    RouteRec& route = routes_[r];
    if (route.num_stages == 0) throw InputError(source, "cluster", fmt::format("route #{} has no stage", r));
    route.latency = 0;
    route.inv_bandwidth = 0;
    route.first_path_begin = static_cast<std::int32_t>(first_path_links_.size());
    for (int s = 0; s < route.num_stages; ++s) {
      const int ps = route_stages_[route.first_stage + s];
      if (ps < 0 || ps >= static_cast<int>(path_sets_.size()))
        throw InputError(source, "cluster", fmt::format("route #{} names unknown path set #{}", r, ps));
      const PathSetRec& set = path_sets_[ps];
      route.latency += set.latency;
      route.inv_bandwidth = std::max(route.inv_bandwidth, set.inv_bandwidth);
      if (route.num_stages > 1)
        for (int i = 0; i < set.num_paths; ++i) {
          const PathRec& p = paths_[set.first_path + i];
          for (int k = 0; k < p.num_links; ++k) {
            const int id = path_links_[p.first_link + k];
            if (link_route[id] == static_cast<std::int32_t>(r) && link_stage[id] != s)
              throw InputError(source, "cluster",
                               fmt::format("route #{} crosses link '{}' in two of its stages", r, links_[id].name));
            link_route[id] = static_cast<std::int32_t>(r);
            link_stage[id] = s;
          }
        }
      const PathRec& first = paths_[set.first_path];
      first_path_links_.insert(first_path_links_.end(), path_links_.begin() + first.first_link,
                               path_links_.begin() + first.first_link + first.num_links);
    }
    route.first_path_size = static_cast<std::int32_t>(first_path_links_.size()) - route.first_path_begin;
  }

  ensure_pair_table();
  const std::size_t pairs = static_cast<std::size_t>(n) * n;
  inv_bandwidth_.assign(pairs, 0.0);
  latency_.assign(pairs, 0.0);
  all_pairs_reachable_ = true;
  for (DeviceId a = 0; a < n; ++a)
    for (DeviceId b = 0; b < n; ++b) {
      if (a == b) continue;
      const auto k = index(a, b);
      const int r = pair_route_[k];
      if (r == kUnreachable) {
        inv_bandwidth_[k] = kInf;
        all_pairs_reachable_ = false;
        continue;
      }
      if (r == -1)
        throw InputError(source, "cluster", fmt::format("no route from '{}' to '{}'", devices_[a].name, devices_[b].name));
      if (r < 0 || r >= static_cast<int>(routes_.size()))
        throw InputError(source, "cluster", fmt::format("route {} -> {} names unknown route #{}", a, b, r));
      inv_bandwidth_[k] = routes_[r].inv_bandwidth;
      latency_[k] = routes_[r].latency;
    }
}

}  // namespace placesim
