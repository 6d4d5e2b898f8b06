// Timeline names and the step summary; definitions in traces/timeline.hpp.
#include "traces/timeline.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "traces/summary_core.hpp"

namespace chunkflow {

namespace {
/// Set (set_summarize_exhaustive, for tests): this thread's summaries sort every list.
thread_local bool summarize_exhaustive_on = false;
}  // namespace

void set_summarize_exhaustive(bool on) { summarize_exhaustive_on = on; }

bool detail::summarize_exhaustive() { return summarize_exhaustive_on; }

double union_length_s(std::vector<std::pair<double, double>> intervals_s) {
  return detail::union_length_in_place_s(intervals_s);
}

namespace {

/// A Timeline's rows as detail::summarize_rows reads them.
struct TimelineRows {
  const std::vector<TimelineRow>& rows;
  std::size_t size() const { return rows.size(); }
  int op_id(std::size_t i) const { return rows[i].op_id; }
  const std::string& name(std::size_t i) const { return rows[i].name; }
  OpKind kind(std::size_t i) const { return rows[i].kind; }
  Lane lane(std::size_t i) const { return rows[i].lane; }
  int rank(std::size_t i) const { return rows[i].rank; }
  int step(std::size_t i) const { return rows[i].step; }
  double start_s(std::size_t i) const { return rows[i].start_s; }
  double end_s(std::size_t i) const { return rows[i].end_s; }
  double bytes(std::size_t i) const { return rows[i].bytes; }
  const std::vector<int>& deps(std::size_t i) const { return rows[i].deps; }
};

}  // namespace

StepSummary summarize(const Timeline& timeline) {
  StepSummary out = detail::summarize_rows(TimelineRows{timeline.rows}, timeline.steps);
  for (const auto& m : timeline.memory) out.peak_memory_bytes = std::max(out.peak_memory_bytes, m.bytes);
  return out;
}

}  // namespace chunkflow
