// The paper reproductions (scenarios/papers/*.yaml) and the feature scenarios stay valid scenarios as the schema and the
// strategies' options change: each one plans its sweep and names the tables its report prints.
#include <gtest/gtest.h>

#include <filesystem>

#include "scenarios/runner/sweep.h"
#include "tests/test_util.h"

namespace placesim {
namespace {
namespace fs = std::filesystem;

TEST(Papers, EveryReproductionPlansAndHasTables) {
  const fs::path dir = fs::path(PLACESIM_TEST_SOURCE_DIR) / "scenarios" / "papers";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
#ifndef PLACESIM_HAVE_TORCH
    // Placeto's table and the robustness benchmark need the placeto strategy, which is built only
    // with LibTorch.
    if (entry.path().stem() == "placeto-table1" || entry.path().stem() == "robustness") continue;
#endif
    SCOPED_TRACE(entry.path().string());
    const SweepPlan plan = load_sweep(entry.path().string());
    EXPECT_GT(plan.points.size(), 1u);
    ASSERT_FALSE(plan.variants.empty());
    EXPECT_FALSE(plan.variants.front().report.tables.empty()) << "a reproduction prints its paper's tables";
    EXPECT_EQ(plan.output, "out/papers/" + entry.path().stem().string());
  }
  EXPECT_GE(files, 8);
}

// The feature scenarios (scenarios/*.yaml) too: each plans at least one point.
TEST(Papers, EveryScenarioPlans) {
  const fs::path dir = fs::path(PLACESIM_TEST_SOURCE_DIR) / "scenarios";
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    // Its ONNX model is written by the command its comment gives; until then reading it says so.
    if (entry.path().stem() == "bring-your-own-model" && !fs::exists(dir / "resnet50.onnx")) {
      EXPECT_INPUT_ERROR(load_sweep(entry.path().string()), "graph.onnx", "resnet50.onnx' does not exist",
                         "tools/export_onnx.py");
      continue;
    }
    const SweepPlan plan = load_sweep(entry.path().string());
    EXPECT_GE(plan.points.size(), 1u);
  }
  EXPECT_GE(files, 14);
}

}  // namespace
}  // namespace placesim
