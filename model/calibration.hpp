#pragma once
// Calibration: the simulator's efficiency factors fitted by least squares (Eigen, only in
// calibration.cpp) from the hardware harness's microbenchmark JSON (hw/BENCH_SCHEMA.md), with
// their provenance and fit quality, and their application to a NodeSpec.
//
// Fits (every one weighted by 1/measured, i.e. it minimizes the relative residuals, because the
// points span 4 KiB .. 1 GiB and µs .. s; systems-and-hardware.md §4, §5):
//  - "h2d", "d2h" (keys h2d_bandwidth, d2h_bandwidth; points {bytes, time_s_median}):
//      t = α + bytes / β. When the one-segment fit's max relative residual exceeds
//      kSizeDependentResidual, a two-segment fit (small and bulk sizes, the break chosen among
//      the measured sizes to minimize the weighted squared residuals) is kept instead: the
//      transfer rate is size dependent (DMA setup and PCIe read-request pipelining).
//      Applied: h2d_latency_s = α_h2d and copy_engine_bytes_per_s = β_h2d of the bulk segment
//      (chunks are ≥ 1 MiB; the bulk regime is what prefetch sees); every host link's H2D capacity
//      is raised to at least β_h2d; every host link's D2H capacity = β_d2h.
//  - "coupling" (h2d_with_d2h; points {bytes, h2d_time_s_median, d2h_time_s_median}):
//      per direction, the retained fraction of the alone rate under concurrent traffic:
//      t_concurrent − α = (t_alone − α) / c_dir, least squares in c⁻¹ (relative weights), bounded to
//      c_dir ∈ (0, 1] (traffic in the other direction cannot speed a copy up; the unbounded value is
//      kept in the fit as unbounded_retained_fraction). t_alone is the bench's paired alone time at
//      each size (<dir>_alone_time_s_median, measured beside the concurrent one) when every point
//      has it, else α + bytes/β from the fits above. Applied: duplex_bytes_per_s = c_h2d·β_h2d + c_d2h·β_d2h, β_h2d the rate
//      one H2D copy gets alone (min of link and copy engine), β_d2h the link's D2H capacity (the measured
//      total of both directions together). The simulator's duplex constraint splits that total
//      max-min fairly; the asymmetric split c_h2d ≠ c_d2h is recorded but not yet applied (it
//      needs per-direction flow weights in sim/).
//  - "h2d_with_collective_{copy_engine,kernel}_coupling" (h2d_with_collective_*): the H2D
//      retained fraction beside a proxy all-to-all, fitted as the coupling above; recorded for
//      comparison with the simulator's max-min contention, not applied.
//  - "collective" (collective_proxy_copy_engine, collective_proxy_kernel or collective_nccl,
//      first present in that order; points {bytes, time_s_median, ulysses_degree|ranks}):
//      t = α + out_bytes / β with out_bytes = (P−1)/P · bytes (what leaves one rank).
//      Applied: collective_latency_s = α; collective_flow_bytes_per_s = β for pcie_proxy (one
//      flow out and one back) and β / (P−1) for host_staged (P−1 peer flows per rank).
//  - "compute_slowdown_h2d", "compute_slowdown_collective" (compute_with_h2d,
//      compute_with_collective; points {alone_time_s_median, time_s_median}, hw/BENCH_SCHEMA.md): concurrent =
//      (1 + s) · alone, least squares through the origin. Applied: NodeSpec::compute_slowdown_*.
//  - "gemm" (points {m, k, n, flop, time_s_median}): per point η = flop / (peak · (t − launch)),
//      launch = the node's compute_launch_s; per weight shape (k, n) a table η(m) interpolated
//      linearly in m; the scalar η_comp = Σ flop / (peak · Σ (t − launch)) over all points (the
//      FLOP-weighted efficiency, used by the analytical model's F*). R² and residuals are those
//      of the scalar fit t = flop / (η_comp · peak) + launch (how much the tables add).
//  - "attention" (points {flop, time_s_median}, and rows, q_tokens, kv_tokens, head_dim when the
//      bench gives them): t − launch = flop / (η_attn · k · peak), least squares through the origin,
//      k = attention_kernel_factor of the point's shape (model/kernel_model.hpp; 1 without a shape),
//      so η_attn is the ceiling the simulator multiplies by k again.
// Measurements with status "waived" or without points are skipped (reported, not fatal).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/node.hpp"

namespace chunkflow {

/// A one-segment fit's max relative residual above which a two-segment (size-dependent) fit is
/// kept. 3 %: twice the harness's typical median-of-10 spread.
inline constexpr double kSizeDependentResidual = 0.03;

/// One point of a fit, for the report and the plots.
struct FitPoint {
  double x = 0;           ///< bytes, flop or alone time (per fit, see CalibrationFit::x_name)
  double measured = 0;    ///< measured y (s, or the rate/ratio named by y_name)
  double fitted = 0;      ///< the fitted model's y at x
  std::map<std::string, double> extra;  ///< e.g. m, k, n of a GEMM point
};

/// One fitted relation with its quality.
struct CalibrationFit {
  std::string name;                       ///< "h2d", "d2h", "coupling", "collective", "gemm", ...
  std::string formula;                    ///< e.g. "t = alpha + bytes/beta"
  std::string measurement_key;            ///< the microbenchmark key it came from
  std::string x_name, y_name;             ///< e.g. "bytes", "time_s"
  std::map<std::string, double> parameters;  ///< SI units in the names (alpha_s, beta_bytes_per_s)
  double r_squared = 0;                   ///< 1 − SS_res/SS_tot on y (NaN with < 2 distinct y)
  double max_relative_residual = 0;       ///< max |fitted − measured| / measured
  std::vector<FitPoint> points;
};

/// A measurement file the calibration consumed.
struct CalibrationSource {
  std::string path;                       ///< as given on the command line
  std::string fnv1a64;                    ///< "0x…" hash of the file's bytes (marks runs used for
                                          ///< fitting, whatever their path; see validate)
  std::map<std::string, std::string> context;  ///< the file's context block (non-strings dumped)
};

struct Calibration {
  std::string file;                       ///< where it was read from ("" when fitted in memory)
  std::string node_id;                    ///< the node the efficiencies are relative to
  double peak_flop_per_s = 0;             ///< the peak used for η (to rescale onto another peak)
  double compute_launch_s = 0;            ///< the launch cost subtracted before computing η
  std::vector<CalibrationSource> sources;
  std::vector<CalibrationFit> fits;
  std::vector<std::string> skipped;       ///< "key: reason" of measurements not used

  // Applied parameters (absent: the node keeps its value).
  std::optional<double> h2d_latency_s, h2d_bytes_per_s;
  std::optional<double> d2h_bytes_per_s;
  std::optional<double> h2d_coupling, d2h_coupling;  ///< retained fractions under concurrency
  std::optional<double> collective_latency_s, collective_bytes_per_s;  ///< β on out_bytes
  std::optional<double> compute_slowdown_h2d, compute_slowdown_collective;
  std::optional<double> gemm_efficiency, attention_efficiency;
  std::optional<double> tiled_attention_scale;  ///< chunkflow-hw's tiled attention: measured / model
  std::vector<GemmEfficiencyTable> gemm_tables;
  /// Scales fitted on published records (`chunkflow validate --published --calibrate-on`,
  /// model/calibration_published.hpp), GPU-independent: they multiply the node's catalogue
  /// figures (efficiencies clamped to 1) instead of replacing them. hbm_efficiency_scale scales the
  /// streaming rate, and with it the row-reduction rate (2/3 of it); the per-SM rate of eager
  /// broadcast kernels (model/kernel_model.hpp elementwise_bytes_per_s) is fixed, capped by the
  /// scaled streaming rate.
  std::optional<double> gemm_efficiency_scale, attention_efficiency_scale, hbm_efficiency_scale,
      host_kernel_issue_scale;

  const CalibrationFit* fit(const std::string& name) const;  ///< nullptr if absent
};

/// One microbenchmark file as read: its context and measurements (key → points of named numbers
/// and string labels). Shape: hw/BENCH_SCHEMA.md ({"context", "measurements": [{"key", "status",
/// "points": [{...}]}]}).
struct MeasurementFile {
  std::string path;
  std::string fnv1a64;
  std::map<std::string, std::string> context;
  struct Measurement {
    std::string key;
    std::string status = "ok";
    std::string reason;
    std::vector<std::map<std::string, double>> points;  ///< numeric fields of each point
  };
  std::vector<Measurement> measurements;
};

/// Reads a microbenchmark JSON file. Throws InputError naming the file and the JSON pointer
/// (e.g. "bench.json: /measurements/2/points/0/time_s_median: expected a positive number").
MeasurementFile read_measurement_file(const std::string& path);

/// Fits every relation the files allow for `node` (its peak rate and launch cost define η).
/// Throws InputError(file "", field "--measurements") when nothing at all could be fitted, and
/// when one key appears in two files (ambiguous).
Calibration fit_calibration(const std::vector<MeasurementFile>& files, const NodeSpec& node);

/// Writes a calibration as JSON (deterministic, keys sorted): {"context": <provided>,
/// "node_id", "peak_flop_per_s", "compute_launch_s", "sources": [...], "parameters": {...},
/// "gemm_tables": [...], "fits": [...], "skipped": [...]}. `context_json` is a JSON object text.
std::string calibration_to_json(const Calibration& c, const std::string& context_json);

/// Reads a calibration written by calibration_to_json and validates it: every parameter finite
/// and positive (efficiencies in (0, 1], slowdowns and latencies ≥ 0, couplings in (0, 1]), tables
/// with strictly increasing m. Throws InputError naming the file and the JSON pointer
/// (e.g. "cal.json: /parameters/gemm_efficiency: expected an efficiency in (0, 1], got 1.7").
Calibration load_calibration(const std::string& path);

/// Applies `c` to `node` (the mapping of each fit is in the header comment). Efficiencies are
/// rescaled by c.peak_flop_per_s / node.peak_flop_per_s when the peaks differ, so that the
/// achieved FLOP/s is what carries over; an efficiency that would exceed 1 is clamped to 1.
/// Validates the result (throws InputError with field "/node" pointers and c.file).
void apply_calibration(const Calibration& c, NodeSpec& node);

/// FNV-1a 64-bit hash of a file's bytes as "0x%016x"; throws InputError if unreadable.
std::string file_fnv1a64(const std::string& path);

}  // namespace chunkflow
