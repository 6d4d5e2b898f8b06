// Tests of the input limits (model/limits.hpp, runtime/plan_limits.hpp) and the fit verdict
// (sim/fit.hpp): ranges are enforced at both ends and documented where the README says; the plan
// size is predicted exactly before the plan is built; token counts at the caps are exact; the
// verdict's terms add up to the simulated peak.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "model/error.hpp"
#include "model/limits.hpp"
#include "runtime/plan_limits.hpp"
#include "sim/fit.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;

TEST_CASE("every documented range accepts its ends and rejects just outside, NaN and infinity", "[limits]") {
  for (const InputRange& r : input_ranges()) {
    const std::string name = r.pointer.empty() ? std::string(r.option) : std::string(r.pointer);
    INFO(name);
    CHECK_NOTHROW(check_range(r.min, name, "f.json", name));
    CHECK_NOTHROW(check_range(r.max, name, "f.json", name));
    const double step = r.integer ? 1.0 : std::max(std::fabs(r.max), 1.0) * 1e-6;
    CHECK_THROWS_AS(check_range(r.max + step, name, "f.json", name), InputError);
    if (r.min > 0) CHECK_THROWS_AS(check_range(r.min - (r.integer ? 1.0 : r.min * 1e-6), name, "", name), InputError);
    CHECK_THROWS_AS(check_range(std::nan(""), name, "", name), InputError);
    CHECK_THROWS_AS(check_range(std::numeric_limits<double>::infinity(), name, "", name), InputError);
    if (r.integer) CHECK_THROWS_AS(check_range(r.min + 0.5, name, "", name), InputError);
  }
}

TEST_CASE("a range error names the file, the field, the range and why", "[limits]") {
  try {
    check_range(5000, "/workload/frames", "s.json", "/workload/frames");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "s.json: /workload/frames: expected an integer in [1, 4097] frames (keeps token and row counts exact in "
          "64-bit integers and doubles), got 5000");
  }
}

TEST_CASE("the README's scenario reference lists exactly the enforced ranges", "[limits]") {
  std::ifstream in(std::string(CHUNKFLOW_SOURCE_DIR) + "/README.md");
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  INFO("regenerate the README table from ranges_markdown():\n" << ranges_markdown());
  CHECK(ss.str().find(ranges_markdown()) != std::string::npos);
}

TEST_CASE("token counts at the shape caps are exact (checked against 128-bit arithmetic)", "[limits]") {
  Workload w;
  w.model = "wan2.1-t2v-14b";
  w.height = int64_t(input_range("/workload/height").max);
  w.width = int64_t(input_range("/workload/width").max);
  w.frames = int64_t(input_range("/workload/frames").max);
  w.batch = int64_t(input_range("/workload/batch").max);
  w.ulysses_degree = 8;
  const TokenCounts t = tokens(w);
  const __int128 expected = (__int128(w.frames - 1) / 4 + 1) * (w.height / 16) * (w.width / 16);
  CHECK(__int128(t.video) == expected);
  // The per-rank rows of the largest GEMM, batch × tokens, stay below 2^53 (exact in a double).
  CHECK(double(w.batch) * double(t.video_padded + t.text) < 9007199254740992.0);
  CHECK(double(w.batch) * double(t.video_padded + t.text) == double(__int128(w.batch) * (t.video_padded + t.text)));
}

TEST_CASE("shapes beyond the caps exit as input errors naming the field", "[limits]") {
  Workload w;
  w.frames = 9223372036854775805LL;  // 4k+1, so only the cap can refuse it
  CHECK_THROWS_WITH(validate(w), Catch::Contains("/workload/frames") && Catch::Contains("[1, 4097]"));
  w = {};
  w.batch = 1000000;
  CHECK_THROWS_WITH(validate(w), Catch::Contains("/workload/batch") && Catch::Contains("[1, 1024]"));
  w = {};
  w.height = 9223372036854775792LL;  // a multiple of 16
  CHECK_THROWS_WITH(validate(w), Catch::Contains("/workload/height") && Catch::Contains("16384"));
}

TEST_CASE("the op count predicted before building equals the plan's (baselines) or bounds it (chunkflow)", "[limits]") {
  const NodeSpec node = chunkflow::node("2xh100-pcie");
  for (const auto& [model, h, w, f] : {std::tuple{"wan2.1-t2v-14b", 480, 832, 17}, std::tuple{"flux.1-dev", 1024, 1024, 1}}) {
    const Workload wl = test::workload(model, h, w, f, 2);
    const ForwardCost cost = forward_cost(wl);
    for (const PolicyConfig& p : {test::policy("no-offload"), test::policy("layerwise", 0.25), test::policy("chunkflow", 0.0, 8),
                                  test::policy("chunkflow", std::nullopt, 64), test::policy("chunkflow", 0.5, 3.7)}) {
      INFO(model << " " << p.policy << " chunk " << p.chunk_bytes / kMiB);
      const StepPlan plan = build_plan(wl, node, p);
      const double predicted = plan_ops_per_step(wl, cost, node, p) * p.steps;
      if (p.policy == "chunkflow") {
        CHECK(predicted >= double(plan.ops.size()));
        if (p.resident_fraction)  // a bound, not a wild guess (auto is counted at R = 0)
          CHECK(predicted <= 2.0 * double(plan.ops.size()));
      } else {
        CHECK(predicted == double(plan.ops.size()));
      }
    }
  }
}

TEST_CASE("plans over the op limits are refused before anything is built, naming chunk or steps", "[limits]") {
  const NodeSpec node = chunkflow::node("2xh100-pcie");
  const Workload wl = test::workload("wan2.1-t2v-14b", 480, 832, 81, 2);
  const ForwardCost cost = forward_cost(wl);
  PolicyConfig p = test::policy("chunkflow", 0.0, 1.0 / 16);  // the smallest chunk: ~0.86 M ops per step
  REQUIRE(plan_ops_per_step(wl, cost, node, p) <= kMaxOpsPerStep);
  p.steps = 3;  // 2.6 M ops > kMaxPlanOps
  CHECK_THROWS_WITH(check_plan_limits(wl, cost, node, p), Catch::Contains("/policy/simulated_steps") && Catch::Contains("2000000"));
  p.steps = 2;
  p.lookahead = int(cost.blocks.size()) + 1;
  CHECK_THROWS_WITH(check_plan_limits(wl, cost, node, p), Catch::Contains("/policy/lookahead") && Catch::Contains("40 blocks"));
  p.lookahead = int(cost.blocks.size());
  CHECK_NOTHROW(check_plan_limits(wl, cost, node, p));
  p.chunk_bytes = 1e-300;
  CHECK_THROWS_WITH(build_plan(wl, node, p), Catch::Contains("/policy/chunk_mib"));
}

TEST_CASE("the fit verdict: fits iff peak ≤ usable memory, the terms name what overflows", "[limits][fit]") {
  const NodeSpec node = chunkflow::node("2xh100-pcie");
  CHECK(usable_gpu_memory_bytes(node) == node.gpu_memory_bytes - kGpuRuntimeReserveBytes);
  // The default fits; no-offload's peak is exactly its resident weights and activations.
  const test::Run ok = test::run(test::workload("wan2.1-t2v-14b", 480, 832, 81, 2), node, test::policy("no-offload"));
  const double peak = ok.result.summary.peak_memory_bytes;
  CHECK(peak == ok.plan.info.resident_weight_bytes + ok.plan.info.activation_bytes);
  CHECK(memory_verdict(ok.plan, node, peak).fits);
  CHECK(memory_verdict(ok.plan, node, peak).does_not_fit_reason.empty());
  // The same plan judged on a GPU just too small for its weights, for weights + activations, for all.
  NodeSpec small = node;
  small.gpu_memory_bytes = ok.plan.info.resident_weight_bytes * 0.5 + kGpuRuntimeReserveBytes;
  CHECK_THAT(memory_verdict(ok.plan, small, peak).does_not_fit_reason, Catch::StartsWith("weights: "));
  small.gpu_memory_bytes = ok.plan.info.resident_weight_bytes + 1 + kGpuRuntimeReserveBytes;
  const MemoryVerdict v = memory_verdict(ok.plan, small, peak);
  CHECK_FALSE(v.fits);
  CHECK_THAT(v.does_not_fit_reason, Catch::StartsWith("activations: "));
  small.gpu_memory_bytes = peak - 1 + kGpuRuntimeReserveBytes;
  CHECK_THAT(memory_verdict(ok.plan, small, peak).does_not_fit_reason, Catch::StartsWith("attention workspace: "));
  // Offloaded at R = 0, the peak above weights and activations is the chunks in flight.
  const test::Run off = test::run(test::workload("wan2.1-t2v-14b", 480, 832, 81, 2), node, test::policy("chunkflow", 0.0));
  const double off_peak = off.result.summary.peak_memory_bytes;
  REQUIRE(off_peak > off.plan.info.resident_weight_bytes + off.plan.info.activation_bytes);
  small.gpu_memory_bytes = off_peak - 1 + kGpuRuntimeReserveBytes;
  CHECK_THAT(memory_verdict(off.plan, small, off_peak).does_not_fit_reason, Catch::StartsWith("prefetch buffers: "));
}

TEST_CASE("an absurd workload inside the ranges is answered with fits = false", "[limits][fit]") {
  const NodeSpec node = chunkflow::node("2xh100-pcie");
  Workload w = test::workload("wan2.1-t2v-14b", 480, 832, 81, 2);
  w.batch = 64;
  const test::Run r = test::run(w, node, test::policy("chunkflow", 0.0));
  const MemoryVerdict v = memory_verdict(r.plan, node, r.result.summary.peak_memory_bytes);
  CHECK_FALSE(v.fits);
  CHECK(r.result.summary.peak_memory_bytes > v.usable_bytes);
}
