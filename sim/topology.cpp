// Topology graph and routing; see topology.hpp.
// Source: shared/reference/systems-and-hardware.md §3, §5.
#include "sim/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>

namespace chunkflow {
namespace {

struct EdgeProps {
  int direction = -1;  // index into Topology::directions_
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, EdgeProps>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;

/// Records, for every vertex the search reaches, the tree edge it was reached by.
class PredecessorEdgeRecorder : public boost::default_bfs_visitor {
 public:
  explicit PredecessorEdgeRecorder(std::vector<int>* pred_direction) : pred_direction_(pred_direction) {}
  void tree_edge(Edge e, const Graph& g) const { (*pred_direction_)[boost::target(e, g)] = g[e].direction; }

 private:
  std::vector<int>* pred_direction_;
};

std::string direction_name(const std::string& link, const std::string& from, const std::string& to) {
  if (from == Topology::kHostVertex) return link + ".h2d";
  if (to == Topology::kHostVertex) return link + ".d2h";
  return link + "." + from + "->" + to;
}

}  // namespace

std::string Topology::gpu_vertex(int rank) {
  if (rank < 0) throw std::invalid_argument("Topology::gpu_vertex: rank must be >= 0, got " + std::to_string(rank));
  return "gpu" + std::to_string(rank);
}

int Topology::add_vertex_name(const std::string& name) {
  auto [it, inserted] = vertex_index_.emplace(name, static_cast<int>(vertex_names_.size()));
  if (inserted) vertex_names_.push_back(name);
  return it->second;
}

Topology::Topology(const NodeSpec& node, MaxMinSolver& solver) {
  add_vertex_name(kHostVertex);
  for (int g = 0; g < node.gpu_count; ++g) add_vertex_name(gpu_vertex(g));

  // Validate everything before registering anything in the solver.
  for (const LinkSpec& l : node.links) {
    const std::string where = "Topology: node '" + node.id + "': link '" + l.name + "'";
    if (l.name.empty() || l.a.empty() || l.b.empty())
      throw std::invalid_argument(where + ": name and both endpoints must be non-empty (a='" + l.a + "', b='" +
                                  l.b + "')");
    if (l.a == l.b) throw std::invalid_argument(where + ": both endpoints are '" + l.a + "'");
    if (!(l.a_to_b_bytes_per_s > 0) || !(l.b_to_a_bytes_per_s > 0))
      throw std::invalid_argument(where + ": per-direction capacities must be > 0 bytes/s, got a_to_b=" +
                                  std::to_string(l.a_to_b_bytes_per_s) +
                                  ", b_to_a=" + std::to_string(l.b_to_a_bytes_per_s));
    if (!(l.duplex_bytes_per_s >= 0))
      throw std::invalid_argument(where + ": duplex_bytes_per_s must be >= 0 (0 = no coupling), got " +
                                  std::to_string(l.duplex_bytes_per_s));
  }

  for (const LinkSpec& l : node.links) {
    add_vertex_name(l.a);
    add_vertex_name(l.b);
  }
  const int n_vertices = static_cast<int>(vertex_names_.size());
  Graph graph(static_cast<std::size_t>(n_vertices));

  auto register_resource = [&](double capacity, const std::string& name) {
    const int id = solver.add_resource(capacity, name);
    resource_names_.push_back(name);
    resource_ids_.push_back(id);
    return id;
  };
  for (const LinkSpec& l : node.links) {
    const int duplex = l.duplex_bytes_per_s > 0 ? -2 : -1;  // registered after the directions
    LinkDirection forward{l.name, l.a, l.b, -1, duplex, l.a_to_b_bytes_per_s};
    LinkDirection backward{l.name, l.b, l.a, -1, duplex, l.b_to_a_bytes_per_s};
    forward.resource = register_resource(forward.capacity_bytes_per_s, direction_name(l.name, l.a, l.b));
    backward.resource = register_resource(backward.capacity_bytes_per_s, direction_name(l.name, l.b, l.a));
    if (duplex == -2) {
      const int id = register_resource(l.duplex_bytes_per_s, l.name + ".duplex");
      forward.duplex_resource = id;
      backward.duplex_resource = id;
    }
    for (LinkDirection* d : {&forward, &backward}) {
      boost::add_edge(static_cast<Vertex>(vertex_index_.at(d->from)), static_cast<Vertex>(vertex_index_.at(d->to)),
                      EdgeProps{static_cast<int>(directions_.size())}, graph);
      directions_.push_back(std::move(*d));
    }
  }

  // All-pairs fewest-hops routes (a handful of vertices): one breadth-first search per source.
  const std::size_t n2 = static_cast<std::size_t>(n_vertices) * static_cast<std::size_t>(n_vertices);
  routes_.assign(n2, Route{});
  route_edges_.assign(n2, std::vector<int>{});
  reachable_.assign(n2, 0);
  std::vector<int> pred_direction(static_cast<std::size_t>(n_vertices));
  for (int src = 0; src < n_vertices; ++src) {
    std::fill(pred_direction.begin(), pred_direction.end(), -1);
    boost::breadth_first_search(graph, static_cast<Vertex>(src),
                                boost::visitor(PredecessorEdgeRecorder(&pred_direction)));
    for (int dst = 0; dst < n_vertices; ++dst) {
      if (dst == src || pred_direction[dst] < 0) continue;
      const std::size_t k = static_cast<std::size_t>(src) * n_vertices + dst;
      std::vector<int>& edges = route_edges_[k];
      for (int v = dst; v != src;) {
        const int d = pred_direction[v];
        edges.push_back(d);
        v = vertex_index_.at(directions_[d].from);
      }
      std::reverse(edges.begin(), edges.end());
      Route& route = routes_[k];
      auto use = [&route](int resource) {
        auto it = std::find_if(route.begin(), route.end(), [resource](const auto& u) { return u.first == resource; });
        if (it != route.end())
          it->second += 1.0;
        else
          route.emplace_back(resource, 1.0);
      };
      for (int d : edges) {
        use(directions_[d].resource);
        if (directions_[d].duplex_resource >= 0) use(directions_[d].duplex_resource);
      }
      reachable_[k] = 1;
    }
  }
}

int Topology::vertex(const std::string& name) const {
  auto it = vertex_index_.find(name);
  if (it == vertex_index_.end()) {
    std::string known;
    for (const auto& v : vertex_names_) known += (known.empty() ? "" : ", ") + v;
    throw std::invalid_argument("Topology: unknown vertex '" + name + "' (known: " + known + ")");
  }
  return it->second;
}

const std::vector<int>& Topology::path_edges(int src, int dst) const {
  const int n = static_cast<int>(vertex_names_.size());
  if (src < 0 || src >= n || dst < 0 || dst >= n)
    throw std::invalid_argument("Topology::route: vertex index out of range (src " + std::to_string(src) +
                                ", dst " + std::to_string(dst) + ", " + std::to_string(n) + " vertices)");
  if (src == dst)
    throw std::invalid_argument("Topology::route: source and destination are both '" + vertex_names_[src] +
                                "': a flow needs two distinct endpoints");
  const std::size_t k = static_cast<std::size_t>(src) * n + dst;
  if (!reachable_[k])
    throw std::invalid_argument("Topology::route: no path from '" + vertex_names_[src] + "' to '" +
                                vertex_names_[dst] + "'");
  return route_edges_[k];
}

const Topology::Route& Topology::route(int src_vertex, int dst_vertex) const {
  path_edges(src_vertex, dst_vertex);  // validates
  return routes_[static_cast<std::size_t>(src_vertex) * vertex_names_.size() + dst_vertex];
}

const Topology::Route& Topology::route(const std::string& src, const std::string& dst) const {
  return route(vertex(src), vertex(dst));
}

std::vector<std::string> Topology::route_vertices(const std::string& src, const std::string& dst) const {
  const std::vector<int>& edges = path_edges(vertex(src), vertex(dst));
  std::vector<std::string> out{src};
  for (int d : edges) out.push_back(directions_[d].to);
  return out;
}

std::vector<int> Topology::link_direction_resources() const {
  std::vector<int> ids;
  ids.reserve(directions_.size());
  for (const auto& d : directions_) ids.push_back(d.resource);
  return ids;
}

}  // namespace chunkflow
