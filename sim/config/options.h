#pragma once
// Options declared once. A schema lists, for one plain config struct, every key a YAML mapping may
// hold: its help line, its default (read off a default-constructed struct, so it is written once,
// in the struct), how its text is parsed and checked, and which member it fills. From the schema
// come the parser (unknown keys are errors naming the nearest valid key; enum values list the valid
// ones), the listing of `placesim strategies` and `topology types` (and their --json), and the
// tests, which parse an example value of every key and check that it changed the config.
//
// Strategies (placement/framework/strategy.h) and fabrics (topologies/registry.h) both use it.
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/yaml_fields.h"
#include "sim/core/names.h"
#include "sim/core/registry.h"

namespace placesim {

// A closed or open interval for numbers; infinite ends are unbounded.
struct Range {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  bool allow_infinity = false;  // "inf" accepted (an unbounded budget, say)
  bool contains(double v) const;
  std::string describe() const;  // "a number > 0", "a number in [0, 1]"
  static Range positive() { return {0, std::numeric_limits<double>::infinity(), true, false}; }
  static Range non_negative() { return {0, std::numeric_limits<double>::infinity(), false, false}; }
  static Range closed(double lo, double hi) { return {lo, hi, false, false}; }
  static Range at_least(double lo) { return {lo, std::numeric_limits<double>::infinity(), false, false}; }
};

// Formats defaults the way a user writes them.
std::string default_text_number(double v);
std::string default_text_duration(double seconds);
std::string default_text_bandwidth(double bytes_per_second);
std::string default_text_bytes(double bytes);

// Why `text` is not a whole number from `min` to `max` ("expected a whole number from 1 to 1024,
// got 'two'"; "... >= 1 ..." without a finite max), or "" when it is one. Also for command-line
// flags, whose values arrive as text.
std::string whole_number_problem(std::string_view text, long long min,
                                 long long max = std::numeric_limits<long long>::max());
// Why `text` is not a number in `range` ("expected a number in (0, 1], got 'x'"), or "".
std::string number_problem(std::string_view text, const Range& range);

// Parses a number key with its range; "inf" when the range allows it.
double parse_number_option(const YamlFields& f, std::string_view key, const Range& range);
double parse_duration_option(const YamlFields& f, std::string_view key, const Range& range);
long parse_count_option(const YamlFields& f, std::string_view key, long min, long max);

// Throws the unknown-key error (nearest valid key suggested) for the first key of `f` not in `keys`.
// Non-scalar keys are errors too.
void check_known_keys(const YamlFields& f, std::span<const std::string> keys);

template <class Config>
class OptionSchema {
 public:
  using Parse = std::function<void(const YamlFields& f, std::string_view key, Config& config)>;
  using Check = std::function<void(const YamlFields& f, Config& config)>;

  // The general form: `parse` is called when the key is present, in declaration order.
  OptionSchema& add(OptionDoc doc, Parse parse) {
    entries_.push_back({std::move(doc), std::move(parse)});
    return *this;
  }
  // Runs after every present key was parsed: cross-key rules and derived values.
  OptionSchema& check(Check c) {
    checks_.push_back(std::move(c));
    return *this;
  }
  // Another schema's keys (a base struct's: the GPU servers every fabric shares, say).
  template <class Base>
  OptionSchema& include(const OptionSchema<Base>& base) {
    static_assert(std::is_base_of_v<Base, Config>);
    for (const auto& e : base.entries())
      add(e.doc, [parse = e.parse](const YamlFields& f, std::string_view key, Config& c) { parse(f, key, static_cast<Base&>(c)); });
    for (const auto& chk : base.checks()) check([chk](const YamlFields& f, Config& c) { chk(f, static_cast<Base&>(c)); });
    return *this;
  }

  template <class M>
  OptionSchema& number(std::string key, M Config::*member, std::string help, Range range, std::string example) {
    const double dflt = static_cast<double>(Config{}.*member);
    return add({std::move(key), "number", std::move(help), default_text_number(dflt), {}, std::move(example)},
               [member, range](const YamlFields& f, std::string_view k, Config& c) {
                 c.*member = static_cast<M>(parse_number_option(f, k, range));
               });
  }
  OptionSchema& optional_number(std::string key, std::optional<double> Config::*member, std::string help, Range range,
                                std::string example, std::string default_text = "unset") {
    return add({std::move(key), "number", std::move(help), std::move(default_text), {}, std::move(example)},
               [member, range](const YamlFields& f, std::string_view k, Config& c) { c.*member = parse_number_option(f, k, range); });
  }
  template <class M>
  OptionSchema& count(std::string key, M Config::*member, std::string help, long min, long max, std::string example) {
    const long dflt = static_cast<long>(Config{}.*member);
    return add({std::move(key), "count", std::move(help), std::to_string(dflt), {}, std::move(example)},
               [member, min, max](const YamlFields& f, std::string_view k, Config& c) {
                 c.*member = static_cast<M>(parse_count_option(f, k, min, max));
               });
  }
  OptionSchema& duration(std::string key, double Config::*member, std::string help, Range range, std::string example) {
    return add({std::move(key), "duration", std::move(help), default_text_duration(Config{}.*member), {}, std::move(example)},
               [member, range](const YamlFields& f, std::string_view k, Config& c) { c.*member = parse_duration_option(f, k, range); });
  }
  OptionSchema& optional_duration(std::string key, std::optional<double> Config::*member, std::string help, Range range,
                                  std::string example, std::string default_text = "unset") {
    return add({std::move(key), "duration", std::move(help), std::move(default_text), {}, std::move(example)},
               [member, range](const YamlFields& f, std::string_view k, Config& c) { c.*member = parse_duration_option(f, k, range); });
  }
  // `zero_means` documents what 0 stands for (a derived value), which makes 0 valid.
  OptionSchema& bandwidth(std::string key, double Config::*member, std::string help, std::string example,
                          std::string zero_means = "") {
    const bool zero_ok = !zero_means.empty();
    const std::string dflt = zero_ok && Config{}.*member == 0 ? zero_means : default_text_bandwidth(Config{}.*member);
    return add({std::move(key), "bandwidth", std::move(help), dflt, {}, std::move(example)},
               [member, zero_ok](const YamlFields& f, std::string_view k, Config& c) {
                 const std::string text = f.string(k);
                 const double v = zero_ok && text == "0" ? 0.0 : f.bandwidth(k);
                 if (!(v > 0 || (zero_ok && v == 0)) || !std::isfinite(v))
                   throw_option_error(f, k, "expected a bandwidth greater than zero, such as 25Gbps or 20GB/s");
                 c.*member = v;
               });
  }
  OptionSchema& bytes(std::string key, double Config::*member, std::string help, std::string example) {
    return add({std::move(key), "bytes", std::move(help), default_text_bytes(Config{}.*member), {}, std::move(example)},
               [member](const YamlFields& f, std::string_view k, Config& c) {
                 const double v = f.bytes_or(k, 0);
                 if (!(v > 0) || !std::isfinite(v)) throw_option_error(f, k, "expected a positive memory size such as 16GiB");
                 c.*member = v;
               });
  }
  OptionSchema& flag(std::string key, bool Config::*member, std::string help) {
    const bool dflt = Config{}.*member;
    return add({std::move(key), "flag", std::move(help), dflt ? "true" : "false", {}, dflt ? "false" : "true"},
               [member](const YamlFields& f, std::string_view k, Config& c) { c.*member = f.boolean_or(k, c.*member); });
  }
  OptionSchema& text(std::string key, std::string Config::*member, std::string help, std::string example) {
    const std::string dflt = Config{}.*member;
    return add({std::move(key), "text", std::move(help), dflt.empty() ? "unset" : dflt, {}, std::move(example)},
               [member](const YamlFields& f, std::string_view k, Config& c) { c.*member = f.string(k); });
  }
  template <class E>
  OptionSchema& choice(std::string key, E Config::*member, std::span<const EnumName<E>> names, std::string help,
                       std::string example = "") {
    OptionDoc doc{std::move(key), "choice", std::move(help), std::string(enum_name(names, Config{}.*member)), {}, std::move(example)};
    for (const auto& n : names) doc.choices.emplace_back(n.name);
    if (doc.example.empty())
      for (const auto& n : names)
        if (n.name != doc.default_text) {
          doc.example = n.name;
          break;
        }
    return add(std::move(doc), [member, names](const YamlFields& f, std::string_view k, Config& c) {
      c.*member = enum_parse(names, f.string(k), f.file(), f.field(k));
    });
  }

  // Reads `f` into a copy of `base`: unknown keys first, then every present key in declaration
  // order, then the checks.
  Config parse(const YamlFields& f, Config base = {}) const {
    check_known_keys(f, keys());
    for (const auto& e : entries_)
      if (f.has(e.doc.key)) e.parse(f, e.doc.key, base);
    for (const auto& c : checks_) c(f, base);
    return base;
  }
  // The same, without the unknown-key check: for a schema that reads part of a mapping.
  Config parse_known(const YamlFields& f, Config base = {}) const {
    for (const auto& e : entries_)
      if (f.has(e.doc.key)) e.parse(f, e.doc.key, base);
    for (const auto& c : checks_) c(f, base);
    return base;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& e : entries_) k.push_back(e.doc.key);
    return k;
  }
  std::vector<OptionDoc> docs() const {
    std::vector<OptionDoc> d;
    for (const auto& e : entries_) d.push_back(e.doc);
    return d;
  }
  bool has(std::string_view key) const {
    for (const auto& e : entries_)
      if (e.doc.key == key) return true;
    return false;
  }

  struct Entry {
    OptionDoc doc;
    Parse parse;
  };
  const std::vector<Entry>& entries() const { return entries_; }
  const std::vector<Check>& checks() const { return checks_; }

 private:
  [[noreturn]] static void throw_option_error(const YamlFields& f, std::string_view key, const std::string& what);
  std::vector<Entry> entries_;
  std::vector<Check> checks_;
};

[[noreturn]] void throw_field_error(const YamlFields& f, std::string_view key, const std::string& what);

template <class Config>
void OptionSchema<Config>::throw_option_error(const YamlFields& f, std::string_view key, const std::string& what) {
  throw_field_error(f, key, what);
}

}  // namespace placesim
