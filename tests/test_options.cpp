// Options declared once (sim/config/options.h): the schema mechanism itself, and, for every option of every
// registered strategy and fabric, that its documented example parses and takes effect.
//
// "Takes effect" is judged on what a user sees: for a strategy, the placement or the report (minus
// its timing figures) differs from the defaults' on a graph and cluster where the option matters;
// for a fabric, the cluster built (devices, links, routes, the pairwise view) differs. Options whose
// effect needs a special setting say so in `kSpecial`, with the setting.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>

#include "placement/strategies/mcmc/mcmc.h"
#include "placement/strategies/quickp/quickp.h"
#include "placement/framework/portfolio.h"
#include "placement/framework/strategy.h"
#include "sim/models/builtin_graphs.h"
#include "sim/core/errors.h"
#include "sim/models/zoo.h"
#include "sim/config/options.h"
#include "tests/test_util.h"
#include "topologies/fabrics.h"

using namespace placesim;

namespace {

// ---------------------------------------------------------------------------------------------
// The mechanism, on a hand-made config.

enum class Colour { Red, Green, Blue };
constexpr EnumName<Colour> kColourNames[] = {{Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Blue, "blue"}};

struct Toy {
  double speed = 2.5;
  long count = 3;
  bool fast = false;
  Colour colour = Colour::Green;
  double wait_s = 0.5;
  std::optional<double> limit;
  bool operator==(const Toy&) const = default;
};

OptionSchema<Toy> toy_schema() {
  OptionSchema<Toy> s;
  s.number("speed", &Toy::speed, "how fast", Range::positive(), "4");
  s.count("count", &Toy::count, "how many", 1, 10, "7");
  s.flag("fast", &Toy::fast, "go fast");
  s.choice<Colour>("colour", &Toy::colour, kColourNames, "which colour");
  s.duration("wait", &Toy::wait_s, "how long", Range::non_negative(), "2ms");
  s.optional_number("limit", &Toy::limit, "a cap", Range::closed(0, 1), "0.25");
  s.check([](const YamlFields& f, Toy& t) {
    if (t.fast && t.count > 5) throw_field_error(f, "count", "fast allows at most 5");
  });
  return s;
}

Toy parse_toy(const std::string& yaml) { return toy_schema().parse(YamlFields(YAML::Load(yaml), "t.yaml", "toy")); }

TEST(OptionSchema, DefaultsComeFromTheStructAndValuesFromTheMapping) {
  EXPECT_EQ(parse_toy("{}"), Toy{});
  const Toy t = parse_toy("{speed: 4, count: 7, colour: blue, wait: 2ms, limit: 0.25}");
  EXPECT_EQ(t.speed, 4);
  EXPECT_EQ(t.count, 7);
  EXPECT_EQ(t.colour, Colour::Blue);
  EXPECT_DOUBLE_EQ(t.wait_s, 2e-3);
  EXPECT_EQ(t.limit, 0.25);
  const auto docs = toy_schema().docs();
  ASSERT_EQ(docs.size(), 6u);
  EXPECT_EQ(docs[0].default_text, "2.5");
  EXPECT_EQ(docs[2].default_text, "false");
  EXPECT_EQ(docs[2].example, "true");
  EXPECT_EQ(docs[3].default_text, "green");
  EXPECT_EQ(docs[3].choices, (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(docs[4].default_text, "500 ms");
  EXPECT_EQ(docs[5].default_text, "unset");
  EXPECT_EQ(enum_name<Colour>(kColourNames, Colour::Red), "red");
}

TEST(OptionSchema, ErrorsNameTheFieldAndWhatWasExpected) {
  EXPECT_INPUT_ERROR(parse_toy("{sped: 1}"), "toy.sped (line 1)", "did you mean 'speed'");
  EXPECT_INPUT_ERROR(parse_toy("{speed: 0}"), "toy.speed", "a number > 0");
  EXPECT_INPUT_ERROR(parse_toy("{count: 11}"), "toy.count", "from 1 to 10");
  EXPECT_INPUT_ERROR(parse_toy("{count: two}"), "toy.count", "whole number");
  EXPECT_INPUT_ERROR(parse_toy("{colour: purple}"), "toy.colour", "expected red, green or blue, got 'purple'");
  EXPECT_INPUT_ERROR(parse_toy("{colour: gren}"), "toy.colour", "did you mean 'green'");
  EXPECT_INPUT_ERROR(parse_toy("{wait: soon}"), "toy.wait", "");
  EXPECT_INPUT_ERROR(parse_toy("{limit: 2}"), "toy.limit", "in [0, 1]");
  EXPECT_INPUT_ERROR(parse_toy("{fast: true, count: 6}"), "toy.count", "at most 5");
  // A key that is a list, not a word, is an input error too (yaml-cpp would throw a bad conversion).
  EXPECT_INPUT_ERROR(parse_toy("{[a]: 1}"), "toy", "plain word");
}

// ---------------------------------------------------------------------------------------------
// Every strategy option takes effect.

// The report without its wall-clock figures, which differ from run to run.
nlohmann::json stable_report(nlohmann::json report) {
  if (!report.is_object()) return report;
  nlohmann::json out = nlohmann::json::object();
  for (auto& [key, value] : report.items()) {
    if (key.find("seconds") != std::string::npos || key.find("per_second") != std::string::npos ||
        key.find("time") != std::string::npos || key.find("wall") != std::string::npos)
      continue;
    out[key] = value.is_object() ? stable_report(value) : value;
  }
  return out;
}

struct Setting {
  Graph graph;
  Cluster cluster;
};

// A graph with parallel branches, colocation classes, zero-time operators and tight memory
// (a GPU holds about a third of it), on two servers of two GPUs whose Ethernet is slow.
Setting default_setting() {
  SyntheticGraphConfig cfg;
  cfg.layers = 4;
  cfg.branches = 3;
  cfg.ops_per_branch = 2;
  Setting s{synthetic_training_graph(cfg), Cluster{}};
  NvlinkServersConfig c;
  c.gpus = 4;
  c.ethernet_bandwidth = 2e9;
  c.gpu_memory = s.graph.total_memory() / 3;
  s.cluster = make_nvlink_servers(c);
  return s;
}

// Options whose effect shows only in another setting, or another way; each entry says why.
struct Special {
  std::string base_options;  // YAML mapping both runs share
  std::function<Setting()> setting;
  std::string why;
};

Setting multi_nic_setting() {
  Setting s = default_setting();
  MultiNicConfig m;
  m.servers = 4;
  m.gpus_per_server = 1;
  m.nics_per_server = 2;
  m.link_bandwidth = 2e9;
  m.gpu_memory = s.graph.total_memory();
  s.cluster = make_multi_nic(m);
  return s;
}

// QuickP P3's fan-out (tests/test_quickp_p3.cpp): A sends 3 MB to B and 1 MB to C, one operator
// per server of a 3-server multi-NIC cluster; the allocation improves the uniform one.
Setting fan_out_setting() {
  Setting s;
  s.graph.add_operator({"A", "op", 10e-6, 10e9});
  s.graph.add_operator({"B", "op", 10e-6, 10e9});
  s.graph.add_operator({"C", "op", 10e-6, 10e9});
  s.graph.add_tensor(0, 1, 3e6);
  s.graph.add_tensor(0, 2, 1e6);
  s.graph.finalize("fan-out");
  MultiNicConfig m;
  m.servers = 3;
  m.gpus_per_server = 1;
  m.nics_per_server = 2;
  m.link_bandwidth = 10e9;
  m.gpu_memory = 16e9;
  s.cluster = make_multi_nic(m);
  return s;
}

Setting roomy_setting() {
  Setting s = default_setting();
  NvlinkServersConfig c;
  c.gpus = 4;
  c.ethernet_bandwidth = 2e9;
  c.gpu_memory = s.graph.total_memory();
  s.cluster = make_nvlink_servers(c);
  return s;
}

// A small graph (two blocks of three branches) on roomy GPUs: P2 stays a quick solve.
Setting small_roomy_setting() {
  SyntheticGraphConfig cfg;
  cfg.layers = 2;
  cfg.branches = 3;
  cfg.ops_per_branch = 1;
  Setting s{synthetic_training_graph(cfg), Cluster{}};
  NvlinkServersConfig c;
  c.gpus = 4;
  c.ethernet_bandwidth = 2e9;
  c.gpu_memory = s.graph.total_memory();
  s.cluster = make_nvlink_servers(c);
  return s;
}

// A zoo AlexNet (tensorflow style: Keras scopes, gradient_tape/<layer> gradients) on roomy GPUs.
Setting scoped_setting() {
  models::ModelConfig m;
  m.model = "alexnet";
  m.batch = 32;
  Setting s = roomy_setting();
  s.graph = models::zoo_graph(models::resolve_model_config(m));
  NvlinkServersConfig c;
  c.gpus = 4;
  c.ethernet_bandwidth = 2e9;
  c.gpu_memory = s.graph.total_memory();
  s.cluster = make_nvlink_servers(c);
  return s;
}

const std::map<std::pair<std::string, std::string>, Special>& special_cases() {
  // QuickP on the unfused, uncolocated graph, so that the solver has a real problem to branch on.
  const std::string quickp_raw = "{alpha: 0, colocation: false}";
  static const std::map<std::pair<std::string, std::string>, Special> cases = {
      {{"quickp", "bandwidth_allocation"}, {"", multi_nic_setting, "P3 allocates only on a multi-NIC cluster"}},
      {{"quickp", "allocation_rounds"},
       {"{alpha: 0, colocation: false, mip_gap: 0, bandwidth_allocation: true}", fan_out_setting,
        "rounds count only with bandwidth_allocation, on a cluster where a round improves"}},
      {{"quickp", "beta"}, {"{coarsening: algorithm2}", small_roomy_setting, "beta is algorithm2's threshold"}},
      {{"quickp", "mip_gap"}, {quickp_raw, small_roomy_setting, "the gap matters only when the solver branches"}},
      {{"quickp", "max_nodes"}, {"{alpha: 0, colocation: false, mip_gap: 0}", small_roomy_setting, "nodes matter only when the solver branches"}},
      {{"quickp", "warm_start"}, {quickp_raw, small_roomy_setting, "the solver's start"}},
      {{"quickp", "cuts"}, {quickp_raw, small_roomy_setting, "cuts matter only when the solver branches"}},
      {{"mcmc", "greedy"}, {"{steps: 300}", default_setting, "short chain: greedy and beta 5000 then differ"}},
      {{"mcmc", "beta"}, {"{steps: 300}", default_setting, "short chain"}},
      {{"mcmc", "memory_penalty"}, {"{steps: 300}", default_setting, "short chain"}},
      {{"mcmc", "zero_compute_weight"}, {"{steps: 300}", default_setting, "short chain"}},
      {{"mcmc", "seed"}, {"{steps: 300}", default_setting, "short chain"}},
      {{"mcmc", "cutoff"}, {"{steps: 300}", default_setting, "same chain by design; the report counts the cut-off evaluations"}},
      {{"mcmc", "init"}, {"{steps: 300}", default_setting, "short chain"}},
      {{"m-topo", "uniform"}, {"", roomy_setting, "with room for everything, only the uniform fill limit spreads the graph"}},
      {{"expert", "backward_with_forward"}, {"", scoped_setting, "needs gradient_tape/<layer> scopes"}},
      {{"max-load", "max_downsets"}, {"", small_roomy_setting, "more than 50 downsets, fewer than the default"}},
  };
  return cases;
}

// The strategies' common setting where the tight one hides what an option does.
Setting setting_for(const std::string& strategy) {
  if (strategy == "quickp") return small_roomy_setting();  // P2 is infeasible on the tight one
  return default_setting();
}

std::string merge_yaml(const std::string& base, const std::string& key, const std::string& value) {
  YAML::Node n = base.empty() ? YAML::Node(YAML::NodeType::Map) : YAML::Load(base);
  n[key] = YAML::Load(value);
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

struct Outcome {
  std::vector<DeviceId> placement;
  nlohmann::json report;
  bool operator==(const Outcome&) const = default;
};

Outcome run(const std::string& strategy, const std::string& options, const Setting& s) {
  auto st = testutil::make_strategy_from_yaml(strategy, options);
  PlacementResult r = st->place(s.graph, s.cluster);
  // What the strategy's own report and the typed facts say (the time limit aside: it is timing).
  nlohmann::json report = stable_report(r.details);
  if (r.facts.cost_model) report["facts.cost_model"] = std::string(cost_model_name(*r.facts.cost_model));
  if (r.facts.portfolio_winner) report["facts.portfolio_winner"] = *r.facts.portfolio_winner;
  if (r.facts.memory_fallback) report["facts.memory_fallback"] = *r.facts.memory_fallback;
  return {r.placement, report};
}

class EveryStrategyOption : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryStrategyOption, ExampleParsesAndTakesEffect) {
  const StrategyInfo& info = find_strategy(GetParam(), "t.yaml", "strategies[0]");
  ASSERT_FALSE(info.options.empty());
  const Setting fallback = setting_for(info.name);
  const std::filesystem::path dir = testutil::fresh_temp_dir("options-" + info.name);
  for (const OptionDoc& o : info.options) {
    SCOPED_TRACE(info.name + "." + o.key + " = " + o.example);
    ASSERT_FALSE(o.example.empty()) << "every option documents an example value";
    ASSERT_FALSE(o.help.empty());
    std::string example = o.example;
    if (o.key == "write_model" || o.key == "policy" || o.key == "save_policy")
      example = (dir / example).string();  // a path: keep the test's files in its folder
    const auto it = special_cases().find({info.name, o.key});
    const std::string base = it != special_cases().end() ? it->second.base_options : "";
    const Setting s = it != special_cases().end() ? it->second.setting() : fallback;
    const std::string with = merge_yaml(base, o.key, example);
    // The example parses.
    ASSERT_NO_THROW(testutil::make_strategy_from_yaml(info.name, with));
    if (o.key == "write_model") {  // its effect is the file
      run(info.name, with, s);
      EXPECT_TRUE(std::filesystem::exists(example));
      continue;
    }
    if (o.key == "time_limit") {  // the budget is recorded in the report
      auto st = testutil::make_strategy_from_yaml(info.name, with);
      const PlacementResult r = st->place(s.graph, s.cluster);
      EXPECT_EQ(r.facts.time_limit_s, 2.0);
      EXPECT_TRUE(r.facts.time_limit_s.has_value());
      continue;
    }
    const Outcome a = run(info.name, base, s), again = run(info.name, base, s), b = run(info.name, with, s);
    ASSERT_EQ(a, again) << "the defaults must give the same answer twice for the comparison to mean anything";
    EXPECT_FALSE(a == b) << "the option changed neither the placement nor the report: " << a.report.dump();
  }
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const auto& s : strategy_registry())
    // Trained policies: covered in test_placeto.cpp; strategies written in Python: by the pytest suite
    // (python/tests/test_python_strategy.py), as only the placesim Python module can make them.
    if (s.name != "placeto" && s.name != "python") names.push_back(s.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registered, EveryStrategyOption, ::testing::ValuesIn(strategy_names()),
                         [](const auto& param) {
                           std::string n = param.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(StrategyOptions, SeedIsKnownFromTheSchema) {
  EXPECT_TRUE(find_strategy("mcmc", "", "").takes("seed"));
  EXPECT_TRUE(find_strategy("metis", "", "").takes("seed"));
  EXPECT_FALSE(find_strategy("heft", "", "").takes("seed"));
  for (const auto& s : strategy_registry()) EXPECT_TRUE(s.takes("time_limit")) << s.name;
}

TEST(StrategyOptions, ParsedConfigsReadBack) {
  auto m = testutil::make_strategy_from_yaml("mcmc", "{beta: 50, steps: 10, init: random, seed: 3}");
  const McmcConfig& mc = dynamic_cast<const Mcmc&>(own_strategy(*m)).config();
  EXPECT_EQ(mc.beta, 50);
  EXPECT_EQ(mc.steps, 10);
  EXPECT_EQ(mc.init, McmcConfig::Init::Random);
  EXPECT_EQ(mc.seed, 3u);
  EXPECT_TRUE(std::isinf(m->common_options().time_limit_s));
  EXPECT_TRUE(std::isinf(dynamic_cast<const Mcmc&>(own_strategy(*testutil::make_strategy_from_yaml("mcmc", "{greedy: true}"))).config().beta));
  auto q = testutil::make_strategy_from_yaml("quickp", "{coarsening: algorithm2, max_nodes: 3, alpha: 2ms}");
  const QuickPConfig& qc = dynamic_cast<const QuickP&>(own_strategy(*q)).config();
  EXPECT_EQ(qc.coarsening, QuickPCoarsening::Algorithm2);
  EXPECT_EQ(qc.p2.max_nodes, 3);
  EXPECT_EQ(qc.alpha_s, 2e-3);
  EXPECT_EQ(q->common_options().time_limit_s, 60);  // QuickP's own default
  EXPECT_EQ(testutil::make_strategy_from_yaml("quickp", "{time_limit: 5s}")->common_options().time_limit_s, 5);
  EXPECT_EQ(dynamic_cast<const QuickP&>(own_strategy(*testutil::make_strategy_from_yaml("quickp", "{}"))).config(), QuickPConfig{});
}

TEST(StrategyOptions, TimeLimitIsWallTimeOfTheWholeCall) {
  // MCMC with far more steps than 0.3 s allows: the shared time limit ends the chain (without a
  // polish, which may converge before the limit and end the call sooner).
  const Setting s = roomy_setting();
  auto st = testutil::make_strategy_from_yaml("mcmc", "{steps: 100000000, time_limit: 300ms, polish: 0}");
  const PlacementResult r = st->place(s.graph, s.cluster);
  EXPECT_EQ(r.details["stopped_by"], "time_limit");
  EXPECT_LT(r.search_seconds, 0.3 + 0.5);
  EXPECT_GE(r.search_seconds, 0.3);
  EXPECT_EQ(r.facts.time_limit_s, 0.3);
}

// ---------------------------------------------------------------------------------------------
// Every fabric key takes effect.

// What a user could observe of a cluster: devices, links and the pairwise view.
std::string fingerprint(const Cluster& c) {
  std::string out = c.description + fmt::format(" nccl {} nvls {}\n", c.nccl.has_value(), c.nvlink_sharp);
  for (const Device& d : c.devices()) out += fmt::format("{} {} {} {}\n", d.name, d.server, d.memory_bytes, d.compute_speed);
  for (const Link& l : c.links()) out += fmt::format("{} {} {}\n", l.name, l.bandwidth, l.latency);
  for (DeviceId a = 0; a < c.num_devices(); ++a)
    for (DeviceId b = 0; b < c.num_devices(); ++b)
      if (a != b) out += fmt::format("{} {} {}\n", c.bandwidth(a, b), c.latency(a, b), c.num_paths(a, b));
  return out;
}

// The keys a fabric needs besides `type` (spine-leaf needs servers or leaves), and settings that
// make a key matter (a core exists only with pods).
std::string base_keys(const std::string& type, const std::string& key) {
  std::string base;
  if (type == "spine-leaf" && key != "leaves" && key != "servers") base = "servers: 4, ";
  if (type == "fat-tree" && key != "servers") base = "servers: 8, ";  // spans two pods
  if (type == "multi-nic" && (key == "core_switches" || key == "core_bandwidth" || key == "core_latency"))
    base = "servers_per_pod: 2, ";
  // A rail-optimized fabric crosses its spines between units, its core between pods.
  if (type == "rail-optimized" && key != "servers_per_unit")
    base = key.rfind("core_", 0) == 0 ? "servers_per_unit: 1, units_per_pod: 2, " : "servers_per_unit: 2, ";
  return base;
}

TEST(FabricOptions, EveryKeysExampleParsesAndChangesTheCluster) {
  for (const TopologyType& t : topology_registry()) {
    for (const OptionDoc& o : t.options) {
      SCOPED_TRACE(t.name + "." + o.key + " = " + o.example);
      ASSERT_FALSE(o.example.empty());
      const std::string base = base_keys(t.name, o.key);
      std::string plain = fmt::format("{{type: {}, {}}}", t.name, base.empty() ? "" : base.substr(0, base.size() - 2));
      if (t.name == "spine-leaf" && (o.key == "leaves" || o.key == "servers")) plain = "{type: spine-leaf, servers: 4}";
      const std::string with = fmt::format("{{type: {}, {}{}: {}}}", t.name, base, o.key, o.example);
      const Cluster a = cluster_from_yaml(YAML::Load(plain), "c.yaml");
      Cluster b;
      ASSERT_NO_THROW(b = cluster_from_yaml(YAML::Load(with), "c.yaml")) << with;
      EXPECT_NE(fingerprint(a), fingerprint(b)) << with;
      ASSERT_NE(b.recipe, nullptr);
      EXPECT_EQ(b.recipe->type, t.name);
    }
  }
}

TEST(FabricOptions, EveryFabricNamesAnUnknownKeyAndItsType) {
  for (const TopologyType& t : topology_registry()) {
    SCOPED_TRACE(t.name);
    const std::string servers = t.name == "spine-leaf" ? "servers: 4, " : "";
    EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load(fmt::format("{{type: {}, {}bogus_key: 1}}", t.name, servers)), "c.yaml"),
                       "cluster.bogus_key", "unknown key");
    for (const OptionDoc& o : t.options)  // every key rejects a value of the wrong kind, naming itself
      if (o.kind != "text" && !(o.key == "servers" && !servers.empty())) {
        EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load(fmt::format("{{type: {}, {}{}: [not, a, value]}}", t.name, servers, o.key)),
                                             "c.yaml"),
                           "cluster." + o.key, "");
      }
  }
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("{type: spine-leef}"), "c.yaml"), "cluster.type", "did you mean 'spine-leaf'");
}

TEST(FabricOptions, BuildersKeepTheirRecipe) {
  FatTreeConfig ft;
  ft.k = 4;
  ft.servers = 6;
  const Cluster c = make_fat_tree(ft);
  ASSERT_NE(c.recipe, nullptr);
  EXPECT_EQ(c.recipe->type, "fat-tree");
  EXPECT_EQ(std::any_cast<FatTreeConfig>(c.recipe->config), ft);
  // Rebuilding a multi-NIC cluster with an allocation goes through the recipe.
  MultiNicConfig m;
  m.servers = 3;
  const Cluster uniform = make_multi_nic(m);
  BandwidthAllocation a(3);
  a.set(0, 1, 30e9);
  a.set(0, 2, 10e9);
  a.set(1, 0, 20e9);
  a.set(1, 2, 20e9);
  a.set(2, 0, 20e9);
  a.set(2, 1, 20e9);
  const Cluster allocated = with_bandwidth_allocation(uniform, a, "test");
  EXPECT_DOUBLE_EQ(allocated.bandwidth(0, 2), 30e9);  // GPU 2 is server 1's first GPU
  ASSERT_NE(multi_nic_config_of(allocated), nullptr);
  EXPECT_EQ(*multi_nic_config_of(allocated)->allocation, a);
}

}  // namespace

// "Did you mean" reads letters whatever their case: BF16 is nearest bf16 (it was fp16, one letter
// nearer by case).
TEST(Names, TheNearestWordIgnoresCase) {
  EXPECT_EQ(placesim::nearest_word("BF16", {"fp32", "tf32", "fp16", "bf16", "fp8"}), "bf16");
  EXPECT_EQ(placesim::nearest_word("Ring", {"ring", "tree"}), "ring");
  EXPECT_EQ(placesim::nearest_word("rnig", {"ring", "tree"}), "ring");
}
