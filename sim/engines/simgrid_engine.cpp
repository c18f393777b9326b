#include "sim/engines/simgrid_engine.h"

#include "sim/engines/evaluator.h"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <iostream>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

// Built with AddressSanitizer: gcc says so with __SANITIZE_ADDRESS__, clang 14 only through
// __has_feature (without this, clang's ASan build ran SimGrid's own stack switching and ASan
// warned about the unknown stacks).
#if defined(__SANITIZE_ADDRESS__)
#define PLACESIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PLACESIM_ASAN 1
#endif
#endif
#ifndef PLACESIM_ASAN
#define PLACESIM_ASAN 0
#endif

namespace placesim {
namespace {

namespace sg4 = simgrid::s4u;

// SimGrid payloads are whole numbers (uint64_t). SimGrid counts in 1/65536-byte units and link
// bandwidths are scaled by the same power of two, so fractional tensor sizes keep their precision
// (1/1024 byte units left 1e-8 relative errors on tiny tensors) and transfer times are otherwise
// unchanged. Tensors up to ~2.8e14 bytes fit.
constexpr double kPayloadUnitsPerByte = 65536.0;

// ---------------------------------------------------------------------------------------------
// Input validation (cheap, O(operators + tensors)), run before SimGrid or fork is involved.

void validate_inputs(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                     const std::vector<std::vector<OpId>>& device_order, GpuQueue queue, const Folding* fold) {
  if (queue == GpuQueue::Rank)
    throw std::invalid_argument("the SimGrid engine runs a fixed per-GPU order or first come, first served, not by rank");
  check_device_order(graph, cluster.num_devices(), placement, device_order);
  for (const Tensor& t : graph.tensors()) {
    const DeviceId a = placement[t.src], b = t.route_to >= 0 ? t.route_to : placement[t.dst];
    if (t.bytes > 0 && !cluster.reachable(a, b))
      throw std::invalid_argument(fmt::format(
          "tensor '{}' -> '{}' goes from GPU {} to GPU {}, which the cluster cannot reach (no bandwidth between them)",
          graph.op(t.src).name, graph.op(t.dst).name, a, b));
    if (t.bytes > 0 && a != b && fold && (!fold->covers(a) || !fold->covers(b)))
      throw std::invalid_argument(fmt::format("tensor '{}' -> '{}' goes from GPU {} to GPU {}, which the folding does not cover",
                                              graph.op(t.src).name, graph.op(t.dst).name, a, b));
  }
}

// ---------------------------------------------------------------------------------------------
// The simulation proper. SimGrid actors run cooperatively in one thread, so the shared state
// below needs no locking: an actor only yields inside SimGrid calls.

class Simulation {
 public:
  Simulation(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
             const std::vector<std::vector<OpId>>& device_order, GpuQueue queue, const Folding* fold)
      : graph_(graph), cluster_(cluster), placement_(placement), device_order_(device_order), queue_(queue), fold_(fold) {}

  SimulationResult run();

 private:
  void build_flows();
  void add_flow(EdgeId e, DeviceId src, DeviceId dst, double units);
  void build_platform();
  void gpu_actor(DeviceId gpu);
  void flow_actor(std::int32_t flow);
  void deliver(OpId dst);
  void forward_outputs(OpId op);
  void finish_result();

  const Graph& graph_;
  const Cluster& cluster_;
  std::span<const DeviceId> placement_;
  const std::vector<std::vector<OpId>>& device_order_;
  GpuQueue queue_;
  const Folding* fold_;  // folded: each transfer sent once per copy
  // FCFS: per GPU, the operators whose inputs have all arrived, earliest (then lowest id) first.
  using ReadyOp = std::pair<double, OpId>;
  std::vector<std::priority_queue<ReadyOp, std::vector<ReadyOp>, std::greater<>>> ready_;

  // Declared before every SimGrid object below so that it is destroyed after them.
  std::unique_ptr<sg4::Engine> engine_;
  SimulationResult result_;
  std::vector<std::int32_t> pending_inputs_;  // per operator: inputs not arrived yet
  std::vector<std::int32_t> flow_of_edge_;    // per tensor: index in result_.flows of its (first) flow, or -1
  std::vector<std::int32_t> flows_of_edge_;   // per tensor with flows: how many (a folded one's copies)
  std::vector<std::int32_t> flows_left_;      // per tensor: its flows still on their way
  std::vector<double> flow_alpha_;            // per flow: route latency slept before sending
  std::vector<double> flow_bandwidth_start_;  // per flow: when its bytes started to move
  std::vector<std::int32_t> flow_first_subflow_;  // per flow, plus one past the end: its sub-flows
  std::vector<std::uint64_t> subflow_payload_;    // per sub-flow: size in SimGrid payload units
  std::vector<std::int32_t> subflow_path_;        // per sub-flow: index in paths_
  // The paths of the routes flows use, each sent from a host of its own (see the header).
  struct UsedPath {
    std::vector<int> links;
    double share;
    sg4::Host* host = nullptr;
  };
  std::vector<UsedPath> paths_;
  std::unordered_map<std::int64_t, std::int32_t> route_first_path_;  // per Cluster route id used: its first entry in paths_
  std::vector<OpId> waiting_for_;             // per GPU: operator its actor is blocked on, or -1
  std::vector<sg4::Host*> hosts_;
  sg4::Host* sink_ = nullptr;
  std::vector<sg4::MutexPtr> mutexes_;
  std::vector<sg4::ConditionVariablePtr> input_arrived_;
  std::int64_t finished_ops_ = 0;
  // Communication steps whose inputs have all arrived, completed by deliver without recursing (a
  // collective chains thousands of them on one GPU, and actors have small stacks).
  std::vector<OpId> communication_ready_;
  bool completing_communication_ = false;
};

void Simulation::build_flows() {
  const std::size_t n = graph_.num_operators();
  pending_inputs_.assign(n, 0);
  flow_of_edge_.assign(graph_.num_tensors(), -1);
  flows_of_edge_.assign(graph_.num_tensors(), 0);
  flows_left_.assign(graph_.num_tensors(), 0);
  for (EdgeId e = 0; e < static_cast<EdgeId>(graph_.num_tensors()); ++e) {
    const Tensor& t = graph_.tensor(e);
    ++pending_inputs_[t.dst];
    const DeviceId from = placement_[t.src], to = t.route_to >= 0 ? t.route_to : placement_[t.dst];
    if (from == to || !(t.bytes > 0)) continue;
    const double units = std::round(t.bytes * kPayloadUnitsPerByte);
    if (!(units < 1.8e19))  // below 2^64
      throw std::invalid_argument(fmt::format("tensor {} -> {} is too large for SimGrid ({} bytes)",
                                              graph_.op(t.src).name, graph_.op(t.dst).name, t.bytes));
    flow_of_edge_[e] = static_cast<std::int32_t>(result_.flows.size());
    flows_of_edge_[e] = flows_left_[e] = fold_ ? fold_->copies : 1;
    for (int j = 0; j < flows_of_edge_[e]; ++j) {
      const DeviceId src = fold_ ? fold_->copy_of(from, j) : from, dst = fold_ ? fold_->copy_of(to, j) : to;
      add_flow(e, src, dst, units);
    }
  }
  flow_first_subflow_.push_back(static_cast<std::int32_t>(result_.subflows.size()));
  flow_bandwidth_start_.assign(result_.flows.size(), 0.0);
}

// One flow of tensor e from GPU src to GPU dst, `units` payload units in all, with its sub-flows.
void Simulation::add_flow(EdgeId e, DeviceId src, DeviceId dst, double units) {
  const Tensor& t = graph_.tensor(e);
  const auto flow = static_cast<std::int32_t>(result_.flows.size());
  result_.flows.push_back({e, src, dst, t.bytes, 0.0, 0.0});
  flow_alpha_.push_back(cluster_.transfer_alpha(src, dst, t));
  flow_first_subflow_.push_back(static_cast<std::int32_t>(result_.subflows.size()));
  const auto [first, fresh] = route_first_path_.try_emplace(cluster_.route_id(src, dst), static_cast<std::int32_t>(paths_.size()));
  if (fresh)
    for (RoutePath& p : cluster_.paths(src, dst)) paths_.push_back({std::move(p.links), p.share, nullptr});
  const int num_paths = cluster_.num_paths(src, dst);
  for (int k = 0; k < num_paths; ++k) {
    const std::int32_t path = first->second + k;
    const double share = paths_[path].share;
    result_.subflows.push_back({flow, k, num_paths == 1 ? t.bytes : t.bytes * share, 0.0});
    subflow_path_.push_back(path);
    // A sub-flow carries at least one payload unit (1/65536 byte).
    const double sub_units = num_paths == 1 ? units : std::round(t.bytes * share * kPayloadUnitsPerByte);
    subflow_payload_.push_back(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(sub_units)));
  }
}

void Simulation::build_platform() {
  const int num_devices = cluster_.num_devices();
  auto* zone = sg4::create_star_zone("cluster");
  hosts_.resize(num_devices);
  // SimGrid names must be unique, so they come from indices, not from the Cluster's names. GPU
  // hosts run the actors; they have no links (flows leave from path hosts).
  for (int d = 0; d < num_devices; ++d) hosts_[d] = zone->create_host(fmt::format("gpu{}", d), 1.0)->seal();
  sink_ = zone->create_host("sink", 1.0)->seal();

  // Only the paths that carry a flow get a host (and only their links are created): clusters of
  // 1,024 GPUs have a million pairs.
  std::vector<sg4::Link*> links(cluster_.links().size(), nullptr);
  std::vector<sg4::LinkInRoute> route;
  for (std::size_t k = 0; k < paths_.size(); ++k) {
    route.clear();
    for (int id : paths_[k].links) {
      if (links[id] == nullptr) {
        // One-way and shared: concurrent flows split its bandwidth max-min fairly. No latency on
        // the link itself: CM02 would weight sharing by route latency; alpha is slept explicitly.
        links[id] = zone->create_link(fmt::format("link{}", id), cluster_.link(id).bandwidth * kPayloadUnitsPerByte)
                        ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED)
                        ->set_latency(0.0)
                        ->seal();
      }
      route.emplace_back(links[id]);
    }
    paths_[k].host = zone->create_host(fmt::format("path{}", k), 1.0)->seal();
    zone->add_route(paths_[k].host->get_netpoint(), nullptr, nullptr, nullptr, route, /*symmetrical=*/false);
  }
  zone->seal();
  result_.platform_hosts = static_cast<std::int64_t>(num_devices + 1 + paths_.size());
  result_.platform_links = std::count_if(links.begin(), links.end(), [](const sg4::Link* l) { return l != nullptr; });
}

void Simulation::deliver(OpId dst) {
  if (--pending_inputs_[dst] == 0) {
    if (graph_.op(dst).communication) {
      // Completes now, without its GPU; the outermost call drains what the others queue.
      communication_ready_.push_back(dst);
      if (completing_communication_) return;
      completing_communication_ = true;
      while (!communication_ready_.empty()) {
        const OpId op = communication_ready_.back();
        communication_ready_.pop_back();
        result_.start[op] = result_.finish[op] = sg4::Engine::get_clock();
        ++finished_ops_;
        forward_outputs(op);
      }
      completing_communication_ = false;
      return;
    }
    const DeviceId gpu = placement_[dst];
    if (queue_ == GpuQueue::Fcfs) ready_[gpu].emplace(sg4::Engine::get_clock(), dst);
    if (waiting_for_[gpu] == dst || (queue_ == GpuQueue::Fcfs && waiting_for_[gpu] >= 0)) input_arrived_[gpu]->notify_one();
  }
}

void Simulation::gpu_actor(DeviceId gpu) {
  // device_order_ lists each operator of the GPU once; FCFS uses only its length.
  for (std::size_t k = 0; k < device_order_[gpu].size(); ++k) {
    OpId op = device_order_[gpu][k];
    if (queue_ == GpuQueue::Fcfs) {
      if (ready_[gpu].empty()) {
        waiting_for_[gpu] = graph_.num_operators();  // any operator of this GPU
        std::unique_lock lock(*mutexes_[gpu]);
        while (ready_[gpu].empty()) input_arrived_[gpu]->wait(lock);
        waiting_for_[gpu] = -1;
      }
      op = ready_[gpu].top().second;
      ready_[gpu].pop();
    } else if (pending_inputs_[op] > 0) {
      waiting_for_[gpu] = op;
      std::unique_lock lock(*mutexes_[gpu]);
      while (pending_inputs_[op] > 0) input_arrived_[gpu]->wait(lock);
      waiting_for_[gpu] = -1;
    }
    result_.start[op] = sg4::Engine::get_clock();
    if (const double compute = cluster_.compute_time(gpu, graph_.op(op).compute_s); compute > 0)
      sg4::this_actor::sleep_for(compute);
    result_.finish[op] = sg4::Engine::get_clock();
    ++finished_ops_;
    forward_outputs(op);
  }
}

void Simulation::forward_outputs(OpId op) {
  for (EdgeId e : graph_.out_edges(op)) {
    const std::int32_t flow = flow_of_edge_[e];
    if (flow < 0) {
      deliver(graph_.tensor(e).dst);  // same GPU, or a zero-byte control dependency: free
      continue;
    }
    // A short-lived actor per flow creates its communication just in time (SimGrid 3.32 slows
    // down quadratically with many started activities) and lets the GPU move on.
    for (std::int32_t f = flow; f < flow + flows_of_edge_[e]; ++f) {
      result_.flows[f].start = result_.finish[op];
      sg4::Actor::create("flow", hosts_[placement_[op]], [this, f] { flow_actor(f); });
    }
  }
}

void Simulation::flow_actor(std::int32_t flow) {
  FlowRecord& f = result_.flows[flow];
  if (flow_alpha_[flow] > 0) sg4::this_actor::sleep_for(flow_alpha_[flow]);
  flow_bandwidth_start_[flow] = sg4::Engine::get_clock();
  const std::int32_t first = flow_first_subflow_[flow], last = flow_first_subflow_[flow + 1];
  if (last - first == 1) {
    sg4::Comm::sendto(paths_[subflow_path_[first]].host, sink_, subflow_payload_[first]);
    result_.subflows[first].end = sg4::Engine::get_clock();
  } else {
    // All sub-flows at once, then waited for one after the other (each wait watches one comm;
    // wait_any would re-register on every pending one, and an actor per sub-flow costs a stack
    // each); each records when it finished.
    std::vector<sg4::CommPtr> comms;
    comms.reserve(last - first);
    for (std::int32_t k = first; k < last; ++k)
      comms.push_back(sg4::Comm::sendto_async(paths_[subflow_path_[k]].host, sink_, subflow_payload_[k]));
    for (std::int32_t k = first; k < last; ++k) {
      comms[k - first]->wait();
      result_.subflows[k].end = comms[k - first]->get_finish_time();
    }
  }
  f.end = sg4::Engine::get_clock();
  if (--flows_left_[f.edge] == 0) deliver(graph_.tensor(f.edge).dst);
}

// Per-link bytes, and busy time as the union of the bandwidth phases of the sub-flows crossing it.
void Simulation::finish_result() {
  result_.latency = 0;
  for (double t : result_.finish) result_.latency = std::max(result_.latency, t);

  result_.links.assign(cluster_.links().size(), LinkStats{});
  struct Interval {
    std::int32_t link;
    double begin, end;
  };
  std::vector<Interval> intervals;
  for (std::size_t k = 0; k < result_.subflows.size(); ++k) {
    const SubflowRecord& sub = result_.subflows[k];
    for (int id : paths_[subflow_path_[k]].links) {
      result_.links[id].bytes += sub.bytes;
      intervals.push_back({id, flow_bandwidth_start_[sub.flow], sub.end});
    }
  }
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return a.link != b.link ? a.link < b.link : a.begin < b.begin;
  });
  for (std::size_t i = 0; i < intervals.size();) {
    const std::int32_t link = intervals[i].link;
    double begin = intervals[i].begin, end = intervals[i].end, busy = 0;
    for (++i; i < intervals.size() && intervals[i].link == link; ++i) {
      if (intervals[i].begin > end) {
        busy += end - begin;
        begin = intervals[i].begin;
        end = intervals[i].end;
      } else {
        end = std::max(end, intervals[i].end);
      }
    }
    result_.links[link].busy_s = busy + (end - begin);
  }
}

// The SimGrid configuration, as command-line options: the context factory options are only read
// when the engine is created.
std::vector<std::string> engine_arguments() {
  return {
      "placesim",
      // Silence SimGrid (configuration changes are logged at INFO) so the CLI output stays clean.
      "--log=root.thres:critical",
      // CM02: plain max-min sharing with no TCP corrections; factors 1 so a lone transfer takes
      // exactly bytes / bottleneck bandwidth; no cross-traffic (acknowledgements would load the
      // reverse links); a huge TCP gamma so no window bound caps a flow's rate.
      "--cfg=network/model:CM02",
      "--cfg=network/crosstraffic:0",
      "--cfg=network/TCP-gamma:1e30",
      "--cfg=network/bandwidth-factor:1",
      "--cfg=network/latency-factor:1",
      "--cfg=network/weight-S:0",
      // Numerical tolerances (seconds; relative rate shares). With the 1e-5 defaults a chain of
      // 20,000 operators of microseconds came out 5% late; with 1e-12 it matches the hand-computed
      // times to 1e-12 relative.
      "--cfg=surf/precision:1e-12",
      "--cfg=maxmin/precision:1e-12",
      // Actors only run the short functions above (SimGrid's kernel runs on the main stack), so a
      // small stack without a guard page makes the per-flow actors several times cheaper.
      "--cfg=contexts/stack-size:128",
      "--cfg=contexts/guard-size:0",
#if PLACESIM_ASAN
      // AddressSanitizer cannot follow SimGrid's own stack switching (Debian's libsimgrid is built
      // without its fiber annotations): run each actor on a thread instead.
      "--cfg=contexts/factory:thread",
#endif
  };
}

SimulationResult Simulation::run() {
  const auto n = graph_.num_operators();
  const int num_devices = cluster_.num_devices();
  result_.start.assign(n, 0.0);
  result_.finish.assign(n, 0.0);
  build_flows();

  // SimGrid 3.32 allows one engine per process: a second one starts where the first one's clock
  // stopped, silently shifting every time.
  if (sg4::Engine::has_instance() || sg4::Engine::get_clock() != 0.0)
    throw std::logic_error("SimGrid already ran in this process: use simulate(), which forks");

  std::vector<std::string> args = engine_arguments();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  engine_ = std::make_unique<sg4::Engine>(&argc, argv.data());

  const auto t0 = std::chrono::steady_clock::now();
  build_platform();
  result_.platform_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  waiting_for_.assign(num_devices, -1);
  if (queue_ == GpuQueue::Fcfs) {
    ready_.resize(num_devices);
    for (OpId op = 0; op < static_cast<OpId>(n); ++op)
      if (pending_inputs_[op] == 0 && !graph_.op(op).communication) ready_[placement_[op]].emplace(0.0, op);
  }
  for (int d = 0; d < num_devices; ++d) {
    mutexes_.push_back(sg4::Mutex::create());
    input_arrived_.push_back(sg4::ConditionVariable::create());
  }
  for (int d = 0; d < static_cast<int>(device_order_.size()); ++d)
    if (!device_order_[d].empty()) sg4::Actor::create(fmt::format("gpu{}", d), hosts_[d], [this, d] { gpu_actor(d); });
  // Communication steps with no inputs complete at time 0 (deliver does it when the count drops).
  // (Listed first: completing one brings others' counts to 0.)
  std::vector<OpId> sources;
  for (OpId op = 0; op < static_cast<OpId>(n); ++op)
    if (pending_inputs_[op] == 0 && graph_.op(op).communication) sources.push_back(op);
  for (OpId op : sources) {
    pending_inputs_[op] = 1;
    deliver(op);
  }

  // On a deadlock SimGrid logs it, kills the blocked actors and returns.
  engine_->run();

  // validate_inputs rules out deadlocks, so this only fires on a bug: report it, do not hang.
  if (finished_ops_ != static_cast<std::int64_t>(n)) {
    std::string stuck;
    for (int d = 0; d < num_devices && stuck.empty(); ++d)
      if (waiting_for_[d] >= 0 && waiting_for_[d] < static_cast<OpId>(n))
        stuck = fmt::format(" (GPU {} waits for inputs of '{}')", d, graph_.op(waiting_for_[d]).name);
    throw std::runtime_error(fmt::format("SimGrid simulation deadlocked: {} of {} operators ran{}", finished_ops_, n, stuck));
  }
  finish_result();
  return std::move(result_);
}

// ---------------------------------------------------------------------------------------------
// Passing the result from the forked child: a flat binary message (results can hold 100k
// operators). Both ends are the same executable, so raw trivially copyable structs are fine.

constexpr std::uint32_t kMagic = 0x50534732;  // "PSG2"
enum class Status : std::uint8_t { Ok = 0, Error = 1 };

class Writer {
 public:
  template <class T>
  void put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  template <class T>
  void put_array(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(values.size());
    const auto* p = reinterpret_cast<const char*>(values.data());
    bytes_.insert(bytes_.end(), p, p + values.size_bytes());
  }
  const std::vector<char>& bytes() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    T value;
    take(&value, sizeof(T));
    return value;
  }
  template <class T>
  std::vector<T> get_array() {
    const auto count = get<std::uint64_t>();
    if (count > (bytes_.size() - pos_) / sizeof(T)) throw std::runtime_error("truncated");
    std::vector<T> values(count);
    take(values.data(), count * sizeof(T));
    return values;
  }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  void take(void* out, std::size_t size) {
    if (size > bytes_.size() - pos_) throw std::runtime_error("truncated");
    if (size == 0) return;  // an empty array's data() may be null: memcpy with it is undefined
    std::memcpy(out, bytes_.data() + pos_, size);
    pos_ += size;
  }
  const std::vector<char>& bytes_;
  std::size_t pos_ = 0;
};

std::vector<char> encode_result(const SimulationResult& r) {
  Writer w;
  w.put(kMagic);
  w.put(Status::Ok);
  w.put(r.latency);
  w.put(r.platform_seconds);
  w.put(r.platform_hosts);
  w.put(r.platform_links);
  w.put_array<double>(r.start);
  w.put_array<double>(r.finish);
  w.put_array<FlowRecord>(r.flows);
  w.put_array<SubflowRecord>(r.subflows);
  w.put_array<LinkStats>(r.links);
  return w.bytes();
}

std::vector<char> encode_error(const std::string& message) {
  Writer w;
  w.put(kMagic);
  w.put(Status::Error);
  w.put_array<char>(message);
  return w.bytes();
}

// What the child sent: a result, an error message, or (if it died) nothing usable.
struct ChildReport {
  bool complete = false;
  std::string error;
  SimulationResult result;
};

ChildReport decode(const std::vector<char>& bytes) {
  ChildReport report;
  try {
    Reader in(bytes);
    if (in.get<std::uint32_t>() != kMagic) return report;
    if (in.get<Status>() == Status::Error) {
      const auto text = in.get_array<char>();
      report.error.assign(text.begin(), text.end());
      if (report.error.empty()) report.error = "unknown error";
      return report;
    }
    SimulationResult& r = report.result;
    r.latency = in.get<double>();
    r.platform_seconds = in.get<double>();
    r.platform_hosts = in.get<std::int64_t>();
    r.platform_links = in.get<std::int64_t>();
    r.start = in.get_array<double>();
    r.finish = in.get_array<double>();
    r.flows = in.get_array<FlowRecord>();
    r.subflows = in.get_array<SubflowRecord>();
    r.links = in.get_array<LinkStats>();
    report.complete = in.at_end();
  } catch (const std::runtime_error&) {  // truncated
  }
  return report;
}

bool write_all(int fd, const std::vector<char>& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t k = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += static_cast<std::size_t>(k);
  }
  return true;
}

// In the child: simulate, send the result or the error, and leave without running atexit
// handlers or flushing stdio buffers inherited from the parent.
[[noreturn]] void run_child(int fd, const Graph& graph, const Cluster& cluster, const Folding* fold, std::span<const DeviceId> placement,
                            const std::vector<std::vector<OpId>>& device_order, GpuQueue queue) {
  std::vector<char> message;
  int code = 0;
  try {
    message = encode_result(Simulation(graph, cluster, placement, device_order, queue, fold).run());
  } catch (const std::exception& e) {
    message = encode_error(e.what());
    code = 1;
  } catch (...) {
    message = encode_error("unknown exception");
    code = 1;
  }
  if (!write_all(fd, message)) code = 2;
  ::close(fd);
  ::_exit(code);
}

}  // namespace

SimulationResult simulate_in_process(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                                     const std::vector<std::vector<OpId>>& device_order, GpuQueue queue, const Folding* fold) {
  validate_inputs(graph, cluster, placement, device_order, queue, fold);
  const auto t0 = std::chrono::steady_clock::now();
  SimulationResult r = Simulation(graph, cluster, placement, device_order, queue, fold).run();
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

SimulationResult simulate(const Graph& graph, const Cluster& cluster, std::span<const DeviceId> placement,
                          const std::vector<std::vector<OpId>>& device_order, GpuQueue queue, const Folding* fold) {
  // Bad input is the caller's error: report it here as std::invalid_argument, not from the child.
  validate_inputs(graph, cluster, placement, device_order, queue, fold);
  const auto t0 = std::chrono::steady_clock::now();

  // The child inherits unflushed stdio buffers, and SimGrid flushes them on shutdown: without
  // this, text printed before the call would appear twice.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("SimGrid engine: pipe failed: {}", std::strerror(errno)));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("SimGrid engine: fork failed: {}", std::strerror(err)));
  }
  if (pid == 0) {
    // The child dies with its parent: a sweep worker killed with its run (kill, Ctrl-C) would
    // otherwise leave a simulation of minutes running on its own.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(6);  // the parent died before prctl
    ::close(fds[0]);
    run_child(fds[1], graph, cluster, fold, placement, device_order, queue);
  }
  ::close(fds[1]);

  // Read everything before waiting: the child blocks on a full pipe until we drain it.
  std::vector<char> bytes;
  int read_errno = 0;
  for (char buffer[1 << 16];;) {
    const ssize_t k = ::read(fds[0], buffer, sizeof buffer);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) read_errno = errno;
    if (k <= 0) break;
    bytes.insert(bytes.end(), buffer, buffer + k);
  }
  ::close(fds[0]);
  int status = 0;
  pid_t waited;
  do waited = ::waitpid(pid, &status, 0);
  while (waited < 0 && errno == EINTR);
  const int wait_errno = errno;

  const bool exited_cleanly = waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::string how_it_ended;
  if (waited != pid) how_it_ended = fmt::format("could not be waited for ({})", std::strerror(wait_errno));
  else if (WIFSIGNALED(status))
    how_it_ended = fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status))
    how_it_ended = fmt::format("exited with code {}", WEXITSTATUS(status));

  ChildReport report = decode(bytes);
  if (!report.error.empty()) throw std::runtime_error("SimGrid simulation failed: " + report.error);
  // Without a child to wait for (SIGCHLD ignored), a complete result is still a result.
  if (!report.complete || (waited == pid && !exited_cleanly))
    throw std::runtime_error(fmt::format(
        "SimGrid simulation child process {} {} ({} bytes received{})", how_it_ended,
        report.complete ? "after sending its result" : "before sending a complete result", bytes.size(),
        read_errno ? fmt::format(", read error: {}", std::strerror(read_errno)) : ""));
  SimulationResult r = std::move(report.result);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace placesim
