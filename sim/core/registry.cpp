#include "sim/core/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/errors.h"

namespace placesim {

std::string describe_options(std::span<const OptionDoc> docs) {
  std::string out;
  for (const auto& d : docs) {
    if (!out.empty()) out += "; ";
    out += fmt::format("{} ({}): {}", d.key, d.default_text, d.help);
    if (!d.choices.empty()) {
      std::vector<std::string_view> c(d.choices.begin(), d.choices.end());
      out += fmt::format(" [{}]", join_choices(c));
    }
  }
  return out;
}

nlohmann::ordered_json options_to_json(std::span<const OptionDoc> docs) {
  nlohmann::ordered_json options = nlohmann::ordered_json::array();
  for (const auto& o : docs) {
    nlohmann::ordered_json j = {{"key", o.key}, {"kind", o.kind}, {"default", o.default_text}, {"help", o.help}};
    if (!o.choices.empty()) j["choices"] = o.choices;
    j["example"] = o.example;
    options.push_back(std::move(j));
  }
  return options;
}

void throw_unknown_name(std::string_view what, std::string_view name, const std::vector<std::string>& valid,
                        const std::string& file, const std::string& field) {
  throw InputError(file, field,
                   fmt::format("unknown {} '{}'{} (valid: {})", what, name, suggestion(name, valid), fmt::join(valid, ", ")));
}

std::string registry_entry_text(const RegistryEntry& e) {
  std::string out = fmt::format("{}{}\n  {}\n", e.name,
                                e.aliases.empty() ? "" : fmt::format(" (alias: {})", fmt::join(e.aliases, ", ")), e.description);
  for (const auto& o : e.options) out += fmt::format("    {} ({}): {}\n", o.key, o.default_text, o.help);
  return out;
}

}  // namespace placesim
