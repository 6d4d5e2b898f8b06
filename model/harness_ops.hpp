#pragma once
// The compute ops as chunkflow-hw executes them (hw/executor.cu op_linear, op_attention), so that
// the simulator predicts a harness run from what the harness ran. The harness runs the plan's GEMMs
// and attentions with the model's shapes, but its elementwise kernels are a synthetic dataflow that
// carries every weight into the final activation (hw/README.md "Dataflow"), not the architecture's
// norms, modulation and RoPE that StageCost::elementwise_bytes prices; its attention is the tiled
// fallback kernel (model/tiled_attention.hpp). Per rank, dt = dtype bytes, H = the hidden state's
// elements (the largest linear m × the model's hidden size d, hw/lowering.cpp hidden_rows):
//   linear [m×k]·[k×n]: input (RMSNorm of the hidden state, or a fold of the previous output: m·k
//                       read and written), bias (m·n read and written, when the linear has one),
//                       residual mix into the hidden state (H read and written, H of the output read):
//                       bytes dt·(2·m·k + 2·m·n·[bias] + 3·H), kernels 2 + [bias]
//   attention:          Q, K, V folded from the inputs (each read and written) and the mix:
//                       bytes dt·(2·(q + 2·kv)·hd·B·heads + 3·H), kernels 4; kernel: tiled
//   + per collective (not the FSDP all-gather), on the compute stage before it in the block: its
//     send buffer S filled by a fold of that stage's output: bytes 2·S, 1 kernel.
// Not priced: the gathers of linears that straddle chunk boundaries (they depend on the plan's
// chunks, not on the forward; hw/README.md "Linears straddling chunks").
#include <cstdint>
#include <vector>

#include "model/workload.hpp"

namespace chunkflow {

/// Re-prices the compute stages of `blocks` (a forward's blocks, ForwardCost::blocks, or its block
/// kinds) in place, by the formula above: their elementwise bytes and kernels become the harness's (all
/// streaming: its own kernels, hw/lowering.cpp; the eager class bytes are reset to 0),
/// and attentions use the tiled kernel with the tile the harness picks for these blocks' attentions.
/// Structure, shapes, FLOPs and weights are unchanged, so a plan built from the architecture's
/// costs keeps its ops and simulates with the harness's. Idempotent. `w` is the workload the blocks
/// were built from (its model's hidden size). Throws what architecture(w.model) throws.
void price_as_harness(std::vector<BlockCost>& blocks, const Workload& w);

/// Whether linear stage `st` carries a bias (its weight bytes exceed k·n elements; model/workload.cpp
/// puts weights and bias in weight_bytes): the harness adds it in a kernel of its own
/// (hw/lowering.cpp), and this file prices that kernel. The one predicate both use.
inline bool linear_has_bias(const StageCost& st) {
  return st.weight_bytes > double(st.gemm.k) * double(st.gemm.n) * double(st.dtype_bytes);
}

/// The score tile the harness uses for every attention of these blocks: tiled_attention_tile of
/// their largest batch·heads and head dim (one workspace per rank, hw/executor.cu).
int64_t harness_attention_tile(const std::vector<BlockCost>& blocks);

}  // namespace chunkflow
