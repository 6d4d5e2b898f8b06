// hw::lower: the stream/event mapping of a plan, chunk-slot placement, and the dataflow hazards
// (hw/lowering.hpp). CPU only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <queue>
#include <set>

#include "hw/lowering.hpp"
#include "hw/report.hpp"
#include "model/architecture.hpp"
#include "model/calibration.hpp"
#include "model/harness_ops.hpp"
#include "model/tiled_attention.hpp"
#include "model/error.hpp"
#include "runtime/policy.hpp"
#include "sim/executor.hpp"
#include "sim/validate.hpp"
#include "tests/sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::hw;

namespace {

struct Case {
  std::string node, model;
  int64_t height, width, frames;
  int ulysses;
  std::string policy;
  double chunk_mib;
  std::optional<double> resident;
  int lookahead = 1;
};

StepPlan make_plan(const Case& c) {
  Workload w;
  w.model = c.model;
  w.height = c.height;
  w.width = c.width;
  w.frames = c.frames;
  w.ulysses_degree = c.ulysses;
  PolicyConfig p;
  p.policy = c.policy;
  p.chunk_bytes = (c.chunk_mib > 0 ? c.chunk_mib : 64) * kMiB;
  p.resident_fraction = c.resident;
  p.lookahead = c.lookahead;
  p.steps = 2;
  return build_plan(w, node(c.node), p);
}

std::vector<Case> cases() {
  return {
      {"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 1, "chunkflow", 4, 0.3},
      {"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 2, "chunkflow", 4, 0.0},
      {"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 2, "layerwise", 0, 0.0},
      {"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 2, "no-offload", 0, std::nullopt},
      {"2xh100-pcie", "wan2.1-t2v-1.3b", 128, 128, 5, 2, "chunkflow", 3, 0.25, 2},
      {"2xh100-pcie", "flux.1-dev", 256, 256, 1, 2, "chunkflow", 16, 0.1},
      {"2xh100-pcie", "flux.1-dev", 256, 256, 1, 2, "layerwise", 0, 0.5},
  };
}

std::string label(const Case& c) {
  return c.node + " " + c.model + " P=" + std::to_string(c.ulysses) + " " + c.policy + " C=" +
         std::to_string(c.chunk_mib) + "MiB";
}

/// Independent oracle: does `op` transitively depend on `before` (BFS over deps)?
bool reaches(const StepPlan& plan, int op, int before) {
  std::vector<bool> seen(plan.ops.size(), false);
  std::queue<int> q;
  q.push(op);
  while (!q.empty()) {
    const int v = q.front();
    q.pop();
    for (int d : plan.ops[size_t(v)].deps) {
      if (d == before) return true;
      if (!seen[size_t(d)]) {
        seen[size_t(d)] = true;
        q.push(d);
      }
    }
  }
  return false;
}

/// What the executor guarantees, modelled: each lane of a rank is one stream fed in Program::order
/// (an op starts after the op before it on its stream ended) and an op starts after every op it
/// waits on ended. Returns the (op, dep) pairs of the plan's same-rank deps (cross-rank ones are
/// between collectives, which NCCL orders) that this does not end before the op starts; `checked`
/// counts the pairs looked at.
std::vector<std::pair<int, int>> unordered_deps(const StepPlan& plan, const Program& p, size_t& checked) {
  const size_t n = p.ops.size();
  std::vector<std::vector<bool>> ended(n, std::vector<bool>(n, false));  // [i][k]: k ended before i starts
  auto after = [&](size_t i, int d) {
    ended[i][size_t(d)] = true;
    for (size_t k = 0; k < n; ++k)
      if (ended[size_t(d)][k]) ended[i][k] = true;
  };
  std::map<std::pair<int, Lane>, int> last_on_stream;
  for (int id : p.order) {
    const auto& op = p.ops[size_t(id)];
    const std::pair<int, Lane> stream{op.rank, op.lane};
    if (auto it = last_on_stream.find(stream); it != last_on_stream.end()) after(size_t(id), it->second);
    for (int w : op.waits) after(size_t(id), w);
    last_on_stream[stream] = id;
  }
  std::vector<std::pair<int, int>> missing;
  checked = 0;
  for (const auto& op : plan.ops)
    for (int d : op.deps) {
      if (plan.ops[size_t(d)].rank != op.rank) continue;
      ++checked;
      if (!ended[size_t(op.id)][size_t(d)]) missing.emplace_back(op.id, d);
    }
  return missing;
}

}  // namespace

TEST_CASE("every_dep waits: every data dep across lanes becomes exactly one event wait, same-lane deps none",
          "[hw][lowering]") {
  LoweringOptions every;
  every.waits = CrossLaneWaits::every_dep;
  for (const auto& c : cases()) {
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const NodeSpec n = node(c.node);
    const Program p = lower(plan, n, every);
    REQUIRE(p.ops.size() == plan.ops.size());
    size_t waits = 0;
    for (const auto& op : plan.ops) {
      std::set<int> expected;
      for (int d : op.data_deps)
        if (plan.ops[size_t(d)].lane != op.lane && plan.ops[size_t(d)].rank == op.rank) expected.insert(d);
      const auto& got = p.ops[size_t(op.id)].waits;
      INFO("op " << op.name);
      CHECK(std::set<int>(got.begin(), got.end()) == expected);
      CHECK(got.size() == expected.size());  // no duplicate waits
      for (int d : got) CHECK(plan.ops[size_t(d)].lane != op.lane);
      waits += got.size();
    }
    if (c.policy != "no-offload" || c.ulysses > 1) CHECK(waits > 0);
  }
}

TEST_CASE("default waits: one per other lane of the rank, on the cross-lane dep enqueued last there",
          "[hw][lowering]") {
  LoweringOptions every;
  every.waits = CrossLaneWaits::every_dep;
  for (const auto& c : cases()) {
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const NodeSpec n = node(c.node);
    const Program p = lower(plan, n);
    const Program q = lower(plan, n, every);
    std::vector<int> pos(plan.ops.size(), -1);
    for (size_t i = 0; i < p.order.size(); ++i) pos[size_t(p.order[i])] = int(i);
    size_t fewer = 0;
    for (const auto& op : plan.ops) {
      INFO("op " << op.name);
      // The plan's deps on other lanes of this rank, latest (in enqueue order) per lane.
      std::map<Lane, int> latest;
      for (int d : op.deps) {
        const auto& dep = plan.ops[size_t(d)];
        if (dep.rank != op.rank || dep.lane == op.lane) continue;
        auto [it, fresh] = latest.try_emplace(dep.lane, d);
        if (!fresh && pos[size_t(d)] > pos[size_t(it->second)]) it->second = d;
      }
      std::vector<int> expected;
      for (const auto& [lane, d] : latest) expected.push_back(d);
      std::sort(expected.begin(), expected.end());
      const auto& got = p.ops[size_t(op.id)].waits;
      CHECK(got == expected);
      // The same work as before, only fewer edges: every wait is one --waits every has.
      const auto& all = q.ops[size_t(op.id)].waits;
      for (int d : got) CHECK(std::find(all.begin(), all.end(), d) != all.end());
      fewer += all.size() - got.size();
    }
    // Chunked plans have compute ops reading several chunks of one block (two H2D waits before).
    if (c.policy == "chunkflow") CHECK(fewer > 0);
    // Nothing else of the program changes.
    CHECK(p.order == q.order);
    for (size_t i = 0; i < p.ops.size(); ++i) {
      CHECK(p.ops[i].linear.pieces.size() == q.ops[i].linear.pieces.size());
      CHECK(p.ops[i].packs == q.ops[i].packs);
    }
  }
}

TEST_CASE("both wait modes: stream order plus the waits end every dep of an op before it starts",
          "[hw][lowering]") {
  for (const CrossLaneWaits mode : {CrossLaneWaits::latest_per_lane, CrossLaneWaits::every_dep}) {
    LoweringOptions o;
    o.waits = mode;
    for (const auto& c : cases()) {
      INFO(label(c) << (mode == CrossLaneWaits::every_dep ? " --waits every" : " --waits latest"));
      const StepPlan plan = make_plan(c);
      Program p = lower(plan, node(c.node), o);
      size_t checked = 0;
      CHECK(unordered_deps(plan, p, checked).empty());
      CHECK(checked > 0);
      // The model sees missing waits: without any, cross-lane deps are left unordered.
      if (mode == CrossLaneWaits::latest_per_lane && (c.policy != "no-offload" || c.ulysses > 1)) {
        for (auto& op : p.ops) op.waits.clear();
        CHECK_FALSE(unordered_deps(plan, p, checked).empty());
      }
    }
  }
}

TEST_CASE("enqueue order is topological and keeps each lane's FIFO order", "[hw][lowering]") {
  for (const auto& c : cases()) {
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const Program p = lower(plan, node(c.node));
    REQUIRE(p.order.size() == plan.ops.size());
    std::vector<int> pos(plan.ops.size(), -1);
    for (size_t i = 0; i < p.order.size(); ++i) pos[size_t(p.order[i])] = int(i);
    for (const auto& op : plan.ops)
      for (int d : op.deps) CHECK(pos[size_t(d)] < pos[size_t(op.id)]);
  }
}

TEST_CASE("chunk slots: chunk bytes ≤ slot bytes, no slot refilled while a reader of its chunk may run",
          "[hw][lowering][slots]") {
  for (const auto& c : cases()) {
    if (c.policy == "no-offload") continue;
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const Program p = lower(plan, node(c.node));
    REQUIRE(p.slot_count == plan.info.slot_count);
    // Readers of every H2D op, from the lowered pieces.
    std::map<int, std::vector<int>> readers;
    for (const auto& op : p.ops)
      for (const auto& piece : op.linear.pieces)
        if (!piece.resident) readers[piece.h2d_op].push_back(op.id);
    std::map<std::pair<int, int>, int> last_fill;  // (rank, slot) → h2d op
    for (const auto& op : plan.ops) {
      if (op.kind != OpKind::h2d) continue;
      const auto& o = p.ops[size_t(op.id)];
      CHECK(o.h2d_bytes <= p.slot_bytes);
      CHECK(o.device_offset % kAlignBytes == o.host_offset % kAlignBytes - p.block_host_offset[size_t(op.block)] % kAlignBytes);
      CHECK(o.device_offset >= int64_t(o.slot) * p.slot_stride_bytes);
      CHECK(o.device_offset + o.h2d_bytes <= int64_t(o.slot + 1) * p.slot_stride_bytes);
      const auto key = std::make_pair(op.rank, op.slot);
      if (auto it = last_fill.find(key); it != last_fill.end()) {
        for (int r : readers[it->second]) {
          INFO("slot " << op.slot << ": " << op.name << " refills it; " << plan.ops[size_t(r)].name
                       << " reads the previous chunk " << plan.ops[size_t(it->second)].name);
          CHECK(reaches(plan, op.id, r));
        }
      }
      last_fill[key] = op.id;
    }
  }
}

TEST_CASE("all chunks of a linear are found: pieces tile its weights and each read follows its H2D",
          "[hw][lowering][slots]") {
  for (const auto& c : cases()) {
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const Program p = lower(plan, node(c.node));
    int offloaded_linears = 0;
    for (const auto& op : p.ops) {
      if (op.work != Work::linear) continue;
      const auto& l = op.linear;
      REQUIRE(!l.pieces.empty());
      int64_t x = l.layout_begin;
      for (const auto& piece : l.pieces) {
        CHECK(piece.layout_begin == x);
        CHECK(piece.layout_end > piece.layout_begin);
        x = piece.layout_end;
        if (piece.resident) {
          CHECK(piece.layout_end <= p.block_resident_bytes[size_t(op.block)]);
          CHECK(piece.device_offset % kAlignBytes == piece.layout_begin % kAlignBytes);
        } else {
          ++offloaded_linears;
          const auto& h = plan.ops[size_t(piece.h2d_op)];
          CHECK(h.kind == OpKind::h2d);
          CHECK(h.block == op.block);
          CHECK(h.rank == op.rank);
          CHECK(h.src_offset_bytes <= double(piece.layout_begin));
          CHECK(h.src_offset_bytes + h.bytes >= double(piece.layout_end) - 0.5);
          CHECK(reaches(plan, op.id, piece.h2d_op));
          // The op waits for that chunk directly (the plan's data dep) and the step matches.
          CHECK(h.step == op.step);
          // Address ≡ layout offset (mod 256) everywhere: the bit-exactness argument.
          CHECK(piece.device_offset % kAlignBytes == piece.layout_begin % kAlignBytes);
        }
      }
      CHECK(x == l.layout_begin + l.weight_bytes);
      CHECK(l.gather() == (l.pieces.size() > 1));
    }
    if (c.policy == "no-offload") CHECK(offloaded_linears == 0);
    else CHECK(offloaded_linears > 0);
  }
}

TEST_CASE("resident bytes per block match the plan's resident weight bytes", "[hw][lowering]") {
  for (const auto& c : cases()) {
    INFO(label(c));
    const StepPlan plan = make_plan(c);
    const Program p = lower(plan, node(c.node));
    double resident = double(p.non_block_weight_bytes);
    for (int64_t b : p.block_resident_bytes) resident += double(b);
    CHECK(resident == Approx(plan.info.resident_weight_bytes).margin(double(p.block_bytes.size())));
  }
}

TEST_CASE("dataflow: collectives send what their producer wrote, consumers read what they received",
          "[hw][lowering][dataflow]") {
  const Case c{"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 2, "chunkflow", 4, 0.0};
  const StepPlan plan = make_plan(c);
  const Program p = lower(plan, node(c.node));
  CHECK(p.proxy);
  int packs = 0, attention_from_recv = 0, linear_from_recv = 0;
  for (const auto& op : p.ops) {
    packs += int(op.packs.size());
    if (op.work == Work::attention)
      for (bool b : op.attention.from_recv) attention_from_recv += b;
    if (op.work == Work::linear && op.linear.input == LinearInput::recv_o) {
      ++linear_from_recv;
      CHECK(op.linear.recv_o_bytes > 0);
    }
    for (const auto& pk : op.packs) {
      CHECK(op.lane == Lane::compute);
      CHECK(pk.bytes > 0);
    }
  }
  int collectives = 0;
  for (const auto& op : plan.ops) collectives += op.kind == OpKind::collective;
  CHECK(collectives > 0);
  CHECK(packs > 0);
  CHECK(attention_from_recv > 0);
  CHECK(linear_from_recv > 0);
  // Identical dataflow for no-offload: the same compute ops read the same sources.
  Case base = c;
  base.policy = "no-offload";
  const Program q = lower(make_plan(base), node(c.node));
  std::vector<const OpProgram*> a, b;
  for (const auto& op : p.ops) if (op.lane == Lane::compute) a.push_back(&op);
  for (const auto& op : q.ops) if (op.lane == Lane::compute) b.push_back(&op);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i]->name);
    CHECK(a[i]->name == b[i]->name);
    CHECK(a[i]->linear.input == b[i]->linear.input);
    CHECK(a[i]->attention.from_recv == b[i]->attention.from_recv);
    CHECK(a[i]->packs == b[i]->packs);
  }
}

TEST_CASE("a plan missing the dependency that frees a slot is rejected, naming the ops", "[hw][lowering][slots]") {
  const Case c{"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 1, "chunkflow", 4, 0.0};
  StepPlan plan = make_plan(c);
  // Drop the release dep of the first H2D op that refills a slot.
  bool dropped = false;
  for (auto& op : plan.ops) {
    if (op.kind != OpKind::h2d || op.data_deps.empty()) continue;
    const int release = op.data_deps.front();
    if (plan.ops[size_t(release)].kind != OpKind::compute) continue;
    op.data_deps.erase(op.data_deps.begin());
    op.deps.erase(std::find(op.deps.begin(), op.deps.end(), release));
    dropped = true;
    break;
  }
  REQUIRE(dropped);
  CHECK_THROWS_WITH(lower(plan, node(c.node)), Catch::Contains("slot") && Catch::Contains("still reads"));
}

TEST_CASE("a compute op that does not wait for its chunk is rejected", "[hw][lowering][slots]") {
  const Case c{"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 1, "chunkflow", 4, 0.0};
  StepPlan plan = make_plan(c);
  // Remove every H2D dep of the first compute op that has one (the runtime's compute ops wait on
  // their chunks directly; without it nothing orders the read after the copy).
  for (auto& op : plan.ops) {
    if (op.kind != OpKind::compute) continue;
    OpIds keep;
    bool had = false;
    for (int d : op.data_deps) {
      if (plan.ops[size_t(d)].kind == OpKind::h2d) had = true;
      else keep.push_back(d);
    }
    if (!had) continue;
    op.data_deps = keep;
    OpIds deps;
    for (int d : op.deps)
      if (plan.ops[size_t(d)].kind != OpKind::h2d) deps.push_back(d);
    op.deps = deps;
    break;
  }
  CHECK_THROWS_WITH(lower(plan, node(c.node)), Catch::Contains("no H2D chunk it depends on"));
}

TEST_CASE("the harness runs bf16 only", "[hw][lowering]") {
  const Case c{"1xh100-sxm", "wan2.1-t2v-1.3b", 128, 128, 5, 1, "no-offload", 0, std::nullopt};
  StepPlan plan = make_plan(c);
  plan.workload.dtype_bytes = 4;
  CHECK_THROWS_AS(lower(plan, node(c.node)), InputError);
}

TEST_CASE("price_as_harness sees what the harness lowers: hidden state, attention rows and tile, biases") {
  // model/harness_ops.hpp prices the harness's kernels from the forward cost; hw/lowering.cpp sizes
  // the buffers those kernels touch. They must agree for every model, layout and policy.
  int plans = 0;
  for (const std::string& id : architecture_ids())
    for (int tp : {1, 2})
      for (int u : {1, 2})
        for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) {
          Workload w;
          w.model = id;
          const bool video = architecture(id).text_mode == UlyssesTextMode::none;
          w.frames = video ? 17 : 1;
          w.height = video ? 480 : 512;
          w.width = video ? 832 : 512;
          w.tp_degree = tp;
          w.ulysses_degree = u;
          w.harness_ops = true;
          w.attention = AttentionKernel::tiled;
          const NodeSpec n = node(tp * u > 1 ? "8xh100-sxm" : "1xh200");
          PolicyConfig p;
          p.policy = policy;
          p.steps = 1;
          StepPlan plan;
          Program prog;
          try {
            validate(w);
            plan = build_plan(w, n, p);
            prog = lower(plan, n);
          } catch (const InputError&) {
            continue;  // a layout the model's heads do not divide
          }
          ++plans;
          INFO(id << " TP " << tp << " U " << u << " " << policy);
          int64_t max_m = 1;
          for (const BlockCost& b : plan.cost.blocks)
            for (const StageCost& st : b.stages)
              if (st.stage.kind == BlockStage::Kind::linear) max_m = std::max(max_m, st.gemm.m);
          CHECK(prog.hidden_rows == max_m);
          CHECK(prog.hidden == architecture(id).hidden);
          // The executor's one workspace: the plan's largest batch·heads and head dim (executor.cu).
          int64_t max_head_dim = 0;
          for (const OpProgram& o : prog.ops)
            if (o.work == Work::attention) max_head_dim = std::max(max_head_dim, o.attention.head_dim);
          const int64_t tile = tiled_attention_tile(prog.max_attention_rows, max_head_dim);
          CHECK(harness_attention_tile(plan.cost.blocks) == tile);
          for (const BlockCost& b : plan.cost.blocks)
            for (const StageCost& st : b.stages)
              if (st.stage.kind == BlockStage::Kind::attention) CHECK(st.attention_tile == tile);
          for (const OpProgram& o : prog.ops) {
            if (o.work != Work::linear) continue;
            const StageCost& st = plan.stage_of(plan.ops[size_t(o.id)]);
            CHECK((st.weight_bytes > double(st.gemm.k) * double(st.gemm.n) * st.dtype_bytes) == o.linear.bias);
          }
        }
  CHECK(plans >= 20);
}

TEST_CASE("a run summary's scenario block, as the harness writes it, is re-planned by validate into the plan it ran") {
  ScenarioOptions o;
  o.node = "1xh200";
  o.model = "flux.1-dev";
  o.height = 512;
  o.width = 512;
  o.frames = 1;
  o.ulysses = 2;
  o.policy = "chunkflow";
  o.chunk_mib = 16;
  o.resident_fraction = "0.5";
  const Scenario sc = hw_scenario(o);
  CHECK(sc.workload.harness_ops);
  CHECK(sc.workload.attention == AttentionKernel::tiled);
  const StepPlan plan = build_plan(sc.workload, sc.node, sc.policy);
  const double step_s = simulate(plan, sc.node).summary.step_time_s;
  const nlohmann::json summary = {{"context", {{"tool", "chunkflow-hw"}, {"gpu_name", "synthetic (tests/hw/test_hw_lowering.cpp)"}}},
                                  {"scenario", nlohmann::json::parse(scenario_json(sc).dump())},
                                  {"plan", {{"ops", int64_t(plan.ops.size())}, {"fnv1a64", plan_fnv1a64(plan)}}},
                                  {"step_time_s", step_s}};
  const std::filesystem::path dir = test::fresh_dir("hw-scenario-json");
  std::ofstream(dir / "run.json") << summary.dump(2);
  const ValidationResult v = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(v.rows.size() == 1);
  CHECK_FALSE(v.rows[0].plan_mismatch);
  CHECK(v.rows[0].error == Approx(0.0).margin(1e-12));
  // Planned on a calibrated node (run --calibration): the block names the file and its digest, and
  // validate re-plans on that node (its compute slowdown changes chunkflow's plan here: at 1024²,
  // where "auto" keeps part of the weights on the host; at 512² it keeps them all either way since
  // the copies beside SM-read all-to-alls cost what model/routes.hpp says).
  Calibration c;
  c.node_id = "1xh200";
  c.peak_flop_per_s = sc.node.peak_flop_per_s;
  c.compute_launch_s = sc.node.compute_launch_s;
  c.compute_slowdown_h2d = 0.3;
  const std::string cal = (dir / "calibration-device.json").string();
  std::ofstream(cal) << calibration_to_json(c, "{}");
  ScenarioOptions oc = o;
  oc.height = oc.width = 1024;
  oc.resident_fraction = "auto";
  const Scenario plain = hw_scenario(oc);
  oc.calibration_file = cal;
  const Scenario calibrated = hw_scenario(oc);
  const nlohmann::json block = nlohmann::json::parse(scenario_json(calibrated).dump());
  CHECK(block["calibration_file"] == cal);
  CHECK(block["calibration_fnv1a64"] == file_fnv1a64(cal));
  CHECK_FALSE(scenario_json(sc).contains("calibration_file"));
  const StepPlan calibrated_plan = build_plan(calibrated.workload, calibrated.node, calibrated.policy);
  // The slowdown moves "auto" (else this would not tell a lost calibration).
  REQUIRE(plan_fnv1a64(calibrated_plan) != plan_fnv1a64(build_plan(plain.workload, plain.node, plain.policy)));
  nlohmann::json run = summary;
  run["scenario"] = block;
  run["plan"] = {{"ops", int64_t(calibrated_plan.ops.size())}, {"fnv1a64", plan_fnv1a64(calibrated_plan)}};
  std::ofstream(dir / "run.json") << run.dump(2);
  const ValidationResult vc = validate_runs(find_measured_runs(dir.string()), "");
  REQUIRE(vc.rows.size() == 1);
  CHECK(vc.rows[0].run.plan_calibration_file == cal);
  CHECK_FALSE(vc.rows[0].plan_mismatch);
  std::filesystem::remove_all(dir);
  // Another attention kernel is refused: the harness runs its tiled kernel only.
  o.attention = "fa3";
  CHECK_THROWS_AS(hw_scenario(o), InputError);
}
