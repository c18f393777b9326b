#pragma once
// The option schemas of plain configs that live in the simulator's core rooms, which build without
// YAML: the config struct stays beside its code, its keys are declared here, once.
#include "sim/config/options.h"
#include "sim/plans/data_parallel.h"

namespace placesim {

// `data_parallel:` of a placement strategy (scenarios/README.md).
OptionSchema<DataParallelConfig> data_parallel_schema();

}  // namespace placesim
