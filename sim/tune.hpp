#pragma once
// `chunkflow tune`: the simulator searches policy × chunk size × resident fraction for the
// configuration with the smallest step time whose peak GPU memory fits a per-GPU budget, and
// reports the Pareto frontier of peak memory against step time (shared/DESIGN.md "Typical use").
#include <vector>

#include "runtime/scenario.hpp"
#include "sim/sweep.hpp"

namespace chunkflow {

/// The default tuning grid: every policy; chunks 1, 4, 16, 64, 256 MiB; resident fractions auto and
/// 0, 0.1, …, 1 (finer than the sweep's, because residency is what trades memory for time).
SweepGrid default_tune_grid();

/// Step times that differ by less than this relative amount are equal for `tune` (the simulator's
/// floating-point noise is ~1e-15; 1e-6 of a step is far below anything measurable).
inline constexpr double kTuneTieRelative = 1e-6;

/// Whether step time a is better than b by more than the tie tolerance.
inline bool clearly_faster(double a_s, double b_s) { return a_s < b_s * (1 - kTuneTieRelative); }

struct TuneResult {
  double budget_bytes = 0;                  ///< per-GPU memory budget
  std::vector<SweepRow> candidates;         ///< every simulated configuration (config order)
  int best = -1;                            ///< index into candidates: min step time with peak ≤
                                            ///< budget and fits the GPU (SweepRow::verdict); step
                                            ///< times within kTuneTieRelative of each other tie, and
                                            ///< a tie goes to the lower peak, then the lower index
  /// Indices of the Pareto frontier over all candidates, by peak memory ascending: a candidate is
  /// on it when no other has peak ≤ its peak and step time < its step time (or equal step time
  /// and lower peak). Along it, peak strictly increases and step time strictly decreases.
  std::vector<int> frontier;
};

/// Indices of the Pareto frontier of points (peak_bytes[i], step_time_s[i]) (definition above).
/// Shapes: both vectors of one length n; returns ≤ n indices. Exact ties keep the lowest index.
std::vector<int> pareto_frontier(const std::vector<double>& peak_bytes, const std::vector<double>& step_time_s);

/// Simulates every configuration of `grid` on `scenario` (run_sweep, all cores) and chooses.
/// Throws InputError(field "--memory-budget-gib") when budget_bytes ≤ 0 or no configuration fits
/// (the message names the smallest peak found).
/// Every configuration is planned to the budget (SweepGrid::memory_budget_bytes = budget_bytes), so
/// policies size their copy buffers and auto residency to it; those the budget cannot hold are left
/// out.
TuneResult tune(const Scenario& scenario, const SweepGrid& grid, double budget_bytes);

}  // namespace chunkflow
