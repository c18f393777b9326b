#pragma once
// The registry entries of the event engines (sim/engines/builtin_engines.cpp).
#include "sim/engines/engine.h"

namespace placesim {

EngineInfo evaluator_engine();
EngineInfo flow_engine();
EngineInfo simgrid_engine();

}  // namespace placesim
