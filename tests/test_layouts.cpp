// Parallel layouts (issue 9 §3, §4): ring attention, USP, parallel CFG, tensor parallelism and
// FSDP as shapes (model/workload), plans (runtime/plan_builder) and flows in NCCL's algorithm shape
// (sim/flows). Closed forms: a collective alone takes α + bytes per flow / the route's bottleneck
// (nccl-tests busbw definitions, sim/flows.hpp), the TP all-reduce and FSDP all-gather volumes;
// invariants: the NVSwitch node's collectives never touch PCIe, more bandwidth never slows a plan,
// every built-in node simulates every model under every layout its GPUs and shapes allow.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "model/collective_flows.hpp"
#include "model/error.hpp"
#include "model/workload.hpp"
#include "property_sample.hpp"
#include "sim/flows.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
using chunkflow::test::layout;

namespace {

/// A collective alone: latency + bytes / rate, both computed in double; equal to rounding.
constexpr double kClosedFormRelTolerance = 1e-9;

bool close(double a, double b) { return std::abs(a - b) <= kClosedFormRelTolerance * std::max(std::abs(a), std::abs(b)); }

/// The rate one flow gets alone on GPU pair a→b's collective path: the route's bottleneck and the
/// transport's per-flow cap.
double pair_rate(const NodeSpec& node, int a, int b) {
  MaxMinSolver solver;
  const Topology topology(node, solver);
  const Topology::PeerPath& peer = topology.peer_path(a, b);
  return std::min(Topology::bottleneck_bytes_per_s(solver, peer.route), peer.flow_cap_bytes_per_s);
}

/// Collective rows of a timeline by stage kind.
std::vector<const TimelineRow*> collective_rows(const test::Run& r, CollectiveKind kind) {
  std::vector<const TimelineRow*> out;
  for (const TimelineRow& row : r.result.timeline.rows)
    if (row.kind == OpKind::collective && r.plan.stage_of(r.plan.ops[row.op_id]).collective == kind) out.push_back(&row);
  return out;
}

}  // namespace

TEST_CASE("GPUs used = ulysses × ring × tp × (2 with parallel CFG), ranks numbered TP innermost, then Ulysses, ring, CFG",
          "[layouts]") {
  const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, 2, 2, 1, false, CfgMode::parallel);
  CHECK(gpus_used(w) == 8);
  CHECK(sequence_parallel_degree(w) == 4);
  for (int g = 0; g < gpus_used(w); ++g) CHECK(rank_of(w, rank_coordinates(w, g)) == g);
  CHECK(rank_coordinates(w, 5).cfg == 1);
  CHECK(rank_coordinates(w, 5).ring == 0);
  CHECK(rank_coordinates(w, 5).ulysses == 1);
  CHECK_THROWS_AS(rank_coordinates(w, 8), std::out_of_range);
  CHECK(forwards_per_step(w) == 1);  // one forward per step on each of the two groups
}

TEST_CASE("per-rank shapes: ring and USP split the sequence over U·R, attention FLOPs are the unsharded / (U·R·T)",
          "[layouts]") {
  for (const auto& [u, r, t] : {std::tuple{1, 4, 1}, std::tuple{2, 2, 1}, std::tuple{1, 1, 4}, std::tuple{2, 1, 2}}) {
    INFO("U " << u << " R " << r << " T " << t);
    const Workload one = layout("wan2.1-t2v-14b", 480, 832, 17, 1, 1, 1, false);
    const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, u, r, t, false);
    const ForwardCost c1 = forward_cost(one), c = forward_cost(w);
    REQUIRE(c.tokens.video_padded % (u * r) == 0);
    // 480×832×17: S_v = 5·30·52 = 7800, divisible by 4: the split is exact.
    CHECK(c.blocks[0].attention_flop * (u * r * t) == Approx(c1.blocks[0].attention_flop).epsilon(1e-12));
    // Linears: the video rows split over U·R, TP splits every GEMM; Wan's cross-attention K/V
    // projections of the T text tokens (2·B·T·2d², §5) run on every sequence rank, split by TP only.
    const DitArchitecture& a = architecture(w.model);
    const double text_kv = 2.0 * double(c.tokens.text) * 2.0 * double(a.hidden) * double(a.hidden);
    CHECK(c.blocks[0].linear_flop ==
          Approx((c1.blocks[0].linear_flop - text_kv) / (u * r * t) + text_kv / t).epsilon(1e-12));
    // TP shards the split linears' weights: per-rank block bytes × T = the block's, less the
    // replicated part (norms, biases of row-split linears) counted T times.
    CHECK(c.blocks[0].weight_bytes <= c1.blocks[0].weight_bytes / t + 1e6);
    CHECK(c.blocks[0].weight_bytes * t >= c1.blocks[0].weight_bytes);
  }
}

TEST_CASE("TP all-reduce volume: two all-reduces of B·S·d per transformer layer and stream (Megatron), "
          "each alone α + 2(T−1)/T·S / B on NVSwitch",
          "[layouts][closed-form]") {
  const NodeSpec n = node("8xh100-sxm");
  const int T = 8;
  const Workload w = layout("flux.1-dev", 1024, 1024, 1, 1, 1, T, false);
  const ForwardCost c = forward_cost(w);
  const DitArchitecture& a = architecture(w.model);
  const double dt = w.dtype_bytes, S_v = double(c.tokens.video), text = double(c.tokens.text);
  for (const BlockCost& b : c.blocks) {
    double reduced = 0;
    int count = 0;
    for (const StageCost& st : b.stages)
      if (st.stage.kind == BlockStage::Kind::all_to_all) {
        REQUIRE(st.collective == CollectiveKind::all_reduce);
        reduced += st.all_to_all_buffer_bytes;
        ++count;
      }
    // double block: proj + MLP out on each stream (image rows S_v, text rows T); single: linear2.
    const bool double_block = a.block_kinds[b.kind].name == "double";
    CHECK(count == (double_block ? 4 : 1));
    CHECK(reduced == Approx(dt * (S_v + text) * double(a.hidden) * (double_block ? 2 : 1)).epsilon(1e-12));
  }
  const auto r = test::run(w, n, test::policy("no-offload"));
  const double B = pair_rate(n, 0, 1);
  const auto rows = collective_rows(r, CollectiveKind::all_reduce);
  REQUIRE(!rows.empty());
  for (const TimelineRow* row : rows)
    CHECK(close(row->end_s - row->start_s, n.collective_latency_s + 2.0 * (T - 1) / T * row->bytes / B));
}

TEST_CASE("FSDP all-gather volume: each rank receives (N−1)/N of every block's weights before it, "
          "alone α + (N−1)·shard / B on NVSwitch, the gathered copy is freed after the block",
          "[layouts][closed-form]") {
  const NodeSpec n = node("8xh100-sxm");
  const int N = 8;
  const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, N, 1, 1, true);
  const Workload full = layout("wan2.1-t2v-14b", 480, 832, 17, N, 1, 1, false);
  const ForwardCost c = forward_cost(w), cf = forward_cost(full);
  for (std::size_t b = 0; b < c.blocks.size(); ++b) {
    const StageCost& g = c.blocks[b].stages.front();
    REQUIRE(g.collective == CollectiveKind::all_gather);
    CHECK(g.all_to_all_buffer_bytes == Approx(cf.blocks[b].weight_bytes / N).epsilon(1e-12));
    CHECK(g.gather_alloc_bytes == Approx(cf.blocks[b].weight_bytes * (N - 1) / N).epsilon(1e-12));
  }
  const auto r = test::run(w, n, test::policy("no-offload"));
  // Flows of one all-gather: a ring, (N−1)·shard into every rank.
  MaxMinSolver solver;
  const Topology topology(n, solver);
  const auto rows = collective_rows(r, CollectiveKind::all_gather);
  REQUIRE(rows.size() == std::size_t(N * 2 * c.blocks.size()));  // ranks × steps × blocks
  const PlanOp& op = r.plan.ops[rows.front()->op_id];
  const auto flows = collective_flows(op, r.plan, n, topology);
  CHECK(flows.size() == std::size_t(N));
  double into_all = 0;
  for (const FlowSpec& f : flows) into_all += f.bytes;
  CHECK(into_all / N == Approx(cf.blocks[0].weight_bytes * (N - 1) / N).epsilon(1e-12));
  const double B = pair_rate(n, 0, 1);
  for (const TimelineRow* row : rows)
    if (row->start_s > 0 && row->rank == 0) {
      // Alone unless it overlaps the previous block's all-to-all (same comm lane: it cannot).
      CHECK(close(row->end_s - row->start_s, n.collective_latency_s + (N - 1) * row->bytes / B));
    }
  // Memory: weights resident are the shards; the peak holds at most two gathered blocks.
  const auto rf = test::run(full, n, test::policy("no-offload"));
  CHECK(r.plan.info.resident_weight_bytes < rf.plan.info.resident_weight_bytes / 4);
  CHECK(r.result.summary.peak_memory_bytes < rf.result.summary.peak_memory_bytes);
  CHECK(r.result.summary.peak_memory_bytes <=
        r.plan.info.resident_weight_bytes + r.plan.info.activation_bytes + 2 * cf.blocks[0].weight_bytes + 1);
}

TEST_CASE("FSDP with TP: FSDP shards each TP shard over the N/T ranks holding it, each rank receives "
          "(N/T−1)/(N/T) of its TP shard of every block, alone α + (N/T−1)·shard / B on NVSwitch",
          "[layouts][closed-form]") {
  // PyTorch 2-D parallelism: FSDP over the data/sequence-parallel ranks, TP within (model/workload.hpp
  // fsdp_degree). U 4 × TP 2 on 8 GPUs: two FSDP rings of 4 ranks, one per TP coordinate.
  const NodeSpec n = node("8xh100-sxm");
  const int U = 4, T = 2, F = U;  // F = N / T ranks per FSDP group
  const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, U, 1, T, true);
  const Workload tp_only = layout("wan2.1-t2v-14b", 480, 832, 17, U, 1, T, false);
  REQUIRE(fsdp_degree(w) == F);
  REQUIRE(fsdp_degree(tp_only) == 1);
  const ForwardCost c = forward_cost(w), ct = forward_cost(tp_only);
  for (std::size_t b = 0; b < c.blocks.size(); ++b) {
    const StageCost& g = c.blocks[b].stages.front();
    REQUIRE(g.collective == CollectiveKind::all_gather);
    CHECK(g.collective_ranks == F);
    CHECK(g.all_to_all_buffer_bytes == Approx(ct.blocks[b].weight_bytes / F).epsilon(1e-12));
    CHECK(g.gather_alloc_bytes == Approx(ct.blocks[b].weight_bytes * (F - 1) / F).epsilon(1e-12));
    CHECK(c.blocks[b].weight_bytes == Approx(ct.blocks[b].weight_bytes / F).epsilon(1e-12));
  }
  // The flows: one ring per TP coordinate, (F−1)·shard per flow, never across TP coordinates.
  const double S = c.blocks[0].stages.front().all_to_all_buffer_bytes;
  const auto flows = collective_peer_flows(w, CollectiveKind::all_gather, S, false);
  REQUIRE(flows.size() == std::size_t(gpus_used(w)));
  std::map<int, double> into;
  for (const PeerFlow& f : flows) {
    CHECK(rank_coordinates(w, f.src).tp == rank_coordinates(w, f.dst).tp);
    CHECK(f.bytes == Approx((F - 1) * S).epsilon(1e-12));
    into[f.dst] += f.bytes;
  }
  REQUIRE(into.size() == std::size_t(gpus_used(w)));
  for (const auto& [rank, bytes] : into) CHECK(bytes == Approx(ct.blocks[0].weight_bytes * (F - 1) / F).epsilon(1e-12));
  // Simulated: each all-gather alone takes α + (F−1)·shard / B; the rank holds 1/F of its TP shard.
  const auto r = test::run(w, n, test::policy("no-offload"));
  const auto rows = collective_rows(r, CollectiveKind::all_gather);
  REQUIRE(rows.size() == std::size_t(gpus_used(w) * 2 * c.blocks.size()));  // ranks × steps × blocks
  const double B = pair_rate(n, 0, 1);
  int checked = 0;
  for (const TimelineRow* row : rows)
    if (row->start_s > 0 && row->rank == 0) {
      CHECK(close(row->end_s - row->start_s, n.collective_latency_s + (F - 1) * row->bytes / B));
      ++checked;
    }
  CHECK(checked > 0);
  const auto rt = test::run(tp_only, n, test::policy("no-offload"));
  CHECK(r.plan.info.resident_weight_bytes < rt.plan.info.resident_weight_bytes / (F - 1));
  CHECK(r.result.summary.peak_memory_bytes < rt.result.summary.peak_memory_bytes);
}

TEST_CASE("ring vs direct: a ring K/V pass alone takes α + (R−1)·b / B, a direct all-to-all α + (P−1)/P·S / B, "
          "the attention overlaps the ring, the stage after it waits",
          "[layouts][closed-form]") {
  const NodeSpec n = node("8xh100-sxm");
  const double B = pair_rate(n, 0, 1);
  {
    const int R = 8;
    const auto r = test::run(layout("wan2.1-t2v-14b", 480, 832, 17, 1, R, 1, false), n, test::policy("no-offload"));
    const auto rows = collective_rows(r, CollectiveKind::ring_kv);
    REQUIRE(!rows.empty());
    int overlapped = 0;
    for (const TimelineRow* row : rows) {
      CHECK(close(row->end_s - row->start_s, n.collective_latency_s + (R - 1) * row->bytes / B));
      // The compute ops after the ring op on its rank: the attention starts before the ring ends
      // (or at its start), the next compute op only after both.
      const TimelineRow* attention = nullptr;
      const TimelineRow* after = nullptr;
      for (const TimelineRow& x : r.result.timeline.rows)
        if (x.rank == row->rank && x.kind == OpKind::compute && x.op_id > row->op_id) {
          if (!attention) attention = &x;
          else if (!after) after = &x;
        }
      REQUIRE(attention);
      REQUIRE(after);
      CHECK(attention->name.find("attention.self") != std::string::npos);
      overlapped += attention->start_s < row->end_s;
      CHECK(after->start_s >= std::max(attention->end_s, row->end_s));
    }
    CHECK(overlapped > 0);
  }
  {
    const int P = 8;
    const auto r = test::run(layout("wan2.1-t2v-14b", 480, 832, 17, P, 1, 1, false), n, test::policy("no-offload"));
    const auto rows = collective_rows(r, CollectiveKind::all_to_all);
    REQUIRE(!rows.empty());
    for (const TimelineRow* row : rows)
      CHECK(close(row->end_s - row->start_s, n.collective_latency_s + (P - 1) * (row->bytes / P) / B));
  }
}

TEST_CASE("parallel CFG on NVSwitch: the step is the one-group step plus one gather α + S / B, "
          "the denoise time halves against sequential CFG less that gather",
          "[layouts][closed-form]") {
  const NodeSpec n = node("8xh100-sxm");
  const auto none = test::run(layout("wan2.1-t2v-14b", 480, 832, 17, 4, 1, 1, false, CfgMode::none), n,
                              test::policy("no-offload"));
  const auto par = test::run(layout("wan2.1-t2v-14b", 480, 832, 17, 4, 1, 1, false, CfgMode::parallel), n,
                             test::policy("no-offload"));
  CHECK(par.plan.info.ranks == 8);
  CHECK(par.plan.info.forwards_per_step == 1);
  const auto gathers = collective_rows(par, CollectiveKind::cfg_gather);
  REQUIRE(gathers.size() == 2 * 8);  // steps × ranks
  const double gather_s = n.collective_latency_s + gathers.front()->bytes / pair_rate(n, 0, 4);
  for (const TimelineRow* g : gathers) CHECK(close(g->end_s - g->start_s, gather_s));
  CHECK(close(par.result.summary.step_time_s, none.result.summary.step_time_s + gather_s));
}

TEST_CASE("on the 8-GPU NVSwitch node no collective of any layout touches PCIe", "[layouts][invariant]") {
  const NodeSpec n = node("8xh100-sxm");
  for (const Workload& w : {layout("wan2.1-t2v-14b", 480, 832, 17, 2, 4, 1, false),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 1, 1, 8, false),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 8, 1, 1, true),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 2, 2, 1, false, CfgMode::parallel)}) {
    INFO("U " << w.ulysses_degree << " R " << w.ring_degree << " T " << w.tp_degree << " fsdp " << w.fsdp);
    const auto r = test::run(w, n, test::policy("no-offload"));
    REQUIRE(r.result.summary.collective_time_s > 0);
    for (const auto& l : r.result.timeline.links) {
      INFO(l.link);
      if (l.link.rfind("nvlink.", 0) != 0) CHECK(l.bytes_per_s == 0);
    }
  }
}

TEST_CASE("more bandwidth never slows a plan under ring, TP, FSDP and parallel CFG", "[layouts][invariant]") {
  auto doubled = [](NodeSpec n) {
    for (auto& l : n.links)
      for (double* v : {&l.a_to_b_bytes_per_s, &l.b_to_a_bytes_per_s, &l.duplex_bytes_per_s,
                        &l.a_to_b_under_duplex_bytes_per_s, &l.b_to_a_under_duplex_bytes_per_s})
        *v *= 2;
    n.copy_engine_bytes_per_s *= 2;
    n.collective_flow_bytes_per_s *= 2;
    n.p2p_flow_bytes_per_s *= 2;
    return n;
  };
  const NodeSpec n = node("8xh100-pcie");
  for (const Workload& w : {layout("wan2.1-t2v-14b", 480, 832, 17, 2, 2, 1, false),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 1, 1, 4, false),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 4, 1, 1, true),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 1, false, CfgMode::parallel)})
    for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) {
      INFO(policy << " U " << w.ulysses_degree << " R " << w.ring_degree << " T " << w.tp_degree << " fsdp " << w.fsdp);
      const auto r = test::run(w, n, test::policy(policy, 0.0));
      const auto fast = simulate(r.plan, doubled(n));
      CHECK(fast.summary.step_time_s <= r.result.summary.step_time_s * (1 + 1e-12));
    }
}

TEST_CASE("offload policies on layouts: every weight byte of a rank's blocks crosses its link once per step", "[layouts]") {
  const NodeSpec n = node("8xh100-pcie");
  for (const Workload& w : {layout("wan2.1-t2v-14b", 480, 832, 17, 1, 2, 2, false),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 1, true),
                            layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 2, true)}) {
    const ForwardCost c = forward_cost(w);
    double blocks = 0;
    for (const BlockCost& b : c.blocks) blocks += b.weight_bytes;
    for (const char* policy : {"layerwise", "chunkflow"}) {
      INFO(policy << " T " << w.tp_degree << " fsdp " << w.fsdp);
      const auto r = test::run(w, n, test::policy(policy, 0.0));
      CHECK(r.plan.info.offloaded_bytes_per_step == Approx(blocks).epsilon(1e-9));
      CHECK(r.result.summary.h2d_bytes == Approx(blocks).epsilon(1e-9));
    }
  }
}

TEST_CASE("invalid layouts exit with an error naming the option", "[layouts][errors]") {
  ScenarioOptions o;  // default: Wan2.1-14B on 2xh100-pcie, Ulysses 2
  o.ring = 2;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--ring: expected ulysses × ring × tp") &&
                                             Catch::Contains("2 × 2 × 1 × 1 = 4"));
  o = {};
  o.cfg = "parallel";
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--cfg: expected ulysses × ring × tp"));
  o = {};
  o.node = "8xh100-sxm";
  o.tp = 3;  // 40 heads
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--tp: expected ulysses × tp to divide the 40 heads"));
  o = {};  // FSDP with TP is a valid layout; on too few GPUs it fails on the product, naming --tp
  o.tp = 2;
  o.fsdp = true;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--tp: expected ulysses × ring × tp"));
  o = {};
  o.node = "1xh100-sxm";  // pcie-proxy: one GPU stands in for a Ulysses group
  o.ring = 2;
  o.ulysses = 1;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--ring: ") && Catch::Contains("pcie-proxy"));
  o = {};
  o.tp = 0;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::StartsWith("--tp: "));
  o = {};
  o.node = "8xh100-sxm";
  o.ulysses = 2;
  o.ring = 2;
  o.tp = 2;
  const Scenario s = resolve_scenario(o);
  CHECK(gpus_used(s.workload) == 8);
}

TEST_CASE("every built-in node simulates every model under ring, USP, parallel CFG, TP and FSDP where shapes allow",
          "[layouts][node]") {
  struct Case {
    const char* model;
    int64_t h, w, frames;
  };
  const Case cases[] = {{"flux.1-dev", 512, 512, 1},
                        {"wan2.1-t2v-14b", 480, 832, 17},
                        {"wan2.1-t2v-1.3b", 480, 832, 17},
                        {"hunyuanvideo", 544, 960, 33}};
  struct LayoutRun {
    std::string node_id;
    const char* model;
    Workload workload;
    const char* policy;
  };
  std::vector<LayoutRun> runs;  // every (node, model, layout, policy), listed first, then run
  for (const std::string& id : node_ids()) {
    const NodeSpec n = node(id);
    if (n.gpu_count < 2 || n.collective == CollectiveBackend::pcie_proxy) continue;
    const int G = n.gpu_count >= 8 ? 8 : n.gpu_count >= 4 ? 4 : 2;
    for (const Case& c : cases) {
      const DitArchitecture& a = architecture(c.model);
      auto divides = [&](int u, int t) { return a.heads % (u * t) == 0 && a.hidden % t == 0 && a.ffn % t == 0; };
      std::vector<Workload> layouts = {layout(c.model, c.h, c.w, c.frames, 1, G, 1, false)};  // ring
      if (G >= 4 && divides(2, 1)) layouts.push_back(layout(c.model, c.h, c.w, c.frames, 2, G / 2, 1, false));  // USP
      for (int u = G / 2; u >= 1; --u)
        if (divides(u, 1)) {
          layouts.push_back(layout(c.model, c.h, c.w, c.frames, u, 1, 1, false, CfgMode::parallel));
          break;
        }
      for (int t = G; t >= 2; t /= 2)
        if (divides(1, t)) {
          layouts.push_back(layout(c.model, c.h, c.w, c.frames, 1, 1, t, false));
          break;
        }
      for (int u = G; u >= 1; --u)
        if (divides(u, 1)) {
          layouts.push_back(layout(c.model, c.h, c.w, c.frames, u, 1, 1, true));
          break;
        }
      for (int u = G / 2; u >= 1; --u)  // FSDP with TP 2: FSDP over the u ranks of each TP shard
        if (divides(u, 2)) {
          layouts.push_back(layout(c.model, c.h, c.w, c.frames, u, 1, 2, true));
          break;
        }
      for (const Workload& w : layouts)
        for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) runs.push_back({id, c.model, w, policy});
    }
  }
  CHECK(runs.size() > 100);
  // Every case in the normal run; an even sample under the sanitizers (tests/property_sample.hpp).
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!test::property_case_runs(int(i), int(runs.size()))) continue;
    const LayoutRun& c = runs[i];
    const Workload& w = c.workload;
    INFO(c.node_id << " " << c.model << " " << c.policy << " U " << w.ulysses_degree << " R " << w.ring_degree << " T "
                   << w.tp_degree << " fsdp " << w.fsdp << " cfg " << cfg_mode_name(w.cfg));
    const auto r = test::run(w, node(c.node_id), test::policy(c.policy, 0.0));
    CHECK(std::isfinite(r.result.summary.step_time_s));
    CHECK(r.result.summary.step_time_s > 0);
    CHECK(r.result.summary.collective_time_s > 0);
    CHECK(r.plan.info.ranks == gpus_used(w));
  }
}
