#pragma once
// The flows an op puts on the topology: the one definition the executor runs and the lower bound
// (sim/bound.hpp) counts. Source: shared/DESIGN.md "The physics the simulator models";
// systems-and-hardware.md §3, §5.
#include <vector>

#include "model/node.hpp"
#include "runtime/step_plan.hpp"
#include "sim/topology.hpp"

namespace chunkflow {

struct FlowSpec {
  const Topology::Route* route = nullptr;  ///< resources it uses (owned by the Topology)
  double bytes = 0;
  double bound_bytes_per_s = 0;            ///< per-flow cap (copy engine, transport, plan cap)
};

/// The flow of an H2D op: host → gpu<rank>, `op.bytes`, capped at the copy engine's rate or the
/// op's rate_cap_bytes_per_s when lower.
FlowSpec h2d_flow(const PlanOp& op, const NodeSpec& node, const Topology& topology);

/// The flows of one all-to-all (any op of its group; per-rank buffer S = op.bytes, degree
/// P = the workload's Ulysses degree):
///  pcie_proxy: (P−1)/P·S out to the host and the same back over GPU 0's link, each capped at
///              collective_flow_bytes_per_s;
///  otherwise (direct): S/P from every rank to every other, each pair on its peer path and at the
///              per-flow cap of the transport NCCL would pick for it (Topology::peer_path).
/// Empty for P = 1.
std::vector<FlowSpec> collective_flows(const PlanOp& op, const StepPlan& plan, const NodeSpec& node,
                                       const Topology& topology);

}  // namespace chunkflow
