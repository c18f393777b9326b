#include "scenarios/runner/sweep.h"

#include <algorithm>
#include <limits>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <span>

#include "placement/allocation/allocation.h"
#include "placement/framework/strategy.h"
#include "sim/core/errors.h"
#include "sim/config/yaml_fields.h"

namespace placesim {

namespace {

// One step of a path: a mapping key, then list selectors (`strategies[quickp]`, `x[0][1]`).
struct PathStep {
  std::string key;
  std::vector<std::string> selectors;
};

std::vector<PathStep> parse_path(const std::string& path, const std::string& file, const std::string& field) {
  auto malformed = [&](const std::string& why) {
    return InputError(file, field,
                      fmt::format("malformed path '{}': {} (write keys joined by '.', list items as [index] or "
                                  "[label], e.g. strategies[metis].options.seed)",
                                  path, why));
  };
  std::vector<PathStep> steps;
  std::size_t i = 0;
  while (i <= path.size()) {
    PathStep step;
    while (i < path.size() && path[i] != '.' && path[i] != '[') step.key += path[i++];
    if (step.key.empty()) throw malformed("an empty key");
    while (i < path.size() && path[i] == '[') {
      const std::size_t close = path.find(']', i);
      if (close == std::string::npos) throw malformed("'[' without ']'");
      std::string sel = path.substr(i + 1, close - i - 1);
      if (sel.empty()) throw malformed("an empty []");
      step.selectors.push_back(std::move(sel));
      i = close + 1;
    }
    steps.push_back(std::move(step));
    if (i == path.size()) break;
    if (path[i] != '.') throw malformed(fmt::format("unexpected '{}' after ']'", path[i]));
    ++i;
    if (i == path.size()) throw malformed("it ends with '.'");
  }
  return steps;
}

// The label a `strategies` item goes by (its label, else its name), or "" for other items.
std::string item_label(const YAML::Node& item) {
  if (item.IsScalar()) return item.Scalar();
  if (item.IsMap()) {
    if (item["label"] && item["label"].IsScalar()) return item["label"].Scalar();
    if (item["name"] && item["name"].IsScalar()) return item["name"].Scalar();
  }
  return "";
}

std::size_t select_item(const YAML::Node& list, const std::string& selector, const std::string& where,
                        const std::string& file, const std::string& field) {
  std::size_t index = 0;
  const auto [ptr, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
  if (ec == std::errc() && ptr == selector.data() + selector.size()) {
    if (index >= list.size())
      throw InputError(file, field, fmt::format("{}[{}]: the list has {} items", where, selector, list.size()));
    return index;
  }
  std::vector<std::string> labels;
  for (std::size_t k = 0; k < list.size(); ++k) {
    labels.push_back(item_label(list[k]));
    if (labels.back() == selector) return k;
  }
  std::string valid;
  for (const auto& l : labels)
    if (!l.empty()) valid += (valid.empty() ? "" : ", ") + l;
  const std::string hint = nearest_word(selector, labels);
  throw InputError(file, field,
                   fmt::format("{}[{}]: no item is labelled '{}'{} (items: {}; or use an index)", where, selector,
                               selector, hint.empty() ? "" : "; did you mean '" + hint + "'?", valid));
}

const char* kind_of(const YAML::Node& n) { return n.IsMap() ? "a mapping" : n.IsSequence() ? "a list" : "a value"; }

// The parser's message about an overridden tree, for nesting in a sweep error: without the file
// (the sweep error names it) and without line numbers (the overridden nodes have none of their own).
// A single value replaces a single value; a mapping or a list (a whole `graph:`) replaces anything.
void check_replaceable(const YAML::Node& target, const YAML::Node& value, const std::string& where, const std::string& file,
                       const std::string& field) {
  if (value.IsScalar() && (target.IsMap() || target.IsSequence()))
    throw InputError(file, field,
                     fmt::format("'{}' is {}: sweep one of its fields, or give {}s as values (e.g. graph: [{{file: a.json}}, "
                                 "{{model: bert-base}}])",
                                 where, kind_of(target), target.IsMap() ? "mapping" : "list"));
}

// How a value shows in keys and results: as written for a single value, else in YAML flow style.
std::string value_text(const YAML::Node& value) {
  if (value.IsScalar()) return value.Scalar();
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << value;
  return out.c_str();
}

std::string inner_message(const std::string& message, const std::string& file) {
  const std::string prefix = file + ": ";
  std::string m = message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  return std::regex_replace(m, std::regex(R"( \(line [0-9]+\))"), "");
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}


// --- A point's file names (placement-<stem>.json, trace-<stem>.json) ---

// Text as a part of a file name: letters, digits, '-' and '.' kept, "/s" written "ps" (10GB/s ->
// 10GBps), every other run of characters one '_'; no '_' or '.' at either end.
std::string file_word(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool per_second = c == '/' && i + 1 < text.size() && text[i + 1] == 's' &&
                            (i + 2 == text.size() || !std::isalnum(static_cast<unsigned char>(text[i + 2])));
    if (per_second) {
      out += "ps";
      ++i;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && (out.back() == '_' || out.back() == '.')) out.pop_back();
  const std::size_t start = out.find_first_not_of("_.");
  return start == std::string::npos ? std::string() : out.substr(start);
}

// A swept path as a file name shows it: its last field, a strategy's options under its label
// ("cluster.gpus" -> "gpus", "strategies[mcmc].options.steps" -> "mcmc.steps").
std::string path_word(const std::string& path) {
  static const std::regex strategy_options(R"(^strategies\[([^\]]+)\]\.options(\.(.*))?$)");
  std::smatch m;
  if (std::regex_match(path, m, strategy_options)) return m[1].str() + (m[3].matched ? "." + m[3].str() : "");
  const std::size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// The scalars of a YAML value in order, a file by its stem ({file: a/vgg.json, batch: 8} ->
// "vgg_batch8").
std::string yaml_words(const YAML::Node& node) {
  std::string out;
  auto add = [&](const std::string& word) {
    if (!word.empty()) out += (out.empty() ? "" : "_") + word;
  };
  if (node.IsScalar()) return node.Scalar();
  if (node.IsSequence())
    for (const auto& item : node) add(yaml_words(item));
  if (node.IsMap())
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (kv.second.IsScalar() && (key == "file" || key == "onnx" || key == "chakra"))
        add(std::filesystem::path(kv.second.Scalar()).stem().string());
      else if (kv.second.IsScalar())
        add(key + kv.second.Scalar());
      else
        add(yaml_words(kv.second));
    }
  return out;
}

// A swept value as a file name shows it: as written, a mapping or list by its scalars, a graph or
// workload by the name results give it (the model, builtin or file stem).
std::string value_word(const std::string& path, const std::string& text, const Scenario& variant) {
  if (text.empty() || (text.front() != '{' && text.front() != '[')) return file_word(text);
  if (path == "graph" || path == "workload") return file_word(source_name(variant));
  try {
    return file_word(yaml_words(YAML::Load(text)));
  } catch (const YAML::Exception&) {
    return file_word(text);
  }
}

// placement-<stem>.json of a point that is one of several of its strategy: the label, each swept
// value (`gpus=4`), the seed and the repetition: `mcmc_gpus=4_bandwidth=10GBps_seed=1_rep=0`.
std::string point_file_stem(const std::string& label, const std::vector<std::pair<std::string, std::string>>& values,
                            const Scenario& variant, const std::optional<long>& seed, int repetition, int repetitions) {
  std::string stem = file_word(label);
  if (stem.empty()) stem = "strategy";
  for (const auto& [path, text] : values) stem += "_" + file_word(path_word(path)) + "=" + value_word(path, text, variant);
  if (seed) stem += fmt::format("_seed={}", *seed);
  if (repetitions > 1) stem += fmt::format("_rep={}", repetition);
  return stem;
}

// Longer stems are cut and told apart by a hash of the key.
constexpr std::size_t kMaxFileStem = 120;

// Stems that two points share (file systems that ignore case included), or that are too long, end
// with a hash of the point's key: the last resort, so that every point has files of its own.
void make_file_stems_unique(std::vector<SweepPoint>& points) {
  auto folded = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::map<std::string, int> uses;
  for (const SweepPoint& p : points) ++uses[folded(p.file_stem)];
  for (SweepPoint& p : points)
    if (uses[folded(p.file_stem)] > 1 || p.file_stem.size() > kMaxFileStem)
      p.file_stem = fmt::format("{}-{:08x}", p.file_stem.substr(0, kMaxFileStem - 9), fnv1a(p.key) & 0xffffffffu);
}

std::size_t saturating_mul(std::size_t a, std::size_t b) {
  std::size_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? SIZE_MAX : out;
}
std::size_t saturating_add(std::size_t a, std::size_t b) {
  std::size_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? SIZE_MAX : out;
}

// An axis whose values can change which strategies a combination runs.
bool is_strategies_path(const std::string& path) {
  return path == "strategies" || path.rfind("strategies[", 0) == 0 || path.rfind("strategies.", 0) == 0;
}

struct VariantPoints {
  std::size_t points = 0, strategies = 0;
  bool seeded = false;  // some strategy runs once per seed
  bool jobs = false;    // the strategies are a scenario of jobs' allocation policies
};

// The points of one combination, read off its YAML (`strategies` as written, after the overrides)
// the way plan_sweep expands it, without parsing the scenario. Malformed entries count one point
// each: the parse that follows reports them.
VariantPoints points_of_variant(const YAML::Node& root, const std::optional<std::vector<std::string>>& strategy_axis,
                                std::size_t seeds, int repetitions) {
  std::vector<std::pair<std::string, std::string>> listed;  // (label, name)
  // A scenario of jobs runs a point per allocation policy (packed when it names none).
  const bool jobs = root["jobs"].IsDefined();
  // (reset rebinds a handle; operator= would write into the scenario's tree)
  // (root is const: a missing key is an invalid node, which reset() refuses)
  YAML::Node list;
  if (const YAML::Node given = jobs ? root["allocation"] : root["strategies"]; given) list.reset(given);
  if (jobs && (!list || list.IsNull())) list.reset(YAML::Node("packed"));
  if (jobs && (list.IsScalar() || list.IsMap())) {
    YAML::Node one(YAML::NodeType::Sequence);
    one.push_back(list);
    list.reset(one);
  }
  if (list && list.IsSequence())
    for (const auto& item : list) {
      std::string name;
      if (item.IsScalar()) name = item.Scalar();
      else if (item.IsMap() && item["name"] && item["name"].IsScalar()) name = item["name"].Scalar();
      std::string label = name;
      if (item.IsMap() && item["label"] && item["label"].IsScalar()) label = item["label"].Scalar();
      listed.emplace_back(label, name);
    }
  std::vector<std::string> names;
  if (strategy_axis) {
    for (const std::string& label : *strategy_axis) {
      auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& l) { return l.first == label; });
      names.push_back(it == listed.end() ? label : it->second);
    }
  } else {
    for (const auto& l : listed) names.push_back(l.second);
  }
  VariantPoints v;
  v.strategies = names.size();
  v.jobs = jobs;
  for (const std::string& name : names) {
    std::size_t runs = 1;
    if (seeds > 0 && jobs) {
      if (const AllocationPolicyInfo* info = allocation_registry().find(name); info && info->takes("seed")) {
        runs = seeds;
        v.seeded = true;
      }
    } else if (seeds > 0) {
      for (const auto& info : strategy_registry())
        if (info.name == name && info.takes("seed")) {
          runs = seeds;
          v.seeded = true;
        }
    }
    v.points = saturating_add(v.points, saturating_mul(runs, static_cast<std::size_t>(repetitions)));
  }
  return v;
}

std::string plural(std::size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

void apply_sweep_override(YAML::Node& root, const std::string& path, const YAML::Node& value, const std::string& file,
                          const std::string& field) {
  const std::vector<PathStep> steps = parse_path(path, file, field);
  const std::string& first = steps.front().key;
  if (first == "sweep" || first == "name" || first == "output")
    throw InputError(file, field, fmt::format("'{}' cannot be swept (it names the whole run)", first));
  if (first == "simulation" && steps.size() > 1 && (steps[1].key == "repetitions" || steps[1].key == "seeds"))
    throw InputError(file, field, "repetitions and seeds are set once for the whole sweep, under simulation:");

  YAML::Node cur;  // yaml-cpp: reset() rebinds a handle; operator= would overwrite the tree
  cur.reset(root);
  std::string where;
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const PathStep& step = steps[s];
    const bool last = s + 1 == steps.size();
    if (!cur.IsMap())
      throw InputError(file, field, fmt::format("'{}' is {}, so it has no key '{}'", where, kind_of(cur), step.key));
    where += (where.empty() ? "" : ".") + step.key;
    YAML::Node child;
    child.reset(cur[step.key]);
    if (!child.IsDefined()) {
      // A field left at its default: add it, and let the scenario parser judge the key.
      if (!step.selectors.empty())
        throw InputError(file, field, fmt::format("'{}' is not in the scenario, so it has no list items", where));
      if (last) {
        cur[step.key] = YAML::Clone(value);
        return;
      }
      cur[step.key] = YAML::Node(YAML::NodeType::Map);
      child.reset(cur[step.key]);
    }
    for (std::size_t k = 0; k < step.selectors.size(); ++k) {
      if (!child.IsSequence())
        throw InputError(file, field, fmt::format("'{}' is {}, not a list", where, kind_of(child)));
      const std::size_t index = select_item(child, step.selectors[k], where, file, field);
      where += "[" + step.selectors[k] + "]";
      YAML::Node item;
      item.reset(child[index]);
      if (last && k + 1 == step.selectors.size()) {
        check_replaceable(item, value, where, file, field);
        child[index] = YAML::Clone(value);
        return;
      }
      // `- metis` written as a bare name: make it `{name: metis}` so its options can be set.
      if (item.IsScalar() && path.rfind("strategies", 0) == 0 && s == 0 && k + 1 == step.selectors.size()) {
        YAML::Node expanded(YAML::NodeType::Map);
        expanded["name"] = item.Scalar();
        child[index] = expanded;
        item.reset(child[index]);
      }
      child.reset(item);
    }
    if (last) {
      check_replaceable(child, value, where, file, field);
      if (step.selectors.empty()) cur[step.key] = YAML::Clone(value);
      return;
    }
    cur.reset(child);
  }
}

namespace {

// One block of `sweep:` (the whole mapping, or one mapping of a list of them): the cross product
// of its axes.
struct SweepBlock {
  std::string name;                                 // "sweep" or "sweep[1]", for error messages
  std::vector<SweepAxis> axes;                      // in the order written, `strategy` included
  std::vector<std::size_t> yaml_axes;               // indices in `axes` of the axes that change the YAML
  std::vector<std::vector<YAML::Node>> axis_nodes;  // the value nodes of each YAML axis
  std::optional<std::size_t> strategy_axis;         // index in `axes`
};

SweepBlock read_sweep_block(const YAML::Node& sweep, const std::string& file, std::string name) {
  SweepBlock block;
  block.name = std::move(name);
  for (const auto& kv : sweep) {
    SweepAxis axis;
    if (!kv.first.IsScalar())
      throw InputError(file, fmt::format("{} (line {})", block.name, kv.first.Mark().line + 1),
                       "expected a field path such as cluster.gpus as key, got a list or mapping");
    axis.path = kv.first.Scalar();
    axis.field = fmt::format("{}.{} (line {})", block.name, axis.path, kv.first.Mark().line + 1);
    const YAML::Node& list = kv.second;
    if (!list.IsSequence() || list.size() == 0)
      throw InputError(file, axis.field, "expected a non-empty list of values, e.g. [10GB/s, 20GB/s]");
    std::vector<YAML::Node> nodes;
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].IsScalar() && !list[i].IsMap() && !list[i].IsSequence())
        throw InputError(file, fmt::format("{}.{}[{}] (line {})", block.name, axis.path, i, list[i].Mark().line + 1),
                         "expected a value, a mapping or a list");
      // A mapping may name itself with `label:` (`{label: fat-tree-16, type: fat-tree, ...}`): keys
      // and tables show the label, and the field gets the mapping without it (a strategy item
      // keeps its label, which is its name; its options do not).
      YAML::Node node = list[i];
      std::string text;
      if (node.IsMap() && node["label"]) {
        if (!node["label"].IsScalar() || node["label"].Scalar().empty())
          throw InputError(file, fmt::format("{}.{}[{}].label (line {})", block.name, axis.path, i, list[i].Mark().line + 1),
                           "expected a name for the value, e.g. fat-tree-16");
        text = node["label"].Scalar();
        const bool strategy_item = axis.path.rfind("strategies", 0) == 0 && axis.path.find('.') == std::string::npos;
        if (!strategy_item) {
          // reset, not operator=, which would write the copy into the file's tree: a value written
          // again as a YAML alias (*name) would then have lost its label.
          node.reset(YAML::Clone(node));
          node.remove("label");
        }
      } else {
        text = value_text(node);
      }
      if (!seen.insert(text).second) throw InputError(file, axis.field, fmt::format("value '{}' is listed twice", text));
      axis.values.push_back(text);
      nodes.push_back(node);
    }
    if (axis.path == "strategy") {
      for (std::size_t i = 0; i < nodes.size(); ++i)
        if (!nodes[i].IsScalar())
          throw InputError(file, fmt::format("{}.strategy[{}] (line {})", block.name, i, nodes[i].Mark().line + 1),
                           "expected a strategy label or registry name");
      block.strategy_axis = block.axes.size();
    } else {
      block.yaml_axes.push_back(block.axes.size());
      block.axis_nodes.push_back(std::move(nodes));
    }
    block.axes.push_back(std::move(axis));
  }
  return block;
}

// `sweep:` as its blocks: one mapping, or a list of mappings whose points are run one after the
// other (a union of cross products, to pair some values with others only).
std::vector<SweepBlock> read_sweep_blocks(const YamlFields& top, const std::string& file) {
  std::vector<SweepBlock> blocks;
  if (!top.has("sweep")) return blocks;
  const YAML::Node sweep = top.node("sweep");
  const char* expected =
      "expected a mapping of field path: [values], e.g. {cluster.gpus: [2, 4]}, or a list of such mappings (each "
      "its own cross product, run one after the other)";
  if (sweep.IsMap()) {
    blocks.push_back(read_sweep_block(sweep, file, "sweep"));
    return blocks;
  }
  if (!sweep.IsSequence() || sweep.size() == 0) throw InputError(file, top.field("sweep"), expected);
  for (std::size_t b = 0; b < sweep.size(); ++b) {
    const std::string name = fmt::format("sweep[{}]", b);
    if (!sweep[b].IsMap() || sweep[b].size() == 0)
      throw InputError(file, fmt::format("{} (line {})", name, sweep[b].Mark().line + 1), expected);
    blocks.push_back(read_sweep_block(sweep[b], file, name));
  }
  return blocks;
}

// Counts a block's points before making any: the cross product of the axes that cannot change
// the strategies, times the points of each combination of those that can (strategies[...]).
SweepCount count_block(const SweepBlock& block, const YAML::Node& base, const std::string& file, std::size_t seeds,
                       int repetitions, std::size_t max_points) {
  const std::optional<std::vector<std::string>> chosen =
      block.strategy_axis ? std::optional(block.axes[*block.strategy_axis].values) : std::nullopt;
  SweepCount count;
  std::size_t others = 1, strategy_combinations = 1;
  std::vector<std::size_t> strategy_axes;  // positions in yaml_axes
  std::string axes_text;
  for (std::size_t a = 0; a < block.yaml_axes.size(); ++a) {
    const SweepAxis& axis = block.axes[block.yaml_axes[a]];
    const std::size_t n = axis.values.size();
    if (is_strategies_path(axis.path)) {
      strategy_combinations = saturating_mul(strategy_combinations, n);
      strategy_axes.push_back(a);
    } else {
      others = saturating_mul(others, n);
    }
    axes_text += fmt::format("{}{} of {}", axes_text.empty() ? "" : " x ", plural(n, "value", "values"), axis.path);
  }
  std::size_t per_combination = 0;  // when every combination has as many
  VariantPoints shape;
  if (strategy_axes.empty()) {
    shape = points_of_variant(base, chosen, seeds, repetitions);
    per_combination = shape.points;
    count.points = saturating_mul(others, per_combination);
  } else if (saturating_mul(others, strategy_combinations) > max_points) {
    // Every combination runs at least one point.
    count.points = saturating_mul(others, strategy_combinations);
    count.exact = false;
  } else {
    std::vector<std::size_t> pick(strategy_axes.size(), 0);
    for (bool more = true; more;) {
      YAML::Node variant_root = YAML::Clone(base);
      for (std::size_t k = 0; k < strategy_axes.size(); ++k) {
        const std::size_t a = strategy_axes[k];
        apply_sweep_override(variant_root, block.axes[block.yaml_axes[a]].path, block.axis_nodes[a][pick[k]], file,
                             block.axes[block.yaml_axes[a]].field);
      }
      count.points = saturating_add(count.points, saturating_mul(others, points_of_variant(variant_root, chosen, seeds, repetitions).points));
      more = false;
      for (std::size_t k = pick.size(); k-- > 0 && !more;) {
        if (++pick[k] < block.axis_nodes[strategy_axes[k]].size()) more = true;
        else pick[k] = 0;
      }
    }
  }
  if (per_combination > 0) {
    std::vector<std::string> parts{shape.jobs ? plural(shape.strategies, "allocation policy", "allocation policies")
                                              : plural(shape.strategies, "strategy", "strategies")};
    if (shape.seeded) parts.push_back(plural(seeds, "seed", "seeds"));
    if (repetitions > 1) parts.push_back(plural(static_cast<std::size_t>(repetitions), "repetition", "repetitions"));
    std::string joined;
    for (const auto& p : parts) joined += (joined.empty() ? "" : ", ") + p;
    count.breakdown = axes_text.empty()
                          ? joined
                          : fmt::format("{} x {} each ({})", axes_text, plural(per_combination, "point", "points"), joined);
  } else {
    count.breakdown = fmt::format("{}, with the strategies of each combination", axes_text);
  }
  return count;
}

// The blocks' counts as one: their sum, each block's breakdown named after it.
SweepCount count_blocks(std::span<const SweepBlock> blocks, const YAML::Node& base, const std::string& file,
                        std::size_t seeds, int repetitions, std::size_t max_points) {
  if (blocks.size() == 1) return count_block(blocks.front(), base, file, seeds, repetitions, max_points);
  SweepCount total;
  std::size_t fewest = std::numeric_limits<std::size_t>::max(), most = 0;
  std::string largest;  // the block of the most points, and its breakdown
  for (const SweepBlock& block : blocks) {
    const SweepCount c = count_block(block, base, file, seeds, repetitions, max_points);
    total.points = saturating_add(total.points, c.points);
    total.exact = total.exact && c.exact;
    total.breakdown += fmt::format("{}{}: {}", total.breakdown.empty() ? "" : "; ", block.name, c.breakdown);
    fewest = std::min(fewest, c.points);
    if (c.points > most) largest = fmt::format("{}: {}", block.name, c.breakdown);
    most = std::max(most, c.points);
  }
  // Many blocks (a reproduction's one block per case) make a line nobody reads: say their number,
  // and the largest (what a --max-points refusal is about).
  if (blocks.size() > 4)
    total.breakdown = fmt::format("{} sweep blocks of {} points each; the largest, {}", blocks.size(),
                                  fewest == most ? fmt::format("{}", most) : fmt::format("{} to {}", fewest, most), largest);
  return total;
}

// Each value on its own, so that an error names the one axis and value at fault.
void check_block_values(const SweepBlock& block, const YAML::Node& base, const std::string& file) {
  for (std::size_t a = 0; a < block.yaml_axes.size(); ++a) {
    const SweepAxis& axis = block.axes[block.yaml_axes[a]];
    for (std::size_t i = 0; i < block.axis_nodes[a].size(); ++i) {
      YAML::Node trial = YAML::Clone(base);
      apply_sweep_override(trial, axis.path, block.axis_nodes[a][i], file, axis.field);
      try {
        parse_scenario(trial, file);
      } catch (const InputError& e) {
        throw InputError(file, axis.field, fmt::format("value '{}': {}", axis.values[i], inner_message(e.what(), file)));
      }
    }
  }
}

// The strategies a variant runs: the `strategy` axis's (a label of `strategies`, else a registry
// name run with its default options, added to the variant), else all of them.
std::vector<std::size_t> chosen_strategies(const SweepBlock& block, Scenario& variant, const std::string& file) {
  std::vector<std::size_t> chosen;
  if (!block.strategy_axis) {
    for (std::size_t s = 0; s < variant.strategies.size(); ++s) chosen.push_back(s);
    return chosen;
  }
  const SweepAxis& axis = block.axes[*block.strategy_axis];
  for (const std::string& label : axis.values) {
    auto it = std::find_if(variant.strategies.begin(), variant.strategies.end(),
                           [&](const StrategySpec& s) { return s.label == label; });
    if (it == variant.strategies.end()) {
      StrategySpec spec;
      spec.name = spec.label = label;
      spec.field = axis.field;
      bool registered = false;
      std::vector<std::string> candidates;
      for (const auto& s : variant.strategies) candidates.push_back(s.label);
      // A scenario of jobs runs allocation policies where others run strategies.
      const std::vector<std::string> names = variant.jobs.empty() ? strategy_registry().names() : allocation_registry().names();
      for (const std::string& name : names) {
        candidates.push_back(name);
        registered = registered || name == label;
      }
      if (!registered) {
        const std::string hint = nearest_word(label, candidates);
        throw InputError(file, axis.field,
                         fmt::format("'{}' is neither a label in {}{}", label,
                                     variant.jobs.empty() ? "strategies nor a registered strategy" : "allocation nor an allocation policy",
                                     hint.empty() ? "" : "; did you mean '" + hint + "'?"));
      }
      variant.strategies.push_back(std::move(spec));
      it = variant.strategies.end() - 1;
    }
    chosen.push_back(static_cast<std::size_t>(it - variant.strategies.begin()));
  }
  return chosen;
}

// Appends a block's variants and points to `plan`: every combination of its YAML axes, the first
// axis varying slowest. `base_scenario` is the base parsed with its line marks: a block without
// YAML axes takes it (a large cluster is built once, not twice) and leaves it empty.
void expand_block(const SweepBlock& block, const YAML::Node& base, std::optional<Scenario>& base_scenario,
                  const std::string& file, bool per_point_files, SweepPlan& plan) {
  std::vector<std::size_t> pick(block.yaml_axes.size(), 0);
  while (true) {
    YAML::Node variant_root = YAML::Clone(base);
    std::vector<std::pair<std::string, std::string>> values;
    for (std::size_t a = 0; a < block.yaml_axes.size(); ++a) {
      const SweepAxis& axis = block.axes[block.yaml_axes[a]];
      apply_sweep_override(variant_root, axis.path, block.axis_nodes[a][pick[a]], file, axis.field);
      values.emplace_back(axis.path, axis.values[pick[a]]);
    }
    // An error of the combination names it; the base's own (no axes) stands as it is.
    auto in_combination = [&](const InputError& e) {
      if (values.empty()) return e;
      std::string combination;
      for (const auto& [p, v] : values) combination += (combination.empty() ? "" : ", ") + p + "=" + v;
      return InputError(file, block.name, fmt::format("the combination {}: {}", combination, inner_message(e.what(), file)));
    };
    Scenario variant;
    try {
      if (block.yaml_axes.empty() && base_scenario) {
        variant = std::move(*base_scenario);
        base_scenario.reset();
      } else {
        variant = parse_scenario(variant_root, file);
      }
    } catch (const InputError& e) {
      throw in_combination(e);
    }
    const std::vector<std::size_t> chosen = chosen_strategies(block, variant, file);
    try {
      check_planner_options(variant, chosen);
      if (const std::string why = collectives_problem(variant, chosen); !why.empty())
        throw InputError(file, "simulation.collectives", why);
    } catch (const InputError& e) {
      throw in_combination(e);
    }

    const std::size_t v = plan.variants.size();
    const auto& seeds = variant.simulation.seeds;
    const int repetitions = variant.simulation.repetitions;
    std::string prefix;
    for (const auto& [p, value] : values) prefix += p + "=" + value + " ";
    for (std::size_t s : chosen) {
      const StrategySpec& spec = variant.strategies[s];
      std::vector<std::optional<long>> point_seeds{std::nullopt};
      if (!seeds.empty()) {
        // With jobs, the strategies are allocation policies: random takes the seeds.
        const bool seeded = !variant.jobs.empty() ? allocation_registry().get(spec.name, file, spec.field).takes("seed")
                                                  : !variant.workload && find_strategy(spec.name, file, spec.field).takes("seed");
        if (seeded)
          point_seeds.assign(seeds.begin(), seeds.end());
      }
      for (const auto& seed : point_seeds)
        for (int r = 0; r < repetitions; ++r) {
          SweepPoint p;
          p.index = plan.points.size();
          p.variant = v;
          p.strategy = s;
          p.seed = seed;
          p.repetition = r;
          p.key = prefix + (variant.jobs.empty() ? "strategy=" : "allocation=") + spec.label + (seed ? fmt::format(" seed={}", *seed) : "") + fmt::format(" rep={}", r);
          p.file_stem = per_point_files ? point_file_stem(spec.label, values, variant, seed, r, repetitions) : spec.label;
          plan.points.push_back(std::move(p));
        }
    }
    plan.variant_graph.push_back(!variant.jobs.empty() ? "jobs: " + YAML::Dump(variant_root["jobs"])
                                 : variant.workload    ? "workload: " + YAML::Dump(variant_root["workload"])
                                                       : YAML::Dump(variant_root["graph"]));
    plan.variants.push_back(std::move(variant));
    plan.variant_values.push_back(std::move(values));

    // Next combination (odometer, last axis fastest); done once the first axis wraps.
    bool advanced = false;
    for (std::size_t a = pick.size(); a-- > 0 && !advanced;) {
      if (++pick[a] < block.axis_nodes[a].size()) advanced = true;
      else pick[a] = 0;
    }
    if (!advanced) break;
  }
}

}  // namespace

SweepPlan plan_sweep(const YAML::Node& root, const std::string& file, const PlanOptions& options) {
  YamlFields top(root, file, "");
  // Parsed from the file's own tree, which the parser accepts with its `sweep:`: yaml-cpp's
  // Clone drops the line marks, and an error in the base scenario must name its line.
  std::optional<Scenario> base_scenario = parse_scenario(root, file);
  if (options.read) options.read(*base_scenario);
  YAML::Node base = YAML::Clone(root);
  base.remove("sweep");

  SweepPlan plan;
  plan.file = file;
  plan.name = base_scenario->name;
  plan.output = base_scenario->output;
  const std::size_t seeds = base_scenario->simulation.seeds.size();
  const int repetitions = base_scenario->simulation.repetitions;

  std::vector<SweepBlock> blocks = read_sweep_blocks(top, file);
  for (const SweepBlock& block : blocks) plan.axes.insert(plan.axes.end(), block.axes.begin(), block.axes.end());
  const bool per_point_files = !plan.axes.empty() || seeds > 0 || repetitions > 1;
  if (blocks.empty()) {  // no sweep: the base scenario, once
    blocks.emplace_back();
    blocks.back().name = "sweep";
  }

  const SweepCount count = count_blocks(blocks, base, file, seeds, repetitions, options.max_points);
  if (options.counted) options.counted(count);
  if (count.points > options.max_points)
    throw InputError(file, top.has("sweep") ? top.field("sweep") : std::string("simulation"),
                     fmt::format("{}{} points ({}) is more than --max-points {}: sweep fewer values, or raise "
                                 "--max-points to run them all",
                                 count.exact ? "" : "at least ", count.points, count.breakdown, options.max_points));

  for (const SweepBlock& block : blocks) check_block_values(block, base, file);

  // A point listed by two blocks would run twice under one key.
  std::map<std::string, std::string> block_of_key;
  for (const SweepBlock& block : blocks) {
    const std::size_t first = plan.points.size();
    expand_block(block, base, base_scenario, file, per_point_files, plan);
    for (std::size_t i = first; i < plan.points.size(); ++i) {
      const auto [it, fresh] = block_of_key.emplace(plan.points[i].key, block.name);
      if (!fresh)
        throw InputError(file, block.name,
                         fmt::format("the point '{}' is also in {}: list each combination in one block", plan.points[i].key,
                                     it->second));
    }
  }
  if (per_point_files) make_file_stems_unique(plan.points);
  return plan;
}

SweepPlan load_sweep(const std::string& path, const PlanOptions& options) {
  return plan_sweep(load_yaml_file(path), path, options);
}

StrategySpec point_strategy(const SweepPlan& plan, const SweepPoint& point) {
  StrategySpec spec = plan.variants[point.variant].strategies[point.strategy];
  if (point.seed) {
    YAML::Node options = spec.options ? YAML::Clone(spec.options) : YAML::Node(YAML::NodeType::Map);
    if (options.IsNull()) options = YAML::Node(YAML::NodeType::Map);
    options["seed"] = *point.seed;
    spec.options = options;
  }
  return spec;
}

}  // namespace placesim
