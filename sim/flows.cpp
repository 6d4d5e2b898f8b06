// Flow construction; see flows.hpp.
#include "sim/flows.hpp"

#include <algorithm>

namespace chunkflow {

FlowSpec h2d_flow(const PlanOp& op, const NodeSpec& node, const Topology& topology) {
  const double cap = op.rate_cap_bytes_per_s > 0 ? std::min(op.rate_cap_bytes_per_s, node.copy_engine_bytes_per_s)
                                                 : node.copy_engine_bytes_per_s;
  return {&topology.route(Topology::kHostVertex, Topology::gpu_vertex(op.rank)), op.bytes, cap};
}

std::vector<FlowSpec> collective_flows(const PlanOp& op, const StepPlan& plan, const NodeSpec& node,
                                       const Topology& topology) {
  const double buffer = op.bytes;
  const int P = plan.workload.ulysses_degree;
  std::vector<FlowSpec> flows;
  if (P < 2) return flows;
  if (node.collective == CollectiveBackend::pcie_proxy) {
    const double bytes = buffer * (P - 1) / P;
    const double cap = node.collective_flow_bytes_per_s;
    flows.push_back({&topology.route(Topology::gpu_vertex(0), Topology::kHostVertex), bytes, cap});
    flows.push_back({&topology.route(Topology::kHostVertex, Topology::gpu_vertex(0)), bytes, cap});
  } else {
    for (int a = 0; a < P; ++a)
      for (int b = 0; b < P; ++b)
        if (a != b) {
          const Topology::PeerPath& peer = topology.peer_path(a, b);
          flows.push_back({&peer.route, buffer / P, peer.flow_cap_bytes_per_s});
        }
  }
  return flows;
}

}  // namespace chunkflow
