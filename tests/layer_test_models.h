#pragma once
// Small layer-level workloads and clusters for the planners' tests (nest, mcmc-plan).
#include <random>
#include <string>

#include "sim/plans/layer_model.h"
#include "topologies/fabrics.h"

namespace placesim::testutil {

// 8 GPUs in 2 servers of 4: NVLink inside (1 us per link), Ethernet between.
inline Cluster two_servers(double memory, double nvlink = 100e9, double ethernet = 5e9, double latency = 5e-6) {
  NvlinkServersConfig c;
  c.gpus = 8;
  c.gpus_per_server = 4;
  c.nvlink_bandwidth = nvlink;
  c.ethernet_bandwidth = ethernet;
  c.ethernet_latency = latency;
  c.nvlink_latency = 1e-6;
  c.gpu_memory = memory;
  return make_nvlink_servers(c);
}

// A random chain of `layers` layers at tensor widths 1 and 2 (width 2 halves compute, parameters
// and stash, adds a little, and all-reduces a quarter of the activation in each pass).
inline LayerWorkload random_workload(std::mt19937& rng, int layers) {
  std::uniform_real_distribution<double> u(0.5, 2.0);
  LayerWorkload w;
  w.name = "random";
  w.source = "test";
  LayerModel one;
  one.name = "random";
  for (int l = 0; l < layers; ++l) {
    Layer layer;
    layer.name = "l" + std::to_string(l);
    layer.forward_s = u(rng) * 1e-3;
    layer.backward_s = 2 * layer.forward_s;
    layer.parameter_bytes = u(rng) * 1e8;
    layer.stashed_bytes = u(rng) * 4e7;
    layer.output_bytes = u(rng) * 8e6;
    one.layers.push_back(layer);
  }
  LayerModel two = one;
  two.tensor_parallel = 2;
  for (Layer& l : two.layers) {
    l.forward_s = l.forward_s / 2 + 0.05 * 1e-3;
    l.backward_s = l.backward_s / 2 + 0.1 * 1e-3;
    l.parameter_bytes /= 2;
    l.stashed_bytes /= 2;
    l.tp_allreduce_forward_bytes = l.tp_allreduce_backward_bytes = l.output_bytes / 4;
  }
  w.by_tensor_parallel[1] = one;
  w.by_tensor_parallel[2] = two;
  return w;
}

// A chain of `layers` layers of 1 ms forward and 2 ms backward, each holding `parameter_bytes`
// and sending `output_bytes` to the next, as the only model (width 1) of a workload.
inline LayerWorkload uniform_chain(int layers, double parameter_bytes, double output_bytes) {
  LayerWorkload w;
  w.name = "chain";
  w.source = "test";
  LayerModel m;
  m.name = "chain";
  for (int l = 0; l < layers; ++l) m.layers.push_back({"l" + std::to_string(l), 1e-3, 2e-3, parameter_bytes, 0, output_bytes});
  w.by_tensor_parallel[1] = m;
  return w;
}

// random_workload at width 1 with every layer four experts of the dense layer's size (3/4 of its
// parameters the experts'), built for ep 1: a plan spreads them.
inline LayerWorkload random_moe_workload(std::mt19937& rng, int layers) {
  LayerWorkload w = random_workload(rng, layers);
  w.by_tensor_parallel.erase(2);
  for (Layer& l : w.by_tensor_parallel.at(1).layers) {
    l.experts = 4;
    l.parameter_bytes *= 4;
    l.expert_parameter_bytes = 0.75 * l.parameter_bytes;
  }
  return w;
}

// `gpus` GPUs in one server on NVLink.
inline Cluster one_server(int gpus, double memory, double nvlink = 100e9) {
  NvlinkServersConfig c;
  c.gpus = gpus;
  c.gpus_per_server = gpus;
  c.nvlink_bandwidth = nvlink;
  c.gpu_memory = memory;
  return make_nvlink_servers(c);
}

}  // namespace placesim::testutil
