#pragma once
// Limits on a plan, checked from its inputs before anything is built (issue 11 §1): the policy's
// documented ranges (model/limits.hpp), a lookahead within the model's block count, and the plan's
// op count (ops per step and per plan) derived from the chunk size, the resident fraction, the
// steps and the ranks, so that no input makes build_plan or the simulator allocate more than
// kMaxPlanOps · kPlanOpBytes.
#include <string>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/policy.hpp"

namespace chunkflow {

/// What an error names: the file and the field (a JSON pointer or an option) of each input.
struct PlanLimitFields {
  std::string file;
  std::string chunk = "/policy/chunk_mib";
  std::string resident_fraction = "/policy/resident_fraction";
  std::string lookahead = "/policy/lookahead";
  std::string steps = "/policy/simulated_steps";
};

/// The ops a plan of `config` for workload `w` (whose forward_cost is `cost`) would have per step,
/// all executed ranks together: ranks × (stages of one forward + H2D copies of one step). Exact for
/// the baselines (one per block not kept resident, n − round(R·n)); for chunkflow an upper bound:
/// Σ_blocks (⌈offloaded bytes / C⌉ + its linears) (chunks are cut on tensor edges) + one piece per
/// all-to-all (a chunk split at a window's edge), with auto counted at R = 0, the largest plan it
/// tries. Computed in double, so any chunk size > 0 is safe.
double plan_ops_per_step(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config);

/// Throws InputError naming fields.file and the field for: chunk size, resident fraction,
/// lookahead or steps outside their ranges; lookahead > the model's block count; more than
/// kMaxOpsPerStep ops per step (field: the chunk size) or kMaxPlanOps per plan (field: the steps).
void check_plan_limits(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config,
                       const PlanLimitFields& fields = {});

/// What plan_ops_per_step and check_plan_limits read of a workload on a node, gathered once: a grid
/// checks every policy of a workload against it (sim/grid.cpp GridCursor), each in O(blocks)
/// instead of O(stages).
struct PlanShape {
  int ranks = 0;            ///< executed ranks
  double stages = 0;        ///< stages of one forward
  double all_to_alls = 0;   ///< all-to-all stages of one forward
  double dtype_bytes = 0;   ///< the workload's element size
  struct Block {
    double weight_bytes = 0;
    int linears = 0;
  };
  std::vector<Block> blocks;  ///< per transformer block, in order
};
PlanShape plan_shape(const Workload& w, const ForwardCost& cost, const NodeSpec& node);
/// plan_ops_per_step and check_plan_limits from a PlanShape: the same values and errors.
double plan_ops_per_step(const PlanShape& shape, const PolicyConfig& config);
void check_plan_limits(const PlanShape& shape, const PolicyConfig& config, const PlanLimitFields& fields = {});

/// check_plan_limits for every configuration of a sweep or tuning grid, errors named by the grid's
/// options (--chunk-mib-list, --resident-fractions, --lookahead, --simulated-steps).
void check_grid_limits(const Workload& w, const NodeSpec& node, const std::vector<PolicyConfig>& configs);

}  // namespace chunkflow
