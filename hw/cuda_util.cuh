#pragma once
// Checked CUDA / cuBLAS / NCCL calls and move-only RAII handles (STYLE.md). Internal to hw/.
// Every check throws hw::DeviceError "file:line: call: ERROR_NAME (message) on device N";
// destructors never throw (errors while releasing are ignored: nothing can be done about them).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "hw/executor.hpp"

namespace chunkflow::hw {

[[noreturn]] void throw_device_error(const char* file, int line, const char* call, const std::string& error);

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw_device_error(file, line, call, std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")");
}
void check_cublas(cublasStatus_t s, const char* call, const char* file, int line);
void check_nccl(ncclResult_t r, const char* call, const char* file, int line);

#define CF_CUDA(call) ::chunkflow::hw::check_cuda((call), #call, __FILE__, __LINE__)
#define CF_CUBLAS(call) ::chunkflow::hw::check_cublas((call), #call, __FILE__, __LINE__)
#define CF_NCCL(call) ::chunkflow::hw::check_nccl((call), #call, __FILE__, __LINE__)
/// After every kernel launch: launch-configuration errors surface here.
#define CF_LAUNCHED(kernel) ::chunkflow::hw::check_cuda(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

class Stream {
 public:
  Stream() { CF_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  /// A stream of the device's highest priority: its kernels' blocks are scheduled before those of
  /// normal streams as SMs free up. The paced copies' one-thread wait kernels run on such streams so
  /// that a GEMM or proxy kernel filling every SM cannot starve the pacing.
  struct HighestPriority {};
  explicit Stream(HighestPriority) {
    int least = 0, greatest = 0;
    CF_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CF_CUDA(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, greatest));
  }
  ~Stream() { if (s_) (void)cudaStreamDestroy(s_); }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept { std::swap(s_, o.s_); return *this; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { CF_CUDA(cudaEventCreateWithFlags(&e_, flags)); }
  ~Event() { if (e_) (void)cudaEventDestroy(e_); }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept { std::swap(e_, o.e_); return *this; }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s) { CF_CUDA(cudaEventRecord(e_, s)); }
  /// Seconds from `start` to this event (both recorded and complete).
  double seconds_since(const Event& start) const {
    float ms = 0;
    CF_CUDA(cudaEventElapsedTime(&ms, start.e_, e_));
    return double(ms) * 1e-3;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Page-locked host memory at exactly `bytes` (cudaHostAlloc; `flags` e.g. cudaHostAllocMapped).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, unsigned flags) : bytes_(bytes) {
    if (bytes) CF_CUDA(cudaHostAlloc(&p_, bytes, flags | cudaHostAllocPortable));
  }
  ~PinnedBuffer() { if (p_) (void)cudaFreeHost(p_); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept { std::swap(p_, o.p_); std::swap(bytes_, o.bytes_); return *this; }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  std::byte* get() const { return static_cast<std::byte*>(p_); }
  size_t bytes() const { return bytes_; }
  /// Device address of mapped memory (cudaHostGetDevicePointer); needs cudaHostAllocMapped.
  std::byte* device_pointer() const {
    void* d = nullptr;
    if (p_) CF_CUDA(cudaHostGetDevicePointer(&d, p_, 0));
    return static_cast<std::byte*>(d);
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Device memory on the current device (cudaMalloc: 256-byte aligned).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes) CF_CUDA(cudaMalloc(&p_, bytes));
  }
  ~DeviceBuffer() { if (p_) (void)cudaFree(p_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept { std::swap(p_, o.p_); std::swap(bytes_, o.bytes_); return *this; }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::byte* get() const { return static_cast<std::byte*>(p_); }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

class CublasHandle {
 public:
  CublasHandle() { CF_CUBLAS(cublasCreate(&h_)); }
  ~CublasHandle() { if (h_) (void)cublasDestroy(h_); }
  CublasHandle(CublasHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CublasHandle& operator=(CublasHandle&& o) noexcept { std::swap(h_, o.h_); return *this; }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

class NcclComm {
 public:
  NcclComm() = default;
  explicit NcclComm(ncclComm_t c) : c_(c) {}
  ~NcclComm() { if (c_) (void)ncclCommDestroy(c_); }
  NcclComm(NcclComm&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  NcclComm& operator=(NcclComm&& o) noexcept { std::swap(c_, o.c_); return *this; }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return c_; }
  /// Forgets the communicator without ncclCommDestroy (after ncclCommAbort has freed it).
  ncclComm_t release_without_destroy() { return std::exchange(c_, nullptr); }

 private:
  ncclComm_t c_ = nullptr;
};

/// Graph and executable graph captured from a stream (move-only RAII).
struct GraphHandle {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphHandle() = default;
  GraphHandle(const GraphHandle&) = delete;
  GraphHandle& operator=(const GraphHandle&) = delete;
  ~GraphHandle() {
    if (exec) (void)cudaGraphExecDestroy(exec);
    if (graph) (void)cudaGraphDestroy(graph);
  }
};

/// Captures what `enqueue` puts on stream `s` (and the streams it forks from `s`) into a CUDA
/// Graph, instantiated and uploaded; `s` is synchronized before returning. An exception thrown by
/// `enqueue` ends the capture, frees the partial graph and propagates. Errors: CudaError.
template <class Enqueue>
std::unique_ptr<GraphHandle> capture_graph(cudaStream_t s, Enqueue&& enqueue) {
  auto handle = std::make_unique<GraphHandle>();
  CF_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(s, &partial);
    if (partial) (void)cudaGraphDestroy(partial);
    throw;
  }
  CF_CUDA(cudaStreamEndCapture(s, &handle->graph));
  CF_CUDA(cudaGraphInstantiate(&handle->exec, handle->graph, 0));
  CF_CUDA(cudaGraphUpload(handle->exec, s));
  CF_CUDA(cudaStreamSynchronize(s));
  return handle;
}

/// Makes `device` current for the calling thread (and names it in errors thrown on this thread).
void use_device(int device);

}  // namespace chunkflow::hw
