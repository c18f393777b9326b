#include "sim/plans/plan_compiler.h"

#include <fmt/format.h>

namespace placesim::plans {

void PlanCompiler::add_optimizer_steps() {
  for (int d = 0; d < replicas_; ++d)
    for (int r = 0; r < pp_; ++r)
      for (int t = 0; t < at_.width(r); ++t) {
        double seconds = 0;
        for (int p = r; p < stages_; p += pp_)
          for (int k = first_layer(p); k < at_.stage_end(p); ++k) seconds += model_of(r).layers[k].optimizer_s;
        if (plan_.zero >= 1) seconds /= dp_;
        if (seconds <= 0) continue;
        const DeviceId on = gpu(d, r, t);
        const OpId step = graph().add({fmt::format("d{}.p{}.t{}.optimizer", d, r, t), "optimizer", seconds, 0.0}, on);
        graph().depend(last_compute_.at(on), step);
        for (OpId end : reduction_ends_[on]) graph().depend(end, step);
      }
}

}  // namespace placesim::plans
