#include <gtest/gtest.h>

#include "sim/core/errors.h"
#include "tests/test_util.h"
#include "sim/core/units.h"
#include "topologies/fabrics.h"

using namespace placesim;

TEST(Units, ParsesWithUnits) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("20GB/s", "f", "x"), 20e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25Gbps", "f", "x"), 25e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1e9", "f", "x"), 1e9);
  EXPECT_DOUBLE_EQ(parse_duration("1us", "f", "x"), 1e-6);
  EXPECT_DOUBLE_EQ(parse_duration("2.5 ms", "f", "x"), 2.5e-3);
  EXPECT_DOUBLE_EQ(parse_bytes("16GiB", "f", "x"), 16.0 * 1073741824.0);
}

TEST(Units, BadUnitsNameFileAndField) {
  EXPECT_INPUT_ERROR(parse_bandwidth("20 GB/h", "c.yaml", "cluster.bandwidth"), "cluster.bandwidth",
                     "c.yaml: cluster.bandwidth", "GB/h");
  EXPECT_THROW(parse_bandwidth("0GB/s", "f", "x"), InputError);
  EXPECT_THROW(parse_bandwidth("-3GB/s", "f", "x"), InputError);
  EXPECT_THROW(parse_duration("fast", "f", "x"), InputError);
  EXPECT_THROW(parse_bytes("inf", "f", "x"), InputError);
}

// Any case but a bandwidth's b and B (bits, bytes): 100gbps is 100 Gb/s, 12.5gB/s 12.5 GB/s.
TEST(Units, SuffixesInAnyCaseButBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("100gbps", "f", "x"), 100e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Gbps", "f", "x"), 100e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Gb/s", "f", "x"), 100e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GB/s", "f", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5gB/s", "f", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GBps", "f", "x"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bytes("16gib", "f", "x"), 16.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_duration("2MS", "f", "x"), 2e-3);
}

// In a file a quantity carries its unit: a bare number (in base units, 100 B/s, 40 bytes) is
// refused in one line naming the field; 0 is 0 in every unit.
TEST(Units, BareNumbersInFilesAreRefused) {
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("{type: nvlink-servers, gpus: 4, ethernet_bandwidth: 100}"), "c.yaml"),
                     "ethernet_bandwidth", "100: a bandwidth needs a unit (bare, it is read as 100 B/s), e.g. 100Gbps or 100GB/s");
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("{type: nvlink-servers, gpus: 4, gpu_memory: 40}"), "c.yaml"), "gpu_memory",
                     "40: a size needs a unit (bare, it is read as 40 B), e.g. 40GiB or 40GB");
  EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load("{type: nvlink-servers, gpus: 4, ethernet_latency: 2}"), "c.yaml"),
                     "ethernet_latency", "2: a duration needs a unit");
  EXPECT_NO_THROW(cluster_from_yaml(YAML::Load("{type: nvlink-servers, gpus: 4, ethernet_latency: 0}"), "c.yaml"));
  EXPECT_NO_THROW(cluster_from_yaml(YAML::Load("{type: nvlink-servers, gpus: 4, ethernet_bandwidth: 100gbps}"), "c.yaml"));
}

TEST(Cluster, NvlinkServersView) {
  NvlinkServersConfig cfg;
  cfg.gpus = 6;
  Cluster c = make_nvlink_servers(cfg);
  c.finalize("t");
  ASSERT_EQ(c.num_devices(), 6);
  EXPECT_EQ(c.device(3).server, 1);
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1), 50e9);  // same server: NVLink
  EXPECT_DOUBLE_EQ(c.bandwidth(1, 2), 20e9);  // across servers: Ethernet
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 5, 20e9), 1.0);
  EXPECT_DOUBLE_EQ(c.transfer_time(0, 0, 20e9), 0.0);
  // GPUs of one server share its NIC towards other servers.
  auto r02 = c.route(0, 2), r12 = c.route(1, 2);
  EXPECT_EQ(r02[0], r12[0]);
}

TEST(Cluster, FromYamlWithUnitsAndStrictKeys) {
  YAML::Node n = YAML::Load("type: nvlink-servers\ngpus: 4\nnvlink_bandwidth: 400Gbps\nethernet_latency: 2us\n");
  Cluster c = cluster_from_yaml(n, "s.yaml");
  EXPECT_DOUBLE_EQ(c.bandwidth(0, 1), 50e9);
  EXPECT_DOUBLE_EQ(c.latency(0, 2), 4e-6);  // up and down NIC links

  auto expect_error = [](const char* yaml, const char* needle) {
    EXPECT_INPUT_ERROR(cluster_from_yaml(YAML::Load(yaml), "s.yaml"), "", needle, "s.yaml") << yaml;
  };
  expect_error("type: full-mesh\nbandwidth: 0GB/s\n", "cluster.bandwidth");
  expect_error("type: full-mesh\nbandwith: 10GB/s\n", "did you mean 'bandwidth'");
  expect_error("type: fat-tre\n", "unknown cluster type");
  expect_error("type: nvlink-servers\ngpus: 0\n", "cluster.gpus");
  expect_error("type: nvlink-servers\ngpus: four\n", "whole number");
  expect_error("gpus: 4\n", "cluster.type");
}

TEST(Cluster, RestrictedToOneServerKeepsItsLinksAndView) {
  // Six GPUs in servers of two (NVLink 50 GB/s inside, Ethernet 20 GB/s between).
  const Cluster c = testutil::nvlink_servers(6);
  const std::vector<DeviceId> server1{2, 3};
  const Cluster one = c.restricted_to(server1);
  ASSERT_EQ(one.num_devices(), 2);
  EXPECT_EQ(one.num_servers(), 1);  // renumbered densely
  EXPECT_EQ(one.device(0).name, c.device(2).name);
  EXPECT_DOUBLE_EQ(one.bandwidth(0, 1), 50e9);
  EXPECT_DOUBLE_EQ(one.transfer_time(1, 0, 1e9), c.transfer_time(3, 2, 1e9));
  EXPECT_EQ(one.route(0, 1), c.route(2, 3));
  // Across servers the restricted pair keeps the Ethernet route.
  const std::vector<DeviceId> apart{4, 0};
  const Cluster two = c.restricted_to(apart);
  EXPECT_EQ(two.num_servers(), 2);
  EXPECT_EQ(two.device(0).server, 0);  // server 2 came first
  EXPECT_DOUBLE_EQ(two.bandwidth(0, 1), 20e9);
  const std::vector<DeviceId> twice{1, 1};
  EXPECT_THROW(c.restricted_to(twice), std::invalid_argument);
}
