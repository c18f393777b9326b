#include "sim/cluster.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "sim/errors.h"

namespace placesim {

int Cluster::add_device(Device d) {
  devices_.push_back(std::move(d));
  return num_devices() - 1;
}

int Cluster::add_link(Link l) {
  links_.push_back(std::move(l));
  return static_cast<int>(links_.size() - 1);
}

void Cluster::set_route(DeviceId src, DeviceId dst, std::vector<int> links) {
  const std::size_t n = devices_.size();
  if (routes_.size() != n * n) routes_.resize(n * n);
  routes_[index(src, dst)] = std::move(links);
}

void Cluster::finalize(const std::string& source) {
  const int n = num_devices();
  if (n == 0) throw InputError(source, "cluster", "expected at least one GPU");
  for (const auto& d : devices_)
    if (!(d.memory_bytes > 0) || !std::isfinite(d.memory_bytes))
      throw InputError(source, "cluster.gpu_memory",
                       fmt::format("GPU '{}' needs a positive finite memory capacity", d.name));
  for (const auto& l : links_) {
    if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a positive finite bandwidth", l.name));
    if (!(l.latency >= 0) || !std::isfinite(l.latency))
      throw InputError(source, "cluster", fmt::format("link '{}' needs a finite non-negative latency", l.name));
  }
  routes_.resize(static_cast<std::size_t>(n) * n);
  bandwidth_.assign(routes_.size(), std::numeric_limits<double>::infinity());
  inv_bandwidth_.assign(routes_.size(), 0.0);
  latency_.assign(routes_.size(), 0.0);
  for (DeviceId a = 0; a < n; ++a)
    for (DeviceId b = 0; b < n; ++b) {
      if (a == b) continue;
      const auto k = index(a, b);
      if (routes_[k].empty())
        throw InputError(source, "cluster",
                         fmt::format("no route from '{}' to '{}'", devices_[a].name, devices_[b].name));
      for (int id : routes_[k]) {
        if (id < 0 || id >= static_cast<int>(links_.size()))
          throw InputError(source, "cluster", fmt::format("route {} -> {} names unknown link #{}", a, b, id));
        bandwidth_[k] = std::min(bandwidth_[k], links_[id].bandwidth);
        latency_[k] += links_[id].latency;
      }
      inv_bandwidth_[k] = 1.0 / bandwidth_[k];
    }
}

}  // namespace placesim
