#include "sim/core/names.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "sim/core/errors.h"

namespace placesim {

std::string join_choices(std::span<const std::string_view> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

void throw_unknown_choice(std::string_view text, std::span<const std::string_view> valid, const std::string& file,
                          const std::string& field) {
  std::vector<std::string> names(valid.begin(), valid.end());
  const std::string hint = nearest_word(text, names);
  throw InputError(file, field,
                   fmt::format("expected {}, got '{}'{}", join_choices(valid), text,
                               hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  // Letters alike whatever their case: BF16 is nearest bf16, not fp16.
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  auto distance = [&](std::string_view a, std::string_view b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      std::swap(prev, cur);
    }
    return prev[b.size()];
  };
  std::string best;
  std::size_t best_d = std::max<std::size_t>(3, word.size() / 2) + 1;
  for (const auto& c : candidates) {
    std::size_t d = distance(word, c);
    if (d < best_d) { best_d = d; best = c; }
  }
  return best;
}

std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string hint = nearest_word(word, candidates);
  return hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint);
}

// `text` as one word of a POSIX shell: as it is when it has nothing the shell reads, else in
// single quotes.
std::string shell_quoted(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                           std::string::npos)
    return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace placesim
