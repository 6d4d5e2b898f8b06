// Built-in nodes and their validation. Every default names its source: shared/reference/
// systems-and-hardware.md §3 (measured PCIe, copy-engine and GEMM figures), NVIDIA datasheets, or
// "assumed" where no measurement exists yet (those are the first calibration targets).
#include "model/node.hpp"

#include <sstream>
#include <stdexcept>

#include "model/error.hpp"

namespace chunkflow {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// --- Defaults shared by the built-in nodes ------------------------------------------------------
// PCIe Gen5 x16 raw, per direction: "about 63–64 GB/s" (systems-and-hardware.md §3).
constexpr double kPcieGen5X16BytesPerS = 63e9;
// H2D and D2H together: 52.8 + 34.4 GB/s measured with nvbandwidth on H800 (§3).
constexpr double kPcieGen5DuplexBytesPerS = 87.2e9;
// Pinned H2D through one copy engine: 55.3 GB/s (low end of 55.3–57.1, nvbandwidth
// host_to_device_memcpy_ce, §3).
constexpr double kCopyEngineBytesPerS = 55.3e9;
// Fixed cost per H2D transfer: assumed (cudaMemcpyAsync submit + DMA setup, order 10 µs).
constexpr double kH2dLatencyS = 10e-6;
// SM-driven host reads reach 35–38 GB/s (§3): the per-flow cap of collective traffic that goes
// through host memory (NCCL SHM / proxy kernels). Midpoint 36.5 GB/s.
constexpr double kCollectiveFlowBytesPerS = 36.5e9;
// α of one all-to-all: assumed (NCCL launch + SHM handshake, order 30 µs) until fitted (§4).
constexpr double kCollectiveLatencyS = 30e-6;
// GEMM efficiency: bf16 8192³ GEMM 798 TFLOP/s of 989.4 peak on H100 SXM (§3) ≈ 0.81 → 0.80.
constexpr double kGemmEfficiency = 0.80;
// Attention efficiency: assumed (FlashAttention-class kernels on Hopper run at roughly 50–70 % of
// dense peak); a lead to be replaced by calibration.
constexpr double kAttentionEfficiency = 0.60;
// Fixed cost per compute op (kernel launch + tail): assumed.
constexpr double kComputeLaunchS = 5e-6;
// Memory per GPU: 80 GB products, 80 GiB addressable (cudaMemGetInfo total ≈ 79.1 GiB usable; the
// planner's headroom is the runtime's business).
constexpr double kH100MemoryBytes = 80.0 * kGiB;

LinkSpec pcie_host_link(int gpu) {
  LinkSpec l;
  l.name = "pcie.gpu" + std::to_string(gpu);
  l.a = "host";
  l.b = "gpu" + std::to_string(gpu);
  l.a_to_b_bytes_per_s = kPcieGen5X16BytesPerS;
  l.b_to_a_bytes_per_s = kPcieGen5X16BytesPerS;
  l.duplex_bytes_per_s = kPcieGen5DuplexBytesPerS;
  return l;
}

void set_common_defaults(NodeSpec& n) {
  n.gpu_memory_bytes = kH100MemoryBytes;
  n.gemm_efficiency = kGemmEfficiency;
  n.attention_efficiency = kAttentionEfficiency;
  n.compute_launch_s = kComputeLaunchS;
  n.copy_engine_bytes_per_s = kCopyEngineBytesPerS;
  n.h2d_latency_s = kH2dLatencyS;
  n.collective_flow_bytes_per_s = kCollectiveFlowBytesPerS;
  n.collective_latency_s = kCollectiveLatencyS;
  for (int g = 0; g < n.gpu_count; ++g) n.links.push_back(pcie_host_link(g));
}

NodeSpec two_h100_pcie() {
  NodeSpec n;
  n.id = "2xh100-pcie";
  n.description = "two H100 PCIe 80 GB, each on its own PCIe Gen5 x16 link to the host; no NVLink, no P2P: "
                  "collectives are staged through host memory";
  n.gpu_count = 2;
  n.gpu_name = "NVIDIA H100 PCIe";
  n.peak_flop_per_s = 756e12;  // H100 PCIe datasheet: 756 TFLOPS dense BF16 tensor core
  n.hbm_bytes_per_s = 2.0e12;  // H100 PCIe datasheet: HBM2e 2.0 TB/s
  n.collective = CollectiveBackend::host_staged;
  set_common_defaults(n);
  return n;
}

NodeSpec one_h100_sxm() {
  NodeSpec n;
  n.id = "1xh100-sxm";
  n.description = "one H100 SXM 80 GB with a PCIe Gen5 x16 host link; Ulysses peers are emulated by a "
                  "PCIe proxy (the all-to-all's outgoing share goes to host memory and comes back)";
  n.gpu_count = 1;
  n.gpu_name = "NVIDIA H100 80GB HBM3";
  n.peak_flop_per_s = 989.4e12;  // H100 SXM datasheet: 989.4 TFLOPS dense BF16 tensor core
  n.hbm_bytes_per_s = 3.35e12;   // H100 SXM datasheet: HBM3 3.35 TB/s
  n.collective = CollectiveBackend::pcie_proxy;
  set_common_defaults(n);
  return n;
}

std::string format_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Throws unless `value` is > 0 (or ≥ 0 with allow_zero); NaN always fails, +∞ passes (an
// idealised link or engine).
void require_positive(double value, bool allow_zero, const std::string& file, const std::string& field,
                      const std::string& what) {
  const bool ok = allow_zero ? value >= 0 : value > 0;
  if (!ok)
    throw InputError(file, field,
                     std::string(allow_zero ? "expected a non-negative " : "expected a positive ") + what + ", got " +
                         format_number(value));
}

}  // namespace

const LinkSpec& NodeSpec::host_link(int gpu) const {
  const std::string vertex = "gpu" + std::to_string(gpu);
  for (const LinkSpec& l : links)
    if (l.b == vertex && l.a == "host") return l;
  throw std::out_of_range("node " + id + " has no host link for " + vertex);
}

double NodeSpec::h2d_bytes_per_s(int gpu) const {
  const double link = host_link(gpu).a_to_b_bytes_per_s;
  return link < copy_engine_bytes_per_s ? link : copy_engine_bytes_per_s;
}

int NodeSpec::executed_ranks(int ulysses_degree) const {
  if (ulysses_degree < 1)
    throw InputError("", "/workload/ulysses_degree",
                     "expected a positive integer, got " + std::to_string(ulysses_degree));
  if (collective == CollectiveBackend::pcie_proxy) return 1;
  if (ulysses_degree > gpu_count)
    throw InputError("", "/workload/ulysses_degree",
                     "expected at most " + std::to_string(gpu_count) + " (the GPUs of node " + id + "), got " +
                         std::to_string(ulysses_degree));
  return ulysses_degree;
}

NodeSpec node(std::string_view id, const std::string& field) {
  for (NodeSpec (*make)() : {two_h100_pcie, one_h100_sxm}) {
    NodeSpec n = make();
    if (n.id == id) return n;
  }
  std::string known;
  for (const std::string& k : node_ids()) known += (known.empty() ? "" : ", ") + k;
  throw InputError("", field, "expected one of " + known + ", got \"" + std::string(id) + "\"");
}

std::vector<std::string> node_ids() { return {"2xh100-pcie", "1xh100-sxm"}; }

void validate(const NodeSpec& n, const std::string& file, const std::string& prefix) {
  if (n.gpu_count < 1)
    throw InputError(file, prefix + "/gpu_count", "expected a positive integer, got " + std::to_string(n.gpu_count));
  require_positive(n.peak_flop_per_s, false, file, prefix + "/peak_flop_per_s", "number of FLOP/s");
  require_positive(n.hbm_bytes_per_s, false, file, prefix + "/hbm_bytes_per_s", "number of bytes/s");
  require_positive(n.gpu_memory_bytes, false, file, prefix + "/gpu_memory_bytes", "number of bytes");
  for (auto [name, value] : {std::pair{"/gemm_efficiency", n.gemm_efficiency},
                             std::pair{"/attention_efficiency", n.attention_efficiency}}) {
    if (!(value > 0 && value <= 1))
      throw InputError(file, prefix + name, "expected an efficiency in (0, 1], got " + format_number(value));
  }
  require_positive(n.compute_launch_s, true, file, prefix + "/compute_launch_s", "number of seconds");
  require_positive(n.copy_engine_bytes_per_s, false, file, prefix + "/copy_engine_bytes_per_s", "number of bytes/s");
  require_positive(n.h2d_latency_s, true, file, prefix + "/h2d_latency_s", "number of seconds");
  require_positive(n.collective_flow_bytes_per_s, false, file, prefix + "/collective_flow_bytes_per_s",
                   "number of bytes/s");
  require_positive(n.collective_latency_s, true, file, prefix + "/collective_latency_s", "number of seconds");
  require_positive(n.compute_slowdown_h2d, true, file, prefix + "/compute_slowdown_h2d", "slowdown fraction");
  require_positive(n.compute_slowdown_collective, true, file, prefix + "/compute_slowdown_collective", "slowdown fraction");
  for (size_t i = 0; i < n.links.size(); ++i) {
    const LinkSpec& l = n.links[i];
    const std::string at = prefix + "/links/" + std::to_string(i);
    if (l.a.empty() || l.b.empty() || l.a == l.b)
      throw InputError(file, at, "expected a link between two distinct vertices, got \"" + l.a + "\"–\"" + l.b + "\"");
    require_positive(l.a_to_b_bytes_per_s, false, file, at + "/a_to_b_bytes_per_s", "number of bytes/s");
    require_positive(l.b_to_a_bytes_per_s, false, file, at + "/b_to_a_bytes_per_s", "number of bytes/s");
    require_positive(l.duplex_bytes_per_s, true, file, at + "/duplex_bytes_per_s", "number of bytes/s (0: none)");
  }
  for (int g = 0; g < n.gpu_count; ++g) {
    try {
      (void)n.host_link(g);
    } catch (const std::out_of_range&) {
      throw InputError(file, prefix + "/links",
                       "expected a link from \"host\" to \"gpu" + std::to_string(g) + "\", found none");
    }
  }
}

}  // namespace chunkflow
