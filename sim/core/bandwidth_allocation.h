#pragma once
// b(s,t) in bytes/s for each ordered server pair (the diagonal is unused and must be 0); the
// thesis's decision variable b_{d,e} of P2 (section 3.5). A zero entry leaves the pair without
// bandwidth: a transfer between those servers never ends. It lives in sim/ because both a fabric
// (topologies/multi_nic.h realises it) and a strategy (QuickP P3 chooses it) speak of it.
#include <cstddef>
#include <string>
#include <vector>

namespace placesim {

class BandwidthAllocation {
 public:
  BandwidthAllocation() = default;
  explicit BandwidthAllocation(int servers) : servers_(servers), rate_(static_cast<std::size_t>(servers) * servers, 0.0) {}
  // Every server gives each other server an equal share of its egress: egress / (servers - 1).
  static BandwidthAllocation uniform(int servers, double egress);

  int servers() const { return servers_; }
  double operator()(int s, int t) const { return rate_[static_cast<std::size_t>(s) * servers_ + t]; }
  void set(int s, int t, double bytes_per_second) { rate_[static_cast<std::size_t>(s) * servers_ + t] = bytes_per_second; }
  double row_sum(int s) const;
  // Throws InputError(source, "<field>[s]", ...) naming the first bad row: wrong size, a negative
  // or non-finite entry, a non-zero diagonal, or egress above `egress_limit` (thesis eq. 3.7).
  void validate(int servers, double egress_limit, const std::string& source = "",
                const std::string& field = "cluster.allocation") const;
  bool operator==(const BandwidthAllocation&) const = default;

 private:
  int servers_ = 0;
  std::vector<double> rate_;
};

}  // namespace placesim
