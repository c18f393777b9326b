#include "topologies/full_mesh.h"

#include <fmt/format.h>

#include "sim/core/units.h"

namespace placesim {

namespace {

// Why a larger mesh is refused (see kMaxFullMeshGpus), for the builder and the schema alike.
std::string too_many_gpus(long gpus) {
  return fmt::format(
      "a full mesh of {} GPUs would need {} dedicated links, each with its own route (gigabytes); full-mesh takes at most "
      "{} GPUs: for more, use non-blocking or nvlink-servers, whose GPU pairs share switch routes",
      gpus, gpus * (gpus - 1), kMaxFullMeshGpus);
}

}  // namespace

Cluster make_full_mesh(const FullMeshConfig& config, const ConfigSource& src) {
  fabric::require_count(src, "gpus", config.gpus, 1, kMaxClusterGpus);
  if (config.gpus > kMaxFullMeshGpus) src.fail("gpus", too_many_gpus(config.gpus));
  fabric::require_positive(src, "bandwidth", config.bandwidth);
  fabric::require_latency(src, "latency", config.latency);
  Cluster c;
  c.description = fmt::format("{} GPU{}, full mesh of dedicated {} links", config.gpus, config.gpus == 1 ? "" : "s",
                              format_bandwidth(config.bandwidth));
  c.fabric.type = "full-mesh";
  c.fabric.oversubscription = 1;
  c.fabric.notes.push_back("routing: a dedicated one-way link per ordered GPU pair");
  for (int g = 0; g < config.gpus; ++g) {
    c.add_device({fmt::format("gpu{}", g), g, config.gpu_memory});
    c.add_node({fmt::format("gpu{}", g), NodeKind::Gpu, g});
  }
  for (int a = 0; a < config.gpus; ++a)
    for (int b = 0; b < config.gpus; ++b)
      if (a != b)
        c.set_route(a, b, {c.add_link({fmt::format("gpu{}-to-gpu{}", a, b), config.bandwidth, config.latency, a, b})});
  finish_cluster(c, "full-mesh", config, src.file.empty() ? "full-mesh cluster" : src.file);
  return c;
}

TopologyType full_mesh_topology() {
  using C = FullMeshConfig;
  OptionSchema<C> s;
  s.add({"gpus", "count", fmt::format("GPUs (at most {}: every ordered pair has a link of its own)", kMaxFullMeshGpus),
         std::to_string(C{}.gpus), {}, "3"},
        [](const YamlFields& f, std::string_view key, C& c) {
          const long gpus = parse_count_option(f, key, 1, kMaxClusterGpus);
          if (gpus > kMaxFullMeshGpus) throw_field_error(f, key, too_many_gpus(gpus));
          c.gpus = static_cast<int>(gpus);
        });
  s.bandwidth("bandwidth", &C::bandwidth, "bandwidth of each one-way link", "10GB/s");
  s.duration("latency", &C::latency, "latency of each link", Range::non_negative(), "5us");
  s.bytes("gpu_memory", &C::gpu_memory, "memory of each GPU", "8GiB");
  return topology_type<C>("full-mesh", {}, "a dedicated one-way link for every ordered GPU pair", s, make_full_mesh);
}

}  // namespace placesim
