// Large inputs: the paths that were quadratic or unbounded, checked for what
// they produce. Their speed and memory are measured in bench/bench_scale.cpp and
// bench/bench_topology.cpp, never timed here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "sim/io/placement_io.h"
#include "tests/test_util.h"

using namespace placesim;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("placesim-test-scale-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Names in an order that is not sorted, so that a writer going through a sorted map would show.
Graph shuffled_chain(int n) {
  std::vector<int> label(n);
  for (int i = 0; i < n; ++i) label[i] = i;
  std::shuffle(label.begin(), label.end(), std::mt19937(3));
  Graph g;
  for (int i = 0; i < n; ++i) g.add_operator({"op" + std::to_string(label[i]), "t", 1e-6, 1});
  for (int i = 1; i < n; ++i) g.add_tensor(i - 1, i, 8);
  g.finalize("test");
  return g;
}

}  // namespace

// --- Item 8: writing a placement file streams it in operator order (it was quadratic). ---

TEST(PlacementFile, LargeGraphRoundTripsAndKeepsOperatorOrder) {
  const int n = 120000;
  const Graph g = shuffled_chain(n);
  std::vector<DeviceId> placement(n);
  for (int i = 0; i < n; ++i) placement[i] = (i * 7919) % 13;
  const fs::path file = scratch("placement") / "placement.json";
  save_placement(g, placement, file.string());

  EXPECT_EQ(load_placement(g, file.string()), placement);
  // The object lists the operators in the graph's order, with their GPUs (read with SAX:
  // ordered_json's parse is itself quadratic in the keys).
  struct Entries : nlohmann::json_sax<nlohmann::json> {
    int depth = 0;
    std::string last_key;
    std::vector<std::pair<std::string, long>> entries;
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(static_cast<long>(v)); }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return ++depth > 0; }
    bool end_object() override { return --depth >= 0; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool key(string_t& k) override { last_key = k; return true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
    bool value(long v) {
      if (depth == 2) entries.emplace_back(last_key, v);
      return true;
    }
  } sax;
  ASSERT_TRUE(nlohmann::json::sax_parse(read_text(file), &sax));
  ASSERT_EQ(sax.entries.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(sax.entries[i].first, g.op(i).name) << "entry " << i;
    ASSERT_EQ(sax.entries[i].second, placement[i]) << "entry " << i;
  }
  const nlohmann::json j = nlohmann::json::parse(read_text(file));
  EXPECT_EQ(j["format"], "placesim-placement");
  EXPECT_EQ(j["version"], 1);
}

// The streamed text is byte for byte what the ordered_json writer gave (files written before stay
// comparable), names needing JSON escapes included.
TEST(PlacementFile, SameTextAsTheOrderedJsonWriter) {
  Graph g;
  for (const char* name : {"b", "a \"quoted\"", "tab\there", "back\\slash", "ctl\x01", "\xc3\xbc" "ber", "z"})
    g.add_operator({name, "t", 1e-6, 1});
  g.finalize("test");
  const std::vector<DeviceId> placement{3, 0, 1, 2, 10, 0, 1};
  const fs::path dir = scratch("placement-text");
  save_placement(g, placement, (dir / "p.json").string());

  nlohmann::ordered_json expected;
  expected["format"] = "placesim-placement";
  expected["version"] = 1;
  nlohmann::ordered_json map = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < placement.size(); ++i) map[g.op(static_cast<OpId>(i)).name] = placement[i];
  expected["placement"] = std::move(map);
  EXPECT_EQ(read_text(dir / "p.json"), expected.dump(1) + "\n");
  EXPECT_EQ(load_placement(g, (dir / "p.json").string()), placement);

  Graph empty;
  empty.finalize("test");
  save_placement(empty, {}, (dir / "empty.json").string());
  nlohmann::ordered_json none;
  none["format"] = "placesim-placement";
  none["version"] = 1;
  none["placement"] = nlohmann::ordered_json::object();
  EXPECT_EQ(read_text(dir / "empty.json"), none.dump(1) + "\n");
}

// --- Item 10: full-mesh holds a link and a route per ordered pair, so its size is capped. ---

TEST(FullMeshScale, LargestMeshBuildsWithTheRightView) {
  FullMeshConfig cfg;
  cfg.gpus = kMaxFullMeshGpus;
  cfg.bandwidth = 25e9;
  cfg.latency = 2e-6;
  const Cluster c = make_full_mesh(cfg);
  ASSERT_EQ(c.num_devices(), kMaxFullMeshGpus);
  EXPECT_EQ(c.links().size(), static_cast<std::size_t>(kMaxFullMeshGpus) * (kMaxFullMeshGpus - 1));
  for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}, std::pair{kMaxFullMeshGpus - 1, 0}, std::pair{517, 42}}) {
    SCOPED_TRACE(fmt::format("{} -> {}", a, b));
    ASSERT_EQ(c.num_paths(a, b), 1);
    const auto route = c.route(a, b);
    ASSERT_EQ(route.size(), 1u);
    const Link& link = c.link(route[0]);
    EXPECT_EQ(link.name, fmt::format("gpu{}-to-gpu{}", a, b));
    EXPECT_EQ(c.nodes()[link.from].name, fmt::format("gpu{}", a));
    EXPECT_EQ(c.nodes()[link.to].name, fmt::format("gpu{}", b));
    EXPECT_EQ(c.bandwidth(a, b), 25e9);
    EXPECT_EQ(c.latency(a, b), 2e-6);
    EXPECT_DOUBLE_EQ(c.transfer_time(a, b, 50e9), 2.0 + 2e-6);
  }
  // Dedicated links: the two directions of a pair, and two pairs, share none.
  EXPECT_NE(c.route(3, 4)[0], c.route(4, 3)[0]);
  EXPECT_NE(c.route(3, 4)[0], c.route(3, 5)[0]);
}

TEST(FullMeshScale, LargerMeshesAreRefusedSayingWhy) {
  for (int gpus : {kMaxFullMeshGpus + 1, 4096}) {
    SCOPED_TRACE(gpus);
    const std::string links = std::to_string(static_cast<long>(gpus) * (gpus - 1));
    EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load(fmt::format("type: full-mesh\ngpus: {}\n", gpus)), "s.yaml"),
                       "cluster.gpus", "s.yaml", links + " dedicated links",
                       fmt::format("at most {} GPUs", kMaxFullMeshGpus), "non-blocking");
    FullMeshConfig cfg;
    cfg.gpus = gpus;
    EXPECT_INPUT_ERROR(make_full_mesh(cfg), "gpus", links + " dedicated links");
  }
  // Beyond every fabric's limit, the usual range error.
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("type: full-mesh\ngpus: 300000\n"), "s.yaml"), "cluster.gpus",
                     fmt::format("from 1 to {}", kMaxClusterGpus));
}
