#pragma once
// Fitting the published-record model's free parameters (PublishedScales) on named records only
// (issue 10 §4 `--calibrate-on`), by bounded nonlinear least squares (Eigen, Levenberg–Marquardt
// on log-scales, projected onto the bounds):
//   minimize Σ_i (ln predicted_i(θ) − ln published_i)²   over θ = (gemm, attention, hbm, host),
//   each scale in [kScaleLower, kScaleUpper]
// Residuals are relative (log), because the figures span 0.1 s .. 2000 s. Uncertainty: the
// covariance s²·(JᵀJ)⁻¹ at the optimum in log-scale space, s² = SSR / (n − p) (n > p), reported as
// a relative standard error per scale; a parameter the fitted records do not constrain (a zero
// column of J) keeps its start value and reports an infinite error.
#include <functional>
#include <string>
#include <vector>

#include "model/calibration.hpp"
#include "model/published_predict.hpp"

namespace chunkflow {

inline constexpr double kScaleLower = 0.25;
inline constexpr double kScaleUpper = 4.0;

struct PublishedFit {
  PublishedScales scales;
  std::vector<std::string> fitted_ids;
  std::vector<std::string> parameter_names;    ///< "gemm", "attention", "hbm", "host"
  std::vector<double> values;                  ///< the fitted scales, same order
  std::vector<double> relative_standard_error; ///< σ(scale)/scale (∞ when unconstrained)
  std::vector<double> residuals;               ///< ln(pred/published) per fitted record, at the optimum
  double rms_log_residual = 0;
  int iterations = 0;
};

/// Generic bounded fit: `log_residuals(scales)` returns one residual per data point. Used with
/// the published predictor, and by the tests with synthetic models.
PublishedFit fit_scales(const std::function<std::vector<double>(const PublishedScales&)>& log_residuals,
                        int points);

/// Fits the scales on the time records among `records` whose ids are in `ids`. Throws InputError
/// (field "--calibrate-on") for an unknown id, a record that is not a time record, or no ids.
PublishedFit fit_published(const std::vector<PublishedRecord>& records, const std::vector<std::string>& ids);

/// A calibration file holding the fitted scales (load_calibration / `simulate --calibration`
/// accept it; node_id "any": the scales apply to every node's catalogue figures); the fitted
/// record ids are its sources (path = the record file).
Calibration published_calibration(const PublishedFit& fit, const std::vector<PublishedRecord>& records);

}  // namespace chunkflow
