// Prediction vs measurement comparison; definitions in traces/compare.hpp.
#include "traces/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace chunkflow {

double relative_error(double predicted, double measured) {
  if (measured != 0) return (predicted - measured) / measured;
  return predicted == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
}

namespace {

/// Quantile q ∈ [0, 1] of sorted values, linear interpolation between order statistics.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::string op_label(const TimelineRow& row) {
  return "op " + std::to_string(row.op_id) + " (\"" + row.name + "\")";
}

}  // namespace

UnexplainedWaits unexplained_waits(const Timeline& timeline, int step) {
  std::unordered_map<int, const TimelineRow*> by_id;
  for (const auto& row : timeline.rows) by_id.emplace(row.op_id, &row);
  // Each rank's compute lane and its H2D ends.
  std::map<int, std::vector<const TimelineRow*>> lane, copies;  // by rank, in rank order (a deterministic sum)
  for (const auto& row : timeline.rows) {
    if (row.lane == Lane::compute) lane[row.rank].push_back(&row);
    if (row.kind == OpKind::h2d) copies[row.rank].push_back(&row);
  }
  for (auto& [rank, h] : copies)
    std::sort(h.begin(), h.end(), [](const TimelineRow* a, const TimelineRow* b) { return a->end_s < b->end_s; });
  UnexplainedWaits w;
  for (auto& [rank, ops] : lane) {
    // Lane order as summarize() orders it for the prefetch stall (traces/timeline.hpp): start, end, id.
    std::sort(ops.begin(), ops.end(), [](const TimelineRow* a, const TimelineRow* b) {
      return std::tie(a->start_s, a->end_s, a->op_id) < std::tie(b->start_s, b->end_s, b->op_id);
    });
    const std::vector<const TimelineRow*>& ends = copies[rank];  // by end time
    for (std::size_t i = 1; i < ops.size(); ++i) {
      const TimelineRow& op = *ops[i];
      if (op.step != step) continue;
      double ready_s = ops[i - 1]->end_s;
      for (int d : op.deps)
        if (auto it = by_id.find(d); it != by_id.end()) ready_s = std::max(ready_s, it->second->end_s);
      const double wait_s = op.start_s - ready_s;
      if (!(wait_s > kUnexplainedWait_s)) continue;
      ++w.ops;
      w.total_s += wait_s;
      // The copies that end in [start − kAfterCopy_s, start], found by binary search.
      auto h = std::lower_bound(ends.begin(), ends.end(), op.start_s - kAfterCopy_s,
                                [](const TimelineRow* r, double t) { return r->end_s < t; });
      for (; h != ends.end() && (*h)->end_s <= op.start_s; ++h)
        if (std::find(op.deps.begin(), op.deps.end(), (*h)->op_id) == op.deps.end()) {
          ++w.after_unrelated_copy;
          break;
        }
    }
  }
  return w;
}

Comparison compare(const Timeline& predicted, const Timeline& measured) {
  const StepSummary sp = summarize(predicted);  // also rejects duplicate op ids
  const StepSummary sm = summarize(measured);

  Comparison c;
  c.step = sm.step;
  c.step_time_predicted_s = sp.step_time_s;
  c.step_time_measured_s = sm.step_time_s;
  c.step_time_error = relative_error(sp.step_time_s, sm.step_time_s);
  c.compute_time_predicted_s = sp.compute_time_s;
  c.compute_time_measured_s = sm.compute_time_s;
  c.compute_time_error = relative_error(sp.compute_time_s, sm.compute_time_s);
  c.h2d_time_predicted_s = sp.h2d_time_s;
  c.h2d_time_measured_s = sm.h2d_time_s;
  c.h2d_time_error = relative_error(sp.h2d_time_s, sm.h2d_time_s);
  c.comm_time_predicted_s = sp.comm_time_s;
  c.comm_time_measured_s = sm.comm_time_s;
  c.comm_time_error = relative_error(sp.comm_time_s, sm.comm_time_s);
  c.prefetch_stall_predicted_s = sp.prefetch_stall_s;
  c.prefetch_stall_measured_s = sm.prefetch_stall_s;
  c.collective_time_predicted_s = sp.collective_time_s;
  c.collective_time_measured_s = sm.collective_time_s;
  c.peak_memory_predicted_bytes = sp.peak_memory_bytes;
  c.peak_memory_measured_bytes = sm.peak_memory_bytes;

  std::unordered_map<int, const TimelineRow*> predicted_by_id;
  for (const auto& row : predicted.rows) predicted_by_id.emplace(row.op_id, &row);

  std::vector<OpError> step_errors;
  for (const auto& m : measured.rows) {
    auto it = predicted_by_id.find(m.op_id);
    if (it == predicted_by_id.end()) {
      ++c.unmatched_measured;
      continue;
    }
    ++c.matched_ops;
    const TimelineRow& p = *it->second;
    if (p.kind != m.kind || p.lane != m.lane || p.rank != m.rank || p.step != m.step) {
      throw std::invalid_argument(
          "compare: " + op_label(m) + " differs between prediction and measurement: kind " +
          to_string(p.kind) + "/" + to_string(m.kind) + ", lane " + to_string(p.lane) + "/" +
          to_string(m.lane) + ", rank " + std::to_string(p.rank) + "/" + std::to_string(m.rank) +
          ", step " + std::to_string(p.step) + "/" + std::to_string(m.step) +
          " (are both timelines of the same plan?)");
    }
    if (m.step != sm.step) continue;
    OpError e;
    e.op_id = m.op_id;
    e.name = m.name;
    e.lane = m.lane;
    e.rank = m.rank;
    e.predicted_s = p.end_s - p.start_s;
    e.measured_s = m.end_s - m.start_s;
    e.error_s = e.predicted_s - e.measured_s;
    e.relative_error = e.error_s / std::max(e.measured_s, kOpDurationFloor_s);
    step_errors.push_back(std::move(e));
  }
  c.unmatched_predicted = static_cast<int>(predicted.rows.size()) - c.matched_ops;
  c.step_ops = static_cast<int>(step_errors.size());

  std::vector<double> abs_rel;
  abs_rel.reserve(step_errors.size());
  for (const auto& e : step_errors) abs_rel.push_back(std::abs(e.relative_error));
  std::sort(abs_rel.begin(), abs_rel.end());
  c.op_error_median = quantile(abs_rel, 0.5);
  c.op_error_p90 = quantile(abs_rel, 0.9);
  c.op_error_max = abs_rel.empty() ? 0 : abs_rel.back();

  std::sort(step_errors.begin(), step_errors.end(), [](const OpError& a, const OpError& b) {
    const double ea = std::abs(a.error_s), eb = std::abs(b.error_s);
    if (ea != eb) return ea > eb;
    return a.op_id < b.op_id;
  });
  if (step_errors.size() > kWorstOpCount) step_errors.resize(kWorstOpCount);
  c.worst = std::move(step_errors);
  c.waits_predicted = unexplained_waits(predicted, sp.step);
  c.waits_measured = unexplained_waits(measured, sm.step);
  return c;
}

std::string comparison_to_json(const Comparison& c) {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  auto figure = [&](double predicted, double measured, double error) {
    return json{{"predicted_s", num(predicted)}, {"measured_s", num(measured)}, {"error", num(error)}};
  };
  auto waits = [&](const UnexplainedWaits& w) {
    return json{{"ops", w.ops}, {"total_s", num(w.total_s)}, {"after_unrelated_copy", w.after_unrelated_copy}};
  };
  json worst = json::array();
  for (const auto& e : c.worst) {
    worst.push_back(json{{"op_id", e.op_id},
                         {"name", e.name},
                         {"lane", to_string(e.lane)},
                         {"rank", e.rank},
                         {"predicted_s", num(e.predicted_s)},
                         {"measured_s", num(e.measured_s)},
                         {"error_s", num(e.error_s)},
                         {"relative_error", num(e.relative_error)}});
  }
  const json j = {
      {"step", c.step},
      {"step_time", figure(c.step_time_predicted_s, c.step_time_measured_s, c.step_time_error)},
      {"compute_time", figure(c.compute_time_predicted_s, c.compute_time_measured_s, c.compute_time_error)},
      {"h2d_time", figure(c.h2d_time_predicted_s, c.h2d_time_measured_s, c.h2d_time_error)},
      {"comm_time", figure(c.comm_time_predicted_s, c.comm_time_measured_s, c.comm_time_error)},
      {"prefetch_stall", {{"predicted_s", num(c.prefetch_stall_predicted_s)},
                          {"measured_s", num(c.prefetch_stall_measured_s)}}},
      {"collective_time", {{"predicted_s", num(c.collective_time_predicted_s)},
                           {"measured_s", num(c.collective_time_measured_s)}}},
      {"peak_memory", {{"predicted_bytes", num(c.peak_memory_predicted_bytes)},
                       {"measured_bytes", num(c.peak_memory_measured_bytes)}}},
      {"op_error", {{"median", num(c.op_error_median)},
                    {"p90", num(c.op_error_p90)},
                    {"max", num(c.op_error_max)},
                    {"ops", c.step_ops}}},
      {"worst_ops", std::move(worst)},
      {"unexplained_compute_waits", {{"predicted", waits(c.waits_predicted)}, {"measured", waits(c.waits_measured)}}},
      {"matched_ops", c.matched_ops},
      {"unmatched_predicted", c.unmatched_predicted},
      {"unmatched_measured", c.unmatched_measured}};
  return j.dump(2) + "\n";
}

}  // namespace chunkflow
