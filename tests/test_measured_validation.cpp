// CI gate on real hardware data: for every device folder under traces/measured/ that holds
// measured runs, the calibrated simulator's step-time error on the held-out runs is at most 5 %
// mean and 10 % max (mission fidelity goal; systems-and-hardware.md §6 for what published
// simulators reach). The calibration of a device is traces/analysis/<device>/calibration.json
// (written by `chunkflow calibrate` from the device's benches; kept out of traces/measured/, which
// holds only what a GPU run wrote); its `sources` mark the runs used for fitting, which are left
// out (sim/validate.hpp).
//
// The gate is one function (gate_failures) and a test shows it can fail: synthetic "measured"
// runs whose step time is the simulator's own prediction scaled by a known factor must pass at
// 1.00 and fail at 1.12 (max) and at 1.06 everywhere (mean). With no measured runs under
// traces/measured/ the hardware gate has nothing to check: the test says so on stdout and in a
// Catch2 WARN (Catch2 2.13 has no SKIP).
//
// A run is re-simulated with its own parallel layout (ulysses_degree, ring_degree, tp_degree,
// fsdp, cfg as chunkflow-hw summaries write them): the prediction must equal the simulation of
// that layout built independently here, and differ from the Ulysses-only one the reader used to
// build; a summary without the layout fields (older harness) still re-simulates Ulysses only.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/fnv1a.hpp"
#include "sim/report.hpp"
#include "model/harness_ops.hpp"
#include "sim/executor.hpp"
#include "sim/validate.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
namespace fs = std::filesystem;

namespace {
/// Acceptance: mean and max |step-time error| over held-out runs (the thresholds).
constexpr double kMeanAbsErrorLimit = 0.05;
constexpr double kMaxAbsErrorLimit = 0.10;

/// What fails the gate for one device's validation (empty = it passes).
std::vector<std::string> gate_failures(const ValidationResult& v) {
  std::vector<std::string> out;
  if (v.held_out == 0) out.push_back("no held-out run (every run was used for fitting)");
  if (!(v.mean_abs_error <= kMeanAbsErrorLimit)) out.push_back("mean |error| " + std::to_string(v.mean_abs_error) + " > 5 %");
  if (!(v.max_abs_error <= kMaxAbsErrorLimit)) out.push_back("max |error| " + std::to_string(v.max_abs_error) + " > 10 %");
  for (const ValidationRow& r : v.rows)
    if (r.plan_mismatch) out.push_back(r.run.summary_path + ": the re-built plan differs from the measured one");
  return out;
}

/// Writes a synthetic "measured" run: `simulate --json` of `s` with its step time × `scale`.
void write_scaled_run(const fs::path& dir, const std::string& name, Scenario s, double scale) {
  const test::Run r = test::run(s.workload, s.node, s.policy);
  nlohmann::json j = simulate_json(s, r.plan, r.result);
  j["context"] = context_block("synthetic run of tests/test_measured_validation.cpp");
  j["step_time_s"] = r.result.summary.step_time_s * scale;
  std::ofstream(dir / (name + ".json")) << j.dump(2);
}

/// A chunkflow-hw `run --output` summary of `w` on `node_id` (the /scenario fields of
/// hw/chunkflow_hw_main.cpp scenario_json), with the layout fields when `with_layout` (the harness
/// since b0ba906; without them, an older summary).
nlohmann::json hw_summary(const Workload& w, const std::string& node_id, const PolicyConfig& p, bool with_layout,
                          double step_time_s, int64_t plan_ops) {
  nlohmann::json sc = {{"name", "synthetic-" + node_id},
                       {"file", ""},
                       {"node", node_id},
                       {"model", w.model},
                       {"batch", w.batch},
                       {"height", w.height},
                       {"width", w.width},
                       {"frames", w.frames},
                       {"ulysses_degree", w.ulysses_degree},
                       {"policy", p.policy},
                       {"chunk_bytes", p.chunk_bytes},
                       {"resident_fraction", *p.resident_fraction},
                       {"lookahead", p.lookahead},
                       {"steps", p.steps}};
  if (with_layout) {
    sc["ring_degree"] = w.ring_degree;
    sc["tp_degree"] = w.tp_degree;
    sc["fsdp"] = w.fsdp;
    sc["cfg"] = cfg_mode_name(resolved_cfg(w));
  }
  return {{"context", {{"tool", "chunkflow-hw"}, {"gpu_name", "synthetic (tests/test_measured_validation.cpp)"}}},
          {"scenario", sc},
          {"plan", {{"ops", plan_ops}}},
          {"step_time_s", step_time_s}};
}

/// The step a chunkflow-hw run is re-simulated to: its plan as built, with the compute ops as the
/// harness executes them (model/harness_ops.hpp, sim/validate.cpp).
double harness_step_s(const test::Run& r, const NodeSpec& n) {
  StepPlan plan = r.plan;
  price_as_harness(plan.cost.blocks, plan.workload);
  return simulate(plan, n).summary.step_time_s;
}

void write_json(const fs::path& file, const nlohmann::json& j) { std::ofstream(file) << j.dump(2); }
}  // namespace

TEST_CASE("the gate fails on a 12 % max error and a 6 % mean error, and passes on the simulator's own times") {
  Scenario s = default_scenario();
  s.workload.frames = 17;
  const fs::path root = fs::temp_directory_path() / ("chunkflow-test-gate-" + std::to_string(::getpid()));
  struct Case {
    std::vector<double> scales;
    bool passes;
  };
  for (const Case& c : {Case{{1.0, 1.0}, true}, Case{{1.0, 1.0, 1.0, 1.0, 1.12}, false}, Case{{1.06, 0.94}, false}}) {
    fs::remove_all(root);
    fs::create_directories(root);
    for (std::size_t i = 0; i < c.scales.size(); ++i) {
      s.policy = test::policy(i % 2 ? "layerwise" : "chunkflow", 0.25);
      write_scaled_run(root, "run" + std::to_string(i), s, c.scales[i]);
    }
    const ValidationResult v = validate_runs(find_measured_runs(root.string()), "");
    REQUIRE(v.rows.size() == c.scales.size());
    // error = predicted / measured − 1 = 1 / scale − 1, exactly what the scales make it.
    for (std::size_t i = 0; i < v.rows.size(); ++i)  // rows sorted by path: run0, run1, ...
      CHECK(v.rows[i].error == Approx(1.0 / c.scales[i] - 1.0).epsilon(1e-12));
    INFO("mean " << v.mean_abs_error << ", max " << v.max_abs_error);
    CHECK(gate_failures(v).empty() == c.passes);
  }
  fs::remove_all(root);
}

TEST_CASE("calibrated simulator: held-out step-time error <= 5 % mean and <= 10 % max on traces/measured") {
  const fs::path root = fs::path(CHUNKFLOW_SOURCE_DIR) / "traces" / "measured";
  std::vector<fs::path> devices;
  std::error_code ec;
  if (fs::is_directory(root, ec))
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory()) devices.push_back(e.path());
  std::sort(devices.begin(), devices.end());
  int validated = 0;
  for (const fs::path& dev : devices) {
    const auto runs = find_measured_runs(dev.string(), true);
    INFO("device folder " << dev.string());
    if (runs.empty()) {
      std::cout << "test_measured_validation: " << dev.string() << " holds no measured run\n";
      continue;
    }
    const fs::path cal = root.parent_path() / "analysis" / dev.filename() / "calibration.json";
    INFO(runs.size() << " measured runs, calibration "
                     << (fs::exists(cal) ? cal.string() : std::string("none (built-in node parameters)")));
    const ValidationResult v = validate_runs(runs, fs::exists(cal) ? cal.string() : "");
    const std::vector<std::string> failures = gate_failures(v);
    for (const auto& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
    ++validated;
  }
  if (validated == 0) {
    std::cout << "test_measured_validation: NOT EXERCISED on hardware data: no measured runs under " << root.string()
              << "; the gate itself is tested on synthetic runs (test case above)\n";
    WARN("no measured runs under " << root.string() << ": the hardware gate was not exercised");
  }
}

TEST_CASE("a measured run with a ring / TP / FSDP / parallel-CFG layout is re-simulated with that layout") {
  const NodeSpec n = node("8xh100-sxm");
  const std::string model = "wan2.1-t2v-1.3b";  // 12 heads: U2·TP2, U4, TP2 all divide them
  struct Case {
    Workload w;
    std::string policy;
  };
  const std::vector<Case> cases = {
      {test::layout(model, 480, 832, 17, 2, 2, 2, true, CfgMode::none), "chunkflow"},
      {test::layout(model, 480, 832, 17, 2, 1, 2, false, CfgMode::parallel), "layerwise"},
      {test::layout(model, 480, 832, 17, 4, 1, 1, true, CfgMode::sequential), "layerwise"},
      {test::layout(model, 480, 832, 17, 1, 4, 2, false, CfgMode::sequential), "chunkflow"},
  };
  const double scale = 1.1;  // measured = 1.1 × the layout's simulated step: error = 1/1.1 − 1
  for (const Case& c : cases) {
    const PolicyConfig p = test::policy(c.policy, 0.25);
    INFO(layout_text(c.w) << ", " << c.policy);
    const test::Run oracle = test::run(c.w, n, p);  // the layout, built here without the reader
    // What the reader built before: ulysses_degree alone (ring 1, TP 1, no FSDP, the model's CFG).
    const test::Run ulysses_only = test::run(test::workload(model, 480, 832, 17, c.w.ulysses_degree), n, p);
    REQUIRE(oracle.result.summary.step_time_s != ulysses_only.result.summary.step_time_s);

    const fs::path dir = test::fresh_dir("layout");
    const double oracle_s = harness_step_s(oracle, n);
    write_json(dir / "run.json", hw_summary(c.w, n.id, p, true, oracle_s * scale, int64_t(oracle.plan.ops.size())));
    const std::vector<MeasuredRun> runs = find_measured_runs(dir.string());
    REQUIRE(runs.size() == 1);
    const Workload rebuilt = resolve_scenario(runs[0].options).workload;
    CHECK(rebuilt.ulysses_degree == c.w.ulysses_degree);
    CHECK(rebuilt.ring_degree == c.w.ring_degree);
    CHECK(rebuilt.tp_degree == c.w.tp_degree);
    CHECK(rebuilt.fsdp == c.w.fsdp);
    CHECK(resolved_cfg(rebuilt) == resolved_cfg(c.w));
    CHECK(gpus_used(rebuilt) == gpus_used(c.w));

    const ValidationResult v = validate_runs(runs, "");
    REQUIRE(v.rows.size() == 1);
    CHECK(v.rows[0].predicted_step_time_s == Approx(oracle_s).epsilon(1e-12));
    CHECK_FALSE(v.rows[0].plan_mismatch);  // the harness's op count is the layout plan's
    CHECK(v.rows[0].error == Approx(1.0 / scale - 1.0).epsilon(1e-12));

    // The same through simulate --json (layout in /scenario/workload, the plan's node recorded).
    Scenario s = default_scenario();
    s.node = n;
    s.workload = c.w;
    s.policy = p;
    fs::remove_all(dir);
    fs::create_directories(dir);
    write_scaled_run(dir, "sim", s, scale);
    const ValidationResult vs = validate_runs(find_measured_runs(dir.string()), "");
    REQUIRE(vs.rows.size() == 1);
    const Workload from_sim = resolve_scenario(vs.rows[0].run.options).workload;
    CHECK(from_sim.ring_degree == c.w.ring_degree);
    CHECK(from_sim.tp_degree == c.w.tp_degree);
    CHECK(from_sim.fsdp == c.w.fsdp);
    CHECK(resolved_cfg(from_sim) == resolved_cfg(c.w));
    CHECK(vs.rows[0].error == Approx(1.0 / scale - 1.0).epsilon(1e-12));
    fs::remove_all(dir);
  }
}

TEST_CASE("a summary without the layout fields (older chunkflow-hw) is re-simulated Ulysses-only, as before") {
  const NodeSpec n = node("8xh100-sxm");
  const Workload w = test::workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  const PolicyConfig p = test::policy("chunkflow", 0.25);
  const test::Run oracle = test::run(w, n, p);
  const fs::path dir = test::fresh_dir("old-summary");
  write_json(dir / "run.json", hw_summary(w, n.id, p, false, harness_step_s(oracle, n), int64_t(oracle.plan.ops.size())));
  const std::vector<MeasuredRun> runs = find_measured_runs(dir.string());
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].options.ring == 1);
  CHECK(runs[0].options.tp == 1);
  CHECK(runs[0].options.fsdp == false);
  CHECK_FALSE(runs[0].options.cfg.has_value());  // the scenario's CFG: here the model's default
  const Workload rebuilt = resolve_scenario(runs[0].options).workload;
  CHECK(rebuilt.ulysses_degree == 2);
  CHECK(rebuilt.ring_degree == 1);
  CHECK(rebuilt.tp_degree == 1);
  CHECK_FALSE(rebuilt.fsdp);
  CHECK(resolved_cfg(rebuilt) == default_cfg(w.model));
  const ValidationResult v = validate_runs(runs, "");
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].error == Approx(0.0).margin(1e-12));
  CHECK_FALSE(v.rows[0].plan_mismatch);

  // A scenario file named by the summary may now hold a layout: an older summary still ran
  // Ulysses only (its CFG is the file's); a newer one's "fsdp": false beats the file's true.
  const fs::path scenario_file = dir / "layout-scenario.json";
  write_json(scenario_file, {{"name", "layout"},
                             {"node", n.id},
                             {"workload", {{"model", w.model}, {"height", 480}, {"width", 832}, {"frames", 17},
                                           {"ulysses_degree", 2}, {"ring_degree", 2}, {"tp_degree", 2},
                                           {"fsdp", true}, {"cfg", "none"}}}});
  nlohmann::json old = hw_summary(w, n.id, p, false, 1.0, 0);
  old["scenario"]["file"] = scenario_file.string();
  write_json(dir / "run.json", old);
  const Workload from_old = resolve_scenario(read_measured_run((dir / "run.json").string())->options).workload;
  CHECK(from_old.ring_degree == 1);
  CHECK(from_old.tp_degree == 1);
  CHECK_FALSE(from_old.fsdp);
  CHECK(resolved_cfg(from_old) == CfgMode::none);
  nlohmann::json newer = hw_summary(w, n.id, p, true, 1.0, 0);
  newer["scenario"]["file"] = scenario_file.string();
  write_json(dir / "run.json", newer);
  const Workload from_new = resolve_scenario(read_measured_run((dir / "run.json").string())->options).workload;
  CHECK_FALSE(from_new.fsdp);
  CHECK(resolved_cfg(from_new) == CfgMode::sequential);  // the run said so (Wan's default)
  fs::remove_all(dir);
}

TEST_CASE("malformed layout fields of a measured run are refused naming the file, the field and the expected form") {
  const Workload w = test::layout("wan2.1-t2v-1.3b", 480, 832, 17, 2, 2, 2, true, CfgMode::none);
  const PolicyConfig p = test::policy("layerwise", 0.25);
  const fs::path dir = test::fresh_dir("bad-layout");
  const std::string file = (dir / "run.json").string();
  struct Bad {
    std::string key;
    nlohmann::json value;
    std::string expected;
  };
  const std::vector<Bad> bad = {
      {"ring_degree", "2", "expected an integer, got \"2\""},
      {"ring_degree", 0, "expected an integer in [1, 64] ranks"},
      {"tp_degree", 2.0, "expected an integer, got 2.0"},
      {"tp_degree", 4294967298LL, "expected an integer in [1, 64] ranks"},  // 2 once cast to int
      {"ulysses_degree", -2, "expected an integer in [1, 64] ranks"},
      {"fsdp", 1, "expected true or false, got 1"},
      {"fsdp", "true", "expected true or false"},
      {"cfg", "both", "expected one of none, sequential, parallel, auto, got \"both\""},
      {"cfg", 2, "expected a string, got 2"},
  };
  for (const Bad& b : bad) {
    nlohmann::json j = hw_summary(w, "8xh100-sxm", p, true, 1.0, 0);
    j["scenario"][b.key] = b.value;
    write_json(file, j);
    INFO(b.key << " = " << b.value.dump());
    try {
      (void)read_measured_run(file);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == file);
      CHECK(e.field() == "/scenario/" + b.key);
      CHECK_THAT(e.message(), Catch::Contains(b.expected));
    }
  }
  // simulate --json keeps the layout in /scenario/workload: the error names that pointer.
  Scenario s = default_scenario();
  s.node = node("8xh100-sxm");
  s.workload = w;
  s.policy = p;
  write_scaled_run(dir, "run", s, 1.0);
  nlohmann::json j;
  std::ifstream(file) >> j;
  j["scenario"]["workload"]["tp_degree"] = "two";
  write_json(file, j);
  try {
    (void)read_measured_run(file);
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.file() == file);
    CHECK(e.field() == "/scenario/workload/tp_degree");
    CHECK_THAT(e.message(), Catch::Contains("expected an integer"));
  }
  fs::remove_all(dir);
}

TEST_CASE("plan_fnv1a64 names a plan by what its executors do: equal when re-built, different when a decision differs") {
  const NodeSpec n = node("2xh100-pcie");
  const Workload w = test::workload("flux.1-dev", 1024, 1024, 1, 2);
  const StepPlan a = build_plan(w, n, test::policy("chunkflow", 0.25, 16));
  // The hash itself is FNV-1a 64 (its published test vectors).
  for (const auto& [text, value] : {std::pair<std::string, uint64_t>{"", 0xcbf29ce484222325ull},
                                    {"a", 0xaf63dc4c8601ec8cull}, {"foobar", 0x85944171f73967e8ull}}) {
    Fnv1a64 h;
    h.add(text.data(), text.size());
    CHECK(h.value() == value);
  }
  const std::string digest = plan_fnv1a64(a);
  CHECK(digest.size() == 18);
  CHECK(digest.rfind("0x", 0) == 0);
  CHECK(plan_fnv1a64(build_plan(w, n, test::policy("chunkflow", 0.25, 16))) == digest);  // re-built
  StepPlan relabelled = a;  // names and FLOPs are labels and costs, not decisions
  for (PlanOp& op : relabelled.ops) op.name += "'", op.flop *= 1.5;
  for (BlockCost& b : relabelled.cost.blocks)
    for (StageCost& st : b.stages) st.flop *= 2, st.elementwise_bytes *= 2, st.elementwise_kernels += 1;
  CHECK(plan_fnv1a64(relabelled) == digest);
  // Every decision an executor acts on moves it: another chunk size, a dependency, a slot, a rate cap.
  CHECK(plan_fnv1a64(build_plan(w, n, test::policy("chunkflow", 0.25, 32))) != digest);
  auto first_h2d = [](StepPlan& p) -> PlanOp& {
    for (PlanOp& op : p.ops)
      if (op.kind == OpKind::h2d) return op;
    FAIL("the plan has no H2D op");
    return p.ops.front();
  };
  StepPlan m = a;
  first_h2d(m).slot += 1;
  CHECK(plan_fnv1a64(m) != digest);
  m = a;
  first_h2d(m).rate_cap_bytes_per_s = 12.5e9;
  CHECK(plan_fnv1a64(m) != digest);
  m = a;
  m.ops.back().deps.pop_back();
  CHECK(plan_fnv1a64(m) != digest);
  m = a;
  first_h2d(m).bytes += 256;
  CHECK(plan_fnv1a64(m) != digest);
  // And the work the ops reference: a GEMM's shape, a linear's weight range, the model.
  for (auto edit : {+[](StageCost& st) { st.gemm.n += 1; }, +[](StageCost& st) { st.weight_offset_bytes += 256; },
                    +[](StageCost& st) { st.attention.heads += 1; }}) {
    m = a;
    for (StageCost& st : m.cost.blocks.front().stages) edit(st);
    CHECK(plan_fnv1a64(m) != digest);
  }
  m = a;
  m.workload.model = "flux.1-schnell";
  CHECK(plan_fnv1a64(m) != digest);
}

TEST_CASE("validate --measured flags a run whose recorded plan digest is not the re-built plan's, even at the same op count") {
  const NodeSpec n = node("2xh100-pcie");
  const Workload w = test::workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  const PolicyConfig p = test::policy("chunkflow", 0.25);
  const test::Run oracle = test::run(w, n, p);
  const fs::path dir = test::fresh_dir("plan-digest");
  nlohmann::json j = hw_summary(w, n.id, p, true, harness_step_s(oracle, n), int64_t(oracle.plan.ops.size()));
  j["plan"]["fnv1a64"] = plan_fnv1a64(oracle.plan);
  write_json(dir / "run.json", j);
  ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].run.plan_fnv1a64 == plan_fnv1a64(oracle.plan));
  CHECK_FALSE(v.rows[0].plan_mismatch);
  // Same op count, another digest (a plan the harness built from other decisions): flagged.
  j["plan"]["fnv1a64"] = "0x0000000000000000";
  write_json(dir / "run.json", j);
  v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].plan_mismatch);
  CHECK_FALSE(gate_failures(v).empty());
  // simulate --json records the digest at the top level; its own plan matches.
  Scenario s = default_scenario();
  s.node = n;
  s.workload = w;
  s.policy = p;
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_scaled_run(dir, "sim", s, 1.0);
  v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  CHECK_FALSE(v.rows[0].run.plan_fnv1a64.empty());
  CHECK_FALSE(v.rows[0].plan_mismatch);
  fs::remove_all(dir);
}

TEST_CASE("a run planned to a memory budget is re-planned to that budget (memory_budget_bytes of the summary)") {
  Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/hw-flux-1024-u2-1xh100-sxm.json");
  s.policy = test::policy("chunkflow", std::nullopt, 16);
  s.policy.memory_budget_bytes = 15.66 * kGiB;
  PolicyConfig unbudgeted = s.policy;
  unbudgeted.memory_budget_bytes.reset();
  // The budget changes the plan here (else this case would not tell a lost budget).
  REQUIRE(plan_fnv1a64(build_plan(s.workload, s.node, s.policy)) != plan_fnv1a64(build_plan(s.workload, s.node, unbudgeted)));
  const fs::path dir = test::fresh_dir("budget");
  write_scaled_run(dir, "sim", s, 1.0);
  const ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  REQUIRE(v.rows[0].run.options.memory_budget_gib.has_value());
  CHECK(*v.rows[0].run.options.memory_budget_gib == Approx(15.66).epsilon(1e-12));
  CHECK_FALSE(v.rows[0].plan_mismatch);
  CHECK(v.rows[0].error == Approx(0.0).margin(1e-12));
  // A chunkflow-hw summary's scenario block carries it as bytes too; 0 is no budget; a negative one is refused.
  const Workload w = test::workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  const PolicyConfig p = test::policy("chunkflow", 0.25);
  for (double budget : {0.0, 4.0 * kGiB}) {
    nlohmann::json j = hw_summary(w, "2xh100-pcie", p, true, 1.0, 0);
    j["scenario"]["memory_budget_bytes"] = budget;
    write_json(dir / "sim.json", j);
    const std::vector<MeasuredRun> runs = find_measured_runs(dir.string());
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].options.memory_budget_gib.has_value() == (budget > 0));
  }
  nlohmann::json bad = hw_summary(w, "2xh100-pcie", p, true, 1.0, 0);
  bad["scenario"]["memory_budget_bytes"] = -1;
  write_json(dir / "sim.json", bad);
  CHECK_THROWS_AS(find_measured_runs(dir.string()), InputError);
  fs::remove_all(dir);
}

TEST_CASE("a run's resident fraction is read back as the shortest text of the same double (the table prints 0.2, the re-plan gets 0.2 exactly)") {
  const Workload w = test::workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  const fs::path dir = test::fresh_dir("fraction");
  for (const double fraction : {0.2, 0.4, 0.8, 1.0 / 3.0, 0.0, 1.0}) {
    INFO("fraction " << fraction);
    write_json(dir / "run.json", hw_summary(w, "2xh100-pcie", test::policy("chunkflow", fraction), true, 1.0, 0));
    const std::optional<MeasuredRun> run = read_measured_run((dir / "run.json").string());
    REQUIRE(run);
    REQUIRE(run->options.resident_fraction);
    const std::string& text = *run->options.resident_fraction;
    CHECK(std::stod(text) == fraction);  // exact: the plan is re-built with the run's fraction
    CHECK(text.size() <= 18);            // 0.3333333333333333 is the longest of these
    if (fraction == 0.2) CHECK(text == "0.2");
  }
  fs::remove_all(dir);
}

TEST_CASE("a run planned on a calibrated node is re-planned on that node (the calibration file it names), not flagged") {
  const fs::path dir = test::fresh_dir("calibrated-plan");
  const NodeSpec base = node("2xh100-pcie");
  Calibration c;
  c.node_id = base.id;
  c.peak_flop_per_s = base.peak_flop_per_s;
  c.compute_launch_s = base.compute_launch_s;
  c.hbm_efficiency_scale = 0.7;   // fields the recorded node figures do not hold
  c.gemm_efficiency_scale = 0.8;
  const std::string cal = (dir / "cal.json").string();
  std::ofstream(cal) << calibration_to_json(c, "{}");
  ScenarioOptions o;
  o.node = base.id;
  o.model = "flux.1-dev";
  o.height = 1024;
  o.width = 1024;
  o.frames = 1;
  o.ulysses = 2;
  o.policy = "chunkflow";
  o.resident_fraction = "auto";
  o.chunk_mib = 16;
  o.calibration_file = cal;
  const Scenario s = resolve_scenario(o);
  write_scaled_run(dir, "sim", s, 1.0);
  const ValidationResult v = validate_runs(find_measured_runs(dir.string()), cal);
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].run.plan_calibration_file == cal);
  CHECK_FALSE(v.rows[0].plan_mismatch);
  CHECK(v.rows[0].error == Approx(0.0).margin(1e-12));
  fs::remove_all(dir);
}

TEST_CASE("a run planned with a calibration on another machine finds that file beside it by name and digest") {
  // chunkflow-hw run --calibration records the file's path and digest (hw/report.cpp scenario_json);
  // first-contact.sh measures on the GPU box and keeps the file beside runs/, and the path it
  // recorded (/tmp/... there) does not exist where validate runs.
  const fs::path dir = test::fresh_dir("calibrated-elsewhere");
  fs::create_directories(dir / "runs");
  const NodeSpec base = node("2xh100-pcie");
  Calibration c;
  c.node_id = base.id;
  c.peak_flop_per_s = base.peak_flop_per_s;
  c.compute_launch_s = base.compute_launch_s;
  c.compute_slowdown_h2d = 0.1;
  const std::string cal = (dir / "calibration-device.json").string();
  std::ofstream(cal) << calibration_to_json(c, "{}");
  const Workload w = test::workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  auto summary = [&](const std::string& recorded, const std::string& digest) {
    nlohmann::json j = hw_summary(w, base.id, test::policy("chunkflow", std::nullopt), true, 1.0, 0);
    j["scenario"]["calibration_file"] = recorded;
    if (!digest.empty()) j["scenario"]["calibration_fnv1a64"] = digest;
    write_json(dir / "runs" / "run.json", j);
    const std::optional<MeasuredRun> r = read_measured_run((dir / "runs" / "run.json").string());
    REQUIRE(r);
    return r->plan_calibration_file;
  };
  const std::string elsewhere = "/nonexistent-chunkflow-device/fc/measured/calibration-device.json";
  CHECK(fs::equivalent(summary(elsewhere, file_fnv1a64(cal)), cal));  // found one folder up, same bytes
  CHECK(summary(elsewhere, "0x0000000000000000").empty());           // same name, other bytes: not taken
  CHECK(summary(elsewhere, "").empty());                             // no digest: only the recorded path
  CHECK(fs::equivalent(summary(cal, ""), cal));                      // the recorded path, as before
  fs::remove_all(dir);
}
