#pragma once
// The `python` strategy: a placement strategy written in Python, a class with
// `place(graph, cluster, deadline) -> placement`, named in a scenario like the C++ ones:
//
//   strategies:
//     - {name: python, label: mine, options: {module: my_placer, class: MyPlacer, args: {k: 3}}}
//
// It runs inside Strategy::place like every strategy (timed, its placement's length, GPUs and
// colocation classes validated), and whatever goes wrong in Python (an import error, an exception
// in place(), a return value that is not a placement) is the point's failure, with the Python
// error as its reason. The placement layer holds no Python: the placesim Python module, when it is
// imported, installs the PythonPlacer that calls into the interpreter (python/src/python_strategy.cpp).
// Without it (the placesim CLI, which does not embed Python) the strategy cannot be made, and says
// that Python strategies run from Python (`placesim.run_scenario`, docs/python.md).
#include <functional>
#include <string>
#include <vector>

#include "placement/framework/strategy.h"

namespace placesim {

struct PythonStrategyConfig {
  // Imported with importlib.import_module; empty: `class_name` was registered from Python
  // (placesim.register_strategy), in the process that runs the scenario.
  std::string module;
  std::string class_name;  // `class:`, instantiated with `args` as keyword arguments
  // Folders put in front of sys.path before the import: `path:` (relative to the scenario file),
  // and the scenario file's folder.
  std::vector<std::string> path;
  std::string args_yaml = "{}";  // `args:`, a mapping, as YAML text (Python reads it with yaml.safe_load)
  bool operator==(const PythonStrategyConfig&) const = default;
};

// What the Python side returns: a GPU per operator, and the strategy's own details (a dict it
// returned beside the placement, as JSON).
struct PythonPlacement {
  std::vector<DeviceId> placement;
  nlohmann::json details = nlohmann::json::object();
};

using PythonPlacer =
    std::function<PythonPlacement(const PythonStrategyConfig&, const Graph&, const Cluster&, const Deadline&)>;

// Installed by the placesim Python module when it is imported; empty in the CLI.
void set_python_placer(PythonPlacer placer);
bool python_placer_installed();

class PythonStrategy : public Strategy {
 public:
  explicit PythonStrategy(PythonStrategyConfig config) : Strategy("python"), config_(std::move(config)) {}
  const PythonStrategyConfig& config() const { return config_; }

 private:
  PlacementResult place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) override;
  PythonStrategyConfig config_;
};

OptionSchema<PythonStrategyConfig> python_strategy_schema();
StrategyInfo python_strategy_info();

}  // namespace placesim
