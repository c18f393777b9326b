// Fuzz target: scenario files as `placesim run` reads them: the YAML text (sim/config/yaml_fields.h
// parse_yaml_text, the same path as load_yaml_file), the scenario parser (scenarios/runner/scenario.h)
// and the sweep planner (scenarios/runner/sweep.h), which parses the base scenario and every variant.
// The point limit is kept small so that a mutated axis cannot make one input take seconds; a
// larger count must still be refused with an InputError, before anything is allocated.
#include <cstdint>
#include <string>

#include "scenarios/runner/sweep.h"
#include "sim/config/yaml_fields.h"
#include "tests/fuzz/fuzz_common.h"

using namespace placesim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return fuzz::run_one([&] {
    const YAML::Node root = parse_yaml_text(text, "fuzz.yaml");
    PlanOptions options;
    options.max_points = 64;
    const SweepPlan plan = plan_sweep(root, "fuzz.yaml", options);
    if (plan.points.size() > options.max_points) fuzz::finding("plan_sweep made more points than max_points");
    for (const SweepPoint& p : plan.points) {
      if (p.variant >= plan.variants.size()) fuzz::finding("a sweep point names a variant that does not exist");
      (void)point_strategy(plan, p);
    }
  });
}
