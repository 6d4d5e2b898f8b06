#pragma once
// The kernel-aware compute model behind stage_compute_time_s (issue 10 §2): per op, not per block.
//
//   GEMM [m×k]·[k×n]:  t = max(2mkn / (η_gemm(m,k,n) · P), bytes(m,k,n) / BW_hbm) + launch
//     η_gemm = node.gemm_efficiency · min(1, f(m,k,n) / f(8192,8192,8192))
//     (node.gemm_efficiency is measured on large square GEMMs, which pay their own f)
//     f      = best over CTA tiles τ and K splits s of
//              intrinsic(τ) · c / (⌈c / SMs⌉ · SMs) · (k/s) / (k/s + k_fill),  c = tiles · s,
//              tiles = ⌈m/τ_m⌉·⌈n/τ_n⌉  (tile and wave quantization; small m or n leave SMs idle;
//              split-K s ∈ {1, 2}, s = 2 only within one wave (c ≤ SMs) and for k/2 ≥ 1024)
//   attention:         t = 4·B·H·q·kv·hd / (η_attn · P) + launch
//     η_attn = node.attention_efficiency · curve(kernel, kv) / curve(best kernel of the GPU, ∞)
//              · min(1, fill(CTAs) / fill(2048)) · head-dim factor,  CTAs = B·H·⌈q/128⌉,
//              fill(c) = c / (⌈c / slots⌉ · slots), slots = SMs × CTAs per SM (FA2 2, FA3 1)
//              (wave quantization relative to the shapes the curves were measured at)
//   elementwise:       t = B_s / R_s + B_r / R_r + B_b / R_b + kernels · launch
//     B_r, B_b: bytes of eager PyTorch row-reduction and broadcast kernels, B_s the rest (streaming;
//     fused ops and the harness's kernels stream). R_s = η_hbm · BW_hbm; R_r = 2/3 · R_s (the
//     LayerNorm kernel reads each row twice, statistics then normalize, and writes it once: three
//     row transfers for the two its bytes count); R_b = min(R_s, ρ_b · SMs · f_SM): those eager
//     kernels are limited per SM (index arithmetic and narrow, non-vectorized loads), not by DRAM,
//     so a GPU with little DRAM bandwidth per SM (Ada) streams them and one with much (Hopper) does
//     not. ρ_b (bytes per SM per clock) fitted on the H200 points of
//     traces/measured/nvidia-h200/kernels.json (elementwise_bytes_per_sm_clock); the H100's points
//     (traces/measured/nvidia-h100-80gb-hbm3/kernels.json, same SMs and clock, 0.70 of the DRAM
//     bandwidth) tell the two apart: LayerNorm slows with the DRAM, the broadcast kernels do not.
// Sources: every table and constant in kernel_model.cpp names its source or says "assumed" or
// "fitted on <record ids>" (traces/published/).
#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// The kernel a stage runs on `node`: `automatic` → FA3 on Hopper, FA2 elsewhere; FA3 requested on a
/// GPU that is not Hopper falls back to FA2 (FA3 needs wgmma/TMA); sdpa → FA2 kernels.
AttentionKernel resolve_attention_kernel(AttentionKernel requested, const NodeSpec& node);

/// False only for FA3 on a GPU whose architecture is known and is not Hopper (FlashAttention-3 needs
/// Hopper's wgmma/TMA; FA3 paper §1). Scenario input refuses such a request instead of silently
/// pricing FA2.
bool attention_kernel_runs_on(AttentionKernel requested, const NodeSpec& node);

/// Shape factor of a GEMM in (0, 1] (tile and wave quantization, split-K, pipeline fill):
/// η_gemm / node.gemm_efficiency.
/// 1 when the shape is unknown (m, k or n ≤ 0) or node.sm_count is 0.
double gemm_shape_factor(const GemmShape& g, const NodeSpec& node);

/// Achieved / peak of a GEMM: node.gemm_efficiency · gemm_shape_factor.
double gemm_efficiency(const GemmShape& g, const NodeSpec& node);

/// Attention throughput relative to node.attention_efficiency for `kernel` at the shape's KV length
/// (and wave quantization of its CTAs over the SMs), from the FlashAttention-3 paper's H100 curves;
/// 1 for an unknown shape with the GPU's best kernel. Sage returns > 1 (INT8 QKᵀ).
double attention_kernel_factor(const AttentionShape& a, AttentionKernel kernel, const NodeSpec& node);

/// Achieved / peak of an attention: node.attention_efficiency · attention_kernel_factor.
double attention_efficiency(const AttentionShape& a, AttentionKernel kernel, const NodeSpec& node);

/// Bytes per SM per clock cycle an eager PyTorch kernel of access class `access` moves when the SM,
/// not DRAM, limits it: broadcast 6.5 (x·(1+scale)+shift's two full-size kernels with a stride-0
/// operand); 0 for streaming and row_reduction (no per-SM limit: LayerNorm ran at 3.10 TB/s on the
/// H200 and 2.01 on the H100, same SMs and clock). Fitted on the H200 points of
/// traces/measured/nvidia-h200/kernels.json (PyTorch 2.11 eager, bf16): least-squares slope of time
/// on counted bytes over 4608×3072 … 75600×5120 (modulation 1.70 TB/s; the intercept is launch and
/// host dispatch) / (132 SMs × 1.98 GHz, the H200's SM count and maximum clock,
/// model/catalogue/gpus.json; the clock during the run was not recorded). The H100's 1.59 TB/s on
/// the same SMs (0.94 of it, where DRAM would give 0.70) is the check.
double elementwise_bytes_per_sm_clock(ElementwiseAccess access);

/// Rate of eager elementwise kernels of class `access` on `node`, counted bytes/s: streaming
/// η_hbm · BW_hbm; row_reduction 2/3 of it (three row transfers for two counted; the header);
/// broadcast min(η_hbm · BW_hbm, elementwise_bytes_per_sm_clock · sm_count · sm_clock_hz), the
/// streaming rate when the node's SM count or clock is unknown (0).
double elementwise_bytes_per_s(ElementwiseAccess access, const NodeSpec& node);

/// HBM time of a stage's elementwise work, launches excluded: streaming bytes (elementwise_bytes −
/// row-reduction − broadcast bytes) at the streaming rate, each class's bytes at its rate
/// (elementwise_bytes_per_s). The one place a stage's elementwise bytes become time. Throws
/// std::logic_error when the class bytes exceed elementwise_bytes (stale parts, StageCost).
double elementwise_memory_time_s(const StageCost& stage, const NodeSpec& node);

/// elementwise_memory_time_s + stage.elementwise_kernels · node.compute_launch_s.
double elementwise_time_s(const StageCost& stage, const NodeSpec& node);

/// Kernel launches of a stage: 1 (its GEMM or attention; 0 for all-to-all) + its elementwise kernels.
int stage_kernels(const StageCost& stage);

}  // namespace chunkflow
