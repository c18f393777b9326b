#include "sim/config/options.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "sim/core/errors.h"
#include "sim/core/units.h"

namespace placesim {

bool Range::contains(double v) const {
  if (std::isnan(v)) return false;
  if (std::isinf(v)) return allow_infinity && v > 0 && std::isinf(max);
  if (min_open ? !(v > min) : !(v >= min)) return false;
  if (max_open ? !(v < max) : !(v <= max)) return false;
  return true;
}

std::string Range::describe() const {
  const bool has_min = std::isfinite(min), has_max = std::isfinite(max);
  std::string out;
  if (has_min && has_max)
    out = fmt::format("a number in {}{:g}, {:g}{}", min_open ? "(" : "[", min, max, max_open ? ")" : "]");
  else if (has_min)
    out = fmt::format("a number {} {:g}", min_open ? ">" : ">=", min);
  else if (has_max)
    out = fmt::format("a number {} {:g}", max_open ? "<" : "<=", max);
  else
    out = "a number";
  if (allow_infinity) out += " or inf";
  return out;
}

std::string default_text_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:g}", v);
}
std::string default_text_duration(double seconds) {
  if (std::isinf(seconds)) return "none";
  return format_duration(seconds);
}
std::string default_text_bandwidth(double bytes_per_second) { return format_bandwidth(bytes_per_second); }
std::string default_text_bytes(double bytes) { return format_bytes(bytes); }

void throw_field_error(const YamlFields& f, std::string_view key, const std::string& what) {
  throw InputError(f.file(), f.field(key), what);
}

namespace {
bool is_infinity_word(const std::string& s) { return s == "inf" || s == ".inf" || s == "infinity" || s == "none"; }
}  // namespace

std::string whole_number_problem(std::string_view text, long long min, long long max) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size() && v >= min && v <= max) return "";
  return max == std::numeric_limits<long long>::max()
             ? fmt::format("expected a whole number >= {}, got '{}'", min, text)
             : fmt::format("expected a whole number from {} to {}, got '{}'", min, max, text);
}

std::string number_problem(std::string_view text, const Range& range) {
  if (range.allow_infinity && is_infinity_word(std::string(text))) return "";
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size() && std::isfinite(v) && range.contains(v))
    return "";
  return fmt::format("expected {}, got '{}'", range.describe(), text);
}

double parse_number_option(const YamlFields& f, std::string_view key, const Range& range) {
  const std::string text = f.string(key);
  if (const std::string problem = number_problem(text, range); !problem.empty()) throw_field_error(f, key, problem);
  if (range.allow_infinity && is_infinity_word(text)) return std::numeric_limits<double>::infinity();
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

double parse_duration_option(const YamlFields& f, std::string_view key, const Range& range) {
  const std::string text = f.string(key);
  if (range.allow_infinity && is_infinity_word(text)) return std::numeric_limits<double>::infinity();
  const double v = f.duration_or(key, 0);
  if (!std::isfinite(v) || !range.contains(v)) {
    std::string what = range.describe();
    what.replace(0, std::string("a number").size(), "a duration");
    throw_field_error(f, key, fmt::format("expected {} (seconds, or with a unit such as 10s or 500ms), got '{}'", what, text));
  }
  return v;
}

long parse_count_option(const YamlFields& f, std::string_view key, long min, long max) {
  const std::string text = f.string(key);
  if (const std::string problem = whole_number_problem(text, min, max); !problem.empty()) throw_field_error(f, key, problem);
  long v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

void check_known_keys(const YamlFields& f, std::span<const std::string> keys) {
  std::vector<std::string> names(keys.begin(), keys.end());
  for (const auto& kv : f.yaml()) {
    // A key a preset expansion made has no place in the file: its value keeps the user's line.
    const YAML::Mark mark = kv.first.Mark().is_null() ? kv.second.Mark() : kv.first.Mark();
    const std::string where = mark.is_null() ? std::string() : fmt::format(" (line {})", mark.line + 1);
    if (!kv.first.IsScalar())
      throw InputError(f.file(), (f.path().empty() ? std::string("<key>") : f.path()) + where,
                       "expected a plain word as key, got a list or mapping");
    const std::string key = kv.first.Scalar();
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    const std::string hint = nearest_word(key, names);
    std::string valid;
    for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
    if (names.empty()) valid = "none";
    throw InputError(f.file(), (f.path().empty() ? key : f.path() + "." + key) + where,
                     hint.empty() ? fmt::format("unknown key (valid keys: {})", valid)
                                  : fmt::format("unknown key; did you mean '{}'? (valid keys: {})", hint, valid));
  }
}

}  // namespace placesim
