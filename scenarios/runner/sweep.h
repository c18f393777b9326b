#pragma once
// Sweeps: a scenario's `sweep:` block maps field paths to lists of values, and the scenario is run
// at every combination (the cross product). A path names a field of the scenario YAML
// (`cluster.ethernet_bandwidth`, `strategies[quickp].options.alpha`, `graph`); the value (a single
// value, or a mapping or list replacing a whole one) replaces it in the YAML tree before the
// scenario is parsed, so every field is sweepable and validated by the same parser. The path
// `strategy` instead picks which strategies run. `sweep:` may also be a list of such mappings
// (blocks): each is its own cross product, and the plan runs them one after the other, so some
// values are paired with others only (a large graph on a small cluster).
//
// A point is one run: sweep values x strategy x seed (strategies taking a `seed` option, when
// `simulation.seeds` is given) x repetition. Each point has a stable key built from those
// (`cluster.gpus=4 strategy=metis rep=0`): results are stored and resumed by key.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>
#include <yaml-cpp/yaml.h>

#include "scenarios/runner/scenario.h"

namespace placesim {

struct SweepAxis {
  std::string path;                 // "cluster.gpus", or "strategy"
  std::vector<std::string> values;  // as written; mappings and lists in YAML flow style
  std::string field;                // "sweep.cluster.gpus (line 12)", for error messages
};

struct SweepPoint {
  std::size_t index = 0;     // position in the plan (MPI rank r runs index % ranks == r)
  std::string key;           // stable identity: sweep values, strategy label, seed, repetition
  std::size_t variant = 0;   // index in SweepPlan::variants
  std::size_t strategy = 0;  // index in that variant's strategies
  std::optional<long> seed;  // overrides the strategy's `seed` option
  int repetition = 0;
  // placement-<stem>.json, trace-<stem>.json: the label alone when the scenario has no sweep, seeds
  // or repetitions; else the label, each swept value, the seed and the repetition
  // (`mcmc_gpus=4_bandwidth=10GBps_seed=1_rep=0`), and a hash of the key only where two points
  // would share a name or the name would be over 120 characters.
  std::string file_stem;
};

struct SweepPlan {
  std::string file, name, output;
  std::vector<SweepAxis> axes;  // every block's, in the order written
  // One scenario per combination of the values of the YAML axes (all but `strategy`), with the
  // values of each (in the order of `axes`, `strategy` left out).
  std::vector<Scenario> variants;
  std::vector<std::vector<std::pair<std::string, std::string>>> variant_values;
  std::vector<std::string> variant_graph;  // the variant's `graph:` node as YAML: equal means same graph
  std::vector<SweepPoint> points;
};

// How many points a scenario has, counted from its axes before any point exists.
struct SweepCount {
  std::size_t points = 0;  // saturates at SIZE_MAX
  // False when only a lower bound was counted: the combinations of the axes under `strategies`
  // alone were too many to look at, each of them giving at least one point.
  bool exact = true;
  // How the count comes about, e.g. "3 values of cluster.gpus x 2 of cluster.bandwidth x 4 points
  // each (2 strategies, 2 seeds)".
  std::string breakdown;
};

// The largest plan made unless asked for more (`placesim run --max-points`): the points, their
// scenarios and clusters are all held in memory, and a typo in a sweep can ask for millions.
constexpr std::size_t kDefaultMaxPoints = 100'000;

struct PlanOptions {
  std::size_t max_points = kDefaultMaxPoints;
  // Called with the count as soon as it is known, before the points are made (the CLI says it).
  std::function<void(const SweepCount&)> counted;
  // Called with the base scenario once it is read, before the points are counted: the CLI checks
  // its overrides (--engine) there, so that a refusal comes before "planning N points".
  std::function<void(const Scenario&)> read;
};

// Expands a scenario YAML tree into its points; a scenario without a sweep gives one point per
// strategy (per seed and repetition). Every error names the file and the sweep path. The points
// are counted first (the cross product of the axes, times each combination's strategies, seeds
// and repetitions); more than options.max_points is an InputError naming the count and
// --max-points, raised before anything is allocated for them.
SweepPlan plan_sweep(const YAML::Node& root, const std::string& file, const PlanOptions& options = {});
SweepPlan load_sweep(const std::string& path, const PlanOptions& options = {});

// Replaces the field at `path` in `root` by `value` (creating missing mapping keys, which the
// scenario parser then validates). Throws InputError naming `field` when the path cannot be
// followed (a list index out of range, an unknown label with the nearest suggested, a value where
// a mapping or list is needed) or a single value would replace a mapping or a list.
void apply_sweep_override(YAML::Node& root, const std::string& path, const YAML::Node& value, const std::string& file,
                          const std::string& field);

// The strategy spec a point runs: the variant's, with the point's seed in its options.
StrategySpec point_strategy(const SweepPlan& plan, const SweepPoint& point);

}  // namespace placesim
