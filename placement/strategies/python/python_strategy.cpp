#include "placement/strategies/python/python_strategy.h"

#include <filesystem>
#include <fmt/format.h>

#include "sim/core/errors.h"

namespace placesim {

namespace {

PythonPlacer& installed_placer() {
  static PythonPlacer placer;
  return placer;
}

// Why the strategy cannot run here, and how to run the scenario `file` instead.
std::string needs_python(const std::string& file) {
  return fmt::format(
      "the python strategy runs strategies written in Python, which need placesim driven from Python (the placesim "
      "command does not embed Python): `PYTHONPATH=build/python python3 -c \"import placesim; "
      "print(placesim.run_scenario('{}'))\"` (docs/python.md)",
      file.empty() ? "SCENARIO.yaml" : file);
}

}  // namespace

void set_python_placer(PythonPlacer placer) { installed_placer() = std::move(placer); }
bool python_placer_installed() { return static_cast<bool>(installed_placer()); }

PlacementResult PythonStrategy::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  const PythonPlacer& placer = installed_placer();
  if (!placer) throw std::runtime_error(needs_python(""));
  PythonPlacement placed = placer(config_, graph, cluster, deadline);
  PlacementResult r;
  r.placement = std::move(placed.placement);
  r.details = std::move(placed.details);
  r.details["python_class"] = config_.module.empty() ? config_.class_name : config_.module + "." + config_.class_name;
  return r;
}

OptionSchema<PythonStrategyConfig> python_strategy_schema() {
  OptionSchema<PythonStrategyConfig> s;
  s.text("module", &PythonStrategyConfig::module,
         "the Python module to import; unset: `class` names a class registered with placesim.register_strategy", "my_placer");
  s.add({"class", "text", "the class, whose place(graph, cluster, deadline) returns a GPU per operator (required)",
         "unset", {}, "MyPlacer"},
        [](const YamlFields& f, std::string_view key, PythonStrategyConfig& c) { c.class_name = f.string(key); });
  s.add({"path", "text", "a folder to import the module from, relative to the scenario file (its own folder is searched too)",
         "unset", {}, "strategies"},
        [](const YamlFields& f, std::string_view key, PythonStrategyConfig& c) {
          const std::filesystem::path folder = f.string(key);
          const std::filesystem::path base = std::filesystem::path(f.file()).parent_path();
          c.path.insert(c.path.begin(), (folder.is_absolute() || base.empty() ? folder : base / folder).string());
        });
  s.add({"args", "mapping", "keyword arguments of the class's constructor", "{}", {}, "{k: 3}"},
        [](const YamlFields& f, std::string_view key, PythonStrategyConfig& c) {
          const YAML::Node node = f.node(key);
          if (!node.IsMap()) throw_field_error(f, key, "expected a mapping of keyword arguments, such as {k: 3}");
          YAML::Emitter out;
          out << YAML::Flow << node;
          c.args_yaml = out.c_str();
        });
  s.check([](const YamlFields& f, PythonStrategyConfig& c) {
    if (c.class_name.empty()) throw_field_error(f, "class", "expected the name of the strategy's class in the module");
    // The scenario's own folder last: its strategies live beside it.
    const std::filesystem::path base = std::filesystem::path(f.file()).parent_path();
    c.path.push_back(base.empty() ? "." : base.string());
  });
  return s;
}

StrategyInfo python_strategy_info() {
  StrategyInfo info = strategy_info<PythonStrategy>(
      "python", "a strategy written in Python: options.class of options.module places the graph (docs/python.md)",
      python_strategy_schema(), {.searches = false});
  // Made only where Python runs: the placesim command says so as bad input (exit 2) when it reads
  // the scenario, before any point runs.
  info.make = [make = info.make](const YamlFields& f) -> std::unique_ptr<Strategy> {
    std::unique_ptr<Strategy> s = make(f);
    if (!python_placer_installed()) throw InputError(f.file(), f.path(), needs_python(f.file()));
    return s;
  };
  return info;
}

}  // namespace placesim
