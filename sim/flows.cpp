// Flow construction; see flows.hpp.
#include "sim/flows.hpp"

#include <algorithm>

#include "model/collective_flows.hpp"

namespace chunkflow {

std::vector<FlowSpec> collective_flows(const PlanOp& op, const StepPlan& plan, const NodeSpec& node,
                                       const Topology& topology) {
  const CollectiveKind kind = op.stage >= 0 ? plan.stage_of(op).collective : CollectiveKind::all_to_all;
  const bool proxy = node.collective == CollectiveBackend::pcie_proxy;
  std::vector<FlowSpec> flows;
  for (const PeerFlow& f : collective_peer_flows(plan.workload, kind, op.bytes, proxy)) {
    if (f.src == kHostEnd || f.dst == kHostEnd) {  // pcie_proxy: GPU 0 to host memory and back
      const std::string src = f.src == kHostEnd ? Topology::kHostVertex : Topology::gpu_vertex(f.src);
      const std::string dst = f.dst == kHostEnd ? Topology::kHostVertex : Topology::gpu_vertex(f.dst);
      // The inbound half is read from mapped host memory by the proxy kernel's SMs.
      const double weight = f.src == kHostEnd ? topology.sm_read_weight(f.dst) : 1.0;
      const Topology::Route& route = f.src == kHostEnd ? topology.sm_host_read_route(f.dst) : topology.route(src, dst);
      flows.push_back({&route, f.bytes, node.collective_flow_bytes_per_s, weight});
      continue;
    }
    const Topology::PeerPath& peer = topology.peer_path(f.src, f.dst);
    flows.push_back({&peer.route, f.bytes, peer.flow_cap_bytes_per_s, peer.weight});
  }
  return flows;
}

const std::vector<FlowSpec>& CollectiveFlowCache::flows(const PlanOp& op) {
  const int kind = op.stage >= 0 ? int(plan_.stage_of(op).collective) : -1;  // -1: collective_flows' default
  for (const Entry& e : entries_)
    if (e.kind == kind && e.bytes == op.bytes) return e.flows;
  entries_.push_back({kind, op.bytes, collective_flows(op, plan_, node_, topology_)});
  return entries_.back().flows;
}

}  // namespace chunkflow
