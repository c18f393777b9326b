#include "sim/io/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>
#include <zlib.h>

#include "sim/core/errors.h"

namespace placesim {
namespace {

constexpr int kGpuProcess = 1;
constexpr int kLinkProcess = 2;
constexpr int kMemoryProcess = 3;

// A JSON string literal (names come from user files).
std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out += c;
    }
  }
  out += '"';
  return out;
}

// JSON has no NaN or infinity.
std::string number(double x) { return std::isfinite(x) ? fmt::format("{}", x) : std::string("null"); }

std::string microseconds(double seconds) { return number(seconds * 1e6); }

// The trace, written event by event as it is made (a plan of thousands of GPUs has millions of
// them): plain JSON, or gzip'd (zlib's stream) when the path ends in .gz, which Perfetto and
// chrome://tracing open as they are, at about a tenth of the size.
class TraceFile {
 public:
  explicit TraceFile(const std::string& path) : path_(path) {
    if (path.ends_with(".gz")) gz_ = gzopen(path.c_str(), "wb6");
    else file_ = std::fopen(path.c_str(), "w");
    if (!gz_ && !file_) {
      const int err = errno;
      throw OutputError(path, fmt::format("cannot write the trace: {}", std::strerror(err)));
    }
    write("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  ~TraceFile() {
    if (gz_) gzclose(gz_);
    if (file_) std::fclose(file_);
  }
  // One event: a JSON object's members, without the braces.
  void event(const std::string& members) {
    write(first_ ? "{" : ",\n{");
    write(members);
    write("}");
    first_ = false;
  }
  void close() {
    write("\n]}\n");
    bool failed = failed_;
    int reason = error_;
    if (gz_) {
      failed = gzclose(std::exchange(gz_, nullptr)) != Z_OK || failed;
      if (failed && reason == 0) reason = errno;
    } else {
      failed = std::ferror(file_) != 0 || failed;
      if (failed && reason == 0) reason = errno;
      if (std::fclose(std::exchange(file_, nullptr)) != 0 && !failed) failed = true, reason = errno;
    }
    if (failed) {
      std::remove(path_.c_str());  // a truncated trace (full disk) is of no use to anyone
      throw OutputError(path_, fmt::format("cannot write the trace: {}", std::strerror(reason != 0 ? reason : EIO)));
    }
  }

 private:
  void write(std::string_view text) {
    if (failed_ || text.empty()) return;
    const bool ok = gz_ ? gzwrite(gz_, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size())
                        : std::fwrite(text.data(), 1, text.size(), file_) == text.size();
    if (!ok) failed_ = true, error_ = errno;
  }
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* file_ = nullptr;
  bool first_ = true, failed_ = false;
  int error_ = 0;
};

void name_track(TraceFile& out, int pid, int tid, const std::string& name) {
  out.event(fmt::format(R"("name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}})", pid, tid, quoted(name)));
  out.event(fmt::format(R"("name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}})", pid, tid, tid));
}

void name_process(TraceFile& out, int pid, const std::string& name) {
  out.event(fmt::format(R"("name":"process_name","ph":"M","pid":{},"args":{{"name":{}}})", pid, quoted(name)));
  out.event(fmt::format(R"("name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}})", pid, pid));
}

}  // namespace

void write_chrome_trace(const std::string& path, const Graph& graph, const Cluster& cluster,
                        std::span<const DeviceId> placement, std::span<const double> start,
                        std::span<const double> finish, std::span<const FlowRecord> flows,
                        std::span<const SubflowRecord> subflows, std::span<const GpuMemoryTrack> memory) {
  const std::size_t n = graph.num_operators();
  if (placement.size() != n || start.size() != n || finish.size() != n)
    throw std::invalid_argument(fmt::format("trace: {} operators but {} placements, {} starts and {} finishes", n,
                                            placement.size(), start.size(), finish.size()));
  const int num_devices = cluster.num_devices();
  for (DeviceId d : placement)
    if (d < 0 || d >= num_devices) throw std::invalid_argument(fmt::format("trace: placement names GPU {}", d));
  for (const GpuMemoryTrack& m : memory)
    if (m.gpu < 0 || m.gpu >= num_devices) throw std::invalid_argument(fmt::format("trace: memory of GPU {}", m.gpu));
  for (const FlowRecord& f : flows)
    if (f.src < 0 || f.src >= num_devices || f.dst < 0 || f.dst >= num_devices || f.src == f.dst || f.edge < 0 ||
        static_cast<std::size_t>(f.edge) >= graph.num_tensors() || !cluster.reachable(f.src, f.dst))
      throw std::invalid_argument(fmt::format("trace: flow of tensor {} from GPU {} to GPU {} is not valid", f.edge, f.src, f.dst));
  // Sub-flow ends, per flow and path; NaN where not given (the flow's end then stands in).
  std::vector<std::size_t> first_path(flows.size() + 1, 0);
  for (std::size_t k = 0; k < flows.size(); ++k)
    first_path[k + 1] = first_path[k] + static_cast<std::size_t>(cluster.num_paths(flows[k].src, flows[k].dst));
  std::vector<double> path_end(first_path.back(), std::nan(""));
  for (const SubflowRecord& sub : subflows) {
    if (sub.flow < 0 || static_cast<std::size_t>(sub.flow) >= flows.size() || sub.path < 0 ||
        first_path[sub.flow] + sub.path >= first_path[sub.flow + 1])
      throw std::invalid_argument(fmt::format("trace: sub-flow {} of flow {} is not valid", sub.path, sub.flow));
    path_end[first_path[sub.flow] + sub.path] = sub.end;
  }

  TraceFile out(path);
  name_process(out, kGpuProcess, "GPUs");
  for (int d = 0; d < num_devices; ++d) {
    const std::string& name = cluster.device(d).name;
    name_track(out, kGpuProcess, d, name.empty() ? fmt::format("gpu{}", d) : name);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Operator& op = graph.op(static_cast<OpId>(i));
    out.event(fmt::format(
        R"("name":{},"cat":"op","ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"type":{},"compute":{},"memory":{}}})",
        quoted(op.name), kGpuProcess, placement[i], microseconds(start[i]), microseconds(finish[i] - start[i]),
        quoted(op.type), number(op.compute_s), number(op.memory_bytes)));
  }
  if (!memory.empty()) {
    // Counters: a viewer draws one track per name.
    name_process(out, kMemoryProcess, "GPU memory");
    for (const GpuMemoryTrack& m : memory) {
      const std::string& device = cluster.device(m.gpu).name;
      const std::string name = quoted(fmt::format("{} memory", device.empty() ? fmt::format("gpu{}", m.gpu) : device));
      for (const auto& [time, bytes] : m.points)
        out.event(fmt::format(R"("name":{},"ph":"C","pid":{},"ts":{},"args":{{"GiB":{}}})", name, kMemoryProcess,
                              microseconds(time), number(bytes / (1024.0 * 1024 * 1024))));
    }
  }

  if (flows.empty()) {
    out.close();
    return;
  }
  name_process(out, kLinkProcess, "links");
  std::vector<std::uint8_t> link_used(cluster.links().size(), 0);
  for (const FlowRecord& f : flows)
    for (const RoutePath& p : cluster.paths(f.src, f.dst))
      for (int id : p.links) link_used[id] = 1;
  for (std::size_t id = 0; id < link_used.size(); ++id)
    if (link_used[id]) {
      const std::string& name = cluster.link(static_cast<int>(id)).name;
      name_track(out, kLinkProcess, static_cast<int>(id), name.empty() ? fmt::format("link{}", id) : name);
    }
  // Async slices: viewers stack overlapping ones, and group them into one track per event name,
  // so each slice is named after its link and the flow is described in its args.
  std::uint64_t slice_id = 0;
  struct OnLink {
    int link;
    double bytes, end;
  };
  std::vector<OnLink> on_links;
  std::vector<std::int32_t> slot(cluster.links().size(), -1);
  for (std::size_t k = 0; k < flows.size(); ++k) {
    const FlowRecord& f = flows[k];
    const Tensor& t = graph.tensor(f.edge);
    // The bytes move once the route latency (each of the tensor's latencies) and the tensor's
    // overhead have elapsed, as in the engines.
    const double begin = std::min(f.start + cluster.transfer_alpha(f.src, f.dst, t), f.end);
    const std::vector<RoutePath> paths = cluster.paths(f.src, f.dst);
    on_links.clear();
    for (std::size_t p = 0; p < paths.size(); ++p) {
      const double end = std::isnan(path_end[first_path[k] + p]) ? f.end : path_end[first_path[k] + p];
      for (int id : paths[p].links) {
        if (slot[id] < 0) {
          slot[id] = static_cast<std::int32_t>(on_links.size());
          on_links.push_back({id, 0.0, end});
        }
        OnLink& o = on_links[slot[id]];
        o.bytes += paths.size() == 1 ? f.bytes : f.bytes * paths[p].share;
        o.end = std::max(o.end, end);
      }
    }
    for (const OnLink& o : on_links) {
      slot[o.link] = -1;
      const std::string args = fmt::format(
          R"({{"bytes":{},"flow_bytes":{},"paths":{},"src":{},"dst":{},"src_gpu":{},"dst_gpu":{},"requested_us":{}}})",
          number(o.bytes), number(f.bytes), paths.size(), quoted(graph.op(t.src).name), quoted(graph.op(t.dst).name), f.src,
          f.dst, microseconds(f.start));
      const std::string& link_name = cluster.link(o.link).name;
      const std::string name = quoted(link_name.empty() ? fmt::format("link{}", o.link) : link_name);
      ++slice_id;
      out.event(fmt::format(R"("name":{},"cat":"transfer","ph":"b","id":{},"pid":{},"tid":{},"ts":{},"args":{})", name,
                            slice_id, kLinkProcess, o.link, microseconds(begin), args));
      out.event(fmt::format(R"("name":{},"cat":"transfer","ph":"e","id":{},"pid":{},"tid":{},"ts":{})", name, slice_id,
                            kLinkProcess, o.link, microseconds(std::max(begin, o.end))));
    }
  }
  out.close();
}


std::vector<FlowRecord> flows_of_schedule(const Graph& graph, std::span<const DeviceId> placement, const Cluster& cluster,
                                          std::span<const double> start, std::span<const double> finish) {
  std::vector<FlowRecord> out;
  for (EdgeId e = 0; e < static_cast<EdgeId>(graph.num_tensors()); ++e) {
    const Tensor& t = graph.tensor(e);
    const DeviceId a = placement[t.src], b = t.route_to >= 0 ? t.route_to : placement[t.dst];
    if (a == b || t.bytes <= 0 || !cluster.reachable(a, b)) continue;
    const double requested = finish[t.src];
    const double used = graph.op(t.dst).communication ? finish[t.dst] : start[t.dst];
    out.push_back({e, a, b, t.bytes, requested, std::max(used, requested + cluster.transfer_time(a, b, t))});
  }
  return out;
}

}  // namespace placesim
