#include "placement/strategies/max_load/max_load.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <cstdint>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <stdexcept>
#include <unordered_set>

#include "sim/core/units.h"

namespace placesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The forward graph of units (a colocation class, or an operator of no class) after cycles are
// fused: components, their compute and memory, and their edges.
struct ForwardGraph {
  std::vector<int> component_of_op;
  std::vector<double> compute, memory;       // per component (seconds on a speed-1 GPU, bytes)
  std::vector<std::vector<int>> preds;       // per component, deduplicated
  std::vector<int> topological;              // components in a topological order
  bool training = false;
};

ForwardGraph build_forward_graph(const Graph& g) {
  ForwardGraph fg;
  const int ops = static_cast<int>(g.num_operators());
  for (const Operator& op : g.operators())
    if (op.type == "backward") fg.training = true;
  auto backward = [&](OpId v) { return fg.training && g.op(v).type == "backward"; };

  // Units: colocation classes first, then one per operator of no class.
  const int classes = g.num_colocation_classes();
  std::vector<int> unit_of(ops);
  int units = classes;
  for (OpId v = 0; v < ops; ++v) unit_of[v] = g.op(v).colocation_class >= 0 ? g.op(v).colocation_class : units++;
  std::vector<char> has_forward(units, 0);
  for (OpId v = 0; v < ops; ++v)
    if (!backward(v)) has_forward[unit_of[v]] = 1;

  // Forward edges; a unit of backward operators only is placed by its backward edges, mirrored
  // (a gradient flows from the consumer's layer back to the producer's).
  using Digraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  Digraph ug(units);
  for (const Tensor& t : g.tensors()) {
    const int a = unit_of[t.src], b = unit_of[t.dst];
    if (a == b) continue;
    if (!backward(t.src) && !backward(t.dst)) {
      boost::add_edge(a, b, ug);
    } else if (backward(t.src) && backward(t.dst) && (!has_forward[a] || !has_forward[b])) {
      boost::add_edge(b, a, ug);
    }
  }
  std::vector<int> component(units);
  const int components = units ? boost::strong_components(ug, component.data()) : 0;

  fg.component_of_op.resize(ops);
  fg.compute.assign(components, 0.0);
  fg.memory.assign(components, 0.0);
  for (OpId v = 0; v < ops; ++v) {
    const int c = component[unit_of[v]];
    fg.component_of_op[v] = c;
    fg.compute[c] += g.op(v).compute_s;
    fg.memory[c] += g.op(v).memory_bytes;
  }
  std::vector<std::set<int>> preds(components);
  for (auto [e, end] = boost::edges(ug); e != end; ++e) {
    const int a = component[boost::source(*e, ug)], b = component[boost::target(*e, ug)];
    if (a != b) preds[b].insert(a);
  }
  fg.preds.resize(components);
  std::vector<int> indegree(components, 0);
  std::vector<std::vector<int>> succs(components);
  for (int c = 0; c < components; ++c) {
    fg.preds[c].assign(preds[c].begin(), preds[c].end());
    indegree[c] = static_cast<int>(preds[c].size());
    for (int p : preds[c]) succs[p].push_back(c);
  }
  // Kahn's order, smallest component first, so the numbering does not depend on the edge order.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int c = 0; c < components; ++c)
    if (indegree[c] == 0) ready.push(c);
  while (!ready.empty()) {
    const int c = ready.top();
    ready.pop();
    fg.topological.push_back(c);
    for (int s : succs[c])
      if (--indegree[s] == 0) ready.push(s);
  }
  return fg;
}

// Downsets of a DAG given by predecessor bit masks, enumerated by size (so every proper subset of
// a downset has a smaller id), with each one's immediate sub-downsets.
class Downsets {
 public:
  Downsets(std::span<const std::vector<std::uint64_t>> pred_masks, int words, std::span<const double> compute,
           std::span<const double> memory, long limit, const Deadline& deadline)
      : words_(words), set_(16, Hash{this}, Equal{this}) {
    const int n = static_cast<int>(pred_masks.size());
    bits_.assign(words_, 0);  // the empty downset
    compute_.push_back(0);
    memory_.push_back(0);
    subs_.emplace_back();
    set_.insert(0);
    std::vector<std::uint64_t> next(words_);
    for (std::size_t id = 0; id < compute_.size(); ++id) {
      if ((id & 1023) == 0 && deadline.expired())
        throw std::runtime_error(fmt::format("max-load: the time limit ({:g} s) passed while enumerating downsets "
                                             "({} so far)", deadline.limit(), id));
      for (int v = 0; v < n; ++v) {
        const std::uint64_t* mine = &bits_[id * words_];
        if (mine[v / 64] >> (v % 64) & 1) continue;
        bool ready = true;
        for (int w = 0; w < words_ && ready; ++w) ready = (pred_masks[v][w] & ~mine[w]) == 0;
        if (!ready) continue;
        next.assign(mine, mine + words_);
        next[v / 64] |= std::uint64_t{1} << (v % 64);
        const auto candidate = static_cast<std::int32_t>(compute_.size());
        bits_.insert(bits_.end(), next.begin(), next.end());
        auto [it, inserted] = set_.insert(candidate);
        if (!inserted) {
          bits_.resize(bits_.size() - words_);
          subs_[*it].push_back(static_cast<std::int32_t>(id));
          continue;
        }
        if (static_cast<long>(compute_.size()) >= limit) {
          too_many_ = true;
          return;
        }
        compute_.push_back(compute_[id] + compute[v]);
        memory_.push_back(memory_[id] + memory[v]);
        subs_.push_back({static_cast<std::int32_t>(id)});
      }
    }
  }

  // Enumeration stopped past `limit` downsets.
  bool too_many() const { return too_many_; }
  std::size_t size() const { return compute_.size(); }
  bool contains(std::size_t id, int v) const { return bits_[id * words_ + v / 64] >> (v % 64) & 1; }
  double compute(std::size_t id) const { return compute_[id]; }
  double memory(std::size_t id) const { return memory_[id]; }
  // Every downset contained in `id` (itself included), by a walk over immediate sub-downsets.
  void subsets(std::int32_t id, std::vector<std::int32_t>& out, std::vector<std::int32_t>& stamp) const {
    out.clear();
    out.push_back(id);
    stamp[id] = id;
    for (std::size_t i = 0; i < out.size(); ++i)
      for (std::int32_t s : subs_[out[i]])
        if (stamp[s] != id) {
          stamp[s] = id;
          out.push_back(s);
        }
  }

 private:
  struct Hash {
    const Downsets* d;
    std::size_t operator()(std::int32_t id) const {
      std::size_t h = 0x9e3779b97f4a7c15ULL;
      for (int w = 0; w < d->words_; ++w) h = (h ^ d->bits_[static_cast<std::size_t>(id) * d->words_ + w]) * 0x100000001b3ULL + (h >> 29);
      return h;
    }
  };
  struct Equal {
    const Downsets* d;
    bool operator()(std::int32_t a, std::int32_t b) const {
      const std::uint64_t* x = &d->bits_[static_cast<std::size_t>(a) * d->words_];
      return std::equal(x, x + d->words_, &d->bits_[static_cast<std::size_t>(b) * d->words_]);
    }
  };
  int words_;
  bool too_many_ = false;
  std::vector<std::uint64_t> bits_;
  std::vector<double> compute_, memory_;
  std::vector<std::vector<std::int32_t>> subs_;
  std::unordered_set<std::int32_t, Hash, Equal> set_;
};

bool homogeneous(const Cluster& c) {
  for (int d = 1; d < c.num_devices(); ++d)
    if (c.device(d).memory_bytes != c.device(0).memory_bytes || c.device(d).compute_speed != c.device(0).compute_speed)
      return false;
  return true;
}

// The forward graph with its zero-time units removed: with no memory (or memory that cannot bind)
// they can go on any GPU between their predecessors' and their successors', which joining the two
// keeps possible. The rest are the DP's vertices, numbered in topological order.
struct DpGraph {
  std::vector<char> removed;         // per component
  int removed_units = 0;
  std::vector<int> kept;             // per vertex, its component
  std::vector<int> index;            // per component, its vertex (-1: removed)
  std::vector<std::set<int>> preds;  // per component, after the removals
};

DpGraph remove_zero_time_units(const ForwardGraph& fg, bool memory_binds) {
  const int components = static_cast<int>(fg.compute.size());
  DpGraph g;
  std::vector<std::set<int>>& preds = g.preds;
  preds.resize(components);
  std::vector<std::set<int>> succs(components);
  for (int c = 0; c < components; ++c)
    for (int p : fg.preds[c]) {
      preds[c].insert(p);
      succs[p].insert(c);
    }
  g.removed.assign(components, 0);
  for (int c : fg.topological) {
    if (fg.compute[c] != 0 || (fg.memory[c] != 0 && memory_binds)) continue;
    g.removed[c] = 1;
    ++g.removed_units;
    for (int p : preds[c]) {
      succs[p].erase(c);
      for (int s : succs[c]) succs[p].insert(s);
    }
    for (int s : succs[c]) {
      preds[s].erase(c);
      for (int p : preds[c]) preds[s].insert(p);
    }
  }
  g.index.assign(components, -1);
  for (int c : fg.topological)
    if (!g.removed[c]) {
      g.index[c] = static_cast<int>(g.kept.size());
      g.kept.push_back(c);
    }
  return g;
}

// The DP's vertices as Downsets takes them: predecessors as bit masks of `words` 64-bit words,
// compute and memory.
struct DpVertices {
  int words = 1;
  std::vector<std::vector<std::uint64_t>> pred_masks;
  std::vector<double> compute, memory;
};

DpVertices dp_vertices(const ForwardGraph& fg, const DpGraph& g) {
  const int n = static_cast<int>(g.kept.size());
  DpVertices v;
  v.words = std::max(1, (n + 63) / 64);
  v.pred_masks.assign(n, std::vector<std::uint64_t>(v.words, 0));
  v.compute.resize(n);
  v.memory.resize(n);
  for (int i = 0; i < n; ++i) {
    v.compute[i] = fg.compute[g.kept[i]];
    v.memory[i] = fg.memory[g.kept[i]];
    for (int p : g.preds[g.kept[i]]) v.pred_masks[i][g.index[p] / 64] |= std::uint64_t{1} << (g.index[p] % 64);
  }
  return v;
}

// The DP over downsets and GPUs: dp(D, k), the least largest GPU load putting downset D on GPUs
// 0..k, each GPU a difference of nested downsets; choice(D, k) the downset on GPUs 0..k-1.
class StageDp {
 public:
  StageDp(const Downsets& downsets, const Cluster& cluster, int stages, const Deadline& deadline)
      : downsets_(downsets),
        cluster_(cluster),
        stages_(stages),
        count_(static_cast<std::int32_t>(downsets.size())),
        deadline_(deadline),
        dp_(static_cast<std::size_t>(count_) * stages),
        choice_(static_cast<std::size_t>(count_) * stages),
        stamp_(count_) {}

  // Whether the whole graph has a split (respecting the GPUs' memory or not).
  bool run(bool respect_memory) {
    auto fits = [&](double bytes, int k) { return !respect_memory || bytes <= cluster_.device(k).memory_bytes; };
    std::fill(dp_.begin(), dp_.end(), kInf);
    std::fill(choice_.begin(), choice_.end(), -1);
    std::fill(stamp_.begin(), stamp_.end(), -1);
    downset_pairs_ = 0;
    for (std::int32_t id = 0; id < count_; ++id) {
      if ((id & 255) == 0 && deadline_.expired())
        throw std::runtime_error(fmt::format("max-load: the time limit ({:g} s) passed during the DP ({} of {} downsets)",
                                             deadline_.limit(), id, count_));
      downsets_.subsets(id, subsets_, stamp_);
      downset_pairs_ += static_cast<long>(subsets_.size());
      double* row = &dp_[static_cast<std::size_t>(id) * stages_];
      std::int32_t* pick = &choice_[static_cast<std::size_t>(id) * stages_];
      if (fits(downsets_.memory(id), 0)) {
        row[0] = cluster_.compute_time(0, downsets_.compute(id));
        pick[0] = 0;
      }
      for (int k = 1; k < stages_; ++k)
        for (std::int32_t sub : subsets_) {
          const double before = dp_[static_cast<std::size_t>(sub) * stages_ + k - 1];
          if (before >= row[k] || !fits(downsets_.memory(id) - downsets_.memory(sub), k)) continue;
          const double value = std::max(before, cluster_.compute_time(k, downsets_.compute(id) - downsets_.compute(sub)));
          if (value < row[k]) {
            row[k] = value;
            pick[k] = sub;
          }
        }
    }
    return dp_[static_cast<std::size_t>(count_ - 1) * stages_ + stages_ - 1] < kInf;
  }

  std::int32_t choice(std::int32_t id, int k) const { return choice_[static_cast<std::size_t>(id) * stages_ + k]; }
  long downset_pairs() const { return downset_pairs_; }  // of the last run

 private:
  const Downsets& downsets_;
  const Cluster& cluster_;
  const int stages_;
  const std::int32_t count_;
  const Deadline& deadline_;
  std::vector<double> dp_;
  std::vector<std::int32_t> choice_;
  std::vector<std::int32_t> subsets_, stamp_;  // Downsets::subsets' buffers
  long downset_pairs_ = 0;
};

// Why no contiguous split fits the GPUs' memory.
std::string memory_problem(const Graph& graph, const Cluster& cluster, const ForwardGraph& fg, int stages, bool exact) {
  const double largest_unit = *std::max_element(fg.memory.begin(), fg.memory.end());
  double largest_gpu = 0;
  for (int d = 0; d < cluster.num_devices(); ++d) largest_gpu = std::max(largest_gpu, cluster.device(d).memory_bytes);
  return largest_unit > largest_gpu
             ? fmt::format("operators that must share a GPU (a colocation class, or classes on a cycle) hold {}, more "
                           "than the largest GPU's {}", format_bytes(largest_unit), format_bytes(largest_gpu))
             : fmt::format("no split of the graph into {} contiguous sets (one per GPU, in the forward graph's order{}) "
                           "fits the GPUs' memory ({} in all, {} per GPU at most)",
                           stages, exact ? "" : "; of one topological order only, past max_downsets",
                           format_bytes(graph.total_memory()), format_bytes(largest_gpu));
}

// Each component's GPU: walking the DP's choices back, GPU k holds the difference of its downset
// and the one before; a removed unit goes after its predecessors (on the first GPU used at least).
std::vector<int> stage_of_components(const ForwardGraph& fg, const DpGraph& g, const Downsets& downsets, const StageDp& dp,
                                     int stages) {
  const int n = static_cast<int>(g.kept.size());
  std::vector<int> stage_of(fg.compute.size(), -1);
  std::int32_t id = static_cast<std::int32_t>(downsets.size()) - 1;  // the whole graph
  for (int k = stages - 1; k >= 0; --k) {
    const std::int32_t sub = dp.choice(id, k);
    for (int i = 0; i < n; ++i)
      if (downsets.contains(id, i) && !downsets.contains(sub, i)) stage_of[g.kept[i]] = k;
    id = sub;
  }
  int first_used = stages;
  for (int c : g.kept) first_used = std::min(first_used, stage_of[c]);
  if (first_used == stages) first_used = 0;
  for (int c : fg.topological) {
    if (!g.removed[c]) continue;
    int stage = first_used;
    for (int p : fg.preds[c]) stage = std::max(stage, stage_of[p]);
    stage_of[c] = stage;
  }
  return stage_of;
}

}  // namespace

MaxLoadSplit max_load_split(const Graph& graph, const Cluster& cluster, const MaxLoadConfig& config,
                            const Deadline& deadline) {
  ForwardGraph fg = build_forward_graph(graph);
  MaxLoadSplit split;
  split.training = fg.training;

  double smallest_gpu = kInf;
  for (int d = 0; d < cluster.num_devices(); ++d) smallest_gpu = std::min(smallest_gpu, cluster.device(d).memory_bytes);
  const DpGraph reduced = remove_zero_time_units(fg, graph.total_memory() > smallest_gpu);
  split.removed_units = reduced.removed_units;
  const int n = static_cast<int>(reduced.kept.size());
  split.units = n;
  DpVertices vertices = dp_vertices(fg, reduced);
  std::optional<Downsets> all(std::in_place, vertices.pred_masks, vertices.words, vertices.compute, vertices.memory,
                              config.max_downsets, deadline);
  if (all->too_many()) {
    // As the authors' code does past its limit: chain the units in one topological order, so the
    // DP searches the splits of that order only (n + 1 downsets), and say so.
    split.exact = false;
    for (int i = 1; i < n; ++i) vertices.pred_masks[i][(i - 1) / 64] |= std::uint64_t{1} << ((i - 1) % 64);
    all.emplace(vertices.pred_masks, vertices.words, vertices.compute, vertices.memory,
                std::max<long>(config.max_downsets, n + 1), deadline);
  }
  const Downsets& downsets = *all;
  const auto count = static_cast<std::int32_t>(downsets.size());
  split.downsets = count;

  // With identical GPUs, more stages than units is pointless; otherwise every GPU is a stage.
  const int gpus = cluster.num_devices();
  const int stages = homogeneous(cluster) ? std::max(1, std::min(gpus, n)) : gpus;
  if (static_cast<double>(stages) * count > 4e8)
    throw std::runtime_error(fmt::format("max-load: {} GPUs x {} downsets is more DP state than placesim keeps "
                                         "(4e8 entries)", stages, count));
  StageDp dp(downsets, cluster, stages, deadline);
  if (!dp.run(true)) {
    // No contiguous split fits: say why, and return the best split without memory, which the
    // runner flags out of memory (as it does single-device's answer).
    split.memory_problem = memory_problem(graph, cluster, fg, stages, split.exact);
    dp.run(false);
  }
  split.downset_pairs = dp.downset_pairs();
  const std::vector<int> stage_of = stage_of_components(fg, reduced, downsets, dp, stages);

  split.placement.resize(graph.num_operators());
  split.gpu_load.assign(gpus, 0.0);
  split.gpu_memory.assign(gpus, 0.0);
  for (OpId v = 0; v < static_cast<OpId>(graph.num_operators()); ++v) {
    const DeviceId d = stage_of[fg.component_of_op[v]];
    split.placement[v] = d;
    split.gpu_load[d] += cluster.compute_time(d, graph.op(v).compute_s);
    split.gpu_memory[d] += graph.op(v).memory_bytes;
  }
  split.max_stage_load = *std::max_element(split.gpu_load.begin(), split.gpu_load.end());
  return split;
}

PlacementResult MaxLoad::place_impl(const Graph& graph, const Cluster& cluster, const Deadline& deadline) {
  MaxLoadSplit split = max_load_split(graph, cluster, config_, deadline);
  PlacementResult r;
  r.placement = std::move(split.placement);
  r.details["max_stage_load"] = split.max_stage_load;
  r.details["gpu_load"] = split.gpu_load;
  r.details["downsets"] = split.downsets;
  r.details["downset_pairs"] = split.downset_pairs;
  r.details["units"] = split.units;
  r.details["removed_zero_time_units"] = split.removed_units;
  r.details["training_graph"] = split.training;
  r.details["exact"] = split.exact;
  if (!split.memory_problem.empty())
    r.details["memory_problem"] = split.memory_problem + "; this split ignores memory";
  r.details["objective"] =
      std::string(split.exact ? "optimal max-load split over every contiguous split of the forward graph"
                              : "best max-load split of one topological order only (the graph has more than "
                                "max_downsets downsets)") +
      " in the cluster's GPU order: the largest compute time of a GPU, no network cost (Tarnawski et al. 2020); a "
      "pipeline's time per micro-batch, not one iteration's latency";
  return r;
}

OptionSchema<MaxLoadConfig> max_load_schema() {
  OptionSchema<MaxLoadConfig> s;
  s.count("max_downsets", &MaxLoadConfig::max_downsets,
          "past this many downsets of the reduced forward graph, split one topological order only (exact: false)", 1,
          100'000'000,
          "50");
  return s;
}

StrategyInfo max_load_strategy_info() {
  return strategy_info<MaxLoad>(
      "max-load",
      "Tarnawski et al.'s max-load pipeline split: exact DP over downsets, one contiguous set per GPU, backward with "
      "forward, memory respected, no network cost",
      max_load_schema());
}

}  // namespace placesim
