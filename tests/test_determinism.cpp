// Determinism (issue 2 §6, issue 11 §3): the same input gives byte-identical JSON and trace; a
// sweep, a tuning and a validation give the same rows on one thread and on several. (In-process;
// tests/cli_end_to_end.sh compares the files of separate processes at different thread counts.)
#include <omp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "sim/tune.hpp"
#include "sim/validate.hpp"
#include "sim_fixtures.hpp"
#include "traces/chrome_trace.hpp"

using namespace chunkflow;
using namespace chunkflow::test;

namespace {
std::pair<std::string, std::string> json_and_trace(const Scenario& s) {
  const auto r = run(s.workload, s.node, s.policy);
  nlohmann::json j = simulate_json(s, r.plan, r.result);
  j["context"] = context_block("chunkflow simulate --json");
  std::ostringstream trace;
  write_chrome_trace(r.result.timeline, trace);
  return {j.dump(2), trace.str()};
}
}  // namespace

TEST_CASE("the same input gives byte-identical JSON and Chrome trace", "[determinism]") {
  Scenario s = default_scenario();
  s.workload.frames = 17;
  for (const std::string name : {"layerwise", "chunkflow"}) {
    s.policy = policy(name, std::nullopt, 32);
    const auto first = json_and_trace(s);
    const auto second = json_and_trace(s);
    CHECK(first.first == second.first);
    CHECK(first.second == second.second);
    CHECK(first.second.size() > 1000);
  }
}

TEST_CASE("a sweep gives identical rows on one thread and on several", "[determinism]") {
  Scenario s = default_scenario();
  s.workload.frames = 17;
  SweepGrid grid;
  grid.chunk_mib = {16, 128};
  grid.resident_fractions = {std::nullopt, 0.0, 0.5};
  const auto configs = sweep_configs(grid);
  omp_set_num_threads(1);
  const std::string serial = sweep_csv(s, run_sweep(s, configs));
  omp_set_num_threads(2);
  const std::string parallel = sweep_csv(s, run_sweep(s, configs));
  CHECK(serial == parallel);
  // Shards partition the configurations: their rows together are the whole sweep's.
  std::size_t rows = 0;
  for (int i = 0; i < 3; ++i) rows += run_sweep(s, configs, i, 3).size();
  CHECK(rows == configs.size());
}

namespace {
/// Every candidate of a tuning as CSV, then the chosen index and the frontier.
std::string tune_text(const Scenario& s, const SweepGrid& grid, double budget_bytes) {
  const TuneResult t = tune(s, grid, budget_bytes);
  std::string out = sweep_csv(s, t.candidates) + "best " + std::to_string(t.best) + "\nfrontier";
  for (int i : t.frontier) out += " " + std::to_string(i);
  return out;
}
}  // namespace

TEST_CASE("tune chooses the same configuration and frontier on one thread and on several", "[determinism]") {
  Scenario s = default_scenario();
  s.workload.frames = 17;
  SweepGrid grid = default_tune_grid();
  grid.chunk_mib = {16, 64};
  omp_set_num_threads(1);
  const std::string serial = tune_text(s, grid, 20 * kGiB);
  omp_set_num_threads(2);
  const std::string parallel = tune_text(s, grid, 20 * kGiB);
  CHECK(serial == parallel);
  CHECK(serial.find("best -1") == std::string::npos);
}

TEST_CASE("validate gives the same rows on one thread and on several", "[determinism]") {
  // Two "measured" runs: simulate --json of two policies (their own prediction as the measurement).
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("chunkflow-test-determinism-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Scenario s = default_scenario();
  s.workload.frames = 17;
  for (const std::string name : {"layerwise", "chunkflow"}) {
    s.policy = policy(name, 0.5, 32);
    const auto r = run(s.workload, s.node, s.policy);
    nlohmann::json j = simulate_json(s, r.plan, r.result);
    j["step_time_s"] = r.result.summary.step_time_s * 1.03;
    std::ofstream(dir / (name + ".json")) << j.dump();
  }
  auto text = [&] {
    std::string out;
    const ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
    for (const auto& row : v.rows) out += row.run.summary_path + " " + std::to_string(row.predicted_step_time_s) + " " +
                                          std::to_string(row.error) + "\n";
    return out + std::to_string(v.mean_abs_error) + " " + std::to_string(v.max_abs_error);
  };
  omp_set_num_threads(1);
  const std::string serial = text();
  omp_set_num_threads(2);
  CHECK(serial == text());
  fs::remove_all(dir);
}
