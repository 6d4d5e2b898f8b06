// sim/cli_calibration.cpp, sim/tune.*, sim/validate.*: the commands at CLI level (compare gives
// zero error on identical timelines and the exact shift on a shifted one; bad input leaves no
// output), tune never exceeds the budget and its frontier is monotone, validate re-simulates runs
// and leaves the runs used for fitting out of its error figures.
#include <catch2/catch.hpp>
#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/calibration.hpp"
#include "model/error.hpp"
#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/cli.hpp"
#include "sim/executor.hpp"
#include "sim/report.hpp"
#include "sim/tune.hpp"
#include "sim/validate.hpp"
#include "traces/chrome_trace.hpp"

using namespace chunkflow;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

fs::path tmp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("chunkflow-test-cli-calibration-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// Runs `chunkflow <args>` in process (only the calibration commands registered) and returns
/// what it printed on stdout. Exceptions propagate as they would to main().
std::string run_cli(std::vector<std::string> args) {
  CLI::App app{"chunkflow (test)"};
  app.require_subcommand(1, 1);
  CliContext ctx;
  ctx.command_line = "chunkflow (test)";
  register_calibration_commands(app, ctx);
  std::vector<const char*> argv = {"chunkflow"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  return captured.str();
}

/// A small scenario that simulates quickly: Wan 1.3B, 17 frames, Ulysses 2 on 2xh100-pcie.
Scenario small_scenario() {
  Scenario s = default_scenario();
  s.workload.model = "wan2.1-t2v-1.3b";
  s.workload.frames = 17;
  s.policy.policy = "chunkflow";
  s.policy.resident_fraction = 0.0;
  return s;
}

void write_trace(const Timeline& t, const fs::path& p) {
  std::ofstream out(p);
  write_chrome_trace(t, out);
}

}  // namespace

TEST_CASE("compare CLI: identical timelines give zero error, shifting the last step by d gives step_time_error -d/(t+d)") {
  const Scenario s = small_scenario();
  const StepPlan plan = build_plan(s.workload, s.node, s.policy);
  const SimResult r = simulate(plan, s.node);
  const fs::path dir = tmp_dir("compare");
  write_trace(r.timeline, dir / "predicted.json");
  write_trace(r.timeline, dir / "same.json");

  json same = json::parse(run_cli({"compare", "--predicted", (dir / "predicted.json").string(), "--measured",
                                   (dir / "same.json").string(), "--json"}));
  CHECK(same["step_time_error"].get<double>() == 0.0);
  CHECK(same["op_error"]["max"].get<double>() == 0.0);
  CHECK(same["lane_busy_time_error"]["compute"].get<double>() == 0.0);
  CHECK(same["lane_busy_time_error"]["h2d"].get<double>() == 0.0);
  CHECK(same["prefetch_stall_error"].get<double>() == 0.0);
  CHECK(same["matched_ops"].get<int>() == int(plan.ops.size()));

  // Measured: every op of the last step starts and ends d later (durations unchanged).
  const double d_s = 1.5e-3;
  Timeline shifted = r.timeline;
  const int last = shifted.steps - 1;
  for (auto& row : shifted.rows)
    if (row.step == last) row.start_s += d_s, row.end_s += d_s;
  write_trace(shifted, dir / "shifted.json");
  json sh = json::parse(run_cli({"compare", "--predicted", (dir / "predicted.json").string(), "--measured",
                                 (dir / "shifted.json").string(), "--json"}));
  const double t = r.summary.step_time_s;
  CHECK(sh["step_time"]["measured_s"].get<double>() == Approx(t + d_s).epsilon(1e-12));
  CHECK(sh["step_time_error"].get<double>() == Approx(-d_s / (t + d_s)).epsilon(1e-9));
  CHECK(sh["op_error"]["max"].get<double>() == Approx(0.0).margin(1e-9));

  // The console form names every figure the issue asks for.
  const std::string table = run_cli({"compare", "--predicted", (dir / "predicted.json").string(), "--measured",
                                     (dir / "shifted.json").string()});
  for (const char* word : {"step time", "compute lane busy", "h2d lane busy", "comm lane busy", "prefetch stall",
                           "collective time", "median", "p90", "ops that differ most"})
    CHECK(table.find(word) != std::string::npos);

  // A missing trace is an input error naming the option.
  CHECK_THROWS_AS(run_cli({"compare", "--predicted", (dir / "nope.json").string(), "--measured", (dir / "same.json").string()}),
                  InputError);
}

TEST_CASE("calibrate CLI: a bad measurement file is an InputError and writes no calibration") {
  const fs::path dir = tmp_dir("calibrate");
  std::ofstream(dir / "bench.json") << R"({"context": {}, "measurements": [{"key": "h2d_bandwidth", "points": [{"bytes": 4096, "time_s_median": "x"}]}]})";
  try {
    (void)run_cli({"calibrate", "--measurements", (dir / "bench.json").string(), "--out", (dir / "cal.json").string(),
                   "--node", "2xh100-pcie"});
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == (dir / "bench.json").string());
  }
  CHECK_FALSE(fs::exists(dir / "cal.json"));

  // A good one writes a calibration that loads back.
  std::ofstream(dir / "good.json") << R"({"context": {"gpu_name": "synthetic"}, "measurements": [{"key": "h2d_bandwidth", "points": [
      {"bytes": 4096, "time_s_median": 1.0e-5}, {"bytes": 1048576, "time_s_median": 3.0e-5},
      {"bytes": 67108864, "time_s_median": 1.3e-3}]}]})";
  (void)run_cli({"calibrate", "--measurements", (dir / "good.json").string(), "--out", (dir / "cal.json").string(), "--node",
                 "2xh100-pcie"});
  const Calibration c = load_calibration((dir / "cal.json").string());
  CHECK(c.h2d_bytes_per_s.has_value());
  CHECK(c.node_id == "2xh100-pcie");
}

TEST_CASE("pareto_frontier: strictly increasing peak, strictly decreasing step time, nothing dominates it") {
  const std::vector<double> peak = {5, 3, 3, 8, 1, 6, 2};
  const std::vector<double> time = {4, 6, 5, 1, 9, 4, 9};
  const auto f = pareto_frontier(peak, time);
  for (std::size_t i = 1; i < f.size(); ++i) {
    CHECK(peak[f[i]] > peak[f[i - 1]]);
    CHECK(time[f[i]] < time[f[i - 1]]);
  }
  for (int i : f)
    for (std::size_t j = 0; j < peak.size(); ++j) {
      const bool dominates = peak[j] <= peak[i] && time[j] <= time[i] && (peak[j] < peak[i] || time[j] < time[i]);
      CHECK_FALSE(dominates);
    }
  // Every point off the frontier is dominated by (or equal to) a frontier point.
  for (std::size_t j = 0; j < peak.size(); ++j) {
    bool covered = false;
    for (int i : f) covered |= peak[i] <= peak[j] && time[i] <= time[j];
    CHECK(covered);
  }
}

TEST_CASE("tune never returns a configuration over the budget, is optimal within it, and its frontier is monotone") {
  Scenario s = small_scenario();
  SweepGrid g = default_tune_grid();
  g.chunk_mib = {16, 64};
  g.resident_fractions = {std::nullopt, 0.0, 0.25, 0.5, 0.75, 1.0};
  // Budgets from the smallest to the largest peak of the grid.
  const auto all = run_sweep(s, sweep_configs(g));
  double lo = all[0].summary.peak_memory_bytes, hi = lo;
  for (const auto& r : all) lo = std::min(lo, r.summary.peak_memory_bytes), hi = std::max(hi, r.summary.peak_memory_bytes);
  REQUIRE(hi > lo);
  for (double f : {0.0, 0.3, 0.6, 1.0}) {
    const double budget = lo + f * (hi - lo);
    INFO("budget " << budget << " bytes");
    const TuneResult t = tune(s, g, budget);
    REQUIRE(t.best >= 0);
    CHECK(t.candidates[t.best].summary.peak_memory_bytes <= budget);
    for (const auto& c : t.candidates)
      if (c.summary.peak_memory_bytes <= budget) {
        // Optimal up to the stated tie tolerance, and a tie goes to the smaller peak memory.
        CHECK(c.summary.step_time_s >= t.candidates[t.best].summary.step_time_s * (1 - kTuneTieRelative));
        if (!clearly_faster(t.candidates[t.best].summary.step_time_s, c.summary.step_time_s))
          CHECK(c.summary.peak_memory_bytes >= t.candidates[t.best].summary.peak_memory_bytes);
      }
    for (std::size_t i = 1; i < t.frontier.size(); ++i) {
      CHECK(t.candidates[t.frontier[i]].summary.peak_memory_bytes > t.candidates[t.frontier[i - 1]].summary.peak_memory_bytes);
      CHECK(t.candidates[t.frontier[i]].summary.step_time_s < t.candidates[t.frontier[i - 1]].summary.step_time_s);
    }
    // The best within budget lies on the frontier (it is optimal for its memory).
    CHECK(std::find(t.frontier.begin(), t.frontier.end(), t.best) != t.frontier.end());
  }
  CHECK_THROWS_AS(tune(s, g, 0.5 * lo), InputError);
}

TEST_CASE("validate re-simulates runs with their own scenario, runs listed in the calibration's sources are excluded") {
  const fs::path dir = tmp_dir("validate");
  // Synthetic "measured" runs: the simulator's own summaries (so uncalibrated error is 0) under a
  // temporary folder (never traces/measured/).
  int k = 0;
  for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) {
    Scenario s = small_scenario();
    s.policy.policy = policy;
    const StepPlan plan = build_plan(s.workload, s.node, s.policy);
    const SimResult r = simulate(plan, s.node);
    json j = simulate_json(s, plan, r);
    j["context"] = {{"gpu_name", "synthetic"}};
    std::ofstream(dir / ("run" + std::to_string(k++) + ".json")) << j.dump(2);
  }
  std::ofstream(dir / "bench.json") << R"({"context": {}, "measurements": []})";  // not a run: skipped
  const auto runs = find_measured_runs(dir.string());
  REQUIRE(runs.size() == 3);
  const ValidationResult v = validate_runs(runs, "");
  CHECK(v.held_out == 3);
  for (const auto& row : v.rows) CHECK(row.error == Approx(0.0).margin(1e-12));
  CHECK(v.max_abs_error == Approx(0.0).margin(1e-12));

  // A calibration that consumed run1.json: run1 is marked and left out of the figures.
  Calibration c;
  c.node_id = "2xh100-pcie";
  c.peak_flop_per_s = node("2xh100-pcie").peak_flop_per_s;
  c.gemm_efficiency = 0.5;  // a different node: errors are no longer 0
  c.sources.push_back({(dir / "run1.json").string(), file_fnv1a64((dir / "run1.json").string()), {}});
  std::ofstream(dir / "cal.json.txt") << calibration_to_json(c, "{}");
  const ValidationResult vc = validate_runs(runs, (dir / "cal.json.txt").string());
  REQUIRE(vc.rows.size() == 3);
  CHECK(vc.held_out == 2);
  double mean = 0, mx = 0;
  for (const auto& row : vc.rows) {
    CHECK(row.used_for_fitting == (fs::path(row.run.summary_path).filename() == "run1.json"));
    if (!row.used_for_fitting) mean += std::abs(row.error) / 2, mx = std::max(mx, std::abs(row.error));
  }
  CHECK(vc.mean_abs_error == Approx(mean));
  CHECK(vc.max_abs_error == Approx(mx));
  CHECK(vc.max_abs_error > 0);

  // The CLI prints the table and the JSON keys.
  json out = json::parse(run_cli({"validate", "--measured", dir.string(), "--json"}));
  CHECK(out["runs"].size() == 3);
  CHECK(out.contains("mean_abs_error"));
  CHECK(out.contains("max_abs_error"));
}
