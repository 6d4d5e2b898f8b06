// libFuzzer harness: scenario JSON (runtime/scenario.hpp load_scenario), then what a program does
// next with a scenario that loads: its forward cost, the analytical model and the plan limits,
// and, for plans small enough to build quickly, the plan itself, its validation and a simulation.
#include "fuzz/fuzz_util.hpp"
#include "model/analytical.hpp"
#include "model/error.hpp"
#include "runtime/plan_limits.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  fuzz::expect_only<InputError>([&] {
    const Scenario s = load_scenario(path);
    const ForwardCost cost = forward_cost(s.workload);
    (void)analyze(cost, s.node, s.workload.ulysses_degree);
    check_plan_limits(s.workload, cost, s.node, s.policy);
    // Simulate only small plans (a fuzzer must stay fast); the limits above bound the rest.
    if (plan_ops_per_step(s.workload, cost, s.node, s.policy) * s.policy.steps <= 20000) {
      const StepPlan plan = build_plan(s.workload, s.node, s.policy);
      validate(plan);
      (void)simulate(plan, s.node, SimOptions{false, false});
    }
  });
  return 0;
}
