// Offload policies → StepPlan (issue 2 §3): plans validate, chunks cover exactly the offloaded
// bytes, compute waits only for its own weights, chunkflow never starts a chunk while a collective
// of its rank runs, and the validator rejects broken plans.
#include <catch2/catch.hpp>
#include <filesystem>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::test;

TEST_CASE("every policy gives a valid plan for every scenario file", "[policy]") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios")) {
    const Scenario s = load_scenario(entry.path().string());
    for (const auto& p : {policy("no-offload"), policy("layerwise", 0.0, 64, 2), policy("chunkflow", std::nullopt, 64),
                          policy("chunkflow", 0.3, 8)}) {
      INFO(entry.path().filename().string() << " " << p.policy);
      const StepPlan plan = build_plan(s.workload, s.node, p);
      CHECK_NOTHROW(validate(plan));
    }
  }
}

TEST_CASE("chunks of a step cover exactly the offloaded bytes (1 - R of the block weights)", "[policy]") {
  const NodeSpec pcie = node("2xh100-pcie");
  const auto w = workload("flux.1-dev", 1024, 1024, 1, 2);
  for (double r : {0.0, 0.37, 0.8}) {
    const StepPlan plan = build_plan(w, pcie, policy("chunkflow", r, 24));
    double block_bytes = 0;
    for (const auto& b : plan.cost.blocks) block_bytes += b.weight_bytes;
    double h2d = 0;
    for (const auto& op : plan.ops)
      if (op.kind == OpKind::h2d && op.rank == 0 && op.step == 1) {
        h2d += op.bytes;
        CHECK(op.bytes <= 24 * kMiB);
      }
    INFO("R=" << r);
    CHECK(h2d == Approx((1 - r) * block_bytes).epsilon(1e-6));
    CHECK(h2d == plan.info.offloaded_bytes_per_step);
  }
}

TEST_CASE("a compute op waits only for the chunks holding its own weights", "[policy]") {
  const auto w = workload("wan2.1-t2v-14b", 480, 832, 17, 2);
  const StepPlan plan = build_plan(w, node("2xh100-pcie"), policy("chunkflow", 0.0, 16));
  int checked = 0;
  for (const auto& op : plan.ops) {
    if (op.kind != OpKind::compute) continue;
    const StageCost& st = plan.stage_of(op);
    for (int d : op.data_deps) {
      const PlanOp& dep = plan.ops[d];
      if (dep.kind != OpKind::h2d) continue;
      REQUIRE(st.stage.kind == BlockStage::Kind::linear);
      CHECK(dep.block == op.block);
      CHECK(dep.step == op.step);
      // Overlaps the linear's weights (the block's last linear also reads the layout's tail).
      CHECK(dep.src_offset_bytes < std::max(st.weight_offset_bytes + st.weight_bytes, plan.cost.blocks[op.block].weight_bytes));
      CHECK(dep.src_offset_bytes + dep.bytes > st.weight_offset_bytes);
      ++checked;
    }
  }
  CHECK(checked > 0);
}

TEST_CASE("layerwise moves whole blocks through lookahead + 1 slots", "[policy]") {
  const auto w = workload("wan2.1-t2v-1.3b", 480, 832, 17, 2);
  for (int lookahead : {1, 3}) {
    const StepPlan plan = build_plan(w, node("1xh100-sxm"), policy("layerwise", 0.0, 64, lookahead));
    CHECK(plan.info.slot_count == lookahead + 1);
    for (const auto& op : plan.ops)
      if (op.kind == OpKind::h2d) CHECK(op.bytes == plan.cost.blocks[op.block].weight_bytes);
  }
}

TEST_CASE("chunkflow has no chunk in flight while a collective of its rank runs; layerwise does", "[policy]") {
  const auto w = workload("wan2.1-t2v-14b", 480, 832, 17, 2);
  const NodeSpec pcie = node("2xh100-pcie");
  // Pairs (collective, H2D op) of one rank whose intervals overlap by more than rounding.
  auto chunk_overlaps_collective = [](const Timeline& t) {
    int count = 0;
    for (const auto& c : t.rows)
      if (c.kind == OpKind::collective)
        for (const auto& h : t.rows)
          if (h.kind == OpKind::h2d && h.rank == c.rank && std::min(h.end_s, c.end_s) - std::max(h.start_s, c.start_s) > 1e-12)
            ++count;
    return count;
  };
  const auto chunkflow = run(w, pcie, policy("chunkflow", 0.0, 16));
  CHECK(chunk_overlaps_collective(chunkflow.result.timeline) == 0);
  const auto layerwise = run(w, pcie, policy("layerwise", 0.0));
  CHECK(chunk_overlaps_collective(layerwise.result.timeline) > 0);
}

TEST_CASE("auto residency takes the analytical model's fraction", "[policy]") {
  const auto w = workload("flux.1-dev", 1024, 1024, 1, 2);
  const NodeSpec pcie = node("2xh100-pcie");
  const StepPlan plan = build_plan(w, pcie, policy("chunkflow", std::nullopt, 64));
  CHECK(plan.info.resident_fraction_auto);
  CHECK(plan.info.resident_fraction == analyze(forward_cost(w), pcie, 2).auto_resident_fraction);
}

TEST_CASE("the validator rejects a cycle, a missing weight dependency and unbalanced memory", "[policy]") {
  const auto w = workload("wan2.1-t2v-1.3b", 256, 256, 5, 1);
  const StepPlan good = build_plan(w, node("1xh100-sxm"), policy("chunkflow", 0.0, 8));
  REQUIRE_NOTHROW(validate(good));
  int reader = -1, chunk = -1;
  for (const auto& op : good.ops)
    for (int d : op.data_deps)
      if (reader < 0 && op.kind == OpKind::compute && good.ops[d].kind == OpKind::h2d) reader = op.id, chunk = d;
  REQUIRE(reader >= 0);
  {
    StepPlan p = good;  // a cycle: the chunk now also waits for its reader
    p.depend(chunk, reader);
    CHECK_THROWS_WITH(validate(p), Catch::Contains("cycle"));
  }
  {
    StepPlan p = good;  // drop the reader's wait on its chunk
    auto& deps = p.ops[reader].data_deps;
    deps.erase(std::find(deps.begin(), deps.end(), chunk));
    CHECK_THROWS_WITH(validate(p), Catch::Contains("does not wait for"));
  }
  {
    StepPlan p = good;
    p.ops[chunk].alloc_bytes += 4096;
    CHECK_THROWS_WITH(validate(p), Catch::Contains("memory does not balance"));
  }
}
