#pragma once
// `chunkflow node import`: a node file from the text of `nvidia-smi topo -m` (or `topo -mp`).
// Source of the codes: NVIDIA's legend (shared/reference/topologies/README.md): X self; NV# a
// bonded set of # NVLinks; PIX at most one PCIe bridge; PXB several bridges without a host bridge;
// PHB a host bridge; NODE the link between host bridges within a NUMA node; SYS the inter-socket
// link (older drivers print SOC).
//
// Inference (every GPU pair; NIC rows count for switches and sockets, they carry no traffic):
//  - GPUs related by PIX/PXB (to each other or to one NIC) sit under one PCIe switch (a PXB
//    hierarchy is folded into one switch);
//  - PIX/PXB/PHB: one host bridge; NODE: different host bridges of one socket; SYS: different
//    sockets (NUMA nodes; equal numeric "NUMA Affinity" also joins two GPUs' sockets);
//  - NV# between every pair with #·(G−1) more links than a GPU has (catalogue nvlink_links): an
//    NVSwitch, each GPU attached with # links; otherwise a direct NVLink of # links per pair.
//    One link carries nvlink_bytes_per_s / nvlink_links (both directions), half per direction.
//  - Host memory of the socket of GPU0 is "host" (where the pinned weights live).
// Figures the text does not hold come from the catalogue and from the built-in nodes of the same
// PCIe generation (their sourced link types and copy/staging rates), marked in each source.
#include <optional>
#include <string>
#include <vector>

namespace chunkflow {

struct TopoImportOptions {
  std::string topo_file;        ///< text of nvidia-smi topo -m
  std::string gpu_id;           ///< GPU catalogue id
  std::optional<int> pcie_gen;  ///< 4 or 5; default the catalogue's
  std::string node_id;          ///< default "<G>x<gpu>-imported"
};

/// The matrix as printed: device names (GPUs first as in the text, then NICs and other devices),
/// the square code matrix ("X", "NV12", "PIX", ... with SOC read as SYS), and per GPU row the
/// text of "NUMA Affinity" ("" when absent or N/A).
struct TopoMatrix {
  std::vector<std::string> devices;
  std::vector<std::vector<std::string>> codes;  ///< [row][column]
  std::vector<std::string> numa_affinity;       ///< per GPU, in GPU order
  int gpu_count = 0;
};

/// Parses the matrix out of `text`: tabs or spaces, CRLF, ANSI colour codes, shell prompts and
/// headers around it, NIC rows and legends, with or without a legend. Throws InputError(file,
/// "row R, column C", ...) for a ragged row, an unknown code, a diagonal that is not X, an
/// asymmetric pair (naming both cells), and InputError(file, "/", ...) when no matrix with a GPU
/// is found.
TopoMatrix parse_topo_matrix(const std::string& text, const std::string& file);

/// The inferred structure, for tests and for writing the node file.
struct InferredTopology {
  int gpu_count = 0;
  std::vector<int> socket_of_gpu;       ///< socket index, 0 = the socket of GPU0
  std::vector<int> host_bridge_of_gpu;  ///< host-bridge group index (global)
  std::vector<int> switch_of_gpu;       ///< PCIe switch index, -1 = directly on its host bridge
  std::vector<std::vector<int>> nvlinks;  ///< [a][b] NVLink count (0 = none)
  bool nvswitch = false;                ///< all pairs NVLinked through an NVSwitch
  int socket_count = 0, host_bridge_count = 0, switch_count = 0;
};
InferredTopology infer_topology(const TopoMatrix& m, int gpu_nvlink_links);

/// The node file (JSON text) for `text`. Throws InputError as parse_topo_matrix, and for an
/// unknown GPU id (field "--gpu") or PCIe generation other than 4 or 5 ("--pcie-gen").
std::string import_topo(const std::string& text, const std::string& file, const TopoImportOptions& options);

/// Reads options.topo_file and calls import_topo. Throws InputError(file, "/", ...) if unreadable.
std::string import_topo_file(const TopoImportOptions& options);

}  // namespace chunkflow
