#include "sim/collectives/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>

namespace placesim {

namespace {

bool power_of_two(std::size_t n) { return n >= 1 && std::has_single_bit(n); }

int floor_log2(std::size_t n) { return static_cast<int>(std::bit_width(n)) - 1; }

bool supports(CollectiveOp op, CollectiveAlgorithm a) {
  using A = CollectiveAlgorithm;
  switch (op) {
    case CollectiveOp::AllReduce: return true;  // every algorithm, multi-level and hierarchical only this
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather: return a == A::Ring || a == A::HalvingDoubling || a == A::Direct;
    case CollectiveOp::AllToAll: return a == A::Direct;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return a == A::Ring || a == A::Tree;
  }
  return false;
}

std::string algorithms_of(CollectiveOp op) {
  std::string out;
  for (const auto& a : kCollectiveAlgorithmNames)
    if (supports(op, a.value)) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

// The trees of tree all-reduce (NCCL's double binary tree: the ranks in order and reversed,
// half the bytes each), and the one tree (tree) or chain (ring) of broadcast and reduce from the
// root: ranks in tree order, order[0] the root.
struct Tree {
  std::vector<int> order;
  double bytes;
};
std::vector<Tree> collective_trees(const CollectiveSpec& spec) {
  const int n = static_cast<int>(spec.group.size());
  std::vector<int> order;
  for (int i = 0; i < n; ++i) order.push_back(spec.op == CollectiveOp::AllReduce ? i : (spec.root + i) % n);
  if (spec.op != CollectiveOp::AllReduce) return {{order, spec.bytes}};
  std::vector<int> reversed(order.rbegin(), order.rend());
  return {{order, spec.bytes / 2}, {reversed, spec.bytes / 2}};
}
// The parent of tree position i: (i - 1) / 2 in a binary tree, i - 1 in a chain (ring).
int tree_parent(CollectiveAlgorithm algorithm, int i) { return algorithm == CollectiveAlgorithm::Ring ? i - 1 : (i - 1) / 2; }

// Builds the operators and transfers of one collective.
class Builder {
 public:
  Builder(ExecutionGraph& out, const CollectiveSpec& spec, const std::string& name)
      : out_(out), spec_(spec), name_(name), n_(static_cast<int>(spec.group.size())) {}

  int ranks() const { return n_; }
  int chunks() const { return spec_.chunks; }
  bool condensed() const { return spec_.detail == CollectiveDetail::Condensed; }
  // Connections of different channels are independent (NCCL's channels: the double binary
  // tree's two trees may join the same two GPUs, each with its own connection).
  void set_channel(int channel) { channel_ = channel; }

  // A zero-compute operator of rank r.
  OpId node(int r, const std::string& what) {
    return out_.add_communication_step(fmt::format("{}.r{}.{}", name_, r, what), spec_.group[r]);
  }
  // The rank's start: waits for `after[r]` if given.
  OpId start(int r, std::span<const OpId> after) {
    const OpId s = node(r, "start");
    if (!after.empty() && after[r] >= 0) out_.depend(after[r], s);
    return s;
  }
  void depend(OpId from, OpId to) { out_.depend(from, to); }
  // An operator of rank r that waits for all of `pieces`.
  OpId join(int r, std::span<const OpId> pieces, const std::string& what) {
    const OpId done = node(r, what);
    for (OpId p : pieces) depend(p, done);
    return done;
  }
  // A step's operator per rank, each after the rank's previous one (`cur`, one per rank).
  std::vector<OpId> next_step(std::span<const OpId> cur, const std::string& what) {
    std::vector<OpId> next(cur.size());
    for (std::size_t r = 0; r < cur.size(); ++r) {
      next[r] = node(static_cast<int>(r), what);
      depend(cur[r], next[r]);
    }
    return next;
  }
  // A piece of `bytes` from `from` (on rank src) to `to` (on rank dst). After the first piece of
  // the connection src -> dst it leaves from a sender operator of its own, which waits for `from`
  // and for the previous piece's arrival: holding `from` itself back would hold back everything
  // else that waits for it.
  void send(int src, OpId from, int dst, OpId to, double bytes, std::int32_t latencies = 1) {
    auto [it, fresh] = last_arrival_.try_emplace({channel_, src, dst}, -1);
    OpId sender = from;
    if (!fresh) {
      sender = node(src, fmt::format("send{}", ++senders_));
      depend(from, sender);
      depend(it->second, sender);
    }
    out_.graph.add_tensor(sender, to, bytes, false, latencies);
    it->second = to;
  }
  // A message of `bytes` in spec.chunks pieces, as one step that ends when all have arrived:
  // every piece leaves after `from`, lands on an operator of its own on dst (one piece: on `done`
  // itself), and `done` waits for all of them.
  void message(int src, OpId from, int dst, OpId done, double bytes, const std::string& what) {
    const int c = spec_.chunks;
    for (int k = 0; k < c; ++k) {
      const OpId arrival = c == 1 ? done : node(dst, fmt::format("{}.from{}.k{}", what, src, k));
      send(src, from, dst, arrival, bytes / c);
      if (c > 1) depend(arrival, done);
    }
  }

 private:
  ExecutionGraph& out_;
  const CollectiveSpec& spec_;
  std::string name_;
  int n_;
  // Per connection (channel, src, dst), where its last piece landed.
  std::map<std::tuple<int, int, int>, OpId> last_arrival_;
  int channel_ = 0;
  long senders_ = 0;
};

// Ranks in `order` (a sub-group, as indices into the spec's group) pass S / |order| per step
// around the ring for `steps` steps, chunk by chunk: cur[i][k] is where chunk k stands at order[i].
// Each step's piece of rank order[i] goes to order[i + 1].
void ring_steps(Builder& b, std::span<const int> order, std::vector<std::vector<OpId>>& cur, int steps,
                double piece_bytes, const std::string& phase) {
  const int m = static_cast<int>(order.size());
  const int c = static_cast<int>(cur.front().size());
  if (b.condensed() && steps > 0) {
    // One flow per rank to its successor with every step's bytes and latencies; the phase ends
    // for all when the last flow has arrived (CollectiveDetail::Condensed).
    const OpId barrier = b.node(order[0], phase + ".all");
    std::vector<OpId> arrivals(m);
    for (int i = 0; i < m; ++i) arrivals[i] = b.node(order[i], phase + ".in");
    for (int i = 0; i < m; ++i) {
      const OpId sender = c == 1 ? cur[i][0] : b.join(order[i], cur[i], phase + ".out");
      b.send(order[i], sender, order[(i + 1) % m], arrivals[(i + 1) % m], piece_bytes * steps,
             static_cast<std::int32_t>(std::int64_t{steps} * c));
    }
    for (int i = 0; i < m; ++i) b.depend(arrivals[i], barrier);
    for (int i = 0; i < m; ++i) {
      const OpId end = b.node(order[i], phase + ".end");
      b.depend(barrier, end);
      cur[i].assign(c, end);
    }
    return;
  }
  for (int s = 1; s <= steps; ++s) {
    std::vector<std::vector<OpId>> next(m, std::vector<OpId>(c));
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < c; ++k) next[i][k] = b.node(order[i], fmt::format("{}.s{}.k{}", phase, s, k));
    for (int i = 0; i < m; ++i) {
      const int to = (i + 1) % m;
      for (int k = 0; k < c; ++k) b.send(order[i], cur[i][k], order[to], next[to][k], piece_bytes / c);
    }
    // What a rank had stays with it (the reduction adds to it).
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < c; ++k) b.depend(cur[i][k], next[i][k]);
    cur = std::move(next);
  }
}

}  // namespace

std::string collective_problem(const CollectiveSpec& spec, const Cluster& cluster) {
  const std::size_t n = spec.group.size();
  const std::string op(enum_name<CollectiveOp>(kCollectiveOpNames, spec.op));
  const std::string alg(enum_name<CollectiveAlgorithm>(kCollectiveAlgorithmNames, spec.algorithm));
  if (n < 2) return fmt::format("a collective needs at least 2 GPUs, the group has {}", n);
  std::vector<char> seen(static_cast<std::size_t>(cluster.num_devices()), 0);
  for (DeviceId d : spec.group) {
    if (d < 0 || d >= cluster.num_devices())
      return fmt::format("GPU {} is not in the cluster (it has {} GPUs)", d, cluster.num_devices());
    if (seen[static_cast<std::size_t>(d)]++) return fmt::format("GPU {} is in the group twice", cluster.device(d).name);
  }
  if (!(spec.bytes >= 0) || !std::isfinite(spec.bytes)) return fmt::format("bytes must be >= 0, got {}", spec.bytes);
  if (spec.chunks < 1) return fmt::format("chunks must be >= 1, got {}", spec.chunks);
  // A condensed ring phase's flow counts its latencies in 32 bits (Tensor::latencies).
  if (spec.detail == CollectiveDetail::Condensed && 2.0 * static_cast<double>(n) * spec.chunks > 2e9)
    return fmt::format("condensed, a ring of {} GPUs in {} chunks pays more path latencies per flow than placesim counts "
                       "(2 x GPUs x chunks must stay below 2e9)",
                       n, spec.chunks);
  if ((spec.op == CollectiveOp::Broadcast || spec.op == CollectiveOp::Reduce) &&
      (spec.root < 0 || spec.root >= static_cast<int>(n)))
    return fmt::format("the root must be a rank of the group (0 to {}), got {}", n - 1, spec.root);
  if (!supports(spec.op, spec.algorithm))
    return fmt::format("{} has no algorithm `{}`; it has: {}", op, alg, algorithms_of(spec.op));
  if (spec.algorithm == CollectiveAlgorithm::HalvingDoubling && !power_of_two(n))
    return fmt::format("halving-doubling needs a power-of-two group, this one has {} GPUs (ring or direct take any)", n);
  if (!cluster.all_pairs_reachable())
    for (DeviceId a : spec.group)
      for (DeviceId b : spec.group)
        if (!cluster.reachable(a, b))
          return fmt::format("{} cannot reach {} in this cluster", cluster.device(a).name, cluster.device(b).name);
  // (After reachability: multi-level's tiers are the routes' hops.)
  if (spec.algorithm == CollectiveAlgorithm::Hierarchical || spec.algorithm == CollectiveAlgorithm::MultiLevel) {
    try {
      collective_levels(spec, cluster);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  }
  return "";
}

namespace {

// append_collective's steps, the spec checked.
std::vector<OpId> append_steps(ExecutionGraph& out, const CollectiveSpec& spec, const Cluster& cluster,
                               const std::string& name, std::span<const OpId> after) {
  Builder b(out, spec, name);
  const int n = b.ranks();
  const int c = spec.chunks;
  const double S = spec.bytes;
  using A = CollectiveAlgorithm;
  using Op = CollectiveOp;
  std::vector<OpId> starts(n);
  for (int r = 0; r < n; ++r) starts[r] = b.start(r, after);
  std::vector<OpId> result(n);

  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[r] = r;

  if (spec.algorithm == A::Ring && (spec.op == Op::AllReduce || spec.op == Op::ReduceScatter || spec.op == Op::AllGather)) {
    std::vector<std::vector<OpId>> cur(n, std::vector<OpId>(c));
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < c; ++k) cur[r][k] = starts[r];
    const int steps = spec.op == Op::AllReduce ? 2 * (n - 1) : n - 1;
    ring_steps(b, all, cur, steps, S / n, "ring");
    for (int r = 0; r < n; ++r) result[r] = b.join(r, cur[r], "done");
    return result;
  }

  if (spec.algorithm == A::Ring || spec.algorithm == A::Tree) {
    // Broadcast and reduce (one tree or a chain from the root), and the double binary tree.
    auto parent_of = [&](int i) { return tree_parent(spec.algorithm, i); };
    const std::vector<Tree> trees = collective_trees(spec);
    const bool up = spec.op != Op::Broadcast, down = spec.op != Op::Reduce;
    std::vector<std::vector<OpId>> ends(n);  // per rank, what its result waits for
    for (std::size_t t = 0; t < trees.size(); ++t) {
      const Tree& tree = trees[t];
      b.set_channel(static_cast<int>(t));
      // have[i][k]: position i holds chunk k (reduced over its subtree on the way up; final on the way down).
      std::vector<std::vector<OpId>> have(n, std::vector<OpId>(c));
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < c; ++k) have[i][k] = starts[tree.order[i]];
      if (up) {
        std::vector<std::vector<OpId>> reduced(n, std::vector<OpId>(c));
        for (int i = 0; i < n; ++i)
          for (int k = 0; k < c; ++k) {
            reduced[i][k] = b.node(tree.order[i], fmt::format("t{}.up.k{}", t, k));
            b.depend(have[i][k], reduced[i][k]);
          }
        // Children before parents (positions in decreasing order); each child's pieces land on
        // operators of their own, so that one child's connection does not wait for the other's.
        for (int i = n - 1; i >= 1; --i) {
          const int p = parent_of(i);
          for (int k = 0; k < c; ++k) {
            const OpId arrival = b.node(tree.order[p], fmt::format("t{}.up.from{}.k{}", t, tree.order[i], k));
            b.send(tree.order[i], reduced[i][k], tree.order[p], arrival, tree.bytes / c);
            b.depend(arrival, reduced[p][k]);
          }
        }
        have = reduced;
      }
      if (down) {
        std::vector<std::vector<OpId>> got(n, std::vector<OpId>(c));
        for (int k = 0; k < c; ++k) got[0][k] = have[0][k];
        for (int i = 1; i < n; ++i)
          for (int k = 0; k < c; ++k) {
            got[i][k] = b.node(tree.order[i], fmt::format("t{}.down.k{}", t, k));
            b.depend(have[i][k], got[i][k]);
          }
        for (int i = 1; i < n; ++i)
          for (int k = 0; k < c; ++k)
            b.send(tree.order[parent_of(i)], got[parent_of(i)][k], tree.order[i], got[i][k], tree.bytes / c);
        have = got;
      }
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < c; ++k) ends[tree.order[i]].push_back(have[i][k]);
    }
    for (int r = 0; r < n; ++r) result[r] = b.join(r, ends[r], "done");
    return result;
  }

  if (spec.algorithm == A::HalvingDoubling) {
    // Step by step, each step ending when all pieces have arrived.
    std::vector<OpId> cur = starts;
    int step = 0;
    auto exchange = [&](int distance, double bytes) {
      const std::string what = fmt::format("hd.s{}", ++step);
      std::vector<OpId> next = b.next_step(cur, what);
      for (int r = 0; r < n; ++r) b.message(r, cur[r], r ^ distance, next[r ^ distance], bytes, what);
      cur = std::move(next);
    };
    const int log_n = floor_log2(static_cast<std::size_t>(n));
    if (spec.op != Op::AllGather)  // reduce-scatter by halving: distance n/2 first, bytes S/2^i
      for (int i = 1; i <= log_n; ++i) exchange(n >> i, S / std::ldexp(1.0, i));
    if (spec.op != Op::ReduceScatter)  // all-gather by doubling: distance 1 first, bytes S 2^(i-1) / n
      for (int i = 1; i <= log_n; ++i) exchange(1 << (i - 1), S * std::ldexp(1.0, i - 1) / n);
    return cur;
  }

  if (spec.algorithm == A::Direct) {
    std::vector<OpId> cur = starts;
    const int phases = spec.op == Op::AllReduce ? 2 : 1;
    for (int p = 1; p <= phases; ++p) {
      const std::string what = fmt::format("direct.p{}", p);
      std::vector<OpId> next = b.next_step(cur, what);
      for (int r = 0; r < n; ++r)
        for (int q = 0; q < n; ++q)
          if (q != r) b.message(r, cur[r], q, next[q], S / n, what);
      cur = std::move(next);
    }
    return cur;
  }

  // Hierarchical and multi-level all-reduce: ring reduce-scatters from the server up, a ring
  // all-reduce at the top level, ring all-gathers back down; each phase ends per rank.
  const auto levels = collective_levels(spec, cluster);
  std::vector<OpId> cur = starts;
  auto phase = [&](const std::vector<std::vector<int>>& rings, int steps, double piece, const std::string& what) {
    for (const auto& order : rings) {
      if (order.size() < 2 || steps == 0) continue;
      std::vector<std::vector<OpId>> chunks(order.size(), std::vector<OpId>(c));
      for (std::size_t i = 0; i < order.size(); ++i)
        for (int k = 0; k < c; ++k) chunks[i][k] = cur[order[i]];
      ring_steps(b, order, chunks, steps, piece, what);
      for (std::size_t i = 0; i < order.size(); ++i) cur[order[i]] = b.join(order[i], chunks[i], what + ".done");
    }
  };
  for (const LevelPhase& p : level_phases(levels, S)) {
    const char* what = p.op == CollectiveOp::ReduceScatter ? "rs" : p.op == CollectiveOp::AllReduce ? "ar" : "ag";
    phase(levels[p.level], p.steps, p.piece, fmt::format("l{}-{}", p.level, what));
  }
  return cur;
}

}  // namespace

std::vector<OpId> append_collective(ExecutionGraph& out, const CollectiveSpec& spec, const Cluster& cluster,
                                    const std::string& name, std::span<const OpId> after) {
  if (const std::string why = collective_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  if (!after.empty() && after.size() != spec.group.size())
    throw std::invalid_argument(fmt::format("append_collective: `after` has {} entries for {} ranks", after.size(),
                                            spec.group.size()));
  const OpId first = static_cast<OpId>(out.graph.num_operators());
  std::vector<OpId> result = append_steps(out, spec, cluster, name, after);
  out.collectives.push_back({name, spec.op, spec.group, spec.bytes, first, static_cast<OpId>(out.graph.num_operators())});
  return result;
}

std::vector<std::vector<int>> ranks_by_server(const CollectiveSpec& spec, const Cluster& cluster) {
  std::map<int, std::vector<int>> by_server;
  for (std::size_t r = 0; r < spec.group.size(); ++r) by_server[cluster.device(spec.group[r]).server].push_back(static_cast<int>(r));
  std::vector<std::vector<int>> out;
  for (auto& [server, ranks] : by_server) out.push_back(std::move(ranks));
  return out;
}

std::vector<LevelPhase> level_phases(const std::vector<std::vector<std::vector<int>>>& levels, double bytes) {
  const std::size_t top = levels.size() - 1;
  std::vector<double> piece(levels.size());
  double below = 1;
  for (std::size_t i = 0; i < levels.size(); ++i) piece[i] = bytes / (below *= static_cast<double>(levels[i].front().size()));
  auto ring = [&](std::size_t i) { return static_cast<int>(levels[i].front().size()); };
  std::vector<LevelPhase> phases;
  for (std::size_t i = 0; i < top; ++i) phases.push_back({i, CollectiveOp::ReduceScatter, ring(i) - 1, piece[i]});
  phases.push_back({top, CollectiveOp::AllReduce, 2 * (ring(top) - 1), piece[top]});
  for (std::size_t i = top; i-- > 0;) phases.push_back({i, CollectiveOp::AllGather, ring(i) - 1, piece[i]});
  return phases;
}

std::vector<std::vector<std::vector<int>>> collective_levels(const CollectiveSpec& spec, const Cluster& cluster) {
  const std::string name(enum_name<CollectiveAlgorithm>(kCollectiveAlgorithmNames, spec.algorithm));
  const std::vector<std::vector<int>> servers = ranks_by_server(spec, cluster);
  for (const auto& s : servers)
    if (s.size() != servers.front().size())
      throw std::invalid_argument(fmt::format("{} needs the same number of the group's GPUs in every server; they hold {} and {}",
                                              name, servers.front().size(), s.size()));
  std::vector<std::vector<std::vector<int>>> levels{servers};
  // A group's ranks in canonical order: its children's, in order (a server's: rank order).
  std::vector<std::vector<int>> groups = servers;
  auto rings_over = [](const std::vector<std::vector<int>>& children) {
    std::vector<std::vector<int>> rings(children.front().size());
    for (const auto& child : children)
      for (std::size_t j = 0; j < child.size(); ++j) rings[j].push_back(child[j]);
    return rings;
  };
  if (spec.algorithm == CollectiveAlgorithm::Hierarchical) {
    if (servers.size() > 1) levels.push_back(rings_over(servers));
    return levels;
  }
  // Multi-level: tiers of servers by the hops between them (their first GPUs'), nested.
  const std::size_t N = servers.size();
  std::vector<std::vector<std::size_t>> hops(N, std::vector<std::size_t>(N, 0));
  std::set<std::size_t> distances;
  for (std::size_t a = 0; a < N; ++a)
    for (std::size_t b = 0; b < N; ++b)
      if (a != b) {
        hops[a][b] = cluster.route(spec.group[servers[a].front()], spec.group[servers[b].front()]).size();
        distances.insert(hops[a][b]);
      }
  // Per tier, which group each server is in: servers within `d` hops of each other, which must be
  // every pair of the group (else the fabric is not a tree of tiers for this group).
  std::vector<int> group_of(N);
  std::iota(group_of.begin(), group_of.end(), 0);  // tier 0: each server alone
  for (std::size_t d : distances) {
    std::vector<int> next(N, -1);
    int count = 0;
    for (std::size_t a = 0; a < N; ++a) {
      if (next[a] >= 0) continue;
      for (std::size_t b = a; b < N; ++b)
        if (next[b] < 0 && (b == a || hops[a][b] <= d)) next[b] = count;
      ++count;
    }
    // A group is its first server and every server within d hops of it.
    auto server = [&](std::size_t x) { return cluster.device(spec.group[servers[x].front()]).server; };
    auto hops_text = [](std::size_t h) { return fmt::format("{} hop{}", h, h == 1 ? "" : "s"); };
    auto first_of = [&](std::size_t x) {
      std::size_t r = 0;
      while (next[r] != next[x]) ++r;
      return r;
    };
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < N; ++b) {
        if (hops[a][b] != hops[b][a])
          throw std::invalid_argument(fmt::format(
              "multi-level needs routes of equal length both ways: server {} reaches server {} in {} and is reached in "
              "{}, so the fabric has no tiers for this group",
              server(a), server(b), hops_text(hops[a][b]), hops_text(hops[b][a])));
        if (a == b || (next[a] == next[b]) == (hops[a][b] <= d)) continue;
        if (next[a] == next[b])
          throw std::invalid_argument(fmt::format(
              "multi-level needs nested tiers: servers {} and {} are both within {} of server {}, but {} from each "
              "other, so no tier at {} holds the three (the fabric's tiers do not nest for this group)",
              server(a), server(b), hops_text(d), server(first_of(a)), hops_text(hops[a][b]), hops_text(d)));
        // The group formed first took one of them and not the other, which was free then.
        const std::size_t x = first_of(a) < first_of(b) ? a : b, y = x == a ? b : a;
        throw std::invalid_argument(fmt::format(
            "multi-level needs nested tiers: servers {} and {} are {} apart, but server {} is within {} of server {} and "
            "server {} is not (it is {} away), so no tier at {} holds the three (the fabric's tiers do not nest for this "
            "group)",
            server(x), server(y), hops_text(hops[a][b]), server(x), hops_text(d), server(first_of(x)), server(y),
            hops_text(hops[first_of(x)][y]), hops_text(d)));
      }
    // The groups of the previous tier under each new group, in order of their first server.
    std::map<int, std::vector<int>> children;  // new group -> previous groups
    std::vector<char> listed(N, 0);
    for (std::size_t a = 0; a < N; ++a)
      if (!listed[group_of[a]]) {
        listed[group_of[a]] = 1;
        children[next[a]].push_back(group_of[a]);
      }
    const std::size_t k = children.begin()->second.size();
    for (const auto& [g, kids] : children)
      if (kids.size() != k)
        throw std::invalid_argument(fmt::format(
            "multi-level needs the same number of groups under every group of a tier; at {} hops one holds {}, another {}",
            d, k, kids.size()));
    std::vector<std::vector<int>> merged;
    std::vector<std::vector<int>> level;
    for (const auto& [g, kids] : children) {
      std::vector<std::vector<int>> parts;
      for (int kid : kids) parts.push_back(groups[static_cast<std::size_t>(kid)]);
      for (auto& ring : rings_over(parts)) level.push_back(std::move(ring));
      std::vector<int> all;
      for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
      merged.push_back(std::move(all));
    }
    if (k > 1) levels.push_back(std::move(level));
    groups = std::move(merged);  // indexed by the new tier's group ids, 0 .. count - 1 in order
    group_of = std::move(next);
  }
  return levels;
}

ExecutionGraph collective_graph(const CollectiveSpec& spec, const Cluster& cluster) {
  ExecutionGraph g;
  append_collective(g, spec, cluster, "c0");
  g.graph.finalize(fmt::format("{} by {}", enum_name<CollectiveOp>(kCollectiveOpNames, spec.op),
                               enum_name<CollectiveAlgorithm>(kCollectiveAlgorithmNames, spec.algorithm)));
  return g;
}

namespace {
// alpha (largest latency, s) and 1/B (largest inverse bandwidth, s per byte) over the ordered
// pairs of ranks that a collective's transfers join.
struct SlowestPair {
  double alpha = 0, inv_b = 0;
  void add(const CollectiveSpec& spec, const Cluster& cluster, int from, int to) {
    const DeviceId a = spec.group[static_cast<std::size_t>(from)], b = spec.group[static_cast<std::size_t>(to)];
    alpha = std::max(alpha, cluster.latency(a, b));
    inv_b = std::max(inv_b, 1.0 / cluster.bandwidth(a, b));
  }
};
}  // namespace

namespace {

// uniform_collective_time with the inverse bandwidth (s per byte), as SlowestPair gives it.
double collective_time(CollectiveOp op, CollectiveAlgorithm algorithm, int ranks, double bytes, double alpha,
                       double inv_b, int chunks) {
  const double n = ranks, c = chunks, S = bytes;
  if (S == 0 || ranks < 2) return 0;  // zero-byte pieces are free in every engine
  // A message of `bytes` in c pieces one after the other on its connection.
  auto message = [&](double b) { return c * alpha + b * inv_b; };
  // One piece, for pipelines.
  auto piece = [&](double b) { return alpha + b / c * inv_b; };
  using A = CollectiveAlgorithm;
  using Op = CollectiveOp;
  const int log_n = floor_log2(static_cast<std::size_t>(ranks));
  switch (algorithm) {
    case A::Ring:
      switch (op) {
        // Each connection carries the steps' pieces in order: (n-1) steps of c pieces of S/(nc).
        case Op::AllReduce: return 2 * (n - 1) * message(S / n);
        case Op::ReduceScatter:
        case Op::AllGather: return (n - 1) * message(S / n);
        // A chain of n - 1 hops: the last piece leaves the root after c - 1 others.
        default: return (n - 1 + c - 1) * piece(S);
      }
    case A::Tree: {
      // Heap-ordered binary tree of depth floor(log2 n): piece k is reduced at the root at
      // (depth + k) piece times, and reaches the deepest leaf depth piece times later.
      const double depth = log_n;
      if (op == Op::AllReduce) return (2 * depth + c - 1) * piece(S / 2);
      return (depth + c - 1) * piece(S);
    }
    case A::HalvingDoubling: {
      double t = 0;
      const int phases = op == Op::AllReduce ? 2 : 1;
      for (int i = 1; i <= log_n; ++i) t += message(S / std::ldexp(1.0, i));
      return phases * t;
    }
    case A::Direct:
      return (op == Op::AllReduce ? 2 : 1) * message(S / n);
    case A::Hierarchical:
    case A::MultiLevel:
      // One level of links: the same rings as ring, inside and across servers alike.
      return collective_time(op, A::Ring, ranks, bytes, alpha, inv_b, chunks);
  }
  return 0;
}

}  // namespace

double uniform_collective_time(CollectiveOp op, CollectiveAlgorithm algorithm, int ranks, double bytes, double alpha,
                               double bandwidth, int chunks) {
  return collective_time(op, algorithm, ranks, bytes, alpha, 1.0 / bandwidth, chunks);
}

namespace {

// The closed form of a checked spec, its pairs priced once: each algorithm's steps at the slowest
// of the pairs it sends between (halving-doubling and the levels of hierarchical and multi-level:
// each step's or level's own), not the slowest pair of the group, which a ring over a multi-NIC
// server's per-destination allocation, say, never uses. at(bytes) is the time at any size.
class PricedCollective {
 public:
  PricedCollective(const CollectiveSpec& spec, const Cluster& cluster) : spec_(spec) {
    using A = CollectiveAlgorithm;
    using Op = CollectiveOp;
    const int n = static_cast<int>(spec.group.size());
    switch (spec.algorithm) {
      case A::Ring:
        if (spec.op == Op::AllReduce || spec.op == Op::ReduceScatter || spec.op == Op::AllGather) {
          for (int r = 0; r < n; ++r) slowest_.add(spec, cluster, r, (r + 1) % n);  // each rank to its successor
          break;
        }
        [[fallthrough]];  // broadcast and reduce: a chain from the root
      case A::Tree:
        for (const Tree& tree : collective_trees(spec))
          for (int i = 1; i < n; ++i) {
            const int child = tree.order[static_cast<std::size_t>(i)];
            const int parent = tree.order[static_cast<std::size_t>(tree_parent(spec.algorithm, i))];
            if (spec.op != Op::Broadcast) slowest_.add(spec, cluster, child, parent);  // up
            if (spec.op != Op::Reduce) slowest_.add(spec, cluster, parent, child);     // down
          }
        break;
      case A::HalvingDoubling:
        // Step i exchanges S / 2^i between ranks n / 2^i apart, in the reduce-scatter's halving
        // and again in the all-gather's doubling.
        for (int i = 1; (n >> i) >= 1; ++i) {
          SlowestPair& step = steps_.emplace_back();
          for (int r = 0; r < n; ++r) step.add(spec, cluster, r, r ^ (n >> i));
        }
        break;
      case A::Direct:
        for (int a = 0; a < n; ++a)
          for (int b = 0; b < n; ++b)
            if (a != b) slowest_.add(spec, cluster, a, b);
        break;
      case A::Hierarchical:
      case A::MultiLevel:
        // Each phase's ring steps at the slowest successor pair of its level's rings.
        levels_ = collective_levels(spec, cluster);
        steps_.resize(levels_.size());
        for (std::size_t i = 0; i < levels_.size(); ++i)
          for (const auto& ring : levels_[i])
            if (ring.size() > 1)
              for (std::size_t j = 0; j < ring.size(); ++j) steps_[i].add(spec, cluster, ring[j], ring[(j + 1) % ring.size()]);
        break;
    }
  }

  double at(double bytes) const {
    const double c = spec_.chunks, S = bytes;
    if (S == 0) return 0;  // zero-byte pieces are free in every engine
    double t = 0;
    switch (spec_.algorithm) {
      case CollectiveAlgorithm::HalvingDoubling:
        for (std::size_t i = 0; i < steps_.size(); ++i)
          t += c * steps_[i].alpha + S / std::ldexp(1.0, static_cast<int>(i) + 1) * steps_[i].inv_b;
        return (spec_.op == CollectiveOp::AllReduce ? 2 : 1) * t;
      case CollectiveAlgorithm::Hierarchical:
      case CollectiveAlgorithm::MultiLevel:
        for (const LevelPhase& p : level_phases(levels_, S))
          t += p.steps * (c * steps_[p.level].alpha + p.piece * steps_[p.level].inv_b);
        return t;
      default:
        return collective_time(spec_.op, spec_.algorithm, static_cast<int>(spec_.group.size()), S, slowest_.alpha,
                               slowest_.inv_b, spec_.chunks);
    }
  }

 private:
  const CollectiveSpec& spec_;
  SlowestPair slowest_;             // ring, tree, direct
  std::vector<SlowestPair> steps_;  // halving-doubling: per step; hierarchical, multi-level: per level
  std::vector<std::vector<std::vector<int>>> levels_;
};

}  // namespace

double collective_closed_form(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  return PricedCollective(spec, cluster).at(spec.bytes);
}

AffineTime collective_affine_form(const CollectiveSpec& spec, const Cluster& cluster) {
  if (const std::string why = collective_problem(spec, cluster); !why.empty()) throw std::invalid_argument(why);
  const PricedCollective priced(spec, cluster);
  return affine_in_bytes([&](double bytes) { return priced.at(bytes); });
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::AllReduce: return 2 * (n - 1) / n;
    case CollectiveOp::ReduceScatter:
    case CollectiveOp::AllGather:
    case CollectiveOp::AllToAll: return (n - 1) / n;
    case CollectiveOp::Broadcast:
    case CollectiveOp::Reduce: return 1;
  }
  return 1;
}

}  // namespace placesim
