// Timeline names and the step summary; definitions in traces/timeline.hpp.
#include "traces/timeline.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>

namespace chunkflow {

double union_length_s(std::vector<std::pair<double, double>> intervals_s) {
  std::sort(intervals_s.begin(), intervals_s.end());
  double total_s = 0;
  bool open = false;
  double cur_start_s = 0, cur_end_s = 0;
  for (const auto& [start_s, end_s] : intervals_s) {
    if (!(end_s > start_s)) continue;
    if (open && start_s <= cur_end_s) {
      cur_end_s = std::max(cur_end_s, end_s);
    } else {
      if (open) total_s += cur_end_s - cur_start_s;
      cur_start_s = start_s;
      cur_end_s = end_s;
      open = true;
    }
  }
  if (open) total_s += cur_end_s - cur_start_s;
  return total_s;
}

namespace {

constexpr int kLaneCount = 3;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int lane_index(Lane lane) { return static_cast<int>(lane); }

}  // namespace

StepSummary summarize(const Timeline& timeline) {
  if (timeline.rows.empty()) throw std::invalid_argument("summarize: the timeline has no rows");
  if (timeline.steps < 1) {
    throw std::invalid_argument("summarize: the timeline has steps = " +
                                std::to_string(timeline.steps) + ", expected ≥ 1");
  }
  const int s = timeline.steps - 1;

  // Rows by op id: the row index itself when every row's id is its index (every simulated
  // timeline: no duplicates then), else a hash map (measured traces may number sparsely).
  const std::size_t n_rows = timeline.rows.size();
  bool dense = true;
  for (std::size_t i = 0; i < n_rows && dense; ++i) dense = timeline.rows[i].op_id == static_cast<int>(i);
  std::unordered_map<int, const TimelineRow*> by_id;
  if (!dense) {
    by_id.reserve(n_rows);
    for (const auto& row : timeline.rows) {
      if (!by_id.emplace(row.op_id, &row).second) {
        throw std::invalid_argument("summarize: duplicate op id " + std::to_string(row.op_id) +
                                    " (\"" + row.name + "\")");
      }
    }
  }
  auto find_row = [&](int id) -> const TimelineRow* {
    if (dense) return id >= 0 && static_cast<std::size_t>(id) < n_rows ? &timeline.rows[static_cast<std::size_t>(id)] : nullptr;
    auto it = by_id.find(id);
    return it == by_id.end() ? nullptr : it->second;
  };

  // Per-rank accumulators, keyed by rank so that sparse rank numbers work.
  struct PerRank {
    std::vector<std::pair<double, double>> lane_intervals_s[kLaneCount];
    std::vector<const TimelineRow*> lane_ops[kLaneCount];  // all steps, for lane predecessors
    double collective_s = 0;
    double h2d_bytes = 0;
    double stall_s = 0;
  };
  std::map<int, PerRank> ranks;
  double end_s_step = kNegInf, end_s_prev = kNegInf;
  for (const auto& row : timeline.rows) {
    PerRank& r = ranks[row.rank];
    r.lane_ops[lane_index(row.lane)].push_back(&row);
    if (row.kind == OpKind::compute) {
      if (row.step == s) end_s_step = std::max(end_s_step, row.end_s);
      if (row.step == s - 1) end_s_prev = std::max(end_s_prev, row.end_s);
    }
    if (row.step != s) continue;
    r.lane_intervals_s[lane_index(row.lane)].emplace_back(row.start_s, row.end_s);
    if (row.kind == OpKind::collective) r.collective_s += row.end_s - row.start_s;
    if (row.kind == OpKind::h2d) r.h2d_bytes += row.bytes;
  }
  if (end_s_step == kNegInf) {
    throw std::invalid_argument("summarize: step " + std::to_string(s) +
                                " (steps − 1) has no compute op");
  }
  if (end_s_prev == kNegInf) end_s_prev = 0;

  StepSummary out;
  out.step = s;
  out.step_time_s = end_s_step - end_s_prev;
  for (auto& [rank, r] : ranks) {
    (void)rank;
    out.compute_time_s = std::max(out.compute_time_s, union_length_s(r.lane_intervals_s[0]));
    out.h2d_time_s = std::max(out.h2d_time_s, union_length_s(r.lane_intervals_s[1]));
    out.comm_time_s = std::max(out.comm_time_s, union_length_s(r.lane_intervals_s[2]));
    out.collective_time_s = std::max(out.collective_time_s, r.collective_s);
    out.h2d_bytes = std::max(out.h2d_bytes, r.h2d_bytes);

    for (auto& ops : r.lane_ops) {
      std::sort(ops.begin(), ops.end(), [](const TimelineRow* a, const TimelineRow* b) {
        if (a->start_s != b->start_s) return a->start_s < b->start_s;
        if (a->end_s != b->end_s) return a->end_s < b->end_s;
        return a->op_id < b->op_id;
      });
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const TimelineRow& c = *ops[i];
        if (c.kind != OpKind::compute || c.step != s) continue;
        double other_ready_s = i > 0 ? ops[i - 1]->end_s : 0.0;
        double h2d_ready_s = kNegInf;
        for (int dep : c.deps) {
          const TimelineRow* found = find_row(dep);
          if (!found) continue;
          const TimelineRow& d = *found;
          if (d.kind == OpKind::h2d) {
            h2d_ready_s = std::max(h2d_ready_s, d.end_s);
          } else {
            other_ready_s = std::max(other_ready_s, d.end_s);
          }
        }
        if (h2d_ready_s == kNegInf) continue;
        r.stall_s += std::max(0.0, std::min(c.start_s, h2d_ready_s) - other_ready_s);
      }
    }
    out.prefetch_stall_s = std::max(out.prefetch_stall_s, r.stall_s);
  }
  for (const auto& m : timeline.memory) out.peak_memory_bytes = std::max(out.peak_memory_bytes, m.bytes);
  return out;
}

}  // namespace chunkflow
