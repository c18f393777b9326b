#pragma once
// Strict reading of YAML mappings for scenario and cluster files: every error names the file, the
// field path and the line, and unknown keys are errors that suggest the nearest valid key.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "sim/core/names.h"

namespace placesim {

// The tag of a number given in base units (seconds, bytes, bytes per second) by a caller that says
// so, as Python's placesim does: YamlFields takes it without a unit. In a file a bare number where a
// quantity is expected is refused.
inline constexpr const char* kBaseUnitsTag = "!base-units";


class YamlFields {
 public:
  // `node` must be a mapping; `path` is its field path ("cluster", "strategies[1]").
  YamlFields(const YAML::Node& node, std::string file, std::string path);

  // Throws on any key not in `allowed`.
  void allow_only(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const;
  YAML::Node node(std::string_view key) const;  // required
  std::string string(std::string_view key) const;
  std::string string_or(std::string_view key, std::string fallback) const;
  long integer(std::string_view key) const;
  long integer_or(std::string_view key, long fallback) const;
  double number_or(std::string_view key, double fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;
  double bandwidth(std::string_view key) const;
  double bandwidth_or(std::string_view key, double fallback) const;
  double duration_or(std::string_view key, double fallback) const;
  double bytes_or(std::string_view key, double fallback) const;

  std::string field(std::string_view key) const;  // "path.key (line N)"
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const YAML::Node& yaml() const { return node_; }

 private:
  std::string scalar(std::string_view key) const;
  YAML::Node node_;
  std::string file_, path_;
};

// Loads a YAML file; malformed YAML becomes an InputError with the parser's line and column,
// text that is not UTF-8 (in any key or value) an InputError naming the field and its line
// (every name ends up in JSON results, which hold UTF-8 only), and a key given twice in one
// mapping an InputError naming both lines (yaml-cpp keeps both and reads the first: the other
// would be silently ignored).
YAML::Node load_yaml_file(const std::string& path);
// The same for YAML text already in memory; `file` names it in errors.
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);

// The offset of the first byte of `text` that does not start a well-formed UTF-8 sequence
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t first_invalid_utf8(std::string_view text);
// Throws InputError naming `file` and the field path of the first key or value under `node`
// (whose own path is `path`) that is not UTF-8, of a key that repeats one of its mapping, or of
// an alias that refers to a mapping or list containing it (a cycle). Nodes reached through
// several aliases are checked once; `node` must be a tree as the parser made it (their positions
// in the file tell its nodes apart).
void check_yaml_tree(const YAML::Node& node, const std::string& file, const std::string& path);


}  // namespace placesim
