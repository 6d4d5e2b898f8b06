#pragma once
// The node's topology as a directed graph (Boost.Graph) and the routing of flows over it.
// Source: shared/reference/systems-and-hardware.md §3 (per-direction capacities and the coupling
// of concurrent H2D + D2H), §5 (each link direction is a capacity constraint of the max-min
// model); code-review-3fa5e28.md §1.2 (NCCL's transport choice); DESIGN.md "The physics the
// simulator models".
//
// Vertices: "host" (pinned host memory, socket 0), "gpu0".."gpu<n-1>", and the node's other
// vertices (NodeSpec::vertices: sockets, host bridges, PCIe switches, NVSwitch, more host memory).
// Each LinkSpec gives two directed edges, a→b and b→a, each one MaxMinSolver resource:
//   towards gpuR "pcie.gpuR.h2d"    away from gpuR "pcie.gpuR.d2h" (a PCIe link named pcie.gpuR ending at gpuR, or from "host")
//   otherwise  "<link>.<a>-><b>"    and        "<link>.<b>-><a>"
// and, when duplex_bytes_per_s > 0, one more resource "<link>.duplex" that both directions use
// with coefficient 1 (Σ rates over both directions ≤ duplex capacity).
//
// Routes come from model/routes.hpp (Boost.Graph, the one place they are computed), fewest-hops
// paths in a filtered graph:
//  - host traffic (H2D, D2H, staging through host memory) never uses NVLink;
//  - a GPU pair's collective traffic takes the transport NCCL's ncclTopoCheckP2p picks
//    (NVIDIA/nccl src/graph/paths.cc; code-review-3fa5e28.md §1.2):
//      1. NVLink (a path of NVLink edges only, direct or through an NVSwitch): P2P over it;
//      2. else the pair's PCIe path (PCIe and inter-socket edges) has a level, the worst vertex it
//         crosses: none but switches → PIX (one switch) or PXB (several); a host bridge or host
//         memory vertex → PHB; a CPU socket vertex → NODE; an inter-socket link → SYS. P2P over
//         that path when the level ≤ NodeSpec::p2p_level and P2P is allowed for the pair;
//      3. else staged through host memory (NCCL SHM): src → nearest host memory → dst, at
//         NodeSpec::collective_flow_bytes_per_s per flow, with the max-min weight of SM reads by
//         dst (NodeRoutes::sm_read_weight; the pcie_proxy's inbound half takes it too).
// A route's resources are every traversed direction plus the duplex resource of every traversed
// link (coefficients summed when crossed twice), and where a GPU's SMs read staged host memory
// (NodeRoutes::sm_read_copy_cost > 0) its resource "gpu<R>.sm_read" (capacity
// collective_flow_bytes_per_s): coefficient 1 for the flows it reads, β for H2D copies into it. Without NVLink and P2P, gpu0→gpu1 on 2xh100-pcie
// goes gpu0→host→gpu1: pcie.gpu0.d2h, pcie.gpu0.duplex, pcie.gpu1.h2d, pcie.gpu1.duplex.
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/node.hpp"
#include "model/routes.hpp"
#include "sim/maxmin.hpp"

namespace chunkflow {

/// One direction of one link, as registered in the solver.
struct LinkDirection {
  std::string link;  ///< LinkSpec::name, e.g. "pcie.gpu0"
  std::string from;  ///< source vertex, e.g. "host"
  std::string to;    ///< target vertex, e.g. "gpu0"
  int resource = -1;              ///< MaxMinSolver resource id of this direction
  int duplex_resource = -1;       ///< resource id of the link's duplex coupling, -1 if none
  double capacity_bytes_per_s = 0;
  LinkKind kind = LinkKind::pcie;
  int reverse = -1;                          ///< index of the other direction of the same link
  double under_duplex_bytes_per_s = 0;       ///< capacity while the reverse direction is busy; 0: none
};


class Topology {
 public:
  using Route = std::vector<std::pair<int, double>>;  ///< (resource id, coefficient), as add_flow takes

  /// A GPU pair's path for collective traffic.
  struct PeerPath {
    Transport transport = Transport::shm;
    PathLevel level = PathLevel::sys;        ///< NV, or the level of the pair's PCIe path
    Route route;
    std::vector<std::string> vertices;       ///< src first, dst last
    double flow_cap_bytes_per_s = std::numeric_limits<double>::infinity();  ///< per-flow bound
    double weight = 1.0;  ///< max-min weight of its flow (model/routes.hpp NodeRoutes::Peer::weight)
  };

  /// Builds the graph of `node.links` and registers its resources in `solver` (the Topology keeps
  /// only the resource ids, no reference to the solver). Vertices "host" and "gpu0".."gpu<n-1>" always
  /// exist. Throws std::invalid_argument for a link with an empty name or endpoint, a → a, a
  /// per-direction capacity that is not > 0 (or NaN), or a negative/NaN duplex capacity.
  /// Source: systems-and-hardware.md §3, §5.
  Topology(const NodeSpec& node, MaxMinSolver& solver);

  /// Topology(node, an empty solver), memoised per thread by model/routes.hpp routes_key (the 16
  /// most recently used topologies): a sweep simulates thousands of plans on a few nodes. Use it
  /// with register_resources on the simulation's own (empty) solver. Throws as the constructor.
  static std::shared_ptr<const Topology> shared(const NodeSpec& node);

  /// Registers this topology's resources (capacities and names as the constructor did) in
  /// `solver`, which must hand out the same ids (an empty solver does). Throws std::logic_error
  /// otherwise.
  void register_resources(MaxMinSolver& solver) const;

  /// The resources of the route src→dst, ready for MaxMinSolver::add_flow: a GPU pair's
  /// peer_path route, else the fewest-hops path without NVLink. Precomputed; a table lookup.
  /// Throws std::invalid_argument for an unknown vertex, src == dst, or no path.
  const Route& route(const std::string& src, const std::string& dst) const;
  /// Same by vertex index (see vertex()); the fast path for the executor.
  const Route& route(int src_vertex, int dst_vertex) const;

  /// route("host", "gpu<rank>"), the H2D copies' route, resolved once per GPU. Throws as route().
  const Route& h2d_route(int rank) const {  // inline: the executor and the bound ask once per copy
    if (rank >= 0 && rank < int(h2d_route_index_.size()) && h2d_route_index_[std::size_t(rank)] >= 0)
      return routes_[std::size_t(h2d_route_index_[std::size_t(rank)])];
    return route(kHostVertex, gpu_vertex(rank));  // throws the error route() gives
  }
  /// Max-min weight of a flow whose bytes GPU `rank`'s SMs read from host memory (the pcie_proxy's
  /// inbound half; SHM peer paths carry theirs in PeerPath::weight): model/routes.hpp
  /// NodeRoutes::sm_read_weight. 1 for a rank out of range.
  double sm_read_weight(int rank) const {
    return rank >= 0 && std::size_t(rank) < sm_read_weight_.size() ? sm_read_weight_[std::size_t(rank)] : 1.0;
  }
  /// The route of a flow GPU `rank`'s SMs read from host memory (the pcie_proxy's inbound half):
  /// route("host", "gpu<rank>")'s link directions and GPU rank's SM-read resource, coefficient 1
  /// (model/routes.hpp sm_read_copy_cost; H2D copies use it with coefficient β). Throws as route().
  const Route& sm_host_read_route(int rank) const;
  /// Solver id of GPU `rank`'s SM-read resource ("gpu<rank>.sm_read", capacity
  /// collective_flow_bytes_per_s), −1 when it has none.
  int sm_read_resource(int rank) const {
    return rank >= 0 && std::size_t(rank) < sm_read_resource_.size() ? sm_read_resource_[std::size_t(rank)] : -1;
  }

  /// The vertex names along the route src→dst, src first (for traces and tests). Throws as route().
  std::vector<std::string> route_vertices(const std::string& src, const std::string& dst) const;

  /// The collective path between GPUs `a` and `b` (indices, a ≠ b). Throws std::invalid_argument
  /// for an index out of range, a == b, or a pair with neither P2P nor a path through host memory.
  const PeerPath& peer_path(int a, int b) const;

  /// The smallest capacity / coefficient over a route's resources in `solver` (bytes/s): what one
  /// flow alone on it can reach, before any per-flow cap.
  static double bottleneck_bytes_per_s(const MaxMinSolver& solver, const Route& route);

  /// Index of a vertex name; throws std::invalid_argument for an unknown name.
  int vertex(const std::string& name) const;
  const std::vector<std::string>& vertex_names() const { return vertex_names_; }
  VertexKind vertex_kind(int v) const { return vertex_kinds_.at(static_cast<std::size_t>(v)); }

  /// "gpu<rank>": the vertex of GPU `rank` (≥ 0; std::invalid_argument otherwise).
  static std::string gpu_vertex(int rank);
  static constexpr const char* kHostVertex = "host";

  /// Names of the resources this Topology registered, in registration order; resource_ids()[i] is
  /// the solver id of resource_names()[i] (equal to i when the solver was empty on construction).
  const std::vector<std::string>& resource_names() const { return resource_names_; }
  const std::vector<int>& resource_ids() const { return resource_ids_; }
  /// The capacities registered with resource_names() (bytes/s, one-way: before any under-duplex
  /// switching), same order.
  const std::vector<double>& resource_capacities() const { return resource_capacities_; }

  /// Every link direction (one per directed edge), in LinkSpec order, a→b before b→a: the
  /// resources worth tracing (load per direction). Duplex resources are in duplex_resource.
  const std::vector<LinkDirection>& link_directions() const { return directions_; }
  /// The solver ids of link_directions(), same order.
  std::vector<int> link_direction_resources() const;

  /// Indices (into link_directions()) of the directions with an under-duplex capacity: the
  /// executor sets such a direction's capacity to under_duplex_bytes_per_s while its reverse
  /// direction carries a flow, and back to capacity_bytes_per_s otherwise.
  const std::vector<int>& duplex_switched_directions() const { return duplex_switched_; }

  /// Sets, in `solver`, the capacity of every duplex-switched direction: under_duplex_bytes_per_s
  /// when both it and its reverse carry a flow (flows_on_resource[resource id] > 0), else
  /// capacity_bytes_per_s. Per-direction caps under duplex reproduce the measured asymmetric
  /// concurrent H2D + D2H (52.8 / 34.4 GB/s, gpu-catalogue.md §2.2 [SIM]) that max-min fairness on
  /// one symmetric coupling cannot (it splits equally). Which directions are busy depends only on
  /// which flows exist, not on their rates, so this is applied before each solve.
  void apply_under_duplex(MaxMinSolver& solver, const std::vector<int>& flows_on_resource) const;

 private:
  int add_vertex_name(const std::string& name, VertexKind kind);
  const std::vector<int>& path_edges(int src, int dst) const;  // throws as route()

  std::vector<std::string> vertex_names_;
  std::vector<VertexKind> vertex_kinds_;
  std::unordered_map<std::string, int> vertex_index_;
  std::vector<std::string> resource_names_;
  std::vector<int> resource_ids_;
  std::vector<double> resource_capacities_;  ///< bytes/s, as registered (register_resources)
  std::vector<LinkDirection> directions_;   // edge index → direction
  std::vector<int> duplex_switched_;
  int gpu_count_ = 0;
  std::vector<Route> routes_;               // [src * V + dst]
  std::vector<std::vector<int>> route_edges_;  // [src * V + dst], edge indices in path order
  std::vector<char> reachable_;             // [src * V + dst]
  std::vector<PeerPath> peers_;             // [a * gpu_count + b]
  std::vector<char> peer_ok_;
  std::vector<std::string> peer_error_;
  std::vector<std::ptrdiff_t> h2d_route_index_;  // [gpu]: index of route(host, gpu) in routes_, -1: none
  std::vector<double> sm_read_weight_;           // [gpu]
  std::vector<int> sm_read_resource_;            // [gpu]: solver id of its SM-read resource, -1: none
  std::vector<Route> sm_read_routes_;            // [gpu]: sm_host_read_route, empty when h2d_route_index_ is -1
};

}  // namespace chunkflow
