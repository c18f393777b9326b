#include "sim/config/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>

#include "sim/core/errors.h"
#include "sim/config/options.h"
#include "sim/core/units.h"

namespace placesim {

YamlFields::YamlFields(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap())
    throw InputError(file_, path_.empty() ? "<top level>" : path_,
                     fmt::format("expected a mapping of key: value (line {})", node_.Mark().line + 1));
}

std::string YamlFields::field(std::string_view key) const {
  std::string f = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  if (auto n = node_[std::string(key)]; n && n.Mark().line >= 0) f += fmt::format(" (line {})", n.Mark().line + 1);
  return f;
}

void YamlFields::allow_only(std::initializer_list<std::string_view> allowed) const {
  const std::vector<std::string> names(allowed.begin(), allowed.end());
  check_known_keys(*this, names);
}

bool YamlFields::has(std::string_view key) const { return static_cast<bool>(node_[std::string(key)]); }

YAML::Node YamlFields::node(std::string_view key) const {
  auto n = node_[std::string(key)];
  if (!n) throw InputError(file_, path_.empty() ? std::string(key) : path_ + "." + std::string(key), "required field is missing");
  return n;
}

std::string YamlFields::scalar(std::string_view key) const {
  auto n = node(key);
  if (!n.IsScalar()) throw InputError(file_, field(key), "expected a single value");
  return n.Scalar();
}

std::string YamlFields::string(std::string_view key) const { return scalar(key); }
std::string YamlFields::string_or(std::string_view key, std::string fallback) const {
  return has(key) ? scalar(key) : fallback;
}

long YamlFields::integer(std::string_view key) const {
  const std::string s = scalar(key);
  long v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size())
    throw InputError(file_, field(key), fmt::format("expected a whole number, got '{}'", s));
  return v;
}
long YamlFields::integer_or(std::string_view key, long fallback) const { return has(key) ? integer(key) : fallback; }

double YamlFields::number_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const std::string s = scalar(key);
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
    throw InputError(file_, field(key), fmt::format("expected a number, got '{}'", s));
  return v;
}

bool YamlFields::boolean_or(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const std::string s = scalar(key);
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  throw InputError(file_, field(key), fmt::format("expected true or false, got '{}'", s));
}

namespace {

// A quantity in a file carries its unit: `nic_bandwidth: 100` read as 100 B/s, or `gpu_memory: 40`
// as 40 bytes, is a trap. 0 means the same in every unit; a number tagged kBaseUnitsTag (Python's,
// in base units by its documentation) is taken as it is.
void refuse_bare_number(const YAML::Node& node, const char* kind, const char* examples, const std::string& file,
                        const std::string& field) {
  if (node.Tag() == kBaseUnitsTag) return;
  refuse_bare_quantity(node.Scalar(), kind, examples, file, field);
}

}  // namespace

double YamlFields::bandwidth(std::string_view key) const {
  const std::string text = scalar(key);
  refuse_bare_number(node(key), "bandwidth", fmt::format("{0}Gbps or {0}GB/s", text).c_str(), file_, field(key));
  return parse_bandwidth(text, file_, field(key));
}
double YamlFields::bandwidth_or(std::string_view key, double fallback) const {
  return has(key) ? bandwidth(key) : fallback;
}
double YamlFields::duration_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const std::string text = scalar(key);
  refuse_bare_number(node(key), "duration", fmt::format("{0}us, {0}ms or {0}s", text).c_str(), file_, field(key));
  return parse_duration(text, file_, field(key));
}
double YamlFields::bytes_or(std::string_view key, double fallback) const {
  if (!has(key)) return fallback;
  const std::string text = scalar(key);
  refuse_bare_number(node(key), "size", fmt::format("{0}GiB or {0}GB", text).c_str(), file_, field(key));
  return parse_bytes(text, file_, field(key));
}

namespace {
template <class Input>
YAML::Node parse_yaml(Input& in, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(path, fmt::format("line {}, column {}", e.mark.line + 1, e.mark.column + 1),
                     "malformed YAML: " + e.msg);
  }
  if (!root || root.IsNull()) throw InputError(path, "", "the file is empty");
  check_yaml_tree(root, path, "");
  return root;
}
}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the file");
  return parse_yaml(in, path);
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) { return parse_yaml(text, file); }

std::size_t first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The lead byte gives the length and the range of the second byte (RFC 3629, table 3-7 of
    // the Unicode standard); later bytes are 0x80..0xBF.
    std::size_t length = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) length = 2;
    else if (c == 0xE0) length = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) length = 3;
    else if (c == 0xED) length = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) length = 3;
    else if (c == 0xF0) length = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) length = 4;
    else if (c == 0xF4) length = 4, hi = 0x8F;
    else return i;
    if (i + length > n || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (std::size_t k = 2; k < length; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += length;
  }
  return std::string_view::npos;
}

namespace {

// Walks a loaded tree once: an alias makes several paths lead to one node (an anchored list used
// twice is checked once, so nested aliases cannot make the walk exponential), and an alias inside
// the node it names makes a cycle, which nothing downstream could walk either.
class TreeWalk {
 public:
  explicit TreeWalk(const std::string& file) : file_(file) {}

  void node(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) return scalar(n, path);
    if (!n.IsMap() && !n.IsSequence()) return;
    for (const YAML::Node& a : ancestors_)
      if (a.is(n))
        throw InputError(file_, fmt::format("{} (line {})", path.empty() ? "<top level>" : path, n.Mark().line + 1),
                         "an alias (*name) refers to a mapping or list that contains it: the value would never end");
    if (!walked_.insert(n.Mark().pos).second) return;
    ancestors_.push_back(n);
    if (n.IsMap()) {
      std::map<std::string, int> lines;  // each key's first line
      for (const auto& kv : n) {
        if (kv.first.IsScalar()) scalar(kv.first, path.empty() ? "<key>" : path + ".<key>");
        // A key that is not a plain word is the parser's to refuse; its value is still checked.
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "<key>";
        const std::string field = path.empty() ? key : path + "." + key;
        if (kv.first.IsScalar()) {
          const auto [first, fresh] = lines.emplace(key, kv.first.Mark().line + 1);
          if (!fresh)
            throw InputError(file_, fmt::format("{} (line {})", field, kv.first.Mark().line + 1),
                             fmt::format("the key is given twice in one mapping (first on line {}): one of the two values "
                                         "would be ignored; remove one",
                                         first->second));
        }
        node(kv.second, field);
      }
    } else {
      std::size_t i = 0;
      for (const auto& item : n) node(item, fmt::format("{}[{}]", path, i++));
    }
    ancestors_.pop_back();
  }

 private:
  void scalar(const YAML::Node& n, const std::string& where) const {
    const std::size_t at = first_invalid_utf8(n.Scalar());
    if (at != std::string_view::npos)
      throw InputError(file_, fmt::format("{} (line {})", where.empty() ? "<top level>" : where, n.Mark().line + 1),
                       fmt::format("expected UTF-8 text, got the byte 0x{:02X} at character {} (save the file as UTF-8)",
                                   static_cast<unsigned char>(n.Scalar()[at]), at + 1));
  }

  const std::string& file_;
  std::vector<YAML::Node> ancestors_;
  std::set<int> walked_;  // containers, by position in the file: an alias is the node it names
};

}  // namespace

void check_yaml_tree(const YAML::Node& node, const std::string& file, const std::string& path) {
  TreeWalk(file).node(node, path);
}

}  // namespace placesim
