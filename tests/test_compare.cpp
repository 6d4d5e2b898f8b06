// Tests of traces/compare: zero error on identical timelines, exact errors under a uniform scale
// or shift of the measured times, per-op distribution and worst list, matching by op id.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "runtime/scenario.hpp"
#include "sim_fixtures.hpp"
#include "traces/compare.hpp"

using namespace chunkflow;

namespace {

/// Time unit of the hand-built timelines: 2^-10 s (≈ 1 ms), so that sums, shifts by binary
/// fractions and scaling by 2 are exact.
constexpr double u = 1.0 / 1024;

/// Two ranks, two steps. Per step k and rank (t = 8u·k):
///   h2d [t, t+2u] → compute [t+2u, t+5u] → collective [t+5u, t+6u] → compute [t+6u, t+8u].
/// Summary of step 1: step time 8u, compute busy 5u, h2d 2u, comm 1u, stall 2u (the first compute
/// waits from the previous step's end 8u until its H2D ends at 10u).
Timeline base() {
  Timeline t;
  t.source = "simulator";
  t.steps = 2;
  t.ranks = 2;
  int id = 0;
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const double t0 = 8 * u * step;
      auto add = [&](OpKind kind, Lane lane, double s, double e, std::vector<int> deps) {
        TimelineRow r;
        r.op_id = id++;
        // Built with += : GCC 12 gives a false -Wrestrict on "literal" + std::string chains.
        r.name = "s";
        r.name += std::to_string(step);
        r.name += ".r";
        r.name += std::to_string(rank);
        r.name += '.';
        r.name += to_string(kind);
        r.name += std::to_string(r.op_id);
        r.kind = kind;
        r.lane = lane;
        r.rank = rank;
        r.step = step;
        r.block = 0;
        r.start_s = s;
        r.end_s = e;
        r.deps = std::move(deps);
        r.bytes = kind == OpKind::h2d ? 1 << 20 : 0;
        t.rows.push_back(r);
        return r.op_id;
      };
      const int h = add(OpKind::h2d, Lane::h2d, t0, t0 + 2 * u, {});
      const int c = add(OpKind::compute, Lane::compute, t0 + 2 * u, t0 + 5 * u, {h});
      const int a = add(OpKind::collective, Lane::comm, t0 + 5 * u, t0 + 6 * u, {c});
      add(OpKind::compute, Lane::compute, t0 + 6 * u, t0 + 8 * u, {a});
      t.memory.push_back({rank, t0, 1e9});
    }
  }
  return t;
}

Timeline transformed(Timeline t, double scale, double shift_s) {
  for (auto& r : t.rows) {
    r.start_s = r.start_s * scale + shift_s;
    r.end_s = r.end_s * scale + shift_s;
  }
  t.source = "hardware";
  return t;
}

}  // namespace

TEST_CASE("identical timelines compare with zero error everywhere", "[compare]") {
  const Timeline t = base();
  const Comparison c = compare(t, t);
  CHECK(c.step == 1);
  CHECK(c.step_time_predicted_s == 8 * u);
  CHECK(c.step_time_measured_s == 8 * u);
  CHECK(c.step_time_error == 0);
  CHECK(c.compute_time_error == 0);
  CHECK(c.h2d_time_error == 0);
  CHECK(c.comm_time_error == 0);
  CHECK(c.prefetch_stall_predicted_s == 2 * u);
  CHECK(c.prefetch_stall_measured_s == 2 * u);
  CHECK(c.collective_time_predicted_s == 1 * u);
  CHECK(c.op_error_median == 0);
  CHECK(c.op_error_p90 == 0);
  CHECK(c.op_error_max == 0);
  CHECK(c.matched_ops == 16);
  CHECK(c.step_ops == 8);
  CHECK(c.unmatched_predicted == 0);
  CHECK(c.unmatched_measured == 0);
  REQUIRE(c.worst.size() == 8);
  for (const auto& e : c.worst) CHECK(e.error_s == 0);
}

TEST_CASE("every measured duration 10% longer: every relative error is (1 − 1.1)/1.1 = −1/11",
          "[compare]") {
  const Comparison c = compare(base(), transformed(base(), 1.1, 0));
  const double expected = -1.0 / 11.0;
  const auto close = [](double x) { return Approx(x).epsilon(1e-12); };
  CHECK(c.step_time_measured_s == close(8.8 * u));
  CHECK(c.step_time_error == close(expected));
  CHECK(c.compute_time_error == close(expected));
  CHECK(c.h2d_time_error == close(expected));
  CHECK(c.comm_time_error == close(expected));
  CHECK(c.prefetch_stall_measured_s == close(2.2 * u));
  CHECK(c.op_error_median == close(1.0 / 11.0));
  CHECK(c.op_error_p90 == close(1.0 / 11.0));
  CHECK(c.op_error_max == close(1.0 / 11.0));
  // Worst by |error_s| = 0.1 × duration: the 3u compute ops of step 1 first, lower op id first.
  REQUIRE(c.worst.size() == 8);
  CHECK(c.worst[0].op_id == 9);
  CHECK(c.worst[1].op_id == 13);
  CHECK(c.worst[0].error_s == close(-0.3 * u));
  CHECK(c.worst[0].relative_error == close(expected));
}

TEST_CASE("measured times scaled by 2: errors are exactly −1/2", "[compare]") {
  const Comparison c = compare(base(), transformed(base(), 2, 0));
  CHECK(c.step_time_error == -0.5);
  CHECK(c.compute_time_error == -0.5);
  CHECK(c.h2d_time_error == -0.5);
  CHECK(c.comm_time_error == -0.5);
  CHECK(c.prefetch_stall_measured_s == 4 * u);
  CHECK(c.op_error_median == 0.5);
  CHECK(c.op_error_p90 == 0.5);
  CHECK(c.op_error_max == 0.5);
  for (const auto& e : c.worst) CHECK(e.relative_error == -0.5);
}

TEST_CASE("measured times shifted by a constant: durations and step time unchanged, zero error",
          "[compare]") {
  const Comparison c = compare(base(), transformed(base(), 1, 0.25));
  CHECK(c.step_time_error == 0);
  CHECK(c.compute_time_error == 0);
  CHECK(c.h2d_time_error == 0);
  CHECK(c.op_error_max == 0);
  CHECK(c.prefetch_stall_measured_s == c.prefetch_stall_predicted_s);
}

TEST_CASE("one op 50% longer in the measurement: it heads the worst list and the distribution of "
          "{0 ×7, 1/3} gives median 0, p90 0.1 (linear), max 1/3",
          "[compare]") {
  Timeline measured = base();
  TimelineRow& h = measured.rows[12];  // step 1, rank 1, h2d [8u, 10u]
  REQUIRE(h.kind == OpKind::h2d);
  REQUIRE(h.step == 1);
  h.end_s = 11 * u;
  const Comparison c = compare(base(), measured);
  CHECK(c.step_time_error == 0);
  REQUIRE(c.worst.size() == 8);
  CHECK(c.worst[0].op_id == 12);
  CHECK(c.worst[0].name == h.name);
  CHECK(c.worst[0].lane == Lane::h2d);
  CHECK(c.worst[0].rank == 1);
  CHECK(c.worst[0].predicted_s == 2 * u);
  CHECK(c.worst[0].measured_s == 3 * u);
  CHECK(c.worst[0].error_s == -1 * u);
  CHECK(c.worst[0].relative_error == Approx(-1.0 / 3.0));
  CHECK(c.worst[1].op_id == 8);  // then the zero errors in op id order
  CHECK(c.op_error_median == 0);
  CHECK(c.op_error_p90 == Approx(0.1));
  CHECK(c.op_error_max == Approx(1.0 / 3.0));
  CHECK(c.h2d_time_error == Approx(-1.0 / 3.0));  // max over ranks: 2u predicted, 3u measured
}

TEST_CASE("rows are matched by op id and unmatched ones are counted", "[compare]") {
  Timeline measured = base();
  measured.rows.erase(measured.rows.begin());  // op 0 (step 0 h2d) not measured
  TimelineRow extra = measured.rows.front();
  extra.op_id = 1000;
  extra.deps.clear();
  measured.rows.push_back(extra);
  const Comparison c = compare(base(), measured);
  CHECK(c.matched_ops == 15);
  CHECK(c.unmatched_predicted == 1);
  CHECK(c.unmatched_measured == 1);
  CHECK(c.step_ops == 8);
}

TEST_CASE("worst list keeps at most 10 ops", "[compare]") {
  Timeline t = base();
  Timeline big;
  big.steps = 1;
  big.ranks = 1;
  for (int i = 0; i < 25; ++i) {
    TimelineRow r;
    r.op_id = i;
    r.start_s = i * u;
    r.end_s = (i + 1) * u;
    big.rows.push_back(r);
  }
  const Comparison c = compare(big, transformed(big, 2, 0));
  CHECK(c.step_ops == 25);
  CHECK(c.worst.size() == kWorstOpCount);
}

TEST_CASE("a matched op that differs in lane, kind, rank or step is an error", "[compare]") {
  Timeline measured = base();
  measured.rows[5].lane = Lane::h2d;
  CHECK_THROWS_AS(compare(base(), measured), std::invalid_argument);
  measured = base();
  measured.rows[5].rank = 0;
  CHECK_THROWS_AS(compare(base(), measured), std::invalid_argument);
}

TEST_CASE("relative_error: signed, 0 for 0/0, NaN for x/0", "[compare]") {
  CHECK(relative_error(1.5, 1) == 0.5);
  CHECK(relative_error(0, 0) == 0);
  CHECK(std::isnan(relative_error(1, 0)));
}

TEST_CASE("comparison JSON: fields present, NaN written as null, deterministic", "[compare]") {
  Comparison c = compare(base(), transformed(base(), 2, 0));
  c.h2d_time_error = std::numeric_limits<double>::quiet_NaN();
  const std::string text = comparison_to_json(c);
  CHECK(comparison_to_json(c) == text);
  const auto j = nlohmann::json::parse(text);
  CHECK(j["step_time"]["error"] == -0.5);
  CHECK(j["step_time"]["predicted_s"] == 8 * u);
  CHECK(j["h2d_time"]["error"].is_null());
  CHECK(j["op_error"]["max"] == 0.5);
  CHECK(j["op_error"]["ops"] == 8);
  CHECK(j["worst_ops"].size() == 8);
  CHECK(j["worst_ops"][0]["lane"] == "compute");
  CHECK(j["matched_ops"] == 16);
}

TEST_CASE("unexplained compute waits: none where every op starts when its lane and deps are done, and a "
          "delayed op counts, and whether an unrelated copy ended as it started",
          "[compare]") {
  const Timeline t = base();
  // In base() every compute op starts when its lane's previous op or its deps end (the first op of
  // each step waits for its H2D dep: a prefetch stall, explained).
  CHECK(unexplained_waits(t, 1).ops == 0);
  CHECK(compare(t, t).waits_measured.ops == 0);
  // Step 1, rank 0: the last compute op starts 0.25u (≈ 244 µs) late, no copy ending then.
  Timeline late = t;
  TimelineRow* last = nullptr;
  for (auto& r : late.rows)
    if (r.step == 1 && r.rank == 0 && r.lane == Lane::compute && r.start_s == 14 * u) last = &r;
  REQUIRE(last != nullptr);
  last->start_s += 0.25 * u;
  last->end_s += 0.25 * u;
  UnexplainedWaits w = unexplained_waits(late, 1);
  CHECK(w.ops == 1);
  CHECK(w.total_s == 0.25 * u);
  CHECK(w.after_unrelated_copy == 0);
  CHECK(unexplained_waits(late, 0).ops == 0);  // other steps are not counted
  const int delayed_id = last->op_id;  // `last` dangles once rows are added below
  const double delayed_start_s = last->start_s;
  last = nullptr;
  // An H2D op of rank 0 it does not depend on ends 16 µs before it starts: the harness's signature.
  TimelineRow copy = late.rows.front();
  copy.op_id = 1000;
  copy.kind = OpKind::h2d;
  copy.lane = Lane::h2d;
  copy.rank = 0;
  copy.step = 1;
  copy.deps.clear();
  copy.end_s = delayed_start_s - 16e-6;
  copy.start_s = copy.end_s - u;
  late.rows.push_back(copy);
  w = unexplained_waits(late, 1);
  CHECK(w.ops == 1);
  CHECK(w.after_unrelated_copy == 1);
  const Timeline delayed_after_copy = late;
  // The same copy as one of the op's deps explains the wait (the op then waited 16 µs: under the threshold).
  late.rows.back().op_id = 1001;
  for (auto& r : late.rows)
    if (r.op_id == delayed_id) r.deps.push_back(1001);
  CHECK(unexplained_waits(late, 1).ops == 0);
  // A wait of 10 µs is below kUnexplainedWait_s.
  Timeline small = t;
  for (auto& r : small.rows)
    if (r.step == 1 && r.rank == 1 && r.lane == Lane::compute && r.start_s == 14 * u) r.start_s += 10e-6, r.end_s += 10e-6;
  CHECK(unexplained_waits(small, 1).ops == 0);
  // The JSON carries both timelines' counts.
  const nlohmann::json j = nlohmann::json::parse(comparison_to_json(compare(t, delayed_after_copy)));
  CHECK(j["unexplained_compute_waits"]["predicted"]["ops"] == 0);
  CHECK(j["unexplained_compute_waits"]["measured"]["ops"] == 1);
  CHECK(j["unexplained_compute_waits"]["measured"]["after_unrelated_copy"] == 1);
}

TEST_CASE("the simulator's own timelines have no unexplained compute wait (every policy of the hw scenarios)",
          "[compare]") {
  // The executor starts a compute op when its lane's previous op and its deps have ended, so a
  // prediction shows none: what `compare` reports under "measured" is the hardware's alone.
  int timelines = 0;
  for (const char* name : {"hw-flux-512-u2-1xh100-sxm", "hw-wan1.3b-480p-17f-u2-1xh100-sxm"})
    for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) {
      INFO(name << " " << policy);
      const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + name + ".json");
      const test::Run r = test::run(s.workload, s.node, test::policy(policy));
      for (int step = 0; step < r.plan.info.steps; ++step) CHECK(unexplained_waits(r.result.timeline, step).ops == 0);
      ++timelines;
    }
  CHECK(timelines == 6);
}
