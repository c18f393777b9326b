#include <cmath>
#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "sim/core/graph.h"
#include "tests/test_util.h"

using namespace placesim;

TEST(Graph, TopologicalOrderAndRank) {
  Graph g = testutil::fig31_graph();
  ASSERT_EQ(g.num_operators(), 3u);
  auto topo = g.topological_order();
  EXPECT_EQ(topo[0], 0);
  auto rank = computation_rank(g);
  EXPECT_DOUBLE_EQ(rank[0], 15e-6);  // A(5) + B(10)
  EXPECT_DOUBLE_EQ(rank[1], 10e-6);
  EXPECT_DOUBLE_EQ(rank[2], 5e-6);
  EXPECT_DOUBLE_EQ(critical_path(g), 15e-6);
}

TEST(Graph, NamesWithoutTheirIndexAreFoundByAScan) {
  // A graph whose names are unique by construction (a compiled plan) skips the index and its
  // check: find() still answers, and a copy keeps the choice.
  Graph g;
  g.add_operator({"a", "op", 1e-6, 0});
  g.add_operator({"a", "op", 1e-6, 0});  // not checked without the index
  g.add_operator({"c", "op", 1e-6, 0});
  g.finalize("test", /*index_names=*/false);
  EXPECT_EQ(g.find("c"), 2);
  EXPECT_EQ(g.find("a"), 0);
  EXPECT_EQ(g.find("z"), std::nullopt);
  const Graph copy = g;
  EXPECT_EQ(copy.find("c"), 2);
  EXPECT_THROW(g.finalize("test"), InputError);  // with the index, the repeat is an error
}

TEST(Graph, CycleIsReportedWithOperatorNames) {
  Graph g;
  for (const char* n : {"a", "b", "c", "d"}) g.add_operator({n, "op", 1.0, 0.0});
  g.add_tensor(0, 1, 1);
  g.add_tensor(1, 2, 1);
  g.add_tensor(2, 3, 1);
  g.add_tensor(3, 1, 1);
  const std::string msg = testutil::input_error_message([&] { g.finalize("cyclic.json"); });
  ASSERT_NE(msg, "") << "expected a cycle error";
  EXPECT_NE(msg.find("cyclic.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cycle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'d'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'a' ->"), std::string::npos) << "a is not on the cycle: " << msg;
}

TEST(Graph, RejectsBadValues) {
  {
    Graph g;
    g.add_operator({"x", "op", -1.0, 0.0});
    EXPECT_THROW(g.finalize("neg.json"), InputError);
  }
  {
    Graph g;
    g.add_operator({"x", "op", 1.0, std::nan("")});
    EXPECT_THROW(g.finalize("nan.json"), InputError);
  }
  {
    Graph g;
    g.add_operator({"x", "op", 1.0, 0.0});
    g.add_operator({"x", "op", 1.0, 0.0});
    EXPECT_THROW(g.finalize("dup.json"), InputError);
  }
  {
    Graph g;
    g.add_operator({"x", "op", 1.0, 0.0});
    g.add_tensor(0, 5, 1.0);
    EXPECT_THROW(g.finalize("dangling.json"), InputError);
  }
  {
    Graph g;
    g.add_operator({"x", "op", 1.0, 0.0});
    g.add_operator({"y", "op", 1.0, 0.0});
    g.add_tensor(0, 1, -3.0);
    EXPECT_THROW(g.finalize("negbytes.json"), InputError);
  }
}
