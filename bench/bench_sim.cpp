// Simulator speed (issue 2 §8): events per second, one Wan-14B step, the whole default sweep.
// Targets: one Wan-14B step < 5 ms; the default sweep < 1 s on one core.
// Run: build/chunkflow_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
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

/// The main job's sweep (42 configurations, plan + simulate each) on `threads` threads.
void BM_DefaultSweep(benchmark::State& state) {
  const Scenario s = default_scenario();
  const auto configs = sweep_configs(SweepGrid{});
  omp_set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(run_sweep(s, configs));
  state.counters["configs"] = double(configs.size());
}
BENCHMARK(BM_DefaultSweep)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
