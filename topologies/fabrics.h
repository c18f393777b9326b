#pragma once
// Every fabric's config struct and builder, for C++ callers that build clusters directly (tests,
// benchmarks); scenario files go through topologies/registry.h. Each fabric is one file pair
// under topologies/ (see docs/architecture.md).
#include "topologies/fat_tree.h"
#include "topologies/full_mesh.h"
#include "topologies/multi_nic.h"
#include "topologies/non_blocking.h"
#include "topologies/nvlink_servers.h"
#include "topologies/presets.h"
#include "topologies/rail_only.h"
#include "topologies/rail_optimized.h"
#include "topologies/registry.h"
#include "topologies/spine_leaf.h"
