// Tuning by simulation; definitions in sim/tune.hpp.
#include "sim/tune.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "model/error.hpp"

namespace chunkflow {

SweepGrid default_tune_grid() {
  SweepGrid g;
  g.chunk_mib = {1, 4, 16, 64, 256};
  g.resident_fractions = {std::nullopt};
  for (int i = 0; i <= 10; ++i) g.resident_fractions.push_back(i / 10.0);
  return g;
}

std::vector<int> pareto_frontier(const std::vector<double>& peak_bytes, const std::vector<double>& step_time_s) {
  std::vector<int> order(peak_bytes.size());
  std::iota(order.begin(), order.end(), 0);
  // By peak ascending, then step time ascending, then index: the first of each peak is its best.
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (peak_bytes[a] != peak_bytes[b]) return peak_bytes[a] < peak_bytes[b];
    if (step_time_s[a] != step_time_s[b]) return step_time_s[a] < step_time_s[b];
    return a < b;
  });
  std::vector<int> frontier;
  for (int i : order)
    if (frontier.empty() || step_time_s[i] < step_time_s[frontier.back()]) frontier.push_back(i);
  return frontier;
}

TuneResult tune(const Scenario& scenario, const SweepGrid& grid, double budget_bytes) {
  if (!(budget_bytes > 0)) throw InputError("", "--memory-budget-gib", "expected a positive number of GiB");
  TuneResult r;
  r.budget_bytes = budget_bytes;
  SweepGrid planned = grid;
  planned.memory_budget_bytes = budget_bytes;
  r.candidates = run_sweep(scenario, sweep_configs(planned));
  std::vector<double> peak, time;
  for (const auto& c : r.candidates) {
    peak.push_back(c.summary.peak_memory_bytes);
    time.push_back(c.summary.step_time_s);
  }
  r.frontier = pareto_frontier(peak, time);
  double smallest = 0;
  for (int i = 0; i < int(r.candidates.size()); ++i) {
    if (i == 0 || peak[i] < smallest) smallest = peak[i];
    if (peak[i] > budget_bytes || !r.candidates[i].verdict.fits) continue;  // never a row that does not fit the GPU
    if (r.best < 0 || clearly_faster(time[i], time[r.best]) ||
        (!clearly_faster(time[r.best], time[i]) && peak[i] < peak[r.best]))
      r.best = i;
  }
  if (r.best < 0) {
    char msg[320];
    std::snprintf(msg, sizeof msg, "no configuration fits in %.2f GiB per GPU (nor, whatever the budget, beyond the GPU's usable memory); "
                  "the smallest peak memory found is %.2f GiB",
                  budget_bytes / (1024.0 * 1024.0 * 1024.0), smallest / (1024.0 * 1024.0 * 1024.0));
    throw InputError("", "--memory-budget-gib", msg);
  }
  return r;
}

}  // namespace chunkflow
