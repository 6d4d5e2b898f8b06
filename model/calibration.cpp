// Calibration fits from microbenchmarks (Eigen least squares). Formulas and the mapping of each fit
// onto NodeSpec fields: model/calibration.hpp. The calibration file (write, read, apply) is in
// model/calibration_io.cpp; the fit on published records in model/calibration_published.cpp; the
// published data set in model/published.cpp. Eigen appears only in calibration code
// (shared/DESIGN.md "Rooms").
#include "model/calibration.hpp"
#include "model/calibration_detail.hpp"
#include "model/json_file.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "model/error.hpp"
#include "model/fnv1a.hpp"
#include "model/kernel_model.hpp"
#include "model/tiled_attention.hpp"

namespace chunkflow {

using nlohmann::json;

// ---- NodeSpec helpers declared in model/node.hpp -------------------------------------------------

double GemmEfficiencyTable::efficiency_at(double m_tokens) const {
  if (m.size() == 1 || m_tokens <= m.front()) return efficiency.front();
  if (m_tokens >= m.back()) return efficiency.back();
  const auto hi = std::upper_bound(m.begin(), m.end(), m_tokens) - m.begin();
  const auto lo = hi - 1;
  const double f = (m_tokens - m[lo]) / (m[hi] - m[lo]);
  return efficiency[lo] + f * (efficiency[hi] - efficiency[lo]);
}

const GemmEfficiencyTable* NodeSpec::gemm_table(int64_t k, int64_t n) const {
  for (const GemmEfficiencyTable& t : gemm_efficiency_tables)
    if (t.k == k && t.n == n && !t.m.empty()) return &t;
  return nullptr;
}

const CalibrationFit* Calibration::fit(const std::string& name) const {
  for (const CalibrationFit& f : fits)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- least squares ---------------------------------------------------------------------------------

/// Solves min_c Σ_i ((A_i·c − y_i) / y_i)² (relative residuals) with Eigen's column-pivoting QR.
/// A: n × p, y: n (all y_i > 0). Returns c (p).
Eigen::VectorXd relative_least_squares(const Eigen::MatrixXd& A, const Eigen::VectorXd& y) {
  const Eigen::VectorXd w = y.cwiseInverse();
  const Eigen::MatrixXd Aw = w.asDiagonal() * A;
  const Eigen::VectorXd yw = w.cwiseProduct(y);
  return Aw.colPivHouseholderQr().solve(yw);
}

/// R² = 1 − SS_res/SS_tot on the measured values (NaN when SS_tot = 0) and max relative residual.
void set_quality(CalibrationFit& f) {
  double mean = 0;
  for (const auto& p : f.points) mean += p.measured;
  mean /= double(std::max<std::size_t>(1, f.points.size()));
  double ss_res = 0, ss_tot = 0, max_rel = 0;
  for (const auto& p : f.points) {
    ss_res += (p.fitted - p.measured) * (p.fitted - p.measured);
    ss_tot += (p.measured - mean) * (p.measured - mean);
    max_rel = std::max(max_rel, std::abs(p.fitted - p.measured) / std::abs(p.measured));
  }
  f.r_squared = ss_tot > 0 ? 1.0 - ss_res / ss_tot : kNaN;
  f.max_relative_residual = max_rel;
}

struct AlphaBeta {
  double alpha_s = 0, beta = 0, weighted_sse = 0;
};

/// t = α + x/β over points [lo, hi) of (x, t), relative weights; α < 0 is refitted as α = 0.
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t, std::size_t lo, std::size_t hi) {
  const Eigen::Index n = Eigen::Index(hi - lo);
  Eigen::MatrixXd A(n, 2);
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    A(i, 0) = 1.0;
    A(i, 1) = x[lo + std::size_t(i)];
    y(i) = t[lo + std::size_t(i)];
  }
  Eigen::VectorXd c = relative_least_squares(A, y);
  if (c(0) < 0) {
    const Eigen::VectorXd c1 = relative_least_squares(A.col(1), y);
    c = Eigen::Vector2d(0.0, c1(0));
  }
  AlphaBeta r;
  r.alpha_s = c(0);
  r.beta = c(1) > 0 ? 1.0 / c(1) : std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < n; ++i) {
    const double e = (A.row(i).dot(c) - y(i)) / y(i);
    r.weighted_sse += e * e;
  }
  return r;
}

/// y = s·x through the origin, relative weights. Returns s.
double fit_through_origin(const std::vector<double>& x, const std::vector<double>& y) {
  Eigen::MatrixXd A(Eigen::Index(x.size()), 1);
  Eigen::VectorXd v(Eigen::Index(y.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    A(Eigen::Index(i), 0) = x[i];
    v(Eigen::Index(i)) = y[i];
  }
  return relative_least_squares(A, v)(0);
}

// ---- measurement access -------------------------------------------------------------------------------

struct Found {
  const MeasurementFile* file = nullptr;
  const MeasurementFile::Measurement* m = nullptr;
};

/// Numbers of field `name` over the points; error naming file and pointer when one lacks it.
double need(const Found& f, std::size_t i, const std::string& name) {
  auto it = f.m->points[i].find(name);
  if (it == f.m->points[i].end()) {
    std::size_t mi = 0;
    for (; mi < f.file->measurements.size() && &f.file->measurements[mi] != f.m; ++mi) {
    }
    throw InputError(f.file->path, "/measurements/" + std::to_string(mi) + "/points/" + std::to_string(i) + "/" + name,
                     "missing; expected a positive number (measurement \"" + f.m->key + "\")");
  }
  return it->second;
}

bool has(const Found& f, std::size_t i, const std::string& name) { return f.m->points[i].count(name) > 0; }

/// Transfer fit "h2d"/"d2h" with the size-dependent fallback. x = bytes, y = time_s.
CalibrationFit transfer_fit(const std::string& name, const Found& f) {
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < f.m->points.size(); ++i) pts.push_back({need(f, i, "bytes"), need(f, i, "time_s_median")});
  std::sort(pts.begin(), pts.end());
  std::vector<double> x, t;
  for (auto [a, b] : pts) x.push_back(a), t.push_back(b);
  CalibrationFit fit;
  fit.name = name;
  fit.measurement_key = f.m->key;
  fit.x_name = "bytes";
  fit.y_name = "time_s";
  if (x.size() < 2 || x.front() == x.back())  // sorted: the same size everywhere leaves β undetermined
    throw InputError(f.file->path, "/measurements", "\"" + f.m->key + "\": expected ≥ 2 points of distinct sizes to fit α and β");
  const AlphaBeta one = fit_alpha_beta(x, t, 0, x.size());
  auto predict = [](const AlphaBeta& ab, double bytes) { return ab.alpha_s + bytes / ab.beta; };
  double max_rel = 0;
  for (std::size_t i = 0; i < x.size(); ++i) max_rel = std::max(max_rel, std::abs(predict(one, x[i]) - t[i]) / t[i]);
  // Size-dependent: two segments, split at the break that minimizes the weighted SSE (each ≥ 2 points).
  std::size_t best_break = 0;
  AlphaBeta small, bulk;
  if (max_rel > kSizeDependentResidual && x.size() >= 4) {
    double best = one.weighted_sse;
    for (std::size_t b = 2; b + 2 <= x.size(); ++b) {
      const AlphaBeta s = fit_alpha_beta(x, t, 0, b), l = fit_alpha_beta(x, t, b, x.size());
      // Keep the split only when it removes at least half the squared residual (not noise).
      if (s.weighted_sse + l.weighted_sse < 0.5 * best) {
        best = s.weighted_sse + l.weighted_sse;
        best_break = b, small = s, bulk = l;
      }
    }
  }
  if (best_break == 0) {
    fit.formula = "t = alpha + bytes/beta";
    fit.parameters = {{"alpha_s", one.alpha_s}, {"beta_bytes_per_s", one.beta}};
    for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({x[i], t[i], predict(one, x[i]), {}});
  } else {
    fit.formula = "t = alpha + bytes/beta for bytes >= break_bytes, small_alpha + bytes/small_beta below";
    fit.parameters = {{"alpha_s", bulk.alpha_s},
                      {"beta_bytes_per_s", bulk.beta},
                      {"small_alpha_s", small.alpha_s},
                      {"small_beta_bytes_per_s", small.beta},
                      {"break_bytes", x[best_break]}};
    for (std::size_t i = 0; i < x.size(); ++i)
      fit.points.push_back({x[i], t[i], predict(i < best_break ? small : bulk, x[i]), {}});
  }
  set_quality(fit);
  return fit;
}

/// Transfer time predicted by a transfer fit at `bytes`.
double transfer_time_s(const CalibrationFit& f, double bytes) {
  const auto& p = f.parameters;
  if (p.count("break_bytes") && bytes < p.at("break_bytes")) return p.at("small_alpha_s") + bytes / p.at("small_beta_bytes_per_s");
  return p.at("alpha_s") + bytes / p.at("beta_bytes_per_s");
}

/// Per-direction coupling: concurrent time = α + bytes / (c · β) → (t − α) = c⁻¹ · (bulk time alone).
/// The bulk time alone at each point is, by preference, the bench's paired alone time at that size
/// (`<dir>_alone_time_s_median`, measured in the same bench right beside the concurrent one,
/// hw/BENCH_SCHEMA.md) minus α; without it, the alone fit's bytes/β at that size. The paired time is
/// preferred because the alone sweep ran at another moment: on the H100 of issue 13 its 256 MiB D2H
/// point read 37 GB/s against 55 GB/s in the paired measurement, which pulled the alone fit's β
/// below the concurrent rate and gave c_d2h = 1.138.
/// c is a bounded least-squares estimate, c ∈ (0, 1]: concurrent traffic in the other direction (or a
/// collective) only adds load to resources the copy shares (the link's lanes, the root complex, host
/// memory, copy engines), so it cannot speed the copy up (systems-and-hardware.md §3). The fit is
/// linear in c⁻¹ (one parameter, convex objective), so the bounded optimum is the clamp of the
/// unbounded one at c⁻¹ = 1; the
/// unbounded value is kept as "unbounded_retained_fraction" so that a clamp is visible.
/// Throws InputError when no point lies above the latency α.
CalibrationFit coupling_fit(const std::string& dir, const Found& f, const CalibrationFit& alone) {
  CalibrationFit fit;
  fit.name = dir + "_coupling";
  fit.measurement_key = f.m->key;
  fit.x_name = "bytes";
  fit.y_name = "time_s";
  const std::string paired_key = dir + "_alone_time_s_median";
  bool paired = true;
  for (std::size_t i = 0; i < f.m->points.size(); ++i) paired = paired && has(f, i, paired_key);
  fit.formula = "t = alpha + t_bulk_alone/c, c in (0, 1] (bounded least squares), alpha of the " + dir +
                " fit alone, t_bulk_alone = " + (paired ? paired_key + " - alpha (paired, same bench)" : "bytes/beta of the " + dir + " fit alone");
  const double alpha = transfer_time_s(alone, 0.0);
  std::vector<double> x, y, bytes_v, t_v;
  for (std::size_t i = 0; i < f.m->points.size(); ++i) {
    const double bytes = need(f, i, "bytes"), t = need(f, i, dir + "_time_s_median");
    const double bulk_s = paired ? need(f, i, paired_key) - alpha : transfer_time_s(alone, bytes) - alpha;
    if (t - alpha <= 0 || bulk_s <= 0) continue;
    x.push_back(bulk_s);
    y.push_back(t - alpha);
    bytes_v.push_back(bytes);
    t_v.push_back(t);
  }
  if (x.empty()) throw InputError(f.file->path, "/measurements", "\"" + f.m->key + "\": no point slower than the latency α");
  const double unbounded_c = 1.0 / fit_through_origin(x, y);
  const double c = std::min(1.0, unbounded_c);
  const double inv_c = 1.0 / c;
  fit.parameters = {{"retained_fraction", c}, {"unbounded_retained_fraction", unbounded_c}, {"paired_alone_times", paired ? 1.0 : 0.0}};
  for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({bytes_v[i], t_v[i], t_v[i] - y[i] + x[i] * inv_c, {}});
  set_quality(fit);
  return fit;
}

}  // namespace

// ---- reading microbenchmark files ---------------------------------------------------------------------

std::string file_fnv1a64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the file");
  Fnv1a64 h;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) h.add(buf, std::size_t(in.gcount()));
  return h.hex();
}

namespace {

json parse_file(const std::string& path) { return read_json_file(path); }


}  // namespace

MeasurementFile read_measurement_file(const std::string& path) {
  const json j = parse_file(path);
  MeasurementFile f;
  f.path = path;
  f.fnv1a64 = file_fnv1a64(path);
  if (!j.is_object()) throw InputError(path, "/", "expected a JSON object with \"context\" and \"measurements\"");
  if (j.contains("context")) f.context = context_map(j["context"], path, "/context");
  if (!j.contains("measurements") || !j["measurements"].is_array())
    throw InputError(path, "/measurements", "missing; expected an array of {\"key\", \"points\"} (hw/BENCH_SCHEMA.md)");
  const json& ms = j["measurements"];
  for (std::size_t i = 0; i < ms.size(); ++i) {
    const std::string at = "/measurements/" + std::to_string(i);
    const json& m = ms[i];
    if (!m.is_object()) throw InputError(path, at, "expected an object, got " + m.dump());
    if (!m.contains("key") || !m["key"].is_string()) throw InputError(path, at + "/key", "missing; expected a string");
    MeasurementFile::Measurement out;
    out.key = m["key"].get<std::string>();
    if (m.contains("status")) {
      if (!m["status"].is_string()) throw InputError(path, at + "/status", "expected \"ok\" or \"waived\", got " + m["status"].dump());
      out.status = m["status"].get<std::string>();
    }
    if (m.contains("reason") && m["reason"].is_string()) out.reason = m["reason"].get<std::string>();
    if (m.contains("points")) {
      const json& pts = m["points"];
      if (!pts.is_array()) throw InputError(path, at + "/points", "expected an array, got " + pts.dump());
      for (std::size_t p = 0; p < pts.size(); ++p) {
        const std::string pat = at + "/points/" + std::to_string(p);
        if (!pts[p].is_object()) throw InputError(path, pat, "expected an object, got " + pts[p].dump());
        std::map<std::string, double> nums;
        for (auto it = pts[p].begin(); it != pts[p].end(); ++it) {
          if (!it->is_number()) continue;  // labels (model, linear, ...)
          const double v = it->get<double>();
          const bool is_time_or_size = it.key().find("time_s") != std::string::npos || it.key() == "bytes" ||
                                       it.key() == "flop";
          if (!std::isfinite(v) || (is_time_or_size && !(v > 0)))
            throw InputError(path, pat + "/" + it.key(), "expected a positive number, got " + it->dump());
          nums[it.key()] = v;
        }
        out.points.push_back(std::move(nums));
      }
    }
    f.measurements.push_back(std::move(out));
  }
  return f;
}

// ---- fitting ------------------------------------------------------------------------------------------

Calibration fit_calibration(const std::vector<MeasurementFile>& files, const NodeSpec& node) {
  Calibration c;
  c.node_id = node.id;
  c.peak_flop_per_s = node.peak_flop_per_s;
  c.compute_launch_s = node.compute_launch_s;
  std::map<std::string, Found> by_key;
  for (const MeasurementFile& f : files) {
    c.sources.push_back({f.path, f.fnv1a64, f.context});
    for (const auto& m : f.measurements) {
      if (m.status != "ok") {
        c.skipped.push_back(m.key + ": " + m.status + (m.reason.empty() ? "" : " (" + m.reason + ")"));
        continue;
      }
      if (m.points.empty()) {
        c.skipped.push_back(m.key + ": no points");
        continue;
      }
      if (by_key.count(m.key))
        throw InputError("", "--measurements",
                         "measurement \"" + m.key + "\" appears in both " + by_key[m.key].file->path + " and " + f.path +
                             "; give one file per measurement");
      by_key[m.key] = {&f, &m};
    }
  }
  auto found = [&](const std::string& key) -> const Found* {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : &it->second;
  };
  std::set<std::string> used;

  // Transfers alone.
  for (const std::string dir : {"h2d", "d2h"}) {
    if (const Found* f = found(dir + "_bandwidth")) {
      c.fits.push_back(transfer_fit(dir, *f));
      used.insert(f->m->key);
      if (dir == "h2d") {
        c.h2d_latency_s = c.fits.back().parameters.at("alpha_s");
        c.h2d_bytes_per_s = c.fits.back().parameters.at("beta_bytes_per_s");
      } else {
        c.d2h_bytes_per_s = c.fits.back().parameters.at("beta_bytes_per_s");
      }
    }
  }
  // Coupling under concurrent H2D + D2H.
  if (const Found* f = found("h2d_with_d2h")) {
    const CalibrationFit* h = c.fit("h2d");
    const CalibrationFit* d = c.fit("d2h");
    if (!h || !d) {
      c.skipped.push_back("h2d_with_d2h: needs h2d_bandwidth and d2h_bandwidth to separate coupling from latency");
    } else {
      const CalibrationFit hc = coupling_fit("h2d", *f, *h), dc = coupling_fit("d2h", *f, *d);
      c.h2d_coupling = hc.parameters.at("retained_fraction");
      c.d2h_coupling = dc.parameters.at("retained_fraction");
      c.fits.push_back(hc);
      c.fits.push_back(dc);
      used.insert(f->m->key);
    }
  }
  // Prefetch beside a collective (recorded, not applied: the simulator's max-min links model this
  // contention from first principles; the fit says how far that is from the measurement).
  for (const std::string key : {"h2d_with_collective_copy_engine", "h2d_with_collective_kernel"}) {
    const Found* f = found(key);
    if (!f) continue;
    const CalibrationFit* h = c.fit("h2d");
    if (!h) {
      c.skipped.push_back(key + ": needs h2d_bandwidth");
      continue;
    }
    CalibrationFit fit = coupling_fit("h2d", *f, *h);
    fit.name = key + "_coupling";
    c.fits.push_back(fit);
    used.insert(key);
  }
  // The collective: t = α + out_bytes/β. The SM-driven proxy first: the simulator's pcie-proxy all-to-all
  // is SM-driven (per-flow cap shm_flow_bytes_per_s, like NCCL's SHM transport) and shares the link
  // with prefetch by weighted max-min and its SM-read resource (model/routes.hpp). The copy-engine proxy's host-to-device half queues behind the prefetch
  // copies on the copy engine instead, which the simulator does not model (H200, 2026-11-26,
  // layerwise FLUX 1024² on one GPU: 596.3 ms a step with the copy-engine proxy, its all-to-alls
  // 430 ms; 464.6 ms with the kernel proxy; README.md "First measurements on an H200").
  for (const std::string key : {"collective_proxy_kernel", "collective_proxy_copy_engine", "collective_nccl", "collective"}) {
    const Found* f = found(key);
    if (!f) continue;
    std::vector<std::pair<double, double>> pts;
    double degree = 2;
    for (std::size_t i = 0; i < f->m->points.size(); ++i) {
      const double bytes = need(*f, i, "bytes");
      const double P = has(*f, i, "ulysses_degree") ? need(*f, i, "ulysses_degree") : has(*f, i, "ranks") ? need(*f, i, "ranks") : 2.0;
      const double out = has(*f, i, "out_bytes") ? need(*f, i, "out_bytes") : bytes * (P - 1) / P;
      pts.push_back({out, need(*f, i, "time_s_median")});
      degree = P;
    }
    std::sort(pts.begin(), pts.end());
    std::vector<double> x, t;
    for (auto [a, b] : pts) x.push_back(a), t.push_back(b);
    if (x.size() < 2) {
      c.skipped.push_back(key + ": fewer than 2 points");
      continue;
    }
    const AlphaBeta ab = fit_alpha_beta(x, t, 0, x.size());
    CalibrationFit fit;
    fit.name = "collective";
    fit.measurement_key = key;
    fit.formula = "t = alpha + out_bytes/beta, out_bytes = (P-1)/P * per-rank buffer bytes";
    fit.x_name = "out_bytes";
    fit.y_name = "time_s";
    fit.parameters = {{"alpha_s", ab.alpha_s}, {"beta_bytes_per_s", ab.beta}, {"ulysses_degree", degree}};
    for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({x[i], t[i], ab.alpha_s + x[i] / ab.beta, {}});
    set_quality(fit);
    c.fits.push_back(fit);
    c.collective_latency_s = ab.alpha_s;
    c.collective_bytes_per_s = ab.beta;
    used.insert(key);
    for (const std::string other : {"collective_proxy_kernel", "collective_proxy_copy_engine", "collective_nccl", "collective"})
      if (other != key && found(other)) c.skipped.push_back(other + ": not used (" + key + " was fitted first)");
    break;
  }
  // Compute slowdown beside copies / collectives: concurrent = (1 + s)·alone.
  for (const std::string what : {"h2d", "collective"}) {
    const Found* f = found("compute_with_" + what);
    if (!f) continue;
    std::vector<double> x, y;
    for (std::size_t i = 0; i < f->m->points.size(); ++i) {
      x.push_back(need(*f, i, "alone_time_s_median"));
      y.push_back(need(*f, i, "time_s_median"));
    }
    const double k = fit_through_origin(x, y);
    CalibrationFit fit;
    fit.name = "compute_slowdown_" + what;
    fit.measurement_key = f->m->key;
    fit.formula = "t_concurrent = (1 + slowdown) * t_alone";
    fit.x_name = "alone_time_s";
    fit.y_name = "time_s";
    fit.parameters = {{"slowdown", std::max(0.0, k - 1.0)}};
    for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({x[i], y[i], k * x[i], {}});
    set_quality(fit);
    c.fits.push_back(fit);
    (what == "h2d" ? c.compute_slowdown_h2d : c.compute_slowdown_collective) = std::max(0.0, k - 1.0);
    used.insert(f->m->key);
  }
  // GEMM: per-shape tables of η(m) and the FLOP-weighted scalar η_comp.
  if (const Found* f = found("gemm")) {
    const double peak = node.peak_flop_per_s, launch = node.compute_launch_s;
    std::map<std::pair<int64_t, int64_t>, std::map<double, std::vector<double>>> tables;
    double sum_flop = 0, sum_math_s = 0;
    std::vector<std::array<double, 5>> rows;  // m, k, n, flop, t
    for (std::size_t i = 0; i < f->m->points.size(); ++i) {
      const double m = need(*f, i, "m"), k = need(*f, i, "k"), n = need(*f, i, "n");
      const double flop = has(*f, i, "flop") ? need(*f, i, "flop") : 2 * m * k * n;
      const double t = need(*f, i, "time_s_median");
      if (t <= launch) {
        c.skipped.push_back("gemm point " + std::to_string(i) + ": time " + number_text(t) + " s ≤ launch cost");
        continue;
      }
      const double eta = flop / (peak * (t - launch));
      tables[{int64_t(k), int64_t(n)}][m].push_back(eta);
      sum_flop += flop;
      sum_math_s += t - launch;
      rows.push_back({m, k, n, flop, t});
    }
    if (!rows.empty()) {
      const double eta = sum_flop / (peak * sum_math_s);
      c.gemm_efficiency = std::min(1.0, eta);
      CalibrationFit fit;
      fit.name = "gemm";
      fit.measurement_key = "gemm";
      fit.formula = "t = flop/(eta_comp*peak) + launch (scalar); per shape (k,n) a table eta(m) interpolated in m";
      fit.x_name = "flop";
      fit.y_name = "time_s";
      fit.parameters = {{"eta_comp", eta}, {"peak_flop_per_s", peak}, {"launch_s", launch},
                        {"shapes", double(tables.size())}};
      for (const auto& r : rows)
        fit.points.push_back({r[3], r[4], r[3] / (eta * peak) + launch, {{"m", r[0]}, {"k", r[1]}, {"n", r[2]},
                                                                         {"efficiency", r[3] / (peak * (r[4] - launch))}}});
      set_quality(fit);
      c.fits.push_back(fit);
      for (const auto& [shape, by_m] : tables) {
        GemmEfficiencyTable t;
        t.k = shape.first;
        t.n = shape.second;
        for (const auto& [m, etas] : by_m) {
          t.m.push_back(m);
          t.efficiency.push_back(std::min(1.0, std::accumulate(etas.begin(), etas.end(), 0.0) / double(etas.size())));
        }
        c.gemm_tables.push_back(std::move(t));
      }
      // Leave-one-out quality of the tables: each interior point predicted from its neighbours.
      CalibrationFit loo;
      loo.name = "gemm_table_leave_one_out";
      loo.measurement_key = "gemm";
      loo.formula = "eta(m) at an interior m interpolated from the neighbouring measured m";
      loo.x_name = "m";
      loo.y_name = "efficiency";
      for (const auto& t : c.gemm_tables)
        for (std::size_t i = 1; i + 1 < t.m.size(); ++i) {
          const double fr = (t.m[i] - t.m[i - 1]) / (t.m[i + 1] - t.m[i - 1]);
          loo.points.push_back({t.m[i], t.efficiency[i], t.efficiency[i - 1] + fr * (t.efficiency[i + 1] - t.efficiency[i - 1]),
                                {{"k", double(t.k)}, {"n", double(t.n)}}});
        }
      if (!loo.points.empty()) {
        set_quality(loo);
        c.fits.push_back(loo);
      }
      used.insert("gemm");
    }
  }
  // Attention: t − launch = flop/(η_attn·k(shape)·peak), k = the kernel model's factor for the
  // point's shape (sequence-length curve, occupancy, head dim; model/kernel_model.hpp) when the point
  // has rows, q_tokens, kv_tokens and head_dim, else 1. η_attn is then the ceiling the simulator
  // multiplies by k again, so that applied to these shapes it gives back the measured times
  // (fitting flop/(t·peak) directly would count the curve twice at short sequences).
  const Found* attention_found = found("attention");
  if (attention_found && !attention_found->m->points.empty() && has(*attention_found, 0, "tile")) {
    // chunkflow-hw's tiled fallback kernel (its points carry the score tile): it is not the kernel
    // node.attention_efficiency describes (FlashAttention-class), so that is not fitted from it. The
    // simulator prices it from its kernels' GEMM FLOPs and HBM bytes (model/tiled_attention.hpp);
    // the fit is t_measured = s · t_model (relative least squares), s applied as
    // node.tiled_attention_scale: the kernels' achieved rates and the gaps between them.
    std::vector<double> x, y;
    CalibrationFit fit;
    fit.name = "attention_tiled";
    fit.measurement_key = "attention";
    fit.formula = "t = s * t_tiled(shape, tile) (model/tiled_attention.hpp)";
    fit.x_name = "model_time_s";
    fit.y_name = "time_s";
    NodeSpec model_node = node;  // the model unscaled: the fit is its scale
    model_node.tiled_attention_scale = 1.0;
    for (std::size_t i = 0; i < attention_found->m->points.size(); ++i) {
      const AttentionShape a{1, int64_t(need(*attention_found, i, "rows")), int64_t(need(*attention_found, i, "q_tokens")),
                             int64_t(need(*attention_found, i, "kv_tokens")), int64_t(need(*attention_found, i, "head_dim"))};
      x.push_back(tiled_attention_time_s(a, int64_t(need(*attention_found, i, "tile")), model_node));
      y.push_back(need(*attention_found, i, "time_s_median"));
    }
    const double slope = fit_through_origin(x, y);
    fit.parameters = {{"scale", slope}};
    for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({x[i], y[i], slope * x[i], {}});
    set_quality(fit);
    c.fits.push_back(fit);
    c.tiled_attention_scale = slope;
    used.insert("attention");
    attention_found = nullptr;
  }
  if (const Found* f = attention_found) {
    const double peak = node.peak_flop_per_s, launch = node.compute_launch_s;
    std::vector<double> x, y, t, flop;
    bool shaped = true;
    for (std::size_t i = 0; i < f->m->points.size(); ++i) {
      const double ti = need(*f, i, "time_s_median");
      if (ti <= launch) continue;
      double k = 1.0;
      if (has(*f, i, "rows") && has(*f, i, "q_tokens") && has(*f, i, "kv_tokens") && has(*f, i, "head_dim")) {
        const AttentionShape a{1, int64_t(need(*f, i, "rows")), int64_t(need(*f, i, "q_tokens")),
                               int64_t(need(*f, i, "kv_tokens")), int64_t(need(*f, i, "head_dim"))};
        k = attention_kernel_factor(a, AttentionKernel::automatic, node);
      } else {
        shaped = false;
      }
      flop.push_back(need(*f, i, "flop"));
      x.push_back(flop.back() / (peak * k));
      y.push_back(ti - launch);
      t.push_back(ti);
    }
    if (!x.empty()) {
      const double inv_eta = fit_through_origin(x, y);
      CalibrationFit fit;
      fit.name = "attention";
      fit.measurement_key = "attention";
      fit.formula = shaped ? "t = flop/(eta_attn*k(shape)*peak) + launch, k = attention_kernel_factor (model/kernel_model.hpp)"
                           : "t = flop/(eta_attn*peak) + launch";
      fit.x_name = "flop";
      fit.y_name = "time_s";
      fit.parameters = {{"eta_attn", 1.0 / inv_eta}};
      for (std::size_t i = 0; i < x.size(); ++i) fit.points.push_back({flop[i], t[i], x[i] * inv_eta + launch, {}});
      set_quality(fit);
      c.fits.push_back(fit);
      c.attention_efficiency = std::min(1.0, 1.0 / inv_eta);
      used.insert("attention");
    }
  }
  for (const auto& [key, f] : by_key)
    if (!used.count(key) && key.rfind("collective", 0) != 0) c.skipped.push_back(key + ": no fit uses this measurement");
  if (c.fits.empty())
    throw InputError("", "--measurements",
                     "nothing to fit: expected measurements h2d_bandwidth, d2h_bandwidth, h2d_with_d2h, collective_*, "
                     "compute_with_h2d, compute_with_collective, gemm or attention with points");
  return c;
}

}  // namespace chunkflow
