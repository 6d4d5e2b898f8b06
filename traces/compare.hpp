#pragma once
// Prediction vs measurement: a simulated Timeline against a measured one of the same StepPlan,
// step-level figures from summarize() and per-op durations matched by op id
// (shared/DESIGN.md: "one plan, two executors, one timeline"). Used by `chunkflow compare`.
#include <cstddef>
#include <string>
#include <vector>

#include "traces/timeline.hpp"

namespace chunkflow {

/// Denominator floor for per-op relative errors, in seconds: about the resolution of CUDA event
/// timing (0.5 µs), so that a measured duration of 0 does not make an infinite error.
inline constexpr double kOpDurationFloor_s = 1e-6;

/// One op's duration, predicted vs measured.
struct OpError {
  int op_id = 0;
  std::string name;
  Lane lane = Lane::compute;
  int rank = 0;
  double predicted_s = 0;      ///< end_s − start_s in the prediction
  double measured_s = 0;       ///< end_s − start_s in the measurement
  double error_s = 0;          ///< predicted_s − measured_s (signed)
  double relative_error = 0;   ///< error_s / max(measured_s, kOpDurationFloor_s) (signed)
};

/// A compute op waited "unexplained" when it started more than this after both the previous op on
/// its rank's compute lane and every op it depends on had ended: the simulator starts it at that
/// instant, so only an executor's own ordering (a queue it shares with unrelated work) can hold it.
/// 20 µs: four times a graph-launched kernel's gap on an H100 (≈ 5 µs, hw/README.md).
inline constexpr double kUnexplainedWait_s = 20e-6;
/// Such a wait "follows an unrelated copy" when the op starts within this after the end of an H2D
/// op of its rank that it does not depend on (the harness's signature on the H100 and H200 runs,
/// README "First measurements on an H100").
inline constexpr double kAfterCopy_s = 30e-6;

/// Compute ops of one timeline's step that waited unexplained (kUnexplainedWait_s).
struct UnexplainedWaits {
  int ops = 0;                  ///< compute ops of the step that waited
  double total_s = 0;           ///< their waits summed (start − max(previous op's end, deps' ends))
  int after_unrelated_copy = 0; ///< of them, those that start ≤ kAfterCopy_s after an unrelated H2D op ends
};

/// The unexplained waits of `timeline`'s compute ops in `step` (every rank): start − max(end of the
/// op before on the lane, ends of every dep), the readiness summarize() takes for the prefetch stall
/// (traces/timeline.hpp), with the H2D deps included. Computed here, not in the summaries, which every
/// grid row pays for. Deps missing from the timeline are ignored; the first compute op of a rank's
/// lane has no previous op.
UnexplainedWaits unexplained_waits(const Timeline& timeline, int step);

/// Comparison of the summarized step (StepSummary of each timeline). Signed relative errors are
/// (predicted − measured) / measured; they are 0 when both are 0 and NaN (JSON null) when only
/// the measured figure is 0.
struct Comparison {
  int step = 0;                          ///< the measured timeline's summarized step
  double step_time_predicted_s = 0, step_time_measured_s = 0, step_time_error = 0;
  double compute_time_predicted_s = 0, compute_time_measured_s = 0, compute_time_error = 0;
  double h2d_time_predicted_s = 0, h2d_time_measured_s = 0, h2d_time_error = 0;
  double comm_time_predicted_s = 0, comm_time_measured_s = 0, comm_time_error = 0;
  double prefetch_stall_predicted_s = 0, prefetch_stall_measured_s = 0;
  double collective_time_predicted_s = 0, collective_time_measured_s = 0;
  double peak_memory_predicted_bytes = 0, peak_memory_measured_bytes = 0;
  /// Distribution of |relative_error| over the matched ops of the summarized step (0 when there
  /// are none). Quantiles interpolate linearly between order statistics (numpy's default).
  double op_error_median = 0, op_error_p90 = 0, op_error_max = 0;
  int step_ops = 0;                      ///< matched ops of the summarized step (the distribution)
  std::vector<OpError> worst;            ///< ≤ 10 of those ops by |error_s| desc, then op_id asc
  int matched_ops = 0;                   ///< op ids in both timelines (all steps)
  int unmatched_predicted = 0;           ///< op ids only in the prediction (all steps)
  int unmatched_measured = 0;            ///< op ids only in the measurement (all steps)
  UnexplainedWaits waits_predicted, waits_measured;  ///< unexplained_waits of each timeline's summarized step
};

/// Number of ops kept in Comparison::worst.
inline constexpr std::size_t kWorstOpCount = 10;

/// Signed relative error (predicted − measured) / measured; 0 when both are 0; NaN when only
/// measured is 0.
double relative_error(double predicted, double measured);

/// Compares `predicted` with `measured`, rows matched by op_id. The distribution and `worst`
/// cover matched ops whose measured step is the measured summary's step. Throws
/// std::invalid_argument when summarize() does on either timeline, and when a matched op differs
/// in kind, lane, rank or step between the two (the timelines are not of the same plan).
Comparison compare(const Timeline& predicted, const Timeline& measured);

/// The comparison as a JSON object (keys sorted, 2-space indent, NaN written as null; times in
/// seconds, errors as fractions). Deterministic.
std::string comparison_to_json(const Comparison& comparison);

}  // namespace chunkflow
