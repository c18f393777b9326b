// The engine registry: one line per engine. A new engine is a file with its Engine and its
// EngineInfo, plus one line here (and its #include).
#include "sim/engines/builtin_engines.h"
#include "sim/engines/engine.h"
#include "sim/engines/estimate.h"

namespace placesim {

const Registry<EngineInfo>& engine_registry() {
  static const Registry<EngineInfo> registry("engine", {
                                                          evaluator_engine(),
                                                          flow_engine(),
                                                          simgrid_engine(),
                                                          estimate_engine(),
                                                      });
  return registry;
}

}  // namespace placesim
