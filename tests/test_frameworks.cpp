// Framework profiles (sim/plans/frameworks.h): `plan --framework NAME` runs what the same plan
// with the framework's flags written out runs, a flag the user gives keeps its value, and what a
// framework cannot run is refused naming the flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "placement/planners/megatron/megatron.h"
#include "sim/core/errors.h"
#include "tests/test_util.h"

namespace fs = std::filesystem;
using placesim::testutil::run_cli;

namespace {

// The `flow ... per iteration` line and the `plan` line of a run: what the run simulated.
std::string outcome(const std::string& text) {
  std::string lines;
  for (const char* pattern : {"\nplan +[^\n]*", "\nmemory stage 0 [^\n]*", "\nflow +[^\n]*per iteration"}) {
    const std::regex re(pattern);
    std::smatch m;
    if (std::regex_search(text, m, re)) lines += m.str();
  }
  return lines;
}

class Frameworks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = placesim::testutil::fresh_temp_dir("frameworks");
    std::ofstream(dir_ / "c.yaml") << "preset: dgx-h100\nservers: 2\n";
    std::ofstream(dir_ / "m.yaml") << "family: gpt\nlayers: 8\nhidden: 1024\nheads: 8\nsequence: 1024\nvocab: 32000\n";
    base_ = "plan --model-file " + (dir_ / "m.yaml").string() + " --cluster " + (dir_ / "c.yaml").string() +
            " --tp 2 --pp 2 --dp 4 --global-batch 32 --recompute none --engine flow --collectives condensed ";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run(const std::string& flags, int expected_code = 0) {
    std::string out;
    EXPECT_EQ(run_cli(base_ + flags, out), expected_code) << flags << "\n" << out;
    return out;
  }
  fs::path dir_;
  std::string base_;
};

}  // namespace

TEST_F(Frameworks, EachProfileRunsItsFlagsWrittenOut) {
  struct Case {
    const char* framework;
    const char* flags;  // what the profile sets, by hand
  };
  const Case cases[] = {
      {"megatron-lm", ""},
      {"megatron-lm-2021", "--no-overlap-grad-reduce --stage-split even"},
      {"megatron-core", "--distributed-optimizer --stage-split even"},
      {"nemo", "--distributed-optimizer --sequence-parallel --tp-comm-overlap --stage-split even"},
      {"deepspeed", "--zero 1 --no-overlap-grad-reduce --stage-split even"},
      {"fsdp", "--zero 3 --zero3-prefetch 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.framework);
    const std::string profiled = run(std::string("--framework ") + c.framework);
    EXPECT_NE(profiled.find(std::string("framework       ") + c.framework + ": "), std::string::npos) << profiled;
    const std::string by_hand = outcome(run(c.flags));
    ASSERT_FALSE(by_hand.empty());
    EXPECT_EQ(outcome(profiled), by_hand);
  }
  // The profiles differ where their frameworks do: DeepSpeed's reductions after the backward and
  // ZeRO 1 against Megatron-LM's overlapped ones.
  EXPECT_NE(outcome(run("--framework deepspeed")), outcome(run("")));
  EXPECT_NE(run("--framework deepspeed").find(", ZeRO 1\n"), std::string::npos);
  EXPECT_NE(run("--framework fsdp").find(", ZeRO 3\n"), std::string::npos);
}

TEST_F(Frameworks, AFlagTheUserGivesKeepsItsValue) {
  const std::string kept = run("--framework deepspeed --zero 0");
  EXPECT_NE(kept.find(", ZeRO 0\n"), std::string::npos);
  EXPECT_NE(kept.find("; kept as you gave them: zero\n"), std::string::npos) << kept;
  // The profile's own value given again is not "kept".
  EXPECT_EQ(run("--framework deepspeed --zero 1").find("kept as you gave them"), std::string::npos);
  // Flags that need another are checked after the profile has set its part.
  EXPECT_EQ(outcome(run("--framework nemo --tp-comm-overlap")), outcome(run("--framework nemo")));
  EXPECT_EQ(outcome(run("--framework megatron-core --no-overlap-param-gather")),
            outcome(run("--distributed-optimizer --no-overlap-param-gather --stage-split even")));
  std::string out = run("--tp-comm-overlap", 2);
  EXPECT_NE(out.find("--tp-comm-overlap: Megatron's tensor-parallel overlap"), std::string::npos) << out;
  out = run("--no-overlap-param-gather", 2);
  EXPECT_NE(out.find("--no-overlap-param-gather: only Megatron's distributed optimizer"), std::string::npos) << out;
  EXPECT_EQ(outcome(run("--framework fsdp --zero 2")), outcome(run("--zero 2 --zero3-prefetch 1")));
  // A split the user asks for replaces the profile's even one.
  EXPECT_EQ(outcome(run("--framework megatron-lm-2021 --stage-split balanced")), outcome(run("--no-overlap-grad-reduce")));
}

TEST_F(Frameworks, WhatAFrameworkCannotRunIsRefusedNamingTheFlag) {
  std::string out = run("--framework deepspeed --virtual-stages 2", 2);
  EXPECT_NE(out.find("--virtual-stages: deepspeed runs 1F1B without interleaving"), std::string::npos) << out;
  out = run("--framework deepspeed --zero 3", 2);
  EXPECT_NE(out.find("--zero: deepspeed's pipeline engine runs ZeRO 1 at most"), std::string::npos) << out;
  out = run("--framework fsdp --distributed-optimizer", 2);
  EXPECT_NE(out.find("--distributed-optimizer: fsdp shards with its own ZeRO stages"), std::string::npos) << out;
  out = run("--framework deepspeed --schedule gpipe", 2);
  EXPECT_NE(out.find("--schedule: deepspeed's pipeline engine runs 1F1B only"), std::string::npos) << out;
  out = run("--framework megatron-lm-2021 --sequence-parallel", 2);
  EXPECT_NE(out.find("--sequence-parallel: megatron-lm-2021 has no sequence parallelism"), std::string::npos) << out;
  out = run("--framework megatron", 2);
  EXPECT_NE(out.find("--framework"), std::string::npos) << out;
}

// The megatron planner of a scenario takes the same profiles: `framework:` gives the options it
// leaves out the framework's values, and refuses what the framework cannot run, naming the option.
TEST(FrameworkPlanner, TheMegatronPlannerTakesAProfile) {
  using namespace placesim;
  auto config_of = [](const std::string& yaml) {
    const std::unique_ptr<Planner> p = make_planner("megatron", YAML::Load(yaml), "s.yaml", "strategies[0]");
    return dynamic_cast<const Megatron&>(*p).config();
  };
  const MegatronConfig plain = config_of("{tp: 2, pp: 2}");
  EXPECT_EQ(plain.zero, 0);
  EXPECT_TRUE(plain.overlap_grad_reduce);
  const MegatronConfig ds = config_of("{tp: 2, pp: 2, framework: deepspeed}");
  EXPECT_EQ(ds.zero, 1);
  EXPECT_FALSE(ds.overlap_grad_reduce);
  EXPECT_FALSE(ds.overlap_param_gather);
  EXPECT_EQ(config_of("{tp: 2, pp: 2, framework: deepspeed, zero: 0}").zero, 0);  // given: kept
  const MegatronConfig nemo = config_of("{tp: 2, pp: 2, framework: nemo}");
  EXPECT_EQ(nemo.zero, 1);
  EXPECT_TRUE(nemo.overlap_param_gather && nemo.sequence_parallel && nemo.tp_comm_overlap);
  EXPECT_EQ(config_of("{tp: 1, framework: fsdp}").zero, 3);
  EXPECT_EQ(config_of("{tp: 1, framework: fsdp}").zero3_prefetch, 1);
  EXPECT_INPUT_ERROR(config_of("{tp: 2, pp: 2, micro_batches: 4, virtual_stages: 2, framework: deepspeed}"), "strategies[0].options.virtual_stages",
                     "deepspeed runs 1F1B without interleaving");
  EXPECT_INPUT_ERROR(config_of("{tp: 2, pp: 2, zero: 2, framework: deepspeed}"), "strategies[0].options.zero", "ZeRO 1 at most");
  EXPECT_INPUT_ERROR(config_of("{framework: fsdp, zero: 1, overlap_param_gather: true}"), "strategies[0].options.overlap_param_gather",
                     "not Megatron's distributed optimizer");
  EXPECT_INPUT_ERROR(config_of("{framework: fsdp, zero: 2, overlap_param_gather: true}"), "strategies[0].options.overlap_param_gather",
                     "not Megatron's distributed optimizer");
  // The profile's split, as `plan --framework` runs it (one function for both: apply_framework_profile).
  EXPECT_EQ(plain.split, MegatronSplit::Even);  // the planner's default is Megatron's split already
  EXPECT_EQ(nemo.split, MegatronSplit::Even);
  EXPECT_EQ(config_of("{tp: 2, pp: 2, framework: nemo, split: ceil}").split, MegatronSplit::Ceil);  // given: kept
}

// The shared function alone: defaults where nothing is given, a given setting kept and named,
// refusals before and after the defaults.
TEST(FrameworkPlanner, OneFunctionAppliesEveryProfile) {
  using namespace placesim;
  auto nothing = [](std::string_view) { return false; };
  FrameworkSettings s{.tp = 2};
  EXPECT_TRUE(apply_framework_profile(Framework::Nemo, s, nothing).refusal.key.empty());
  EXPECT_TRUE(s.distributed_optimizer && s.sequence_parallel && s.tp_comm_overlap && s.even_split && s.overlap_grad_reduce);
  FrameworkSettings given{.tp = 2, .zero = 2};
  const FrameworkApplication a = apply_framework_profile(Framework::Nemo, given, [](std::string_view k) { return k == "zero"; });
  EXPECT_FALSE(given.distributed_optimizer);
  EXPECT_EQ(given.zero, 2);
  EXPECT_EQ(a.kept, std::vector<std::string>{"zero"});
  FrameworkSettings interleaved{.pp = 2, .virtual_stages = 2};
  EXPECT_EQ(apply_framework_profile(Framework::DeepSpeed, interleaved, nothing).refusal.key, "virtual_stages");
  // ZeRO 1 from DeepSpeed's profile is fine with a pipeline; ZeRO 2 given is refused.
  FrameworkSettings piped{.pp = 2};
  EXPECT_TRUE(apply_framework_profile(Framework::DeepSpeed, piped, nothing).refusal.key.empty());
  EXPECT_EQ(piped.zero, 1);
  FrameworkSettings sharded{.pp = 2, .zero = 2};
  EXPECT_EQ(apply_framework_profile(Framework::DeepSpeed, sharded, [](std::string_view k) { return k == "zero"; }).refusal.key, "zero");
}
