#pragma once
// The node's link topology as a directed graph (Boost.Graph) and the routing of flows over it.
// Source: shared/reference/systems-and-hardware.md §3 (per-direction capacities and the coupling
// of concurrent H2D + D2H) and §5 (each link direction is a capacity constraint of the max-min
// model); DESIGN.md "The physics the simulator models".
//
// Vertices: "host", "gpu0", "gpu1", ... plus any other endpoint a LinkSpec names. Each LinkSpec
// gives two directed edges, a→b and b→a, each registered as one MaxMinSolver resource:
//   host→gpuR  "pcie.gpuR.h2d"      gpuR→host  "pcie.gpuR.d2h"     (for a link named pcie.gpuR)
//   otherwise  "<link>.<a>-><b>"    and        "<link>.<b>-><a>"
// and, when duplex_bytes_per_s > 0, one more resource "<link>.duplex" that both directions use
// with coefficient 1 (Σ rates over both directions ≤ duplex capacity).
// A route is the fewest-hops path (breadth-first search); its resources are every traversed
// direction plus the duplex resource of every traversed link. Without NVLink, gpu0→gpu1 goes
// gpu0→host→gpu1: pcie.gpu0.d2h, pcie.gpu0.duplex, pcie.gpu1.h2d, pcie.gpu1.duplex.
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/node.hpp"
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
};

class Topology {
 public:
  using Route = std::vector<std::pair<int, double>>;  ///< (resource id, coefficient), as add_flow takes

  /// Builds the graph of `node.links` and registers its resources in `solver` (the Topology keeps
  /// only the resource ids, no reference to the solver). Vertices "host" and "gpu0".."gpu<n-1>" always
  /// exist. Throws std::invalid_argument for a link with an empty name or endpoint, a → a, a
  /// per-direction capacity that is not > 0 (or NaN), or a negative/NaN duplex capacity.
  /// Source: systems-and-hardware.md §3, §5.
  Topology(const NodeSpec& node, MaxMinSolver& solver);

  /// The resources (coefficient 1 each, summed if a route crossed one twice) of the fewest-hops
  /// path src→dst, ready for MaxMinSolver::add_flow. Routes are precomputed; this is a table
  /// lookup. Throws std::invalid_argument for an unknown vertex, src == dst, or no path.
  const Route& route(const std::string& src, const std::string& dst) const;
  /// Same by vertex index (see vertex()); the fast path for the executor.
  const Route& route(int src_vertex, int dst_vertex) const;

  /// The vertex names along the route src→dst, src first (for traces and tests). Throws as route().
  std::vector<std::string> route_vertices(const std::string& src, const std::string& dst) const;

  /// Index of a vertex name; throws std::invalid_argument for an unknown name.
  int vertex(const std::string& name) const;
  const std::vector<std::string>& vertex_names() const { return vertex_names_; }

  /// "gpu<rank>": the vertex of GPU `rank` (≥ 0; std::invalid_argument otherwise).
  static std::string gpu_vertex(int rank);
  static constexpr const char* kHostVertex = "host";

  /// Names of the resources this Topology registered, in registration order; resource_ids()[i] is
  /// the solver id of resource_names()[i] (equal to i when the solver was empty on construction).
  const std::vector<std::string>& resource_names() const { return resource_names_; }
  const std::vector<int>& resource_ids() const { return resource_ids_; }

  /// Every link direction (one per directed edge), in LinkSpec order, a→b before b→a: the
  /// resources worth tracing (load per direction). Duplex resources are in duplex_resource.
  const std::vector<LinkDirection>& link_directions() const { return directions_; }
  /// The solver ids of link_directions(), same order.
  std::vector<int> link_direction_resources() const;

 private:
  int add_vertex_name(const std::string& name);
  const std::vector<int>& path_edges(int src, int dst) const;  // throws as route()

  std::vector<std::string> vertex_names_;
  std::unordered_map<std::string, int> vertex_index_;
  std::vector<std::string> resource_names_;
  std::vector<int> resource_ids_;
  std::vector<LinkDirection> directions_;   // edge index → direction
  std::vector<Route> routes_;               // [src * V + dst]
  std::vector<std::vector<int>> route_edges_;  // [src * V + dst], edge indices in path order
  std::vector<char> reachable_;             // [src * V + dst]
};

}  // namespace chunkflow
