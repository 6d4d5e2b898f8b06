#pragma once
// The cost of chunkflow-hw's labelled fallback attention (hw/kernels.cu attention_forward), so that
// the simulator prices the kernel the harness runs when it predicts a chunkflow-hw run
// (`--attention tiled`; issue 13 §3: every op the harness times is an op the simulator prices).
//
// The kernel, for `rows` = batch·heads heads of head dim hd, q query and kv key tokens, tile t:
//   per q tile (tq ≤ t rows):   init (writes the fp32 accumulator, 4·rows·tq·hd B) and finish (reads it,
//                               writes bf16 O: 6·rows·tq·hd B);
//   per (q tile, kv tile) pair, e = rows·tq·tk score elements:
//     S = Q·Kᵀ    strided-batched cuBLAS GEMM {m = rows·tq, k = hd, n = tk}, fp32 out:
//                 max(2·e·hd / (η_gemm · P), (4·e + 2·rows·(tq + tk)·hd) / BW)
//     softmax     online_softmax_kernel: reads S twice (max pass, exp pass), writes bf16 P, rescales
//                 the accumulator: (10·e + 8·rows·tq·hd) / BW
//     O += P·V    strided-batched GEMM {m = rows·tq, k = tk, n = hd}, fp32 accumulate:
//                 max(2·e·hd / (η_gemm · P), (2·e + 8·rows·tq·hd + 2·rows·tk·hd) / BW)
// with η_gemm = gemm_efficiency (model/kernel_model.hpp), P = node.peak_flop_per_s,
// BW = node.hbm_efficiency · node.hbm_bytes_per_s; the sum is multiplied by
// node.tiled_attention_scale (1 uncalibrated; `chunkflow calibrate` fits it on the harness's
// attention bench). No launch term: the harness launches the kernels from a CUDA graph, and what the
// gaps between them cost is in the calibrated scale.
// On an H200 (2026-11-26, tile 1024, stream-launched bench at 1k–32k tokens) the measured times
// were 1.27–1.31× this sum at 6 and at 12 heads; inside the graph-launched runs 1.31× at 12 heads
// (FLUX) and 1.16× at 6 (Wan 81 frames): unexplained, a scale fitted on one does not fit both.
// The second H200 contact (2026-11-26 23:34 UTC, bench graph-launched;
// traces/measured/nvidia-h200-2026-11-26-2334) shows a trend a scale cannot follow: measured / this
// sum is 1.45–1.51 at 1 × 1 tiles, 1.22–1.26 at 4 × 4, 1.17–1.22 at 16 × 16, and 1.15 in the Wan 81-frame
// runs (32 × 32), at 6 and 12 heads alike. A term per query tile fits it: scale 1.19 plus 10.1 µs
// per query tile matches the bench's 8 points within 6.3 % (the scale alone, 1.30: 13.9 %) and
// puts the four held-out Wan 81-frame runs at +0.2 to +1.5 % (now +6.7 to +8.0 %). Not adopted:
// the same fit moves FLUX 1024² from −2.0 to −4.0 % (no-offload) and the graph-launched chunkflow
// runs to −9.8 %: FLUX's attention op (4608 tokens, 5 × 5 tiles with 512-token edges, 12 heads)
// took 1.514 ms in the no-offload run, the fit gives 1.467 (the kernel 1.406 plus the op's folds and
// mix, 0.061; model/harness_ops.hpp), −3.1 %, where the scale alone gives +1.9 % and so offsets
// the run's under-predicted linears (−2.6 ms a step). The held-out mean over that folder's 27 runs
// would go from 4.88 to 4.99 % and the max from 8.41 to 9.83 %, at the gate's edge: the fit waits
// for a bench with edge tiles at 12 heads and for the linears' gap to be understood.
#include <cstdint>

namespace chunkflow {

struct NodeSpec;        // model/node.hpp
struct AttentionShape;  // model/workload.hpp (kept out so that hw/kernels.cu can include this)

/// Largest score tile the harness uses, in tokens (hw/kernels.cu AttentionTile::choose_tile).
inline constexpr int64_t kTiledAttentionMaxTile = 1024;
/// Default workspace bound of one score tile, in bytes (hw/executor.hpp attention_tile_bytes).
inline constexpr int64_t kTiledAttentionWorkspaceBytes = int64_t(256) << 20;

/// Workspace of the tiled kernel for `rows` heads, tile t and head dim hd, in bytes: fp32 scores
/// rows·t², bf16 probabilities rows·t², fp32 accumulator rows·t·hd, row max and sum rows·t each,
/// plus 256 B of alignment per part. Inputs ≥ 0.
int64_t tiled_attention_workspace_bytes(int64_t rows, int64_t tile, int64_t head_dim);

/// The tile the harness picks: the largest power of two ≤ kTiledAttentionMaxTile whose workspace
/// fits `budget_bytes`, at least 16. `rows` is the largest batch·heads of the plan's attentions and
/// `head_dim` the largest head dim (one workspace serves every attention of a rank).
int64_t tiled_attention_tile(int64_t rows, int64_t head_dim, int64_t budget_bytes = kTiledAttentionWorkspaceBytes);

/// Seconds of one tiled attention of shape `a` with score tile `tile` on `node` (formula above,
/// times node.tiled_attention_scale). 0 for an empty shape; `tile` ≤ 0 means
/// tiled_attention_tile(a's rows, a's head dim).
double tiled_attention_time_s(const AttentionShape& a, int64_t tile, const NodeSpec& node);

}  // namespace chunkflow
