#pragma once
// The CUDA executor of a hw::Program (hw/README.md "How a plan runs"). This header is free of
// CUDA headers (pimpl) so host code and the CPU tests can include it.
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/program.hpp"

namespace chunkflow::hw {

/// No usable CUDA device (none present, no driver, or fewer than the node needs). main() → exit 3.
class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA, cuBLAS or NCCL call failed: "file:line: call: error name (message) on device N".
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Number of CUDA devices; throws NoDeviceError ("no CUDA device: <reason>") when there is none
/// or the driver cannot be used, and when fewer than `needed` are present.
int require_devices(int needed = 1);

/// Provenance of the devices: gpu_name, pci_bus_id, gpu_memory_bytes, sm_count, compute_capability
/// (device 0; per-device entries gpu<i>.name / gpu<i>.pci_bus_id when several), device_count,
/// driver (kernel driver from /proc/driver/nvidia/version when readable), cuda_driver_api,
/// cuda_runtime, cublas, nccl. Throws NoDeviceError without a device.
std::map<std::string, std::string> device_context(int devices);

/// How the pcie-proxy backend moves the (P−1)/P of an all-to-all that would leave the GPU
/// (systems-and-hardware.md §3: without P2P, NCCL uses SM-driven SHM transport).
enum class ProxyMode {
  kernel,       ///< a kernel writes to and reads from mapped pinned host memory (default)
  copy_engine,  ///< cudaMemcpyAsync D2H and H2D on two streams (copy engines)
};

struct ExecutorOptions {
  uint64_t seed = 1;                       ///< weights and initial hidden state
  ProxyMode proxy_mode = ProxyMode::kernel;
  int64_t attention_tile_bytes = 256ll << 20;  ///< workspace bound of one attention score tile
  double latch_timeout_s = 5.0;            ///< spin-latch release bound (hw/README.md "Timing")
  int host_threads = 16;                   ///< threads filling the host weights
};

struct OpTiming {
  double start_s = 0;  ///< from the rank's common start event
  double end_s = 0;
};

struct RunTiming {
  std::vector<OpTiming> ops;    ///< by op id
  bool latch_timed_out = false; ///< the host took longer than latch_timeout_s to enqueue
};

/// Device memory of one rank, in bytes.
struct MemoryReport {
  int64_t resident_weight_bytes = 0;  ///< resident arena + non-block weights
  int64_t slot_bytes = 0;             ///< chunk slot pool
  int64_t activation_bytes = 0;       ///< hidden state, linear inputs/outputs, attention, a2a buffers
  int64_t workspace_bytes = 0;        ///< gather buffer, attention tiles, cuBLAS workspace
  int64_t allocated_bytes = 0;        ///< sum of the above: every cudaMalloc the harness made
  int64_t device_used_bytes = 0;      ///< cudaMemGetInfo(free) before − after setup (incl. libraries)
  int64_t host_pinned_bytes = 0;      ///< pinned host weights + staging (shared by all ranks)
};

/// Runs a Program on ranks 0..ranks−1 = CUDA devices 0..ranks−1. Construction allocates and
/// fills everything (pinned host weights, resident weights, slots, activations, workspace,
/// streams, events, cuBLAS handles, NCCL communicators); run() executes the whole plan once.
class Executor {
 public:
  /// Throws NoDeviceError when fewer than program.ranks devices exist, DeviceError on CUDA errors,
  /// std::invalid_argument when a P-way collective needs NCCL ranks ≠ P.
  Executor(const Program& program, const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// One execution of every op of the plan: resets the activations, holds every stream behind
  /// a common start event, enqueues every rank's ops (one host thread per rank), synchronizes,
  /// and returns each op's start and end. No host synchronization happens between ops.
  RunTiming run();
  /// Bytes of each rank's hidden state after the last run (the "final activation").
  std::vector<std::vector<uint8_t>> final_activation() const;
  MemoryReport memory(int rank = 0) const;
  /// "none" (P = 1), "nccl", "pcie-proxy-kernel" or "pcie-proxy-copy-engine".
  std::string collective_backend() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace chunkflow::hw
