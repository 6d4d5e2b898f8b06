#pragma once
// What the offload planner knows of how one rank's H2D copies share its host link with a Ulysses
// all-to-all: a first-order, closed-form version of the simulator's max-min sharing
// (sim/maxmin.hpp) for the symmetric case the planner plans for (every rank copies the same way at
// the same time). Source: shared/reference/systems-and-hardware.md §3 (per-direction capacities,
// the duplex coupling of concurrent H2D + D2H, the copy-engine and SM-driven caps) and §5 (max-min
// fairness by progressive filling); code-review-3fa5e28.md §2.2 (the duplex headroom a capped copy
// can use without slowing the all-to-all).
//
// The model, per rank r, P = Ulysses degree, S = the all-to-all's per-rank buffer:
//   routed nodes: m_in / m_out flows of S/P bytes cross r's link towards / away from the GPU, each
//                 capped at the transport's per-flow rate (model/routes.hpp collective_host_link_use:
//                 0/0 on NVLink and NVSwitch nodes, where the collective never touches PCIe);
//   pcie_proxy:   one flow each way carrying (P−1)/P·S bytes (one GPU stands for the group).
//   The copy is one flow on the H2D direction capped at min(copy engine, cap c).
//   Resources: H2D direction A, D2H direction B (their under-duplex capacities when both directions
//   carry flows), duplex D (0: none):
//     x + m_in·y ≤ A,   m_out·y ≤ B,   x + (m_in + m_out)·y ≤ D,   x ≤ min(CE, c),   y ≤ f
//   (by symmetry every collective flow has the same rate y: each crosses one rank's D2H and another's
//   H2D; an approximation where the class mixes weights, see WorkloadLinkModel). Max-min fair rates x (copy) and y (one collective flow) by weighted progressive filling:
//   at level L the copy runs at L and a collective flow at w·L, w the flows' max-min weight (SM
//   reads of staged bytes: model/routes.hpp sm_read_weight, < 1; P2P: 1), as sim/maxmin.hpp does.
//   The all-to-all takes collective_latency_s + (bytes per flow) / y.
#include <memory>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// Rates while one all-to-all and (optionally) one capped copy share a rank's host link.
struct CollectiveShare {
  double copy_bytes_per_s = 0;        ///< the copy's rate during the all-to-all (0 without a copy)
  double collective_flow_bytes_per_s = 0;  ///< one collective flow's rate
  double collective_time_s = 0;       ///< latency + bytes per flow / that rate
};

/// Rates of one all-to-all of per-rank buffer `buffer_bytes` (> 0) at Ulysses degree `P` (≥ 2) on
/// rank `rank`'s host link, sharing it with one H2D copy capped at `copy_cap_bytes_per_s`
/// (+∞ = only the copy engine's cap; 0 = no copy). Model and source above. Throws
/// std::invalid_argument for P < 2, a non-positive buffer or a negative cap.
CollectiveShare share_with_collective(const NodeSpec& node, int rank, int P, double buffer_bytes,
                                      double copy_cap_bytes_per_s);

/// The largest copy cap (bytes/s) under which the all-to-all keeps its rate alone within a relative
/// slowdown `tolerance` (≥ 0): the duplex/link headroom the all-to-all leaves (code-review §2.2:
/// D − 2·y_max on 2xh100-pcie). 0 when the all-to-all leaves no room even at that tolerance; the
/// copy engine's rate when the collective does not touch the copy's link direction.
double share_cap_bytes_per_s(const NodeSpec& node, int rank, int P, double buffer_bytes, double tolerance);

/// The link model of one workload's collectives on a routed node, every executed rank doing the
/// same at the same time (the planner's symmetric assumption): the general form of the model
/// above, for every collective kind, group layout (Ulysses, ring, TP, FSDP, parallel CFG) and
/// topology (shared PCIe-switch uplinks, two sockets, NVLink). Source: as above
/// (systems-and-hardware.md §3, §5); the flows of each collective are model/collective_flows.hpp's,
/// routed as the simulator routes them (model/routes.hpp).
///
/// Two flow classes with one rate each: the copies (one H2D flow per executed rank, host → its GPU,
/// capped at min(copy engine, c)) at rate x, and the collective's flows at rate y (capped at the
/// smallest per-flow transport cap among them). Every link direction d any of them crosses is a
/// resource: k_d·x + m_d·y ≤ cap_d (k_d copies and m_d collective flows cross d; a link carrying
/// flows both ways uses its under-duplex capacities), and a link with a duplex capacity D adds
/// Σ over both directions ≤ D; a GPU whose SMs read staged host memory adds its SM-read resource
/// (model/routes.hpp sm_read_copy_cost: β·x + its reads' y ≤ collective_flow_bytes_per_s). Max-min
/// fair (x, y) by weighted progressive filling (the collective class at the least weight of its
/// flows, model/routes.hpp sm_read_weight); the collective takes collective_latency_s + (bytes per
/// flow) / y. On a symmetric node (every rank alike) with one weight among the collective's flows
/// this is the simulator's max-min allocation; elsewhere it prices every copy at the most loaded
/// one's rate, and where a class mixes weights (the pcie_proxy's outbound flow has weight 1, its
/// inbound one w) or one direction binds only part of the class it forces one rate on all of it,
/// which differs from the simulator when a PCIe duplex capacity or the D2H direction binds.
/// The copies' rate alone (no collective) is the same filling without the collective class: on a
/// node whose GPUs share a PCIe switch uplink, ranks that copy at once split it.
/// Not thread-safe: share() caches each collective kind's flows on first use (one per planner).
class WorkloadLinkModel {
 public:
  /// The routes of `node` (memoised, model/routes.hpp shared_node_routes) and the ranks executed_ranks(w, node) runs. Throws
  /// std::invalid_argument for a node whose routes cannot be built or a pair with no path;
  /// InputError from executed_ranks for a layout the node cannot hold.
  WorkloadLinkModel(const NodeSpec& node, const Workload& w);
  ~WorkloadLinkModel();
  WorkloadLinkModel(const WorkloadLinkModel&) = delete;
  WorkloadLinkModel& operator=(const WorkloadLinkModel&) = delete;

  /// One rank's H2D copy rate (bytes/s) while every executed rank copies and no collective runs.
  double copy_alone_bytes_per_s() const { return copy_alone_bytes_per_s_; }

  /// Rates while the collective of kind `kind` with per-rank buffer `buffer_bytes` (> 0; a
  /// collective StageCost's all_to_all_buffer_bytes) runs and every executed rank copies capped at
  /// `copy_cap_bytes_per_s` (+∞ = only the copy engine's cap; 0 = no copies). A collective with no
  /// flows (Ulysses degree 1) takes its latency. Throws std::invalid_argument for a non-positive
  /// buffer or a negative cap.
  CollectiveShare share(CollectiveKind kind, double buffer_bytes, double copy_cap_bytes_per_s) const;

  /// The largest copy cap under which that collective keeps its time alone within a relative
  /// slowdown `tolerance` (≥ 0); the copy engine's rate when the copies never slow it (as
  /// share_cap_bytes_per_s above).
  double share_cap_bytes_per_s(CollectiveKind kind, double buffer_bytes, double tolerance) const;

  struct Resources;  ///< the link directions and duplex couplings (model/link_model.cpp)

 private:
  const NodeSpec& node_;
  const Workload& w_;
  std::unique_ptr<Resources> r_;
  double copy_alone_bytes_per_s_ = 0;
};

}  // namespace chunkflow
