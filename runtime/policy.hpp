#pragma once
// Offload policies → StepPlan (shared/DESIGN.md "Policies"; systems-and-hardware.md §1).
#include <optional>
#include <string>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

struct PolicyConfig {
  std::string policy = "chunkflow";   ///< "no-offload" | "layerwise" | "chunkflow"
  double chunk_bytes = 64 * kMiB;     ///< chunkflow chunk size C (> 0)
  /// Fraction of the block weights kept on the GPU, in [0, 1]. nullopt = auto: chunkflow takes
  /// the analytical model's auto_resident_fraction, layerwise keeps no block resident.
  std::optional<double> resident_fraction;
  int lookahead = 1;                  ///< L ≥ 1: slots hold L+1 blocks' worth of offloaded weights
  int steps = 2;                      ///< denoising steps planned (≥ 2 for a steady-state step)
};

/// The known policy names, in sweep order.
std::vector<std::string> policy_names();

/// Validates a policy config; throws InputError naming `file` and the field under `prefix`
/// (e.g. "/policy/chunk_mib") for an unknown policy, chunk ≤ 0, resident fraction outside
/// [0, 1], lookahead < 1 or steps < 1.
void validate(const PolicyConfig& p, const std::string& file = "", const std::string& prefix = "/policy");

/// Builds the plan of `config.steps` denoising steps of workload `w` on `node` (validates all
/// three first). Policies:
///  - no-offload: every weight resident; compute and collectives only.
///  - layerwise: whole offloaded blocks, one H2D op each on the copy lane; the block that is
///    `lookahead` blocks ahead is fetched once the block before the current one is released;
///    resident blocks (round(R·blocks), spread evenly) are never fetched; blind to collectives.
///  - chunkflow: the first R of each block's weight bytes (layout order) stay resident; the rest
///    moves in chunks of C bytes through a pool of slots holding (L+1) blocks' worth; a compute op
///    waits only for the chunks of its own weights; a chunk never starts while a collective of its
///    rank runs: the copy lane waits for the latest collective issued before it, and a collective
///    waits for the chunk issued before it (systems-and-hardware.md §1, PR #34805, made
///    chunk-granular).
/// The first blocks of step s+1 are prefetched during step s (wrap-around).
StepPlan build_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config);

}  // namespace chunkflow
