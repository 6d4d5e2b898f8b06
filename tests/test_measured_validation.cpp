// CI gate on real hardware data: for every device folder under traces/measured/ that holds
// measured runs, the calibrated simulator's step-time error on the held-out runs is at most 5 %
// mean and 10 % max (mission fidelity goal; systems-and-hardware.md §6 for what published
// simulators reach). The calibration of a device is traces/measured/<device>/calibration.json
// (written by `chunkflow calibrate`); its `sources` mark the runs used for fitting, which are
// left out (sim/validate.hpp).
//
// The gate is one function (gate_failures) and a test shows it can fail: synthetic "measured"
// runs whose step time is the simulator's own prediction scaled by a known factor must pass at
// 1.00 and fail at 1.12 (max) and at 1.06 everywhere (mean). With no measured runs under
// traces/measured/ the hardware gate has nothing to check: the test says so on stdout and in a
// Catch2 WARN (Catch2 2.13 has no SKIP).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "sim/report.hpp"
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
    const fs::path cal = dev / "calibration.json";
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
