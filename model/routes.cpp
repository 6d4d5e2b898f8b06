// Routes of a node's topology; see routes.hpp.
#include "model/routes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>

namespace chunkflow {
namespace {

struct EdgeProps {
  int direction = -1;
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
  const std::vector<LinkKind>* kinds = nullptr;  // per direction
  unsigned allowed = 0;
  bool operator()(const Edge& e) const { return (allowed >> static_cast<unsigned>((*kinds)[(*graph)[e].direction])) & 1u; }
};

constexpr unsigned bit(LinkKind k) { return 1u << static_cast<unsigned>(k); }
constexpr unsigned kHostKinds = bit(LinkKind::pcie) | bit(LinkKind::memory) | bit(LinkKind::inter_socket);
constexpr unsigned kPcieKinds = bit(LinkKind::pcie) | bit(LinkKind::inter_socket);
constexpr unsigned kNvlinkKinds = bit(LinkKind::nvlink);

/// Fewest-hops paths between all vertex pairs over the edges `allowed` keeps: edges[src*n+dst]
/// (direction indices in path order) and reach[src*n+dst].
void all_pairs_paths(const Graph& graph, const std::vector<LinkKind>& kinds, const std::vector<int>& from_vertex,
                     unsigned allowed, int n, std::vector<std::vector<int>>& edges, std::vector<char>& reach) {
  const std::size_t n2 = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  edges.assign(n2, {});
  reach.assign(n2, 0);
  const KindFilter filter{&graph, &kinds, allowed};
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

}  // namespace

std::string to_string(Transport t) {
  switch (t) {
    case Transport::nvlink_p2p: return "P2P/NVLink";
    case Transport::pcie_p2p: return "P2P/PCIe";
    case Transport::shm: return "SHM";
  }
  return "?";
}

int NodeRoutes::find_vertex(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

NodeRoutes::NodeRoutes(const NodeSpec& node) : gpu_count_(node.gpu_count) {
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
  auto add = [this](const std::string& name, VertexKind kind) {
    auto [it, inserted] = index_.emplace(name, static_cast<int>(names_.size()));
    if (inserted) {
      names_.push_back(name);
      kinds_.push_back(kind);
    }
    return it->second;
  };
  add("host", VertexKind::host_memory);
  for (int g = 0; g < node.gpu_count; ++g) add("gpu" + std::to_string(g), VertexKind::gpu);
  for (const VertexSpec& v : node.vertices) add(v.name, v.kind);
  for (const LinkSpec& l : node.links)
    for (const std::string* end : {&l.a, &l.b})
      add(*end, end->rfind("host", 0) == 0 ? VertexKind::host_memory : VertexKind::cpu);
  const int V = static_cast<int>(names_.size());
  Graph graph(static_cast<std::size_t>(V));
  std::vector<LinkKind> kinds;
  for (const LinkSpec& l : node.links)
    for (int dir = 0; dir < 2; ++dir) {
      const int a = index_.at(dir == 0 ? l.a : l.b), b = index_.at(dir == 0 ? l.b : l.a);
      boost::add_edge(static_cast<Vertex>(a), static_cast<Vertex>(b), EdgeProps{static_cast<int>(from_.size())}, graph);
      from_.push_back(a);
      to_.push_back(b);
      kinds.push_back(l.kind);
    }

  // SM-read weights and copy costs (header: sm_read_weight, sm_read_copy_cost): r = the SM rate over
  // one copy's rate alone.
  sm_read_weight_.assign(static_cast<std::size_t>(node.gpu_count), 1.0);
  sm_read_copy_cost_.assign(static_cast<std::size_t>(node.gpu_count), 0.0);
  if (node.collective_flow_bytes_per_s > 0)
    for (int g = 0; g < node.gpu_count; ++g) {
      const std::string gpu = "gpu" + std::to_string(g);
      for (const LinkSpec& l : node.links) {
        if (l.kind != LinkKind::pcie || (l.a != gpu && l.b != gpu)) continue;  // NodeSpec::host_link's choice
        // An all-to-all's flows cross the link both ways: a copy beside it sees the direction's
        // under-duplex capacity where the link has one (sim/topology.hpp apply_under_duplex).
        const double one_way = l.b == gpu ? l.a_to_b_bytes_per_s : l.b_to_a_bytes_per_s;
        const double under = l.b == gpu ? l.a_to_b_under_duplex_bytes_per_s : l.b_to_a_under_duplex_bytes_per_s;
        const double copy_alone = std::min(under > 0 ? under : one_way, node.copy_engine_bytes_per_s);
        // Dyadic (w in 1/1024ths, β in 1/2^20ths): sums of a few stay exact, so the solver's
        // weighted denominators are the same on the simulator's rank-symmetric path (one flow per
        // orbit, uses summed as k·a) as on the full one (sim/symmetry.hpp: equal within 1e-9).
        // Rounded down: with w ≤ r and β ≤ r², an uncapped copy beside SM reads is held by the link
        // direction, (β + w)·C / (1 + w) ≤ r·C = f, not by the SM resource; and β ≤ f / (a lone
        // copy's rate, one way), so that a copy alone never meets it either.
        const double r = copy_alone > 0 ? node.collective_flow_bytes_per_s / copy_alone : 1.0;
        if (r < 1) {
          const double lone = std::min(one_way, node.copy_engine_bytes_per_s);
          const double beta = std::min(r * r, lone > 0 ? node.collective_flow_bytes_per_s / lone : 1.0);
          sm_read_weight_[static_cast<std::size_t>(g)] = std::max(1.0, std::floor(1024.0 * r)) / 1024.0;
          sm_read_copy_cost_[static_cast<std::size_t>(g)] = std::floor(1048576.0 * beta) / 1048576.0;
        }
        break;
      }
    }

  all_pairs_paths(graph, kinds, from_, kHostKinds, V, host_, host_ok_);
  std::vector<std::vector<int>> nv_edges, pcie_edges;
  std::vector<char> nv_reach, pcie_reach;
  all_pairs_paths(graph, kinds, from_, kNvlinkKinds, V, nv_edges, nv_reach);
  all_pairs_paths(graph, kinds, from_, kPcieKinds, V, pcie_edges, pcie_reach);

  const int G = node.gpu_count;
  peers_.assign(static_cast<std::size_t>(G) * G, Peer{});
  peer_error_.assign(static_cast<std::size_t>(G) * G, "");
  const double inf = std::numeric_limits<double>::infinity();
  const double p2p_cap = node.p2p_flow_bytes_per_s > 0 ? node.p2p_flow_bytes_per_s : inf;
  for (int a = 0; a < G; ++a)
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      const int va = index_.at("gpu" + std::to_string(a)), vb = index_.at("gpu" + std::to_string(b));
      const std::size_t k = static_cast<std::size_t>(va) * V + vb;
      const std::size_t p = static_cast<std::size_t>(a) * G + b;
      Peer& peer = peers_[p];
      if (nv_reach[k]) {
        peer = {Transport::nvlink_p2p, PathLevel::nvl, nv_edges[k], p2p_cap};
        continue;
      }
      if (pcie_reach[k]) {
        PathLevel level = PathLevel::pix;
        int switches = 0;
        const std::vector<int>& path = pcie_edges[k];
        for (std::size_t i = 0; i < path.size(); ++i) {
          if (kinds[path[i]] == LinkKind::inter_socket) level = std::max(level, PathLevel::sys);
          if (i + 1 == path.size()) break;  // the last hop ends at the destination GPU
          switch (kinds_[to_[path[i]]]) {
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
          peer.directions = path;
          peer.flow_cap_bytes_per_s = p2p_cap;
          continue;
        }
      }
      // Staged through the host memory nearest the source GPU.
      int best = -1;
      for (int m = 0; m < V; ++m) {
        if (kinds_[m] != VertexKind::host_memory) continue;
        const std::size_t to_m = static_cast<std::size_t>(va) * V + m, from_m = static_cast<std::size_t>(m) * V + vb;
        if (!host_ok_[to_m] || !host_ok_[from_m]) continue;
        if (best < 0 || host_[to_m].size() < host_[static_cast<std::size_t>(va) * V + best].size()) best = m;
      }
      if (best < 0) {
        peer_error_[p] = "Topology: no path between 'gpu" + std::to_string(a) + "' and 'gpu" + std::to_string(b) +
                         "' for collectives: no NVLink, no P2P and no route through host memory";
        continue;
      }
      peer.transport = Transport::shm;
      peer.directions = host_[static_cast<std::size_t>(va) * V + best];
      const auto& back = host_[static_cast<std::size_t>(best) * V + vb];
      peer.directions.insert(peer.directions.end(), back.begin(), back.end());
      peer.flow_cap_bytes_per_s = node.collective_flow_bytes_per_s > 0 ? node.collective_flow_bytes_per_s : inf;
      peer.weight = sm_read_weight_[static_cast<std::size_t>(b)];
    }
  // The SM-read resource only where SMs read staged memory: an SHM receiver, or the pcie_proxy's
  // GPU (its inbound half). Elsewhere (NVLink, P2P) no flow reads through SMs: no resource.
  std::vector<char> reads(static_cast<std::size_t>(G), node.collective == CollectiveBackend::pcie_proxy ? 1 : 0);
  for (std::size_t p = 0; p < peers_.size(); ++p) {
    const std::size_t b = p % static_cast<std::size_t>(G);  // peers_[a·G + b]; a == b stays empty
    if (!peer_error_[p].empty() || peers_[p].transport != Transport::shm || peers_[p].directions.empty()) continue;
    reads[b] = 1;
    if (sm_read_copy_cost_[b] > 0) peers_[p].sm_read_gpu = static_cast<int>(b);
  }
  for (int g = 0; g < G; ++g)
    if (!reads[static_cast<std::size_t>(g)]) sm_read_copy_cost_[static_cast<std::size_t>(g)] = 0.0;
}

const std::vector<int>* NodeRoutes::host_path(int src, int dst) const {
  const int V = static_cast<int>(names_.size());
  if (src < 0 || dst < 0 || src >= V || dst >= V || src == dst) return nullptr;
  const std::size_t k = static_cast<std::size_t>(src) * V + dst;
  return host_ok_[k] ? &host_[k] : nullptr;
}

const NodeRoutes::Peer* NodeRoutes::peer(int a, int b, std::string* error) const {
  if (a < 0 || b < 0 || a >= gpu_count_ || b >= gpu_count_ || a == b) {
    if (error)
      *error = "expected two distinct GPU indices below " + std::to_string(gpu_count_) + ", got " + std::to_string(a) +
               " and " + std::to_string(b);
    return nullptr;
  }
  const std::size_t p = static_cast<std::size_t>(a) * gpu_count_ + b;
  if (!peer_error_[p].empty()) {
    if (error) *error = peer_error_[p];
    return nullptr;
  }
  return &peers_[p];
}

std::string routes_key(const NodeSpec& node) {
  std::string key;
  key.reserve(64 + 96 * node.links.size());
  auto raw = [&key](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto str = [&](const std::string& s) {
    raw(s.size());
    key += s;
  };
  str(node.id);
  raw(node.gpu_count);
  raw(node.vertices.size());
  for (const VertexSpec& v : node.vertices) str(v.name), raw(v.kind);
  raw(node.links.size());
  for (const LinkSpec& l : node.links) {
    str(l.name), raw(l.kind), str(l.a), str(l.b);
    for (double x : {l.a_to_b_bytes_per_s, l.b_to_a_bytes_per_s, l.duplex_bytes_per_s, l.a_to_b_under_duplex_bytes_per_s,
                     l.b_to_a_under_duplex_bytes_per_s})
      raw(x);
  }
  raw(node.p2p_enabled), raw(node.p2p_level);
  raw(node.p2p_disabled_pairs.size());
  for (const auto& pair : node.p2p_disabled_pairs) raw(pair.first), raw(pair.second);
  raw(node.p2p_flow_bytes_per_s), raw(node.collective_flow_bytes_per_s), raw(node.copy_engine_bytes_per_s);
  return key;
}

std::shared_ptr<const NodeRoutes> shared_node_routes(const NodeSpec& node) {
  constexpr std::size_t kKept = 16;
  thread_local std::vector<std::pair<std::string, std::shared_ptr<const NodeRoutes>>> cache;  // most recent first
  std::string key = routes_key(node);
  for (std::size_t i = 0; i < cache.size(); ++i)
    if (cache[i].first == key) {
      std::rotate(cache.begin(), cache.begin() + std::ptrdiff_t(i), cache.begin() + std::ptrdiff_t(i) + 1);
      return cache.front().second;
    }
  auto routes = std::make_shared<const NodeRoutes>(node);  // throws before anything is kept
  if (cache.size() == kKept) cache.pop_back();
  cache.emplace(cache.begin(), std::move(key), routes);
  return routes;
}

HostLinkUse collective_host_link_use(const NodeSpec& node, int rank, int P) {
  if (P < 2 || P > node.gpu_count || rank < 0 || rank >= P)
    throw std::invalid_argument("collective_host_link_use: expected 2 <= P <= " + std::to_string(node.gpu_count) +
                                " and 0 <= rank < P, got P " + std::to_string(P) + ", rank " + std::to_string(rank));
  return collective_host_link_use(*shared_node_routes(node), node, rank, P);
}

HostLinkUse collective_host_link_use(const NodeRoutes& routes, const NodeSpec& node, int rank, int P) {
  if (P < 2 || P > node.gpu_count || rank < 0 || rank >= P)
    throw std::invalid_argument("collective_host_link_use: expected 2 <= P <= " + std::to_string(node.gpu_count) +
                                " and 0 <= rank < P, got P " + std::to_string(P) + ", rank " + std::to_string(rank));
  const LinkSpec& link = node.host_link(rank);
  const int li = static_cast<int>(&link - node.links.data());
  const std::string gpu = "gpu" + std::to_string(rank);
  const int towards_gpu = link.b == gpu ? 2 * li : 2 * li + 1;  // the direction into the GPU
  const int away = towards_gpu ^ 1;
  HostLinkUse use;
  for (int other = 0; other < P; ++other) {
    if (other == rank) continue;
    for (auto [src, dst] : {std::pair{other, rank}, std::pair{rank, other}}) {
      std::string error;
      const NodeRoutes::Peer* p = routes.peer(src, dst, &error);
      if (!p) throw std::invalid_argument(error);
      const bool in = std::find(p->directions.begin(), p->directions.end(), towards_gpu) != p->directions.end();
      const bool out = std::find(p->directions.begin(), p->directions.end(), away) != p->directions.end();
      use.flows_in += in;
      use.flows_out += out;
      if (in || out) {
        use.flow_cap_bytes_per_s = std::min(use.flow_cap_bytes_per_s, p->flow_cap_bytes_per_s);
        use.weight = std::min(use.weight, p->weight);
      }
      if (p->sm_read_gpu == rank) ++use.sm_reads_in;
    }
  }
  return use;
}

}  // namespace chunkflow
