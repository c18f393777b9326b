// The cluster presets: one entry per preset, each figure with its public source.
#include "topologies/presets.h"

#include <fmt/format.h>

#include "sim/config/yaml_fields.h"
#include "sim/core/errors.h"

namespace placesim {

namespace {

// Sources, cited by the figures below (and in scenarios/README.md, "Cluster presets").
constexpr const char* kDgxA100 =
    "NVIDIA DGX A100 User Guide, hardware overview (docs.nvidia.com/dgx/dgxa100-user-guide): 8 x A100 80 GB SXM4 on six "
    "second-generation NVSwitches, 600 GB/s NVLink per GPU both directions together (300 GB/s each way), 8 x single-port "
    "ConnectX-6 HDR 200 Gb/s InfiniBand for the compute fabric, one per GPU";
constexpr const char* kDgxH100 =
    "NVIDIA DGX H100 User Guide, introduction (docs.nvidia.com/dgx/dgxh100-user-guide): 8 x H100 80 GB SXM5 on four "
    "third-generation NVSwitches, 900 GB/s NVLink per GPU both directions together (450 GB/s each way), 8 x ConnectX-7 NDR "
    "400 Gb/s InfiniBand for the compute fabric, one per GPU";
constexpr const char* kNvls =
    "NVIDIA Hopper architecture in depth (developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth): the "
    "third-generation NVSwitch reduces in the switch (NVLink SHARP); A100's second-generation NVSwitch does not";
constexpr const char* kSuperPodA100 =
    "NVIDIA DGX SuperPOD reference architecture, DGX A100 (RA-09950-001): scalable units of 20 DGX A100; rail-optimized HDR "
    "compute fabric, NIC r of every node of a unit on the unit's leaf r (QM8790, 40 ports)";
constexpr const char* kSuperPodA100Radix =
    "derived from the 40-port HDR switch (RA-09950-001): a leaf has 20 ports down (its unit's 20 nodes) and 20 up, one to "
    "each of 20 spines; a spine's 40 ports reach 40 leaves, 5 units of 8 rails, per two-tier pod (more pods: a non-blocking "
    "core tier)";
constexpr const char* kSuperPodH100 =
    "NVIDIA DGX SuperPOD reference architecture, DGX H100 (RA-11333-001, docs.nvidia.com/dgx-superpod): scalable units of "
    "32 DGX H100; rail-optimized NDR compute fabric of QM9700 (64-port) leaves and spines, NIC r of every node of a unit "
    "on the unit's leaf r";
constexpr const char* kSuperPodTable =
    "DGX SuperPOD reference architecture, larger component counts (docs.nvidia.com/dgx-superpod, B200 edition, same "
    "32-node units and 64-port NDR switches): 8 units on 64 leaves and 32 spines in two tiers, a core tier from 16 units";
constexpr const char* kNvlinkLatency =
    "NCCL src/graph/tuning.cc (NVIDIA's published tuning model): hwLat[NVLINK][Ring][LL] = 0.6 us per NVLink hop, GPU -> "
    "NVSwitch -> GPU; split over the hop's two links (up, down). NVIDIA publishes no hardware NVLink latency";
constexpr const char* kConnectX6 =
    "NVIDIA ConnectX-6 adapter user manual, introduction (docs.nvidia.com/networking/display/ConnectX6EN/Introduction): "
    "sub-600 ns latency";
constexpr const char* kConnectX7 =
    "no latency is published for ConnectX-7 (user manual, docs.nvidia.com/networking/display/ConnectX7VPI); ConnectX-6's "
    "sub-600 ns (ConnectX-6 user manual, introduction) is kept";
constexpr const char* kQuantumHdr =
    "NVIDIA Quantum QM8700/QM8790 HDR switches (QM87xx user manual introduction and product brief): 130 ns port-to-port "
    "latency";
constexpr const char* kQuantum2Ndr =
    "NVIDIA publishes no port-to-port latency for Quantum-2 QM9700 (QM97xx user manual); reseller material (router-switch.com, "
    "'Quantum-2 QM9700 vs Spectrum-4 SN5400') gives under 150 ns for the Quantum-2 ASIC: 150 ns taken";
constexpr const char* kNestFatTree =
    "NEST (github.com/scai-tech/Nest @ 3e163ad) tpuv4_fatTree, as ../shared/workloads/nest/clusters.json records it "
    "(run_eval.sh, nest/Estimator/configs.py): 8 devices per node at 900 GiB/s, 4 nodes per rack at 100 GiB/s, racks, "
    "64 GiB HBM, 100/200/300 us per level; built as scenarios/papers/nest-experiment1.yaml builds it (a k = 8 fat tree, "
    "each hop's latency set so a path adds up to NEST's per-level latency)";
constexpr const char* kNestSpineLeaf =
    "NEST (github.com/scai-tech/Nest @ 3e163ad) h100_spineLeaf, as ../shared/workloads/nest/clusters.json records it "
    "(scripts/h100_spineLeaf/run_eval.sh: 900, 12.5, 50 GB/s per level): 8 GPUs per node at 900 GiB/s, 4 nodes per rack "
    "at 12.5 GiB/s, 90 GiB HBM, 100/200/300 us per level; built as scenarios/papers/nest-experiment1-contention.yaml "
    "builds it (4 servers per leaf, 4 spines)";

constexpr const char* kNcclModel =
    "placesim's NCCL 2.18 model, fitted once to nccl-tests on one 8 x H100 server (docs/collectives.md); the same costs for "
    "every preset";

ClusterPreset preset(std::string name, std::string description, std::string type, std::vector<PresetFigure> figures) {
  ClusterPreset p;
  p.name = std::move(name);
  p.description = std::move(description);
  p.type = std::move(type);
  p.figures = std::move(figures);
  return p;
}

ClusterPreset dgx_a100() {
  return preset("dgx-a100", "DGX A100 servers (8 x A100-SXM4-80GB, NVSwitch, 8 x HDR 200 Gb/s) on the DGX SuperPOD rail-optimized fat tree",
                "rail-optimized",
                {{"servers", "20", kSuperPodA100},
                 {"gpu_model", "A100-SXM4-80GB", kDgxA100},
                 {"gpus_per_server", "8", kDgxA100},
                 {"gpu_memory", "80GiB", kDgxA100},
                 {"nvlink_bandwidth", "300GB/s", kDgxA100},
                 {"nvlink_latency", "300ns", kNvlinkLatency},
                 {"nvlink_sharp", "false", kNvls},
                 {"collectives", "nccl", kNcclModel},
                 {"gpus_per_nic", "1", kDgxA100},
                 {"nic_bandwidth", "200Gbps", kDgxA100},
                 {"nic_latency", "600ns", kConnectX6},
                 {"switch_latency", "130ns", kQuantumHdr},
                 {"servers_per_unit", "20", kSuperPodA100},
                 {"units_per_pod", "5", kSuperPodA100Radix},
                 {"spines", "20", kSuperPodA100Radix}});
}

ClusterPreset dgx_h100() {
  return preset("dgx-h100",
                "DGX H100 servers (8 x H100-SXM5-80GB, NVLink4 with NVLink SHARP, 8 x NDR 400 Gb/s) on the DGX SuperPOD rail-optimized "
                "fat tree",
                "rail-optimized",
                {{"servers", "32", kSuperPodH100},
                 {"gpu_model", "H100-SXM5-80GB", kDgxH100},
                 {"gpus_per_server", "8", kDgxH100},
                 {"gpu_memory", "80GiB", kDgxH100},
                 {"nvlink_bandwidth", "450GB/s", kDgxH100},
                 {"nvlink_latency", "300ns", kNvlinkLatency},
                 {"nvlink_sharp", "true", kNvls},
                 {"collectives", "nccl", kNcclModel},
                 {"gpus_per_nic", "1", kDgxH100},
                 {"nic_bandwidth", "400Gbps", kDgxH100},
                 {"nic_latency", "600ns", kConnectX7},
                 {"switch_latency", "150ns", kQuantum2Ndr},
                 {"servers_per_unit", "32", kSuperPodH100},
                 {"units_per_pod", "8", kSuperPodTable},
                 {"spines", "32", kSuperPodTable}});
}

ClusterPreset nest_fat_tree() {
  return preset("nest-tpuv4-fat-tree", "NEST's tpuv4_fatTree cluster (Experiments 1 and 2): servers of 8 devices on a k = 8 fat tree",
                "fat-tree",
                {{"k", "8", kNestFatTree},
                 {"servers", "16", kNestFatTree},
                 {"gpus_per_server", "8", kNestFatTree},
                 {"gpu_memory", "64GiB", kNestFatTree},
                 {"nvlink_bandwidth", "900GiB/s", kNestFatTree},
                 {"nvlink_latency", "50us", kNestFatTree},
                 {"nic_bandwidth", "100GiB/s", kNestFatTree},
                 {"nic_latency", "100us", kNestFatTree},
                 {"aggregation_latency", "50us", kNestFatTree}});
}

ClusterPreset nest_spine_leaf() {
  return preset("nest-h100-spine-leaf", "NEST's h100_spineLeaf cluster (Experiment 3): servers of 8 H100 on leaves of 4 under 4 spines",
                "spine-leaf",
                {{"servers", "16", kNestSpineLeaf},
                 {"servers_per_leaf", "4", kNestSpineLeaf},
                 {"spines", "4", kNestSpineLeaf},
                 {"gpus_per_server", "8", kNestSpineLeaf},
                 {"gpu_memory", "90GiB", kNestSpineLeaf},
                 {"nvlink_bandwidth", "900GiB/s", kNestSpineLeaf},
                 {"nvlink_latency", "50us", kNestSpineLeaf},
                 {"nic_bandwidth", "12.5GiB/s", kNestSpineLeaf},
                 {"nic_latency", "100us", kNestSpineLeaf},
                 {"uplink_latency", "50us", kNestSpineLeaf}});
}

}  // namespace

const Registry<ClusterPreset>& preset_registry() {
  static const Registry<ClusterPreset> registry("cluster preset", {
      dgx_a100(),
      dgx_h100(),
      nest_fat_tree(),
      nest_spine_leaf(),
  });
  return registry;
}

YAML::Node expand_preset(const YAML::Node& node, const std::string& file, const std::string& path) {
  const YamlFields f(node, file, path);
  const ClusterPreset& p = preset_registry().get(f.string("preset"), file, f.field("preset"));
  if (f.has("type") && f.string("type") != p.type)
    throw InputError(file, f.field("type"),
                     fmt::format("the preset '{}' is a {} cluster; give its keys beside `preset:` without `type:`, or drop "
                                 "`preset:`",
                                 p.name, p.type));
  YAML::Node out(YAML::NodeType::Map);
  out["type"] = p.type;
  for (const PresetFigure& fig : p.figures) out[fig.key] = fig.value;
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (key == "preset" || key == "type") continue;
    if (key.empty()) throw InputError(file, path, "expected keys that are names, got a list or mapping as a key");
    out[key] = kv.second;  // the user's key wins, and keeps its line for errors
  }
  return out;
}

nlohmann::ordered_json presets_to_json() {
  return preset_registry().to_json([](const ClusterPreset& p, nlohmann::ordered_json& j) {
    j["type"] = p.type;
    nlohmann::ordered_json keys = nlohmann::ordered_json::object(), figures = nlohmann::ordered_json::array();
    for (const PresetFigure& fig : p.figures) {
      keys[fig.key] = fig.value;
      figures.push_back({{"key", fig.key}, {"value", fig.value}, {"source", fig.source}});
    }
    j["keys"] = std::move(keys);
    j["figures"] = std::move(figures);
  });
}

std::string format_presets() {
  std::string out = "Cluster presets (`cluster: {preset: NAME, servers: N}`; any key beside `preset` overrides the preset's):\n";
  for (const ClusterPreset& p : preset_registry()) {
    out += fmt::format("\n{} (type: {})\n  {}\n", p.name, p.type, p.description);
    for (const PresetFigure& fig : p.figures) out += fmt::format("    {}: {}\n        source: {}\n", fig.key, fig.value, fig.source);
  }
  return out;
}

}  // namespace placesim
