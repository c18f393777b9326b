// Cluster presets (topologies/presets.h): a preset builds the cluster its keys build, keys beside
// it win, unknown presets and keys are errors naming the field, the NEST presets build the
// clusters the NEST reproductions spell out, and the CLI lists them.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/config/yaml_fields.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"
#include "topologies/topology_info.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

Cluster build(const std::string& yaml) { return cluster_from_yaml(YAML::Load(yaml), "c.yaml"); }

// What a user could observe of a cluster: its description, devices, links and the pairwise view
// (of every pair up to 64 GPUs, else of the pairs from GPU 0 and to the last GPU).
std::string fingerprint(const Cluster& c) {
  std::string out = c.description + "\n" + c.fabric.type + "\n";
  out += fmt::format("nvls {} model '{}'\n", c.nvlink_sharp, c.gpu_model);
  for (const Device& d : c.devices()) out += fmt::format("{} {} {} {}\n", d.name, d.server, d.memory_bytes, d.compute_speed);
  for (const Link& l : c.links()) out += fmt::format("{} {} {} {} {}\n", l.name, l.bandwidth, l.latency, l.from, l.to);
  const int n = c.num_devices();
  for (DeviceId a = 0; a < n; ++a)
    for (DeviceId b = 0; b < n; ++b)
      if (a != b && (n <= 64 || a == 0 || b == n - 1))
        out += fmt::format("{} {} {}\n", c.bandwidth(a, b), c.latency(a, b), c.num_paths(a, b));
  return out;
}

// The preset's keys written out as a cluster mapping, with `type`.
std::string expanded_yaml(const ClusterPreset& p) {
  std::string out = "{type: " + p.type;
  for (const PresetFigure& fig : p.figures) out += fmt::format(", {}: {}", fig.key, fig.value);
  return out + "}";
}

}  // namespace

TEST(Presets, EachPresetBuildsTheClusterOfItsKeys) {
  ASSERT_GE(preset_registry().size(), 4u);
  for (const ClusterPreset& p : preset_registry()) {
    SCOPED_TRACE(p.name);
    ASSERT_NE(topology_registry().find(p.type), nullptr);
    for (const PresetFigure& fig : p.figures) EXPECT_FALSE(fig.source.empty()) << fig.key;
    const Cluster preset = build(fmt::format("{{preset: {}}}", p.name));
    const Cluster keys = build(expanded_yaml(p));
    EXPECT_EQ(fingerprint(preset), fingerprint(keys));
    ASSERT_NE(preset.recipe, nullptr);
    EXPECT_EQ(preset.recipe->type, p.type);
  }
}

// DGX figures: 8 GPUs of 80 GiB, one NIC per GPU on its rail, NVLink per GPU each direction.
TEST(Presets, DgxPresetsCarryTheirFigures) {
  const Cluster h = build("{preset: dgx-h100, servers: 2}");
  EXPECT_EQ(h.num_devices(), 16);
  EXPECT_EQ(h.fabric.type, "rail-optimized");
  EXPECT_TRUE(h.nvlink_sharp);
  EXPECT_EQ(h.gpu_model, "H100-SXM5-80GB");
  EXPECT_DOUBLE_EQ(h.device(0).memory_bytes, 80.0 * (1L << 30));
  EXPECT_DOUBLE_EQ(h.bandwidth(0, 1), 450e9);  // NVLink
  EXPECT_DOUBLE_EQ(h.bandwidth(0, 8), 50e9);   // one 400 Gb/s NIC
  // GPU 0 -> GPU 8 (rail 0 to rail 0, one leaf): NIC 0.6 us + switch 0.15 us + NIC 0.6 us.
  EXPECT_NEAR(h.latency(0, 8), 1.35e-6, 1e-15);
  // GPU 0 -> GPU 9 with PXN adds the NVLink hop (2 x 0.3 us).
  EXPECT_NEAR(h.latency(0, 9), 1.95e-6, 1e-15);
  EXPECT_NE(h.description.find("H100-SXM5-80GB"), std::string::npos) << h.description;

  const Cluster a = build("{preset: dgx-a100, servers: 2}");
  EXPECT_FALSE(a.nvlink_sharp);
  EXPECT_EQ(a.gpu_model, "A100-SXM4-80GB");
  EXPECT_DOUBLE_EQ(a.bandwidth(0, 1), 300e9);
  EXPECT_DOUBLE_EQ(a.bandwidth(0, 8), 25e9);  // 200 Gb/s HDR
  EXPECT_NEAR(a.latency(0, 8), 1.33e-6, 1e-15);
  // A restricted cluster keeps what collectives read.
  const std::vector<DeviceId> some = {0, 1, 8};
  const Cluster r = h.restricted_to(some);
  EXPECT_TRUE(r.nvlink_sharp);
  EXPECT_EQ(r.gpu_model, "H100-SXM5-80GB");
}

TEST(Presets, KeysBesideThePresetWin) {
  const Cluster c = build("{preset: dgx-h100, servers: 3, nic_bandwidth: 100Gbps, nvlink_sharp: false, pxn: false}");
  EXPECT_EQ(c.num_servers(), 3);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 8), 12.5e9);
  EXPECT_FALSE(c.nvlink_sharp);
  EXPECT_EQ(c.gpu_model, "H100-SXM5-80GB");  // kept from the preset
  EXPECT_EQ(c.route(0, 9).size(), 4u);       // no PXN: NIC 0 up, leaf 0 -> spine -> leaf 1, NIC 1 down
  // The same type may be repeated; another type may not.
  EXPECT_EQ(build("{preset: dgx-a100, type: rail-optimized, servers: 1}").num_devices(), 8);
  EXPECT_INPUT_ERROR(build("{preset: dgx-a100, type: fat-tree}"), "cluster.type", "c.yaml", "rail-optimized");
  // An error in a key given beside the preset names its line.
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("preset: dgx-h100\nservers: 0\n"), "c.yaml"), "cluster.servers (line 2)");
}

TEST(Presets, UnknownPresetsAndKeysNameTheField) {
  EXPECT_INPUT_ERROR(build("{preset: dgx-h200}"), "cluster.preset (line 1)", "c.yaml", "unknown cluster preset 'dgx-h200'",
                     "did you mean 'dgx-h100'", "dgx-a100, dgx-h100, nest-tpuv4-fat-tree, nest-h100-spine-leaf");
  EXPECT_INPUT_ERROR(build("{preset: dgx-h100, nic_bandwith: 1GB/s}"), "cluster.nic_bandwith", "unknown key",
                     "did you mean 'nic_bandwidth'");
  EXPECT_INPUT_ERROR(build("{preset: [dgx-h100]}"), "cluster.preset");
}

// The NEST presets build the clusters scenarios/papers/nest-experiment1*.yaml spell out.
TEST(Presets, NestPresetsBuildTheNestReproductionsClusters) {
  const std::string papers = std::string(PLACESIM_TEST_SOURCE_DIR) + "/scenarios/papers/";
  const YAML::Node fat = load_yaml_file(papers + "nest-experiment1.yaml")["cluster"];
  EXPECT_EQ(fingerprint(cluster_from_yaml(fat, "nest-experiment1.yaml")), fingerprint(build("{preset: nest-tpuv4-fat-tree}")));
  // The 128-device spine-leaf of the contention reproduction's sweep.
  const YAML::Node sweep = load_yaml_file(papers + "nest-experiment1-contention.yaml")["sweep"];
  YAML::Node spine_leaf;
  for (const YAML::Node& item : sweep)
    if (item["cluster"] && item["cluster"][0]["label"].as<std::string>() == "spine-leaf-128") spine_leaf = YAML::Clone(item["cluster"][0]);
  ASSERT_TRUE(spine_leaf.IsMap());
  spine_leaf.remove("label");
  EXPECT_EQ(fingerprint(cluster_from_yaml(spine_leaf, "contention.yaml")), fingerprint(build("{preset: nest-h100-spine-leaf}")));
  // And at 1,024 devices, as Experiment 3 runs it.
  YAML::Node big = YAML::Clone(spine_leaf);
  big.remove("leaves");
  big["servers"] = 128;
  EXPECT_EQ(fingerprint(cluster_from_yaml(big, "big.yaml")), fingerprint(build("{preset: nest-h100-spine-leaf, servers: 128}")));
}

TEST(Presets, CliListsPresetsAndReadsPresetClusterFiles) {
  std::string out;
  ASSERT_EQ(testutil::run_cli("topology presets --json", out), 0) << out;
  const nlohmann::json j = nlohmann::json::parse(out);
  ASSERT_EQ(j.size(), preset_registry().size());
  EXPECT_EQ(j[1]["name"], "dgx-h100");
  EXPECT_EQ(j[1]["type"], "rail-optimized");
  EXPECT_EQ(j[1]["keys"]["nvlink_bandwidth"], "450GB/s");
  for (const auto& p : j)
    for (const auto& fig : p["figures"]) EXPECT_FALSE(fig["source"].get<std::string>().empty()) << p["name"];
  ASSERT_EQ(testutil::run_cli("topology presets", out), 0) << out;
  EXPECT_NE(out.find("dgx-a100 (type: rail-optimized)"), std::string::npos) << out;
  EXPECT_NE(out.find("source: "), std::string::npos) << out;

  const fs::path dir = testutil::fresh_temp_dir("presets-cli");
  std::ofstream(dir / "h100.yaml") << "cluster:\n  preset: dgx-h100\n  servers: 2\n";
  ASSERT_EQ(testutil::run_cli("topology info " + (dir / "h100.yaml").string(), out), 0) << out;
  EXPECT_NE(out.find("GPUs              16 in 2 servers"), std::string::npos) << out;
  EXPECT_NE(out.find("fabric            rail-optimized"), std::string::npos) << out;
  std::ofstream(dir / "bad.yaml") << "cluster:\n  preset: dgx-h200\n";
  EXPECT_EQ(testutil::run_cli("topology info " + (dir / "bad.yaml").string(), out), 2) << out;
  EXPECT_NE(out.find("cluster.preset (line 2)"), std::string::npos) << out;
  EXPECT_NE(out.find("dgx-a100, dgx-h100"), std::string::npos) << out;
  fs::remove_all(dir);
}

// nvlink_sharp is a key of every server fabric and reaches the cluster.
TEST(Presets, NvlinkSharpReachesTheCluster) {
  EXPECT_FALSE(build("{type: non-blocking, servers: 2}").nvlink_sharp);
  const Cluster c = build("{type: non-blocking, servers: 2, nvlink_sharp: true, gpu_model: B200}");
  EXPECT_TRUE(c.nvlink_sharp);
  EXPECT_EQ(c.gpu_model, "B200");
  EXPECT_NE(c.description.find("x 2 B200 (NVLink 50 GB/s, NVLink SHARP)"), std::string::npos) << c.description;
}
