// NodeSpec queries and validation. The built-in nodes are data files (model/nodes/*.json, read by
// model/node_file.cpp), each figure with its source.
#include "model/node.hpp"

#include <sstream>
#include <stdexcept>

#include "model/error.hpp"

namespace chunkflow {

namespace {

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
    if (l.kind == LinkKind::pcie && (l.b == vertex || l.a == vertex)) return l;
  throw std::out_of_range("node " + id + " has no PCIe link for " + vertex);
}

bool NodeSpec::p2p_allowed(int a, int b) const {
  if (!p2p_enabled) return false;
  for (const auto& [x, y] : p2p_disabled_pairs)
    if ((x == a && y == b) || (x == b && y == a)) return false;
  return true;
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
  if (!(n.hbm_efficiency > 0 && n.hbm_efficiency <= 1))
    throw InputError(file, prefix + "/hbm_efficiency", "expected an efficiency in (0, 1], got " + format_number(n.hbm_efficiency));
  require_positive(n.host_kernel_issue_s, true, file, prefix + "/host_kernel_issue_s", "number of seconds");
  if (n.sm_count < 0)
    throw InputError(file, prefix + "/sm_count", "expected a non-negative integer (0: unknown), got " + std::to_string(n.sm_count));
  require_positive(n.sm_clock_hz, true, file, prefix + "/sm_clock_hz", "clock in Hz (0: unknown)");
  require_positive(n.tiled_attention_scale, false, file, prefix + "/tiled_attention_scale", "scale (measured / modelled)");
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
    require_positive(l.a_to_b_under_duplex_bytes_per_s, true, file, at + "/a_to_b_under_duplex_bytes_per_s",
                     "number of bytes/s (0: none)");
    require_positive(l.b_to_a_under_duplex_bytes_per_s, true, file, at + "/b_to_a_under_duplex_bytes_per_s",
                     "number of bytes/s (0: none)");
  }
  for (int g = 0; g < n.gpu_count; ++g) {
    try {
      (void)n.host_link(g);
    } catch (const std::out_of_range&) {
      throw InputError(file, prefix + "/links",
                       "expected a PCIe link to \"gpu" + std::to_string(g) + "\", found none");
    }
  }
}

}  // namespace chunkflow
