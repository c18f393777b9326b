#include "collective_cli.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <limits>
#include <fmt/format.h>
#include <iostream>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "cli_conventions.h"
#include "sim/collectives/algorithms.h"
#include "sim/collectives/collective_steps.h"
#include "sim/collectives/collectives.h"
#include "sim/collectives/nccl.h"
#include "sim/core/errors.h"
#include "sim/core/execution_graph.h"
#include "sim/core/units.h"
#include "sim/engines/folded_network.h"
#include "topologies/registry.h"

namespace placesim {

namespace {

// `--engine auto` leaves SimGrid out of a size whose message graph holds more than this (it runs
// some 200,000 operators a second; the flow engine, millions).
constexpr double kSimGridAutoOperators = 2e5;


std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (const auto& n : kCollectiveOpNames) out.emplace_back(n.name);
  return out;
}
std::vector<std::string> algorithm_names() {
  std::vector<std::string> out{"auto"};
  for (const auto& n : collective_algorithm_names()) out.emplace_back(n.name);
  return out;
}

// "1MiB:1GiB" (from, to, each size `factor` times the last, as nccl-tests -b -e -f) or one size.
std::vector<double> parse_sizes(const std::string& text, double factor) {
  const auto colon = text.find(':');
  const double from = parse_bytes(text.substr(0, colon), "command line", "--bytes");
  const double to = colon == std::string::npos ? from : parse_bytes(text.substr(colon + 1), "command line", "--bytes");
  if (from <= 0 || to < from)
    throw InputError("command line", "--bytes",
                     fmt::format("expected a size > 0 or FROM:TO with 0 < FROM <= TO (e.g. 1MiB:1GiB), got '{}'", text));
  std::vector<double> sizes;
  for (double s = from; s <= to * (1 + 1e-12); s *= factor) {
    sizes.push_back(s);
    if (sizes.size() > 64)
      throw InputError("command line", "--bytes", fmt::format("'{}' with --factor {} gives more than 64 sizes", text, factor));
  }
  return sizes;
}

std::vector<DeviceId> parse_group(const CollectiveArgs& a, const Cluster& cluster) {
  std::vector<DeviceId> group;
  if (!a.group.empty()) {
    std::stringstream in(a.group);
    std::string item;
    while (std::getline(in, item, ',')) {
      try {
        std::size_t used = 0;
        const int d = std::stoi(item, &used);
        if (used != item.size()) throw std::invalid_argument(item);
        group.push_back(d);
      } catch (const std::exception&) {
        throw InputError("command line", "--group",
                         fmt::format("expected GPU indices separated by commas (e.g. 0,1,4,5), got '{}'", a.group));
      }
    }
    return group;
  }
  const int n = a.gpus > 0 ? a.gpus : cluster.num_devices();
  if (n > cluster.num_devices())
    throw InputError("command line", "--gpus",
                     fmt::format("the cluster has {} GPUs, {} were asked for", cluster.num_devices(), n));
  for (int d = 0; d < n; ++d) group.push_back(d);
  return group;
}

// nccl-tests' data types and their sizes (its -d option).
constexpr std::pair<const char*, int> kDataTypes[] = {{"int8", 1}, {"half", 2}, {"bfloat16", 2}, {"float", 4}, {"double", 8}};
int type_size(const std::string& type) {
  for (const auto& [name, size] : kDataTypes)
    if (type == name) return size;
  return 4;
}

constexpr const char* kModelled =
    "Modelled: the algorithm's messages as flows sharing the fabric's links max-min fairly (flow, simgrid; the evaluator "
    "gives each alone, a step no less than its busiest link's bytes need), and on a cluster with `collectives: nccl` (the presets) NCCL 2.18's costs: a base latency per "
    "protocol (NVLS its own), a per-hop latency per protocol and hop kind (NVLink, network), the share of a link each "
    "protocol reaches, one ring or tree per channel (channel c enters each server at local rank c: one per NIC), NVLS "
    "on NVLink-SHARP servers and NVLS-tree across them (the switch's reduction as a star of its bytes), and `auto` choosing algorithm, protocol and channels per size by the closed form. Not "
    "modelled: per-channel SM bandwidth caps, in-flight slots for rings (trees hide a chunk's latency once their "
    "pipeline is full; a ring step's is not hidden), PCIe between GPU and NIC, CollNet, reductions' compute. The closed form is "
    "under the ideal model each pair alone with all a step gives it (channels sharing a pair share it) and prices each step's busiest link under NCCL's. "
    "docs/collectives.md has the details.";

// The spec of the command line (bytes 1), checked.
CollectiveSpec spec_of(const CollectiveArgs& a, const Cluster& cluster) {
  if (!a.group.empty() && a.gpus > 0) throw InputError("command line", "--group", "give --group or --gpus, not both");
  CollectiveSpec spec;
  spec.op = enum_parse<CollectiveOp>(kCollectiveOpNames, a.op, "command line", "--op");
  spec.group = parse_group(a, cluster);
  spec.tuned = a.algorithm == "auto";
  if (!spec.tuned)
    spec.algorithm = enum_parse<CollectiveAlgorithm>(collective_algorithm_names(), a.algorithm, "command line", "--algorithm");
  if (a.protocol != "auto") {
    spec.protocol = enum_parse<NcclProtocol>(kNcclProtocolNames, a.protocol, "command line", "--protocol");
    spec.pin_protocol = true;
  }
  spec.channels = a.channels > 0 ? a.channels : 1;
  spec.pin_channels = a.channels > 0;
  spec.chunks = a.chunks;
  spec.root = a.root;
  spec.bytes = 1;
  if (const std::string why = collective_problem(spec, cluster); !why.empty())
    throw InputError("command line", "--op/--algorithm/--gpus/--channels", why);
  return spec;
}

// The spec that runs at `size` (nccl_resolved).
CollectiveSpec resolved_at(CollectiveSpec spec, const Cluster& cluster, double size) {
  spec.bytes = size;
  return nccl_resolved(spec, cluster);
}

}  // namespace

CLI::App* add_collective_command(CLI::App& app, CollectiveArgs& a) {
  auto* c = app.add_subcommand(
      "collective",
      "time one collective on a cluster for a range of sizes, per engine and closed form (nccl-tests' table)");
  c->footer(kModelled);
  c->add_option("--cluster", a.cluster, "cluster YAML file (a `cluster:` block)")->required()->check(CLI::ExistingFile);
  c->add_option("--op", a.op, "the collective")->check(one_of(op_names()))->capture_default_str();
  c->add_option("--algorithm", a.algorithm,
                "how it is decomposed into transfers (docs/collectives.md); auto: per size, the algorithm, protocol and "
                "channels NCCL's tuning would pick (NCCL_ALGO unset)")
      ->check(one_of(algorithm_names()))
      ->capture_default_str();
  std::vector<std::string> protocols{"auto"};
  for (const auto& p : kNcclProtocolNames) protocols.emplace_back(p.name);
  c->add_option("--protocol", a.protocol,
                "NCCL's protocol where the cluster runs NCCL (as NCCL_PROTO); auto: the fastest for the algorithm")
      ->check(one_of(protocols))
      ->capture_default_str();
  c->add_option("--channels", a.channels,
                "rings or trees, each on 1/channels of the buffer (default: on clusters with NCCL's costs, `collectives: nccl` as the presets, NCCL's: one per rank of a server across servers; "
                "elsewhere 1)")
      ->check(whole_number(1, 64));
  std::vector<std::string> types;
  for (const auto& [name, size] : kDataTypes) types.emplace_back(name);
  c->add_option("--type", a.type, "the data type, for nccl-tests' count column (count = size / its bytes)")
      ->check(one_of(types))
      ->capture_default_str();
  c->add_option("--bytes", a.bytes, "one size, or FROM:TO (each size --factor times the last), per rank as in nccl-tests")
      ->capture_default_str();
  c->add_option("--factor", a.factor, "ratio between consecutive sizes")->check(number_in(Range{1, 1e9, true, false}))->capture_default_str();
  c->add_option("--gpus", a.gpus, "the first N GPUs of the cluster (default: all)")->check(whole_number(2, 1 << 20));
  c->add_option("--group", a.group, "the GPUs, as indices in rank order (e.g. 0,2,4,6); instead of --gpus");
  c->add_option("--chunks", a.chunks, "pieces per message, sent one after another on a connection")
      ->check(whole_number(1, 1 << 16))
      ->capture_default_str();
  c->add_option("--root", a.root, "broadcast and reduce: the root's rank")->check(whole_number(0))->capture_default_str();
  c->add_option("--engine", a.engine,
                "evaluator, flow, simgrid or all; auto: all three, simgrid left out of a size whose graph holds more than "
                "200,000 operators (said when it is)")
      ->check(one_of({"auto", std::string(kEvaluator), std::string(kFlow), std::string(kSimGrid), "all"}))
      ->capture_default_str();
  c->add_flag("--full-graph", a.full_graph,
              "messages and condensed: build every rank's operators (default: one block of servers standing for every "
              "block the fabric treats alike, exact: docs/collectives.md)");
  c->add_option("--model", a.model,
                 "steps: each distinct step once, its messages sharing the links, ranks in lockstep (fast at thousands "
                 "of GPUs; trees and chains as their pipeline: every edge at once); messages: every rank's messages, ranks run "
                 "ahead (n^2 operators); condensed: messages, but each ring phase one flow per ring neighbour that pays every "
                 "step's latency (ring all-reduce, reduce-scatter, all-gather; hierarchical; multi-level: about 4n operators, as "
                 "`simulation.collectives: condensed`); auto: steps")
      ->check(one_of({"auto", "steps", "messages", "condensed"}))
      ->capture_default_str();
  auto* json = c->add_flag("--json", a.json, "one JSON object per size and engine instead of the table");
  c->add_flag("--nccl-tests", a.nccl_tests,
              "the table as nccl-tests prints it (its # headers and columns: size, count, type, redop, root, then time, "
              "algbw, busbw, #wrong out of place and in place, equal here; the Avg bus bandwidth footer), for one engine "
              "(--engine; auto: flow), so that scripts written for nccl-tests read it")
      ->excludes(json);
  return c;
}

namespace {

// nccl-tests' reduction and root columns for the operation.
std::pair<std::string, int> nccl_tests_redop_root(const CollectiveArgs& a) {
  const bool reduces = a.op == "all-reduce" || a.op == "reduce-scatter" || a.op == "reduce";
  const bool rooted = a.op == "broadcast" || a.op == "reduce";
  return {reduces ? "sum" : "none", rooted ? a.root : -1};
}

void print_nccl_tests_header(const CollectiveArgs& a, int gpus, const std::string& engine, const Cluster& cluster,
                             std::span<const double> sizes) {
  std::cout << fmt::format("# nThread 1 nGpus {} minBytes {:.0f} maxBytes {:.0f} step: {}(factor) warmup iters: 0 iters: 1 agg "
                           "iters: 1 validation: 0 graph: 0\n#\n",
                           gpus, sizes.front(), sizes.back(), a.factor);
  std::cout << fmt::format("# placesim {} by {} on the {} engine, {}: simulated, not measured; in place and out of place "
                           "are the same simulation\n#\n",
                           a.op, a.algorithm, engine, cluster.description);
  std::cout << "#                                                              out-of-place                       in-place          \n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n";
}

std::string nccl_tests_row(const CollectiveArgs& a, double size, long long count, double seconds, double bus_factor) {
  const auto [redop, root] = nccl_tests_redop_root(a);
  const double algbw = seconds > 0 ? size / seconds / 1e9 : 0, busbw = algbw * bus_factor;
  const std::string half = fmt::format("{:8.2f} {:7.2f} {:7.2f} {:6}", seconds * 1e6, algbw, busbw, 0);
  return fmt::format("{:12.0f} {:13} {:>9} {:>7} {:7} {} {}", size, count, a.type, redop, root, half, half);
}

// The table's header: what ran, the units, the columns.
void print_table_header(const CollectiveArgs& a, int n, const Cluster& cluster, bool by_steps, double bus_factor,
                        const std::vector<std::string_view>& engines) {
  std::cout << fmt::format("# {} by {}, {} GPUs of {}; {} chunk{} per message; collectives: {}; model: {}\n", a.op,
                           a.algorithm, n, cluster.description, a.chunks, a.chunks == 1 ? "" : "s",
                           cluster.nccl ? "NCCL 2.18 (docs/collectives.md)" : "ideal (line rate, no latency floor)",
                           by_steps ? "steps (each distinct step once, ranks in lockstep)"
                           : a.model == "condensed" ? "condensed (a flow per ring neighbour and phase)"
                                                    : "messages (every rank's messages)");
  std::cout << fmt::format("# size in bytes, time in us, algbw and busbw in GB/s (busbw = algbw x {:.4g}); ran: "
                           "algorithm, protocol, channels; closed form: {}\n",
                           bus_factor,
                           cluster.nccl ? "each step at its busiest link" : "contention-free, at the slowest pair the algorithm sends between");
  // A comment line, as nccl-tests' own column header: parsers skip it and read the rows.
  std::string head = fmt::format("#{:>11} {:>12} {:>8} {:>18} {:>12}", "size", "count", "type", "ran", "closed form");
  for (const auto& e : engines) head += fmt::format(" | {:>10} {:>8} {:>8}", e, "algbw", "busbw");
  std::cout << head << "\n";
}

}  // namespace

int cmd_collective(const CollectiveArgs& a) {
  const Cluster cluster = load_cluster_file(a.cluster);
  CollectiveSpec spec = spec_of(a, cluster);
  const std::string no_steps = collective_steps_problem(spec, cluster);
  if (a.model == "steps" && !no_steps.empty()) throw InputError("command line", "--model", no_steps);
  const bool by_steps = a.model == "steps" || (a.model == "auto" && no_steps.empty());
  if (a.model == "condensed") {
    const CollectiveShape shape = collective_shape(spec, cluster);
    const bool ring_phases = std::any_of(shape.begin(), shape.end(), [](const CollectivePhase& phase) {
      return std::holds_alternative<RingPhase>(phase.shape);
    });
    if (!ring_phases)
      throw InputError("command line", "--model",
                       fmt::format("condensed condenses ring phases, and {} by {} has none (it runs message by message: "
                                   "--model messages)",
                                   a.op, a.algorithm));
    spec.detail = CollectiveDetail::Condensed;
    if (const std::string why = collective_problem(spec, cluster); !why.empty())
      throw InputError("command line", "--model/--gpus/--chunks", why);
  }
  const char* model = by_steps ? "steps" : a.model == "condensed" ? "condensed" : "messages";
  const std::vector<double> sizes = parse_sizes(a.bytes, a.factor);
  const bool auto_engines = a.engine == "auto" && !a.nccl_tests;
  const EngineSet asked = a.nccl_tests && a.engine == "auto" ? EngineSet::of({kFlow})
                          : auto_engines                     ? EngineSet::of({kEvaluator, kFlow, kSimGrid})
                                                             : EngineSet::parse(a.engine, "command line", "--engine");
  if (a.nccl_tests && asked.engines().size() != 1)
    throw InputError("command line", "--engine", "--nccl-tests prints one engine's times: give one of evaluator, flow or simgrid");
  if (asked.has(kEstimate)) throw InputError("command line", "--engine", "the estimate prices plans, not a collective alone");
  const std::vector<std::string_view> engines = asked.engines();

  const int n = static_cast<int>(spec.group.size());
  const double bus_factor = bus_bandwidth_factor(spec.op, n);
  const int element = type_size(a.type);
  if (a.nccl_tests) print_nccl_tests_header(a, n, std::string(engines.front()), cluster, sizes);
  if (!a.json && !a.nccl_tests) print_table_header(a, n, cluster, by_steps, bus_factor, engines);
  std::vector<double> walls(engines.size(), 0.0);
  std::vector<bool> ran_any(engines.size(), false);
  std::vector<std::string> notes;  // said once after the table
  double busbw_sum = 0;            // --nccl-tests: for its average
  for (double size : sizes) {
    const CollectiveSpec ran_spec = resolved_at(spec, cluster, size);
    // The message-level graph is built only for that model (n^2 operators), folded to a block of
    // servers where every block runs alike.
    std::size_t operators = 0, transfers = 0;
    int copies = 1;
    EngineRuns ran;
    std::optional<ExecutionGraph> g;
    if (!by_steps) {
      const int block = a.full_graph ? 0 : collective_fold_block(ran_spec, cluster);
      g = collective_graph(ran_spec, cluster, block);
      if (g->fold) copies = g->fold->copies;
      operators = g->graph.num_operators();
      transfers = g->graph.num_tensors();
    }
    EngineSet which = asked;
    // SimGrid sends every copy of a folded graph's transfers; the step model's graphs hold a
    // message each and two operators per GPU of a step.
    double simgrid_work = static_cast<double>(operators) + static_cast<double>(transfers) * (copies - 1);
    if (by_steps && auto_engines) {
      simgrid_work = 0;
      for (const CollectiveStep& step : collective_steps(ran_spec, cluster)) simgrid_work += 3.0 * static_cast<double>(step.messages.size());
    }
    if (auto_engines && simgrid_work > kSimGridAutoOperators) {
      which = EngineSet::of({kEvaluator, kFlow});
      const std::string note = fmt::format("# simgrid left out of sizes whose graph holds more than {} operators and transfers "
                                           "(--engine simgrid or all to run it)",
                                           static_cast<long>(kSimGridAutoOperators));
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
    if (by_steps) ran = run_collective_steps(ran_spec, cluster, which);
    // A collective's operators are communication steps, in no GPU's queue: the order does not matter.
    else ran = run_engines(*g, cluster, which, RunOrder::Fcfs);
    const double closed = collective_closed_form(ran_spec, cluster);
    const auto count = static_cast<long long>(size / element);
    if (a.json) {
      for (const auto& r : ran.runs) {
        const double algbw = r.latency > 0 ? size / r.latency : 0;
        nlohmann::json line{
            {"op", a.op},
            {"algorithm", enum_name<CollectiveAlgorithm>(collective_algorithm_names(), ran_spec.algorithm)},
            {"protocol", cluster.nccl ? nlohmann::json(enum_name<NcclProtocol>(kNcclProtocolNames, ran_spec.protocol)) : nlohmann::json()},
            {"channels", ran_spec.channels},
            {"gpus", n},
            {"chunks", a.chunks},
            {"size", size},
            {"bytes", size},
            {"count", count},
            {"type", a.type},
            {"engine", r.engine},
            {"time_us", r.latency * 1e6},
            {"time_s", r.latency},
            {"algbw", algbw / 1e9},
            {"busbw", algbw * bus_factor / 1e9},
            {"algbw_bytes_per_s", algbw},
            {"busbw_bytes_per_s", algbw * bus_factor},
            {"closed_form_s", closed},
            {"wall_s", r.wall_s},
            {"model", model}};
        if (!by_steps) {
          line["operators"] = operators;
          line["transfers"] = transfers;
          line["copies"] = copies;  // folded: the graph stands for this many blocks of servers
        }
        std::cout << line.dump() << "\n";
      }
    } else if (a.nccl_tests) {
      const double seconds = ran.runs.front().latency;
      busbw_sum += seconds > 0 ? size / seconds * bus_factor : 0;
      std::cout << nccl_tests_row(a, size, count, seconds, bus_factor) << "\n" << std::flush;
    } else {
      std::string line = fmt::format("{:>12.0f} {:>12} {:>8} {:>18} {:>12.2f}", size, count, a.type,
                                     collective_choice_text(ran_spec, cluster), closed * 1e6);
      for (const std::string_view e : engines) {
        const EngineRun* r = ran.find(e);
        if (!r) {
          line += fmt::format(" | {:>10} {:>8} {:>8}", "-", "-", "-");
          continue;
        }
        const double algbw = r->latency > 0 ? size / r->latency / 1e9 : 0;
        line += fmt::format(" | {:>10.2f} {:>8.2f} {:>8.2f}", r->latency * 1e6, algbw, algbw * bus_factor);
      }
      std::cout << line << "\n" << std::flush;
    }
    for (std::size_t k = 0; k < engines.size(); ++k)
      if (const EngineRun* r = ran.find(engines[k])) walls[k] += r->wall_s, ran_any[k] = true;
  }
  if (a.nccl_tests) {
    std::cout << "# Out of bounds values : 0 OK\n"
              << fmt::format("# Avg bus bandwidth    : {:.4f} \n#\n", busbw_sum / static_cast<double>(sizes.size()) / 1e9);
    return kExitOk;
  }
  if (!a.json) {
    for (const std::string& note : notes) std::cout << note << "\n";
    if (std::find(engines.begin(), engines.end(), kEvaluator) != engines.end())
      std::cout << "# evaluator: contention-free, every transfer alone on its links; where transfers share a link its algbw and "
                   "busbw can exceed what the links carry (the flow engine and SimGrid share them)\n";
    std::string line = "# simulated in:";
    for (std::size_t k = 0; k < engines.size(); ++k)
      line += fmt::format(" {} {}{}", engines[k], ran_any[k] ? format_duration(walls[k]) : std::string("(not run)"),
                          k + 1 < engines.size() ? "," : "");
    std::cout << line << "\n";
  }
  return kExitOk;
}

}  // namespace placesim
