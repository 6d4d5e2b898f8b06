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
#include "model/tiled_attention.hpp"

namespace chunkflow::hw {

/// A run that did not finish: a CUDA or NCCL error surfaced while waiting, or the run's deadline
/// passed (a peer that never arrived, a hung kernel). Every NCCL communicator has been aborted
/// (ncclCommAbort) and the executor is poisoned (its destructor releases nothing that could block).
/// The message names the rank, the first op of that rank that had not finished (id and name) and
/// the CUDA/NCCL error or the deadline. main() → exit 4.
class RunAbortedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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

/// How a run reaches the GPU (hw/README.md "Timing").
enum class LaunchMode {
  graph,   ///< each rank's whole run is captured once in a CUDA Graph and launched as one unit (default)
  direct,  ///< ops enqueued one by one behind a spin latch (fallback; the latch may time out on big plans)
  /// Ops enqueued one by one with no latch: the GPU starts on the first op while the host enqueues
  /// the rest (a diagnostic: no graph, so no graph scheduling; a GPU that outruns the host shows as
  /// gaps before ops; hw/README.md "Compute waiting on copies it does not read").
  stream,
};

struct ExecutorOptions {
  uint64_t seed = 1;                       ///< weights and initial hidden state
  ProxyMode proxy_mode = ProxyMode::kernel;
  LaunchMode launch = LaunchMode::graph;
  int64_t attention_tile_bytes = kTiledAttentionWorkspaceBytes;  ///< workspace bound of one attention score tile
  double latch_timeout_s = 5.0;            ///< direct launch: spin-latch release bound
  /// A run not finished this many seconds after its launch is aborted (RunAbortedError).
  double run_deadline_s = 300.0;
  /// Rate-capped H2D ops are paced in sub-chunks of this many bytes (enqueue_paced_copy).
  int64_t pace_sub_chunk_bytes = 1ll << 20;
  int host_threads = 16;                   ///< threads filling the host weights
};

struct OpTiming {
  /// From the common start event. All ranks share one clock: with NCCL the start event follows an
  /// all-reduce barrier of every rank at the head of the run. A collective's start is the barrier
  /// (the last rank's arrival, as the simulator starts it); its own arrival was wait_s earlier.
  double start_s = 0;
  double end_s = 0;
  double wait_s = 0;  ///< collectives: barrier − this rank's arrival (0 for other ops)
};

struct RunTiming {
  std::vector<OpTiming> ops;    ///< by op id
  bool latch_timed_out = false; ///< direct launch: the host took longer than latch_timeout_s to enqueue
};

/// Device memory of one rank, in bytes.
struct MemoryReport {
  int64_t resident_weight_bytes = 0;  ///< resident arena + non-block weights
  int64_t slot_bytes = 0;             ///< chunk slot pool
  int64_t activation_bytes = 0;       ///< hidden state, linear inputs/outputs, attention, a2a buffers
  int64_t workspace_bytes = 0;        ///< gather buffer, attention tiles, cuBLAS workspace
  int64_t allocated_bytes = 0;        ///< sum of the above: every cudaMalloc the harness made
  /// cudaMemGetInfo(free) before setup − after setup, NCCL communicators included.
  int64_t device_used_bytes = 0;
  /// Measured high-water mark of the same difference, sampled after setup and after every run
  /// (so it includes NCCL's lazy connection buffers, the instantiated graph and cuBLAS' state).
  int64_t peak_memory_bytes = 0;
  int64_t host_pinned_bytes = 0;      ///< pinned host weights this rank reads + proxy staging
  int host_numa_node = -1;            ///< NUMA node of the GPU and of its pinned weights (−1: unknown)
};

/// Runs a Program on ranks 0..ranks−1 = CUDA devices 0..ranks−1. Construction allocates and
/// fills everything (pinned host weights, resident weights, slots, activations, workspace,
/// streams, events, cuBLAS handles, NCCL communicators); run() executes the whole plan once.
class Executor {
 public:
  /// Creates the world NCCL communicator and one per Program::comm_groups entry (ncclCommInitAll
  /// over the group's devices; a group of every rank reuses the world one).
  /// Throws NoDeviceError when fewer than program.ranks devices exist, DeviceError on CUDA/NCCL
  /// errors, std::invalid_argument for a collective without a communicator, a group naming a rank
  /// outside the program, or a non-Ulysses collective on the pcie-proxy backend.
  Executor(const Program& program, const ExecutorOptions& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// One execution of every op of the plan: resets the activations, holds every stream behind
  /// a common start event, runs every rank's ops (graph launch, or direct enqueue by one host
  /// thread per rank), waits for the end by polling (cudaEventQuery, ncclCommGetAsyncError)
  /// against options.run_deadline_s, and returns each op's start and end. No host
  /// synchronization happens between ops. Throws RunAbortedError (communicators aborted, executor
  /// poisoned) when the run fails or overruns, DeviceError when it cannot be launched.
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
