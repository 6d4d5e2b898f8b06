// Grid sweeps (sim/grid.hpp, sim/grid_run.hpp): the counts' closed forms, and a grid row equals what
// the command line's own path (resolve_scenario → build_plan → simulate) gives for the same
// configuration, on random configurations of a grid spanning models, shapes, nodes, layouts and
// policies; rows stream in configuration order whatever the thread count.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "model/error.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/grid.hpp"
#include "sim/grid_run.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;

namespace {

/// Relative tolerance of "the same number" (issue 12 §2: shortcuts equal the full path within 1e-9).
constexpr double kRelTol = 1e-9;

bool same(double a, double b) { return std::abs(a - b) <= kRelTol * std::max({1e-300, std::abs(a), std::abs(b)}); }

const char* kGrid = R"({
  "models": ["wan2.1-t2v-1.3b", "flux.1-dev", "wan2.1-t2v-14b"],
  "shapes": [{"height": 480, "width": 832, "frames": 17}, {"height": 512, "width": 512}],
  "nodes": ["2xh100-pcie", "2xh100-pcie-nvlink", "4xrtx4090"],
  "layouts": [{"ulysses_degree": 1}, {"ulysses_degree": 2}, {"ulysses_degree": 4}],
  "policies": ["no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"],
  "chunk_mib": [16, 64],
  "resident_fractions": [0, 0.5, "auto"],
  "memory_budget_gib": [null, 20],
  "lookahead": [1, 2]
})";

}  // namespace

TEST_CASE("grid counts: product = collapsed + invalid + configurations, collapsed by its closed form", "[grid]") {
  // 2 models × 2 shapes (the video shape is invalid on FLUX) × 1 node × 1 layout; per workload
  // combination 4 policies × (3 chunks × 2 fractions × 2 lookaheads) = 48 products, of which
  // no-offload keeps 1 (11 collapsed), each baseline 2 × 2 = 4 (8 collapsed), chunkflow all 12.
  const Grid g = grid_from_text(R"({"models": ["wan2.1-t2v-1.3b", "flux.1-dev"],
    "shapes": [{"height": 480, "width": 832, "frames": 17}, {"height": 512, "width": 512}],
    "policies": ["no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"],
    "chunk_mib": [16, 32, 64], "resident_fractions": [0, 0.5], "lookahead": [1, 2]})", "test", "");
  CHECK(g.product_size == 4 * 48);
  CHECK(g.policies.size() == 1 + 4 + 4 + 12);
  CHECK(g.collapsed == 4 * (11 + 8 + 8));
  CHECK(g.workloads.size() == 3);  // flux × the 17-frame shape is invalid
  CHECK(g.invalid_workloads == 1);
  const GridCounts c = count_grid(g);
  CHECK(c.invalid == 21);
  CHECK(c.configurations == 3 * 21);
  CHECK(g.product_size == g.collapsed + c.invalid + c.configurations);
  CHECK(c.first_invalid_reason.find("/workload/frames") != std::string::npos);
}

TEST_CASE("a grid row equals the CLI path's result for the same configuration (random configurations, 1e-9)", "[grid]") {
  const Grid g = grid_from_text(kGrid, "test", "");
  REQUIRE(count_grid(g).configurations > 500);
  int compared = 0;
  for (const GridConfig& c : chunkflow::test::random_grid_configs(g, 40, 20261123)) {
    const GridRow row = run_grid_config(g, c);
    const Scenario& gs = g.workloads[c.workload].scenario;
    const PolicyConfig& p = g.policies[c.policy];
    // The CLI's path: the default scenario with every value as an override, as `simulate` takes it.
    ScenarioOptions o;
    o.node = gs.node.id;
    o.model = gs.workload.model;
    o.height = gs.workload.height;
    o.width = gs.workload.width;
    o.frames = gs.workload.frames;
    o.batch = gs.workload.batch;
    o.ulysses = gs.workload.ulysses_degree;
    o.policy = p.policy;
    o.chunk_mib = p.chunk_bytes / kMiB;
    o.resident_fraction = p.resident_fraction ? std::to_string(*p.resident_fraction) : "auto";
    o.lookahead = p.lookahead;
    o.steps = p.steps;
    if (p.memory_budget_bytes) o.memory_budget_gib = *p.memory_budget_bytes / kGiB;
    const Scenario s = resolve_scenario(o);
    INFO("configuration " << c.index << ": " << gs.name << ", " << p.policy);
    StepPlan plan;
    try {
      plan = build_plan(s.workload, s.node, s.policy);
    } catch (const InputError& e) {
      CHECK(!row.row);  // the budget holds no plan either way
      CHECK(row.left_out_reason.find(e.message()) != std::string::npos);
      continue;
    }
    REQUIRE(row.row);
    SimOptions so;
    so.record_links = false;
    so.record_memory = false;
    const SimResult r = simulate(plan, s.node, so);
    const StepSummary& a = row.row->summary;
    const StepSummary& b = r.summary;
    CHECK(same(a.step_time_s, b.step_time_s));
    CHECK(same(a.peak_memory_bytes, b.peak_memory_bytes));
    CHECK(same(a.compute_time_s, b.compute_time_s));
    CHECK(same(a.h2d_time_s, b.h2d_time_s));
    CHECK(same(a.prefetch_stall_s, b.prefetch_stall_s));
    CHECK(same(a.collective_time_s, b.collective_time_s));
    CHECK(same(a.h2d_bytes, b.h2d_bytes));
    CHECK(same(row.row->bound.bound_step_time_s, r.bound.bound_step_time_s));
    CHECK(row.row->events == r.events);
    CHECK(row.row->ops == plan.ops.size());
    ++compared;
  }
  CHECK(compared >= 30);
}

TEST_CASE("grid rows stream in configuration order, the same bytes on 1 and 3 threads", "[grid]") {
  const Grid g = grid_from_text(R"({"models": ["wan2.1-t2v-1.3b"], "shapes": [{"height": 480, "width": 832, "frames": 17}],
    "layouts": [{"ulysses_degree": 2}], "policies": ["layerwise", "chunkflow"], "chunk_mib": [16, 64],
    "resident_fractions": [0, 0.5, 1]})", "test", "");
  std::vector<std::string> one, three;
  const GridCounts c = for_each_grid_row(g, 1, [&](const std::string& l) { one.push_back(l); });
  for_each_grid_row(g, 3, [&](const std::string& l) { three.push_back(l); });
  CHECK(one == three);
  CHECK(int64_t(one.size()) == c.configurations);
  for (std::size_t i = 0; i < one.size(); ++i) CHECK(nlohmann::json::parse(one[i]).at("config_index") == int64_t(i));
}

TEST_CASE("bad grids are input errors naming the JSON pointer", "[grid]") {
  auto pointer_of = [](const char* text) {
    try {
      grid_from_text(text, "g.json", "");
    } catch (const InputError& e) {
      CHECK(e.file() == "g.json");
      return e.field();
    }
    return std::string("no error");
  };
  CHECK(pointer_of(R"({"shapes": [{"height": 480, "frames": "x"}]})") == "/shapes/0/frames");
  CHECK(pointer_of(R"({"layouts": [{"ulysses_degree": 2}, {"model": "flux.1-dev"}]})") == "/layouts/1/model");
  CHECK(pointer_of(R"({"nodes": [{"id": "2xh100-pcie", "bogus": 1}]})").rfind("/nodes/0", 0) == 0);
  CHECK(pointer_of(R"({"resident_fractions": ["most"]})") == "/resident_fractions/0");
  CHECK(pointer_of(R"({"lookahead": [0]})") == "/lookahead/0");
  CHECK(pointer_of(R"([1, 2])") == "/");
}
