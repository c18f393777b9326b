#pragma once
// Graph coarsening in front of any strategy: group operators into coarse operators, place the
// coarse graph, and give every operator its group's GPU. These are the search-space reduction
// baselines of the QuickP thesis (section 5.3, Table 5.2):
//
//  * colocrl   (ColocRL, Mirhoseini et al. 2017): an operator whose out-degree is one joins its
//              successor; repeated until no operator of out-degree one is left.
//  * placeto   (PlaceTo's Merge-and-Colocate, Addanki et al. 2019, appendix A.6): the operator of
//              lowest cost (its coarse compute time; ties by the lower id) is merged into one of
//              its successors -- the one joined by the most bytes among those whose merge keeps the
//              graph acyclic -- or, when it has no successor, into its predecessor joined by the
//              most bytes; an operator with no neighbour left (its weak component is that one
//              operator) joins the operator of next lowest cost instead (nothing joins them, so the
//              graph stays acyclic); repeated until `target` coarse operators are left, however many
//              weak components the graph has. (The paper stops at the number of components.)
//  * spotlight (SpotLight, Gao et al. 2018): operators sharing their two-level name prefix ("a/b"
//              for "a/b/c/d"; '/'-separated, as in TensorFlow) form one group; a name of one level
//              is its own group. A group that sits on a cycle of the grouped graph is split into
//              runs (below), so that the result is acyclic.
//
// The coarse graph:
//  * a coarse operator's compute time and memory are the sums over its members (members run one
//    after another on one GPU, and all stay resident there);
//  * one coarse tensor per ordered pair of coarse operators that some tensor joins, carrying the
//    summed bytes of those tensors (parallel tensors are merged: their bytes add up); tensors
//    inside a group disappear;
//  * colocation classes: merging operators of two different classes joins the two classes (a
//    union-find over class ids), so every member of a fine class lands in coarse operators of one
//    coarse class, and a coarse placement that respects the coarse classes respects the fine ones.
//    Coarse classes are renumbered densely (0..k-1, in the order of their lowest fine class);
//  * it is always acyclic. Merging u into v along the edge u -> v is safe iff there is no other
//    path u ~> v. When out-degree(u) == 1 or in-degree(v) == 1 that holds trivially (QuickP
//    Theorem 2); otherwise a depth-first search bounded by a dynamically maintained topological
//    order (Pearce & Kelly 2006) looks for such a path, and the same search tells how to reorder.
//    ColocRL only merges along out-degree one; PlaceTo skips unsafe candidates; SpotLight splits.
//
// Coarse operators are numbered in the order of their lowest-numbered fine member. A coarse
// operator of one member keeps its name; a larger group is named after its lowest-numbered member
// (colocrl, placeto) or its name prefix (spotlight), made unique with a "#k" suffix if needed.
// Everything is deterministic: no randomness, ties broken by operator id.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/graph.h"

namespace placesim {

enum class CoarseningScheme { ColocRL, PlaceTo, SpotLight };

struct CoarseningConfig {
  CoarseningScheme scheme = CoarseningScheme::ColocRL;
  int target = 0;  // placeto only: stop at this many coarse operators (>= 1)
};

struct Coarsening {
  Graph coarse;                // finalized
  std::vector<OpId> group_of;  // fine operator -> its coarse operator
};

// The coarse graph of any grouping (`label`: a group label per fine operator), by the rules above:
// summed compute and memory, joined colocation classes, one tensor per coarse pair with summed
// bytes. A group of several operators is named by `name_of` (made unique) and keeps its members'
// type when they share one, else `mixed_type`. The caller guarantees the grouping is acyclic;
// `source` names the coarse graph in errors.
Coarsening contract_groups(const Graph& g, const std::vector<int>& label,
                           const std::function<std::string(const std::vector<OpId>&)>& name_of,
                           const std::string& mixed_type, const std::string& source);

// Throws std::invalid_argument if placeto is asked for a target below 1.
Coarsening coarsen(const Graph& graph, const CoarseningConfig& config);

// The fine placement: every operator goes where its coarse operator went. Throws
// std::invalid_argument if coarse_placement does not have one entry per coarse operator.
std::vector<DeviceId> expand_placement(const Coarsening& coarsening, std::span<const DeviceId> coarse_placement);

// "colocrl", "placeto", "spotlight".
std::string_view coarsening_scheme_name(CoarseningScheme scheme);
std::optional<CoarseningScheme> parse_coarsening_scheme(std::string_view name);
std::vector<std::string> coarsening_scheme_names();

// SpotLight's grouping key: the first two '/'-separated levels of a name, or the whole name when
// it has fewer than three levels ("a/b/c" -> "a/b", "a/b" -> "a/b", "a" -> "a").
std::string two_level_prefix(std::string_view name);

}  // namespace placesim
