// Flow construction; see flows.hpp.
#include "sim/flows.hpp"

#include <algorithm>

namespace chunkflow {

FlowSpec h2d_flow(const PlanOp& op, const NodeSpec& node, const Topology& topology) {
  const double cap = op.rate_cap_bytes_per_s > 0 ? std::min(op.rate_cap_bytes_per_s, node.copy_engine_bytes_per_s)
                                                 : node.copy_engine_bytes_per_s;
  return {&topology.h2d_route(op.rank), op.bytes, cap};
}

std::vector<FlowSpec> collective_flows(const PlanOp& op, const StepPlan& plan, const NodeSpec& node,
                                       const Topology& topology) {
  const double buffer = op.bytes;
  const Workload& w = plan.workload;
  const CollectiveKind kind = op.stage >= 0 ? plan.stage_of(op).collective : CollectiveKind::all_to_all;
  std::vector<FlowSpec> flows;
  auto peer_flow = [&](int a, int b, double bytes) {
    const Topology::PeerPath& peer = topology.peer_path(a, b);
    flows.push_back({&peer.route, bytes, peer.flow_cap_bytes_per_s});
  };
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
  // A ring: member i sends `bytes` to member i+1 (mod n).
  auto ring = [&](const std::vector<int>& m, double bytes) {
    for (std::size_t i = 0; i < m.size(); ++i) peer_flow(m[i], m[(i + 1) % m.size()], bytes);
  };
  switch (kind) {
    case CollectiveKind::all_to_all: {
      const int P = w.ulysses_degree;
      if (P < 2) return flows;
      if (node.collective == CollectiveBackend::pcie_proxy) {
        const double bytes = buffer * (P - 1) / P;
        const double cap = node.collective_flow_bytes_per_s;
        flows.push_back({&topology.route(Topology::gpu_vertex(0), Topology::kHostVertex), bytes, cap});
        flows.push_back({&topology.route(Topology::kHostVertex, Topology::gpu_vertex(0)), bytes, cap});
        return flows;
      }
      for_each_group(&RankCoordinates::ulysses, P, [&](const std::vector<int>& m) {
        for (int a = 0; a < P; ++a)
          for (int b = 0; b < P; ++b)
            if (a != b) peer_flow(m[a], m[b], buffer / P);
      });
      return flows;
    }
    case CollectiveKind::ring_kv:
      for_each_group(&RankCoordinates::ring, w.ring_degree,
                     [&](const std::vector<int>& m) { ring(m, (w.ring_degree - 1) * buffer); });
      return flows;
    case CollectiveKind::all_reduce: {
      const double T = w.tp_degree;
      for_each_group(&RankCoordinates::tp, w.tp_degree,
                     [&](const std::vector<int>& m) { ring(m, 2 * (T - 1) / T * buffer); });
      return flows;
    }
    case CollectiveKind::all_gather: {
      const int n = gpus_used(w);
      std::vector<int> all(n);
      for (int i = 0; i < n; ++i) all[i] = i;
      ring(all, (n - 1) * buffer);
      return flows;
    }
    case CollectiveKind::cfg_gather: {
      const int half = gpus_used(w) / 2;
      for (int g = 0; g < half; ++g) {
        peer_flow(g, g + half, buffer);
        peer_flow(g + half, g, buffer);
      }
      return flows;
    }
  }
  return flows;
}

}  // namespace chunkflow
