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
//   elementwise:       t = Σ_class bytes_class / (f_class · η_hbm · BW_hbm) + kernels · launch
//     f_class: the share of the streaming rate η_hbm · BW_hbm an eager PyTorch kernel of that access
//     class reaches (streaming 1, row reduction 0.71, broadcast 0.39), measured on an H200 and
//     applied to every GPU as that ratio; fused (compiled) ops stream. Not yet applied to the
//     stages: forward_cost still sums each op's bytes unweighted into StageCost::elementwise_bytes
//     (all at the streaming rate); weighting them moves the Ada records the wrong way (README
//     "Checked against an H200", notes/issue-10.md Session 10b).
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

/// Share of the streaming HBM rate (node.hbm_efficiency · hbm_bytes_per_s) that an eager PyTorch
/// elementwise kernel of access class `access` reaches, in (0, 1]: streaming 1, row_reduction 0.71
/// (LayerNorm), broadcast 0.39 (x·(1+scale)+shift). Measured on an H200,
/// traces/measured/nvidia-h200/kernels.json (PyTorch 2.11 eager): least-squares slope of time on
/// bytes over 4 sizes (4608×3072 … 75600×5120 bf16), the intercept being launch and host dispatch:
/// residual add 4.39 TB/s, LayerNorm 3.10, modulation 1.70 (8 B per element in its two
/// full-size kernels); each class's slope over the residual add's. One ratio for every GPU.
double elementwise_access_fraction(ElementwiseAccess access);

/// Bytes per element of `op` that a streaming kernel would move in the time `op` takes: eager,
/// streaming bytes + row-reduction bytes / f_row_reduction + broadcast bytes / f_broadcast
/// (elementwise_access_fraction); compiled (`fused`), its fused bytes (fused kernels stream).
double elementwise_streaming_bytes_per_element(const ElementwiseOp& op, bool fused);

/// Time of memory-bound elementwise work: `streaming_bytes` (bytes priced at the streaming rate;
/// elementwise_streaming_bytes_per_element gives an op's) / (hbm_efficiency · hbm_bytes_per_s)
/// + kernels · launch.
double elementwise_time_s(double streaming_bytes, int kernels, const NodeSpec& node);

/// Kernel launches of a stage: 1 (its GEMM or attention; 0 for all-to-all) + its elementwise kernels.
int stage_kernels(const StageCost& stage);

}  // namespace chunkflow
