#include "sim/engines/shared_runs.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <stdexcept>

namespace placesim {

const JobTimes* SharedJob::find(std::string_view engine) const {
  for (const JobTimes& t : times)
    if (t.engine == engine) return &t;
  return nullptr;
}

namespace {

// Copies `graph`'s operators (names prefixed) and tensors into `out`, each operator on
// placement[op]; returns the id of the first operator copied.
OpId append_graph(Graph& out, std::vector<DeviceId>& out_placement, const Graph& graph, std::span<const DeviceId> placement,
                  const std::string& prefix) {
  const OpId first = static_cast<OpId>(out.num_operators());
  for (const Operator& op : graph.operators()) {
    Operator copy = op;
    if (!prefix.empty()) copy.name = prefix + op.name;
    out.add_operator(std::move(copy));
  }
  for (OpId o = 0; o < static_cast<OpId>(graph.num_operators()); ++o) out_placement.push_back(placement[o]);
  for (const Tensor& t : graph.tensors())
    out.add_tensor(first + t.src, first + t.dst, t.bytes, t.gradient, t.latencies, t.overhead_s, t.route_to);
  return first;
}

}  // namespace

Graph chain_iterations(const Graph& graph, std::span<const DeviceId> placement, int iterations,
                       std::vector<DeviceId>& placement_out) {
  if (iterations < 1) throw std::invalid_argument("chain_iterations: iterations must be >= 1");
  const auto n = static_cast<OpId>(graph.num_operators());
  // Per GPU, the operators with no predecessor there (each of the GPU's operators follows one)
  // and with no successor there (each follows the others' or is one).
  std::map<DeviceId, std::vector<OpId>> local_sources, local_sinks;
  for (OpId o = 0; o < n; ++o) {
    const DeviceId g = placement[o];
    auto on_gpu = [&](EdgeId e, bool in) { return placement[in ? graph.tensor(e).src : graph.tensor(e).dst] == g; };
    const auto ins = graph.in_edges(o), outs = graph.out_edges(o);
    if (std::none_of(ins.begin(), ins.end(), [&](EdgeId e) { return on_gpu(e, true); })) local_sources[g].push_back(o);
    if (std::none_of(outs.begin(), outs.end(), [&](EdgeId e) { return on_gpu(e, false); })) local_sinks[g].push_back(o);
  }
  Graph out;
  placement_out.clear();
  OpId previous = append_graph(out, placement_out, graph, placement, "");
  for (int i = 1; i < iterations; ++i) {
    const std::string prefix = fmt::format("i{}/", i + 1);
    std::vector<std::pair<DeviceId, OpId>> boundaries;
    for (const auto& [g, sinks] : local_sinks) {
      const OpId b = out.add_operator({fmt::format("{}iteration.gpu{}", prefix, g), "iteration", 0.0, 0.0});
      placement_out.push_back(g);
      for (OpId s : sinks) out.add_tensor(previous + s, b, 0);
      boundaries.emplace_back(g, b);
    }
    const OpId first = append_graph(out, placement_out, graph, placement, prefix);
    for (const auto& [g, b] : boundaries)
      for (OpId s : local_sources[g]) out.add_tensor(b, first + s, 0);
    previous = first;
  }
  out.finalize("the chained iterations", /*index_names=*/false);
  return out;
}

std::vector<std::pair<int, double>> link_bytes(const Graph& graph, std::span<const DeviceId> placement,
                                               const Cluster& cluster) {
  // Bytes per ordered GPU pair first: a route's paths are expanded once per pair, not per tensor.
  std::map<std::pair<DeviceId, DeviceId>, double> by_pair;
  for (const Tensor& t : graph.tensors()) {
    const DeviceId a = placement[t.src], b = t.route_to >= 0 ? t.route_to : placement[t.dst];
    if (a != b && t.bytes > 0) by_pair[{a, b}] += t.bytes;
  }
  std::vector<double> bytes(cluster.links().size(), 0.0);
  for (const auto& [pair, total] : by_pair)
    for (const RoutePath& p : cluster.paths(pair.first, pair.second))
      for (int l : p.links) bytes[static_cast<std::size_t>(l)] += total * p.share;
  std::vector<std::pair<int, double>> out;
  for (std::size_t l = 0; l < bytes.size(); ++l)
    if (bytes[l] > 0) out.emplace_back(static_cast<int>(l), bytes[l]);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second > y.second || (x.second == y.second && x.first < y.first); });
  return out;
}

namespace {

// Each link two or more jobs load, with each one's share; most bytes first.
std::vector<SharedLink> links_met(const std::vector<SharedJob>& jobs) {
  std::map<int, SharedLink> by_link;
  for (std::size_t j = 0; j < jobs.size(); ++j)
    for (const auto& [link, bytes] : jobs[j].link_bytes) {
      SharedLink& s = by_link[link];
      s.link = link;
      s.bytes += bytes;
      s.share.emplace_back(j, bytes);
    }
  std::vector<SharedLink> out;
  for (auto& [link, s] : by_link) {
    if (s.share.size() < 2) continue;
    for (auto& [j, part] : s.share) part /= s.bytes;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SharedLink& a, const SharedLink& b) { return a.bytes > b.bytes || (a.bytes == b.bytes && a.link < b.link); });
  return out;
}

}  // namespace

SharedRun run_jobs_together(std::span<const JobGraph> jobs, const Cluster& cluster, EngineSet engines, RunOrder order,
                            int max_iterations) {
  if (!engines.estimate_only()) engines = engines.with(kEvaluator);
  std::vector<int> owner(static_cast<std::size_t>(cluster.num_devices()), -1);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!jobs[j].graph || jobs[j].graph->num_operators() == 0)
      throw std::invalid_argument(fmt::format("job '{}' has no operator", jobs[j].name));
    for (DeviceId g : jobs[j].placement) {
      int& o = owner.at(static_cast<std::size_t>(g));
      if (o >= 0 && o != static_cast<int>(j))
        throw std::invalid_argument(fmt::format("jobs '{}' and '{}' both run on GPU {}: jobs share links, not GPUs",
                                                jobs[static_cast<std::size_t>(o)].name, jobs[j].name, g));
      o = static_cast<int>(j);
    }
  }
  SharedRun out;
  out.jobs.resize(jobs.size());
  // One iteration of each alone: how long the window is.
  std::vector<EngineRuns> alone(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    alone[j] = run_engines(PlacedGraph(*jobs[j].graph, jobs[j].placement), cluster, engines, order);
    // Contention counts most where it is modelled best.
    if (const EngineRun* r = alone[j].contended(); out.headline.empty() && r) out.headline = r->engine;
    out.jobs[j].link_bytes = link_bytes(*jobs[j].graph, jobs[j].placement, cluster);
  }
  if (out.headline.empty()) throw std::invalid_argument("a shared run needs an engine that schedules (evaluator, flow or simgrid)");
  double window = 0;
  for (const EngineRuns& r : alone) window = std::max(window, r.find(out.headline)->latency);
  // The iterations each job runs, chained, and the same chain alone.
  std::vector<Graph> chained(jobs.size());
  std::vector<std::vector<DeviceId>> chained_placement(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const double one = alone[j].find(out.headline)->latency;
    const int k = one > 0 ? static_cast<int>(std::clamp(std::ceil(window / one - 1e-9), 1.0, static_cast<double>(max_iterations))) : 1;
    out.jobs[j].iterations = k;
    out.jobs[j].covers_window = window > 0 ? std::min(1.0, k * one / window) : 1.0;
    if (k > 1) {
      chained[j] = chain_iterations(*jobs[j].graph, jobs[j].placement, k, chained_placement[j]);
      alone[j] = run_engines(PlacedGraph(chained[j], chained_placement[j]), cluster, engines, order);
    }
    out.jobs[j].alone_total = alone[j].find(out.headline)->latency;
  }
  out.window = window;
  // All of them at once.
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const bool k = out.jobs[j].iterations > 1;
    const OpId first = append_graph(out.graph, out.placement, k ? chained[j] : *jobs[j].graph,
                                    k ? std::span<const DeviceId>(chained_placement[j]) : jobs[j].placement,
                                    jobs[j].name + "/");
    out.ranges.emplace_back(first, static_cast<OpId>(out.graph.num_operators()));
  }
  chained.clear();
  out.graph.finalize("the jobs' graphs together", /*index_names=*/false);
  out.runs = run_engines(PlacedGraph(out.graph, out.placement), cluster, engines, order);
  for (const EngineRun& r : out.runs.runs) {
    if (!r.schedule) continue;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const auto [first, end] = out.ranges[j];
      double finish = 0;
      for (OpId o = first; o < end; ++o) finish = std::max(finish, r.schedule->finish[static_cast<std::size_t>(o)]);
      const int k = out.jobs[j].iterations;
      out.jobs[j].times.push_back({r.engine, alone[j].find(r.engine)->latency / k, finish / k});
    }
  }
  out.links_met = links_met(out.jobs);
  return out;
}

}  // namespace placesim
