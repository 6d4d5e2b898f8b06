// `chunkflow validate --published`: see sim/validate_published.hpp.
#include "sim/validate_published.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "model/error.hpp"

#ifndef CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS
#define CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS ""
#endif

namespace chunkflow {

namespace fs = std::filesystem;

namespace {

void add(ErrorStats& s, const PublishedRow& r) {
  const double e = std::abs(r.prediction.error);
  s.mean_abs_error += e;
  if (e >= s.max_abs_error) {
    s.max_abs_error = e;
    s.worst_id = r.record.id;
  }
  ++s.records;
}

void finish(ErrorStats& s) {
  if (s.records > 0) s.mean_abs_error /= s.records;
}

}  // namespace

PublishedValidation validate_published(const std::vector<PublishedRecord>& records, const std::vector<std::string>& ids,
                                       const PublishedScales& scales, const std::vector<std::string>& fitted_ids) {
  for (const std::string& id : ids)
    if (std::none_of(records.begin(), records.end(), [&](const PublishedRecord& r) { return r.id == id; }))
      throw InputError("", "--ids", "unknown record id \"" + id + "\"");
  PublishedValidation v;
  for (const PublishedRecord& r : records) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), r.id) == ids.end()) continue;
    PublishedRow row;
    row.record = r;
    row.prediction = predict_published(r, scales);
    row.used_for_fitting = std::find(fitted_ids.begin(), fitted_ids.end(), r.id) != fitted_ids.end();
    if (r.is_time()) {
      add(v.time_all, row);
      add(row.used_for_fitting ? v.time_fitted : v.time_held_out, row);
    } else {
      add(r.measures == PublishedMeasure::peak_memory ? v.memory : v.other, row);
    }
    v.rows.push_back(std::move(row));
  }
  for (ErrorStats* s : {&v.time_all, &v.time_held_out, &v.time_fitted, &v.memory, &v.other}) finish(*s);
  // Scaling series: records sharing "series", by GPU count; speedups against the smallest count.
  std::map<std::string, std::vector<const PublishedRow*>> by_series;
  for (const PublishedRow& r : v.rows)
    if (!r.record.series.empty() && r.record.is_time()) by_series[r.record.series].push_back(&r);
  for (auto& [name, rows] : by_series) {
    if (rows.size() < 2) continue;
    std::sort(rows.begin(), rows.end(), [](const PublishedRow* a, const PublishedRow* b) {
      return a->record.gpu_count < b->record.gpu_count;
    });
    ScalingSeries s;
    s.name = name;
    for (const PublishedRow* r : rows) {
      ScalingPoint p;
      p.id = r->record.id;
      p.gpu_count = r->record.gpu_count;
      p.published_speedup = rows.front()->record.value / r->record.value;
      p.predicted_speedup = rows.front()->prediction.predicted / r->prediction.predicted;
      p.error = (p.predicted_speedup - p.published_speedup) / p.published_speedup;
      s.points.push_back(p);
    }
    v.series.push_back(std::move(s));
  }
  return v;
}

std::vector<std::string> calibration_rule_ids(const std::vector<PublishedRecord>& records) {
  std::map<std::pair<std::string, std::string>, const PublishedRecord*> pick;
  int time_records = 0;
  for (const PublishedRecord& r : records) {
    if (!r.is_time()) continue;
    ++time_records;
    const auto key = std::make_pair(r.gpu, r.workload.model);
    const PublishedRecord*& p = pick[key];
    if (!p || r.gpu_count < p->gpu_count || (r.gpu_count == p->gpu_count && r.id < p->id)) p = &r;
  }
  std::vector<std::string> ids;
  for (const auto& [key, r] : pick) ids.push_back(r->id);
  if (3 * int(ids.size()) > time_records)
    throw InputError("", "--calibrate-on", "the rule picks " + std::to_string(ids.size()) + " of " +
                                              std::to_string(time_records) + " time records, more than a third");
  return ids;
}

std::string find_published_dir(const std::string& dir, const std::string& program_dir) {
  if (!dir.empty()) return dir;
  for (const fs::path& d : {fs::path(CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS) / "traces" / "published",
                           fs::path(program_dir) / ".." / "traces" / "published", fs::path("traces") / "published"}) {
    std::error_code ec;
    if (!d.empty() && fs::is_directory(d, ec)) return d.string();
  }
  return "traces/published";
}

}  // namespace chunkflow
