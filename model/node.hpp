#pragma once
// Node descriptions: GPUs, the PCIe topology as links with per-direction capacities, copy-engine
// and collective limits, latencies and efficiencies. Every default names its source in node.cpp
// (shared/reference/systems-and-hardware.md §3 unless stated).
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chunkflow {

/// What a topology vertex is. "host" (pinned host memory of socket 0, where the offloaded weights
/// live) and "gpu0".."gpu<n-1>" always exist; node files add the others.
enum class VertexKind {
  host_memory,  ///< DRAM of one socket ("host", "host1", ...)
  cpu,          ///< a CPU socket's root complex / fabric ("cpu0", ...): crossing it is NODE in nvidia-smi terms
  host_bridge,  ///< one PCIe host bridge (root port) of a socket: crossing it is PHB
  pcie_switch,  ///< a PCIe switch: GPUs under one are PIX, under several PXB
  nvswitch,     ///< an NVSwitch (or its fabric)
  gpu,
  nic,
};

/// What a link is: routes for host traffic and for PCIe P2P never use NVLink; NVLink routes use
/// nothing else (shared/reference/topologies/README.md legend).
enum class LinkKind { pcie, nvlink, memory, inter_socket };

/// NCCL's path levels, in its order (src/graph/topo.h PATH_*): a pair's level is the worst hop
/// of its PCIe path. P2P is used over NVLink, or over PCIe when level ≤ NodeSpec::p2p_level.
enum class PathLevel { nvl, pix, pxb, phb, node, sys };

struct VertexSpec {
  std::string name;
  VertexKind kind = VertexKind::cpu;
  /// Every field equal (NodeSpec::operator==).
  bool operator==(const VertexSpec&) const = default;
};

/// One physical link between two topology vertices ("host", "gpu0", "gpu1", ...), with a capacity
/// per direction and an optional coupling constraint on both directions together.
struct LinkSpec {
  std::string name;                 ///< e.g. "pcie.gpu0"
  LinkKind kind = LinkKind::pcie;
  std::string a;                    ///< e.g. "host"
  std::string b;                    ///< e.g. "gpu0"
  double a_to_b_bytes_per_s = 0;    ///< host→GPU direction (H2D) for a host link
  double b_to_a_bytes_per_s = 0;    ///< GPU→host direction (D2H)
  /// Both directions together (0: no coupling). Models the measured slowdown of concurrent
  /// H2D + D2H (systems-and-hardware.md §3: 52.8 + 34.4 GB/s together).
  double duplex_bytes_per_s = 0;
  /// Per-direction capacity while the other direction also carries a flow (0: the plain
  /// capacity). Models the asymmetric concurrent H2D + D2H that no symmetric coupling can give:
  /// 52.8 GB/s H2D while D2H runs at 34.4 on Gen5 (gpu-catalogue.md §2.2 [SIM]). Applied by the
  /// simulator whenever both directions of the link carry flows (sim/topology.hpp).
  double a_to_b_under_duplex_bytes_per_s = 0;
  double b_to_a_under_duplex_bytes_per_s = 0;
  /// Every field equal (NodeSpec::operator==).
  bool operator==(const LinkSpec&) const = default;
};

/// How Ulysses all-to-alls move on this node.
enum class CollectiveBackend {
  /// Ranks are GPUs 0..P−1; each peer flow takes the transport NCCL's ncclTopoCheckP2p would pick
  /// for its pair (sim/topology.hpp Topology::peer_path): P2P over NVLink, P2P over PCIe when the
  /// pair's level ≤ p2p_level and P2P is on for it, else staged through host memory (SHM).
  routed,
  host_staged = routed,  ///< former name: on a node without P2P every pair is staged through the host
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
  /// Every field equal (NodeSpec::operator==).
  bool operator==(const GemmEfficiencyTable&) const = default;
};

struct NodeSpec {
  std::string id;                     ///< "2xh100-pcie", "1xh100-sxm"
  std::string description;
  std::string file;                   ///< node file it was read from; "" for a built-in
  int gpu_count = 1;
  std::string gpu_id;                 ///< GPU catalogue id (model/catalogue/gpus.json)
  std::string gpu_name;
  double peak_flop_per_s = 0;         ///< dense bf16 tensor-core peak per GPU
  double fp32_flop_per_s = 0;         ///< FP32 non-tensor (CUDA-core FMA) peak per GPU; 0 = not given
  double hbm_bytes_per_s = 0;         ///< device memory bandwidth (memory-bound small GEMMs)
  double gpu_memory_bytes = 0;
  /// η of GEMMs at the best shape (sustained achieved / peak); model/kernel_model.hpp multiplies
  /// it by the shape's wave-quantization and pipeline-fill factors.
  double gemm_efficiency = 0;
  /// η of the best attention kernel of this GPU at long sequences, head dim 128 (FA3 on Hopper,
  /// FA2 elsewhere); the kernel model scales it by kernel and sequence length.
  double attention_efficiency = 0;
  double compute_launch_s = 0;        ///< GPU-side cost per kernel launch (gap + tail), s
  /// Streaming multiprocessors per GPU (wave quantization); 0 = unknown, no quantization.
  int sm_count = 0;
  /// Maximum SM (boost) clock, Hz: with sm_count, the per-SM rate of eager broadcast kernels
  /// (model/kernel_model.hpp elementwise_bytes_per_s); 0 = unknown (they are then priced at the
  /// streaming rate).
  double sm_clock_hz = 0;
  /// "hopper", "ampere", "ada", ... (selects the default attention kernel); "" = unknown.
  std::string gpu_architecture;
  /// Achieved / datasheet HBM bandwidth of streaming elementwise kernels, in (0, 1]: 89–93 %
  /// measured (gpu-catalogue.md §2.4: H20 92.8 %, RTX 4090 91 %, A800 89 %) → 0.90.
  double hbm_efficiency = 0.9;
  /// Measured / modelled time of chunkflow-hw's tiled attention (model/tiled_attention.hpp), > 0:
  /// 1 uncalibrated; `chunkflow calibrate` sets it from the harness's attention bench.
  double tiled_attention_scale = 1.0;
  /// Host (CPU) time to issue one kernel from eager PyTorch, s: a forward whose kernels take less
  /// GPU time than this × their count is CPU-bound (model/published_predict.hpp). 45 µs: fitted on
  /// the published record xdit-flux-u4-eager ((4.24 s − 23 ms text/VAE) / 28 steps / 3306 kernels);
  /// the CUDA-level part alone is "5–10 µs" (code-review-3fa5e28.md §1.3), the rest is Python.
  double host_kernel_issue_s = 45e-6;
  std::vector<VertexSpec> vertices;   ///< vertices besides "host" and the GPUs (sockets, switches, ...)
  std::vector<LinkSpec> links;        ///< topology; GPU i is vertex "gpu<i>", the host "host"
  double copy_engine_bytes_per_s = 0; ///< per-flow cap of a copy-engine H2D/D2H transfer
  double h2d_latency_s = 0;           ///< fixed cost per H2D transfer (chunk), paid up front
  CollectiveBackend collective = CollectiveBackend::routed;
  /// Per-flow cap of collective traffic staged through host memory (NCCL SHM, SM-driven copies),
  /// and of the pcie_proxy flows.
  double collective_flow_bytes_per_s = 0;
  /// Per-flow cap of P2P collective traffic (PCIe or NVLink); 0 = only the links bound it.
  double p2p_flow_bytes_per_s = 0;
  bool p2p_enabled = true;            ///< false: no GPU pair uses P2P (e.g. stock RTX 4090 driver)
  PathLevel p2p_level = PathLevel::pxb;  ///< NCCL's default p2pLevel (paths.cc ncclTopoCheckP2p)
  std::vector<std::pair<int, int>> p2p_disabled_pairs;  ///< GPU pairs without P2P (either order)
  /// Source of each figure, by field name ("peak_flop_per_s", "links/pcie.gpu0/a_to_b_bytes_per_s",
  /// ...): a citation or "assumed: ...".
  std::map<std::string, std::string> sources;
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

  /// The host link of GPU `gpu`: the PCIe link whose b is "gpu<gpu>" (its first hop towards the
  /// host). Throws std::out_of_range.
  const LinkSpec& host_link(int gpu) const;
  /// Whether P2P is on for the pair (a, b) (p2p_enabled and not in p2p_disabled_pairs).
  bool p2p_allowed(int a, int b) const;
  /// η_pref · BW_h2d: the H2D rate one copy-engine transfer gets alone on GPU `gpu`'s host link,
  /// min(link H2D capacity, copy-engine cap), in bytes/s.
  double h2d_bytes_per_s(int gpu = 0) const;
  /// Ranks the node executes for Ulysses degree P: P for host_staged (P ≤ gpu_count), 1 for
  /// pcie_proxy. Throws InputError(field "/workload/ulysses_degree") when P > gpu_count on a
  /// host_staged node.
  int executed_ranks(int ulysses_degree) const;
  /// Every field equal, members compared in order (doubles by value: NaN never equal): what a cache
  /// of results computed from a node keys on (runtime/policy_chunkflow.cpp), so a new field counts.
  bool operator==(const NodeSpec&) const = default;
};

/// A built-in node by id (a file model/nodes/<id>.json embedded at build time), or a node file by
/// path when `id_or_path` is no built-in id and names a readable file. Throws InputError(file="",
/// field, ...) for an unknown id that is no file (listing known ids), and InputError(path, JSON
/// pointer, ...) for a bad node file (model/node_file.cpp).
NodeSpec node(std::string_view id_or_path, const std::string& field = "node");
/// Built-in node ids, in the order of model/nodes/ file names.
std::vector<std::string> node_ids();

/// One GPU of the catalogue (model/catalogue/gpus.json). Rates in FLOP/s and bytes/s; 0 = none
/// (no FP8, no NVLink). Every figure's source is in `sources` by field name.
struct GpuSpec {
  std::string id, name;
  double memory_bytes = 0, hbm_bytes_per_s = 0, bf16_dense_flop_per_s = 0, fp8_dense_flop_per_s = 0;
  double fp32_flop_per_s = 0;  ///< FP32 non-tensor (CUDA-core FMA) peak
  int sm_count = 0, pcie_gen = 0, pcie_width = 0, nvlink_gen = 0, nvlink_links = 0;
  double sm_clock_hz = 0;         ///< maximum SM (boost) clock, Hz
  double nvlink_bytes_per_s = 0;  ///< per GPU, both directions added
  bool p2p_over_pcie = true;
  std::map<std::string, std::string> sources;
};
/// The catalogue entry `id`; throws InputError("", field, ...) listing the ids for an unknown one.
const GpuSpec& gpu_spec(std::string_view id, const std::string& field = "gpu");
std::vector<std::string> gpu_ids();

/// Parses the text of a node file (format: model/nodes/README.md). Errors name `file` and the
/// JSON pointer. Source of the defaults: the GPU catalogue for GPU figures.
NodeSpec parse_node_file(const std::string& text, const std::string& file);

std::string to_string(PathLevel level);  ///< "NV", "PIX", "PXB", "PHB", "NODE", "SYS"
std::string to_string(VertexKind kind);
std::string to_string(LinkKind kind);

/// Checks every rate, capacity, efficiency and latency is positive (latencies ≥ 0, efficiencies
/// in (0, 1]) and that each GPU has a host link. Throws InputError naming `file` and the field
/// (JSON pointer under `prefix`).
void validate(const NodeSpec& n, const std::string& file = "", const std::string& prefix = "/node");

}  // namespace chunkflow
