#pragma once
// `chunkflow pareto`: the policy comparison of issue 8 §3 at equal memory. For each scenario and each
// per-GPU budget (a fraction of no-offload's peak memory), every configuration of the tuning grid is
// planned to that budget and simulated; per policy, the fastest plan whose peak memory fits is kept.
// Reports no-offload's step time, each baseline's (every `layerwise*` policy), chunkflow's and its
// vs_bound (step / the plan's lower bound, sim/bound.hpp).
#include <string>
#include <vector>

#include "runtime/scenario.hpp"
#include "sim/sweep.hpp"

namespace chunkflow {

struct ParetoCell {
  double budget_fraction = 0;     ///< of no-offload's peak memory
  double budget_bytes = 0;
  /// Per policy (policy_names() order, no-offload excluded): the fastest row within the budget, or
  /// config_index = -1 when none fits.
  std::vector<std::pair<std::string, SweepRow>> best;
  /// The fastest baseline's step time over chunkflow's (> 1: chunkflow is faster); 0 when either
  /// has no plan that fits.
  double speedup_over_best_baseline = 0;
};

struct ParetoScenario {
  std::string scenario;
  SweepRow no_offload;
  std::vector<ParetoCell> cells;
};

/// Runs the comparison for one scenario over `budget_fractions` (each in (0, 1]) with `grid`
/// (its memory budget is replaced per cell). Throws InputError(field "--budgets") for a fraction
/// outside (0, 1].
ParetoScenario pareto(const Scenario& scenario, const SweepGrid& grid, const std::vector<double>& budget_fractions);

}  // namespace chunkflow
