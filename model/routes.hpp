#pragma once
// Routes of a node's topology (Boost.Graph), shared by the simulator (sim/topology.hpp registers
// their link directions as max-min resources) and by planners that must know which collective
// flows cross a rank's host link (collective_host_link_use). Source: shared/reference/
// systems-and-hardware.md §3, §5; code-review-3fa5e28.md §1.2 (NCCL's transport choice).
//
// Directions: link i of NodeSpec::links is direction 2i (a→b) and 2i+1 (b→a).
// Vertices: "host" (pinned host memory of socket 0), "gpu0".."gpu<n-1>", NodeSpec::vertices, then
// any other name a link uses ("host…" → host memory, anything else a CPU socket).
// Routes are fewest-hops paths (breadth-first search) in a filtered graph:
//  - host traffic (H2D, D2H, staging through host memory) never uses NVLink;
//  - a GPU pair's collective traffic takes the transport NCCL's ncclTopoCheckP2p picks
//    (NVIDIA/nccl src/graph/paths.cc):
//      1. NVLink (a path of NVLink edges only, direct or through an NVSwitch): P2P over it;
//      2. else the pair's PCIe path (PCIe and inter-socket edges) has a level, the worst vertex it
//         crosses: only switches → PIX (one) or PXB (several); a host bridge or host memory vertex
//         → PHB; a CPU socket → NODE; an inter-socket link → SYS. P2P over that path when the
//         level ≤ NodeSpec::p2p_level and P2P is allowed for the pair;
//      3. else staged through host memory (NCCL SHM): src → the host memory vertex nearest the
//         source → dst, at NodeSpec::collective_flow_bytes_per_s per flow.
// SM-driven host reads share a contended direction in proportion to what they reach alone: the
// receiving GPU's SMs load staged bytes from host memory (NCCL SHM; the pcie_proxy kernel), which
// alone reaches collective_flow_bytes_per_s where a copy engine reaches the GPU's H2D rate; beside
// a copy both keep the same fraction of their alone rates (max-min weight sm_read_weight).
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/node.hpp"

namespace chunkflow {

/// How a GPU pair's collective bytes move.
enum class Transport { nvlink_p2p, pcie_p2p, shm };
std::string to_string(Transport t);  ///< "P2P/NVLink", "P2P/PCIe", "SHM"

class NodeRoutes {
 public:
  struct Peer {
    Transport transport = Transport::shm;
    PathLevel level = PathLevel::sys;  ///< NV, or the level of the pair's PCIe path
    std::vector<int> directions;       ///< in path order (2i: link i a→b, 2i+1: b→a)
    double flow_cap_bytes_per_s = std::numeric_limits<double>::infinity();
    /// Max-min weight of the pair's flow: sm_read_weight(b) for SHM (the receiver's SMs read it), 1 for P2P.
    double weight = 1.0;
    /// SHM into a GPU with an SM-read resource (sm_read_copy_cost(b) > 0): b, whose resource the
    /// flow uses with coefficient 1; −1 otherwise.
    int sm_read_gpu = -1;
  };

  /// All routes of `node`. Throws std::invalid_argument for a link with an empty name or endpoint,
  /// a → a, a per-direction capacity that is not > 0, or a negative duplex capacity.
  explicit NodeRoutes(const NodeSpec& node);

  const std::vector<std::string>& vertex_names() const { return names_; }
  const std::vector<VertexKind>& vertex_kinds() const { return kinds_; }
  /// Index of a vertex; -1 if unknown.
  int find_vertex(const std::string& name) const;
  /// Source and target vertex of direction d.
  int from(int d) const { return from_[d]; }
  int to(int d) const { return to_[d]; }

  /// Host-traffic path src→dst (vertex indices): fewest hops without NVLink; nullptr if none.
  const std::vector<int>* host_path(int src, int dst) const;
  /// The collective path from GPU a to GPU b, or nullptr with `error` set (no path at all).
  const Peer* peer(int a, int b, std::string* error = nullptr) const;
  /// Max-min weight (sim/maxmin.hpp; a copy's is 1) of a flow whose bytes GPU `gpu`'s SMs read
  /// from host memory: collective_flow_bytes_per_s / what one copy reaches alone on the direction
  /// into the GPU while the reverse carries the all-to-all's other half (min of the copy engine and
  /// the direction's under-duplex capacity, or its one-way capacity without one), at most 1,
  /// rounded down to a multiple of 1/1024 (exact sums of weights for the simulator's rank-symmetric
  /// path); 1 when collective_flow_bytes_per_s is 0 or `gpu` is out of range.
  /// On a direction both fill, such a flow and a copy then keep the same fraction of their alone
  /// rates: C / (C + collective_flow_bytes_per_s), C that copy rate. Measured on H100
  /// (traces/measured/nvidia-h100-80gb-hbm3/README.md "A copy beside the proxy all-to-all"): 0.65 of
  /// each in the layerwise runs, 0.56 and 0.70 in bench copy_cap; max-min with equal weights
  /// gave the all-to-all 0.81 on the calibrated node (tests/test_calibration.cpp).
  double sm_read_weight(int gpu) const {
    return gpu >= 0 && std::size_t(gpu) < sm_read_weight_.size() ? sm_read_weight_[std::size_t(gpu)] : 1.0;
  }
  /// The SM-read resource of GPU `gpu` (capacity collective_flow_bytes_per_s; used with coefficient
  /// 1 by the flows its SMs read from host memory): what one H2D copy into it costs there per byte,
  /// β = r² with r the SM rate over the copy's alone rate (as for sm_read_weight; at most f over a
  /// lone copy's one-way rate, so a copy alone never meets it; rounded down to 1/2^20). 0 when
  /// there is no such resource: r ≥ 1, collective_flow_bytes_per_s is 0, or no flow's bytes are read
  /// by this GPU's SMs (no SHM pair into it and not a pcie_proxy node). All the SM reads into one
  /// GPU share its capacity f (one GPU's SMs; measured for one pair only, on the H100 and H200).
  /// The fluid form of a paced copy (hw/kernels.cu enqueue_paced_copy): it moves its bytes in
  /// bursts at its weighted share L = C / (1 + r), while the SM reads run at r·L, and the SM reads
  /// run alone at f = r·C between bursts; over a duty cycle c / L they average f − r²·c, i.e.
  /// y + β·x ≤ f, which an uncapped copy (bursting all the time) meets where the link binds. Fits
  /// the H100 bench copy_cap (a copy paced at 10 GB/s: the all-to-all slows by 0.15, model 0.15)
  /// and runs (all-to-alls beside copies paced at 18.4 GB/s: 318.9 µs measured, model 321)
  /// (traces/measured/nvidia-h100-80gb-hbm3/README.md).
  double sm_read_copy_cost(int gpu) const {
    return gpu >= 0 && std::size_t(gpu) < sm_read_copy_cost_.size() ? sm_read_copy_cost_[std::size_t(gpu)] : 0.0;
  }

 private:
  int gpu_count_ = 0;
  std::vector<std::string> names_;
  std::vector<VertexKind> kinds_;
  std::unordered_map<std::string, int> index_;
  std::vector<int> from_, to_;
  std::vector<double> sm_read_weight_;  // [gpu]
  std::vector<double> sm_read_copy_cost_;  // [gpu]
  std::vector<std::vector<int>> host_;  // [src * V + dst]
  std::vector<char> host_ok_;
  std::vector<Peer> peers_;             // [a * G + b]
  std::vector<std::string> peer_error_;
};

/// How one Ulysses all-to-all of P ranks (GPUs 0..P−1) loads rank `rank`'s PCIe link
/// (NodeSpec::host_link(rank)): the number of peer flows crossing it towards the GPU (flows_in) and
/// away from it (flows_out), and the smallest per-flow cap among them (+∞: only links bound them).
/// On an NVSwitch node both counts are 0 (prefetch need not yield); staged (SHM) pairs count on
/// both ends; PCIe P2P under a switch counts on the GPU's own link but not on the switch uplink.
/// weight: the least max-min weight among the flows crossing the link (NodeRoutes::Peer::weight;
/// 1 when none).
/// Throws std::invalid_argument for P < 2, P > gpu_count or rank ∉ [0, P).
struct HostLinkUse {
  int flows_in = 0, flows_out = 0;
  double flow_cap_bytes_per_s = std::numeric_limits<double>::infinity();
  double weight = 1.0;
  int sm_reads_in = 0;  ///< flows into the rank that its SMs read (its SM-read resource: sm_read_copy_cost)
};
HostLinkUse collective_host_link_use(const NodeSpec& node, int rank, int P);
/// The same on routes already built for `node` (NodeRoutes(node) or shared_node_routes(node)).
HostLinkUse collective_host_link_use(const NodeRoutes& routes, const NodeSpec& node, int rank, int P);

/// Every NodeSpec field that NodeRoutes (and sim/topology.hpp's Topology, which adds the link
/// names and capacities it registers) reads, as bytes: id, gpu_count, vertices, every LinkSpec
/// field, p2p_enabled, p2p_level, p2p_disabled_pairs, p2p_flow_bytes_per_s,
/// collective_flow_bytes_per_s and copy_engine_bytes_per_s (sm_read_weight). Nodes with equal keys have identical routes and topologies. Keep it
/// in step with the NodeRoutes and Topology constructors (tests/test_fast_paths.cpp compares the
/// memoised objects with fresh ones on mutated nodes).
std::string routes_key(const NodeSpec& node);

/// NodeRoutes(node), memoised per thread by routes_key (the 16 most recently used topologies):
/// the planners (collective_host_link_use, through model/link_model.hpp) and the simulator ask for
/// the same few nodes' routes thousands of times in a sweep, and building them (a Boost graph,
/// three all-pairs searches) costs more than the rest of the question. Throws as NodeRoutes.
std::shared_ptr<const NodeRoutes> shared_node_routes(const NodeSpec& node);

}  // namespace chunkflow
