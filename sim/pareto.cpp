// Policy comparison at equal memory; see pareto.hpp.
#include "sim/pareto.hpp"

#include "model/error.hpp"
#include "sim/tune.hpp"

namespace chunkflow {

ParetoScenario pareto(const Scenario& scenario, const SweepGrid& grid, const std::vector<double>& budget_fractions) {
  for (double f : budget_fractions)
    if (!(f > 0 && f <= 1)) throw InputError("", "--budgets", "expected fractions in (0, 1] of no-offload's peak memory");
  ParetoScenario out;
  out.scenario = scenario.name;
  PolicyConfig none;
  none.policy = "no-offload";
  none.steps = grid.steps;
  out.no_offload = run_sweep(scenario, {none}).at(0);
  for (double f : budget_fractions) {
    ParetoCell cell;
    cell.budget_fraction = f;
    cell.budget_bytes = f * out.no_offload.summary.peak_memory_bytes;
    SweepGrid g = grid;
    g.memory_budget_bytes = cell.budget_bytes;
    std::vector<std::string> offload;
    for (const auto& p : grid.policies)
      if (p != "no-offload") offload.push_back(p);
    g.policies = offload;
    const auto rows = run_sweep(scenario, sweep_configs(g));
    double best_baseline = 0, chunkflow = 0;
    for (const auto& name : offload) {
      SweepRow best;
      best.config_index = -1;
      for (const auto& r : rows) {
        if (r.plan.policy != name || r.summary.peak_memory_bytes > cell.budget_bytes) continue;
        if (best.config_index < 0 || clearly_faster(r.summary.step_time_s, best.summary.step_time_s) ||
            (!clearly_faster(best.summary.step_time_s, r.summary.step_time_s) &&
             r.summary.peak_memory_bytes < best.summary.peak_memory_bytes))
          best = r;
      }
      if (best.config_index >= 0) {
        if (is_baseline_policy(name) && (best_baseline == 0 || best.summary.step_time_s < best_baseline))
          best_baseline = best.summary.step_time_s;
        if (name == "chunkflow") chunkflow = best.summary.step_time_s;
      }
      cell.best.push_back({name, best});
    }
    cell.speedup_over_best_baseline = best_baseline > 0 && chunkflow > 0 ? best_baseline / chunkflow : 0.0;
    out.cells.push_back(std::move(cell));
  }
  return out;
}

}  // namespace chunkflow
