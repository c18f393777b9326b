// The run-time data and plugin lookup (sim/config/data_dir.h), from this test binary in the build tree.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "sim/config/data_dir.h"

namespace fs = std::filesystem;
using namespace placesim;

TEST(DataDir, BuildTreeFindsTheSourceTree) {
  ::unsetenv("PLACESIM_DATA_DIR");
  EXPECT_TRUE(fs::exists(executable_dir() / "placesim-data-root")) << executable_dir();
  EXPECT_TRUE(fs::equivalent(data_dir(), PLACESIM_TEST_SOURCE_DIR)) << data_dir();
  EXPECT_TRUE(fs::exists(data_dir() / "tools" / "plot_results.py"));
  EXPECT_TRUE(fs::is_directory(data_dir() / "scenarios" / "papers"));
}

TEST(DataDir, EnvironmentOverrides) {
  ::setenv("PLACESIM_DATA_DIR", "/some/where", 1);
  EXPECT_EQ(data_dir(), fs::path("/some/where"));
  ::unsetenv("PLACESIM_DATA_DIR");
}

TEST(DataDir, PluginBesideTheExecutableElseInstalledLibDir) {
  const fs::path installed = plugin_path("libnot-there.so");  // <prefix>/lib/placesim, relative to bin/
  EXPECT_EQ(installed.parent_path().filename(), "placesim") << installed;
  EXPECT_NE(installed.parent_path(), executable_dir()) << installed;
  EXPECT_EQ(plugin_path("placesim-data-root"), executable_dir() / "placesim-data-root");
}
