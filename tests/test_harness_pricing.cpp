// The simulator's pricing of what chunkflow-hw executes (issue 13 §3): its tiled attention kernel
// (model/tiled_attention.hpp), its synthetic elementwise kernels (model/harness_ops.hpp), the
// re-simulation of harness runs with them (sim/validate.cpp), and what `chunkflow calibrate` does
// with the harness's benches (model/calibration.cpp: the tiled attention is recorded, not fitted as
// FlashAttention; the SM-driven proxy all-to-all is fitted first). Closed forms and invariants only.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "model/analytical.hpp"
#include "model/architecture.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/harness_ops.hpp"
#include "model/kernel_model.hpp"
#include "model/tiled_attention.hpp"
#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/validate.hpp"
#include "traces/timeline.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// One (q tile, kv tile) pair by the formula of model/tiled_attention.hpp, written out again here.
double pair_formula_s(double rows, double tq, double tk, double hd, const NodeSpec& n) {
  const double bw = n.hbm_efficiency * n.hbm_bytes_per_s, e = rows * tq * tk, flop = 2 * e * hd;
  const double g1 = std::max(flop / (gemm_efficiency(GemmShape{int64_t(rows * tq), int64_t(hd), int64_t(tk)}, n) * n.peak_flop_per_s),
                             (4 * e + 2 * rows * (tq + tk) * hd) / bw);
  const double sm = (10 * e + 8 * rows * tq * hd) / bw;
  const double g2 = std::max(flop / (gemm_efficiency(GemmShape{int64_t(rows * tq), int64_t(tk), int64_t(hd)}, n) * n.peak_flop_per_s),
                             (2 * e + 8 * rows * tq * hd + 2 * rows * tk * hd) / bw);
  return g1 + sm + g2;
}

double q_tile_formula_s(double rows, double tq, double hd, const NodeSpec& n) {
  return 10 * rows * tq * hd / (n.hbm_efficiency * n.hbm_bytes_per_s);
}

// Wan2.1-1.3B, 480×832×17, Ulysses 2, priced with the tiled attention: a shape the H200 ran.
Workload wan_17f_u2_tiled() {
  Workload w;
  w.model = "wan2.1-t2v-1.3b";
  w.frames = 17;
  w.ulysses_degree = 2;
  w.attention = AttentionKernel::tiled;
  return w;
}

}  // namespace

TEST_CASE("tiled attention: the tile is the largest power of two <= 1024 whose workspace fits the budget") {
  for (int64_t rows : {1, 6, 12, 24, 64, 256, 4096})
    for (int64_t hd : {64, 128}) {
      const int64_t t = tiled_attention_tile(rows, hd);
      INFO("rows " << rows << ", head dim " << hd << ": tile " << t);
      CHECK(t >= 16);
      CHECK(t <= kTiledAttentionMaxTile);
      CHECK((t & (t - 1)) == 0);
      if (t > 16) CHECK(tiled_attention_workspace_bytes(rows, t, hd) <= kTiledAttentionWorkspaceBytes);
      if (t < kTiledAttentionMaxTile) CHECK(tiled_attention_workspace_bytes(rows, 2 * t, hd) > kTiledAttentionWorkspaceBytes);
    }
  // The workspace: fp32 scores and bf16 probabilities t² per row, the fp32 accumulator t·hd, row max
  // and sum, 256 B of alignment for each of the five parts.
  CHECK(tiled_attention_workspace_bytes(12, 1024, 128) == 12 * 1024 * 1024 * 6 + 12 * 1024 * 128 * 4 + 2 * 12 * 1024 * 4 + 5 * 256);
}

TEST_CASE("tiled attention: one full tile, whole tiles and edge tiles follow the per-pair formula") {
  const NodeSpec n = node("1xh200");
  const double hd = 128;
  for (int64_t rows : {6, 12}) {
    const int64_t t = 1024;
    // One tile pair: init + finish of the q tile, and the pair.
    const double one = tiled_attention_time_s(AttentionShape{1, rows, t, t, 128}, t, n);
    CHECK(one == Approx(q_tile_formula_s(double(rows), double(t), hd, n) + pair_formula_s(double(rows), double(t), double(t), hd, n)).epsilon(1e-12));
    // 3 q tiles × 5 kv tiles of full size: 3 · (q tile + 5 pairs).
    const double grid = tiled_attention_time_s(AttentionShape{1, rows, 3 * t, 5 * t, 128}, t, n);
    CHECK(grid == Approx(3 * (q_tile_formula_s(double(rows), double(t), hd, n) + 5 * pair_formula_s(double(rows), double(t), double(t), hd, n))).epsilon(1e-12));
    // An edge tile on each axis: q = t + 300, kv = 2t + 100.
    const double edge = tiled_attention_time_s(AttentionShape{1, rows, t + 300, 2 * t + 100, 128}, t, n);
    const double want = q_tile_formula_s(double(rows), double(t), hd, n) + 2 * pair_formula_s(double(rows), double(t), double(t), hd, n) +
                        pair_formula_s(double(rows), double(t), 100, hd, n) + q_tile_formula_s(double(rows), 300, hd, n) +
                        2 * pair_formula_s(double(rows), 300, double(t), hd, n) + pair_formula_s(double(rows), 300, 100, hd, n);
    CHECK(edge == Approx(want).epsilon(1e-12));
    // Batch and heads only multiply into rows.
    CHECK(tiled_attention_time_s(AttentionShape{2, rows / 2, 4096, 4096, 128}, t, n) ==
          Approx(tiled_attention_time_s(AttentionShape{1, rows, 4096, 4096, 128}, t, n)).epsilon(1e-12));
  }
  // The calibrated scale multiplies the whole time.
  NodeSpec scaled = n;
  scaled.tiled_attention_scale = 1.3;
  const AttentionShape big{1, 6, 32760, 32760, 128};
  CHECK(tiled_attention_time_s(big, 1024, scaled) == Approx(1.3 * tiled_attention_time_s(big, 1024, n)).epsilon(1e-12));
  CHECK(tiled_attention_time_s(AttentionShape{}, 1024, n) == 0.0);
  CHECK(tiled_attention_time_s(AttentionShape{1, 12, 0, 4096, 128}, 1024, n) == 0.0);
  // tile ≤ 0: the harness's tile for the shape's own rows and head dim.
  const AttentionShape a{1, 12, 4608, 4608, 128};
  CHECK(tiled_attention_time_s(a, 0, n) == tiled_attention_time_s(a, tiled_attention_tile(12, 128), n));
}

TEST_CASE("attention kernel tiled: every attention of a forward gets the tile of its largest batch*heads, and the stage time is the tiled kernel's") {
  const Workload w = wan_17f_u2_tiled();
  const NodeSpec n = node("1xh200");
  const ForwardCost f = forward_cost(w);
  int64_t max_rows = 0, max_hd = 0;
  for (const BlockCost& b : f.blocks)
    for (const StageCost& st : b.stages)
      if (st.stage.kind == BlockStage::Kind::attention) {
        max_rows = std::max(max_rows, st.attention.batch * st.attention.heads);
        max_hd = std::max(max_hd, st.attention.head_dim);
      }
  REQUIRE(max_rows > 0);
  int attentions = 0;
  for (const StageCost& st : f.blocks.front().stages)
    if (st.stage.kind == BlockStage::Kind::attention) {
      ++attentions;
      CHECK(st.attention_tile == tiled_attention_tile(max_rows, max_hd));
      CHECK(stage_compute_time_s(st, n) ==
            Approx(tiled_attention_time_s(st.attention, st.attention_tile, n) + elementwise_time_s(st, n)).epsilon(1e-12));
    }
  CHECK(attentions == 2);  // Wan: self and cross
  CHECK(attention_kernel_from("tiled") == AttentionKernel::tiled);
  CHECK(std::string(attention_kernel_name(AttentionKernel::tiled)) == "tiled");
}

TEST_CASE("price_as_harness: the harness's elementwise bytes and kernels per op, structure and FLOPs unchanged") {
  for (const std::string model : {"flux.1-dev", "wan2.1-t2v-1.3b"}) {
    Workload w;
    w.model = model;
    w.frames = model == "flux.1-dev" ? 1 : 17;
    w.ulysses_degree = 2;
    const ForwardCost before = forward_cost(w);
    ForwardCost f = before;
    price_as_harness(f.blocks, w);
    const double d = double(architecture(model).hidden);
    int64_t max_m = 0;
    for (const BlockCost& b : before.blocks)
      for (const StageCost& st : b.stages)
        if (st.stage.kind == BlockStage::Kind::linear) max_m = std::max(max_m, st.gemm.m);
    const double hidden = double(max_m) * d;
    REQUIRE(f.blocks.size() == before.blocks.size());
    int linears_with_bias = 0, packs = 0;
    double eager_class_bytes_before = 0;
    for (std::size_t b = 0; b < f.blocks.size(); ++b) {
      REQUIRE(f.blocks[b].stages.size() == before.blocks[b].stages.size());
      // Packs: each collective after a compute stage (before the next one) adds 2·S bytes, 1 kernel.
      std::vector<double> pack_bytes(f.blocks[b].stages.size(), 0.0);
      std::vector<int> pack_kernels(f.blocks[b].stages.size(), 0);
      int producer = -1;
      for (std::size_t s = 0; s < f.blocks[b].stages.size(); ++s) {
        const StageCost& st = before.blocks[b].stages[s];
        if (st.stage.kind != BlockStage::Kind::all_to_all) producer = int(s);
        else if (producer >= 0 && st.collective != CollectiveKind::all_gather && st.all_to_all_buffer_bytes > 0) {
          pack_bytes[size_t(producer)] += 2 * st.all_to_all_buffer_bytes;
          pack_kernels[size_t(producer)] += 1;
          ++packs;
        }
      }
      for (std::size_t s = 0; s < f.blocks[b].stages.size(); ++s) {
        const StageCost& st = f.blocks[b].stages[s];
        const StageCost& was = before.blocks[b].stages[s];
        INFO(model << " block " << b << " stage " << st.name);
        CHECK(st.flop == was.flop);
        CHECK(st.weight_bytes == was.weight_bytes);
        CHECK(st.all_to_all_buffer_bytes == was.all_to_all_buffer_bytes);
        // The harness's kernels stream: the architecture's eager row-reduction and broadcast bytes
        // are gone, whatever the stage had (model/kernel_model.hpp prices the classes).
        eager_class_bytes_before += was.elementwise_row_reduction_bytes + was.elementwise_broadcast_bytes;
        CHECK(st.elementwise_row_reduction_bytes == 0);
        CHECK(st.elementwise_broadcast_bytes == 0);
        const double dt = double(st.dtype_bytes);
        if (st.stage.kind == BlockStage::Kind::linear) {
          const double m = double(st.gemm.m), k = double(st.gemm.k), n = double(st.gemm.n);
          const bool bias = st.weight_bytes == (k * n + n) * dt;
          if (!bias) CHECK(st.weight_bytes == k * n * dt);
          linears_with_bias += bias;
          CHECK(st.elementwise_bytes == Approx(dt * (2 * m * k + (bias ? 2 * m * n : 0) + 3 * hidden) + pack_bytes[s]).epsilon(1e-12));
          CHECK(st.elementwise_kernels == (bias ? 3 : 2) + pack_kernels[s]);
        } else if (st.stage.kind == BlockStage::Kind::attention) {
          const AttentionShape& a = st.attention;
          CHECK(st.attention_kernel == AttentionKernel::tiled);
          CHECK(st.elementwise_bytes ==
                Approx(dt * (2.0 * double(a.q_tokens + 2 * a.kv_tokens) * double(a.head_dim * a.batch * a.heads) + 3 * hidden) +
                       pack_bytes[s]).epsilon(1e-12));
          CHECK(st.elementwise_kernels == 4 + pack_kernels[s]);
        } else {
          CHECK(st.elementwise_bytes == was.elementwise_bytes);
        }
      }
    }
    CHECK(linears_with_bias > 0);  // both models' linears carry biases
    CHECK(eager_class_bytes_before > 0);  // the eager architecture's stages had class bytes to reset
    CHECK(packs > 0);              // Ulysses 2: the all-to-alls' send buffers
  }
}

TEST_CASE("validate re-simulates a chunkflow-hw run with the harness's compute ops, on the plan built as the harness built it") {
  const Workload w = wan_17f_u2_tiled();
  const NodeSpec n = node("1xh200");
  const PolicyConfig p = test::policy("layerwise");
  StepPlan plan = build_plan(w, n, p);
  const double as_planned = test::run(w, n, p).result.summary.step_time_s;
  price_as_harness(plan.cost.blocks, plan.workload);
  const double as_run = simulate(plan, n).summary.step_time_s;
  REQUIRE(std::abs(as_run / as_planned - 1) > 1e-3);  // the re-pricing matters at this shape
  const fs::path dir = test::fresh_dir("harness-run");
  for (const std::string tool : {"chunkflow-hw", "chunkflow"}) {
    const json summary = {
        {"context", {{"tool", tool}, {"gpu_name", "synthetic (tests/test_harness_pricing.cpp)"}}},
        {"scenario",
         {{"name", "synthetic"}, {"file", ""}, {"node", "1xh200"}, {"model", w.model}, {"batch", 1}, {"height", w.height},
          {"width", w.width}, {"frames", w.frames}, {"ulysses_degree", 2}, {"ring_degree", 1}, {"tp_degree", 1},
          {"fsdp", false}, {"cfg", "sequential"}, {"policy", "layerwise"}, {"chunk_bytes", p.chunk_bytes},
          {"resident_fraction", "auto"}, {"lookahead", p.lookahead}, {"steps", p.steps}, {"attention", "tiled"}}},
        {"plan", {{"ops", int64_t(plan.ops.size())}}},
        {"step_time_s", as_run}};
    fs::remove_all(dir / "run.json");
    std::ofstream(dir / "run.json") << summary.dump(2);
    const ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
    REQUIRE(v.rows.size() == 1);
    INFO("tool " << tool);
    CHECK(v.rows[0].run.harness == (tool == "chunkflow-hw"));
    CHECK_FALSE(v.rows[0].plan_mismatch);
    CHECK(v.rows[0].predicted_step_time_s == Approx(tool == "chunkflow-hw" ? as_run : as_planned).epsilon(1e-9));
    CHECK_FALSE(v.rows[0].predicted_timeline);  // kept only when asked (validate --traces)
  }
  // validate --traces: the kept timeline is the re-simulation of the run's plan, op for op.
  const ValidationResult kept = validate_runs(find_measured_runs(dir.string()), "", true);
  REQUIRE(kept.rows.size() == 1);
  REQUIRE(kept.rows[0].predicted_timeline);
  CHECK(kept.rows[0].predicted_timeline->rows.size() == plan.ops.size());
  CHECK(summarize(*kept.rows[0].predicted_timeline).step_time_s == Approx(kept.rows[0].predicted_step_time_s).epsilon(1e-12));
  fs::remove_all(dir);
}

TEST_CASE("calibrate: the harness's tiled attention bench scales its own model, not FlashAttention's efficiency, and the SM-driven proxy is fitted first") {
  const NodeSpec base = node("1xh200");
  json attn = json::array();
  for (int64_t rows : {6, 12})
    for (int64_t q : {1024, 4096}) {
      const AttentionShape a{1, rows, q, q, 128};
      attn.push_back({{"rows", rows}, {"q_tokens", q}, {"kv_tokens", q}, {"head_dim", 128}, {"tile", 1024}, {"flop", a.flop()},
                      {"time_s_median", 1.25 * tiled_attention_time_s(a, 1024, base)}});
    }
  auto collective = [](double beta) {
    json pts = json::array();
    for (double bytes = 1 << 20; bytes <= double(1 << 28); bytes *= 4)
      pts.push_back({{"bytes", bytes}, {"ulysses_degree", 2}, {"out_bytes", bytes / 2}, {"time_s_median", 1e-5 + bytes / 2 / beta}});
    return pts;
  };
  const json bench = {{"context", {{"tool", "synthetic (tests/test_harness_pricing.cpp)"}}},
                      {"measurements",
                       {{{"key", "attention"}, {"points", attn}},
                        {{"key", "collective_proxy_copy_engine"}, {"points", collective(50e9)}},
                        {{"key", "collective_proxy_kernel"}, {"points", collective(29e9)}}}}};
  const fs::path dir = test::fresh_dir("harness-cal");
  std::ofstream(dir / "bench.json") << bench.dump();
  const Calibration c = fit_calibration({read_measurement_file((dir / "bench.json").string())}, base);
  CHECK_FALSE(c.attention_efficiency);
  REQUIRE(c.fit("attention_tiled"));
  CHECK(c.fit("attention_tiled")->parameters.at("scale") == Approx(1.25).epsilon(1e-9));
  REQUIRE(c.tiled_attention_scale);
  CHECK(*c.tiled_attention_scale == Approx(1.25).epsilon(1e-9));
  NodeSpec applied = base;
  apply_calibration(c, applied);
  CHECK(applied.tiled_attention_scale == Approx(1.25).epsilon(1e-9));
  const AttentionShape shape{1, 12, 4096, 4096, 128};
  CHECK(tiled_attention_time_s(shape, 1024, applied) == Approx(1.25 * tiled_attention_time_s(shape, 1024, base)).epsilon(1e-9));
  CHECK(c.fit("attention") == nullptr);
  REQUIRE(c.collective_bytes_per_s);
  CHECK(*c.collective_bytes_per_s == Approx(29e9).epsilon(1e-6));
  fs::remove_all(dir);
}

TEST_CASE("Workload::harness_ops prices the forward as price_as_harness does, and a harness run that planned with it is re-planned with it") {
  Workload w;
  w.model = "flux.1-dev";
  w.height = w.width = 1024;
  w.frames = 1;
  w.ulysses_degree = 2;
  ForwardCost expected = forward_cost(w);
  price_as_harness(expected.blocks, w);
  w.harness_ops = true;
  const ForwardCost got = forward_cost(w);
  REQUIRE(got.blocks.size() == expected.blocks.size());
  for (std::size_t b = 0; b < got.blocks.size(); ++b) {
    REQUIRE(got.blocks[b].stages.size() == expected.blocks[b].stages.size());
    for (std::size_t s = 0; s < got.blocks[b].stages.size(); ++s) {
      const StageCost &g = got.blocks[b].stages[s], &e = expected.blocks[b].stages[s];
      CHECK(g.elementwise_bytes == e.elementwise_bytes);
      CHECK(g.elementwise_kernels == e.elementwise_kernels);
      CHECK(g.attention_kernel == e.attention_kernel);
      CHECK(g.attention_tile == e.attention_tile);
    }
  }
  // A chunkflow-hw summary that says harness_ops: its plan (here chunkflow, whose windows depend on
  // the op costs) is re-built with them, so the op count matches and the prediction is that plan's.
  const NodeSpec n = node("1xh200");
  const PolicyConfig p = test::policy("chunkflow", 0.5);
  const test::Run harness_planned = test::run(w, n, p);
  const json summary = {
      {"context", {{"tool", "chunkflow-hw"}, {"gpu_name", "synthetic (tests/test_harness_pricing.cpp)"}}},
      {"scenario",
       {{"name", "synthetic"}, {"file", ""}, {"node", "1xh200"}, {"model", w.model}, {"batch", 1}, {"height", w.height},
        {"width", w.width}, {"frames", w.frames}, {"ulysses_degree", 2}, {"ring_degree", 1}, {"tp_degree", 1},
        {"fsdp", false}, {"cfg", "none"}, {"policy", "chunkflow"}, {"chunk_bytes", p.chunk_bytes},
        {"resident_fraction", 0.5}, {"lookahead", p.lookahead}, {"steps", p.steps}, {"attention", "tiled"},
        {"harness_ops", true}}},
      {"plan", {{"ops", int64_t(harness_planned.plan.ops.size())}}},
      {"step_time_s", harness_planned.result.summary.step_time_s}};
  const fs::path dir = test::fresh_dir("harness-ops");
  std::ofstream(dir / "run.json") << summary.dump(2);
  const ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].run.options.harness_ops);
  CHECK_FALSE(v.rows[0].plan_mismatch);
  CHECK(v.rows[0].error == Approx(0.0).margin(1e-12));
  // A malformed flag is refused naming the field.
  json bad = summary;
  bad["scenario"]["harness_ops"] = "yes";
  std::ofstream(dir / "run.json") << bad.dump(2);
  try {
    (void)find_measured_runs(dir.string());
    FAIL("a string harness_ops was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("harness_ops") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("harness_ops takes the tiled attention: auto becomes tiled, another kernel is refused naming the option or field") {
  ScenarioOptions o;
  o.harness_ops = true;
  CHECK(resolve_scenario(o).workload.attention == AttentionKernel::tiled);
  o.attention = "fa3";
  try {
    (void)resolve_scenario(o);
    FAIL("harness_ops with --attention fa3 was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--attention") != std::string::npos);
    CHECK(std::string(e.what()).find("expected tiled or auto") != std::string::npos);
  }
  const fs::path dir = test::fresh_dir("harness-ops-file");
  std::ofstream(dir / "s.json") << R"({"name": "x", "node": "1xh200", "workload": {"model": "wan2.1-t2v-1.3b", "height": 480,
    "width": 832, "frames": 17, "ulysses_degree": 2, "attention": "sdpa", "harness_ops": true}})";
  try {
    (void)load_scenario((dir / "s.json").string());
    FAIL("a scenario file with harness_ops and sdpa was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("/workload/attention") != std::string::npos);
  }
  fs::remove_all(dir);
}
