// Simulator speed (issue 2 §8, issue 12 §2): events per second, one Wan-14B step, the whole default
// sweep, one grid configuration of each model, and the max-min solver at 10, 100 and 1000 flows.
// Targets: one Wan-14B step < 5 ms; the default sweep < 1 s on one core.
// Run: build/chunkflow_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <random>

#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/grid.hpp"
#include "sim/maxmin.hpp"
#include "sim/sweep.hpp"

namespace {

using namespace chunkflow;

PolicyConfig chunkflow_policy(int steps) {
  PolicyConfig p;
  p.policy = "chunkflow";
  p.chunk_bytes = 64 * kMiB;
  p.steps = steps;
  return p;
}

/// Plan building alone for the default scenario (2 steps, 2 ranks).
void BM_BuildPlanWan14B(benchmark::State& state) {
  const Scenario s = default_scenario();
  for (auto _ : state) benchmark::DoNotOptimize(build_plan(s.workload, s.node, chunkflow_policy(2)));
}
BENCHMARK(BM_BuildPlanWan14B)->Unit(benchmark::kMillisecond);

/// Validation of the default plan (acyclicity, weight dependencies, memory balance, slots).
void BM_ValidatePlanWan14B(benchmark::State& state) {
  const Scenario s = default_scenario();
  const StepPlan plan = build_plan(s.workload, s.node, chunkflow_policy(2));
  for (auto _ : state) validate(plan);
}
BENCHMARK(BM_ValidatePlanWan14B)->Unit(benchmark::kMillisecond);

/// Simulation of a prebuilt plan of `steps` steps; reports events/s and time per step.
void BM_SimulateWan14B(benchmark::State& state) {
  const Scenario s = default_scenario();
  const int steps = static_cast<int>(state.range(0));
  const StepPlan plan = build_plan(s.workload, s.node, chunkflow_policy(steps));
  SimOptions o;
  o.record_links = false;
  o.record_memory = false;
  uint64_t events = 0;
  for (auto _ : state) {
    const SimResult r = simulate(plan, s.node, o);
    events += r.events;
    benchmark::DoNotOptimize(r.summary.step_time_s);
  }
  state.counters["events_per_s"] = benchmark::Counter(double(events), benchmark::Counter::kIsRate);
  state.counters["s_per_step"] =
      benchmark::Counter(double(state.iterations()) * steps, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SimulateWan14B)->Arg(2)->Arg(10)->Unit(benchmark::kMillisecond);

/// The sweep of SweepGrid{}'s defaults (chunk sizes 8–256 MiB; the main job's list adds 1 MiB) on
/// `threads` threads: plan, validate and simulate each configuration (equal decisions once).
void BM_DefaultSweep(benchmark::State& state) {
  const Scenario s = default_scenario();
  const auto configs = sweep_configs(SweepGrid{});
  omp_set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(run_sweep(s, configs));
  state.counters["configs"] = double(configs.size());
}
BENCHMARK(BM_DefaultSweep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

/// One grid configuration (plan, validate, simulate: what `sweep --grid` does per row) of each model:
/// chunkflow, 64 MiB chunks, resident fraction 0.5, Ulysses 2 on 2xh100-pcie, at a typical shape.
/// Cold: the grid's decision memo and this thread's chunkflow planners are dropped before every
/// iteration (outside the timing), so each one plans, builds, validates and simulates in full, as a
/// configuration of a new workload or chunk size does (a grid's neighbours then reuse both).
void BM_GridConfig(benchmark::State& state, const char* grid_json) {
  Grid grid = grid_from_text(grid_json, "bench", "");
  GridCursor cursor(grid);
  const GridConfig config = *cursor.next();
  for (auto _ : state) {
    state.PauseTiming();
    grid.sim_memo = std::make_shared<DecisionMemo>();
    clear_chunkflow_planner_cache();
    state.ResumeTiming();
    benchmark::DoNotOptimize(run_grid_config(grid, config));
  }
  state.counters["ops"] = double(run_grid_config(grid, config).row->ops);
}
#define CHUNKFLOW_GRID_CONFIG(model, shape)                                                                      \
  "{\"models\": [\"" model "\"], \"shapes\": [" shape "], \"nodes\": [\"2xh100-pcie\"], "                \
  "\"layouts\": [{\"ulysses_degree\": 2}], \"policies\": [\"chunkflow\"], \"chunk_mib\": [64], "           \
  "\"resident_fractions\": [0.5]}"
BENCHMARK_CAPTURE(BM_GridConfig, wan2_1_t2v_1_3b_480p_81f,
                  CHUNKFLOW_GRID_CONFIG("wan2.1-t2v-1.3b", "{\"height\": 480, \"width\": 832, \"frames\": 81}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GridConfig, wan2_1_t2v_14b_480p_81f,
                  CHUNKFLOW_GRID_CONFIG("wan2.1-t2v-14b", "{\"height\": 480, \"width\": 832, \"frames\": 81}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GridConfig, wan2_2_t2v_a14b_480p_81f,
                  CHUNKFLOW_GRID_CONFIG("wan2.2-t2v-a14b", "{\"height\": 480, \"width\": 832, \"frames\": 81}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GridConfig, flux_1_dev_1024,
                  CHUNKFLOW_GRID_CONFIG("flux.1-dev", "{\"height\": 1024, \"width\": 1024, \"frames\": 1}"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GridConfig, hunyuanvideo_544p_129f,
                  CHUNKFLOW_GRID_CONFIG("hunyuanvideo", "{\"height\": 544, \"width\": 960, \"frames\": 129}"))
    ->Unit(benchmark::kMillisecond);

/// The max-min solver as the simulator uses it: `n` flows active over 64 link directions (each flow
/// on 1–4 of them, a third with a bound); per iteration one flow ends, one starts, solve().
void BM_MaxMinSolve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::mt19937 rng(12);
  MaxMinSolver solver;
  const int resources = 64;
  for (int r = 0; r < resources; ++r) solver.add_resource(std::uniform_real_distribution<double>(10e9, 60e9)(rng));
  auto random_flow = [&] {
    std::vector<std::pair<int, double>> uses;
    const int k = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int i = 0; i < k; ++i) uses.push_back({std::uniform_int_distribution<int>(0, resources - 1)(rng), 1.0});
    const double bound = rng() % 3 == 0 ? std::uniform_real_distribution<double>(5e9, 30e9)(rng) : INFINITY;
    return solver.add_flow(uses, bound);
  };
  std::vector<int> flows;
  for (int i = 0; i < n; ++i) flows.push_back(random_flow());
  solver.solve();
  std::size_t next = 0;
  for (auto _ : state) {
    solver.remove_flow(flows[next]);
    flows[next] = random_flow();
    next = (next + 1) % flows.size();
    solver.solve();
    benchmark::DoNotOptimize(solver.rate(flows[0]));
  }
  state.counters["rounds"] = solver.last_solve_rounds();
}
BENCHMARK(BM_MaxMinSolve)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
