#pragma once
// Offload policies → StepPlan (shared/DESIGN.md "Policies"; systems-and-hardware.md §1).
// Every policy is one class behind OffloadPolicy in its own file (runtime/policy_<name>.cpp) and one
// line of the registry (runtime/policy.cpp). A policy decides what moves, when and how fast
// (runtime/plan_builder.hpp CopySchedule); the plan builder emits the ops.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/plan_builder.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow {

inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * kMiB;

struct PolicyConfig {
  std::string policy = "chunkflow";   ///< a registered name (policy_names())
  double chunk_bytes = 64 * kMiB;     ///< chunkflow chunk size C (> 0)
  /// Fraction of the block weights kept on the GPU, in [0, 1]. nullopt = auto: chunkflow takes
  /// the smallest fraction whose plan reaches the bound within 2 %; layerwise keeps no block
  /// resident, or as many as the memory budget allows.
  std::optional<double> resident_fraction;
  int lookahead = 1;                  ///< L ≥ 1: slots hold L+1 blocks' worth of offloaded weights
                                      ///< (without a memory budget)
  int steps = 2;                      ///< forwards planned (≥ 2 for a steady-state step)
  /// Per-GPU memory budget in bytes (everything counted: resident weights, copies in flight,
  /// activations). nullopt = none. With a budget, the copy buffers are what the budget leaves.
  std::optional<double> memory_budget_bytes;
};

/// One offload policy. Implementations are stateless.
class OffloadPolicy {
 public:
  virtual ~OffloadPolicy() = default;
  /// The registered name ("layerwise", ...).
  virtual std::string name() const = 0;
  /// One line for --help and the README.
  virtual std::string description() const = 0;
  /// What the policy decides for `config.steps` forwards of `w` on `node` (inputs already
  /// validated): the copy schedule and its PlanInfo fields. Throws InputError(field
  /// "/policy/memory_budget_gib") when the budget cannot hold the plan.
  virtual PlanDecision decide(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const = 0;
  /// The plan of that decision: build_plan_from_schedule(w, node, config.steps, schedule, info).
  StepPlan plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const;
};

/// The registered policy names, in sweep order: no-offload, the baselines (layerwise*), chunkflow.
std::vector<std::string> policy_names();

/// The policy registered under `name`; throws InputError(field "/policy/name") listing the names.
const OffloadPolicy& find_policy(const std::string& name);

/// Every policy whose name starts with "layerwise" is a baseline; chunkflow is ours.
bool is_baseline_policy(const std::string& name);

/// Validates a policy config; throws InputError naming `file` and the field under `prefix`
/// (e.g. "/policy/chunk_mib") for an unknown policy, chunk ≤ 0, resident fraction outside
/// [0, 1], lookahead < 1, steps < 1 or a budget ≤ 0.
void validate(const PolicyConfig& p, const std::string& file = "", const std::string& prefix = "/policy");

/// Validates workload, node and config, then builds the plan of the named policy:
/// build_plan_from_schedule(w, node, config.steps, d.schedule, d.info) of d = decide_plan(...).
StepPlan build_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config);

/// Validates workload, node and config (as build_plan) and returns what the named policy decides,
/// with info.policy and info.memory_budget_bytes set: the plan without building it (the grid's
/// memo, sim/grid.hpp, looks its outcome up by the decision).
PlanDecision decide_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config);

/// decide_plan for a workload and node validated already (validate(w), validate(node): a grid's
/// scenarios are, when read, runtime/scenario.hpp scenario_from_json) with `cost` =
/// forward_cost(w) computed once: validates the config, checks the plan limits and decides, as
/// decide_plan does after its first two checks, with the same result. The grid path
/// (sim/grid.cpp run_grid_config) calls it per configuration. Throws InputError as decide_plan.
PlanDecision decide_plan_validated(const Workload& w, const NodeSpec& node, const ForwardCost& cost,
                                   const PolicyConfig& config);

/// Drops the chunkflow planners this thread keeps between plans (runtime/policy_chunkflow.cpp keeps
/// the eight most recent (workload, node, simulated steps, chunk size) inputs with the residencies
/// and estimates they computed): the next chunkflow plan is made by a fresh planner. Plans are the
/// same either way; for tests and to return the memory (≤ 128 MiB of estimates per thread).
void clear_chunkflow_planner_cache();

/// This thread's counts since it started: plans that found their planner kept or made a new one,
/// (placement, slot count) estimates that were found kept or computed, of the kept ones those
/// taken from another (fraction, placement) whose chunks are the same, the estimates "auto" did
/// not need because their copy volume alone rules them out (Planner::volume_bound_s), and the
/// closed-loop passes the computed ones ran (Planner::run_pass, lazy and eager alike).
struct PlannerCacheStats {
  int64_t planner_hits = 0, planner_misses = 0;
  int64_t estimate_hits = 0, estimate_misses = 0;
  int64_t estimate_shared = 0;
  int64_t estimate_bounded = 0;
  int64_t passes = 0;
  int64_t passes_stopped = 0;  ///< of them, stopped once their step time could not beat the best
};
PlannerCacheStats chunkflow_planner_cache_stats();

/// With `on`, this thread's chunkflow planners take no shortcut: every copy still moving when a
/// window's real times become known is re-timed at once, as the estimate is defined
/// (runtime/policy_chunkflow.cpp Planner::run); the default re-times lazily, when something reads a
/// copy's times, which must give the same plans op for op (tests/test_policy.cpp checks it); a
/// (fraction, placement) whose chunks equal an earlier one's computes its own estimates instead of
/// sharing that one's; "auto" estimates every placement of every fraction it tries (the default
/// leaves out those whose copy volume alone rules them out); and every window mode runs both its
/// passes (the default runs one pass without collectives, and stops a mode whose second pass would
/// repeat its first). For tests; off by default.
void set_chunkflow_planner_exhaustive(bool on);

// ---- Helpers the policies share -------------------------------------------------------------

/// Which of n blocks stay resident: round(fraction·n), spread evenly (SGLang's `strided`
/// placement, systems-and-hardware.md §1).
std::vector<bool> strided_resident_blocks(int n, double fraction);

/// Bytes a budget leaves for copy buffers: budget − resident weights − activations (may be < 0).
double buffer_bytes_left(const PolicyConfig& config, double resident_weight_bytes, double activation_bytes);

}  // namespace chunkflow
