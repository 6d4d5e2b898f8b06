// Tests of traces/timeline: names and summarize() on hand-built timelines with closed-form
// answers (times are binary fractions, so every expected value is exact).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "traces/timeline.hpp"

using namespace chunkflow;

namespace {

TimelineRow op(int id, OpKind kind, Lane lane, int rank, int step, double start_s, double end_s,
               std::vector<int> deps = {}, double bytes = 0) {
  TimelineRow r;
  r.op_id = id;
  r.name = "op" + std::to_string(id);
  r.kind = kind;
  r.lane = lane;
  r.rank = rank;
  r.step = step;
  r.start_s = start_s;
  r.end_s = end_s;
  r.deps = std::move(deps);
  r.bytes = bytes;
  return r;
}

TimelineRow compute(int id, int rank, int step, double s, double e, std::vector<int> deps = {}) {
  return op(id, OpKind::compute, Lane::compute, rank, step, s, e, std::move(deps));
}
TimelineRow h2d(int id, int rank, int step, double s, double e, double bytes = 0) {
  return op(id, OpKind::h2d, Lane::h2d, rank, step, s, e, {}, bytes);
}
TimelineRow collective(int id, int rank, int step, double s, double e, std::vector<int> deps = {}) {
  return op(id, OpKind::collective, Lane::comm, rank, step, s, e, std::move(deps));
}

Timeline make(int steps, int ranks, std::vector<TimelineRow> rows) {
  Timeline t;
  t.source = "simulator";
  t.steps = steps;
  t.ranks = ranks;
  t.rows = std::move(rows);
  return t;
}

}  // namespace

TEST_CASE("lane and op kind names round trip and unknown names throw", "[timeline]") {
  for (Lane l : {Lane::compute, Lane::h2d, Lane::comm}) CHECK(lane_from_string(to_string(l)) == l);
  for (OpKind k : {OpKind::compute, OpKind::h2d, OpKind::collective}) {
    CHECK(op_kind_from_string(to_string(k)) == k);
  }
  CHECK(std::string(to_string(Lane::comm)) == "comm");
  CHECK(std::string(to_string(OpKind::collective)) == "collective");
  CHECK_THROWS_AS(lane_from_string("collective"), std::invalid_argument);
  CHECK_THROWS_AS(op_kind_from_string("comm"), std::invalid_argument);
  CHECK_THROWS_AS(op_kind_from_string(""), std::invalid_argument);
}

TEST_CASE("union_length_s: overlapping intervals count once, gaps do not count", "[timeline]") {
  CHECK(union_length_s({}) == 0);
  CHECK(union_length_s({{0, 2}, {1, 3}, {5, 6}}) == 4);      // sum would be 5
  CHECK(union_length_s({{5, 6}, {0, 4}, {1, 2}}) == 5);      // nested, unsorted
  CHECK(union_length_s({{0, 1}, {1, 2}}) == 2);              // touching
  CHECK(union_length_s({{3, 3}, {4, 2}}) == 0);              // empty and reversed
}

TEST_CASE("prefetch stall counts only waiting for H2D beyond other deps and the lane predecessor",
          "[timeline]") {
  // One rank, one step.
  //  0 h2d [0,3]          1 compute [0,1]            2 compute [3,4] deps {0}: waits 1→3 for H2D
  //  3 collective [4,6]   4 h2d [3,5]                5 compute [6,7] deps {3,4}: waits for the
  //  collective (ends 6), H2D was ready at 5 → no stall
  //  6 compute [7,8] deps {4}: H2D ready long before, lane predecessor ends 7 → no stall
  //  7 h2d [5,10]         8 compute [10.5,11] deps {6 (via lane), 7}: launch gap after the
  //  H2D end is not a stall: min(10.5, 10) − 8 = 2
  Timeline t = make(1, 1,
                    {h2d(0, 0, 0, 0, 3, 100), compute(1, 0, 0, 0, 1), compute(2, 0, 0, 3, 4, {0}),
                     collective(3, 0, 0, 4, 6, {2}), h2d(4, 0, 0, 3, 5, 50),
                     compute(5, 0, 0, 6, 7, {3, 4}), compute(6, 0, 0, 7, 8, {4}),
                     h2d(7, 0, 0, 5, 10, 25), compute(8, 0, 0, 10.5, 11, {6, 7})});
  const StepSummary s = summarize(t);
  CHECK(s.step == 0);
  CHECK(s.prefetch_stall_s == 2 + 2);
  CHECK(s.step_time_s == 11);  // one step: from 0 to the last compute end
  CHECK(s.compute_time_s == 1 + 1 + 1 + 1 + 0.5);
  CHECK(s.h2d_time_s == 10);   // [0,3] ∪ [3,5] ∪ [5,10]
  CHECK(s.comm_time_s == 2);
  CHECK(s.collective_time_s == 2);
  CHECK(s.h2d_bytes == 175);
  CHECK(s.peak_memory_bytes == 0);
}

TEST_CASE("prefetch stall: a compute op with no lane predecessor waits from the run start",
          "[timeline]") {
  Timeline t = make(1, 1, {h2d(0, 0, 0, 0, 2.5), compute(1, 0, 0, 2.5, 3, {0})});
  CHECK(summarize(t).prefetch_stall_s == 2.5);
}

TEST_CASE("prefetch stall: an unrelated dep that ends later hides the H2D wait", "[timeline]") {
  // compute 2 depends on h2d 0 (ends 4) and collective 1 (ends 3): stall = min(4,4) − 3 = 1.
  Timeline t = make(1, 1,
                    {h2d(0, 0, 0, 0, 4), collective(1, 0, 0, 0, 3),
                     compute(2, 0, 0, 4, 5, {0, 1})});
  CHECK(summarize(t).prefetch_stall_s == 1);
  // Deps naming ops absent from the timeline (a plan's free ops) are ignored.
  t.rows[2].deps.push_back(99);
  CHECK(summarize(t).prefetch_stall_s == 1);
}

TEST_CASE("busy time is the union of a lane's op intervals, not their sum", "[timeline]") {
  // Two overlapping H2D ops on one lane (e.g. two copy engines measured on one stream label).
  Timeline t = make(1, 1,
                    {h2d(0, 0, 0, 0, 2), h2d(1, 0, 0, 1, 3), h2d(2, 0, 0, 5, 6),
                     compute(3, 0, 0, 0, 1), compute(4, 0, 0, 0.5, 1.5)});
  const StepSummary s = summarize(t);
  CHECK(s.h2d_time_s == 4);
  CHECK(s.compute_time_s == 1.5);
}

TEST_CASE("two steps: step time is the difference of the steps' last compute ends (max over "
          "ranks), per-step figures cover the last step only, max over ranks",
          "[timeline]") {
  // Step 0 ends at 10 (rank 0) and 12 (rank 1); step 1 at 20 and 19 → step time 20 − 12 = 8.
  Timeline t = make(2, 2,
                    {compute(0, 0, 0, 0, 10), compute(1, 1, 0, 0, 12), h2d(2, 0, 0, 0, 4, 1000),
                     collective(3, 1, 0, 0, 5), compute(4, 0, 1, 12, 15), compute(5, 0, 1, 16, 20),
                     compute(6, 1, 1, 12, 19), h2d(7, 0, 1, 12, 13, 64), h2d(8, 1, 1, 12, 14.5, 32),
                     h2d(9, 1, 1, 15, 15.5, 48), collective(10, 0, 1, 15, 15.25),
                     collective(11, 1, 1, 19, 19.5)});
  t.memory = {{0, 0, 10}, {0, 5, 300}, {1, 3, 450}, {1, 18, 200}};
  const StepSummary s = summarize(t);
  CHECK(s.step == 1);
  CHECK(s.step_time_s == 8);
  CHECK(s.compute_time_s == 7);        // rank 0: 3 + 4; rank 1: 7
  CHECK(s.h2d_time_s == 3);            // rank 0: 1; rank 1: 2.5 + 0.5
  CHECK(s.h2d_bytes == 80);            // rank 0: 64; rank 1: 80 (step 0's 1000 not counted)
  CHECK(s.comm_time_s == 0.5);         // rank 0: 0.25; rank 1: 0.5 (step 0's 5 not counted)
  CHECK(s.collective_time_s == 0.5);
  CHECK(s.peak_memory_bytes == 450);   // over all ranks and steps
}

TEST_CASE("summarize rejects empty timelines, steps < 1, a last step without compute, and "
          "duplicate op ids",
          "[timeline]") {
  CHECK_THROWS_AS(summarize(Timeline{}), std::invalid_argument);
  CHECK_THROWS_AS(summarize(make(0, 1, {compute(0, 0, 0, 0, 1)})), std::invalid_argument);
  CHECK_THROWS_AS(summarize(make(2, 1, {compute(0, 0, 0, 0, 1), h2d(1, 0, 1, 1, 2)})),
                  std::invalid_argument);
  CHECK_THROWS_AS(summarize(make(1, 1, {compute(0, 0, 0, 0, 1), compute(0, 0, 0, 1, 2)})),
                  std::invalid_argument);
}
