#pragma once
// Small kernels of the harness and the tiled attention (hw/README.md "Compute"). Internal to hw/.
// Every launcher checks its launch (cudaGetLastError) and throws DeviceError. Shapes are in
// elements, row-major; bf16 = __nv_bfloat16. All kernels are deterministic (fixed reduction
// orders, no atomics), which the bit-exact check relies on.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace chunkflow::hw {

using bf16 = __nv_bfloat16;

/// Spins one thread until *flag != 0 or `timeout_ns` passed (%globaltimer); writes 1 to
/// *timed_out on timeout. Holds a stream until the host has enqueued all work (nvbandwidth's
/// latch), bounded so that a full launch queue cannot deadlock the host.
void launch_spin_latch(const volatile int* flag, uint64_t timeout_ns, int* timed_out, cudaStream_t s);

/// Writes %globaltimer (ns, the GPU's global clock) to *t0, one thread: the start mark of a paced copy.
void launch_stamp_time(uint64_t* t0, cudaStream_t s);
/// One thread spins (with __nanosleep backoff) until %globaltimer ≥ *t0 + offset_ns: holds its
/// stream until the next sub-chunk of a paced copy is due. Occupies one warp of one SM meanwhile.
void launch_wait_until(const uint64_t* t0, uint64_t offset_ns, cudaStream_t s);

/// A copy of `bytes` on stream s at no more than `cap_bytes_per_s` (PlanOp::rate_cap_bytes_per_s;
/// 0 = no cap: one cudaMemcpyAsync). Paced copy: stamp t0; sub-chunk i (of ⌈bytes/sub⌉, each
/// `sub_chunk_bytes` but the last) starts no earlier than t0 + i·sub/cap; after the last, the
/// stream waits until t0 + bytes/cap. The copy therefore takes max(bytes/cap, what the link
/// gives) and never runs above the cap averaged over any window of one sub-chunk period, which is
/// the bound the simulator's max-min solver puts on the flow. `t0` is one device uint64 owned by
/// this copy (it must not be shared with a copy that may run at the same time). Throws
/// DeviceError on a failed call, std::invalid_argument for a negative cap or sub-chunk ≤ 0.
void enqueue_paced_copy(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind, double cap_bytes_per_s,
                        int64_t sub_chunk_bytes, uint64_t* t0, cudaStream_t s);

/// out[r, :] = in[r, :] / sqrt(mean(in[r, :]²) + 1e-6) for r < rows; `cols` per row, fp32 math.
void launch_rmsnorm(const bf16* in, bf16* out, int64_t rows, int64_t cols, cudaStream_t s);

/// Device-to-device copy of `bytes` on the SMs (a kernel, not cudaMemcpyAsync): a DMA copy would
/// queue on a copy engine behind the H2D prefetch copies in flight, stalling the compute stream
/// that issued it (seen on an H200, 2026-11-26: a gather waited for the next block's chunk copies,
/// 1–2 ms each; traces/measured/nvidia-h200/README.md). 16-byte accesses when dst ≡ src (mod 16).
void launch_device_copy(void* dst, const void* src, int64_t bytes, cudaStream_t s);

enum class Activation { identity, gelu_tanh };
/// dst[i] = act(src[i mod n_src]) for i < n_dst: reshapes any tensor to any size (the harness'
/// synthetic dataflow between stages of different shapes).
void launch_fold(const bf16* src, int64_t n_src, bf16* dst, int64_t n_dst, Activation act, cudaStream_t s);

/// y[r, c] += bias[c] for r < rows, c < n.
void launch_add_bias(bf16* y, const bf16* bias, int64_t rows, int64_t n, cudaStream_t s);

/// h[i] += scale · src[i mod n_src] for i < n_h (residual accumulation into the hidden state).
void launch_mix(bf16* h, int64_t n_h, const bf16* src, int64_t n_src, float scale, cudaStream_t s);

/// Y [m × n] = X [m × k] · W[n × k]ᵀ, bf16 in and out, fp32 accumulation (cublasGemmEx,
/// CUBLAS_COMPUTE_32F). The handle's stream and workspace are set by the caller.
void gemm_bf16(cublasHandle_t h, const bf16* x, const bf16* w, bf16* y, int64_t m, int64_t k, int64_t n);

/// Workspace of one attention tile: sizes in bytes for `rows` = batch·heads, tile t, head dim hd.
struct AttentionTile {
  int64_t rows = 0, tile = 0, head_dim = 0;
  float* scores = nullptr;   ///< [rows × t × t] fp32
  bf16* probs = nullptr;     ///< [rows × t × t]
  float* out_acc = nullptr;  ///< [rows × t × hd] fp32
  float* row_max = nullptr;  ///< [rows × t]
  float* row_sum = nullptr;  ///< [rows × t]
  static int64_t bytes(int64_t rows, int64_t tile, int64_t head_dim);
  /// Largest power-of-two tile ≤ kTiledAttentionMaxTile (1024) whose workspace fits `budget_bytes`
  /// (at least 16): model/tiled_attention.hpp tiled_attention_tile.
  static int64_t choose_tile(int64_t rows, int64_t head_dim, int64_t budget_bytes);
};

/// O = softmax(Q Kᵀ / sqrt(hd)) V for `rows` = batch·heads independent heads; Q, O [rows × q × hd],
/// K, V [rows × kv × hd]. Flash-style: for each q tile, for each kv tile, a strided-batched GEMM
/// S = Q Kᵀ (fp32), one kernel updating the running max / sum and rescaling the fp32 output
/// accumulator (online softmax), and a strided-batched GEMM O_acc += P V; at most one t × t tile
/// of scores per head exists at any time. FLOPs 4·rows·q·kv·hd.
void attention_forward(cublasHandle_t h, cudaStream_t s, const bf16* q, const bf16* k, const bf16* v, bf16* o,
                       int64_t rows, int64_t q_tokens, int64_t kv_tokens, int64_t head_dim, const AttentionTile& ws);

/// The pcie-proxy all-to-all in kernel mode, one launch: blocks write send[0, out) to mapped host
/// memory host_out, read host_in[0, out) into recv[0, out), and copy the rank's own part
/// send[out, out + local) → recv[out, out + local) (SM-driven, like NCCL's SHM transport).
void launch_proxy_all_to_all(const std::byte* send, std::byte* recv, std::byte* host_out, const std::byte* host_in,
                             int64_t out_bytes, int64_t local_bytes, cudaStream_t s);

}  // namespace chunkflow::hw
