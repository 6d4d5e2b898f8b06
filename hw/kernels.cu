// Kernels and the tiled attention of the harness (see kernels.cuh).
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cmath>
#include <stdexcept>
#include <string>

#include "hw/cuda_util.cuh"
#include "hw/kernels.cuh"
#include "model/tiled_attention.hpp"

namespace chunkflow::hw {

namespace {

constexpr int kThreads = 256;

/// Grid for a grid-stride loop over n elements: enough blocks to fill the GPU, never more than n needs.
unsigned grid_for(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

int to_int(int64_t x, const char* what) {
  if (x < 0 || x > INT_MAX) throw std::invalid_argument(std::string(what) + " = " + std::to_string(x) + " does not fit cuBLAS' int");
  return int(x);
}

__device__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_latch_kernel(const volatile int* flag, uint64_t timeout_ns, int* timed_out) {
  const uint64_t start = global_timer_ns();
  while (*flag == 0) {
    if (global_timer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

__global__ void stamp_time_kernel(uint64_t* t0) { *t0 = global_timer_ns(); }

__global__ void wait_until_kernel(const uint64_t* t0, uint64_t offset_ns) {
  const uint64_t due = *t0 + offset_ns;
  unsigned backoff = 32;
  while (global_timer_ns() < due) {
    __nanosleep(backoff);
    backoff = backoff < 1024 ? backoff * 2 : 1024;
  }
}

__device__ float warp_sum(float x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
__device__ float warp_max(float x) {
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}

__global__ void rmsnorm_kernel(const bf16* in, bf16* out, int64_t cols) {
  __shared__ float partial[kThreads / 32];
  const bf16* x = in + int64_t(blockIdx.x) * cols;
  bf16* y = out + int64_t(blockIdx.x) * cols;
  float ss = 0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(x[c]);
    ss += v * v;
  }
  ss = warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kThreads / 32; ++w) total += partial[w];  // same order in every thread
  const float inv = rsqrtf(total / float(cols) + 1e-6f);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[c] = __float2bfloat16(__bfloat162float(x[c]) * inv);
}

__device__ float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

__global__ void fold_kernel(const bf16* src, int64_t n_src, bf16* dst, int64_t n_dst, int gelu) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n_dst; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = __bfloat162float(src[i % n_src]);
    dst[i] = __float2bfloat16(gelu ? gelu_tanh(v) : v);
  }
}

__global__ void add_bias_kernel(bf16* y, const bf16* bias, int64_t total, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(__bfloat162float(y[i]) + __bfloat162float(bias[i % n]));
}

__global__ void mix_kernel(bf16* h, int64_t n_h, const bf16* src, int64_t n_src, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n_h; i += int64_t(gridDim.x) * blockDim.x)
    h[i] = __float2bfloat16(__bfloat162float(h[i]) + scale * __bfloat162float(src[i % n_src]));
}

__global__ void attention_init_kernel(float* row_max, float* row_sum, float* out_acc, int64_t rows, int64_t hd) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * hd; i += int64_t(gridDim.x) * blockDim.x) {
    out_acc[i] = 0.0f;
    if (i < rows) {
      row_max[i] = -INFINITY;
      row_sum[i] = 0.0f;
    }
  }
}

/// One warp per score row: running max m, running sum l, P = exp(S − m_new) in bf16 (the PV GEMM's
/// operand; l sums the rounded values so that normalization matches what was multiplied), and the
/// fp32 output accumulator row rescaled by exp(m_old − m_new).
__global__ void online_softmax_kernel(const float* scores, bf16* probs, float* row_max, float* row_sum,
                                      float* out_acc, int64_t rows, int64_t tk, int64_t hd) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* s = scores + row * tk;
  bf16* p = probs + row * tk;
  float mx = -INFINITY;
  for (int64_t j = lane; j < tk; j += 32) mx = fmaxf(mx, s[j]);
  mx = warp_max(mx);
  const float m_old = row_max[row];
  const float m_new = fmaxf(m_old, mx);
  float sum = 0;
  for (int64_t j = lane; j < tk; j += 32) {
    const bf16 pb = __float2bfloat16(__expf(s[j] - m_new));
    p[j] = pb;
    sum += __bfloat162float(pb);
  }
  sum = warp_sum(sum);
  const float alpha = m_old == -INFINITY ? 0.0f : __expf(m_old - m_new);
  float* o = out_acc + row * hd;
  for (int64_t c = lane; c < hd; c += 32) o[c] *= alpha;
  __syncwarp();
  if (lane == 0) {
    row_sum[row] = row_sum[row] * alpha + sum;
    row_max[row] = m_new;
  }
}

/// out[(h·q_tokens + q0 + i)·hd + c] = out_acc[(h·tq + i)·hd + c] / l[h·tq + i].
__global__ void attention_finish_kernel(const float* out_acc, const float* row_sum, bf16* out, int64_t heads,
                                        int64_t tq, int64_t q_tokens, int64_t q0, int64_t hd) {
  const int64_t total = heads * tq * hd;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / hd, c = i % hd;
    const int64_t h = row / tq, r = row % tq;
    out[(h * q_tokens + q0 + r) * hd + c] = __float2bfloat16(out_acc[i] / row_sum[row]);
  }
}

/// Copies n bytes with the threads [tid, tid + nthreads) of a block range; 16-byte accesses when
/// both pointers are 16-byte aligned.
__device__ void copy_bytes(std::byte* dst, const std::byte* src, int64_t n, int64_t tid, int64_t nthreads) {
  int64_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const int64_t vec = n / 16;
    const int4* s4 = reinterpret_cast<const int4*>(src);
    int4* d4 = reinterpret_cast<int4*>(dst);
    for (int64_t i = tid; i < vec; i += nthreads) d4[i] = s4[i];
    done = vec * 16;
  }
  for (int64_t i = done + tid; i < n; i += nthreads) dst[i] = src[i];
}

/// dst[0, n) = src[0, n) on the SMs. With dst ≡ src (mod 16) the bytes before the first 16-byte
/// boundary are copied one by one and the rest 16 bytes at a time (copy_bytes); otherwise byte by byte.
__global__ void device_copy_kernel(std::byte* dst, const std::byte* src, int64_t n) {
  const int64_t tid = blockIdx.x * int64_t(blockDim.x) + threadIdx.x, nthreads = int64_t(gridDim.x) * blockDim.x;
  const int64_t misalign = int64_t(reinterpret_cast<uintptr_t>(dst) & 15);
  const int64_t head = misalign == 0 ? 0 : (n < 16 - misalign ? n : 16 - misalign);
  for (int64_t i = tid; i < head; i += nthreads) dst[i] = src[i];
  copy_bytes(dst + head, src + head, n - head, tid, nthreads);
}

constexpr int kProxyWriters = 16, kProxyReaders = 16, kProxyLocal = 8, kProxyThreads = 512;

__global__ void proxy_all_to_all_kernel(const std::byte* send, std::byte* recv, std::byte* host_out,
                                        const std::byte* host_in, int64_t out_bytes, int64_t local_bytes) {
  const int b = blockIdx.x;
  if (b < kProxyWriters) {
    copy_bytes(host_out, send, out_bytes, int64_t(b) * blockDim.x + threadIdx.x, int64_t(kProxyWriters) * blockDim.x);
  } else if (b < kProxyWriters + kProxyReaders) {
    const int r = b - kProxyWriters;
    copy_bytes(recv, host_in, out_bytes, int64_t(r) * blockDim.x + threadIdx.x, int64_t(kProxyReaders) * blockDim.x);
  } else {
    const int l = b - kProxyWriters - kProxyReaders;
    copy_bytes(recv + out_bytes, send + out_bytes, local_bytes, int64_t(l) * blockDim.x + threadIdx.x,
               int64_t(kProxyLocal) * blockDim.x);
  }
}

}  // namespace

void launch_spin_latch(const volatile int* flag, uint64_t timeout_ns, int* timed_out, cudaStream_t s) {
  spin_latch_kernel<<<1, 1, 0, s>>>(flag, timeout_ns, timed_out);
  CF_LAUNCHED("spin_latch_kernel");
}

void launch_stamp_time(uint64_t* t0, cudaStream_t s) {
  stamp_time_kernel<<<1, 1, 0, s>>>(t0);
  CF_LAUNCHED("stamp_time_kernel");
}

void launch_wait_until(const uint64_t* t0, uint64_t offset_ns, cudaStream_t s) {
  wait_until_kernel<<<1, 1, 0, s>>>(t0, offset_ns);
  CF_LAUNCHED("wait_until_kernel");
}

void enqueue_paced_copy(void* dst, const void* src, int64_t bytes, cudaMemcpyKind kind, double cap_bytes_per_s,
                        int64_t sub_chunk_bytes, uint64_t* t0, cudaStream_t s) {
  if (!(cap_bytes_per_s >= 0)) throw std::invalid_argument("paced copy: cap " + std::to_string(cap_bytes_per_s) + " bytes/s < 0");
  if (sub_chunk_bytes <= 0) throw std::invalid_argument("paced copy: sub-chunk " + std::to_string(sub_chunk_bytes) + " bytes ≤ 0");
  if (bytes <= 0) return;
  if (cap_bytes_per_s == 0) {
    CF_CUDA(cudaMemcpyAsync(dst, src, size_t(bytes), kind, s));
    return;
  }
  const double ns_per_byte = 1e9 / cap_bytes_per_s;
  launch_stamp_time(t0, s);
  for (int64_t off = 0; off < bytes; off += sub_chunk_bytes) {
    if (off > 0) launch_wait_until(t0, uint64_t(double(off) * ns_per_byte), s);
    CF_CUDA(cudaMemcpyAsync(static_cast<std::byte*>(dst) + off, static_cast<const std::byte*>(src) + off,
                            size_t(std::min(sub_chunk_bytes, bytes - off)), kind, s));
  }
  launch_wait_until(t0, uint64_t(double(bytes) * ns_per_byte), s);
}

void launch_device_copy(void* dst, const void* src, int64_t bytes, cudaStream_t s) {
  if (bytes <= 0) return;
  device_copy_kernel<<<grid_for((bytes + 15) / 16), kThreads, 0, s>>>(static_cast<std::byte*>(dst),
                                                                     static_cast<const std::byte*>(src), bytes);
  CF_LAUNCHED("device_copy_kernel");
}

void launch_rmsnorm(const bf16* in, bf16* out, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows <= 0) return;
  if (rows > INT_MAX) throw std::invalid_argument("launch_rmsnorm: too many rows");
  rmsnorm_kernel<<<unsigned(rows), kThreads, 0, s>>>(in, out, cols);
  CF_LAUNCHED("rmsnorm_kernel");
}

void launch_fold(const bf16* src, int64_t n_src, bf16* dst, int64_t n_dst, Activation act, cudaStream_t s) {
  if (n_dst <= 0) return;
  if (n_src <= 0) throw std::invalid_argument("launch_fold: empty source");
  fold_kernel<<<grid_for(n_dst), kThreads, 0, s>>>(src, n_src, dst, n_dst, act == Activation::gelu_tanh);
  CF_LAUNCHED("fold_kernel");
}

void launch_add_bias(bf16* y, const bf16* bias, int64_t rows, int64_t n, cudaStream_t s) {
  if (rows * n <= 0) return;
  add_bias_kernel<<<grid_for(rows * n), kThreads, 0, s>>>(y, bias, rows * n, n);
  CF_LAUNCHED("add_bias_kernel");
}

void launch_mix(bf16* h, int64_t n_h, const bf16* src, int64_t n_src, float scale, cudaStream_t s) {
  if (n_h <= 0) return;
  if (n_src <= 0) throw std::invalid_argument("launch_mix: empty source");
  mix_kernel<<<grid_for(n_h), kThreads, 0, s>>>(h, n_h, src, n_src, scale);
  CF_LAUNCHED("mix_kernel");
}

void gemm_bf16(cublasHandle_t h, const bf16* x, const bf16* w, bf16* y, int64_t m, int64_t k, int64_t n) {
  // Row-major Y[m×n] = X[m×k]·Wᵀ is column-major Yᵀ[n×m] = op(W)[n×k] · Xᵀ[k×m] with W read as a
  // column-major k×n matrix (lda = k) and transposed.
  const float one = 1.0f, zero = 0.0f;
  CF_CUBLAS(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, to_int(n, "n"), to_int(m, "m"), to_int(k, "k"), &one, w,
                         CUDA_R_16BF, to_int(k, "k"), x, CUDA_R_16BF, to_int(k, "k"), &zero, y, CUDA_R_16BF,
                         to_int(n, "n"), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The workspace and tile rule are the simulator's (model/tiled_attention.hpp), so that it prices
// the tile this kernel runs with.
int64_t AttentionTile::bytes(int64_t rows, int64_t tile, int64_t head_dim) {
  return tiled_attention_workspace_bytes(rows, tile, head_dim);
}

int64_t AttentionTile::choose_tile(int64_t rows, int64_t head_dim, int64_t budget_bytes) {
  return tiled_attention_tile(rows, head_dim, budget_bytes);
}

void attention_forward(cublasHandle_t h, cudaStream_t s, const bf16* q, const bf16* k, const bf16* v, bf16* o,
                       int64_t rows, int64_t q_tokens, int64_t kv_tokens, int64_t hd, const AttentionTile& ws) {
  if (rows > ws.rows || hd > ws.head_dim) throw std::invalid_argument("attention_forward: workspace too small");
  const int64_t t = ws.tile;
  const float scale = 1.0f / std::sqrt(float(hd)), one = 1.0f, zero = 0.0f;
  const int batch = to_int(rows, "batch·heads");
  for (int64_t q0 = 0; q0 < q_tokens; q0 += t) {
    const int64_t tq = std::min(t, q_tokens - q0);
    attention_init_kernel<<<grid_for(rows * tq * hd), kThreads, 0, s>>>(ws.row_max, ws.row_sum, ws.out_acc,
                                                                          rows * tq, hd);
    CF_LAUNCHED("attention_init_kernel");
    for (int64_t k0 = 0; k0 < kv_tokens; k0 += t) {
      const int64_t tk = std::min(t, kv_tokens - k0);
      // Scores Sᵀ per head, column-major [tk × tq] = row-major S [tq × tk] = Q_tile · K_tileᵀ.
      CF_CUBLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, int(tk), int(tq), int(hd), &scale,
                                           k + k0 * hd, CUDA_R_16BF, int(hd), kv_tokens * hd, q + q0 * hd,
                                           CUDA_R_16BF, int(hd), q_tokens * hd, &zero, ws.scores, CUDA_R_32F,
                                           int(tk), tq * tk, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      const int64_t score_rows = rows * tq;
      online_softmax_kernel<<<unsigned((score_rows * 32 + kThreads - 1) / kThreads), kThreads, 0, s>>>(
          ws.scores, ws.probs, ws.row_max, ws.row_sum, ws.out_acc, score_rows, tk, hd);
      CF_LAUNCHED("online_softmax_kernel");
      // O_acc (column-major [hd × tq]) += V_tileᵀ-as-column-major [hd × tk] · P (column-major [tk × tq]).
      CF_CUBLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(hd), int(tq), int(tk), &one,
                                           v + k0 * hd, CUDA_R_16BF, int(hd), kv_tokens * hd, ws.probs, CUDA_R_16BF,
                                           int(tk), tq * tk, &one, ws.out_acc, CUDA_R_32F, int(hd), tq * hd, batch,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    attention_finish_kernel<<<grid_for(rows * tq * hd), kThreads, 0, s>>>(ws.out_acc, ws.row_sum, o, rows, tq,
                                                                            q_tokens, q0, hd);
    CF_LAUNCHED("attention_finish_kernel");
  }
}

void launch_proxy_all_to_all(const std::byte* send, std::byte* recv, std::byte* host_out, const std::byte* host_in,
                             int64_t out_bytes, int64_t local_bytes, cudaStream_t s) {
  if (out_bytes + local_bytes <= 0) return;
  proxy_all_to_all_kernel<<<kProxyWriters + kProxyReaders + kProxyLocal, kProxyThreads, 0, s>>>(
      send, recv, host_out, host_in, out_bytes, local_bytes);
  CF_LAUNCHED("proxy_all_to_all_kernel");
}

}  // namespace chunkflow::hw
