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
//   H2D). Max-min fair rates x (copy) and y (one collective flow) by progressive filling.
//   The all-to-all takes collective_latency_s + (bytes per flow) / y.
#include "model/node.hpp"

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

}  // namespace chunkflow
