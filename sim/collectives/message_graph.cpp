// The message graph of a collective: its phases (sim/collectives/shape.h) as the operators and
// transfers of an execution graph, by the two rules of sim/collectives/collectives.h.
#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "sim/collectives/algorithms.h"
#include "sim/collectives/collectives.h"
#include "sim/collectives/nccl.h"

namespace placesim {

namespace {

// Builds the operators and transfers of one collective.
class Builder {
 public:
  Builder(ExecutionGraph& out, const CollectiveSpec& spec, const Cluster& cluster, const std::string& name, int represented)
      : out_(out), spec_(spec), cluster_(cluster), name_(name), n_(static_cast<int>(spec.group.size())),
        represented_(represented), base_(nccl_base_latency(spec, cluster)) {}

  int ranks() const { return n_; }
  // Folded (sim/core/folding.h): the ranks whose operators are built, 0 .. represented - 1; rank
  // r stands where rank r mod represented does, a whole number of blocks on (every rank without
  // folding).
  int represented() const { return represented_; }
  bool built(int r) const { return r < represented_; }
  int local(int r) const { return r % represented_; }
  // Rank r as rank `of` sees it: r moved back by the blocks `of` is on (a sender's name at its
  // receiver's representative).
  int seen_from(int r, int of) const { return ((r - (of - local(of))) % n_ + n_) % n_; }
  int channels() const { return spec_.channels; }
  int chunks() const { return spec_.chunks; }
  // Chunks of a tree phase whose trees each carry `share` bytes (tree_chunks).
  int tree_chunks_of(double share) const { return tree_chunks(spec_, cluster_, share); }
  double ring_overhead(const RingPhase& ring) const { return nccl_ring_overhead(spec_, cluster_, ring); }
  bool condensed() const { return spec_.detail == CollectiveDetail::Condensed; }
  // Bytes of a tree message from rank src to rank dst per byte of share (TreePhase::in_server_scale).
  double tree_scale(const TreePhase& phase, int src, int dst) const {
    return in_server_scale(phase, cluster_, spec_.group[src], spec_.group[dst]);
  }
  // Connections of different channels are independent (NCCL's channels: the double binary
  // tree's two trees may join the same two GPUs, each with its own connection).
  void set_channel(int channel) { channel_ = channel; }
  // A ring phase's messages each pay its mean per-hop latency (nccl_ring_overhead) instead of
  // their own hop's; a negative value: their own.
  void set_ring_overhead(double overhead_s) { ring_overhead_s_ = overhead_s; }

  // A zero-compute operator of rank r (a built one).
  OpId node(int r, const std::string& what) {
    return out_.add_communication_step(fmt::format("{}.r{}.{}", name_, r, what), spec_.group[r]);
  }
  // The rank's start: waits for `after[r]` if given. Condensed, it is `after[r]` itself (fewer
  // operators for plans of thousands of GPUs: the messages leave from it).
  OpId start(int r, std::span<const OpId> after) {
    if (condensed() && !after.empty() && after[r] >= 0) {
      if (base_ > 0) launching_.insert(after[r]);
      return after[r];
    }
    const OpId s = node(r, "start");
    if (!after.empty() && after[r] >= 0) out_.depend(after[r], s);
    if (base_ > 0) launching_.insert(s);
    return s;
  }
  // An operator after the rank's start with nothing received in between is still in the
  // collective's launch: a message leaving from it pays the base latency (nccl_base_latency).
  void depend(OpId from, OpId to) {
    out_.depend(from, to);
    if (base_ == 0) return;  // no base latency to place: nothing to track
    if (launching_.count(from) && !received_.count(to)) launching_.insert(to);
    else launching_.erase(to), received_.insert(to);
  }
  // An operator of rank r that waits for all of `pieces` (condensed, a lone piece stands for it).
  OpId join(int r, std::span<const OpId> pieces, const std::string& what) {
    if (condensed() && pieces.size() == 1) return pieces.front();
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
  // With NCCL costs (sim/collectives/nccl.h) the piece carries its wire bytes and pays the
  // per-hop latency, and the collective's base latency when it leaves from the rank's start.
  // A pipelined chunk after the first (`in_flight`) hides its overhead behind the chunks before it
  // (NCCL's slots in flight per connection).
  // A message leaves from an operator on its rank's GPU: `from` on another (a condensed ring's
  // barrier) gets a sender step too.
  // Folded, `to` is on dst's representative (rank local(dst)) and the bytes go to dst's GPU.
  void send(int src, OpId from, int dst, OpId to, double bytes, std::int32_t latencies = 1, bool in_flight = false) {
    auto [it, fresh] = last_arrival_.try_emplace({channel_, src, dst}, -1);
    OpId sender = from;
    if (!fresh || out_.placement[from] != spec_.group[src]) {
      sender = node(src, fmt::format("send{}", ++senders_));
      depend(from, sender);
      if (!fresh) depend(it->second, sender);
    }
    const MessageCost cost = nccl_message_cost(spec_, cluster_, spec_.group[src], spec_.group[dst]);
    const double hop = ring_overhead_s_ >= 0 ? ring_overhead_s_ : cost.overhead_s;
    const double overhead = (in_flight ? 0.0 : hop * latencies) + (launching_.count(sender) ? base_ : 0.0);
    out_.graph.add_tensor(sender, to, bytes * cost.wire_factor, false, latencies, overhead, built(dst) ? -1 : spec_.group[dst]);
    if (base_ > 0) launching_.erase(to), received_.insert(to);
    it->second = to;
  }
  // A message of `bytes` in spec.chunks pieces, as one step that ends when all have arrived:
  // every piece leaves after `from`, lands on an operator of its own on dst (one piece: on `done`
  // itself), and `done` waits for all of them.
  void message(int src, OpId from, int dst, OpId done, double bytes, const std::string& what) {
    const int c = spec_.chunks;
    for (int k = 0; k < c; ++k) {
      const OpId arrival = c == 1 ? done : node(local(dst), fmt::format("{}.from{}.k{}", what, seen_from(src, dst), k));
      send(src, from, dst, arrival, bytes / c);
      if (c > 1) depend(arrival, done);
    }
  }

 private:
  ExecutionGraph& out_;
  const CollectiveSpec& spec_;
  const Cluster& cluster_;
  std::string name_;
  int n_, represented_;
  // Operators that wait for nothing but their rank's start (launching_), and those that wait for
  // a message or for an operator that does (received_).
  std::unordered_set<OpId> launching_, received_;
  double base_;  // the collective's base latency (nccl_base_latency)
  // Per connection (channel, src, dst), where its last piece landed.
  std::map<std::tuple<int, int, int>, OpId> last_arrival_;
  int channel_ = 0;
  double ring_overhead_s_ = -1;
  long senders_ = 0;
};

// Ranks in `order` (a sub-group, as indices into the spec's group) pass S / |order| per step
// around the ring for `steps` steps, chunk by chunk: cur[i][k] is where chunk k stands at order[i].
// Each step's piece of rank order[i] goes to order[i + 1].
// Folded, only the positions of built ranks are filled; a send to a rank that is not built lands
// on its representative's operator (`at`: the position of each built rank in the ring).
void ring_steps(Builder& b, std::span<const int> order, std::vector<std::vector<OpId>>& cur, int steps,
                double piece_bytes, const std::string& phase) {
  const int m = static_cast<int>(order.size());
  const int c = b.chunks();
  std::vector<int> at(static_cast<std::size_t>(b.represented()), -1);
  for (int i = 0; i < m; ++i)
    if (b.built(order[i])) at[order[i]] = i;
  // The position holding what rank order[i]'s operators stand for.
  auto position = [&](int i) { return at[b.local(order[i])]; };
  if (b.condensed() && steps > 0) {
    // One flow per rank to its successor with every step's bytes and latencies; the phase ends
    // for all when the last flow has arrived (CollectiveDetail::Condensed).
    const OpId barrier = b.node(order[position(0)], phase + ".all");
    std::vector<OpId> arrivals(m, -1);
    for (int i = 0; i < m; ++i)
      if (b.built(order[i])) arrivals[i] = b.node(order[i], phase + ".in");
    for (int i = 0; i < m; ++i) {
      if (!b.built(order[i])) continue;
      const OpId sender = c == 1 ? cur[i][0] : b.join(order[i], cur[i], phase + ".out");
      b.send(order[i], sender, order[(i + 1) % m], arrivals[position((i + 1) % m)], piece_bytes * steps,
             static_cast<std::int32_t>(std::int64_t{steps} * c));
    }
    // What follows waits for the barrier itself, from any GPU (a zero-byte dependency is free):
    // no end step per rank (a fifth of a plan's operators); a later message of a rank
    // leaves from a sender step on its GPU (Builder::send).
    for (int i = 0; i < m; ++i)
      if (arrivals[i] >= 0) b.depend(arrivals[i], barrier);
    for (int i = 0; i < m; ++i) cur[i].assign(c, barrier);
    return;
  }
  // The built positions, once: a folded ring of thousands of ranks builds a few of them per step.
  std::vector<int> built;
  for (int i = 0; i < m; ++i)
    if (b.built(order[i])) built.push_back(i);
  std::vector<std::vector<OpId>> next(m);
  for (int s = 1; s <= steps; ++s) {
    for (const int i : built) {
      next[i].resize(c);
      for (int k = 0; k < c; ++k) next[i][k] = b.node(order[i], fmt::format("{}.s{}.k{}", phase, s, k));
    }
    for (const int i : built) {
      const int to = (i + 1) % m;
      for (int k = 0; k < c; ++k) b.send(order[i], cur[i][k], order[to], next[position(to)][k], piece_bytes / c);
    }
    // What a rank had stays with it (the reduction adds to it).
    for (const int i : built)
      for (int k = 0; k < c; ++k) b.depend(cur[i][k], next[i][k]);
    for (const int i : built) std::swap(cur[i], next[i]);
  }
}

// A ring phase: each ring's ranks step by step (above); each rank's part ends with its chunks.
// Rings of one phase run at once (hierarchical's disjoint rings; NCCL's channels, whose rings
// share ranks, each on connections of its own): each starts from where its ranks stood.
void append_ring(Builder& b, const RingPhase& ring, double bytes, std::vector<OpId>& cur, const std::string& name,
                 const std::string& end) {
  const int c = b.chunks();
  const std::vector<OpId> start = cur;
  std::vector<std::vector<OpId>> ends(cur.size());
  b.set_ring_overhead(b.ring_overhead(ring));
  for (std::size_t r = 0; r < ring.rings.size(); ++r) {
    const auto& order = ring.rings[r];
    if (order.size() < 2 || ring.steps == 0) continue;
    // Folded: a ring of ranks that are not built is a copy of one that is.
    if (std::none_of(order.begin(), order.end(), [&](int rank) { return b.built(rank); })) continue;
    b.set_channel(static_cast<int>(r));
    std::vector<std::vector<OpId>> chunks(order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      if (b.built(order[i])) chunks[i].assign(c, start[order[i]]);
    // Channels' rings share ranks: their operators are named apart.
    ring_steps(b, order, chunks, ring.steps, bytes / ring.divisor, b.channels() > 1 ? fmt::format("{}.ch{}", name, r) : name);
    for (std::size_t i = 0; i < order.size(); ++i)
      if (b.built(order[i])) ends[order[i]].insert(ends[order[i]].end(), chunks[i].begin(), chunks[i].end());
  }
  b.set_channel(0);
  b.set_ring_overhead(-1);
  for (std::size_t r = 0; r < cur.size(); ++r)
    if (!ends[r].empty()) cur[r] = b.join(static_cast<int>(r), ends[r], end);
}

// A tree phase: each tree on a channel of its own (NCCL's channels: the double binary tree's two
// trees may join the same two GPUs, each with its own connection), chunk by chunk up to the root
// and back down.
void append_trees(Builder& b, const TreePhase& phase, double bytes, std::vector<OpId>& cur, const std::string& end) {
  const int n = static_cast<int>(phase.trees.front().size());
  const double share = bytes / phase.divisor;
  const int c = b.tree_chunks_of(share);
  std::vector<std::vector<OpId>> ends(cur.size());  // per rank, what its part waits for
  for (std::size_t t = 0; t < phase.trees.size(); ++t) {
    const std::vector<int>& order = phase.trees[t];
    b.set_channel(static_cast<int>(t));
    // have[i][k]: position i holds chunk k (reduced over its subtree on the way up; final on the way down).
    std::vector<std::vector<OpId>> have(n, std::vector<OpId>(c));
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < c; ++k) have[i][k] = cur[order[i]];
    if (phase.up) {
      std::vector<std::vector<OpId>> reduced(n, std::vector<OpId>(c));
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < c; ++k) {
          reduced[i][k] = b.node(order[i], fmt::format("t{}.up.k{}", t, k));
          b.depend(have[i][k], reduced[i][k]);
        }
      // Children before parents (positions in decreasing order); each child's pieces land on
      // operators of their own, so that one child's connection does not wait for the other's.
      for (int i = n - 1; i >= 1; --i) {
        const int p = tree_parent(phase, t, i);
        for (int k = 0; k < c; ++k) {
          const OpId arrival = b.node(order[p], fmt::format("t{}.up.from{}.k{}", t, order[i], k));
          b.send(order[i], reduced[i][k], order[p], arrival, share / c * b.tree_scale(phase, order[i], order[p]), 1, k > 0);
          b.depend(arrival, reduced[p][k]);
        }
      }
      have = reduced;
    }
    if (phase.down) {
      std::vector<std::vector<OpId>> got(n, std::vector<OpId>(c));
      for (int k = 0; k < c; ++k) got[0][k] = have[0][k];
      for (int i = 1; i < n; ++i)
        for (int k = 0; k < c; ++k) {
          got[i][k] = b.node(order[i], fmt::format("t{}.down.k{}", t, k));
          b.depend(have[i][k], got[i][k]);
        }
      for (int i = 1; i < n; ++i) {
        const int p = tree_parent(phase, t, i);
        const double bytes_per_chunk = share / c * b.tree_scale(phase, order[p], order[i]);
        for (int k = 0; k < c; ++k) b.send(order[p], got[p][k], order[i], got[i][k], bytes_per_chunk, 1, k > 0);
      }
      have = got;
    }
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < c; ++k) ends[order[i]].push_back(have[i][k]);
  }
  b.set_channel(0);
  b.set_ring_overhead(-1);
  for (std::size_t r = 0; r < cur.size(); ++r)
    if (!ends[r].empty()) cur[r] = b.join(static_cast<int>(r), ends[r], end);
}

// An exchange phase: every message at once; a rank's next step waits for every message to it.
void append_exchange(Builder& b, const ExchangePhase& phase, double bytes, std::vector<OpId>& cur,
                     const std::string& name) {
  std::vector<OpId> next = b.next_step(cur, name);
  for (const auto& [from, to] : phase.messages)
    if (b.built(from)) b.message(from, cur[from], to, next[b.local(to)], bytes / phase.divisor, name);
  cur = std::move(next);
}

}  // namespace

namespace {

// Whether rotating the ranks by `block` (r -> r + block mod n) maps the phase onto itself.
std::string phase_fold_problem(const CollectivePhase& phase, int n, int block) {
  auto moved = [&](int r) { return (r + block) % n; };
  if (std::holds_alternative<TreePhase>(phase.shape))
    return fmt::format("its {} phase is a tree, rooted at one rank: its copies are not alike", phase.name);
  if (const auto* exchange = std::get_if<ExchangePhase>(&phase.shape)) {
    std::unordered_set<std::uint64_t> messages;
    auto key = [](int a, int b) { return static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b); };
    for (const auto& [a, b] : exchange->messages) messages.insert(key(a, b));
    for (const auto& [a, b] : exchange->messages)
      if (!messages.count(key(moved(a), moved(b))))
        return fmt::format("its {} phase sends rank {} to rank {} but not rank {} to rank {}", phase.name, a, b, moved(a), moved(b));
    return "";
  }
  // Rings: each one maps onto itself (a ring through every block), or lies within one block of
  // ranks and maps onto another such ring.
  const auto& ring = std::get<RingPhase>(phase.shape);
  // A ring inside one block of ranks, as its ranks moved to block 0 (empty: it crosses blocks).
  auto at_block_zero = [&](const std::vector<int>& order) {
    const int q = order.front() / block;
    std::vector<int> at_zero;
    if (std::all_of(order.begin(), order.end(), [&](int r) { return r / block == q; }))
      for (int r : order) at_zero.push_back(r - q * block);
    return at_zero;
  };
  std::set<std::vector<int>> within;  // the rings inside block 0
  for (const auto& order : ring.rings)
    if (order.size() >= 2 && order.front() < block) within.insert(at_block_zero(order));
  for (const auto& order : ring.rings) {
    if (order.size() < 2) continue;
    if (const std::vector<int> at_zero = at_block_zero(order); !at_zero.empty()) {
      if (order.front() >= block && !within.count(at_zero))
        return fmt::format("its {} phase has a ring of ranks {}.. that no ring of the first block's ranks repeats", phase.name,
                           order.front());
      continue;
    }
    std::unordered_map<int, int> next;
    for (std::size_t i = 0; i < order.size(); ++i) next[order[i]] = order[(i + 1) % order.size()];
    for (const auto& [r, s] : next) {
      const auto it = next.find(moved(r));
      if (it == next.end() || it->second != moved(s))
        return fmt::format("its {} phase passes rank {} to rank {}, but rank {} not to rank {}", phase.name, r, s, moved(r), moved(s));
    }
  }
  return "";
}

}  // namespace

std::string collective_fold_problem(const CollectiveSpec& tuned, const Cluster& cluster, int represented) {
  const int n = static_cast<int>(tuned.group.size());
  if (represented <= 0 || represented >= n) return "";
  if (n % represented != 0) return fmt::format("{} ranks are not whole blocks of {}", n, represented);
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
  for (const CollectivePhase& phase : collective_shape(spec, cluster))
    if (std::string why = phase_fold_problem(phase, n, represented); !why.empty())
      return fmt::format("{} by {}: {}", enum_name<CollectiveOp>(kCollectiveOpNames, spec.op), collective_choice_text(spec, cluster), why);
  return "";
}

std::vector<OpId> append_collective(ExecutionGraph& out, const CollectiveSpec& tuned, const Cluster& cluster,
                                    const std::string& name, std::span<const OpId> after, bool results_on_ranks,
                                    int represented) {
  if (const std::string why = collective_problem(tuned, cluster); !why.empty()) throw std::invalid_argument(why);
  const int n = static_cast<int>(tuned.group.size());
  const int built = represented <= 0 ? n : represented;
  if (const std::string why = collective_fold_problem(tuned, cluster, built); !why.empty())
    throw std::invalid_argument(fmt::format("append_collective: cannot fold to {} of {} ranks: {}", built, n, why));
  if (!after.empty() && static_cast<int>(after.size()) != built)
    throw std::invalid_argument(fmt::format("append_collective: `after` has {} entries for {} ranks", after.size(), built));
  const OpId first = static_cast<OpId>(out.graph.num_operators());
  const CollectiveSpec spec = nccl_resolved(tuned, cluster);
  Builder b(out, spec, cluster, name, built);
  std::vector<OpId> cur(static_cast<std::size_t>(built));
  for (int r = 0; r < built; ++r) cur[r] = b.start(r, after);
  for (const CollectivePhase& phase : collective_shape(spec, cluster)) {
    if (const auto* ring = std::get_if<RingPhase>(&phase.shape))
      append_ring(b, *ring, spec.bytes, cur, phase.name, phase.end_name());
    else if (const auto* trees = std::get_if<TreePhase>(&phase.shape))
      append_trees(b, *trees, spec.bytes, cur, phase.end_name());
    else
      append_exchange(b, std::get<ExchangePhase>(phase.shape), spec.bytes, cur, phase.name);
  }
  if (results_on_ranks)
    for (int r = 0; r < built; ++r)
      if (out.placement[cur[r]] != spec.group[r]) {  // a condensed ring's barrier, on its first rank's GPU
        const OpId end = b.node(r, "end");
        b.depend(cur[r], end);
        cur[r] = end;
      }
  out.collectives.push_back({name, spec.op, spec.group, spec.bytes, first, static_cast<OpId>(out.graph.num_operators())});
  return cur;
}

ExecutionGraph collective_graph(const CollectiveSpec& spec, const Cluster& cluster, int represented) {
  ExecutionGraph g;
  const int n = static_cast<int>(spec.group.size());
  append_collective(g, spec, cluster, "c0", {}, true, represented);
  if (represented > 0 && represented < n) {
    const std::vector<DeviceId> reps(spec.group.begin(), spec.group.begin() + represented);
    g.fold = std::make_shared<Folding>(make_folding(
        n / represented, reps, [&](int i, int j) { return spec.group[static_cast<std::size_t>(j * represented + i)]; },
        cluster.num_devices(), fmt::format("{} ranks as {} copies of the first {}", n, n / represented, represented)));
  }
  g.graph.finalize(fmt::format("{} by {}", enum_name<CollectiveOp>(kCollectiveOpNames, spec.op),
                               spec.tuned ? std::string("auto") : collective_choice_text(spec, cluster)));
  return g;
}

}  // namespace placesim
