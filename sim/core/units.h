#pragma once
// Quantities with units, as written in scenario files ("25Gbps", "20GB/s", "1us", "16GiB").
// Inside placesim everything is seconds, bytes and bytes per second; these parsers are the edge.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace placesim {

// The range of every quantity placesim reads, in one place. The parsers below, the graph loaders
// and the model zoo refuse a value outside its range with an InputError naming the field, so that
// nothing finite on the way in overflows on the way through: a million operators of kMaxDuration
// sum to 1e15 s, and the largest transfer (kMaxBytes at kMinBandwidth) takes 1e14 s, both far
// inside a double and SimGrid's clock. Ranges are wide enough for any real cluster or model.
inline constexpr double kMaxDuration = 1e9;     // seconds (about 32 years): compute times, latencies
inline constexpr double kMaxBytes = 1e14;       // bytes (100 TB): SimGrid carries at most ~2.8e14 B per transfer
inline constexpr double kMinBandwidth = 1;      // bytes per second
inline constexpr double kMaxBandwidth = 1e18;   // bytes per second
inline constexpr double kMinFlops = 1;          // FLOP/s
inline constexpr double kMaxFlops = 1e21;       // FLOP/s
inline constexpr double kMaxRatio = 1e6;        // relative speeds and oversubscription: in [1/kMaxRatio, kMaxRatio]

// Each throws InputError naming `file` and `field` when `value` (in SI units) is outside its range
// above; `written` is the value as the user wrote it, for the message.
void check_duration_range(double seconds, std::string_view written, const std::string& file, const std::string& field);
void check_bytes_range(double bytes, std::string_view written, const std::string& file, const std::string& field);
void check_bandwidth_range(double bytes_per_second, std::string_view written, const std::string& file,
                           const std::string& field);
void check_ratio_range(double ratio, std::string_view written, const std::string& file, const std::string& field);

// Each parser accepts a bare number (already in base units) or a number followed by a unit.
// On failure, or for a value outside its range (above), they throw InputError naming `file` and
// `field`.
double parse_bandwidth(std::string_view text, const std::string& file, const std::string& field);
double parse_duration(std::string_view text, const std::string& file, const std::string& field);
double parse_bytes(std::string_view text, const std::string& file, const std::string& field);
// Compute rate in FLOP/s: "19.5TFLOP/s", "19.5TFLOPS", "312GFLOP/s" or a bare number; positive.
double parse_flops(std::string_view text, const std::string& file, const std::string& field);

// In a file a quantity carries its unit: throws InputError naming `file` and `field` when `text`
// is a bare number other than 0 (`nic_bandwidth: 100` would be 100 B/s), saying what it would be
// read as and `examples` of what to write. `kind`: bandwidth, size or duration.
void refuse_bare_quantity(const std::string& text, const char* kind, const char* examples, const std::string& file,
                          const std::string& field);

// What a value written with a unit measures; a bare number is a Number.
enum class Dimension { Number, Duration, Bytes, Bandwidth, Flops };
struct Quantity {
  double value = 0;  // seconds, bytes, bytes per second, FLOP/s, or the number itself
  Dimension dimension = Dimension::Number;
  bool operator==(const Quantity&) const = default;
};

// The unit written after the number says what it is ("16GiB" is bytes, "20GB/s" a bandwidth; the
// unit sets are disjoint), so no field name is needed: a bare number, or a number with any unit
// of the parsers above, in base units. Any other text (or a negative quantity) gives nullopt;
// it never throws.
std::optional<Quantity> parse_any_quantity(std::string_view text);

// Human-readable forms for tables and reports.
std::string format_duration(double seconds);
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_second);
std::string format_flops(double flops_per_second);  // "19.5 TFLOP/s"
// By its dimension with the functions above; a bare number as {:.6g}.
std::string format_quantity(const Quantity& q);

// One unit for a whole column of a table (so that "1.037e+04 ms" never stands beside "10.37 s"):
// the unit the column's typical value (the median of its nonzero magnitudes) reads best in, or a
// larger one when the largest value would need more than five digits before the point. A value
// is printed as value / scale followed by `name` (empty for a bare number).
struct ColumnUnit {
  std::string name;
  double scale = 1;
};
ColumnUnit duration_unit(std::span<const double> seconds);  // ns, us, ms or s
ColumnUnit bytes_unit(std::span<const double> bytes);       // B, KiB, MiB, GiB or TiB
ColumnUnit number_unit();                                   // no unit, scale 1
// `value` / unit.scale with four significant digits (at most nine decimals), never in exponent
// form and without trailing zeros: "10370", "106.9", "0.05298", "2". No unit name appended.
std::string format_number_in(double value, const ColumnUnit& unit);
// The same followed by " " and the unit's name, when it has one: "106.9 ms".
std::string format_in(double value, const ColumnUnit& unit);

}  // namespace placesim
