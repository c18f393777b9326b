#pragma once
// What every server-based fabric shares: GPU servers whose GPUs are joined by NVLink (each GPU
// has an up and a down link of `nvlink_bandwidth` to the server's NVSwitch, so GPU a -> GPU b of
// one server crosses a's up link and b's down link), their NICs, the keys that describe them
// (gpu_servers_schema) and the checks and building blocks the fabric files use.
//
// Inter-server traffic goes NIC to NIC; the GPU-to-NIC hop (PCIe) is not modelled, so the GPUs of
// a server share its NICs. Every cable is full duplex: two one-way links, one per direction.
// Link names: "gpu<g>-nvlink-up/down", "server<s>-nic-up/down" (multi-nic: "server<s>-nic<i>-up"),
// switch-to-switch links "<from>-to-<to>".
#include <functional>
#include <string>
#include <vector>

#include "sim/core/cluster.h"
#include "sim/config/options.h"
#include "sim/core/units.h"

namespace placesim {

constexpr double kDefaultGpuMemory = 16.0 * 1024 * 1024 * 1024;
// The most GPUs a server fabric takes. Routes are computed when asked, so a cluster costs time and
// memory in proportion to its links, not to its GPU pairs (bench_topology's BM_BuildCluster); the
// limit is twice the largest the benchmarks build (131,072 GPUs: bench/bench_plans.cpp).
constexpr int kMaxClusterGpus = 262144;

// A per-server change, so heterogeneous clusters can be described; 0 keeps the cluster's value.
struct ServerOverride {
  int server = 0;
  double gpu_memory = 0;  // bytes
  double gpu_speed = 0;   // relative compute speed (see Device::compute_speed)
  bool operator==(const ServerOverride&) const = default;
};

// How a builder's errors name fields: "cluster.<key>" by default; the registry passes the file
// and a function that adds the YAML path and line.
struct ConfigSource {
  std::string file;
  std::function<std::string(const std::string& key)> field;
  std::string name(const std::string& key) const { return field ? field(key) : "cluster." + key; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
};

// How collectives run: `ideal` at line rate with no latency floor (the papers' model), `nccl` as
// NCCL 2.18 runs them (sim/collectives/nccl.h, with the costs of nccl_calibrated_costs).
enum class CollectiveModel { Ideal, Nccl };
inline constexpr EnumName<CollectiveModel> kCollectiveModelNames[] = {{CollectiveModel::Ideal, "ideal"},
                                                                      {CollectiveModel::Nccl, "nccl"}};

// The GPU servers every fabric connects (each fabric's config extends it).
struct GpuServersConfig {
  int servers = 4;
  int gpus_per_server = 2;
  double nvlink_bandwidth = 50e9;  // per GPU, each direction
  double nvlink_latency = 0;
  double gpu_memory = kDefaultGpuMemory;
  double gpu_speed = 1.0;
  std::vector<ServerOverride> overrides;
  CollectiveModel collectives = CollectiveModel::Ideal;  // how collectives run (Cluster::nccl)
  bool nvlink_sharp = false;  // NVSwitch with NVLink SHARP (NVLS): in-switch reductions
  std::string gpu_model;      // the GPU's name, for reports ("H100-SXM5-80GB"); presets set it
  bool operator==(const GpuServersConfig&) const = default;
};

// `server_overrides: [{server: 3, gpu_memory: 80GiB}, {servers: [4, 5], gpu_speed: 2}]`.
void parse_server_overrides(const YamlFields& f, std::string_view key, GpuServersConfig& cfg);
// The override indices against the final server count (a fabric may derive it from other keys).
void check_server_overrides(const YamlFields& f, const GpuServersConfig& cfg);

// The keys of GpuServersConfig, for a fabric's schema (`servers_default` documents a derived
// default, such as a full fat-tree).
template <class Config>
OptionSchema<Config> gpu_servers_schema(std::string servers_default = "") {
  OptionSchema<GpuServersConfig> s;
  s.count("servers", &GpuServersConfig::servers, "GPU servers", 1, 1 << 20, "3");
  if (!servers_default.empty()) {
    auto entries = s.entries();  // re-declare with the derived default's text
    OptionSchema<GpuServersConfig> t;
    OptionDoc doc = entries[0].doc;
    doc.default_text = servers_default;
    t.add(doc, entries[0].parse);
    s = t;
  }
  s.count("gpus_per_server", &GpuServersConfig::gpus_per_server, "GPUs in each server", 1, 1 << 20, "1");
  s.bandwidth("nvlink_bandwidth", &GpuServersConfig::nvlink_bandwidth, "NVLink bandwidth per GPU, each direction", "100GB/s");
  s.duration("nvlink_latency", &GpuServersConfig::nvlink_latency, "NVLink latency", Range::non_negative(), "1us");
  s.bytes("gpu_memory", &GpuServersConfig::gpu_memory, "memory of each GPU", "8GiB");
  s.number("gpu_speed", &GpuServersConfig::gpu_speed,
           "compute speed relative to the GPU the graph was profiled on (an operator takes compute_s / gpu_speed)",
           Range::closed(1 / kMaxRatio, kMaxRatio), "2");
  s.add({"server_overrides", "list", "per-server GPU memory and/or speed: [{server: 3, gpu_memory: 80GiB}, {servers: [4, 5], gpu_speed: 2}]",
         "none", {}, "[{server: 0, gpu_speed: 3}]"},
        parse_server_overrides);
  s.choice("collectives", &GpuServersConfig::collectives, std::span<const EnumName<CollectiveModel>>(kCollectiveModelNames),
           "how collectives run: ideal (line rate, no latency floor, as the papers) or nccl (NCCL's protocols, latencies and "
           "algorithms, calibrated on nccl-tests: docs/collectives.md)",
           "nccl");
  s.check(check_server_overrides);
  s.flag("nvlink_sharp", &GpuServersConfig::nvlink_sharp, "NVSwitch with NVLink SHARP (NVLS): in-switch reductions; NCCL's NVLS all-reduce runs");
  s.text("gpu_model", &GpuServersConfig::gpu_model, "the GPU's name, for reports (presets set it)", "H100-SXM5-80GB");
  OptionSchema<Config> out;
  out.include(s);
  return out;
}

// Building blocks of the fabric files.
namespace fabric {

void require_positive(const ConfigSource& src, const std::string& key, double value, const char* what = "a bandwidth");
void require_latency(const ConfigSource& src, const std::string& key, double value);
void require_count(const ConfigSource& src, const std::string& key, long value, long min, long max);

// The servers of a fabric: GPUs joined by NVLink, one Server node per server (its NVSwitch and
// NICs), and each GPU's NVLink up and down links as one-link path sets.
struct Servers {
  int count = 0;
  std::vector<int> first_gpu;  // per server, plus one past the end
  std::vector<int> node;       // per server: its Server node
  std::vector<int> server_of;  // per GPU
  std::vector<int> gpu_up_stage, gpu_down_stage;  // per GPU: a one-link path set
  int gpus(int s) const { return first_gpu[s + 1] - first_gpu[s]; }
};

void validate_servers(const GpuServersConfig& cfg, const ConfigSource& src, long total_gpus);
// Adds GPUs (gpu<g>, numbered across servers), their NVLink up and down links in that order,
// server nodes, and the GPUs' up and down stages; sets the cluster's nvlink_sharp and gpu_model.
Servers add_servers(Cluster& c, const GpuServersConfig& cfg, const std::vector<int>& gpus_per_server);

// The routing of a server fabric: within a server, GPU a's NVLink up link then GPU b's down link
// (one route per GPU pair); between servers, what the fabric says (between()). Both are computed
// from the servers' layout when asked.
class ServerRouting : public Routing {
 public:
  explicit ServerRouting(Servers layout);
  Route route(DeviceId src, DeviceId dst) const final;
  std::int64_t num_routes() const final;
  bool all_pairs_reachable() const override { return true; }

 protected:
  // The route from GPU src of server sa to GPU dst of server sb (sa != sb), its id in
  // [0, num_routes_between()). Most fabrics route by server; rail-optimized PXN also by the sender.
  virtual Route between(DeviceId src, int sa, int sb, DeviceId dst) const = 0;
  virtual std::int64_t num_routes_between() const = 0;
  const Servers& servers() const { return servers_; }

 private:
  Servers servers_;
  int max_gpus_ = 0;  // in one server: route ids within servers are (server, a, b) in these strides
};

// The routing of servers on one switch: a's NIC up, then b's NIC down (one route per server pair).
class SwitchRouting final : public ServerRouting {
 public:
  SwitchRouting(Servers layout, std::vector<int> nic_up_stage, std::vector<int> nic_down_stage);
  bool routes_by_server() const override { return true; }  // one NIC per server

 protected:
  Route between(DeviceId src, int sa, int sb, DeviceId dst) const override;
  std::int64_t num_routes_between() const override;

 private:
  std::vector<int> nic_up_stage_, nic_down_stage_;
};

std::vector<int> uniform_servers(const GpuServersConfig& cfg);
std::string servers_phrase(const GpuServersConfig& cfg, int servers);
void note_overrides(Cluster& c, const GpuServersConfig& cfg);
// A one-way link from node `from` to node `to`, named after them.
int add_cable_link(Cluster& c, int from, int to, double bandwidth, double latency);

// The NIC links of each server to its switch: "server<s>-nic-up" and "-down" with one NIC per
// server; with several, "server<s>-nic<i>-up", NIC i serving the server's GPUs i * g .. i * g + g - 1
// (g = GPUs per NIC), so that each GPU's traffic leaves and enters through its own NIC.
struct Nics {
  std::vector<int> up_stage, down_stage;  // per server and NIC (server * per_server + i): a one-link path set
  int per_server = 1;
  // The NIC of `gpu` (on server `server`), an index into up_stage and down_stage.
  int of(const Servers& s, int server, DeviceId gpu) const {
    const int gpus_per_nic = s.gpus(server) / per_server;
    return server * per_server + (gpu - s.first_gpu[server]) / gpus_per_nic;
  }
};
Nics add_single_nics(Cluster& c, const Servers& s, const std::vector<int>& switch_of_server, double bandwidth, double latency);
Nics add_server_nics(Cluster& c, const Servers& s, const std::vector<int>& switch_of_server, int nics_per_server, double bandwidth,
                     double latency);
// `nics_per_server` must divide every server's GPUs (each NIC serves as many): the error names the key.
void require_nics_divide(const ConfigSource& src, int nics_per_server, int gpus_per_server);
std::string ratio(double r);
// "NIC 50 GB/s", or "8 NICs of 50 GB/s per server".
std::string nics_phrase(int nics_per_server, double bandwidth);
// An oversubscription ratio written "4", "4:1" or "1.5"; errors name the key.
double parse_oversubscription(const YamlFields& f, std::string_view key);

}  // namespace fabric

}  // namespace placesim
