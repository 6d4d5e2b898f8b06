// Host-link sharing between a rank's copies and an all-to-all; see link_model.hpp.
#include "model/link_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "model/collective_flows.hpp"
#include "model/routes.hpp"

namespace chunkflow {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Flows {
  double m_in = 1, m_out = 1;  ///< collective flows crossing the rank's link towards / away from the GPU
  double bytes_per_flow = 0;
  double flow_cap = 0;         ///< per-flow cap (transport)
  double weight = 1;           ///< the collective flows' max-min weight (SM reads: model/routes.hpp sm_read_weight)
  double sm_in = 0;            ///< flows the rank's SMs read (its SM-read resource, coefficient 1 each)
  double beta = 0;             ///< the copy's coefficient on that resource (model/routes.hpp sm_read_copy_cost)
};

Flows collective_flows(const NodeSpec& node, int rank, int P, double buffer_bytes) {
  const NodeRoutes& routes = *shared_node_routes(node);
  const double beta = routes.sm_read_copy_cost(rank);
  if (node.collective == CollectiveBackend::pcie_proxy)  // the inbound half is read by the SMs
    return {1.0, 1.0, buffer_bytes * (P - 1) / P, node.collective_flow_bytes_per_s, routes.sm_read_weight(rank),
            beta > 0 ? 1.0 : 0.0, beta};
  const HostLinkUse use = collective_host_link_use(routes, node, rank, P);
  double cap = use.flow_cap_bytes_per_s;
  if (use.flows_in == 0 && use.flows_out == 0)  // the collective runs off this link (NVLink, NVSwitch)
    cap = node.p2p_flow_bytes_per_s > 0 ? node.p2p_flow_bytes_per_s : node.collective_flow_bytes_per_s;
  return {double(use.flows_in), double(use.flows_out), buffer_bytes / P, cap, use.weight, double(use.sm_reads_in), beta};
}

/// One max-min resource of the two-class model: cx·x + cy·y ≤ cap.
struct TwoClassResource {
  double cx = 0, cy = 0, cap = 0;
};

/// Max-min fair (x, y) over `res` by weighted progressive filling: at level L, x = L and y = w·L
/// (x ≤ x_bound, y ≤ y_bound; a class with bound 0 or no resource is fixed at its bound). Source:
/// systems-and-hardware.md §5; weights as sim/maxmin.hpp.
std::pair<double, double> fill_two_classes(const std::vector<TwoClassResource>& res, double x_bound, double y_bound,
                                           double w) {
  double x = 0, y = 0;
  bool x_fixed = !(x_bound > 0), y_fixed = !(y_bound > 0);
  for (int iter = 0; iter < 3 && !(x_fixed && y_fixed); ++iter) {
    double level = kInf;
    for (const auto& r : res) {
      const double c = (x_fixed ? 0 : r.cx) + (y_fixed ? 0 : r.cy * w);
      if (!(c > 0)) continue;
      const double rem = r.cap - (x_fixed ? r.cx * x : 0) - (y_fixed ? r.cy * y : 0);
      level = std::min(level, std::max(rem, 0.0) / c);
    }
    if (!x_fixed) level = std::min(level, x_bound);
    if (!y_fixed) level = std::min(level, y_bound / w);
    if (std::isinf(level)) {  // nothing bounds the classes left
      if (!x_fixed) x = kInf;
      if (!y_fixed) y = kInf;
      break;
    }
    const double eps = 1e-9 * std::max(1.0, level);
    bool fix_x = !x_fixed && x_bound <= level + eps, fix_y = !y_fixed && y_bound / w <= level + eps;
    for (const auto& r : res) {
      const double c = (x_fixed ? 0 : r.cx) + (y_fixed ? 0 : r.cy * w);
      if (!(c > 0)) continue;
      const double rem = r.cap - (x_fixed ? r.cx * x : 0) - (y_fixed ? r.cy * y : 0);
      if (std::max(rem, 0.0) / c > level + eps) continue;  // not tight
      if (!x_fixed && r.cx > 0) fix_x = true;
      if (!y_fixed && r.cy > 0) fix_y = true;
    }
    if (fix_x) x = std::min(level, x_bound), x_fixed = true;
    if (fix_y) y = std::min(w * level, y_bound), y_fixed = true;
    if (!fix_x && !fix_y) break;
  }
  return {x, y};
}


/// share_with_collective for the collective flows `f` of rank `rank` (computed once by the caller:
/// they need the node's routes, which cost far more than the filling).
CollectiveShare share_given_flows(const NodeSpec& node, int rank, const Flows& f, double copy_cap_bytes_per_s) {
  if (!(copy_cap_bytes_per_s >= 0)) throw std::invalid_argument("share_with_collective: copy cap must be ≥ 0");
  const LinkSpec& link = node.host_link(rank);
  const double x_bound = std::min(node.copy_engine_bytes_per_s, copy_cap_bytes_per_s);
  // Both directions busy: the link's under-duplex capacities replace its one-way ones (the
  // simulator applies them the same way, sim/topology.hpp).
  const bool both = f.m_out > 0 && (f.m_in > 0 || x_bound > 0);
  const bool under = both && link.a_to_b_under_duplex_bytes_per_s > 0;
  const double A = under ? link.a_to_b_under_duplex_bytes_per_s : link.a_to_b_bytes_per_s;
  const double B = under ? link.b_to_a_under_duplex_bytes_per_s : link.b_to_a_bytes_per_s;
  // The header's resources: H2D (x + m_in·y ≤ A), D2H (m_out·y ≤ B), the duplex (x + (m_in + m_out)·y
  // ≤ D) and the SM-read resource (β·x + sm_in·y ≤ f), each only where it has a capacity and a user.
  std::vector<TwoClassResource> res;
  auto add = [&res](double cx, double cy, double cap) {
    if (cap > 0 && cx + cy > 0) res.push_back({cx, cy, cap});
  };
  const double cx = x_bound > 0 ? 1.0 : 0.0;
  add(cx, f.m_in, A);
  add(0.0, f.m_out, B);
  add(cx, f.m_in + f.m_out, link.duplex_bytes_per_s);
  if (f.beta > 0) add(cx * f.beta, f.sm_in, node.collective_flow_bytes_per_s);
  const auto [x, y] = fill_two_classes(res, x_bound, f.flow_cap, f.weight);
  CollectiveShare s;
  s.copy_bytes_per_s = x;
  s.collective_flow_bytes_per_s = y;
  s.collective_time_s = node.collective_latency_s + (y > 0 ? f.bytes_per_flow / y : kInf);
  return s;
}

}  // namespace

CollectiveShare share_with_collective(const NodeSpec& node, int rank, int P, double buffer_bytes,
                                      double copy_cap_bytes_per_s) {
  if (P < 2) throw std::invalid_argument("share_with_collective: Ulysses degree must be ≥ 2, got " + std::to_string(P));
  if (!(buffer_bytes > 0)) throw std::invalid_argument("share_with_collective: buffer must be > 0 bytes");
  if (!(copy_cap_bytes_per_s >= 0)) throw std::invalid_argument("share_with_collective: copy cap must be ≥ 0");
  return share_given_flows(node, rank, collective_flows(node, rank, P, buffer_bytes), copy_cap_bytes_per_s);
}

double share_cap_bytes_per_s(const NodeSpec& node, int rank, int P, double buffer_bytes, double tolerance) {
  const double alone = share_with_collective(node, rank, P, buffer_bytes, 0.0).collective_time_s;  // checks inputs
  const Flows f = collective_flows(node, rank, P, buffer_bytes);  // once: the bisection only varies the cap
  const double limit = alone * (1.0 + std::max(tolerance, 0.0));
  double lo = 0, hi = node.copy_engine_bytes_per_s;
  if (share_given_flows(node, rank, f, hi).collective_time_s <= limit) return hi;
  for (int i = 0; i < 60; ++i) {  // bisection: the collective's time is non-decreasing in the cap
    const double mid = 0.5 * (lo + hi);
    (share_given_flows(node, rank, f, mid).collective_time_s <= limit ? lo : hi) = mid;
  }
  return lo;
}

// ---- WorkloadLinkModel ----------------------------------------------------------------------

/// Per link direction: how many copies cross it; per collective kind: how many of its flows.
struct WorkloadLinkModel::Resources {
  explicit Resources(const NodeSpec& node) : routes_ptr(shared_node_routes(node)), routes(*routes_ptr) {}
  std::shared_ptr<const NodeRoutes> routes_ptr;  ///< memoised per thread (model/routes.hpp)
  const NodeRoutes& routes;
  std::vector<double> copies;  ///< [direction]: executed ranks whose H2D route crosses it
  std::vector<double> copy_beta;  ///< [gpu]: an executed rank's copies' cost on its SM-read resource (0: none)
  struct KindFlows {
    bool ready = false;
    std::vector<double> flows;         ///< [direction]: collective flows crossing it
    double bytes_per_buffer_byte = 0;  ///< bytes of the largest flow per byte of per-rank buffer
    double flow_cap_bytes_per_s = kInf;
    double weight = 1.0;               ///< the least max-min weight among its flows (SM reads)
    std::vector<double> sm_in;         ///< [gpu]: its flows that GPU's SMs read (its SM-read resource)
    bool any = false;
  };
  KindFlows kinds[5];

  /// The resources of copies (cx = copies[d] when the copies run) and a collective's flows (`sm_in`:
  /// per GPU the flows on its SM-read resource; null with `flows`).
  std::vector<TwoClassResource> resources(const NodeSpec& node, const std::vector<double>* flows, bool copying,
                                          const std::vector<double>* sm_in = nullptr) const {
    std::vector<TwoClassResource> res;
    for (std::size_t g = 0; g < copy_beta.size(); ++g) {  // SM-read resources (model/routes.hpp sm_read_copy_cost)
      const double cx = copying ? copy_beta[g] : 0.0, cy = sm_in ? (*sm_in)[g] : 0.0;
      if (routes.sm_read_copy_cost(int(g)) > 0 && cx + cy > 0) res.push_back({cx, cy, node.collective_flow_bytes_per_s});
    }
    for (std::size_t li = 0; li < node.links.size(); ++li) {
      const LinkSpec& link = node.links[li];
      auto cx = [&](std::size_t d) { return copying ? copies[d] : 0.0; };
      auto cy = [&](std::size_t d) { return flows ? (*flows)[d] : 0.0; };
      const std::size_t ab = 2 * li, ba = 2 * li + 1;
      const bool ab_busy = cx(ab) + cy(ab) > 0, ba_busy = cx(ba) + cy(ba) > 0;
      if (!ab_busy && !ba_busy) continue;
      const bool both = ab_busy && ba_busy;  // under-duplex capacities apply (sim/topology.hpp)
      const double cap_ab = both && link.a_to_b_under_duplex_bytes_per_s > 0 ? link.a_to_b_under_duplex_bytes_per_s
                                                                              : link.a_to_b_bytes_per_s;
      const double cap_ba = both && link.b_to_a_under_duplex_bytes_per_s > 0 ? link.b_to_a_under_duplex_bytes_per_s
                                                                              : link.b_to_a_bytes_per_s;
      if (ab_busy) res.push_back({cx(ab), cy(ab), cap_ab});
      if (ba_busy) res.push_back({cx(ba), cy(ba), cap_ba});
      if (link.duplex_bytes_per_s > 0) res.push_back({cx(ab) + cx(ba), cy(ab) + cy(ba), link.duplex_bytes_per_s});
    }
    return res;
  }
};

WorkloadLinkModel::WorkloadLinkModel(const NodeSpec& node, const Workload& w)
    : node_(node), w_(w), r_(std::make_unique<Resources>(node)) {
  r_->copies.assign(2 * node.links.size(), 0.0);
  const int host = r_->routes.find_vertex("host");
  for (int rank = 0; rank < executed_ranks(w, node); ++rank) {
    const std::vector<int>* path = r_->routes.host_path(host, r_->routes.find_vertex("gpu" + std::to_string(rank)));
    if (!path) throw std::invalid_argument("link model: no host path to gpu" + std::to_string(rank));
    for (int d : *path) r_->copies[d] += 1;
  }
  r_->copy_beta.assign(std::size_t(node.gpu_count), 0.0);
  for (int rank = 0; rank < std::min(executed_ranks(w, node), node.gpu_count); ++rank)
    r_->copy_beta[std::size_t(rank)] = r_->routes.sm_read_copy_cost(rank);
  const auto [x, y] = fill_two_classes(r_->resources(node, nullptr, true), node.copy_engine_bytes_per_s, 0.0, 1.0);
  (void)y;
  copy_alone_bytes_per_s_ = x;
}

WorkloadLinkModel::~WorkloadLinkModel() = default;

CollectiveShare WorkloadLinkModel::share(CollectiveKind kind, double buffer_bytes, double copy_cap_bytes_per_s) const {
  if (!(buffer_bytes > 0)) throw std::invalid_argument("link model: buffer must be > 0 bytes");
  if (!(copy_cap_bytes_per_s >= 0)) throw std::invalid_argument("link model: copy cap must be ≥ 0");
  Resources::KindFlows& k = r_->kinds[static_cast<int>(kind)];
  if (!k.ready) {
    k.flows.assign(2 * node_.links.size(), 0.0);
    k.sm_in.assign(std::size_t(node_.gpu_count), 0.0);
    const bool proxy = node_.collective == CollectiveBackend::pcie_proxy;
    const int host = r_->routes.find_vertex("host");
    auto vertex = [&](int end) { return end == kHostEnd ? host : r_->routes.find_vertex("gpu" + std::to_string(end)); };
    for (const PeerFlow& f : collective_peer_flows(w_, kind, 1.0, proxy)) {
      if (f.src == f.dst) continue;  // a group of one
      k.any = true;
      k.bytes_per_buffer_byte = std::max(k.bytes_per_buffer_byte, f.bytes);
      if (f.src == kHostEnd || f.dst == kHostEnd) {
        const std::vector<int>* path = r_->routes.host_path(vertex(f.src), vertex(f.dst));
        if (!path) throw std::invalid_argument("link model: no host path for the pcie_proxy collective");
        for (int d : *path) k.flows[d] += 1;
        if (f.src == kHostEnd) {  // read by the SMs
          k.weight = std::min(k.weight, r_->routes.sm_read_weight(f.dst));
          if (r_->routes.sm_read_copy_cost(f.dst) > 0) k.sm_in[std::size_t(f.dst)] += 1;
        }
        if (node_.collective_flow_bytes_per_s > 0)
          k.flow_cap_bytes_per_s = std::min(k.flow_cap_bytes_per_s, node_.collective_flow_bytes_per_s);
        continue;
      }
      std::string error;
      const NodeRoutes::Peer* p = r_->routes.peer(f.src, f.dst, &error);
      if (!p) throw std::invalid_argument(error);
      for (int d : p->directions) k.flows[d] += 1;
      k.flow_cap_bytes_per_s = std::min(k.flow_cap_bytes_per_s, p->flow_cap_bytes_per_s);
      k.weight = std::min(k.weight, p->weight);
      if (p->sm_read_gpu >= 0) k.sm_in[std::size_t(p->sm_read_gpu)] += 1;
    }
    k.ready = true;
  }
  const double x_bound = std::min(node_.copy_engine_bytes_per_s, copy_cap_bytes_per_s);
  CollectiveShare s;
  if (!k.any) {  // no flows: the copies run as alone, the collective pays its latency
    s.copy_bytes_per_s = x_bound > 0 ? std::min(copy_alone_bytes_per_s_, x_bound) : 0.0;
    s.collective_time_s = node_.collective_latency_s;
    return s;
  }
  const auto [x, y] =
      fill_two_classes(r_->resources(node_, &k.flows, x_bound > 0, &k.sm_in), x_bound, k.flow_cap_bytes_per_s, k.weight);
  s.copy_bytes_per_s = x;
  s.collective_flow_bytes_per_s = y;
  s.collective_time_s = node_.collective_latency_s + (y > 0 ? k.bytes_per_buffer_byte * buffer_bytes / y : kInf);
  return s;
}

double WorkloadLinkModel::share_cap_bytes_per_s(CollectiveKind kind, double buffer_bytes, double tolerance) const {
  const double limit = share(kind, buffer_bytes, 0.0).collective_time_s * (1.0 + std::max(tolerance, 0.0));
  double lo = 0, hi = node_.copy_engine_bytes_per_s;
  if (share(kind, buffer_bytes, hi).collective_time_s <= limit) return hi;
  for (int i = 0; i < 60; ++i) {  // bisection: the collective's time is non-decreasing in the cap
    const double mid = 0.5 * (lo + hi);
    (share(kind, buffer_bytes, mid).collective_time_s <= limit ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace chunkflow
