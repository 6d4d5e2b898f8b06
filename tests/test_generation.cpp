// A generation (issue 9 §3): `--steps` is the denoising steps of a generation, `--cfg` the
// classifier-free guidance; rows report forwards_per_step and denoise_time_s = steps × forwards ×
// step_time_s beside step_time_s (one forward). The simulated count is `--simulated-steps`.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "model/error.hpp"
#include "model/workload.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/report.hpp"

using namespace chunkflow;

namespace {

/// denoise_time_s is a product of three numbers: equal to the last bits.
constexpr double kProductRelTolerance = 1e-12;

std::string scenario_file(const std::string& text) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() / "chunkflow_test_generation" / std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto path = dir / (std::to_string(counter++) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("per-model defaults: Wan sequential CFG, FLUX and HunyuanVideo none, steps of the reference pipelines",
          "[generation]") {
  CHECK(default_cfg("wan2.1-t2v-14b") == CfgMode::sequential);
  CHECK(default_cfg("wan2.1-t2v-1.3b") == CfgMode::sequential);
  CHECK(default_cfg("wan2.2-t2v-a14b") == CfgMode::sequential);
  CHECK(default_cfg("flux.1-dev") == CfgMode::none);
  CHECK(default_cfg("hunyuanvideo") == CfgMode::none);
  CHECK(default_denoising_steps("wan2.1-t2v-14b") == 50);
  CHECK(default_denoising_steps("wan2.2-t2v-a14b") == 40);
  CHECK(default_denoising_steps("flux.1-dev") == 28);
  CHECK(default_denoising_steps("hunyuanvideo") == 50);
  for (const std::string& id : architecture_ids()) {
    INFO(id);
    Workload w;
    w.model = id;
    CHECK(forwards_per_step(w) == (default_cfg(id) == CfgMode::sequential ? 2 : 1));
    CHECK(resolved_denoising_steps(w) == default_denoising_steps(id));
  }
}

TEST_CASE("forwards_per_step: 2 with sequential CFG, 1 with none, explicit values override the model's",
          "[generation]") {
  Workload w;  // Wan2.1-14B
  w.cfg = CfgMode::none;
  CHECK(forwards_per_step(w) == 1);
  w.cfg = CfgMode::sequential;
  CHECK(forwards_per_step(w) == 2);
  w.model = "flux.1-dev";
  w.frames = 1;
  CHECK(forwards_per_step(w) == 2);  // FLUX with true CFG run sequentially
  w.denoising_steps = 7;
  CHECK(resolved_denoising_steps(w) == 7);
}

TEST_CASE("denoise_time_s = denoising steps × forwards per step × step time", "[generation]") {
  Workload w;
  w.denoising_steps = 40;
  w.cfg = CfgMode::sequential;
  CHECK(denoise_time_s(w, 1.25) == Approx(40 * 2 * 1.25).epsilon(kProductRelTolerance));
  w.cfg = CfgMode::none;
  CHECK(denoise_time_s(w, 1.25) == Approx(40 * 1.25).epsilon(kProductRelTolerance));
}

TEST_CASE("scenario files: /workload/steps and /workload/cfg, /policy/simulated_steps (steps its former name)",
          "[generation]") {
  const std::string head = R"({"name": "t", "node": "2xh100-pcie", "workload": {"model": "wan2.1-t2v-14b", "height": 480,
    "width": 832, "frames": 17, "ulysses_degree": 2)";
  const Scenario s = load_scenario(scenario_file(head + R"(, "steps": 30, "cfg": "none"},
    "policy": {"name": "layerwise", "simulated_steps": 3}})"));
  CHECK(s.workload.denoising_steps == 30);
  CHECK(s.workload.cfg == CfgMode::none);
  CHECK(s.policy.steps == 3);
  const Scenario old = load_scenario(scenario_file(head + R"(}, "policy": {"name": "layerwise", "steps": 3}})"));
  CHECK(old.policy.steps == 3);
  CHECK(old.workload.denoising_steps == 0);  // the model's default
  const std::string both = scenario_file(head + R"(}, "policy": {"steps": 3, "simulated_steps": 3}})");
  CHECK_THROWS_WITH(load_scenario(both), Catch::Contains("/policy/steps") && Catch::Contains("simulated_steps"));
  const std::string bad_cfg = scenario_file(head + R"(, "cfg": "twice"}})");
  CHECK_THROWS_WITH(load_scenario(bad_cfg), Catch::Contains(bad_cfg + ": /workload/cfg: expected one of none"));
  const std::string bad_steps = scenario_file(head + R"(, "steps": -5}})");
  CHECK_THROWS_WITH(load_scenario(bad_steps), Catch::Contains("/workload/steps"));
}

TEST_CASE("command line: --steps sets the denoising steps, --simulated-steps the forwards simulated, --cfg the CFG",
          "[generation]") {
  ScenarioOptions o;
  o.denoising_steps = 20;
  o.steps = 3;
  o.cfg = "none";
  const Scenario s = resolve_scenario(o);
  CHECK(s.workload.denoising_steps == 20);
  CHECK(s.policy.steps == 3);
  CHECK(s.workload.cfg == CfgMode::none);
  o = {};
  o.cfg = "maybe";
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--cfg: expected one of none, sequential, parallel"));
  o = {};
  o.denoising_steps = 20000;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--steps: "));
  o = {};
  o.steps = 0;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--simulated-steps: "));
}

TEST_CASE("simulate JSON: step_time_s is one forward, denoise_time_s = steps × forwards_per_step × step_time_s, "
          "the denoising steps do not change the simulated step",
          "[generation]") {
  ScenarioOptions o;
  o.frames = 17;
  o.policy = "no-offload";
  double step_default = 0;
  for (const auto& [steps, cfg, forwards] : {std::tuple{0, "auto", 2}, std::tuple{25, "sequential", 2},
                                              std::tuple{25, "none", 1}}) {
    INFO(steps << " steps, cfg " << cfg);
    if (steps > 0) o.denoising_steps = steps;
    o.cfg = cfg;
    const Scenario s = resolve_scenario(o);
    const StepPlan plan = build_plan(s.workload, s.node, s.policy);
    const SimResult r = simulate(plan, s.node, {});
    const nlohmann::json j = simulate_json(s, plan, r);
    const int expected_steps = steps > 0 ? steps : 50;
    CHECK(j["denoising_steps"] == expected_steps);
    CHECK(j["forwards_per_step"] == forwards);
    CHECK(j["simulated_steps"] == 2);
    CHECK(j["denoise_time_s"].get<double>() ==
          Approx(double(expected_steps) * forwards * r.summary.step_time_s).epsilon(kProductRelTolerance));
    if (step_default == 0) step_default = r.summary.step_time_s;
    CHECK(r.summary.step_time_s == step_default);  // one forward, whatever the generation
  }
}
