// The first-order analytical model of layerwise offload; formulas in model/analytical.hpp
// (mission statement, issue 2 §2). Per-stage compute times follow DESIGN.md "The physics":
// compute op time = FLOPs / (efficiency × peak), with a roofline floor on the weight read for
// linears (the per-sample modulation GEMMs are memory-bound, dit-architectures.md §5 roofline note).
#include "model/analytical.hpp"

#include <algorithm>

#include "model/collective_flows.hpp"
#include "model/kernel_model.hpp"
#include "model/link_model.hpp"
#include "model/tiled_attention.hpp"

namespace chunkflow {

double stage_compute_time_s(const StageCost& stage, const NodeSpec& node) {
  // Memory-bound non-GEMM ops priced inside this stage (norms, modulation, RoPE, activations,
  // residuals): each access class's bytes at its rate plus one launch each (model/kernel_model.hpp).
  const double elementwise_s = elementwise_time_s(stage, node);
  switch (stage.stage.kind) {
    case BlockStage::Kind::linear: {
      // A calibrated per-shape table (model/calibration.hpp) holds the measured time, memory
      // bound included: t = flop / (η(m) · peak) + launch.
      if (const GemmEfficiencyTable* table = node.gemm_table(stage.gemm.k, stage.gemm.n))
        return stage.flop / (table->efficiency_at(double(stage.gemm.m)) * node.peak_flop_per_s) + node.compute_launch_s +
               elementwise_s;
      // Kernel model: η by shape (wave quantization, pipeline fill), floored by the HBM traffic of
      // the weights (and, when the shape is known, the activations read and written).
      const double math_s = stage.flop / (gemm_efficiency(stage.gemm, node) * node.peak_flop_per_s);
      const double bytes = std::max(stage.weight_bytes, stage.gemm.m > 0 ? stage.gemm.bytes(stage.dtype_bytes) : 0.0);
      const double memory_s = bytes / node.hbm_bytes_per_s;
      return std::max(math_s, memory_s) + node.compute_launch_s + elementwise_s;
    }
    case BlockStage::Kind::attention:
      if (stage.attention_kernel == AttentionKernel::tiled)  // chunkflow-hw's fallback (graph-launched)
        return tiled_attention_time_s(stage.attention, stage.attention_tile, node) + elementwise_s;
      return stage.flop / (attention_efficiency(stage.attention, stage.attention_kernel, node) * node.peak_flop_per_s) +
             node.compute_launch_s + elementwise_s;
    case BlockStage::Kind::all_to_all:
      return 0.0;
  }
  return 0.0;
}

double block_compute_time_s(const BlockCost& block, const NodeSpec& node) {
  double total = 0;
  for (const StageCost& s : block.stages) total += stage_compute_time_s(s, node);
  return total;
}

double collective_inbound_bytes(const BlockCost& block, int ulysses_degree) {
  if (ulysses_degree <= 1) return 0.0;
  double buffers = 0;
  for (const StageCost& s : block.stages)
    if (s.stage.kind == BlockStage::Kind::all_to_all) buffers += s.all_to_all_buffer_bytes;
  return buffers * double(ulysses_degree - 1) / double(ulysses_degree);
}

double collective_inbound_bytes(const BlockCost& block, const Workload& w) {
  double inbound = 0;
  for (const StageCost& s : block.stages) {
    if (s.stage.kind != BlockStage::Kind::all_to_all || !(s.all_to_all_buffer_bytes > 0)) continue;
    for (const PeerFlow& f : collective_peer_flows(w, s.collective, s.all_to_all_buffer_bytes, false))
      if (f.dst == 0) inbound += f.bytes;
  }
  return inbound;
}

namespace {

/// analyze() with B_coll_in(b) from `inbound` and η_pref·BW_h2d = `h2d_bytes_per_s`.
template <class Inbound>
AnalyticalResult analyze_with(const ForwardCost& cost, const NodeSpec& node, const Inbound& inbound,
                              double h2d_bytes_per_s) {
  AnalyticalResult r;
  r.h2d_bytes_per_s = h2d_bytes_per_s;
  if (cost.blocks.empty()) {
    r.regime = "compute-bound";
    return r;
  }
  for (const BlockCost& b : cost.blocks) {
    const double compute_s = block_compute_time_s(b, node);
    const double coll_in = inbound(b);
    // B_hide(b) = max(0, η_pref·BW_h2d·T_comp(b) − B_coll_in(b))
    const double hide = std::max(0.0, r.h2d_bytes_per_s * compute_s - coll_in);
    r.block_flop += b.flop();
    r.block_weight_bytes += b.weight_bytes;
    r.collective_inbound_bytes += coll_in;
    r.compute_time_s += compute_s;
    r.hideable_bytes += hide;
    if (b.weight_bytes > 0)
      r.auto_resident_fraction = std::max(r.auto_resident_fraction, std::clamp(1.0 - hide / b.weight_bytes, 0.0, 1.0));
  }
  const double n = double(cost.blocks.size());
  r.block_flop /= n;
  r.block_weight_bytes /= n;
  r.collective_inbound_bytes /= n;
  r.compute_time_s /= n;
  r.hideable_bytes /= n;
  r.prefetch_time_s = r.block_weight_bytes / r.h2d_bytes_per_s;
  // η_comp·P_peak is the rate the block actually achieves, F_block / T_comp: it blends the GEMM
  // and attention efficiencies, the HBM bound of small GEMMs and launch costs, so that F* and the
  // regime agree with B_hide and the auto resident fraction (all from the same T_comp).
  r.effective_flop_per_s = r.compute_time_s > 0 ? r.block_flop / r.compute_time_s : 0.0;
  // F* = η_comp·P_peak·(B_pref + B_coll_in) / (η_pref·BW_h2d), on the means.
  r.critical_flop = r.effective_flop_per_s * (r.block_weight_bytes + r.collective_inbound_bytes) / r.h2d_bytes_per_s;
  r.regime = r.block_flop < r.critical_flop ? "prefetch-bound" : "compute-bound";
  return r;
}

}  // namespace

AnalyticalResult analyze(const ForwardCost& cost, const NodeSpec& node, int ulysses_degree) {
  return analyze_with(cost, node, [&](const BlockCost& b) { return collective_inbound_bytes(b, ulysses_degree); },
                      node.h2d_bytes_per_s(0));
}

double shared_h2d_bytes_per_s(const NodeSpec& node, const Workload& w) {
  if (node.collective == CollectiveBackend::pcie_proxy) return node.h2d_bytes_per_s(0);
  return WorkloadLinkModel(node, w).copy_alone_bytes_per_s();
}

AnalyticalResult analyze(const ForwardCost& cost, const NodeSpec& node, const Workload& w) {
  const double h2d = shared_h2d_bytes_per_s(node, w);
  if (!uses_layouts_beyond_ulysses(w))
    return analyze_with(cost, node, [&](const BlockCost& b) { return collective_inbound_bytes(b, w.ulysses_degree); }, h2d);
  return analyze_with(cost, node, [&](const BlockCost& b) { return collective_inbound_bytes(b, w); }, h2d);
}

}  // namespace chunkflow
