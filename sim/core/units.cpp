#include "sim/core/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <optional>
#include <utility>
#include <vector>

#include "sim/core/errors.h"

namespace placesim {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Suffixes match exactly, else in any case but a bandwidth's b and B: "Gb" is bits, "GB" bytes
// (100gbps and 100Gbps are bits, 12.5GB/s and 12.5gB/s bytes; sizes and durations in any case).
const std::vector<Unit> kBandwidthUnits = {
    {"B/s", 1.0},        {"kB/s", 1e3},       {"KB/s", 1e3},       {"MB/s", 1e6},
    {"GB/s", 1e9},       {"TB/s", 1e12},      {"KiB/s", 1024.0},   {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0}, {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8},  {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},   {"Gbps", 1e9 / 8},   {"Tbps", 1e12 / 8},
    {"b/s", 1.0 / 8},    {"Kb/s", 1e3 / 8},   {"Mb/s", 1e6 / 8},   {"Gb/s", 1e9 / 8},  {"Tb/s", 1e12 / 8},
    {"Bps", 1.0},        {"KBps", 1e3},       {"MBps", 1e6},       {"GBps", 1e9},      {"TBps", 1e12},
};
const std::vector<Unit> kDurationUnits = {
    {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0},
};
const std::vector<Unit> kByteUnits = {
    {"B", 1.0},  {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
};

const std::vector<Unit> kFlopsUnits = {
    {"FLOP/s", 1.0},    {"kFLOP/s", 1e3},  {"MFLOP/s", 1e6},  {"GFLOP/s", 1e9},  {"TFLOP/s", 1e12},
    {"PFLOP/s", 1e15},  {"FLOPS", 1.0},    {"kFLOPS", 1e3},   {"MFLOPS", 1e6},   {"GFLOPS", 1e9},
    {"TFLOPS", 1e12},   {"PFLOPS", 1e15},
};

std::string list_units(const std::vector<Unit>& units) {
  std::string out;
  for (const auto& u : units) out += (out.empty() ? "" : ", ") + std::string(u.suffix);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The number `text` starts with and the trimmed rest (the unit), or nullopt without a number.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  return std::pair{value, trim(text.substr(ptr - text.data()))};
}

bool same_letters(std::string_view a, std::string_view b, bool bits_and_bytes_apart) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool is_b = a[i] == 'b' || a[i] == 'B';
    if (bits_and_bytes_apart && is_b ? a[i] != b[i]
                                     : std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

const Unit* find_unit(std::string_view suffix, const std::vector<Unit>& units) {
  for (const auto& u : units)
    if (u.suffix == suffix) return &u;
  const bool bandwidth = &units == &kBandwidthUnits;
  for (const auto& u : units)
    if (same_letters(u.suffix, suffix, bandwidth)) return &u;
  return nullptr;
}

double parse_quantity(std::string_view text, const std::vector<Unit>& units, const char* kind,
                      const std::string& file, const std::string& field) {
  text = trim(text);
  const auto split = split_number(text);
  if (!split)
    throw InputError(file, field, fmt::format("expected a {} such as '{}', got '{}'", kind,
                                              units.front().suffix == "B/s"      ? "20GB/s"
                                              : units.front().suffix == "s"      ? "1us"
                                              : units.front().suffix == "FLOP/s" ? "19.5TFLOP/s"
                                                                                 : "16GiB",
                                              text));
  const auto [value, suffix] = *split;
  double factor = 1.0;
  if (!suffix.empty()) {
    const Unit* unit = find_unit(suffix, units);
    if (!unit)
      throw InputError(file, field, fmt::format("unknown {} unit '{}' (expected one of: {})", kind, suffix,
                                                list_units(units)));
    factor = unit->factor;
  }
  double result = value * factor;
  // A bandwidth must also be above 0 (parse_bandwidth): say so here too, one message for both.
  if (!std::isfinite(result) || result < 0)
    throw InputError(file, field, fmt::format("expected a finite {} {}, got '{}'",
                                              std::string_view(kind) == "bandwidth" ? "positive" : "non-negative",
                                              kind, text));
  return result;
}

}  // namespace

void check_duration_range(double seconds, std::string_view written, const std::string& file, const std::string& field) {
  if (!(seconds >= 0 && seconds <= kMaxDuration))
    throw InputError(file, field, fmt::format("expected a duration from 0 to {:g} s (the longest placesim simulates), got '{}'",
                                              kMaxDuration, written));
}
void check_bytes_range(double bytes, std::string_view written, const std::string& file, const std::string& field) {
  if (!(bytes >= 0 && bytes <= kMaxBytes))
    throw InputError(file, field, fmt::format("expected a size from 0 to {:g} bytes (100 TB, the largest placesim simulates), got '{}'",
                                              kMaxBytes, written));
}
void check_bandwidth_range(double bytes_per_second, std::string_view written, const std::string& file, const std::string& field) {
  if (!(bytes_per_second >= kMinBandwidth && bytes_per_second <= kMaxBandwidth))
    throw InputError(file, field, fmt::format("expected a bandwidth from {:g} B/s to {:g} B/s, got '{}'", kMinBandwidth,
                                              kMaxBandwidth, written));
}
void check_ratio_range(double ratio, std::string_view written, const std::string& file, const std::string& field) {
  if (!(ratio >= 1 / kMaxRatio && ratio <= kMaxRatio))
    throw InputError(file, field, fmt::format("expected a ratio from {:g} to {:g}, got '{}'", 1 / kMaxRatio, kMaxRatio, written));
}

double parse_bandwidth(std::string_view text, const std::string& file, const std::string& field) {
  double bw = parse_quantity(text, kBandwidthUnits, "bandwidth", file, field);
  if (bw <= 0) throw InputError(file, field, "bandwidth must be positive, got '" + std::string(trim(text)) + "'");
  check_bandwidth_range(bw, trim(text), file, field);
  return bw;
}
double parse_duration(std::string_view text, const std::string& file, const std::string& field) {
  const double seconds = parse_quantity(text, kDurationUnits, "duration", file, field);
  check_duration_range(seconds, trim(text), file, field);
  return seconds;
}
double parse_bytes(std::string_view text, const std::string& file, const std::string& field) {
  const double bytes = parse_quantity(text, kByteUnits, "size", file, field);
  check_bytes_range(bytes, trim(text), file, field);
  return bytes;
}

double parse_flops(std::string_view text, const std::string& file, const std::string& field) {
  double rate = parse_quantity(text, kFlopsUnits, "compute rate", file, field);
  if (rate <= 0) throw InputError(file, field, "compute rate must be positive, got '" + std::string(trim(text)) + "'");
  if (!(rate >= kMinFlops && rate <= kMaxFlops))
    throw InputError(file, field, fmt::format("expected a compute rate from {:g} FLOP/s to {:g} FLOP/s, got '{}'", kMinFlops,
                                              kMaxFlops, trim(text)));
  return rate;
}

void refuse_bare_quantity(const std::string& text, const char* kind, const char* examples, const std::string& file,
                          const std::string& field) {
  const std::optional<Quantity> q = parse_any_quantity(text);
  if (!q || q->dimension != Dimension::Number || q->value == 0) return;
  const std::string_view k = kind;
  const std::string as = k == "bandwidth" ? format_bandwidth(q->value) : k == "size" ? format_bytes(q->value) : format_duration(q->value);
  throw InputError(file, field, fmt::format("{}: a {} needs a unit (bare, it is read as {}), e.g. {}", text, kind, as, examples));
}

std::optional<Quantity> parse_any_quantity(std::string_view text) {
  text = trim(text);
  const auto split = split_number(text);
  if (!split) return std::nullopt;
  const auto [value, suffix] = *split;
  if (suffix.empty()) return std::isfinite(value) ? std::optional(Quantity{value, Dimension::Number}) : std::nullopt;
  const std::pair<const std::vector<Unit>*, Dimension> tables[] = {{&kDurationUnits, Dimension::Duration},
                                                                   {&kByteUnits, Dimension::Bytes},
                                                                   {&kBandwidthUnits, Dimension::Bandwidth},
                                                                   {&kFlopsUnits, Dimension::Flops}};
  for (const auto& [units, dimension] : tables)
    if (const Unit* unit = find_unit(suffix, *units)) {
      const double result = value * unit->factor;
      if (!std::isfinite(result) || result < 0) return std::nullopt;
      return Quantity{result, dimension};
    }
  return std::nullopt;
}

std::string format_duration(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (a < 1e-3) return fmt::format("{:.4g} us", s * 1e6);
  if (a < 1) return fmt::format("{:.4g} ms", s * 1e3);
  return fmt::format("{:.4g} s", s);
}
std::string format_bytes(double b) {
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (std::fabs(b) >= 1024 && i < 4) { b /= 1024; ++i; }
  return fmt::format("{:.4g} {}", b, names[i]);
}
std::string format_bandwidth(double bps) {
  if (bps >= 1e9) return fmt::format("{:.4g} GB/s", bps / 1e9);
  if (bps >= 1e6) return fmt::format("{:.4g} MB/s", bps / 1e6);
  return fmt::format("{:.4g} B/s", bps);
}

std::string format_flops(double f) {
  if (f >= 1e12) return fmt::format("{:.4g} TFLOP/s", f / 1e12);
  if (f >= 1e9) return fmt::format("{:.4g} GFLOP/s", f / 1e9);
  return fmt::format("{:.4g} FLOP/s", f);
}

std::string format_quantity(const Quantity& q) {
  switch (q.dimension) {
    case Dimension::Duration: return format_duration(q.value);
    case Dimension::Bytes: return format_bytes(q.value);
    case Dimension::Bandwidth: return format_bandwidth(q.value);
    case Dimension::Flops: return format_flops(q.value);
    case Dimension::Number: break;
  }
  return fmt::format("{:.6g}", q.value);
}

namespace {

// The median of the nonzero magnitudes; 0 when every value is 0 (or there are none).
double typical_magnitude(std::span<const double> values) {
  std::vector<double> m;
  for (double v : values)
    if (std::isfinite(v) && v != 0) m.push_back(std::fabs(v));
  if (m.empty()) return 0;
  std::sort(m.begin(), m.end());
  return m[(m.size() - 1) / 2];
}

// The largest finite magnitude.
double largest_magnitude(std::span<const double> values) {
  double m = 0;
  for (double v : values)
    if (std::isfinite(v)) m = std::max(m, std::fabs(v));
  return m;
}

// Units from small to large: the one the typical value reads best in, then larger ones while the
// largest value would need more than five digits before the point ("2084156 us" -> "2084 ms").
ColumnUnit pick_unit(std::span<const ColumnUnit> units, std::span<const double> values) {
  const double typical = typical_magnitude(values), largest = largest_magnitude(values);
  std::size_t i = 0;
  while (i + 1 < units.size() && typical >= units[i + 1].scale) ++i;
  while (i + 1 < units.size() && largest / units[i].scale >= 1e5) ++i;
  return units[i];
}

}  // namespace

ColumnUnit duration_unit(std::span<const double> seconds) {
  static const ColumnUnit units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}};
  if (typical_magnitude(seconds) == 0 && largest_magnitude(seconds) == 0) return units[3];
  return pick_unit(units, seconds);
}

ColumnUnit bytes_unit(std::span<const double> bytes) {
  static const double k = 1024;
  static const ColumnUnit units[] = {{"B", 1}, {"KiB", k}, {"MiB", k * k}, {"GiB", k * k * k}, {"TiB", k * k * k * k}};
  return pick_unit(units, bytes);
}

ColumnUnit number_unit() { return {"", 1}; }

std::string format_number_in(double value, const ColumnUnit& unit) {
  const double x = value / unit.scale;
  if (!std::isfinite(x)) return fmt::format("{}", x);
  const double a = std::fabs(x);
  const int decimals = a == 0 || a >= 1000 ? 0 : std::clamp(3 - static_cast<int>(std::floor(std::log10(a))), 0, 9);
  std::string s = fmt::format("{:.{}f}", x, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

std::string format_in(double value, const ColumnUnit& unit) {
  const std::string number = format_number_in(value, unit);
  return unit.name.empty() ? number : number + " " + unit.name;
}

}  // namespace placesim
