#pragma once
// Folding a plan's data-parallel replicas (sim/core/folding.h): which block of replicas to
// compile so that the graph stands for all of them, exactly where the fabric allows.
//
// A block of B replicas (whole context and expert groups) is a candidate when moving every GPU of
// the plan on by B replicas maps servers onto servers, GPU for GPU (same local index, memory and
// speed), and every gradient reduction's algorithm treats its blocks alike
// (collective_fold_problem: rings and exchanges do, trees do not). The fold is exact when, in the
// network of the folded graph (fold_network), every route's copies see the network alike: the
// smallest such block is chosen, found on the plan with few micro-batches (the routes do not
// depend on how many). Where no block is exact (servers in units that do not repeat with the
// replicas, say), the full graph is compiled when it is small, else the smallest block, folded
// approximately, and the choice says so.
#include <string>

#include "sim/collectives/collectives.h"
#include "sim/core/cluster.h"
#include "sim/plans/layer_model.h"
#include "sim/plans/parallel_plan.h"

namespace placesim {

enum class FoldMode {
  Auto,    // exact folding where it is found; else the full graph if small, else approximate folding
  Full,    // the full graph (`--full-graph`)
  Folded,  // the smallest block, exact or not (`--fold`)
};
inline constexpr EnumName<FoldMode> kFoldModeNames[] = {{FoldMode::Auto, "auto"}, {FoldMode::Full, "full"}, {FoldMode::Folded, "folded"}};

// 8 GiB, a third of this kind of machine: the largest full graph Auto compiles rather than fold
// approximately. Exact where it can be (Narayanan et al.'s 530B plan on 2,520 A100s, 7.7 GB whole,
// 36 s, against 3 s folded, 1e-7 apart: docs/parallelism.md); --fold for the speed.
inline constexpr double kFullGraphLimitBytes = 8.0 * (1 << 30);

// What the compiled graph holds per operator and per tensor, with the engines' state while they
// run (measured on plans of 64 to 3,072 GPUs: bench/bench_plans.cpp).
inline constexpr double kBytesPerOperator = 170, kBytesPerTensor = 60;

// A compiled graph's size, estimated before it is built: operators, tensors, bytes in memory.
struct GraphEstimate {
  double operators = 0, tensors = 0, bytes = 0;
};

// The size of the plan's graph compiled with `replicas` (compile_plan's; 0 or dp: the full
// graph), from the graph at one micro-batch (pp interleaved) times the micro-batches: a bound, as
// the gradient reductions and optimizer steps do not grow with them. A full graph is estimated
// from the block it would fold into times the copies, or, where it folds into none and would be
// large even so, not compiled at all (a bound of its compute steps).
GraphEstimate estimate_graph(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster,
                             CollectiveDetail detail, int replicas);

struct FoldChoice {
  int replicas = 0;     // the block of replicas to compile; plan.dp: the full graph
  int copies = 1;       // plan.dp / replicas
  bool exact = true;    // the folded graph's times are the full graph's
  std::string reason;   // one line on the choice, for the output
  GraphEstimate full;   // the full graph's size
  GraphEstimate chosen; // the compiled graph's
};

// The blocks of replicas the plan can be folded into (ascending; empty when none): every B < dp
// that divides dp, holds whole context and expert groups, maps servers onto servers and whose
// gradient reductions fold. `why_none` says why there are none.
std::vector<int> fold_blocks(const ParallelPlan& plan, const Cluster& cluster, std::string* why_none = nullptr);

// The block to compile (compile_plan's `replicas`) under `mode`. The plan must be valid
// (plan_problem). `full_limit_bytes`: the largest full graph Auto compiles when no fold is exact.
FoldChoice choose_fold(const LayerWorkload& workload, const ParallelPlan& plan, const Cluster& cluster, CollectiveDetail detail,
                       FoldMode mode, double full_limit_bytes = kFullGraphLimitBytes);

}  // namespace placesim
