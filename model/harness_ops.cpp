// chunkflow-hw's compute ops, priced; formulas in model/harness_ops.hpp.
#include "model/harness_ops.hpp"

#include <algorithm>

#include "model/architecture.hpp"
#include "model/tiled_attention.hpp"

namespace chunkflow {

int64_t harness_attention_tile(const std::vector<BlockCost>& blocks) {
  int64_t max_rows = 0, max_head_dim = 0;
  for (const BlockCost& b : blocks)
    for (const StageCost& st : b.stages)
      if (st.stage.kind == BlockStage::Kind::attention) {
        max_rows = std::max(max_rows, st.attention.batch * st.attention.heads);
        max_head_dim = std::max(max_head_dim, st.attention.head_dim);
      }
  return tiled_attention_tile(max_rows, max_head_dim);
}

void price_as_harness(std::vector<BlockCost>& blocks, const Workload& w) {
  const double d = double(architecture(w.model).hidden);
  int64_t max_m = 1;
  for (const BlockCost& b : blocks)
    for (const StageCost& st : b.stages)
      if (st.stage.kind == BlockStage::Kind::linear) max_m = std::max(max_m, st.gemm.m);
  const double hidden_elems = double(max_m) * d;
  const int64_t tile = harness_attention_tile(blocks);
  for (BlockCost& b : blocks)
    for (StageCost& st : b.stages) {
      const double dt = double(st.dtype_bytes);
      // The harness's own kernels (hw/lowering.cpp) stream: no eager broadcast or row-reduction
      // bytes survive the re-pricing below.
      st.elementwise_row_reduction_bytes = 0;
      st.elementwise_broadcast_bytes = 0;
      if (st.stage.kind == BlockStage::Kind::linear) {
        const double m = double(st.gemm.m), k = double(st.gemm.k), n = double(st.gemm.n);
        const bool bias = linear_has_bias(st);
        st.elementwise_bytes = dt * (2.0 * m * k + (bias ? 2.0 * m * n : 0.0) + 3.0 * hidden_elems);
        st.elementwise_kernels = bias ? 3 : 2;
      } else if (st.stage.kind == BlockStage::Kind::attention) {
        const AttentionShape& a = st.attention;
        const double heads = double(a.batch) * double(a.heads), hd = double(a.head_dim);
        st.elementwise_bytes =
            dt * (2.0 * (double(a.q_tokens) + 2.0 * double(a.kv_tokens)) * hd * heads + 3.0 * hidden_elems);
        st.elementwise_kernels = 4;
        st.attention_kernel = AttentionKernel::tiled;
        st.attention_tile = tile;
      }
    }
  // Packs: the compute op a collective depends on fills its send buffer at its end (a fold of its
  // output: the buffer written, as much read), one kernel per collective (hw/lowering.cpp packs).
  // The FSDP all-gather sends the weight shard in place: no pack.
  for (BlockCost& b : blocks) {
    StageCost* producer = nullptr;
    for (StageCost& st : b.stages) {
      if (st.stage.kind != BlockStage::Kind::all_to_all) {
        producer = &st;
      } else if (producer && st.collective != CollectiveKind::all_gather && st.all_to_all_buffer_bytes > 0) {
        producer->elementwise_bytes += 2.0 * st.all_to_all_buffer_bytes;
        producer->elementwise_kernels += 1;
      }
    }
  }
}

}  // namespace chunkflow
