#pragma once
// The first-order analytical model of layerwise offload (mission statement; issue 2 §2):
//   T_comp = F_block / (η_comp · P_peak), with T_comp from stage_compute_time_s (GEMMs at the GEMM
//            efficiency or the HBM bound, attention at its own efficiency), so η_comp · P_peak is
//            the block's achieved rate F_block / T_comp
//   T_pref = B_pref / (η_pref · BW_h2d)
// with the collectives' bytes that arrive over the same host link counted against it:
//   prefetch is hidden iff  B_pref + B_coll_in ≤ η_pref · BW_h2d · T_comp
//   critical workload        F* = η_comp · P_peak · (B_pref + B_coll_in) / (η_pref · BW_h2d)
//   largest hideable prefetch B_hide = max(0, η_pref · BW_h2d · T_comp − B_coll_in)
#include <string>

#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// Compute time of one stage on one GPU, in seconds (model/kernel_model.hpp):
///  linear:    max(flop / (η_gemm(m,k,n) · peak), max(weight_bytes, GEMM bytes) / HBM) + launch
///  attention: flop / (η_attn(kernel, kv, occupancy) · peak) + launch
///  plus, for both, the stage's elementwise time (model/kernel_model.hpp elementwise_time_s: its
///  streaming, row-reduction and broadcast bytes each at their class's rate, + one launch per
///  elementwise kernel); 0 for all-to-all stages. A calibrated GEMM table replaces η_gemm and the HBM floor.
double stage_compute_time_s(const StageCost& stage, const NodeSpec& node);

/// Σ stage_compute_time_s over a block.
double block_compute_time_s(const BlockCost& block, const NodeSpec& node);

/// Bytes of a block's all-to-alls that arrive at one rank over its host link:
/// (P−1)/P · Σ buffers (both backends of NodeSpec::collective).
double collective_inbound_bytes(const BlockCost& block, int ulysses_degree);

struct AnalyticalResult {
  double block_flop = 0;             ///< mean per-rank block FLOPs (F_block)
  double block_weight_bytes = 0;     ///< mean bytes of one block (B_pref at resident fraction 0)
  double collective_inbound_bytes = 0; ///< mean per block (B_coll_in)
  double compute_time_s = 0;         ///< mean T_comp per block
  double prefetch_time_s = 0;        ///< mean T_pref per block at resident fraction 0
  double effective_flop_per_s = 0;   ///< η_comp · P_peak used for F*: F_block / T_comp (means)
  double h2d_bytes_per_s = 0;        ///< η_pref · BW_h2d
  double critical_flop = 0;          ///< F* per block
  double hideable_bytes = 0;         ///< B_hide per block (mean)
  std::string regime;                ///< "prefetch-bound" (F_block < F*) or "compute-bound"
  /// Smallest resident fraction whose remaining prefetch every block's compute hides:
  /// max over blocks of clamp(1 − B_hide(b)/B_block(b), 0, 1).
  double auto_resident_fraction = 0;
};

/// With η_pref · BW_h2d = node.h2d_bytes_per_s(0): one GPU's full rate, its link not shared.
AnalyticalResult analyze(const ForwardCost& cost, const NodeSpec& node, int ulysses_degree);

/// Bytes of every collective of a block (any kind: Ulysses all-to-all, ring attention's K/V pass,
/// TP all-reduce, FSDP all-gather, parallel CFG's gather) that arrive at rank 0, from the
/// collectives' peer flows (model/collective_flows.hpp): (U−1)/U·S for an all-to-all, (R−1)·S for
/// the ring's K/V pass, 2(T−1)/T·S for a TP all-reduce, (N−1)·S for an FSDP all-gather, S for the
/// CFG gather. For Ulysses alone it equals collective_inbound_bytes(block, U).
double collective_inbound_bytes(const BlockCost& block, const Workload& w);

/// η_pref · BW_h2d per GPU while every rank the workload executes on `node` prefetches at once
/// (bytes/s): model/link_model.hpp's WorkloadLinkModel::copy_alone_bytes_per_s, i.e. max-min
/// fair shares on the host routes (model/routes.hpp), min(copy engine, cap_d / k_d over every
/// link direction d that k_d copies cross). Two GPUs under one PCIe-switch uplink (8xh100-pcie)
/// get half the uplink each. pcie_proxy nodes (one GPU stands for the group): node.h2d_bytes_per_s(0).
/// Throws as WorkloadLinkModel's constructor (InputError for a layout the node cannot hold).
double shared_h2d_bytes_per_s(const NodeSpec& node, const Workload& w);

/// analyze() for workload `w`: B_coll_in counts every collective kind of its layout
/// (collective_inbound_bytes(block, w)); η_pref · BW_h2d is the per-GPU share
/// shared_h2d_bytes_per_s(node, w), not one GPU's full rate.
AnalyticalResult analyze(const ForwardCost& cost, const NodeSpec& node, const Workload& w);

}  // namespace chunkflow
