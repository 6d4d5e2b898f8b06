#pragma once
// `chunkflow validate --published`: predicts every published record (model/published_predict.hpp)
// and compares with the published figure; error statistics over the time records (peak memory and
// bandwidth records are reported apart), scaling series (1 → N GPUs) predicted against published
// speedup, and the held-out split when a calibration was fitted on named records.
#include <string>
#include <vector>

#include "model/calibration_published.hpp"
#include "model/published_predict.hpp"

namespace chunkflow {

struct PublishedRow {
  PublishedRecord record;
  PublishedPrediction prediction;
  bool used_for_fitting = false;
};

struct ScalingPoint {
  std::string id;
  int gpu_count = 1;
  double published_speedup = 1, predicted_speedup = 1, error = 0;  ///< vs the series' first point
};
struct ScalingSeries {
  std::string name;
  std::vector<ScalingPoint> points;  ///< by GPU count; the first is the base
};

struct ErrorStats {
  int records = 0;
  double mean_abs_error = 0, max_abs_error = 0;
  std::string worst_id;
};

struct PublishedValidation {
  std::vector<PublishedRow> rows;
  ErrorStats time_all;        ///< every time record
  ErrorStats time_held_out;   ///< time records not used for fitting (= time_all without a fit)
  ErrorStats time_fitted;     ///< time records used for fitting
  ErrorStats memory;          ///< peak-memory records
  ErrorStats other;           ///< bandwidth records
  std::vector<ScalingSeries> series;
};

/// Predicts `records` (all, or those in `ids` when not empty; an unknown id throws InputError
/// field "--ids") with `scales`; `fitted_ids` are marked and kept out of time_held_out.
PublishedValidation validate_published(const std::vector<PublishedRecord>& records, const std::vector<std::string>& ids,
                                       const PublishedScales& scales, const std::vector<std::string>& fitted_ids);

/// The calibration rule of `--calibrate-on auto`: one time record per (GPU, model) group, the one
/// with the fewest GPUs, ties broken by id; at most a third of the time records by construction
/// when groups have ≥ 3 records (checked: throws InputError otherwise).
std::vector<std::string> calibration_rule_ids(const std::vector<PublishedRecord>& records);

/// The folder of the published data set: `dir` when given, else traces/published under the source
/// tree recorded at build time, beside the executable's parent, or the working directory.
std::string find_published_dir(const std::string& dir, const std::string& program_dir);

}  // namespace chunkflow
