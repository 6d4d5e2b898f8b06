// Tests of model/node: built-in nodes, their sourced defaults, topology and validation.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "model/error.hpp"
#include "model/node.hpp"
#include "runtime/scenario.hpp"
#include "sim/sweep.hpp"

using namespace chunkflow;

namespace {


std::string error_of(const NodeSpec& n, const std::string& file = "") {
  try {
    validate(n, file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("2xh100-pcie has two H100 PCIe GPUs on Gen5 x16 payload links with asymmetric duplex, host memory, routed collectives") {
  const NodeSpec n = node("2xh100-pcie");
  CHECK(n.id == "2xh100-pcie");
  CHECK(n.gpu_count == 2);
  CHECK(n.peak_flop_per_s == 756e12);
  CHECK(n.hbm_bytes_per_s == 2.0e12);
  CHECK(n.gpu_memory_bytes == 80 * kGiB);
  CHECK(n.collective == CollectiveBackend::routed);
  REQUIRE(n.links.size() == 3);
  CHECK(n.links[0].kind == LinkKind::memory);  // host DRAM of socket 0: a resource
  for (int g = 0; g < 2; ++g) {
    const LinkSpec& l = n.host_link(g);
    CHECK(l.name == "pcie.gpu" + std::to_string(g));
    CHECK(l.a == "cpu0");
    CHECK(l.b == "gpu" + std::to_string(g));
    CHECK(l.a_to_b_bytes_per_s == 56e9);  // payload, not the raw 63 (code-review §1.1)
    CHECK(l.b_to_a_bytes_per_s == 56e9);
    CHECK(l.duplex_bytes_per_s == 0);
    CHECK(l.a_to_b_under_duplex_bytes_per_s == 52.8e9);  // measured concurrent H2D
    CHECK(l.b_to_a_under_duplex_bytes_per_s == 34.4e9);  // measured concurrent D2H
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
  REQUIRE(n.links.size() == 2);
  CHECK(n.host_link(0).name == "pcie.gpu0");
  CHECK_THROWS_AS(n.host_link(1), std::out_of_range);
  CHECK(error_of(n).empty());
}

TEST_CASE("h2d_bytes_per_s is min(link H2D capacity, copy-engine cap)") {
  NodeSpec n = node("2xh100-pcie");
  CHECK(n.h2d_bytes_per_s(0) == 55.3e9);
  CHECK(n.h2d_bytes_per_s(1) == 55.3e9);
  n.links[2].a_to_b_bytes_per_s = 25e9;  // a Gen4 slot on gpu1
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
  const std::vector<std::string> ids = node_ids();
  for (const char* id : {"1xh100-sxm", "2xh100-pcie", "2xh100-pcie-nvlink", "8xh100-sxm", "8xh100-pcie", "8xh800-sxm",
                         "8xh20", "8xa100-sxm", "8xl40s", "8xl20", "4xrtx4090", "1xh200"})
    CHECK(std::find(ids.begin(), ids.end(), id) != ids.end());
  try {
    (void)node("8xh100", "--node");
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.field() == "--node");
    CHECK(std::string(e.what()).find("--node: expected a built-in node id (1xh100-sxm, 1xh200, ") == 0);
    CHECK(std::string(e.what()).find(") or a node file, got \"8xh100\"") != std::string::npos);
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
  CHECK(error_of(n) == "/node/links: expected a PCIe link to \"gpu1\", found none");
  n = node("2xh100-pcie");
  n.gpu_count = 0;
  CHECK(error_of(n) == "/node/gpu_count: expected a positive integer, got 0");
}

// ---------------------------------------------------------------------------------------------
// Catalogue and node files (issue 9)
// ---------------------------------------------------------------------------------------------

TEST_CASE("the GPU catalogue holds the issue's ids, each figure positive and sourced") {
  const std::vector<std::string> ids = gpu_ids();
  for (const char* id : {"h100-sxm", "h100-pcie", "h100-nvl", "h200", "h800-sxm", "h20", "a100-sxm-80gb",
                         "a100-pcie-80gb", "l40s", "l40", "l20", "rtx4090"}) {
    INFO("gpu " << id);
    REQUIRE(std::find(ids.begin(), ids.end(), id) != ids.end());
    const GpuSpec& g = gpu_spec(id);
    CHECK(g.memory_bytes > 16 * kGiB);
    CHECK(g.hbm_bytes_per_s > 0.3e12);
    CHECK(g.bf16_dense_flop_per_s > 100e12);
    CHECK(g.sm_count > 50);
    CHECK((g.pcie_gen == 4 || g.pcie_gen == 5));
    CHECK(g.pcie_width == 16);
    // FP32 non-tensor peak (Wan's fp32 VAE decode, model/generation.cpp): below the BF16 tensor peak.
    CHECK(g.fp32_flop_per_s > 10e12);
    CHECK(g.fp32_flop_per_s < g.bf16_dense_flop_per_s);
    // Maximum SM clock (per-SM elementwise kernels, model/kernel_model.cpp): 1.4-2.6 GHz for these parts.
    CHECK(g.sm_clock_hz >= 1.4e9);
    CHECK(g.sm_clock_hz <= 2.6e9);
    for (const char* field : {"memory_bytes", "hbm_bytes_per_s", "bf16_dense_flop_per_s", "fp8_dense_flop_per_s",
                              "fp32_flop_per_s", "sm_count", "sm_clock_hz", "pcie_gen", "pcie_width", "nvlink_gen", "nvlink_bytes_per_s", "p2p_over_pcie"}) {
      INFO("field " << field);
      REQUIRE(g.sources.count(field));
      CHECK_FALSE(g.sources.at(field).empty());
    }
  }
  // Dense, never the sparsity figure (gpu-catalogue.md §3.1): H100 PCIe 756 (not 1,513), RTX 4090
  // with FP32 accumulate 165.2 (not 330).
  CHECK(gpu_spec("h100-pcie").bf16_dense_flop_per_s == 756e12);
  CHECK(gpu_spec("rtx4090").bf16_dense_flop_per_s == 165.2e12);
  CHECK_FALSE(gpu_spec("rtx4090").p2p_over_pcie);
  CHECK(gpu_spec("a100-sxm-80gb").fp8_dense_flop_per_s == 0);  // none on Ampere
  try {
    (void)gpu_spec("h300", "--gpu");
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.field() == "--gpu");
  }
}

TEST_CASE("every built-in node validates, takes its GPU figures from the catalogue and sources every figure") {
  for (const std::string& id : node_ids()) {
    INFO("node " << id);
    const NodeSpec n = node(id);
    CHECK(n.id == id);
    CHECK_FALSE(n.description.empty());
    CHECK(error_of(n).empty());
    const GpuSpec& g = gpu_spec(n.gpu_id);
    CHECK(n.peak_flop_per_s == g.bf16_dense_flop_per_s);
    CHECK(n.hbm_bytes_per_s == g.hbm_bytes_per_s);
    CHECK(n.fp32_flop_per_s == g.fp32_flop_per_s);
    CHECK(n.sm_clock_hz == g.sm_clock_hz);
    for (const char* field : {"peak_flop_per_s", "hbm_bytes_per_s", "fp32_flop_per_s", "sm_clock_hz", "gpu_memory_bytes", "gemm_efficiency",
                              "attention_efficiency", "compute_launch_s", "copy_engine_bytes_per_s", "h2d_latency_s",
                              "collective_flow_bytes_per_s", "collective_latency_s"}) {
      INFO("field " << field);
      REQUIRE(n.sources.count(field));
      CHECK_FALSE(n.sources.at(field).empty());
    }
    for (const LinkSpec& l : n.links) {
      INFO("link " << l.name);
      CHECK(n.sources.count("links/" + l.name + "/a_to_b_bytes_per_s"));
      CHECK(n.sources.count("links/" + l.name + "/b_to_a_bytes_per_s"));
    }
    for (int g2 = 0; g2 < n.gpu_count; ++g2) CHECK_NOTHROW(n.host_link(g2));
  }
  CHECK_FALSE(node("4xrtx4090").p2p_enabled);
  CHECK(node("8xh100-sxm").gpu_count == 8);
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string node_file_error(const std::string& text) {
  try {
    (void)parse_node_file(text, "n.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// The former hard-coded model/node.cpp two_h100_pcie(), verbatim in its figures: the oracle the
/// converted node file must reproduce.
NodeSpec former_two_h100_pcie() {
  NodeSpec n;
  n.id = "2xh100-pcie";
  n.gpu_count = 2;
  n.peak_flop_per_s = 756e12;
  n.hbm_bytes_per_s = 2.0e12;
  n.collective = CollectiveBackend::host_staged;
  n.gpu_memory_bytes = 80.0 * kGiB;
  n.gemm_efficiency = 0.80;
  n.attention_efficiency = 0.60;
  n.compute_launch_s = 5e-6;
  n.copy_engine_bytes_per_s = 55.3e9;
  n.h2d_latency_s = 10e-6;
  n.collective_flow_bytes_per_s = 36.5e9;
  n.collective_latency_s = 30e-6;
  for (int g = 0; g < 2; ++g) {
    LinkSpec l;
    l.name = "pcie.gpu" + std::to_string(g);
    l.a = "host";
    l.b = "gpu" + std::to_string(g);
    l.a_to_b_bytes_per_s = 63e9;
    l.b_to_a_bytes_per_s = 63e9;
    l.duplex_bytes_per_s = 87.2e9;
    n.links.push_back(l);
  }
  return n;
}

/// Relative tolerance of the conversion pin (issue 9: "within 0.1 %").
constexpr double kConversionRelTol = 1e-3;

}  // namespace

TEST_CASE("node file conversion changes no result: the default sweep on the converted 2xh100-pcie file equals the "
          "former hard-coded node within 0.1 %") {
  const std::string path = std::string(CHUNKFLOW_SOURCE_DIR) + "/tests/data/nodes/2xh100-pcie-converted.json";
  Scenario converted = default_scenario();
  converted.node = node(path);
  Scenario former = default_scenario();
  former.node = former_two_h100_pcie();
  // The kernel model's GPU figures (issue 10) come from the catalogue the file refers to.
  former.node.sm_count = converted.node.sm_count;
  former.node.gpu_architecture = converted.node.gpu_architecture;
  former.node.fp32_flop_per_s = converted.node.fp32_flop_per_s;  // Wan's fp32 VAE (Session 7b)
  former.node.sm_clock_hz = converted.node.sm_clock_hz;  // per-SM elementwise kernels (Session 11)
  const std::vector<PolicyConfig> configs = sweep_configs(SweepGrid{});
  const std::vector<SweepRow> a = run_sweep(former, configs);
  const std::vector<SweepRow> b = run_sweep(converted, configs);
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 10);
  auto rel = [](double x, double y) { return x == y ? 0.0 : std::abs(x - y) / std::max(std::abs(x), std::abs(y)); };
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("config " << i << " " << a[i].plan.policy << " chunk " << a[i].plan.chunk_bytes << " R "
                   << a[i].plan.resident_fraction);
    CHECK(rel(a[i].summary.step_time_s, b[i].summary.step_time_s) <= kConversionRelTol);
    CHECK(rel(a[i].summary.peak_memory_bytes, b[i].summary.peak_memory_bytes) <= kConversionRelTol);
    CHECK(rel(a[i].summary.collective_time_s, b[i].summary.collective_time_s) <= kConversionRelTol);
    CHECK(rel(a[i].summary.prefetch_stall_s, b[i].summary.prefetch_stall_s) <= kConversionRelTol);
    CHECK(rel(a[i].summary.h2d_bytes, b[i].summary.h2d_bytes) <= kConversionRelTol);
  }
}

TEST_CASE("a node file is read by path, as --node takes it, and its errors name the file and JSON pointer") {
  const std::string text = read_text(std::string(CHUNKFLOW_SOURCE_DIR) + "/model/nodes/2xh100-pcie.json");
  REQUIRE_FALSE(text.empty());
  const NodeSpec n = parse_node_file(text, "n.json");
  CHECK(n.id == "2xh100-pcie");
  CHECK(n.file == "n.json");
  CHECK(n.links.size() == node("2xh100-pcie").links.size());

  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    return t.replace(at, from.size(), to);
  };
  CHECK(node_file_error(with("\"gpu\": \"h100-pcie\"", "\"gpu\": \"h100-pcie-x\"")).find("n.json: /gpu: expected a GPU catalogue id") == 0);
  CHECK(node_file_error(with("\"gpu_count\": 2", "\"gpu_count\": 0")) ==
        "n.json: /gpu_count: expected an integer in [1, 64], got 0");
  CHECK(node_file_error(with("\"type\": \"pcie-gen5-x16\"\n    }\n  ]", "\"type\": \"nope\"\n    }\n  ]")) ==
        "n.json: /links/2/type: expected a key of /link_types, got \"nope\"");
  CHECK(node_file_error(with("\"b\": \"gpu1\"", "\"b\": \"gpu9\"")).find("n.json: /links/2/b: expected \"host\", a GPU") == 0);
  CHECK(node_file_error(with("\"value\": 0.8,", "\"value\": 1.8,")) ==
        "n.json: /figures/gemm_efficiency: expected an efficiency in (0, 1], got 1.8");
  CHECK(node_file_error(with("\"collective\": \"routed\"", "\"collective\": \"nccl\"")) ==
        "n.json: /collective: expected \"routed\" or \"pcie-proxy\", got \"nccl\"");
  CHECK(node_file_error(with("\"collective\": \"routed\"", "\"colective\": \"routed\"")).find("n.json: /colective: unknown field") == 0);
  CHECK(node_file_error("{").find("n.json: /: not valid JSON") == 0);

  // A file on disk by path, as --node and a scenario's "node" take it.
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "chunkflow-test-node.json";
  {
    std::ofstream out(tmp);
    out << with("\"id\": \"2xh100-pcie\"", "\"id\": \"my-node\"");
  }
  const NodeSpec from_file = node(tmp.string(), "--node");
  CHECK(from_file.id == "my-node");
  CHECK(from_file.file == tmp.string());
  std::filesystem::remove(tmp);
}
