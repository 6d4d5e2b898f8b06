// Rank symmetry detection; derivation in symmetry.hpp.
#include "sim/symmetry.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "model/collective_flows.hpp"

namespace chunkflow {

namespace {

/// A collective flow list with its flows' ends (PeerFlow ranks, kHostEnd for the host).
struct FlowList {
  const std::vector<FlowSpec>* flows;
  std::vector<std::pair<int, int>> ends;
  std::unordered_map<long long, int> index_of;  ///< by ends, see key()
  std::vector<std::vector<int>> image;          ///< per generator: the index of each flow's image
};

long long key(int src, int dst, int ranks) { return (long long)(src + 1) * (ranks + 1) + (dst + 1); }

/// The resource permutation π under construction for one candidate σ (symmetry.hpp (i)–(iii)).
class ResourceMap {
 public:
  explicit ResourceMap(std::size_t resources) : to_(resources, -1), from_(resources, -1) {}
  /// Maps `a` onto `b` entry by entry (same length, same coefficients), consistently with every
  /// earlier call and injectively; false otherwise.
  bool match(const Topology::Route& a, const Topology::Route& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k) {
      const auto [ra, ca] = a[k];
      const auto [rb, cb] = b[k];
      if (ca != cb) return false;
      if (to_[std::size_t(ra)] < 0 && from_[std::size_t(rb)] < 0) {
        to_[std::size_t(ra)] = rb, from_[std::size_t(rb)] = ra;
      } else if (to_[std::size_t(ra)] != rb) {
        return false;
      }
    }
    return true;
  }
  /// (i): every mapped resource keeps its capacity; a mapped link direction maps onto a direction
  /// with the same under-duplex capacity, and where one is duplex-switched its reverse maps onto
  /// the image's reverse (or, unused by every flow, the image's reverse is unused too).
  bool keeps_capacities(const Topology& topology, const std::vector<int>& direction_of) const {
    const std::vector<double>& capacity = topology.resource_capacities();
    const std::vector<LinkDirection>& directions = topology.link_directions();
    for (std::size_t r = 0; r < to_.size(); ++r) {
      const int image = to_[r];
      if (image < 0) continue;
      if (capacity[r] != capacity[std::size_t(image)]) return false;
      const int d = direction_of[r], e = direction_of[std::size_t(image)];
      if ((d < 0) != (e < 0)) return false;
      if (d < 0) continue;
      const LinkDirection& dd = directions[std::size_t(d)];
      const LinkDirection& de = directions[std::size_t(e)];
      if (dd.under_duplex_bytes_per_s != de.under_duplex_bytes_per_s) return false;
      if (!(dd.under_duplex_bytes_per_s > 0)) continue;
      if (dd.reverse < 0 || de.reverse < 0) return false;
      const int rev = directions[std::size_t(dd.reverse)].resource, rev_image = directions[std::size_t(de.reverse)].resource;
      if (to_[std::size_t(rev)] >= 0 ? to_[std::size_t(rev)] != rev_image : from_[std::size_t(rev_image)] >= 0) return false;
    }
    return true;
  }

 private:
  std::vector<int> to_, from_;
};

/// Uses of several routes summed: coefficients of a resource added, in order of first appearance.
void add_route(Topology::Route& sum, const Topology::Route& route) {
  for (const auto& [r, a] : route) {
    auto it = std::find_if(sum.begin(), sum.end(), [resource = r](const auto& u) { return u.first == resource; });
    if (it != sum.end()) it->second += a;
    else sum.emplace_back(r, a);
  }
}

int find_root(std::vector<int>& parent, int i) {
  while (parent[std::size_t(i)] != i) i = parent[std::size_t(i)] = parent[std::size_t(parent[std::size_t(i)])];
  return i;
}

}  // namespace

const std::vector<FlowSpec>& RankSymmetry::orbit_flows(const std::vector<FlowSpec>& flows) const {
  for (const Orbits& o : collective_orbits)
    if (o.flows == &flows) return o.orbit_flows;
  throw std::logic_error("RankSymmetry::orbit_flows: a collective flow list the detection did not see");
}

const std::vector<int>& RankSymmetry::orbit_sizes(const std::vector<FlowSpec>& flows) const {
  for (const Orbits& o : collective_orbits)
    if (o.flows == &flows) return o.orbit_sizes;
  throw std::logic_error("RankSymmetry::orbit_sizes: a collective flow list the detection did not see");
}

std::unique_ptr<const RankSymmetry> detect_rank_symmetry(const StepPlan& plan, const NodeSpec& node, const Topology& topology,
                                                 CollectiveFlowCache& flow_cache, int rank_copy_ops) {
  const int n = plan.ops.empty() ? 0 : plan.info.ranks;
  if (n < 2 || plan.ops.size() % std::size_t(n) != 0) return nullptr;
  // A calibrated slowdown reads whether a copy or collective of the op's rank is in flight at its
  // start; at an instant where one starts as the compute op does, the executor's order of that
  // instant's events decides, and that order is not the same on every rank.
  if (node.compute_slowdown_h2d != 0 || node.compute_slowdown_collective != 0) return nullptr;
  auto sym = std::make_unique<RankSymmetry>();
  sym->ranks = n;
  sym->ops_per_rank = int(plan.ops.size() / std::size_t(n));
  const int m = sym->ops_per_rank;

  // Rank uniformity: each rank's ops in id order, field for field equal to rank 0's at the same
  // position, dependencies on its own ops at the positions of rank 0's.
  if (rank_copy_ops == m) {  // rank copies, as the caller found (validate): op j·m + k is rank j's k-th
    sym->ops_of_rank.resize(plan.ops.size());
    std::iota(sym->ops_of_rank.begin(), sym->ops_of_rank.end(), 0);
  } else {
    sym->ops_of_rank.assign(plan.ops.size(), -1);
    std::vector<int> position(plan.ops.size(), -1), count(std::size_t(n), 0);
    for (const PlanOp& op : plan.ops) {
      if (op.rank < 0 || op.rank >= n || count[std::size_t(op.rank)] >= m) return nullptr;
      position[std::size_t(op.id)] = count[std::size_t(op.rank)];
      sym->ops_of_rank[std::size_t(op.rank) * std::size_t(m) + std::size_t(count[std::size_t(op.rank)]++)] = op.id;
    }
    for (int j = 1; j < n; ++j)
      for (int k = 0; k < m; ++k) {
        const PlanOp& rep = plan.ops[std::size_t(sym->ops_of_rank[std::size_t(k)])];
        const PlanOp& op = plan.ops[std::size_t(sym->ops_of_rank[std::size_t(j) * std::size_t(m) + std::size_t(k)])];
        if (!same_op_fields(rep, op) || rep.deps.size() != op.deps.size()) return nullptr;
        for (std::size_t x = 0; x < op.deps.size(); ++x) {
          const int d = op.deps[x], d0 = rep.deps[x];
          if (plan.ops[std::size_t(d)].rank != j || plan.ops[std::size_t(d0)].rank != 0 ||
              position[std::size_t(d)] != position[std::size_t(d0)])
            return nullptr;
        }
      }
  }

  // The collective flow lists rank 0's collectives use, with their flows' ends.
  const bool proxy = node.collective == CollectiveBackend::pcie_proxy;
  std::vector<FlowList> lists;
  for (int k = 0; k < m; ++k) {
    const PlanOp& op = plan.ops[std::size_t(sym->ops_of_rank[std::size_t(k)])];
    if (op.kind != OpKind::collective) continue;
    const std::vector<FlowSpec>& flows = flow_cache.flows(op);
    if (std::any_of(lists.begin(), lists.end(), [&](const FlowList& l) { return l.flows == &flows; })) continue;
    const CollectiveKind kind = op.stage >= 0 ? plan.stage_of(op).collective : CollectiveKind::all_to_all;
    const std::vector<PeerFlow> peers = collective_peer_flows(plan.workload, kind, op.bytes, proxy);
    if (peers.size() != flows.size()) return nullptr;  // not the list collective_flows built
    FlowList list{&flows, {}, {}, {}};
    for (std::size_t f = 0; f < peers.size(); ++f) {
      const int src = peers[f].src, dst = peers[f].dst;
      if (src >= n || dst >= n || src < kHostEnd || dst < kHostEnd) return nullptr;  // a rank not executed
      list.ends.emplace_back(src, dst);
      if (!list.index_of.emplace(key(src, dst, n), int(f)).second) return nullptr;  // a pair twice
    }
    lists.push_back(std::move(list));
  }

  // σ_i for every rank i ≥ 1, verified on the routes.
  const std::size_t resources = topology.resource_capacities().size();
  std::vector<int> direction_of(resources, -1);
  for (std::size_t d = 0; d < topology.link_directions().size(); ++d)
    direction_of[std::size_t(topology.link_directions()[d].resource)] = int(d);
  std::vector<const Topology::Route*> h2d(static_cast<std::size_t>(n));
  try {
    for (int j = 0; j < n; ++j) h2d[std::size_t(j)] = &topology.h2d_route(j);
  } catch (const std::invalid_argument&) {
    return nullptr;
  }
  // σ's images of every list's flows, kept when σ is verified.
  std::vector<std::vector<int>> images(lists.size());
  auto verify = [&](const std::vector<int>& sigma) -> bool {
    ResourceMap pi(resources);
    for (int j = 0; j < n; ++j)
      if (!pi.match(*h2d[std::size_t(j)], *h2d[std::size_t(sigma[std::size_t(j)])])) return false;
    for (std::size_t l = 0; l < lists.size(); ++l) {
      const FlowList& list = lists[l];
      images[l].assign(list.ends.size(), -1);
      for (std::size_t f = 0; f < list.ends.size(); ++f) {
        const auto [src, dst] = list.ends[f];
        const int a = src == kHostEnd ? kHostEnd : sigma[std::size_t(src)];
        const int b = dst == kHostEnd ? kHostEnd : sigma[std::size_t(dst)];
        auto it = list.index_of.find(key(a, b, n));
        if (it == list.index_of.end()) return false;
        const FlowSpec& x = (*list.flows)[f];
        const FlowSpec& y = (*list.flows)[std::size_t(it->second)];
        if (x.bytes != y.bytes || x.bound_bytes_per_s != y.bound_bytes_per_s || x.weight != y.weight ||
            !pi.match(*x.route, *y.route))
          return false;
        images[l][f] = it->second;
      }
    }
    return pi.keeps_capacities(topology, direction_of);
  };
  // Candidates: every transposition (a b), j ↦ j XOR i (n a power of 2) and j ↦ j + i mod n; the
  // verified ones generate the group whose orbits on the ranks get one representative each.
  std::vector<std::vector<int>> candidates;
  std::vector<int> sigma(static_cast<std::size_t>(n));
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      std::iota(sigma.begin(), sigma.end(), 0);
      std::swap(sigma[std::size_t(a)], sigma[std::size_t(b)]);
      candidates.push_back(sigma);
    }
  for (int i = 1; i < n; ++i) {
    if ((n & (n - 1)) == 0) {
      for (int j = 0; j < n; ++j) sigma[std::size_t(j)] = j ^ i;
      candidates.push_back(sigma);
    }
    for (int j = 0; j < n; ++j) sigma[std::size_t(j)] = (j + i) % n;
    candidates.push_back(sigma);
  }
  std::vector<int> rank_parent(static_cast<std::size_t>(n));
  std::iota(rank_parent.begin(), rank_parent.end(), 0);
  for (const std::vector<int>& c : candidates)
    if (verify(c)) {
      sym->generators.push_back(c);
      for (std::size_t l = 0; l < lists.size(); ++l) lists[l].image.push_back(images[l]);
      for (int j = 0; j < n; ++j) {
        const int x = find_root(rank_parent, j), y = find_root(rank_parent, c[std::size_t(j)]);
        if (x != y) rank_parent[std::size_t(std::max(x, y))] = std::min(x, y);  // the root: the orbit's least rank
      }
    }
  sym->representative.resize(std::size_t(n));
  sym->orbit_size.assign(std::size_t(n), 0);
  for (int j = 0; j < n; ++j) ++sym->orbit_size[std::size_t(sym->representative[std::size_t(j)] = find_root(rank_parent, j))];
  for (int j = 0; j < n; ++j) sym->orbit_size[std::size_t(j)] = sym->orbit_size[std::size_t(sym->representative[std::size_t(j)])];
  int representatives = 0;
  for (int j = 0; j < n; ++j) representatives += sym->representative[std::size_t(j)] == j;
  if (representatives == n) return nullptr;  // no two ranks alike: nothing to save

  // The representative problem: the H2D copies' orbit and each list's orbits under the group.
  sym->h2d_routes.resize(std::size_t(n));
  for (int j = 0; j < n; ++j) add_route(sym->h2d_routes[std::size_t(sym->representative[std::size_t(j)])], *h2d[std::size_t(j)]);
  sym->simulated_ops.reserve(std::size_t(representatives) * std::size_t(m));  // exactly: m ops per rank
  for (const PlanOp& op : plan.ops)
    if (sym->representative[std::size_t(op.rank)] == op.rank) sym->simulated_ops.push_back(op.id);
  for (const FlowList& list : lists) {
    const std::size_t count_flows = list.ends.size();
    std::vector<int> parent(count_flows);
    std::iota(parent.begin(), parent.end(), 0);
    for (const std::vector<int>& image : list.image)
      for (std::size_t f = 0; f < count_flows; ++f) {
        const int a = find_root(parent, int(f)), b = find_root(parent, image[f]);
        if (a != b) parent[std::size_t(std::max(a, b))] = std::min(a, b);  // the root: the orbit's first flow
      }
    RankSymmetry::Orbits orbits;
    orbits.flows = list.flows;
    std::vector<int> slot(count_flows, -1);
    std::vector<Topology::Route*> orbit_route;
    for (std::size_t f = 0; f < count_flows; ++f) {
      const int root = find_root(parent, int(f));
      const FlowSpec& flow = (*list.flows)[f];
      if (slot[std::size_t(root)] < 0) {
        slot[std::size_t(root)] = int(orbits.orbit_flows.size());
        orbit_route.push_back(&sym->routes.emplace_back());
        orbits.orbit_flows.push_back({orbit_route.back(), flow.bytes, flow.bound_bytes_per_s, flow.weight});
        orbits.orbit_sizes.push_back(0);
      }
      const std::size_t o = std::size_t(slot[std::size_t(root)]);
      add_route(*orbit_route[o], *flow.route);
      ++orbits.orbit_sizes[o];
    }
    sym->collective_orbits.push_back(std::move(orbits));
  }
  return sym;
}

}  // namespace chunkflow
