#pragma once
// The step summary's one computation (definitions in traces/timeline.hpp, StepSummary), over any
// source of rows: summarize() runs it on a Timeline's rows, and the simulator (sim/executor.cpp)
// on its plan's ops and their simulated times when it records no rows (SimOptions::record_rows),
// so both give the same summary bit for bit (the same code on the same values in the same order).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "traces/timeline.hpp"

namespace chunkflow::detail {

/// Whether this thread's summaries sort every list (set_summarize_exhaustive, traces/timeline.hpp).
bool summarize_exhaustive();

/// union_length_s on `intervals_s`, which it may reorder (sorted unless already in order).
/// Skipping the sort of a list already sorted is exact: without NaN, std::pair's `<` on doubles
/// is a strict weak order whose sorted sequence of values is unique (equal pairs are equal
/// values, but for the sign of a zero, which no sum below can tell apart: end > start ≥ ±0).
inline double union_length_in_place_s(std::vector<std::pair<double, double>>& intervals_s) {
  bool sorted = !summarize_exhaustive();
  for (std::size_t i = 0; i < intervals_s.size() && sorted; ++i) {
    const auto& [start_s, end_s] = intervals_s[i];
    sorted = !std::isnan(start_s) && !std::isnan(end_s) && !(i > 0 && intervals_s[i] < intervals_s[i - 1]);
  }
  if (!sorted) std::sort(intervals_s.begin(), intervals_s.end());
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

/// StepSummary of rows 0 .. rows.size() − 1 of a run of `steps` steps, all fields but
/// peak_memory_bytes (left 0: it reads the memory samples, which the caller has). `rows` gives, by
/// row index i: size(), op_id(i), name(i) (for messages), kind(i), lane(i), rank(i), step(i),
/// start_s(i), end_s(i), bytes(i), deps(i) (a std::vector<int> of op ids). Throws
/// std::invalid_argument as summarize() does (no rows, steps < 1, a duplicate op id, a last step
/// without a compute op).
/// `represented_by` (optional, per rank 0 .. R − 1): the rank whose rows stand for rank r's. The
/// summary's fields are maxima over ranks of per-rank values and over rows of compute ends, so
/// the rows of a rank r with represented_by[r] ≠ r are skipped; the caller guarantees that rank r's
/// rows are its representative's, position by position in row order, in kind, lane, step, times,
/// bytes and data deps (the same positions' rows, by kind and times), which makes every value they
/// would add one the representative adds (the simulator's rank symmetry, sim/symmetry.hpp: each
/// rank's ops take their representative's times). The summary is then the full one, bit for bit.
template <class Rows>
StepSummary summarize_rows(const Rows& rows, int steps, const std::vector<int>* represented_by = nullptr) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  constexpr int kLaneCount = 3;
  const std::size_t n_rows = rows.size();
  if (n_rows == 0) throw std::invalid_argument("summarize: the timeline has no rows");
  if (steps < 1) {
    throw std::invalid_argument("summarize: the timeline has steps = " + std::to_string(steps) + ", expected ≥ 1");
  }
  const int s = steps - 1;

  // Rows by op id: the row index itself when every row's id is its index (every simulated
  // timeline: no duplicates then), else a hash map (measured traces may number sparsely).
  // One pass finds that and the ranks' range (below).
  bool dense = true;
  int min_rank = 0, max_rank = 0;
  for (std::size_t i = 0; i < n_rows; ++i) {
    dense = dense && rows.op_id(i) == static_cast<int>(i);
    const int rank = rows.rank(i);
    if (i == 0 || rank < min_rank) min_rank = rank;
    if (i == 0 || rank > max_rank) max_rank = rank;
  }
  std::unordered_map<int, std::size_t> by_id;
  if (!dense) {
    by_id.reserve(n_rows);
    for (std::size_t i = 0; i < n_rows; ++i) {
      if (!by_id.emplace(rows.op_id(i), i).second) {
        throw std::invalid_argument("summarize: duplicate op id " + std::to_string(rows.op_id(i)) + " (\"" +
                                    std::string(rows.name(i)) + "\")");
      }
    }
  }
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  auto find_row = [&](int id) -> std::size_t {
    if (dense) return id >= 0 && static_cast<std::size_t>(id) < n_rows ? static_cast<std::size_t>(id) : kNone;
    auto it = by_id.find(id);
    return it == by_id.end() ? kNone : it->second;
  };

  // Per-rank accumulators in rank order: a rank's slot is the rank itself when the ranks are
  // 0 .. R − 1 with R ≤ the row count (slots of ranks without rows stay unused), else its place
  // among the distinct ranks in ascending order; either way the ranks with rows, ascending.
  struct PerRank {
    std::vector<std::pair<double, double>> lane_intervals_s[kLaneCount];
    std::vector<std::size_t> lane_ops[kLaneCount];  // all steps, for lane predecessors
    bool lane_has_stall_ops[kLaneCount] = {};       // the lane holds a compute op of step s
    double collective_s = 0;
    double h2d_bytes = 0;
    double stall_s = 0;
    bool seen = false;
  };
  const bool dense_ranks = min_rank >= 0 && static_cast<std::size_t>(max_rank) < n_rows;
  std::map<int, std::size_t> slot_of_rank;
  std::size_t slots = 0;
  if (dense_ranks) {
    slots = static_cast<std::size_t>(max_rank) + 1;
  } else {
    for (std::size_t i = 0; i < n_rows; ++i) slot_of_rank.emplace(rows.rank(i), 0);
    for (auto& [rank, slot] : slot_of_rank) (void)rank, slot = slots++;
  }
  std::vector<PerRank> ranks(slots);
  double end_s_step = kNegInf, end_s_prev = kNegInf;
  const std::size_t represented = represented_by ? represented_by->size() : 0;
  for (std::size_t i = 0; i < n_rows; ++i) {
    const int rank = rows.rank(i);
    if (rank >= 0 && std::size_t(rank) < represented && (*represented_by)[std::size_t(rank)] != rank) continue;
    PerRank& r = ranks[dense_ranks ? static_cast<std::size_t>(rank) : slot_of_rank.find(rank)->second];
    r.seen = true;
    const int lane = static_cast<int>(rows.lane(i));
    r.lane_ops[lane].push_back(i);
    const OpKind kind = rows.kind(i);
    const int step = rows.step(i);
    if (kind == OpKind::compute) {
      if (step == s) end_s_step = std::max(end_s_step, rows.end_s(i)), r.lane_has_stall_ops[lane] = true;
      if (step == s - 1) end_s_prev = std::max(end_s_prev, rows.end_s(i));
    }
    if (step != s) continue;
    r.lane_intervals_s[lane].emplace_back(rows.start_s(i), rows.end_s(i));
    if (kind == OpKind::collective) r.collective_s += rows.end_s(i) - rows.start_s(i);
    if (kind == OpKind::h2d) r.h2d_bytes += rows.bytes(i);
  }
  if (end_s_step == kNegInf) {
    throw std::invalid_argument("summarize: step " + std::to_string(s) + " (steps − 1) has no compute op");
  }
  if (end_s_prev == kNegInf) end_s_prev = 0;

  // A lane's ops ordered by (start_s, end_s, op_id). Op ids are distinct, so without NaN times this
  // is a strict total order and the sorted sequence is unique: a list already in order (a
  // simulated lane in op id order, nearly always) needs no sort. With NaN times, std::sort as always.
  auto before = [&](std::size_t a, std::size_t b) {
    if (rows.start_s(a) != rows.start_s(b)) return rows.start_s(a) < rows.start_s(b);
    if (rows.end_s(a) != rows.end_s(b)) return rows.end_s(a) < rows.end_s(b);
    return rows.op_id(a) < rows.op_id(b);
  };
  StepSummary out;
  out.step = s;
  out.step_time_s = end_s_step - end_s_prev;
  for (PerRank& r : ranks) {
    if (!r.seen) continue;
    out.compute_time_s = std::max(out.compute_time_s, union_length_in_place_s(r.lane_intervals_s[0]));
    out.h2d_time_s = std::max(out.h2d_time_s, union_length_in_place_s(r.lane_intervals_s[1]));
    out.comm_time_s = std::max(out.comm_time_s, union_length_in_place_s(r.lane_intervals_s[2]));
    out.collective_time_s = std::max(out.collective_time_s, r.collective_s);
    out.h2d_bytes = std::max(out.h2d_bytes, r.h2d_bytes);

    for (int lane = 0; lane < kLaneCount; ++lane) {
      // Only a compute op of step s adds to the stall: a lane without one adds nothing, sorted or not.
      if (!r.lane_has_stall_ops[lane]) continue;
      std::vector<std::size_t>& ops = r.lane_ops[lane];
      bool sorted = !summarize_exhaustive();
      for (std::size_t i = 0; i < ops.size() && sorted; ++i)
        sorted = !std::isnan(rows.start_s(ops[i])) && !std::isnan(rows.end_s(ops[i])) && !(i > 0 && before(ops[i], ops[i - 1]));
      if (!sorted) std::sort(ops.begin(), ops.end(), before);
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const std::size_t c = ops[i];
        if (rows.kind(c) != OpKind::compute || rows.step(c) != s) continue;
        double other_ready_s = i > 0 ? rows.end_s(ops[i - 1]) : 0.0;
        double h2d_ready_s = kNegInf;
        for (int dep : rows.deps(c)) {
          const std::size_t d = find_row(dep);
          if (d == kNone) continue;
          if (rows.kind(d) == OpKind::h2d) {
            h2d_ready_s = std::max(h2d_ready_s, rows.end_s(d));
          } else {
            other_ready_s = std::max(other_ready_s, rows.end_s(d));
          }
        }
        if (h2d_ready_s == kNegInf) continue;
        r.stall_s += std::max(0.0, std::min(rows.start_s(c), h2d_ready_s) - other_ready_s);
      }
    }
    out.prefetch_stall_s = std::max(out.prefetch_stall_s, r.stall_s);
  }
  return out;
}

}  // namespace chunkflow::detail
