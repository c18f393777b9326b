#include "sim/core/routing.h"

#include <fmt/format.h>
#include <stdexcept>

namespace placesim {

namespace {
[[noreturn]] void no_generated_set(std::int64_t set) {
  throw std::logic_error(fmt::format("routing: stage {} names a generated path set, and this routing generates none", set));
}
}  // namespace

std::int32_t Routing::generated_num_paths(std::int64_t set) const { no_generated_set(set); }

double Routing::append_generated_path(std::int64_t set, std::int32_t, std::vector<int>&) const { no_generated_set(set); }

std::int32_t Routing::generated_class(std::int64_t set) const { no_generated_set(set); }

}  // namespace placesim
