#include "sim/core/bandwidth_allocation.h"

#include <cmath>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

BandwidthAllocation BandwidthAllocation::uniform(int servers, double egress) {
  BandwidthAllocation a(servers);
  for (int s = 0; s < servers; ++s)
    for (int t = 0; t < servers; ++t)
      if (s != t) a.set(s, t, egress / (servers - 1));
  return a;
}

double BandwidthAllocation::row_sum(int s) const {
  double sum = 0;
  for (int t = 0; t < servers_; ++t) sum += (*this)(s, t);
  return sum;
}

void BandwidthAllocation::validate(int servers, double egress_limit, const std::string& source, const std::string& field) const {
  if (servers_ != servers)
    throw InputError(source, field, fmt::format("expected a {} x {} matrix (one row per server), got {} rows", servers, servers, servers_));
  for (int s = 0; s < servers_; ++s) {
    const std::string row = fmt::format("{}[{}]", field, s);
    for (int t = 0; t < servers_; ++t) {
      const double v = (*this)(s, t);
      if (!(v >= 0) || !std::isfinite(v))
        throw InputError(source, row, fmt::format("b({},{}) must be a finite bandwidth >= 0, got {}", s, t, v));
      if (s == t && v != 0) throw InputError(source, row, fmt::format("b({0},{0}) must be 0: a server does not send to itself", s));
    }
    const double sum = row_sum(s);
    if (sum > egress_limit * (1 + 1e-9))
      throw InputError(source, row,
                       fmt::format("server {} is given {} of egress in total, more than its NICs' {} (d * b)", s,
                                   format_bandwidth(sum), format_bandwidth(egress_limit)));
  }
}
}  // namespace placesim
