#pragma once
// The cluster: GPUs, the directed links between them, and one route (a list of links) for every
// ordered GPU pair. Strategies see the alpha-beta view of it (latency + bytes / bandwidth per
// pair, no contention); the SimGrid engine builds the links and routes themselves, so concurrent
// transfers share bandwidth. Units: seconds, bytes, bytes per second.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sim/graph.h"

namespace placesim {

struct Device {
  std::string name;
  int server = 0;
  double memory_bytes = 0;
};

// A one-way link: a full-duplex cable is two Links.
struct Link {
  std::string name;
  double bandwidth = 0;  // bytes per second
  double latency = 0;    // seconds
};

class Cluster {
 public:
  std::string description;  // one line, for reports

  int add_device(Device d);
  int add_link(Link l);
  // Sets the route src -> dst (src != dst). Links are traversed in the given order.
  void set_route(DeviceId src, DeviceId dst, std::vector<int> links);
  // Checks that every pair has a non-empty route over existing links with positive bandwidth,
  // then computes the pairwise view. Throws InputError naming `source`.
  void finalize(const std::string& source = "");

  int num_devices() const { return static_cast<int>(devices_.size()); }
  std::span<const Device> devices() const { return devices_; }
  const Device& device(DeviceId d) const { return devices_[d]; }
  std::span<const Link> links() const { return links_; }
  const Link& link(int id) const { return links_[id]; }
  std::span<const int> route(DeviceId src, DeviceId dst) const { return routes_[index(src, dst)]; }

  // The pairwise view: bottleneck bandwidth and summed latency of the route.
  double bandwidth(DeviceId src, DeviceId dst) const { return bandwidth_[index(src, dst)]; }
  double latency(DeviceId src, DeviceId dst) const { return latency_[index(src, dst)]; }
  // Time for a lone transfer: zero on the same device or for a zero-byte (control) tensor.
  double transfer_time(DeviceId src, DeviceId dst, double bytes) const {
    if (src == dst || bytes <= 0) return 0.0;
    const std::size_t k = index(src, dst);
    return latency_[k] + bytes * inv_bandwidth_[k];
  }

 private:
  std::size_t index(DeviceId a, DeviceId b) const {
    return static_cast<std::size_t>(a) * devices_.size() + static_cast<std::size_t>(b);
  }
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> routes_;
  std::vector<double> bandwidth_, inv_bandwidth_, latency_;
};

}  // namespace placesim
