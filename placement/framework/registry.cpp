// The strategy and planner registries: one line per strategy. A new strategy (or planner) is a new
// folder under placement/ plus one line here.
#include "placement/strategies/baechi/baechi.h"
#include "placement/strategies/celeritas/celeritas.h"
#include "placement/strategies/expert/expert.h"
#include "placement/strategies/heft/heft.h"
#include "placement/strategies/max_load/max_load.h"
#include "placement/strategies/mcmc/mcmc.h"
#include "placement/planners/mcmc_plan/mcmc_plan.h"
#include "placement/planners/megatron/megatron.h"
#include "placement/strategies/metis/metis_strategy.h"
#include "placement/planners/nest/nest.h"
#include "placement/planners/search/search_planner.h"
#include "placement/strategies/placeto/placeto.h"
#include "placement/framework/planner.h"
#include "placement/strategies/python/python_strategy.h"
#include "placement/strategies/quickp/quickp.h"
#include "placement/strategies/random/random.h"
#include "placement/strategies/round_robin/round_robin.h"
#include "placement/strategies/single_device/single_device.h"
#include "placement/framework/strategy.h"

namespace placesim {

const Registry<StrategyInfo>& strategy_registry() {
  static const Registry<StrategyInfo> registry("strategy", {
      single_device_strategy_info(),
      round_robin_strategy_info(),
      random_strategy_info(),
      mcmc_strategy_info(),
      metis_strategy_info(),
      heft_strategy_info(),
      max_load_strategy_info(),
      expert_strategy_info(),
      m_topo_strategy_info(),
      m_etf_strategy_info(),
      m_sct_strategy_info(),
      quickp_strategy_info(),
      order_place_strategy_info(),
      celeritas_strategy_info(),
      placeto_greedy_strategy_info(),
      python_strategy_info(),  // a strategy written in Python: made where the placesim Python module runs
#ifdef PLACESIM_HAVE_TORCH
      placeto_strategy_info(),  // needs LibTorch
#endif
  });
  return registry;
}

const Registry<PlannerInfo>& planner_registry() {
  static const Registry<PlannerInfo> registry("planner", {
      megatron_planner_info(),
      nest_planner_info(),
      nest_unaware_planner_info(),
      mcmc_plan_planner_info(),
      search_planner_info(),
  });
  return registry;
}

}  // namespace placesim
