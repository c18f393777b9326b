#pragma once
// One registry for every kind of thing a user names: strategies and planners (placement/),
// fabrics (topologies/), collective algorithms (sim/collectives/) and engines (sim/engines/).
// Each kind's entry type derives from RegistryEntry (its name, aliases, one line and its option
// docs) and adds what makes the thing (a factory, a builder); the registry looks names and
// aliases up, suggests the nearest name for a typo, and lists its entries as text and JSON for the
// CLI's listings (`placesim strategies`, `topology types`, `collective --help`).
//
// A registry is built once from its list of entries, one line per entry in the kind's
// registration file, and is immutable afterwards (no global mutable state).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/names.h"

namespace placesim {

// One key a configurable thing takes, for listings, docs and the takes-effect tests.
struct OptionDoc {
  std::string key;
  std::string kind;          // "number", "count", "duration", "bandwidth", "bytes", "flag", "choice", "text", "list", ...
  std::string help;          // one line
  std::string default_text;  // as a user would write it; "unset" when absent
  std::vector<std::string> choices;  // for "choice"
  std::string example;       // a valid value other than the default, for docs and the takes-effect tests
};

// One line per option: "key (default): help [choices]", joined by "; ".
std::string describe_options(std::span<const OptionDoc> docs);
// Each option as {key, kind, default, help, choices?, example}.
nlohmann::ordered_json options_to_json(std::span<const OptionDoc> docs);

struct RegistryEntry {
  std::string name;
  std::vector<std::string> aliases;  // other accepted names ("quickp" for nvlink-servers)
  std::string description;           // one line
  std::vector<OptionDoc> options;    // the keys it takes
  bool answers_to(std::string_view n) const {
    return n == name || std::find(aliases.begin(), aliases.end(), n) != aliases.end();
  }
  bool takes(std::string_view key) const {
    return std::any_of(options.begin(), options.end(), [&](const OptionDoc& o) { return o.key == key; });
  }
};

// "unknown <what> '<name>'; did you mean '<nearest>'? (valid <what>s: a, b, c)" as an InputError
// naming `file` and `field`.
[[noreturn]] void throw_unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& valid,
                                     const std::string& file, const std::string& field);

template <class Entry>
class Registry {
 public:
  // `what` names one entry in messages ("strategy", "cluster type", "collective algorithm").
  Registry(std::string what, std::vector<Entry> entries) : what_(std::move(what)), entries_(std::move(entries)) {}

  std::span<const Entry> entries() const { return entries_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  std::size_t size() const { return entries_.size(); }
  const std::string& what() const { return what_; }
  // The entry named `name` (or with that alias), or nullptr.
  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.answers_to(name)) return &e;
    return nullptr;
  }
  // The entry named `name`; an unknown name is an InputError naming `file` and `field`, with the
  // nearest name suggested and the valid ones listed.
  const Entry& get(std::string_view name, const std::string& file, const std::string& field) const {
    if (const Entry* e = find(name)) return *e;
    throw_unknown_name(what_, name, names(), file, field);
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  // One block per entry: "name (aliases): description" and its options, one per line.
  std::string to_text() const;
  // [{name, aliases?, description, options}], each entry's extra fields added by `more(entry, json)`.
  template <class More>
  nlohmann::ordered_json to_json(const More& more) const {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Entry& e : entries_) {
      nlohmann::ordered_json j = {{"name", e.name}};
      if (!e.aliases.empty()) j["aliases"] = e.aliases;
      j["description"] = e.description;
      more(e, j);
      j["options"] = options_to_json(e.options);
      out.push_back(std::move(j));
    }
    return out;
  }
  nlohmann::ordered_json to_json() const {
    return to_json([](const Entry&, nlohmann::ordered_json&) {});
  }

 private:
  std::string what_;
  std::vector<Entry> entries_;
};

std::string registry_entry_text(const RegistryEntry& e);

template <class Entry>
std::string Registry<Entry>::to_text() const {
  std::string out;
  for (const Entry& e : entries_) out += registry_entry_text(e);
  return out;
}

}  // namespace placesim
