// Determinism (issue 2 §6): the same input gives byte-identical JSON and trace; a sweep gives the
// same rows on one thread and on every thread.
#include <omp.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "sim/report.hpp"
#include "sim/sweep.hpp"
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
