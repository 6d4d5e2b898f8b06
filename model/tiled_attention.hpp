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
//     3 launches; 2 per q tile.
// with η_gemm = gemm_efficiency (model/kernel_model.hpp), P = node.peak_flop_per_s,
// BW = node.hbm_efficiency · node.hbm_bytes_per_s, a launch = node.compute_launch_s.
// Checked on an H200 (traces/measured/nvidia-h200/bench/, 2026-11-26): with t = 1024 the model is
// within 3 % of the measured kernel at 1k–32k tokens; at t = 2048 it is 24 % fast (not explained:
// the harness caps the tile at kTiledAttentionMaxTile).
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

/// Seconds of one tiled attention of shape `a` with score tile `tile` on `node` (formula above);
/// launches included. 0 for an empty shape; `tile` ≤ 0 means tiled_attention_tile(a's rows, a's head dim).
double tiled_attention_time_s(const AttentionShape& a, int64_t tile, const NodeSpec& node);

}  // namespace chunkflow
