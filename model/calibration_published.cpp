// Bounded least-squares fit of the published-record scales; the method is in the header.
#include "model/calibration_published.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/error.hpp"

namespace chunkflow {

namespace {

constexpr int kParameters = 4;
const char* const kNames[kParameters] = {"gemm", "attention", "hbm", "host"};

PublishedScales from_log(const Eigen::Vector4d& x) {
  PublishedScales s;
  s.gemm = std::exp(x[0]);
  s.attention = std::exp(x[1]);
  s.hbm = std::exp(x[2]);
  s.host = std::exp(x[3]);
  return s;
}

Eigen::VectorXd to_vector(const std::vector<double>& v) {
  Eigen::VectorXd out(Eigen::Index(v.size()));
  for (size_t i = 0; i < v.size(); ++i) out[Eigen::Index(i)] = v[i];
  return out;
}

}  // namespace

PublishedFit fit_scales(const std::function<std::vector<double>(const PublishedScales&)>& log_residuals, int points) {
  const double lo = std::log(kScaleLower), hi = std::log(kScaleUpper);
  auto project = [&](Eigen::Vector4d x) {
    for (int i = 0; i < kParameters; ++i) x[i] = std::clamp(x[i], lo, hi);
    return x;
  };
  auto eval = [&](const Eigen::Vector4d& x) { return to_vector(log_residuals(from_log(x))); };
  Eigen::Vector4d x = Eigen::Vector4d::Zero();
  Eigen::VectorXd r = eval(x);
  double cost = r.squaredNorm();
  double lambda = 1e-3;
  const double h = 1e-5;  // finite-difference step in log-scale (relative 1e-5)
  PublishedFit fit;
  Eigen::MatrixXd J(r.size(), kParameters);
  for (int it = 0; it < 200; ++it) {
    fit.iterations = it + 1;
    for (int j = 0; j < kParameters; ++j) {
      Eigen::Vector4d xp = x, xm = x;
      xp[j] += h;
      xm[j] -= h;
      J.col(j) = (eval(xp) - eval(xm)) / (2 * h);
    }
    // Active bounds: a parameter at a bound whose gradient pushes outward is frozen this step.
    const Eigen::Vector4d g = J.transpose() * r;
    Eigen::Matrix4d A = J.transpose() * J;
    bool frozen[kParameters];
    for (int j = 0; j < kParameters; ++j) {
      frozen[j] = (x[j] <= lo + 1e-12 && g[j] > 0) || (x[j] >= hi - 1e-12 && g[j] < 0) || A(j, j) < 1e-20;
      if (frozen[j]) {
        A.row(j).setZero();
        A.col(j).setZero();
        A(j, j) = 1;
      }
    }
    bool improved = false;
    for (int tries = 0; tries < 20 && !improved; ++tries) {
      Eigen::Matrix4d M = A;
      for (int j = 0; j < kParameters; ++j) M(j, j) += lambda * std::max(A(j, j), 1e-12);
      Eigen::Vector4d rhs = -g;
      for (int j = 0; j < kParameters; ++j)
        if (frozen[j]) rhs[j] = 0;
      const Eigen::Vector4d step = M.ldlt().solve(rhs);
      const Eigen::Vector4d xn = project(x + step);
      const Eigen::VectorXd rn = eval(xn);
      const double cn = rn.squaredNorm();
      if (cn < cost) {
        const double gain = cost - cn;
        x = xn;
        r = rn;
        cost = cn;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
        if (gain < 1e-14 * std::max(1.0, cost)) it = 1000;  // converged
      } else {
        lambda *= 4;
      }
    }
    if (!improved) break;
  }
  // Uncertainty at the optimum.
  for (int j = 0; j < kParameters; ++j) {
    Eigen::Vector4d xp = x, xm = x;
    xp[j] += h;
    xm[j] -= h;
    J.col(j) = (eval(xp) - eval(xm)) / (2 * h);
  }
  const int n = int(r.size());
  const double s2 = n > kParameters ? cost / double(n - kParameters) : std::numeric_limits<double>::quiet_NaN();
  std::vector<int> free;
  for (int j = 0; j < kParameters; ++j)
    if (J.col(j).norm() > 1e-9) free.push_back(j);
  Eigen::MatrixXd Jf(n, Eigen::Index(free.size()));
  for (size_t q = 0; q < free.size(); ++q) Jf.col(Eigen::Index(q)) = J.col(free[q]);
  const Eigen::MatrixXd cov = free.empty() ? Eigen::MatrixXd() : Eigen::MatrixXd((Jf.transpose() * Jf).inverse() * s2);
  fit.scales = from_log(x);
  for (int j = 0; j < kParameters; ++j) {
    fit.parameter_names.push_back(kNames[j]);
    fit.values.push_back(std::exp(x[j]));
    double se = std::numeric_limits<double>::infinity();
    for (size_t q = 0; q < free.size(); ++q)
      if (free[q] == j) se = std::sqrt(std::max(0.0, cov(Eigen::Index(q), Eigen::Index(q))));
    fit.relative_standard_error.push_back(se);  // σ of ln(scale) = relative error of the scale
  }
  fit.residuals.assign(r.data(), r.data() + r.size());
  fit.rms_log_residual = n > 0 ? std::sqrt(cost / n) : 0;
  (void)points;
  return fit;
}

PublishedFit fit_published(const std::vector<PublishedRecord>& records, const std::vector<std::string>& ids) {
  if (ids.empty()) throw InputError("", "--calibrate-on", "expected at least one record id");
  std::vector<const PublishedRecord*> chosen;
  for (const std::string& id : ids) {
    const auto it = std::find_if(records.begin(), records.end(), [&](const PublishedRecord& r) { return r.id == id; });
    if (it == records.end()) throw InputError("", "--calibrate-on", "unknown record id \"" + id + "\"");
    if (!it->is_time())
      throw InputError("", "--calibrate-on", "expected time records; \"" + id + "\" measures " + published_measure_name(it->measures));
    chosen.push_back(&*it);
  }
  auto residuals = [&](const PublishedScales& s) {
    std::vector<double> out;
    for (const PublishedRecord* r : chosen) out.push_back(std::log(predict_published(*r, s).predicted / r->value));
    return out;
  };
  PublishedFit fit = fit_scales(residuals, int(chosen.size()));
  fit.fitted_ids = ids;
  return fit;
}

Calibration published_calibration(const PublishedFit& fit, const std::vector<PublishedRecord>& records) {
  Calibration c;
  c.node_id = "any";
  c.peak_flop_per_s = 989.4e12;  // unused by the scales (no absolute efficiency is written)
  c.compute_launch_s = 0;
  c.gemm_efficiency_scale = fit.scales.gemm;
  c.attention_efficiency_scale = fit.scales.attention;
  c.hbm_efficiency_scale = fit.scales.hbm;
  c.host_kernel_issue_scale = fit.scales.host;
  for (const std::string& id : fit.fitted_ids)
    for (const PublishedRecord& r : records)
      if (r.id == id) c.sources.push_back({r.file, file_fnv1a64(r.file), {{"record", r.id}, {"source", r.source}}});
  CalibrationFit f;
  f.name = "published";
  f.formula = "min sum (ln predicted - ln published)^2 over scales in [0.25, 4]";
  f.measurement_key = "traces/published";
  f.x_name = "record";
  f.y_name = "ln(predicted/published)";
  for (size_t j = 0; j < fit.values.size(); ++j) {
    f.parameters[fit.parameter_names[j] + "_scale"] = fit.values[j];
    if (std::isfinite(fit.relative_standard_error[j]))
      f.parameters[fit.parameter_names[j] + "_scale_relative_standard_error"] = fit.relative_standard_error[j];
  }
  double worst = 0;
  for (size_t i = 0; i < fit.residuals.size(); ++i) {
    worst = std::max(worst, std::abs(std::expm1(fit.residuals[i])));
    FitPoint p;
    p.x = double(i);
    p.measured = 0;
    p.fitted = fit.residuals[i];
    f.points.push_back(p);
  }
  f.max_relative_residual = worst;
  f.r_squared = std::numeric_limits<double>::quiet_NaN();
  c.fits.push_back(f);
  return c;
}

}  // namespace chunkflow
