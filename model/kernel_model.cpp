// The kernel-aware compute model; formulas in model/kernel_model.hpp.
#include "model/kernel_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace chunkflow {

namespace {

// CTA tiles cuBLAS/CUTLASS choose among for bf16 GEMMs, with the throughput a tile reaches
// relative to the largest one when the SMs are full. 128×256 is the largest Hopper warp-specialized
// tile (CUTLASS sm90 kernels); smaller tiles re-read more operand bytes per FLOP and reach less:
// 128×128 0.93, 64×128 0.80 (assumed). The heuristic picks the tile with the best product.
struct Tile {
  double m, n, intrinsic;
};
constexpr std::array<Tile, 3> kTiles = {{{128, 256, 1.0}, {128, 128, 0.93}, {64, 128, 0.80}}};

// Pipeline fill and epilogue per output tile, expressed as K elements of main loop: a tile of
// K = k runs at k / (k + kGemmKFill) of its steady rate. 256 = 4 iterations of a 64-deep K stage
// (assumed; a 8192³ GEMM, where MAMF is measured, loses 3 %).
constexpr double kGemmKFill = 256;

// Split-K: when a shape's output tiles fill less than one wave, cuBLAS splits the K loop over the
// idle SMs (each CTA one K slice; its partial sums reduced after, the reduction not priced): a
// split pays its own fill (kGemmKFill per slice). Splits up to 2 and slices at least 1024 deep:
// measured on H200 (traces/measured/nvidia-h200/kernels.json, 2026-11-26; each timed call less
// 10 µs of host dispatch, tests/test_kernel_model.cpp): 256×8960×1536 runs in 29.7 µs per call,
// which the unsplit tiles predict at 1.50× that and a split in 2 at 1.02×; splits of 4 or 8 would
// predict 256×13824×5120 and 256×12288×3072 1.25× and 1.2× too fast, and slices of 768 would
// predict 256×1536×1536 1.19× too fast (0.96 of it without).
constexpr int kMaxSplitK = 2;
constexpr double kMinSplitKSliceDepth = 1024;

// FlashAttention-3 paper (Shah et al. 2024, Fig. 5), H100 80GB SXM5, forward, head dim 128,
// non-causal, TFLOP/s at KV lengths 512 .. 16k (B·S = 16k, 16 heads):
constexpr std::array<double, 6> kSeqLen = {512, 1024, 2048, 4096, 8192, 16384};
constexpr std::array<double, 6> kFa3TflopS = {467, 565, 625, 638, 646, 648};
constexpr std::array<double, 6> kFa2TflopS = {309, 350, 362, 368, 370, 370};  // FlashAttention-2, same figure
// SageAttention: "about 2.1 times" FlashAttention-2 (Zhang et al. 2024, SageAttention abstract),
// INT8 QKᵀ; applied to the FA2 curve of the GPU.
constexpr double kSageOverFa2 = 2.1;
// Head dims other than 128: FlashAttention papers report hd 64 at roughly 0.8× the hd-128 rate
// (fewer FLOPs per loaded tile); assumed linear in between, no gain above 128.
constexpr double kHeadDim64Factor = 0.8;

// Piecewise-linear interpolation in log2(S), flat above 16k; below 512 (outside the figure) the
// rate falls as sqrt(S/512) (assumed: fixed per-tile work over fewer KV blocks).
double curve_at(const std::array<double, 6>& y, double s) {
  if (s <= kSeqLen.front()) return y.front() * std::sqrt(std::max(s, 1.0) / kSeqLen.front());
  if (s >= kSeqLen.back()) return y.back();
  const double x = std::log2(s);
  for (size_t i = 1; i < kSeqLen.size(); ++i) {
    if (s <= kSeqLen[i]) {
      const double x0 = std::log2(kSeqLen[i - 1]), x1 = std::log2(kSeqLen[i]);
      return y[i - 1] + (y[i] - y[i - 1]) * (x - x0) / (x1 - x0);
    }
  }
  return y.back();
}

bool is_hopper(const NodeSpec& node) { return node.gpu_architecture == "hopper"; }

// Attention CTA tiling (forward, head dim 128, non-causal). FlashAttention-2
// (csrc/flash_attn/src/flash_fwd_launch_template.h run_mha_fwd_hdim128): kBlockM = 128 query rows,
// 4 warps, 128×64 tiles (64 KB shared memory) on sm80/sm90 and 128×32 (48 KB) on sm86/sm89, chosen
// there so that "we get 2 CTAs per SM"; taken as 2 resident CTAs per SM on every GPU (assumed for
// sm80/sm90: shared memory allows 3, the 4-warp CTA's registers are assumed to allow 2).
// FlashAttention-3 (hopper/): 128-row query tiles, three warpgroups (producer + 2 consumers) with
// most of the 228 KB of shared memory: 1 CTA per SM; on sm90 without split-KV it launches a
// persistent scheduler (hopper/flash_fwd_launch_template.h UsePersistentScheduler; for non-causal
// StaticPersistentTileScheduler, one CTA per SM striding over the tiles), so the tiles still finish
// in ⌈tiles / SMs⌉ rounds. SDPA's flash backend and Sage as FA2.
constexpr double kAttentionBlockM = 128;
constexpr double kFa2CtasPerSm = 2, kFa3CtasPerSm = 1;
constexpr double kCurveCtas = 2048;  // FA3 paper Fig. 5 shapes: 16 heads × 16k / 128 query blocks

// Share of the CTA slots busy over a kernel's waves: c / (⌈c / slots⌉ · slots).
double wave_fill(double ctas, double slots) { return ctas / (std::ceil(ctas / slots) * slots); }

}  // namespace

AttentionKernel resolve_attention_kernel(AttentionKernel requested, const NodeSpec& node) {
  switch (requested) {
    case AttentionKernel::automatic:
      return node.gpu_architecture.empty() || is_hopper(node) ? AttentionKernel::fa3 : AttentionKernel::fa2;
    case AttentionKernel::fa3:
      return node.gpu_architecture.empty() || is_hopper(node) ? AttentionKernel::fa3 : AttentionKernel::fa2;
    case AttentionKernel::sdpa:
      return AttentionKernel::fa2;
    default:
      return requested;
  }
}

bool attention_kernel_runs_on(AttentionKernel requested, const NodeSpec& node) {
  return requested != AttentionKernel::fa3 || node.gpu_architecture.empty() || is_hopper(node);
}

namespace {

double raw_shape_factor(const GemmShape& g, const NodeSpec& node) {
  const double sms = double(std::max(node.sm_count, 1));
  double best = 0;
  for (const Tile& t : kTiles) {
    const double tiles = std::ceil(double(g.m) / t.m) * std::ceil(double(g.n) / t.n);
    for (int split = 1; split <= kMaxSplitK; ++split) {
      // Split-K: only into SMs a single wave leaves idle, each slice at least kMinSplitKSliceDepth deep.
      if (split > 1 && (tiles * split > sms || double(g.k) / split < kMinSplitKSliceDepth)) break;
      const double ctas = tiles * split;
      const double slice_k = double(g.k) / split;
      const double waves = std::ceil(ctas / sms);
      best = std::max(best, t.intrinsic * ctas / (waves * sms) * slice_k / (slice_k + kGemmKFill));
    }
  }
  return best;
}

}  // namespace

double gemm_shape_factor(const GemmShape& g, const NodeSpec& node) {
  if (g.m <= 0 || g.k <= 0 || g.n <= 0) return 1.0;
  if (node.sm_count <= 0) return 1.0;  // a GPU described without its SMs: no shape refinement
  // node.gemm_efficiency is measured on large square GEMMs (8192³: systems-and-hardware.md §3,
  // MAMF scans in gpu-catalogue.md §2.1), which already pay their own quantization and fill: the
  // factor is relative to that shape, capped at 1.
  const GemmShape reference{8192, 8192, 8192};
  return std::min(1.0, raw_shape_factor(g, node) / raw_shape_factor(reference, node));
}

double gemm_efficiency(const GemmShape& g, const NodeSpec& node) {
  return node.gemm_efficiency * gemm_shape_factor(g, node);
}

double attention_kernel_factor(const AttentionShape& a, AttentionKernel kernel, const NodeSpec& node) {
  const AttentionKernel k = resolve_attention_kernel(kernel, node);
  const bool hopper = node.gpu_architecture.empty() || is_hopper(node);
  // node.attention_efficiency is the GPU's best kernel at long sequences: FA3 on Hopper, FA2 elsewhere.
  const std::array<double, 6>& best = hopper ? kFa3TflopS : kFa2TflopS;
  const bool shape_known = a.q_tokens > 0 && a.kv_tokens > 0;
  const double s = shape_known ? double(a.kv_tokens) : kSeqLen.back();
  double f = 0;
  if (hopper && k != AttentionKernel::fa3) {
    // FA2 on Hopper issues mma.sync, not wgmma: its rate is capped per SM at what it reaches on
    // H100 SXM (370 TFLOP/s over 132 SMs at 16k, burst clocks; × 743/794.5 sustained, the MSMF/MAMF
    // ratio of gpu-catalogue.md §2.1), and never above the FA3 curve of the GPU. On a Hopper part
    // with a cut tensor rate per SM (H20: 148 TFLOP/s on 78 SMs) the cap does not bind.
    const double fa3 = curve_at(kFa3TflopS, s) / kFa3TflopS.back();
    f = fa3;
    if (node.sm_count > 0 && node.attention_efficiency > 0 && node.peak_flop_per_s > 0) {
      const double cap_flop_per_s = curve_at(kFa2TflopS, s) * 1e12 / 132.0 * double(node.sm_count) * (743.0 / 794.5);
      f = std::min(fa3, cap_flop_per_s / (node.attention_efficiency * node.peak_flop_per_s));
    } else {
      f = curve_at(kFa2TflopS, s) / kFa3TflopS.back();
    }
  } else {
    const std::array<double, 6>& mine = k == AttentionKernel::fa3 ? kFa3TflopS : kFa2TflopS;
    f = curve_at(mine, s) / best.back();
  }
  if (k == AttentionKernel::sage) f *= kSageOverFa2;
  if (shape_known && node.sm_count > 0) {
    // Wave quantization: one CTA per kAttentionBlockM query rows per (batch, head), run in waves of
    // SMs × CTAs resident per SM; a partly filled last wave (or fewer CTAs than slots) leaves SMs
    // idle. The curves were measured at 2048 CTAs (FA3 paper Fig. 5: 16 heads, B·S = 16k, 16k/128
    // query blocks per head), which pay their own quantization: the factor is relative to that
    // count, capped at 1, as the GEMM shape factor is relative to 8192³.
    const double ctas = double(a.batch) * double(a.heads) * std::ceil(double(a.q_tokens) / kAttentionBlockM);
    const double slots = double(node.sm_count) * (k == AttentionKernel::fa3 ? kFa3CtasPerSm : kFa2CtasPerSm);
    f *= std::min(1.0, wave_fill(ctas, slots) / wave_fill(kCurveCtas, slots));
  }
  if (a.head_dim > 0 && a.head_dim < 128)
    f *= kHeadDim64Factor + (1.0 - kHeadDim64Factor) * std::max(0.0, double(a.head_dim - 64)) / 64.0;
  return f;
}

double attention_efficiency(const AttentionShape& a, AttentionKernel kernel, const NodeSpec& node) {
  return node.attention_efficiency * attention_kernel_factor(a, kernel, node);
}

namespace {

// Eager elementwise kernels by access class, measured on an H200 (traces/measured/nvidia-h200/
// kernels.json, 2026-11-26, PyTorch 2.11+cu130 eager, bf16, one call between CUDA events, median of
// 10): slope of time on the HBM bytes counted as model/architecture.cpp counts them, over 4608×3072,
// 32760×1536, 32760×5120 and 75600×5120 (least squares; intercepts 9.7–25 µs = launch + host
// dispatch per call):
//   residual add x + y (r2 r2 w2):                        4.39 TB/s  (0.91 of 4.8: streaming, the
//     node's hbm_efficiency 0.9)
//   F.layer_norm (r2 w2; PyTorch's row-wise LayerNorm kernel): 3.10 TB/s
//   x·(1+scale)+shift, scale and shift [d] (two r2 w2 kernels with a stride-0 operand, which
//     TensorIterator runs on its non-vectorized path):    1.70 TB/s
// Per SM or per byte? The H100 SXM (traces/measured/nvidia-h100-80gb-hbm3/kernels.json, same
// PyTorch build) has the H200's SMs and clock and 0.70 of its DRAM bandwidth; its slopes:
//   residual add 3.07, GELU-tanh 2.98 TB/s (0.92, 0.89 of 3.35: streaming, like the H200's add)
//   F.layer_norm 2.01 TB/s: 0.65 of the H100's add where the H200's was 0.71 of its own, and far
//     below the H200's 3.10 on the same SMs: DRAM-bound, not SM-bound. PyTorch's
//     vectorized_layer_norm_kernel_impl (aten/src/ATen/native/cuda/layer_norm_kernel.cu) reads the
//     row once for the Welford statistics and again to normalize, then writes it: three row
//     transfers for the two the op's bytes count (r2 w2), so 2/3 of the counted rate (H100 2.01
//     predicted vs 2.01 measured, H200 2.88 vs 3.10: 0.65 and 0.71 of each GPU's add). The 2/3 is
//     that mechanism's figure, which the H100 meets and the H200 beats by 7 %; whether the second
//     read reaches DRAM (a 6–20 KB row may still sit in L1 or L2) is not measured (ncu's
//     dram__bytes_read on F.layer_norm would tell). The RMSNorm means that the op tables count as
//     row reductions (x.pow(2).mean(-1), one read) are priced the same way: assumed, not measured.
//   x·(1+scale)+shift 1.59 TB/s: 0.94 of the H200's 1.70 on the same SMs, where a DRAM-bound kernel
//     would have dropped to 0.70 of it (1.19): limited per SM (an index computation and a narrow,
//     non-vectorized load per element on TensorIterator's stride-0 path), so it scales with
//     SMs × clock, and a GPU whose DRAM bandwidth per SM-clock is below that rate streams it.
//     Per SM per clock on the H200 (132 SMs, model/catalogue/gpus.json; maximum SM clock 1.98 GHz,
//     assumed to hold during these memory-bound kernels): 1.70e12 / (132 · 1.98e9) = 6.50 B.
// GELU-tanh on the H200 measured 3.68 TB/s, 0.84 of the add: left streaming (its test tolerance
// covers it; on the H100 it streams at 0.97 of the add).
constexpr double kH200Sms = 132;
constexpr double kH200SmClockHz = 1.98e9;
constexpr double kH200BroadcastBytesPerS = 1.70e12;
/// Row transfers a row-reduction kernel counts (read, write) over the ones it makes (read for the
/// statistics, read to normalize, write): see above.
constexpr double kRowReductionCountedOverMoved = 2.0 / 3.0;

}  // namespace

double elementwise_bytes_per_sm_clock(ElementwiseAccess access) {
  switch (access) {
    case ElementwiseAccess::streaming:
      return 0.0;
    case ElementwiseAccess::row_reduction:
      return 0.0;
    case ElementwiseAccess::broadcast:
      return kH200BroadcastBytesPerS / (kH200Sms * kH200SmClockHz);
  }
  return 0.0;
}

double elementwise_bytes_per_s(ElementwiseAccess access, const NodeSpec& node) {
  const double streaming = node.hbm_efficiency * node.hbm_bytes_per_s;
  if (access == ElementwiseAccess::row_reduction) return kRowReductionCountedOverMoved * streaming;
  const double per_sm_clock = elementwise_bytes_per_sm_clock(access);
  if (per_sm_clock <= 0 || node.sm_count <= 0 || !(node.sm_clock_hz > 0)) return streaming;
  return std::min(streaming, per_sm_clock * double(node.sm_count) * node.sm_clock_hz);
}

double elementwise_memory_time_s(const StageCost& stage, const NodeSpec& node) {
  const double row_reduction = stage.elementwise_row_reduction_bytes;
  const double broadcast = stage.elementwise_broadcast_bytes;
  const double streaming = stage.elementwise_bytes - row_reduction - broadcast;
  // The class bytes are parts of elementwise_bytes: a caller that set the total without them left
  // stale parts (StageCost), which must not be priced silently.
  if (streaming < -1e-9 * stage.elementwise_bytes - 1e-3)
    throw std::logic_error("elementwise_memory_time_s: stage " + stage.name +
                           " has more row-reduction and broadcast bytes than elementwise bytes");
  double t = 0;
  if (streaming > 0) t += streaming / elementwise_bytes_per_s(ElementwiseAccess::streaming, node);
  if (row_reduction > 0) t += row_reduction / elementwise_bytes_per_s(ElementwiseAccess::row_reduction, node);
  if (broadcast > 0) t += broadcast / elementwise_bytes_per_s(ElementwiseAccess::broadcast, node);
  return t;
}

double elementwise_time_s(const StageCost& stage, const NodeSpec& node) {
  return elementwise_memory_time_s(stage, node) + double(stage.elementwise_kernels) * node.compute_launch_s;
}

int stage_kernels(const StageCost& stage) {
  return (stage.stage.kind == BlockStage::Kind::all_to_all ? 0 : 1) + stage.elementwise_kernels;
}

}  // namespace chunkflow
