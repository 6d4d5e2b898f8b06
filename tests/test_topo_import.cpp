// Tests of model/topo_import: nvidia-smi topo -m parsing and the inferred structure, on the six
// real published outputs in shared/reference/topologies/ (each file's first line names its source)
// and on hostile variants of them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/error.hpp"
#include "model/node.hpp"
#include "model/topo_import.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"

using namespace chunkflow;

namespace {

/// tests/data/topologies/<name>: the published outputs of shared/reference/topologies/, copied
/// as they are (first line: their source).
std::string reference(const std::string& name) {
  std::ifstream in(std::string(CHUNKFLOW_SOURCE_DIR) + "/tests/data/topologies/" + name, std::ios::binary);
  if (!in) FAIL("topology file tests/data/topologies/" << name << " not found");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& text, const std::string& gpu = "h100-sxm") {
  try {
    TopoImportOptions o;
    o.gpu_id = gpu;
    (void)import_topo(text, "t.txt", o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

NodeSpec imported(const std::string& text, const std::string& gpu) {
  TopoImportOptions o;
  o.gpu_id = gpu;
  return parse_node_file(import_topo(text, "t.txt", o), "imported.json");
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

// source: sgl-project/sglang issue #9696 (8x H20)
TEST_CASE("HGX H20: NV18 every pair is an NVSwitch, a switch per GPU (its NIC under it, PIX), two sockets") {
  const std::string text = reference("hgx-h20-8xH20-nv18-8nic-sglang9696.txt");
  const TopoMatrix m = parse_topo_matrix(text, "h20.txt");
  CHECK(m.gpu_count == 8);
  CHECK(m.devices.size() == 16);
  const InferredTopology t = infer_topology(m, gpu_spec("h20").nvlink_links);
  CHECK(t.nvswitch);
  CHECK(t.socket_count == 2);
  CHECK(t.switch_count == 8);
  CHECK(t.socket_of_gpu == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
  const NodeSpec n = imported(text, "h20");
  MaxMinSolver s;
  const Topology topo(n, s);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b)
      if (a != b) CHECK(topo.peer_path(a, b).transport == Transport::nvlink_p2p);
  // NV18 × (900 GB/s / 18 links) / 2 per direction = 450 GB/s raw, × 320/450 (NCCL's all-to-all
  // busbw on H100 [GTC25]) = 320 GB/s, the built-in 8xh100-sxm figure.
  CHECK(Topology::bottleneck_bytes_per_s(s, topo.peer_path(0, 7).route) == Approx(320e9));
}

// source: GitHub gengwg/cheatsheets gpu.md (DGX A100)
TEST_CASE("DGX A100: NV12 NVSwitch, GPU pairs under a switch with two NICs (PXB), four NUMA nodes") {
  const std::string text = reference("dgx-a100-8xA100sxm-nv12-12nic.txt");
  const TopoMatrix m = parse_topo_matrix(text, "a100.txt");
  CHECK(m.gpu_count == 8);
  CHECK(m.devices.size() == 20);  // 8 GPUs + 12 mlx5 NICs
  const InferredTopology t = infer_topology(m, gpu_spec("a100-sxm-80gb").nvlink_links);
  CHECK(t.nvswitch);
  CHECK(t.switch_count == 4);
  CHECK(t.switch_of_gpu == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(t.socket_count == 4);  // NUMA affinity 3, 1, 7, 5; SYS between them
}

// source: willxxy/sglang-play README (8x H100 NVL)
TEST_CASE("H100 NVL: NV12 bridge pairs, NODE within a socket, SYS across: P2P only within a pair") {
  const std::string text = reference("h100nvl-8gpu-pcie-nv12-pairs-2socket-sglangplay.txt");
  const InferredTopology t = infer_topology(parse_topo_matrix(text, "nvl.txt"), gpu_spec("h100-nvl").nvlink_links);
  CHECK_FALSE(t.nvswitch);
  CHECK(t.nvlinks[0][1] == 12);
  CHECK(t.nvlinks[0][2] == 0);
  CHECK(t.socket_count == 2);
  CHECK(t.switch_count == 0);
  const NodeSpec n = imported(text, "h100-nvl");
  MaxMinSolver s;
  const Topology topo(n, s);
  CHECK(topo.peer_path(0, 1).transport == Transport::nvlink_p2p);
  CHECK(topo.peer_path(0, 1).vertices == std::vector<std::string>{"gpu0", "gpu1"});
  CHECK(Topology::bottleneck_bytes_per_s(s, topo.peer_path(0, 1).route) == Approx(300e9 * 320 / 450));  // 12 × 50 / 2 × 320/450
  CHECK(topo.peer_path(0, 2).transport == Transport::shm);
  CHECK(topo.peer_path(0, 2).level == PathLevel::node);
  CHECK(topo.peer_path(0, 4).level == PathLevel::sys);
}

// source: warpem/miss-alignment issue #106 (4x L40S; a shell prompt precedes the matrix)
TEST_CASE("4x L40S: a shell prompt before the matrix, no NVLink, two GPUs per socket: all pairs staged through host") {
  const std::string text = reference("l40s-4gpu-node-sys-2socket-2nic-missalignment106.txt");
  const InferredTopology t = infer_topology(parse_topo_matrix(text, "l40s.txt"), 0);
  CHECK(t.socket_count == 2);
  CHECK(t.socket_of_gpu == std::vector<int>{0, 0, 1, 1});
  CHECK(t.switch_count == 0);
  const NodeSpec n = imported(text, "l40s");
  MaxMinSolver s;
  const Topology topo(n, s);
  CHECK(topo.peer_path(0, 1).transport == Transport::shm);
  CHECK(topo.peer_path(0, 1).level == PathLevel::node);
  CHECK(topo.peer_path(1, 2).level == PathLevel::sys);
  CHECK(topo.route_vertices("host", "gpu2") == std::vector<std::string>{"host", "cpu0", "cpu1", "gpu2"});
}

// source: NVIDIA/nccl issue #1439 (8x RTX 3090; legend cut)
TEST_CASE("8x RTX 3090: a PCIe switch per GPU pair (PIX), PHB between pairs, SYS across sockets, legend cut") {
  const std::string text = reference("rtx3090-8gpu-pix-phb-sys-nccl1439.txt");
  const InferredTopology t = infer_topology(parse_topo_matrix(text, "3090.txt"), gpu_spec("rtx3090").nvlink_links);
  CHECK(t.switch_count == 4);
  CHECK(t.switch_of_gpu == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(t.host_bridge_count == 2);
  CHECK(t.socket_count == 2);
  const NodeSpec n = imported(text, "rtx3090");
  MaxMinSolver s;
  const Topology topo(n, s);
  CHECK(topo.peer_path(0, 1).transport == Transport::pcie_p2p);
  CHECK(topo.peer_path(0, 1).level == PathLevel::pix);
  CHECK(topo.peer_path(0, 2).transport == Transport::shm);
  CHECK(topo.peer_path(0, 2).level == PathLevel::phb);
  CHECK(topo.peer_path(0, 4).level == PathLevel::sys);
  // The same machine with stock RTX 4090s (P2P off): every pair staged through host memory.
  const NodeSpec off = imported(text, "rtx4090");
  MaxMinSolver s2;
  const Topology topo2(off, s2);
  CHECK(topo2.peer_path(0, 1).transport == Transport::shm);
}

// source: noonghunna/club-3090 issue #1229 (2x RTX 5090; tabs, no legend, an empty field)
TEST_CASE("2x RTX 5090: tabs, no legend, PHB: one host bridge, one socket") {
  const std::string text = reference("rtx5090-2gpu-phb-club3090-1229.txt");
  const InferredTopology t = infer_topology(parse_topo_matrix(text, "5090.txt"), 0);
  CHECK(t.gpu_count == 2);
  CHECK(t.host_bridge_count == 1);
  CHECK(t.socket_count == 1);
  TopoImportOptions o;
  o.gpu_id = "rtx4090";
  o.pcie_gen = 5;
  const NodeSpec n = parse_node_file(import_topo(text, "5090.txt", o), "x.json");
  MaxMinSolver s;
  const Topology topo(n, s);
  CHECK(topo.peer_path(0, 1).level == PathLevel::phb);
  CHECK(n.host_link(0).a_to_b_bytes_per_s == 56e9);  // Gen5 figures by --pcie-gen
}

TEST_CASE("robust reading: CRLF, ANSI colours, spaces for tabs, SOC for SYS, topo -mp without NV, one GPU") {
  const std::string base = reference("l40s-4gpu-node-sys-2socket-2nic-missalignment106.txt");
  std::string crlf;
  for (char c : base) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  CHECK(infer_topology(parse_topo_matrix(crlf, "crlf.txt"), 0).socket_count == 2);
  std::string ansi = replace(base, "GPU0     X ", "\x1b[1mGPU0\x1b[0m     X ");
  CHECK(parse_topo_matrix(ansi, "ansi.txt").gpu_count == 4);
  std::string soc = base;
  for (std::size_t at; (at = soc.find("SYS")) != std::string::npos;) soc.replace(at, 3, "SOC");
  CHECK(infer_topology(parse_topo_matrix(soc, "soc.txt"), 0).socket_count == 2);
  const std::string one = "$ nvidia-smi topo -m\n\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-31\t0\n\nLegend:\n";
  const NodeSpec n = imported(one, "h200");
  CHECK(n.gpu_count == 1);
  CHECK(n.collective == CollectiveBackend::pcie_proxy);
}

TEST_CASE("malformed matrices are rejected naming the row and column, nothing is written") {
  const std::string base = reference("rtx3090-8gpu-pix-phb-sys-nccl1439.txt");
  // Ragged: a row one cell short.
  CHECK(error_of(replace(base, "GPU3    PHB     PHB     PIX      X      SYS     SYS     SYS     SYS",
                         "GPU3    PHB     PHB     PIX      X      SYS     SYS     SYS"),
                 "rtx3090")
            .find("t.txt: row GPU3, column GPU7: expected X, NV<n>") == 0);
  // Unknown code.
  CHECK(error_of(replace(base, "GPU1    PIX      X      PHB", "GPU1    PIX      X      PHX"), "rtx3090") ==
        "t.txt: row GPU1, column GPU2: expected X, NV<n>, PIX, PXB, PHB, NODE, SYS or SOC, got \"PHX\"");
  // Asymmetric.
  CHECK(error_of(replace(base, "GPU1    PIX      X      PHB", "GPU1    PIX      X      SYS"), "rtx3090")
            .find("t.txt: row GPU1, column GPU2: asymmetric matrix: SYS here but PHB at row GPU2, column GPU1") == 0);
  // No GPU at all.
  CHECK(error_of("hello\nworld\n").find("t.txt: /: expected the matrix of nvidia-smi topo -m") == 0);
  // A missing row.
  CHECK(error_of(replace(base, "GPU7    SYS     SYS     SYS     SYS     PHB     PHB     PIX      X ", ""), "rtx3090")
            .find("t.txt: row GPU7: expected the row of GPU7") == 0);
  // Diagonal.
  CHECK(error_of(replace(base, "GPU2    PHB     PHB      X ", "GPU2    PHB     PHB     PIX "), "rtx3090") ==
        "t.txt: row GPU2, column GPU2: expected X on the diagonal, got PIX");
  // Too many devices: refused before the n × n matrix is read.
  std::string wide = "GPU0";
  for (int i = 1; i < 300; ++i) wide += " GPU" + std::to_string(i);
  CHECK(error_of(wide + "\n").find("t.txt: header: expected at most 256 devices") == 0);
  // Unknown GPU id.
  CHECK(error_of(base, "rtx9090").find("--gpu: expected a GPU catalogue id") == 0);
}
