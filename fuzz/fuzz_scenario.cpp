// libFuzzer harness: scenario JSON (runtime/scenario.hpp load_scenario), then what a program does
// next with a scenario that loads: its forward cost, the analytical model and the plan limits
// (the parser and the validation, on every input), and, for plans of at most
// kMaxSimulatedOps ops in all, the plan itself, its validation and a simulation.
// The simulation is bounded so the harness stays fast (≥ 1,000 inputs/s under ASan + UBSan):
// simulating every plan of up to 20,000 ops (the former bound; ≈ 25 µs per op under the
// sanitizers) made it run at 76 inputs/s, single inputs taking 2 s (a 2048×1024 FLUX chunkflow
// plan). 1,500 ops admits the smallest real plans: one step of FLUX or Wan2.1-1.3B with large
// chunks, on one GPU (≈ 360-420 ops) or under Ulysses 2 (≈ 960-1,300 ops, all-to-alls included);
// fuzz/seeds/fuzz_scenario/ holds such scenarios so the fuzzer starts on the simulated path. The
// planners and the simulator on large plans are exercised by the test suite under the sanitizers
// (scripts/sanitize.sh); the limits that bound every accepted plan are checked here on every input.
#include "fuzz/fuzz_util.hpp"
#include "model/analytical.hpp"
#include "model/error.hpp"
#include "runtime/plan_limits.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"

namespace {
/// Largest plan (ops per step × simulated steps, as predicted by plan_ops_per_step) the harness
/// builds, validates and simulates.
constexpr double kMaxSimulatedOps = 1500;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  fuzz::expect_only<InputError>([&] {
    const Scenario s = load_scenario(path);
    const ForwardCost cost = forward_cost(s.workload);
    (void)analyze(cost, s.node, s.workload.ulysses_degree);
    check_plan_limits(s.workload, cost, s.node, s.policy);
    if (plan_ops_per_step(s.workload, cost, s.node, s.policy) * s.policy.steps <= kMaxSimulatedOps) {
      const StepPlan plan = build_plan(s.workload, s.node, s.policy);
      validate(plan);
      (void)simulate(plan, s.node, SimOptions{false, false});
    }
  });
  return 0;
}
