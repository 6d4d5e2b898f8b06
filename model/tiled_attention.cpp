// chunkflow-hw's tiled attention, priced; formulas in model/tiled_attention.hpp.
#include "model/tiled_attention.hpp"

#include <algorithm>

#include "model/kernel_model.hpp"
#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

int64_t tiled_attention_workspace_bytes(int64_t rows, int64_t tile, int64_t head_dim) {
  const int64_t t2 = rows * tile * tile;
  return t2 * 4 + t2 * 2 + rows * tile * head_dim * 4 + 2 * rows * tile * 4 + 5 * 256;
}

int64_t tiled_attention_tile(int64_t rows, int64_t head_dim, int64_t budget_bytes) {
  int64_t t = kTiledAttentionMaxTile;
  while (t > 16 && tiled_attention_workspace_bytes(rows, t, head_dim) > budget_bytes) t /= 2;
  return t;
}

namespace {

// One (q tile, kv tile) pair of tq × tk scores per head, in seconds (unscaled).
double pair_time_s(double rows, double tq, double tk, double hd, const NodeSpec& node) {
  const double bw = node.hbm_efficiency * node.hbm_bytes_per_s;
  const double e = rows * tq * tk;
  const double flop = 2.0 * e * hd;  // each of the two GEMMs
  auto gemm_s = [&](int64_t m, int64_t k, int64_t n, double bytes) {
    return std::max(flop / (gemm_efficiency(GemmShape{m, k, n}, node) * node.peak_flop_per_s), bytes / bw);
  };
  const double scores_s = gemm_s(int64_t(rows * tq), int64_t(hd), int64_t(tk), 4.0 * e + 2.0 * rows * (tq + tk) * hd);
  const double softmax_s = (10.0 * e + 8.0 * rows * tq * hd) / bw;
  const double pv_s = gemm_s(int64_t(rows * tq), int64_t(tk), int64_t(hd), 2.0 * e + 8.0 * rows * tq * hd + 2.0 * rows * tk * hd);
  return scores_s + softmax_s + pv_s;
}

}  // namespace

double tiled_attention_time_s(const AttentionShape& a, int64_t tile, const NodeSpec& node) {
  const int64_t rows = a.batch * a.heads;
  if (rows <= 0 || a.q_tokens <= 0 || a.kv_tokens <= 0 || a.head_dim <= 0) return 0.0;
  const int64_t t = tile > 0 ? tile : tiled_attention_tile(rows, a.head_dim);
  const double bw = node.hbm_efficiency * node.hbm_bytes_per_s;
  const double hd = double(a.head_dim), r = double(rows);
  // Full tiles and the one partial edge tile along each axis: every pair of the same (tq, tk) costs
  // the same, so the sum runs over at most 2 × 2 kinds of pairs.
  const int64_t q_full = a.q_tokens / t, q_edge = a.q_tokens % t;
  const int64_t k_full = a.kv_tokens / t, k_edge = a.kv_tokens % t;
  const std::pair<int64_t, int64_t> q_tiles[2] = {{q_full, t}, {q_edge > 0 ? 1 : 0, q_edge}};
  const std::pair<int64_t, int64_t> k_tiles[2] = {{k_full, t}, {k_edge > 0 ? 1 : 0, k_edge}};
  double total = 0;
  for (const auto& [nq, tq] : q_tiles) {
    if (nq == 0) continue;
    double per_q = (10.0 * r * double(tq) * hd) / bw;  // init + finish
    for (const auto& [nk, tk] : k_tiles)
      if (nk > 0) per_q += double(nk) * pair_time_s(r, double(tq), double(tk), hd, node);
    total += double(nq) * per_q;
  }
  return node.tiled_attention_scale * total;
}

}  // namespace chunkflow
