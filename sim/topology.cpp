// Topology graph and routing; see topology.hpp.
// Source: shared/reference/systems-and-hardware.md §3, §5.
#include "sim/topology.hpp"

#include <algorithm>
#include <stdexcept>


namespace chunkflow {
namespace {

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

int Topology::add_vertex_name(const std::string& name, VertexKind kind) {
  auto [it, inserted] = vertex_index_.emplace(name, static_cast<int>(vertex_names_.size()));
  if (inserted) {
    vertex_names_.push_back(name);
    vertex_kinds_.push_back(kind);
  }
  return it->second;
}

Topology::Topology(const NodeSpec& node, MaxMinSolver& solver) : gpu_count_(node.gpu_count) {
  const std::shared_ptr<const NodeRoutes> shared_routes = shared_node_routes(node);  // validates the links first
  const NodeRoutes& routes = *shared_routes;
  for (std::size_t v = 0; v < routes.vertex_names().size(); ++v)
    add_vertex_name(routes.vertex_names()[v], routes.vertex_kinds()[v]);
  const int n_vertices = static_cast<int>(vertex_names_.size());

  auto register_resource = [&](double capacity, const std::string& name) {
    const int id = solver.add_resource(capacity, name);
    resource_names_.push_back(name);
    resource_ids_.push_back(id);
    resource_capacities_.push_back(capacity);
    return id;
  };
  // Directions in NodeRoutes' order: link i is 2i (a→b) and 2i+1 (b→a).
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
      if (d->under_duplex_bytes_per_s > 0) duplex_switched_.push_back(static_cast<int>(directions_.size()));
      directions_.push_back(std::move(*d));
    }
  }

  // SM-read resources (model/routes.hpp sm_read_copy_cost), one per GPU that has one, after the links.
  const int G = node.gpu_count;
  sm_read_resource_.assign(static_cast<std::size_t>(G), -1);
  for (int g = 0; g < G; ++g)
    if (routes.sm_read_copy_cost(g) > 0)
      sm_read_resource_[static_cast<std::size_t>(g)] =
          register_resource(node.collective_flow_bytes_per_s, gpu_vertex(g) + ".sm_read");

  // extra: one more use (resource, coefficient) added after the edges' (−1: none).
  auto to_route = [this](const std::vector<int>& edges, std::pair<int, double> extra = {-1, 0.0}) {
    Route route;
    auto use = [&route](int resource, double coefficient) {
      auto it = std::find_if(route.begin(), route.end(), [resource](const auto& u) { return u.first == resource; });
      if (it != route.end())
        it->second += coefficient;
      else
        route.emplace_back(resource, coefficient);
    };
    for (int d : edges) {
      use(directions_[d].resource, 1.0);
      if (directions_[d].duplex_resource >= 0) use(directions_[d].duplex_resource, 1.0);
    }
    if (extra.first >= 0) use(extra.first, extra.second);
    return route;
  };

  const std::size_t n2 = static_cast<std::size_t>(n_vertices) * static_cast<std::size_t>(n_vertices);
  routes_.assign(n2, Route{});
  route_edges_.assign(n2, {});
  reachable_.assign(n2, 0);
  for (int src = 0; src < n_vertices; ++src)
    for (int dst = 0; dst < n_vertices; ++dst)
      if (const std::vector<int>* path = routes.host_path(src, dst)) {
        const std::size_t k = static_cast<std::size_t>(src) * n_vertices + dst;
        route_edges_[k] = *path;
        routes_[k] = to_route(*path);
        reachable_[k] = 1;
      }

  // GPU pairs: NCCL's transport choice (model/routes.hpp); GPU↔GPU routes are the collective paths.
  peers_.assign(static_cast<std::size_t>(G) * G, PeerPath{});
  peer_ok_.assign(static_cast<std::size_t>(G) * G, 0);
  peer_error_.assign(static_cast<std::size_t>(G) * G, "");
  for (int a = 0; a < G; ++a)
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      const std::size_t p = static_cast<std::size_t>(a) * G + b;
      const NodeRoutes::Peer* r = routes.peer(a, b, &peer_error_[p]);
      if (!r) continue;
      PeerPath& peer = peers_[p];
      peer.transport = r->transport;
      peer.level = r->level;
      // SHM: the receiver's SMs read the staged bytes (its SM-read resource, coefficient 1).
      peer.route = to_route(r->directions, {r->sm_read_gpu >= 0 ? sm_read_resource_[std::size_t(r->sm_read_gpu)] : -1, 1.0});
      peer.flow_cap_bytes_per_s = r->flow_cap_bytes_per_s;
      peer.weight = r->weight;
      peer.vertices = {gpu_vertex(a)};
      for (int d : r->directions) peer.vertices.push_back(directions_[d].to);
      peer_ok_[p] = 1;
      const std::size_t k = static_cast<std::size_t>(vertex_index_.at(gpu_vertex(a))) * n_vertices +
                            vertex_index_.at(gpu_vertex(b));
      route_edges_[k] = r->directions;
      routes_[k] = peer.route;
      reachable_[k] = 1;
    }
  const int host = vertex_index_.at(kHostVertex);
  for (int g = 0; g < G; ++g) {
    const std::size_t k = static_cast<std::size_t>(host) * n_vertices + vertex_index_.at(gpu_vertex(g));
    h2d_route_index_.push_back(reachable_[k] ? std::ptrdiff_t(k) : -1);
    sm_read_weight_.push_back(routes.sm_read_weight(g));
    const int sm = sm_read_resource_[std::size_t(g)];
    sm_read_routes_.push_back(reachable_[k] ? to_route(route_edges_[k], {sm, 1.0}) : Route{});
    // The H2D copies' route: the link directions and, where GPU g has an SM-read resource, β there.
    if (reachable_[k] && sm >= 0) routes_[k] = to_route(route_edges_[k], {sm, routes.sm_read_copy_cost(g)});
  }
}

const Topology::Route& Topology::sm_host_read_route(int rank) const {
  if (rank >= 0 && rank < int(sm_read_routes_.size()) && h2d_route_index_[std::size_t(rank)] >= 0)
    return sm_read_routes_[std::size_t(rank)];
  return route(kHostVertex, gpu_vertex(rank));  // throws the error route() gives
}

std::shared_ptr<const Topology> Topology::shared(const NodeSpec& node) {
  constexpr std::size_t kKept = 16;
  thread_local std::vector<std::pair<std::string, std::shared_ptr<const Topology>>> cache;  // most recent first
  std::string key = routes_key(node);
  for (std::size_t i = 0; i < cache.size(); ++i)
    if (cache[i].first == key) {
      std::rotate(cache.begin(), cache.begin() + std::ptrdiff_t(i), cache.begin() + std::ptrdiff_t(i) + 1);
      return cache.front().second;
    }
  MaxMinSolver scratch;
  auto topology = std::make_shared<const Topology>(node, scratch);  // throws before anything is kept
  if (cache.size() == kKept) cache.pop_back();
  cache.emplace(cache.begin(), std::move(key), topology);
  return topology;
}

void Topology::register_resources(MaxMinSolver& solver) const {
  for (std::size_t i = 0; i < resource_ids_.size(); ++i)
    if (solver.add_resource(resource_capacities_[i], resource_names_[i]) != resource_ids_[i])
      throw std::logic_error("Topology::register_resources: the solver must hand out the ids this topology was built "
                             "with (resource '" + resource_names_[i] + "'): use an empty solver");
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
