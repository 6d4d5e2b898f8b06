#pragma once
// The flows an op puts on the topology: the one definition the executor runs and the lower bound
// (sim/bound.hpp) counts. Source: shared/DESIGN.md "The physics the simulator models";
// systems-and-hardware.md §3, §5.
#include <algorithm>
#include <deque>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/step_plan.hpp"
#include "sim/topology.hpp"

namespace chunkflow {

struct FlowSpec {
  const Topology::Route* route = nullptr;  ///< resources it uses (owned by the Topology)
  double bytes = 0;
  double bound_bytes_per_s = 0;            ///< per-flow cap (copy engine, transport, plan cap)
  double weight = 1.0;                     ///< max-min weight (SM reads: Topology::sm_read_weight)
};

/// The flow of an H2D op: host → gpu<rank>, `op.bytes`, capped at the copy engine's rate or the
/// op's rate_cap_bytes_per_s when lower.
/// (Inline: the executor and the bound ask once per copy, ~10^5 copies in a 1 MiB-chunk plan.)
inline FlowSpec h2d_flow(const PlanOp& op, const NodeSpec& node, const Topology& topology) {
  const double cap = op.rate_cap_bytes_per_s > 0 ? std::min(op.rate_cap_bytes_per_s, node.copy_engine_bytes_per_s)
                                                 : node.copy_engine_bytes_per_s;
  return {&topology.h2d_route(op.rank), op.bytes, cap};
}

/// The flows of one collective (any op of its group; per-rank buffer S = op.bytes), in NCCL's
/// algorithm shape, each flow on its GPU pair's peer path at the per-flow cap of the transport NCCL
/// would pick for it (Topology::peer_path). Groups and ranks as model/workload.hpp gpus_used:
/// rank = ((c·R + r)·U + u)·T + t; a ring visits its members in rank order. Time alone on links
/// of rate B per direction (α = collective_latency_s, paid once), against nccl-tests' busbw
/// definitions (NVIDIA/nccl-tests doc/PERFORMANCE.md: busbw = algbw × factor, algbw = size / t):
///  all_to_all (Ulysses, P = U): direct, S/P from every rank to every other of its group;
///      α + (P−1)/P·S / B when each rank's link carries its P−1 flows (busbw factor (P−1)/P, size S).
///      pcie_proxy: (P−1)/P·S out to the host and the same back over GPU 0's link, each capped at
///      collective_flow_bytes_per_s, the inbound one read by the SMs (weight sm_read_weight).
///      Empty for P = 1. SHM peer flows carry their path's weight (Topology::PeerPath::weight).
///  ring_kv (ring attention, R): member i sends its K/V block to i+1, R−1 blocks: (R−1)·S per flow;
///      α + (R−1)·S / B (SendRecv, factor 1, per ring step S).
///  all_reduce (TP, T): ring, 2(T−1)/T·S per flow (reduce-scatter then all-gather);
///      α + 2(T−1)/T·S / B (AllReduce: factor 2(n−1)/n, size S).
///  all_gather (FSDP, over the N = fsdp_degree ranks holding one TP shard, S = one shard): ring, (N−1)·S per flow;
///      α + (N−1)·S / B (AllGather: factor (n−1)/n, size N·S).
///  cfg_gather (parallel CFG): rank g and g + N/2 exchange S each way; α + S / B.
std::vector<FlowSpec> collective_flows(const PlanOp& op, const StepPlan& plan, const NodeSpec& node,
                                       const Topology& topology);

/// collective_flows for one (plan, node, topology), memoised: the flows depend on the op only
/// through its collective kind and op.bytes, so every op with the same pair gets the same vector
/// (a simulation starts each of its groups' flows, and the bound reads them, once per op otherwise).
/// The plan, node and topology must outlive it and not change.
class CollectiveFlowCache {
 public:
  CollectiveFlowCache(const StepPlan& plan, const NodeSpec& node, const Topology& topology)
      : plan_(plan), node_(node), topology_(topology) {}
  /// collective_flows(op, plan, node, topology); the reference stays valid while this cache lives.
  const std::vector<FlowSpec>& flows(const PlanOp& op);

 private:
  struct Entry {
    int kind;
    double bytes;
    std::vector<FlowSpec> flows;
  };
  const StepPlan& plan_;
  const NodeSpec& node_;
  const Topology& topology_;
  std::deque<Entry> entries_;  // few distinct (kind, bytes) per plan, searched in order; stable references
};

}  // namespace chunkflow
