#pragma once
// Node descriptions: GPUs, the PCIe topology as links with per-direction capacities, copy-engine
// and collective limits, latencies and efficiencies. Every default names its source in node.cpp
// (shared/reference/systems-and-hardware.md §3 unless stated).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chunkflow {

/// One physical link between two topology vertices ("host", "gpu0", "gpu1", ...), with a capacity
/// per direction and an optional coupling constraint on both directions together.
struct LinkSpec {
  std::string name;                 ///< e.g. "pcie.gpu0"
  std::string a;                    ///< e.g. "host"
  std::string b;                    ///< e.g. "gpu0"
  double a_to_b_bytes_per_s = 0;    ///< host→GPU direction (H2D) for a host link
  double b_to_a_bytes_per_s = 0;    ///< GPU→host direction (D2H)
  /// Both directions together (0: no coupling). Models the measured slowdown of concurrent
  /// H2D + D2H (systems-and-hardware.md §3: 52.8 + 34.4 GB/s together).
  double duplex_bytes_per_s = 0;
};

/// How Ulysses all-to-alls move on this node.
enum class CollectiveBackend {
  host_staged,  ///< no P2P: each peer flow goes src→host→dst over both GPUs' PCIe links (NCCL SHM)
  pcie_proxy,   ///< one GPU stands for rank 0 of a P-way group: (P−1)/P of each buffer goes out
                ///< to host memory and the same comes back over its own link
};

/// Calibrated GEMM efficiency of one weight shape [k × n] against the token count m (rows of the
/// activation), from measured cuBLAS times (model/calibration.hpp). stage_compute_time_s
/// interpolates it linearly in m (clamped to the end points) and uses it instead of the scalar
/// gemm_efficiency and the HBM floor, because the measured time already holds both.
struct GemmEfficiencyTable {
  int64_t k = 0, n = 0;
  std::vector<double> m;           ///< token counts, strictly increasing
  std::vector<double> efficiency;  ///< achieved / peak_flop_per_s at each m, in (0, 1]

  /// Efficiency at token count `m`: linear interpolation between the neighbouring points,
  /// the end value outside [m.front(), m.back()]. Requires a non-empty table (defined in
  /// model/calibration.cpp).
  double efficiency_at(double m_tokens) const;
};

struct NodeSpec {
  std::string id;                     ///< "2xh100-pcie", "1xh100-sxm"
  std::string description;
  int gpu_count = 1;
  std::string gpu_name;
  double peak_flop_per_s = 0;         ///< dense bf16 tensor-core peak per GPU
  double hbm_bytes_per_s = 0;         ///< device memory bandwidth (memory-bound small GEMMs)
  double gpu_memory_bytes = 0;
  double gemm_efficiency = 0;         ///< η_comp for linears (achieved / peak)
  double attention_efficiency = 0;    ///< η for attention
  double compute_launch_s = 0;        ///< fixed cost per compute op (kernel launch + tail)
  std::vector<LinkSpec> links;        ///< topology; GPU i is vertex "gpu<i>", the host "host"
  double copy_engine_bytes_per_s = 0; ///< per-flow cap of a copy-engine H2D/D2H transfer
  double h2d_latency_s = 0;           ///< fixed cost per H2D transfer (chunk), paid up front
  CollectiveBackend collective = CollectiveBackend::host_staged;
  double collective_flow_bytes_per_s = 0; ///< per-flow cap of SM-driven collective traffic
  double collective_latency_s = 0;    ///< α of one all-to-all, paid up front

  // --- Calibrated refinements (model/calibration.hpp); absent/0 = the first-order defaults ---
  /// Per-shape GEMM efficiency tables; a linear whose (k, n) has a table uses it (see above).
  std::vector<GemmEfficiencyTable> gemm_efficiency_tables;
  /// Fractional slowdown of a compute op that starts while an H2D copy of its rank is in flight:
  /// it takes (1 + s) × its time (sim/executor.cpp). 0 = none.
  double compute_slowdown_h2d = 0;
  /// The same while a collective of its rank is in flight. Both at once: 1 + s_h2d + s_coll.
  double compute_slowdown_collective = 0;

  /// The table of shape (k, n), or nullptr.
  const GemmEfficiencyTable* gemm_table(int64_t k, int64_t n) const;

  /// The host link of GPU `gpu` (the link whose b is "gpu<gpu>"). Throws std::out_of_range.
  const LinkSpec& host_link(int gpu) const;
  /// η_pref · BW_h2d: the H2D rate one copy-engine transfer gets alone on GPU `gpu`'s host link,
  /// min(link H2D capacity, copy-engine cap), in bytes/s.
  double h2d_bytes_per_s(int gpu = 0) const;
  /// Ranks the node executes for Ulysses degree P: P for host_staged (P ≤ gpu_count), 1 for
  /// pcie_proxy. Throws InputError(field "/workload/ulysses_degree") when P > gpu_count on a
  /// host_staged node.
  int executed_ranks(int ulysses_degree) const;
};

/// Built-in nodes. Throws InputError(file="", field, ...) for an unknown id, listing known ids.
NodeSpec node(std::string_view id, const std::string& field = "node");
std::vector<std::string> node_ids();

/// Checks every rate, capacity, efficiency and latency is positive (latencies ≥ 0, efficiencies
/// in (0, 1]) and that each GPU has a host link. Throws InputError naming `file` and the field
/// (JSON pointer under `prefix`).
void validate(const NodeSpec& n, const std::string& file = "", const std::string& prefix = "/node");

}  // namespace chunkflow
