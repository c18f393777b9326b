#include "sim/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <utility>
#include <vector>

#include "sim/errors.h"

namespace placesim {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Suffixes are matched exactly (case-sensitive: "Gb" is bits, "GB" bytes, "ms" vs "Ms" is moot).
const std::vector<Unit> kBandwidthUnits = {
    {"B/s", 1.0},        {"kB/s", 1e3},       {"KB/s", 1e3},       {"MB/s", 1e6},
    {"GB/s", 1e9},       {"TB/s", 1e12},      {"KiB/s", 1024.0},   {"MiB/s", 1048576.0},
    {"GiB/s", 1073741824.0}, {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8},  {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},   {"Gbps", 1e9 / 8},   {"Tbps", 1e12 / 8},
};
const std::vector<Unit> kDurationUnits = {
    {"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"min", 60.0},
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

double parse_quantity(std::string_view text, const std::vector<Unit>& units, const char* kind,
                      const std::string& file, const std::string& field) {
  auto trim = [](std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
  };
  text = trim(text);
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr == text.data())
    throw InputError(file, field, fmt::format("expected a {} such as '{}', got '{}'", kind,
                                              units.front().suffix == "B/s"      ? "20GB/s"
                                              : units.front().suffix == "s"      ? "1us"
                                              : units.front().suffix == "FLOP/s" ? "19.5TFLOP/s"
                                                                                 : "16GiB",
                                              text));
  std::string_view suffix = trim(text.substr(ptr - text.data()));
  double factor = 1.0;
  if (!suffix.empty()) {
    bool found = false;
    for (const auto& u : units)
      if (u.suffix == suffix) { factor = u.factor; found = true; break; }
    if (!found)
      throw InputError(file, field, fmt::format("unknown {} unit '{}' (expected one of: {})", kind, suffix,
                                                list_units(units)));
  }
  double result = value * factor;
  if (!std::isfinite(result) || result < 0)
    throw InputError(file, field, fmt::format("expected a finite non-negative {}, got '{}'", kind, text));
  return result;
}

}  // namespace

double parse_bandwidth(std::string_view text, const std::string& file, const std::string& field) {
  double bw = parse_quantity(text, kBandwidthUnits, "bandwidth", file, field);
  if (bw <= 0) throw InputError(file, field, "bandwidth must be positive, got '" + std::string(text) + "'");
  return bw;
}
double parse_duration(std::string_view text, const std::string& file, const std::string& field) {
  return parse_quantity(text, kDurationUnits, "duration", file, field);
}
double parse_bytes(std::string_view text, const std::string& file, const std::string& field) {
  return parse_quantity(text, kByteUnits, "size", file, field);
}

double parse_flops(std::string_view text, const std::string& file, const std::string& field) {
  double rate = parse_quantity(text, kFlopsUnits, "compute rate", file, field);
  if (rate <= 0) throw InputError(file, field, "compute rate must be positive, got '" + std::string(text) + "'");
  return rate;
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

}  // namespace placesim
