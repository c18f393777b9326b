// Fuzz target: the unit parsers (sim/core/units.h). The first byte picks the parser, the rest is the
// text. A value a parser accepts must be finite and inside its documented range, and its
// human-readable form must not throw; parse_any_quantity must never throw at all, and gives a
// finite value, negative only for a bare number.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/core/units.h"
#include "tests/fuzz/fuzz_common.h"

using namespace placesim;

namespace {
void check(bool ok, std::string_view parser, std::string_view text) {
  if (!ok) fuzz::finding(std::string(parser) + " accepted '" + std::string(text) + "' outside its range");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const unsigned which = data[0] % 5;
  if (which == 4) {
    std::optional<Quantity> q;
    try {
      q = parse_any_quantity(text);
    } catch (const std::exception& e) {
      fuzz::finding(std::string("parse_any_quantity threw: ") + e.what());
    }
    if (q) {
      // A bare number may be negative (a sweep value such as an offset); a quantity with a unit may not.
      check(std::isfinite(q->value) && (q->dimension == Dimension::Number || q->value >= 0), "parse_any_quantity", text);
      return fuzz::run_one([&] { (void)format_quantity(*q); });
    }
    return 0;
  }
  return fuzz::run_one([&] {
    switch (which) {
      case 0: {
        const double v = parse_bandwidth(text, "fuzz.yaml", "bandwidth");
        check(v >= kMinBandwidth && v <= kMaxBandwidth, "parse_bandwidth", text);
        (void)format_bandwidth(v);
        break;
      }
      case 1: {
        const double v = parse_duration(text, "fuzz.yaml", "duration");
        check(v >= 0 && v <= kMaxDuration, "parse_duration", text);
        (void)format_duration(v);
        break;
      }
      case 2: {
        const double v = parse_bytes(text, "fuzz.yaml", "bytes");
        check(v >= 0 && v <= kMaxBytes, "parse_bytes", text);
        (void)format_bytes(v);
        break;
      }
      default: {
        const double v = parse_flops(text, "fuzz.yaml", "flops");
        check(v >= kMinFlops && v <= kMaxFlops, "parse_flops", text);
        (void)format_flops(v);
        break;
      }
    }
  });
}
