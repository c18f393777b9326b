#include "sim/config/plan_options.h"

#include <cmath>

#include "sim/core/errors.h"

namespace placesim {

OptionSchema<DataParallelConfig> data_parallel_schema() {
  OptionSchema<DataParallelConfig> s;
  s.count("replicas", &DataParallelConfig::replicas,
          "copies of the placed graph, each on GPUs / replicas consecutive GPUs (required)", 1, 1 << 16, "4");
  s.choice("algorithm", &DataParallelConfig::algorithm,
           collective_algorithm_names(CollectiveOp::AllReduce),
           "all-reduce algorithm of the gradients across replicas", "halving-doubling");
  s.count("chunks", &DataParallelConfig::chunks, "pieces per message of each all-reduce, pipelined", 1, 1 << 16, "4");
  s.add({"bucket_bytes", "bytes",
         "gradients of a communicator reduced together until a bucket holds this much (PyTorch DDP's bucket_cap_mb); "
         "0: one all-reduce per gradient",
         default_text_bytes(DataParallelConfig{}.bucket_bytes), {}, "0"},
        [](const YamlFields& f, std::string_view k, DataParallelConfig& c) {
          const double v = f.string(k) == "0" ? 0.0 : f.bytes_or(k, -1);
          if (!(v >= 0) || !std::isfinite(v))
            throw InputError(f.file(), f.field(k), "expected 0 or a size such as 25MiB");
          c.bucket_bytes = v;
        });
  s.check([](const YamlFields& f, DataParallelConfig&) {
    if (!f.has("replicas")) throw InputError(f.file(), f.field("replicas"), "expected the number of replicas, e.g. replicas: 4");
  });
  return s;
}

}  // namespace placesim
