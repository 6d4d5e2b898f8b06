// Peer flows of a collective; see collective_flows.hpp.
#include "model/collective_flows.hpp"

namespace chunkflow {

std::vector<PeerFlow> collective_peer_flows(const Workload& w, CollectiveKind kind, double buffer_bytes,
                                            bool pcie_proxy) {
  const double S = buffer_bytes;
  std::vector<PeerFlow> flows;
  // One group's ranks: every coordinate but `vary` fixed at those of `first`, `vary` over [0, n).
  auto group = [&](int first, int RankCoordinates::*vary, int n) {
    std::vector<int> members;
    RankCoordinates c = rank_coordinates(w, first);
    for (int i = 0; i < n; ++i) {
      c.*vary = i;
      members.push_back(rank_of(w, c));
    }
    return members;
  };
  // Every group of a degree-n dimension: the ranks whose coordinate `vary` is 0 lead one each.
  auto for_each_group = [&](int RankCoordinates::*vary, int n, const auto& f) {
    for (int g = 0; g < gpus_used(w); ++g)
      if (rank_coordinates(w, g).*vary == 0) f(group(g, vary, n));
  };
  // A ring: member i sends `bytes` to member i+1 (mod n); a group of one moves nothing.
  auto ring = [&](const std::vector<int>& m, double bytes) {
    if (m.size() < 2) return;
    for (std::size_t i = 0; i < m.size(); ++i) flows.push_back({m[i], m[(i + 1) % m.size()], bytes});
  };
  switch (kind) {
    case CollectiveKind::all_to_all: {
      const int P = w.ulysses_degree;
      if (P < 2) return flows;
      if (pcie_proxy) {
        const double bytes = S * (P - 1) / P;
        flows.push_back({0, kHostEnd, bytes});
        flows.push_back({kHostEnd, 0, bytes});
        return flows;
      }
      for_each_group(&RankCoordinates::ulysses, P, [&](const std::vector<int>& m) {
        for (int a = 0; a < P; ++a)
          for (int b = 0; b < P; ++b)
            if (a != b) flows.push_back({m[a], m[b], S / P});
      });
      return flows;
    }
    case CollectiveKind::ring_kv:
      for_each_group(&RankCoordinates::ring, w.ring_degree,
                     [&](const std::vector<int>& m) { ring(m, (w.ring_degree - 1) * S); });
      return flows;
    case CollectiveKind::all_reduce: {
      const double T = w.tp_degree;
      for_each_group(&RankCoordinates::tp, w.tp_degree, [&](const std::vector<int>& m) { ring(m, 2 * (T - 1) / T * S); });
      return flows;
    }
    case CollectiveKind::all_gather: {
      // One ring per TP coordinate over the ranks holding that TP shard (every rank without TP).
      const int n = fsdp_degree(w);
      for (int t = 0; t < w.tp_degree; ++t) {
        std::vector<int> members;
        for (int g = 0; g < gpus_used(w); ++g)
          if (rank_coordinates(w, g).tp == t) members.push_back(g);
        ring(members, (n - 1) * S);
      }
      return flows;
    }
    case CollectiveKind::cfg_gather: {
      const int half = gpus_used(w) / 2;
      for (int g = 0; g < half; ++g) {
        flows.push_back({g, g + half, S});
        flows.push_back({g + half, g, S});
      }
      return flows;
    }
  }
  return flows;
}

}  // namespace chunkflow
