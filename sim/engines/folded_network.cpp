#include "sim/engines/folded_network.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>

namespace placesim {

namespace {

// One copy of one route: its pair and its paths (into the flat path table).
struct Member {
  std::int32_t route = 0, copy = 0;
  DeviceId src = 0, dst = 0;
  std::int32_t first_path = 0, num_paths = 0;
};

struct FlatPath {
  std::int32_t first_link = 0, num_links = 0;
  double share = 1;
};

// A sorted list of numbers, a key for the maps of the refinement.
using Signature = std::vector<std::int64_t>;

std::int64_t bits(double x) { return std::bit_cast<std::int64_t>(x); }

// The copies of every route with their paths.
class Members {
 public:
  Members(const Graph& graph, std::span<const DeviceId> placement, const Folding& fold, const Cluster& cluster) {
    const auto tensors = graph.tensors();
    for (const Tensor& t : tensors) {
      if (!(t.bytes > 0)) continue;
      const DeviceId a = placement[t.src], b = route_destination(t, placement);
      if (a == b) continue;
      if (!fold.covers(a) || !fold.covers(b))
        throw std::invalid_argument(fmt::format("folded graph: a transfer from GPU {} to GPU {}, which the folding does not cover", a, b));
      const auto [it, fresh] = route_of_.try_emplace(FoldedNetwork::key(a, b), static_cast<std::int32_t>(pairs_.size()));
      if (fresh) pairs_.emplace_back(a, b);
    }
    for (std::int32_t r = 0; r < static_cast<std::int32_t>(pairs_.size()); ++r)
      for (int j = 0; j < fold.copies; ++j) {
        Member m;
        m.route = r;
        m.copy = j;
        m.src = fold.copy_of(pairs_[r].first, j);
        m.dst = fold.copy_of(pairs_[r].second, j);
        if (!cluster.reachable(m.src, m.dst))
          throw std::invalid_argument(fmt::format("folded graph: copy {} of the transfer GPU {} -> GPU {} goes from GPU {} to GPU {}, "
                                                  "which the cluster cannot reach",
                                                  j, pairs_[r].first, pairs_[r].second, m.src, m.dst));
        m.first_path = static_cast<std::int32_t>(paths_.size());
        for (const RoutePath& p : cluster.paths(m.src, m.dst)) {
          paths_.push_back({static_cast<std::int32_t>(links_.size()), static_cast<std::int32_t>(p.links.size()), p.share});
          links_.insert(links_.end(), p.links.begin(), p.links.end());
        }
        m.num_paths = static_cast<std::int32_t>(paths_.size()) - m.first_path;
        members_.push_back(m);
      }
  }

  std::span<const Member> members() const { return members_; }
  const FlatPath& path(const Member& m, int k) const { return paths_[static_cast<std::size_t>(m.first_path + k)]; }
  std::span<const std::int32_t> links(const FlatPath& p) const {
    return {links_.data() + p.first_link, static_cast<std::size_t>(p.num_links)};
  }
  std::size_t routes() const { return pairs_.size(); }
  std::pair<DeviceId, DeviceId> pair(std::int32_t route) const { return pairs_[static_cast<std::size_t>(route)]; }

 private:
  std::unordered_map<std::uint64_t, std::int32_t> route_of_;
  std::vector<std::pair<DeviceId, DeviceId>> pairs_;
  std::vector<Member> members_;
  std::vector<FlatPath> paths_;
  std::vector<std::int32_t> links_;
};

// Numbers the distinct signatures in the order they are first seen.
class Numbering {
 public:
  std::int32_t operator()(Signature s) { return map_.try_emplace(std::move(s), static_cast<std::int32_t>(map_.size())).first->second; }
  std::int32_t size() const { return static_cast<std::int32_t>(map_.size()); }

 private:
  std::map<Signature, std::int32_t> map_;
};

// The equitable partition: sub-orbit per member, class per link, and per (link, variable) the
// copies crossing it, where a variable is a sub-orbit's path k.
struct Partition {
  std::vector<std::int32_t> sub_orbit;           // per member
  std::vector<std::int32_t> link_class;          // per link of the cluster (-1: crossed by none)
  std::vector<double> class_bandwidth;
  std::vector<std::int32_t> class_links, class_example;
  // (link, variable) -> copies, sorted by (link, variable)
  std::vector<std::tuple<std::int32_t, std::int64_t, std::int32_t>> crossings;
  std::int64_t paths_per_member = 1;  // variables: sub-orbit * paths_per_member + k
  int rounds = 0;
  bool capped = false;  // stopped before the partition was equitable (refine's max_sub_orbits)
};

std::int64_t variable(const Partition& p, std::int32_t sub_orbit, int k) { return sub_orbit * p.paths_per_member + k; }

// Per link, the variables crossing it and how many copies of each (from the members' sub-orbits).
void count_crossings(const Members& m, Partition& p) {
  std::vector<std::pair<std::int32_t, std::int64_t>> pairs;
  const auto members = m.members();
  for (std::size_t i = 0; i < members.size(); ++i)
    for (int k = 0; k < members[i].num_paths; ++k)
      for (const std::int32_t link : m.links(m.path(members[i], k))) pairs.emplace_back(link, variable(p, p.sub_orbit[i], k));
  std::sort(pairs.begin(), pairs.end());
  p.crossings.clear();
  for (std::size_t i = 0; i < pairs.size();) {
    std::size_t j = i;
    while (j < pairs.size() && pairs[j] == pairs[i]) ++j;
    p.crossings.emplace_back(pairs[i].first, pairs[i].second, static_cast<std::int32_t>(j - i));
    i = j;
  }
}

// Links with the same bandwidth and the same copies of every variable form a class.
void classify_links(const Cluster& cluster, Partition& p) {
  p.link_class.assign(cluster.links().size(), -1);
  p.class_bandwidth.clear();
  p.class_links.clear();
  p.class_example.clear();
  Numbering classes;
  for (std::size_t i = 0; i < p.crossings.size();) {
    const std::int32_t link = std::get<0>(p.crossings[i]);
    Signature s{bits(cluster.link(link).bandwidth)};
    for (; i < p.crossings.size() && std::get<0>(p.crossings[i]) == link; ++i) {
      s.push_back(std::get<1>(p.crossings[i]));
      s.push_back(std::get<2>(p.crossings[i]));
    }
    const std::int32_t c = classes(std::move(s));
    if (c == static_cast<std::int32_t>(p.class_links.size())) {
      p.class_bandwidth.push_back(cluster.link(link).bandwidth);
      p.class_links.push_back(0);
      p.class_example.push_back(link);
    }
    p.link_class[link] = c;
    ++p.class_links[c];
  }
}

// Members of one sub-orbit stay together if they cross the same classes on every path; returns
// how many sub-orbits there are now.
std::int32_t split_members(const Members& m, Partition& p) {
  Numbering sub_orbits;
  const auto members = m.members();
  std::vector<std::int32_t> next(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    Signature s{p.sub_orbit[i]};
    for (int k = 0; k < members[i].num_paths; ++k) {
      const std::size_t from = s.size();
      for (const std::int32_t link : m.links(m.path(members[i], k))) s.push_back(p.link_class[link]);
      std::sort(s.begin() + static_cast<std::ptrdiff_t>(from), s.end());
      s.push_back(-1);  // ends path k
    }
    next[i] = sub_orbits(std::move(s));
  }
  p.sub_orbit = std::move(next);
  return sub_orbits.size();
}

// Whether every (route, copy mod group) keeps its copies in one sub-orbit; `why` names one that
// does not.
bool grouped_alike(const Members& m, const Partition& p, int group, std::string* why) {
  const auto members = m.members();
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> sub_orbit_of;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto [it, fresh] = sub_orbit_of.try_emplace({members[i].route, members[i].copy % group}, p.sub_orbit[i]);
    if (fresh || it->second == p.sub_orbit[i]) continue;
    if (why) {
      const Member& first = members[i - static_cast<std::size_t>(members[i].copy) + static_cast<std::size_t>(members[i].copy % group)];
      *why = fmt::format("copies of GPU {} -> GPU {} see the network unlike GPU {} -> GPU {}", first.src, first.dst, members[i].src,
                         members[i].dst);
    }
    return false;
  }
  return true;
}

// The refinement: sub-orbits first by what a copy sees alone (its route, its paths' shares, its
// latency, lone bandwidth and hop kind), then split by the classes of the links they cross until
// nothing splits. `group`: the copies as a fold into blocks `group` times larger would have them,
// copy j of a route in the route's (j mod group)-th transfer (1: as folded); `stop_unless_grouped`
// ends the refinement as soon as such a transfer's copies fall apart (the answer is known). More
// than `max_sub_orbits` sub-orbits (a fabric without symmetry splits every copy from every other)
// keeps the partition before that split: then a sub-orbit's copies cross links of several
// classes, each of whose constraints counts them (FoldedNetwork::Path: the union of its copies'
// classes), and move at one rate, their slowest's.
Partition refine(const Members& m, const Cluster& cluster, int group, bool stop_unless_grouped, std::int64_t max_sub_orbits) {
  Partition p;
  const auto members = m.members();
  Numbering first;
  p.sub_orbit.resize(members.size());
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Member& x = members[i];
    const PairView view = cluster.view(x.src, x.dst);
    Signature s{x.route, x.copy % group, x.num_paths, bits(view.latency), bits(view.inv_bandwidth),
                cluster.device(x.src).server == cluster.device(x.dst).server};
    for (int k = 0; k < x.num_paths; ++k) s.push_back(bits(m.path(x, k).share));
    p.sub_orbit[i] = first(std::move(s));
    p.paths_per_member = std::max<std::int64_t>(p.paths_per_member, x.num_paths);
  }
  std::int32_t count = first.size();
  for (;;) {
    ++p.rounds;
    count_crossings(m, p);
    classify_links(cluster, p);
    if (stop_unless_grouped && !grouped_alike(m, p, group, nullptr)) break;
    const std::vector<std::int32_t> before = p.sub_orbit;
    const std::int32_t now = split_members(m, p);
    if (now == count) break;
    if (now > max_sub_orbits) {
      p.sub_orbit = before;  // the crossings and classes are this partition's
      p.capped = true;
      break;
    }
    count = now;
  }
  return p;
}

// How the copies of a split route fall apart, in a few words.
std::string split_text(const FoldedNetwork& out, const FoldedNetwork::RouteSpan& span, std::size_t copies) {
  const FoldedNetwork::SubOrbit& a = out.sub_orbits[static_cast<std::size_t>(span.first)];
  const FoldedNetwork::SubOrbit& b = out.sub_orbits[static_cast<std::size_t>(span.first + 1)];
  return fmt::format("the {} copies of GPU {} -> GPU {} see the network in {} ways (GPU {} -> GPU {} unlike GPU {} -> GPU {})",
                     copies, a.src, a.dst, span.count, a.src, a.dst, b.src, b.dst);
}

}  // namespace

bool fold_exact_in_blocks(const Graph& graph, std::span<const DeviceId> placement, const Folding& fold, const Cluster& cluster,
                          int group, std::string* why) {
  const Members m(graph, placement, fold, cluster);
  // Exact when the copies of each route that a fold into larger blocks would put in one transfer
  // stay in one sub-orbit.
  const Partition p = refine(m, cluster, group, /*stop_unless_grouped=*/true, std::numeric_limits<std::int64_t>::max());
  return grouped_alike(m, p, group, why);
}

FoldedNetwork fold_network(const Graph& graph, std::span<const DeviceId> placement, const Folding& fold, const Cluster& cluster) {
  const Members m(graph, placement, fold, cluster);
  Partition p = refine(m, cluster, 1, false, 4 * static_cast<std::int64_t>(m.routes()) + 16);
  FoldedNetwork out;
  out.class_bandwidth = std::move(p.class_bandwidth);
  out.class_links = std::move(p.class_links);
  out.class_example = std::move(p.class_example);
  out.refinements = p.rounds;
  out.capped = p.capped;
  out.routes = static_cast<std::int64_t>(m.routes());
  const auto members = m.members();
  // Each route's members are consecutive (copy 0 first): its sub-orbits in order of first copy.
  for (std::size_t first = 0; first < members.size();) {
    std::size_t end = first;
    while (end < members.size() && members[end].route == members[first].route) ++end;
    FoldedNetwork::RouteSpan span{static_cast<std::int32_t>(out.sub_orbits.size()), 0};
    std::map<std::int32_t, std::int32_t> index;  // sub-orbit id -> position in out.sub_orbits
    for (std::size_t i = first; i < end; ++i) {
      const auto [it, fresh] = index.try_emplace(p.sub_orbit[i], static_cast<std::int32_t>(out.sub_orbits.size()));
      if (fresh) {
        FoldedNetwork::SubOrbit s;
        s.src = members[i].src;
        s.dst = members[i].dst;
        for (int k = 0; k < members[i].num_paths; ++k) s.paths.push_back({m.path(members[i], k).share, {}});
        out.sub_orbits.push_back(std::move(s));
        ++span.count;
      }
      FoldedNetwork::SubOrbit& s = out.sub_orbits[static_cast<std::size_t>(it->second)];
      ++s.copies;
      // Each class the sub-orbit's copies cross, once per path: its links are alike, one
      // constraint stands for all of them. (Equitable, every copy crosses the same classes; capped,
      // the path holds them all.)
      if (!fresh && !p.capped) continue;
      for (int k = 0; k < members[i].num_paths; ++k) {
        FoldedNetwork::Path& path = s.paths[static_cast<std::size_t>(k)];
        const std::int64_t var = variable(p, p.sub_orbit[i], k);
        for (const std::int32_t link : m.links(m.path(members[i], k))) {
          const std::int32_t cls = p.link_class[link];
          if (std::any_of(path.links.begin(), path.links.end(), [&](const auto& w) { return w.link_class == cls; })) continue;
          const auto c = std::lower_bound(p.crossings.begin(), p.crossings.end(), std::make_tuple(link, var, 0));
          path.links.push_back({cls, static_cast<double>(std::get<2>(*c))});
        }
      }
    }
    if (span.count > 1) {
      ++out.split_routes;
      if (out.first_split.empty()) out.first_split = split_text(out, span, end - first);
    }
    out.by_pair.emplace(FoldedNetwork::key(members[first].src, members[first].dst), span);
    first = end;
  }
  return out;
}

int collective_fold_block(const CollectiveSpec& spec, const Cluster& cluster, std::string* why) {
  auto say = [&](std::string text) {
    if (why) *why = std::move(text);
    return 0;
  };
  const int n = static_cast<int>(spec.group.size());
  // Consecutive ranks fill each server alike.
  int per_server = 0;
  for (int r = 0; r < n; ++r)
    if (cluster.device(spec.group[static_cast<std::size_t>(r)]).server != cluster.device(spec.group[0]).server) break;
    else ++per_server;
  for (int r = 0; r < n; ++r)
    if (cluster.device(spec.group[static_cast<std::size_t>(r)]).server !=
        cluster.device(spec.group[static_cast<std::size_t>(r - r % per_server)]).server)
      return say("the group's servers do not hold its ranks in equal consecutive runs");
  if (n % per_server != 0 || n / per_server < 2) return say("the group is one server's");
  std::string first_problem;
  int smallest = 0;
  std::optional<ExecutionGraph> folded;
  for (int b = per_server; b < n; b += per_server) {
    if (n % b != 0) continue;
    if (!folded) {
      if (std::string problem = collective_fold_problem(spec, cluster, b); !problem.empty()) {
        if (first_problem.empty()) first_problem = std::move(problem);
        continue;
      }
      smallest = b;
      folded = collective_graph(spec, cluster, b);
    }
    if (b % smallest != 0) continue;
    std::string split;
    if (fold_exact_in_blocks(folded->graph, folded->placement, *folded->fold, cluster, b / smallest, &split)) return b;
    if (first_problem.empty()) first_problem = std::move(split);
  }
  return say(first_problem.empty() ? "no block of its servers repeats" : first_problem);
}

FoldedTransferTime folded_transfer_time(const FoldedNetwork& network, const Cluster& cluster, DeviceId src, DeviceId dst,
                                        const Tensor& t) {
  if (src == dst || !(t.bytes > 0)) return {};
  const FoldedNetwork::RouteSpan* span = network.find(src, dst);
  if (!span) return {cluster.transfer_time(src, dst, t), true};
  FoldedTransferTime out;
  bool first = true;
  for (const FoldedNetwork::SubOrbit& s : network.route(*span)) {
    const double seconds = cluster.transfer_time(s.src, s.dst, t);
    if (!first && seconds != out.seconds) out.uniform = false;
    out.seconds = first ? seconds : std::max(out.seconds, seconds);
    first = false;
  }
  return out;
}

}  // namespace placesim
