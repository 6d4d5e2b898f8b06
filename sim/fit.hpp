#pragma once
// The "does it fit" verdict of a simulated run (issue 11 §1): peak GPU memory against the memory a
// GPU of the node can use, and when it does not fit, the term that overflows. Every row the
// simulator reports (simulate, sweep, tune) carries it, so an absurd configuration can never be
// read as an answer.
#include <string>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow {

/// Memory of one GPU that a run cannot use: the difference between the 80 GiB an H100 addresses
/// and the ≈ 79.1 GiB cudaMemGetInfo reports as total (model/node.cpp), rounded up to 1 GiB; the
/// CUDA context and library workspaces come out of the same margin (assumed, not measured).
inline constexpr double kGpuRuntimeReserveBytes = 1024.0 * 1024.0 * 1024.0;

/// Usable memory per GPU: node.gpu_memory_bytes − kGpuRuntimeReserveBytes (at least 0), bytes.
double usable_gpu_memory_bytes(const NodeSpec& node);

struct MemoryVerdict {
  bool fits = true;                 ///< peak_memory_bytes ≤ usable_bytes
  double usable_bytes = 0;          ///< per GPU
  /// Empty when it fits; otherwise the first term whose running sum passes usable_bytes, in the
  /// order the memory is taken: "weights" (resident weights), "activations" (the token-parallel
  /// activations), "attention workspace" (q, k, v, o of the widest attention), "prefetch buffers"
  /// (chunks in flight at the peak), followed by ": " and the figures in GiB.
  std::string does_not_fit_reason;
};

/// The verdict of a run of `plan` on `node` whose peak memory (per GPU, the max over ranks) was
/// `peak_memory_bytes`. Terms: plan.info.resident_weight_bytes, plan.info.activation_bytes split
/// into plan.cost.attention_workspace_bytes and the rest, and the remainder of the peak (prefetch
/// buffers).
MemoryVerdict memory_verdict(const StepPlan& plan, const NodeSpec& node, double peak_memory_bytes);

}  // namespace chunkflow
