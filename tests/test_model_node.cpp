// Tests of model/node: built-in nodes, their sourced defaults, topology and validation.
#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include "model/error.hpp"
#include "model/node.hpp"

using namespace chunkflow;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string error_of(const NodeSpec& n, const std::string& file = "") {
  try {
    validate(n, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("2xh100-pcie has two H100 PCIe GPUs, one Gen5 x16 host link each, host-staged collectives") {
  const NodeSpec n = node("2xh100-pcie");
  CHECK(n.id == "2xh100-pcie");
  CHECK(n.gpu_count == 2);
  CHECK(n.peak_flop_per_s == 756e12);
  CHECK(n.hbm_bytes_per_s == 2.0e12);
  CHECK(n.gpu_memory_bytes == 80 * kGiB);
  CHECK(n.collective == CollectiveBackend::host_staged);
  REQUIRE(n.links.size() == 2);
  for (int g = 0; g < 2; ++g) {
    const LinkSpec& l = n.host_link(g);
    CHECK(l.name == "pcie.gpu" + std::to_string(g));
    CHECK(l.a == "host");
    CHECK(l.b == "gpu" + std::to_string(g));
    CHECK(l.a_to_b_bytes_per_s == 63e9);
    CHECK(l.b_to_a_bytes_per_s == 63e9);
    CHECK(l.duplex_bytes_per_s == 87.2e9);
  }
  CHECK(n.gemm_efficiency == 0.80);
  CHECK(n.attention_efficiency == 0.60);
  CHECK(n.compute_launch_s == 5e-6);
  CHECK(n.copy_engine_bytes_per_s == 55.3e9);
  CHECK(n.h2d_latency_s == 10e-6);
  CHECK(n.collective_flow_bytes_per_s == 36.5e9);
  CHECK(n.collective_latency_s == 30e-6);
  CHECK(error_of(n).empty());
}

TEST_CASE("1xh100-sxm has one H100 SXM with a Gen5 host link and a PCIe-proxy collective") {
  const NodeSpec n = node("1xh100-sxm");
  CHECK(n.gpu_count == 1);
  CHECK(n.peak_flop_per_s == 989.4e12);
  CHECK(n.hbm_bytes_per_s == 3.35e12);
  CHECK(n.collective == CollectiveBackend::pcie_proxy);
  REQUIRE(n.links.size() == 1);
  CHECK(n.host_link(0).name == "pcie.gpu0");
  CHECK_THROWS_AS(n.host_link(1), std::out_of_range);
  CHECK(error_of(n).empty());
}

TEST_CASE("h2d_bytes_per_s is min(link H2D capacity, copy-engine cap)") {
  NodeSpec n = node("2xh100-pcie");
  CHECK(n.h2d_bytes_per_s(0) == 55.3e9);
  CHECK(n.h2d_bytes_per_s(1) == 55.3e9);
  n.links[1].a_to_b_bytes_per_s = 25e9;  // a Gen4 slot
  CHECK(n.h2d_bytes_per_s(1) == 25e9);
  CHECK(n.h2d_bytes_per_s(0) == 55.3e9);
}

TEST_CASE("executed_ranks is P on host_staged nodes (P ≤ GPUs) and 1 on pcie_proxy nodes") {
  const NodeSpec two = node("2xh100-pcie");
  CHECK(two.executed_ranks(1) == 1);
  CHECK(two.executed_ranks(2) == 2);
  try {
    (void)two.executed_ranks(4);
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.field() == "/workload/ulysses_degree");
    CHECK(std::string(e.what()).find("got 4") != std::string::npos);
  }
  const NodeSpec one = node("1xh100-sxm");
  CHECK(one.executed_ranks(1) == 1);
  CHECK(one.executed_ranks(8) == 1);
  CHECK_THROWS_AS(one.executed_ranks(0), InputError);
}

TEST_CASE("node ids are listed and an unknown id names the known ones") {
  CHECK(node_ids() == std::vector<std::string>{"2xh100-pcie", "1xh100-sxm"});
  try {
    (void)node("8xh100", "--node");
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.field() == "--node");
    CHECK(std::string(e.what()) == "--node: expected one of 2xh100-pcie, 1xh100-sxm, got \"8xh100\"");
  }
}

TEST_CASE("validate rejects non-positive rates with file, JSON pointer and expected form") {
  NodeSpec n = node("2xh100-pcie");
  n.copy_engine_bytes_per_s = -1;
  CHECK(error_of(n) == "/node/copy_engine_bytes_per_s: expected a positive number of bytes/s, got -1");
  CHECK(error_of(n, "scenarios/x.json") ==
        "scenarios/x.json: /node/copy_engine_bytes_per_s: expected a positive number of bytes/s, got -1");

  n = node("2xh100-pcie");
  n.gemm_efficiency = 1.5;
  CHECK(error_of(n) == "/node/gemm_efficiency: expected an efficiency in (0, 1], got 1.5");
  n = node("2xh100-pcie");
  n.attention_efficiency = 0;
  CHECK(error_of(n).find("/node/attention_efficiency:") == 0);
  n = node("2xh100-pcie");
  n.peak_flop_per_s = std::numeric_limits<double>::quiet_NaN();
  CHECK(error_of(n).find("/node/peak_flop_per_s:") == 0);
  n = node("2xh100-pcie");
  n.links[1].b_to_a_bytes_per_s = 0;
  CHECK(error_of(n) == "/node/links/1/b_to_a_bytes_per_s: expected a positive number of bytes/s, got 0");
  n = node("2xh100-pcie");
  n.collective_latency_s = -1e-6;
  CHECK(error_of(n) == "/node/collective_latency_s: expected a non-negative number of seconds, got -1e-06");
}

TEST_CASE("validate accepts zero latencies and no duplex coupling") {
  NodeSpec n = node("1xh100-sxm");
  n.h2d_latency_s = 0;
  n.collective_latency_s = 0;
  n.compute_launch_s = 0;
  n.links[0].duplex_bytes_per_s = 0;
  CHECK(error_of(n).empty());
}

TEST_CASE("validate requires a host link for every GPU") {
  NodeSpec n = node("2xh100-pcie");
  n.links.pop_back();
  CHECK(error_of(n) == "/node/links: expected a link from \"host\" to \"gpu1\", found none");
  n = node("2xh100-pcie");
  n.gpu_count = 0;
  CHECK(error_of(n) == "/node/gpu_count: expected a positive integer, got 0");
}
