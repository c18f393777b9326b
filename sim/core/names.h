#pragma once
// Names of things a user types: an enum's names declared once next to it (EnumName), the one
// conversion both ways (enum_name, enum_parse), and the "did you mean" of every lookup
// (nearest_word, suggestion). Core: the engines and collectives name their enums here without
// knowing about YAML.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace placesim {

// An enum's names, declared once per enum next to it: {{Init::Random, "random"}, ...}.
template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value`; every value must be listed.
template <class E>
std::string_view enum_name(std::span<const EnumName<E>> names, E value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

// "a, b or c", for messages.
std::string join_choices(std::span<const std::string_view> names);

[[noreturn]] void throw_unknown_choice(std::string_view text, std::span<const std::string_view> valid,
                                       const std::string& file, const std::string& field);

// The value named `text`; an unknown name is an InputError listing the valid ones.
template <class E>
E enum_parse(std::span<const EnumName<E>> names, std::string_view text, const std::string& file, const std::string& field) {
  std::vector<std::string_view> valid;
  for (const auto& n : names) {
    if (n.name == text) return n.value;
    valid.push_back(n.name);
  }
  throw_unknown_choice(text, valid, file, field);
}

// The candidate closest to `word` by edit distance, or "" if none is reasonably close.
std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates);

// "; did you mean 'x'?" for the candidate nearest to `word`, or "" when none is close.
std::string suggestion(std::string_view word, const std::vector<std::string>& candidates);

// `text` as one word of a POSIX shell: as it is when it has nothing the shell reads, else in
// single quotes.
std::string shell_quoted(const std::string& text);

}  // namespace placesim
