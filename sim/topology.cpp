// Topology graph and routing; see topology.hpp.
// Source: shared/reference/systems-and-hardware.md §3, §5.
#include "sim/topology.hpp"

#include <algorithm>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>

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
  template <class E, class G>
  void tree_edge(E e, const G& g) const {
    (*pred_direction_)[boost::target(e, g)] = g[e].direction;
  }

 private:
  std::vector<int>* pred_direction_;
};

/// Keeps the edges whose link kind is allowed (bit 1 << kind of `allowed`).
struct KindFilter {
  const Graph* graph = nullptr;
  const std::vector<LinkDirection>* directions = nullptr;
  unsigned allowed = 0;
  bool operator()(const Edge& e) const {
    return (allowed >> static_cast<unsigned>((*directions)[(*graph)[e].direction].kind)) & 1u;
  }
};

constexpr unsigned bit(LinkKind k) { return 1u << static_cast<unsigned>(k); }
constexpr unsigned kHostKinds = bit(LinkKind::pcie) | bit(LinkKind::memory) | bit(LinkKind::inter_socket);
constexpr unsigned kPcieKinds = bit(LinkKind::pcie) | bit(LinkKind::inter_socket);
constexpr unsigned kNvlinkKinds = bit(LinkKind::nvlink);

/// Fewest-hops paths between all vertex pairs over the edges `allowed` keeps: edges[src*n+dst]
/// (direction indices in path order) and reach[src*n+dst].
void all_pairs_paths(const Graph& graph, const std::vector<LinkDirection>& directions,
                     const std::vector<int>& from_vertex, unsigned allowed, int n, std::vector<std::vector<int>>& edges,
                     std::vector<char>& reach) {
  const std::size_t n2 = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  edges.assign(n2, {});
  reach.assign(n2, 0);
  const KindFilter filter{&graph, &directions, allowed};
  const boost::filtered_graph<Graph, KindFilter> view(graph, filter);
  std::vector<int> pred(static_cast<std::size_t>(n));
  for (int src = 0; src < n; ++src) {
    std::fill(pred.begin(), pred.end(), -1);
    boost::breadth_first_search(view, static_cast<Vertex>(src), boost::visitor(PredecessorEdgeRecorder(&pred)));
    for (int dst = 0; dst < n; ++dst) {
      if (dst == src || pred[dst] < 0) continue;
      std::vector<int>& path = edges[static_cast<std::size_t>(src) * n + dst];
      for (int v = dst; v != src;) {
        const int d = pred[v];
        path.push_back(d);
        v = from_vertex[d];
      }
      std::reverse(path.begin(), path.end());
      reach[static_cast<std::size_t>(src) * n + dst] = 1;
    }
  }
}

/// "<link>.h2d" towards a GPU and "<link>.d2h" away from it on a PCIe link that ends at a GPU (or
/// on any link from/to "host"), else "<link>.<from>-><to>".
std::string direction_name(const std::string& link, LinkKind kind, const std::string& from, const std::string& to) {
  const auto is_gpu = [](const std::string& v) { return v.rfind("gpu", 0) == 0; };
  if (from == Topology::kHostVertex || (kind == LinkKind::pcie && is_gpu(to) && !is_gpu(from))) return link + ".h2d";
  if (to == Topology::kHostVertex || (kind == LinkKind::pcie && is_gpu(from) && !is_gpu(to))) return link + ".d2h";
  return link + "." + from + "->" + to;
}

}  // namespace

std::string Topology::gpu_vertex(int rank) {
  if (rank < 0) throw std::invalid_argument("Topology::gpu_vertex: rank must be >= 0, got " + std::to_string(rank));
  return "gpu" + std::to_string(rank);
}

std::string to_string(Transport t) {
  switch (t) {
    case Transport::nvlink_p2p: return "P2P/NVLink";
    case Transport::pcie_p2p: return "P2P/PCIe";
    case Transport::shm: return "SHM";
  }
  return "?";
}

int Topology::add_vertex_name(const std::string& name, VertexKind kind) {
  auto [it, inserted] = vertex_index_.emplace(name, static_cast<int>(vertex_names_.size()));
  if (inserted) {
    vertex_names_.push_back(name);
    vertex_kinds_.push_back(kind);
  }
  return it->second;
}

Topology::Topology(const NodeSpec& node, MaxMinSolver& solver) : gpu_count_(node.gpu_count) {
  add_vertex_name(kHostVertex, VertexKind::host_memory);
  for (int g = 0; g < node.gpu_count; ++g) add_vertex_name(gpu_vertex(g), VertexKind::gpu);

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
    if (!(l.duplex_bytes_per_s >= 0) || !(l.a_to_b_under_duplex_bytes_per_s >= 0) ||
        !(l.b_to_a_under_duplex_bytes_per_s >= 0))
      throw std::invalid_argument(where + ": duplex capacities must be >= 0 (0 = no coupling), got " +
                                  std::to_string(l.duplex_bytes_per_s));
  }

  for (const VertexSpec& v : node.vertices) add_vertex_name(v.name, v.kind);
  // A vertex named only by a link: "host…" is host memory, anything else a CPU socket.
  for (const LinkSpec& l : node.links)
    for (const std::string* end : {&l.a, &l.b})
      add_vertex_name(*end, end->rfind("host", 0) == 0 ? VertexKind::host_memory : VertexKind::cpu);
  const int n_vertices = static_cast<int>(vertex_names_.size());
  Graph graph(static_cast<std::size_t>(n_vertices));

  auto register_resource = [&](double capacity, const std::string& name) {
    const int id = solver.add_resource(capacity, name);
    resource_names_.push_back(name);
    resource_ids_.push_back(id);
    return id;
  };
  std::vector<int> from_vertex;
  for (const LinkSpec& l : node.links) {
    const int duplex = l.duplex_bytes_per_s > 0 ? -2 : -1;  // registered after the directions
    const int first = static_cast<int>(directions_.size());
    LinkDirection forward{l.name, l.a, l.b, -1, duplex, l.a_to_b_bytes_per_s, l.kind, first + 1,
                          l.a_to_b_under_duplex_bytes_per_s};
    LinkDirection backward{l.name, l.b, l.a, -1, duplex, l.b_to_a_bytes_per_s, l.kind, first,
                           l.b_to_a_under_duplex_bytes_per_s};
    forward.resource = register_resource(forward.capacity_bytes_per_s, direction_name(l.name, l.kind, l.a, l.b));
    backward.resource = register_resource(backward.capacity_bytes_per_s, direction_name(l.name, l.kind, l.b, l.a));
    if (duplex == -2) {
      const int id = register_resource(l.duplex_bytes_per_s, l.name + ".duplex");
      forward.duplex_resource = id;
      backward.duplex_resource = id;
    }
    for (LinkDirection* d : {&forward, &backward}) {
      const int index = static_cast<int>(directions_.size());
      boost::add_edge(static_cast<Vertex>(vertex_index_.at(d->from)), static_cast<Vertex>(vertex_index_.at(d->to)),
                      EdgeProps{index}, graph);
      from_vertex.push_back(vertex_index_.at(d->from));
      if (d->under_duplex_bytes_per_s > 0) duplex_switched_.push_back(index);
      directions_.push_back(std::move(*d));
    }
  }

  auto to_route = [this](const std::vector<int>& edges) {
    Route route;
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
    return route;
  };

  // Host traffic: fewest hops without NVLink, for every vertex pair (a handful of vertices).
  all_pairs_paths(graph, directions_, from_vertex, kHostKinds, n_vertices, route_edges_, reachable_);
  const std::size_t n2 = static_cast<std::size_t>(n_vertices) * static_cast<std::size_t>(n_vertices);
  routes_.assign(n2, Route{});
  for (std::size_t k = 0; k < n2; ++k)
    if (reachable_[k]) routes_[k] = to_route(route_edges_[k]);

  // GPU pairs: NCCL's transport choice (header comment).
  std::vector<std::vector<int>> nv_edges, pcie_edges;
  std::vector<char> nv_reach, pcie_reach;
  all_pairs_paths(graph, directions_, from_vertex, kNvlinkKinds, n_vertices, nv_edges, nv_reach);
  all_pairs_paths(graph, directions_, from_vertex, kPcieKinds, n_vertices, pcie_edges, pcie_reach);
  const int G = node.gpu_count;
  peers_.assign(static_cast<std::size_t>(G) * G, PeerPath{});
  peer_ok_.assign(static_cast<std::size_t>(G) * G, 0);
  peer_error_.assign(static_cast<std::size_t>(G) * G, "");
  const double inf = std::numeric_limits<double>::infinity();
  for (int a = 0; a < G; ++a)
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      const int va = vertex_index_.at(gpu_vertex(a)), vb = vertex_index_.at(gpu_vertex(b));
      const std::size_t k = static_cast<std::size_t>(va) * n_vertices + vb;
      const std::size_t p = static_cast<std::size_t>(a) * G + b;
      PeerPath& peer = peers_[p];
      std::vector<int> edges;
      if (nv_reach[k]) {
        peer.transport = Transport::nvlink_p2p;
        peer.level = PathLevel::nvl;
        edges = nv_edges[k];
        peer.flow_cap_bytes_per_s = node.p2p_flow_bytes_per_s > 0 ? node.p2p_flow_bytes_per_s : inf;
      } else {
        if (pcie_reach[k]) {
          PathLevel level = PathLevel::pix;
          int switches = 0;
          for (std::size_t i = 0; i < pcie_edges[k].size(); ++i) {
            const LinkDirection& d = directions_[pcie_edges[k][i]];
            if (d.kind == LinkKind::inter_socket) level = std::max(level, PathLevel::sys);
            if (i + 1 == pcie_edges[k].size()) break;  // the last hop ends at the destination GPU
            switch (vertex_kinds_[vertex_index_.at(d.to)]) {
              case VertexKind::pcie_switch: ++switches; break;
              case VertexKind::host_bridge:
              case VertexKind::host_memory: level = std::max(level, PathLevel::phb); break;
              case VertexKind::cpu: level = std::max(level, PathLevel::node); break;
              default: level = std::max(level, PathLevel::pxb); break;
            }
          }
          if (level == PathLevel::pix && switches > 1) level = PathLevel::pxb;
          peer.level = level;
          if (node.p2p_allowed(a, b) && level <= node.p2p_level) {
            peer.transport = Transport::pcie_p2p;
            edges = pcie_edges[k];
            peer.flow_cap_bytes_per_s = node.p2p_flow_bytes_per_s > 0 ? node.p2p_flow_bytes_per_s : inf;
          }
        }
        if (edges.empty()) {  // staged through the host memory nearest the source GPU
          peer.transport = Transport::shm;
          int best = -1;
          for (int m = 0; m < n_vertices; ++m) {
            if (vertex_kinds_[m] != VertexKind::host_memory) continue;
            const std::size_t to_m = static_cast<std::size_t>(va) * n_vertices + m;
            const std::size_t from_m = static_cast<std::size_t>(m) * n_vertices + vb;
            if (!reachable_[to_m] || !reachable_[from_m]) continue;
            if (best < 0 || route_edges_[to_m].size() <
                                route_edges_[static_cast<std::size_t>(va) * n_vertices + best].size())
              best = m;
          }
          if (best < 0) {
            peer_error_[p] = "Topology: no path between '" + gpu_vertex(a) + "' and '" + gpu_vertex(b) +
                             "' for collectives: no NVLink, no P2P and no route through host memory";
            continue;
          }
          edges = route_edges_[static_cast<std::size_t>(va) * n_vertices + best];
          const auto& back = route_edges_[static_cast<std::size_t>(best) * n_vertices + vb];
          edges.insert(edges.end(), back.begin(), back.end());
          peer.flow_cap_bytes_per_s = node.collective_flow_bytes_per_s > 0 ? node.collective_flow_bytes_per_s : inf;
        }
      }
      peer.route = to_route(edges);
      peer.vertices = {gpu_vertex(a)};
      for (int d : edges) peer.vertices.push_back(directions_[d].to);
      peer_ok_[p] = 1;
      // GPU↔GPU routes are the collective paths.
      route_edges_[k] = edges;
      routes_[k] = peer.route;
      reachable_[k] = 1;
    }
}

const Topology::PeerPath& Topology::peer_path(int a, int b) const {
  if (a < 0 || b < 0 || a >= gpu_count_ || b >= gpu_count_ || a == b)
    throw std::invalid_argument("Topology::peer_path: expected two distinct GPU indices below " +
                                std::to_string(gpu_count_) + ", got " + std::to_string(a) + " and " + std::to_string(b));
  const std::size_t p = static_cast<std::size_t>(a) * gpu_count_ + b;
  if (!peer_ok_[p]) throw std::invalid_argument(peer_error_[p]);
  return peers_[p];
}

void Topology::apply_under_duplex(MaxMinSolver& solver, const std::vector<int>& flows_on_resource) const {
  for (int i : duplex_switched_) {
    const LinkDirection& d = directions_[i];
    const bool both = flows_on_resource.at(d.resource) > 0 && flows_on_resource.at(directions_[d.reverse].resource) > 0;
    const double cap = both ? d.under_duplex_bytes_per_s : d.capacity_bytes_per_s;
    if (solver.capacity(d.resource) != cap) solver.set_capacity(d.resource, cap);
  }
}

double Topology::bottleneck_bytes_per_s(const MaxMinSolver& solver, const Route& route) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [r, a] : route) best = std::min(best, solver.capacity(r) / a);
  return best;
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
