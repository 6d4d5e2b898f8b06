// The step-time lower bound (sim/bound.hpp, issue 8 §1): no simulated step beats it on random
// configurations, and no-offload on one GPU (no copies, no collectives) sits on it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <limits>
#include <random>
#include <sstream>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "property_sample.hpp"
#include "runtime/scenario.hpp"
#include "sim/bound.hpp"
#include "sim/sort_runs.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::test;

namespace {

/// Relative slack of the bound property: floating-point rounding only.
constexpr double kBoundSlack = 1e-9;

struct Shape {
  const char* model;
  int64_t h, w, frames;
};

/// One random configuration of a property test, and its description for INFO.
struct RandomConfig {
  Workload workload;
  NodeSpec node;
  PolicyConfig policy;
  std::string text;
};

/// The 500-configuration test's draw: five shapes, 2xh100-pcie or 1xh100-sxm, Ulysses 1-2, any
/// policy, chunk, resident fraction, lookahead, 2-3 steps, a third of them under a budget between
/// the activations and no-offload's peak.
RandomConfig draw_config(std::mt19937& rng) {
  static const std::vector<Shape> shapes = {{"flux.1-dev", 512, 512, 1},       {"flux.1-dev", 1024, 1024, 1},
                                            {"wan2.1-t2v-1.3b", 256, 256, 5},   {"wan2.1-t2v-14b", 256, 448, 5},
                                            {"hunyuanvideo", 256, 256, 5}};
  static const std::vector<std::string> nodes = {"2xh100-pcie", "1xh100-sxm"};
  static const std::vector<double> chunks = {2, 8, 32, 128, 512};
  const auto policies = policy_names();
  const Shape& sh = shapes[rng() % shapes.size()];
  const NodeSpec n = node(nodes[rng() % nodes.size()]);
  const int P = 1 + int(rng() % 2);
  PolicyConfig p = policy(policies[rng() % policies.size()]);
  p.chunk_bytes = chunks[rng() % chunks.size()] * kMiB;
  if (rng() % 4 != 0) p.resident_fraction = double(rng() % 11) / 10.0;
  p.lookahead = 1 + int(rng() % 3);
  p.steps = 2 + int(rng() % 2);
  const Workload w = workload(sh.model, sh.h, sh.w, sh.frames, P);
  if (rng() % 3 == 0) {  // a budget between the activations and no-offload's peak
    const ForwardCost cost = forward_cost(w);
    const double lo = cost.activation_bytes + cost.non_block_weight_bytes, hi = lo + cost.weight_bytes;
    p.memory_budget_bytes = lo + std::uniform_real_distribution<double>(0.2, 1.0)(rng) * (hi - lo);
  }
  std::ostringstream text;
  text << sh.model << " " << sh.h << "x" << sh.w << "x" << sh.frames << " P=" << P << " on " << n.id << ", " << p.policy
       << " chunk " << p.chunk_bytes / kMiB << " MiB, R "
       << (p.resident_fraction ? std::to_string(*p.resident_fraction) : "auto") << ", L " << p.lookahead << ", steps "
       << p.steps << ", budget " << p.memory_budget_bytes.value_or(0) / kGiB << " GiB";
  return {w, n, p, text.str()};
}

/// The parallel-layout test's draw: three shapes on 8xh100-pcie, 8xh100-sxm or 4xrtx4090, Ulysses,
/// ring and TP 1-2, FSDP in a third, parallel CFG in a third, any policy, chunk, fraction, lookahead.
RandomConfig draw_layout_config(std::mt19937& rng) {
  static const std::vector<Shape> shapes = {{"flux.1-dev", 512, 512, 1}, {"wan2.1-t2v-1.3b", 256, 256, 5},
                                            {"wan2.1-t2v-14b", 256, 448, 5}};
  static const std::vector<std::string> nodes = {"8xh100-pcie", "8xh100-sxm", "4xrtx4090"};
  const auto policies = policy_names();
  const Shape& sh = shapes[rng() % shapes.size()];
  const NodeSpec n = node(nodes[rng() % nodes.size()]);
  Workload w = workload(sh.model, sh.h, sh.w, sh.frames, 1 + int(rng() % 2));
  w.ring_degree = 1 + int(rng() % 2);
  w.tp_degree = 1 + int(rng() % 2);
  w.fsdp = rng() % 3 == 0;
  if (rng() % 3 == 0) w.cfg = CfgMode::parallel;
  PolicyConfig p = policy(policies[rng() % policies.size()]);
  p.chunk_bytes = double(8 << (rng() % 5)) * kMiB;
  if (rng() % 4 != 0) p.resident_fraction = double(rng() % 11) / 10.0;
  p.lookahead = 1 + int(rng() % 2);
  std::ostringstream text;
  text << sh.model << " " << layout_text(w) << " on " << n.id << ", " << p.policy << " chunk " << p.chunk_bytes / kMiB
       << " MiB, R " << (p.resident_fraction ? std::to_string(*p.resident_fraction) : "auto") << ", L " << p.lookahead;
  return {w, n, p, text.str()};
}

}  // namespace

TEST_CASE("no simulated step time is below its bound on 500 random configurations", "[bound]") {
  std::mt19937 rng(20261123);
  // 500 in the normal run; fewer under the sanitizers (tests/property_sample.hpp).
  const int wanted = property_configs(500);
  int simulated = 0, skipped = 0;
  for (int i = 0; simulated < wanted && i < 1000; ++i) {
    const RandomConfig rc = draw_config(rng);
    const Workload& w = rc.workload;
    const NodeSpec& n = rc.node;
    const PolicyConfig& p = rc.policy;
    INFO("config " << i << ": " << rc.text);
    StepPlan plan;
    try {
      plan = build_plan(w, n, p);
    } catch (const InputError& e) {
      REQUIRE(e.field() == "/policy/memory_budget_gib");  // only a budget too small may refuse a plan
      ++skipped;
      continue;
    }
    validate(plan);
    const SimResult r = simulate(plan, n);
    CHECK(r.summary.step_time_s >= r.bound.bound_step_time_s * (1 - kBoundSlack));
    CHECK(r.bound.critical_path_s > 0);
    // The plan-only bound (no cumulative terms) is a bound too, and never above the full one.
    const StepBound plan_only = step_bound(plan, n);
    CHECK(plan_only.bound_step_time_s <= r.bound.bound_step_time_s * (1 + kBoundSlack));
    // Budget adherence: peak memory never exceeds the budget the plan was made for.
    if (p.memory_budget_bytes) CHECK(r.summary.peak_memory_bytes <= *p.memory_budget_bytes * (1 + 1e-12));
    ++simulated;
  }
  CHECK(simulated == wanted);
  INFO("skipped (budget too small) " << skipped);
}

TEST_CASE("no-offload on one GPU equals its bound within 1 %", "[bound]") {
  for (const Shape& sh : {Shape{"flux.1-dev", 1024, 1024, 1}, Shape{"wan2.1-t2v-14b", 480, 832, 17},
                          Shape{"hunyuanvideo", 544, 960, 33}}) {
    const auto r = run(workload(sh.model, sh.h, sh.w, sh.frames, 1), node("1xh100-sxm"), policy("no-offload"));
    INFO(sh.model);
    CHECK(r.result.bound.binding == "critical-path");
    CHECK(r.result.summary.step_time_s == Approx(r.result.bound.bound_step_time_s).epsilon(0.01));
  }
}

TEST_CASE("the link term is bytes over capacity: layerwise at R = 0 on one GPU", "[bound]") {
  // One GPU, no collectives, whole blocks through 2 slots: the H2D direction must carry every
  // offloaded byte of both steps by E(1), so step ≥ 2·W / C − E(0) and, per step, (W − 2 slots) / C.
  const NodeSpec n = node("1xh100-sxm");
  const auto r = run(workload("flux.1-dev", 512, 512, 1, 1), n, policy("layerwise", 0.0));
  const double W = r.plan.info.offloaded_bytes_per_step;
  const double C = n.host_link(0).a_to_b_bytes_per_s;
  const double carry = r.plan.info.slot_count * r.plan.info.slot_bytes;
  const StepBound plan_only = step_bound(r.plan, n);
  CHECK(plan_only.link_volume_s == Approx((W - carry) / C).epsilon(1e-9));
  CHECK(r.result.bound.link_volume_s >= plan_only.link_volume_s);
  CHECK(plan_only.link_s >= plan_only.link_volume_s);
}

TEST_CASE("the release form sees the wrap-around: layerwise at R = 0 on one GPU", "[bound]") {
  // Whole blocks through 2 slots: block 0's copy of the last step may cross before E(s−1), but the
  // copy of block 1 waits for the slot that the anchor (block N−1 of step s−1) frees, and every
  // later copy waits for one the step's own compute frees. So the copies of blocks 1..N−1 cross
  // after E(s−1), and the last of them is followed by block N−1's compute:
  //   step ≥ (W − w_0) / C + T_comp(N−1),
  // which is above the volume form (W − 2 slots) / C by at least the last block's compute.
  const NodeSpec n = node("1xh100-sxm");
  const auto r = run(workload("flux.1-dev", 512, 512, 1, 1), n, policy("layerwise", 0.0));
  const StepPlan& plan = r.plan;
  const int s = plan.info.steps - 1;
  REQUIRE(s > 0);
  const double W = plan.info.offloaded_bytes_per_step;
  const double C = n.host_link(0).a_to_b_bytes_per_s;
  double w0 = 0;
  for (const PlanOp& op : plan.ops)
    if (op.step == s && op.kind == OpKind::h2d && op.block == 0) w0 += op.bytes;
  const int last_block = int(plan.cost.blocks.size()) - 1;
  const double last_compute_s = block_compute_time_s(plan.cost.blocks[std::size_t(last_block)], n);
  const StepBound plan_only = step_bound(plan, n);
  CHECK(plan_only.link_s >= ((W - w0) / C + last_compute_s) * (1 - kBoundSlack));
  CHECK(plan_only.link_s > plan_only.link_volume_s);
  CHECK(r.result.summary.step_time_s >= r.result.bound.bound_step_time_s * (1 - kBoundSlack));
}

TEST_CASE("no simulated step time is below its bound on 150 random parallel layouts (ring, TP, FSDP, parallel CFG)",
          "[bound][layouts]") {
  // Ring attention's K/V pass overlaps the attention and FSDP's all-gathers run ahead of the
  // compute: a bound that sums every collective into the critical path is not one (seen: layerwise
  // at 556.3 ms under a 571.7 ms "bound", Wan-14B 33f, Ulysses 2 × ring 2 on 8xh100-pcie).
  std::mt19937 rng(20261124);
  int simulated = 0;
  for (int i = 0; simulated < 150 && i < 2000; ++i) {
    const RandomConfig rc = draw_layout_config(rng);
    const Workload& w = rc.workload;
    const NodeSpec& n = rc.node;
    const PolicyConfig& p = rc.policy;
    INFO("config " << i << ": " << rc.text);
    StepPlan plan;
    try {
      plan = build_plan(w, n, p);
    } catch (const InputError&) {
      continue;  // a layout this node or shape cannot hold (GPU count, heads, sequence)
    }
    validate(plan);
    const SimResult r = simulate(plan, n);
    CHECK(r.summary.step_time_s >= r.bound.bound_step_time_s * (1 - kBoundSlack));
    CHECK(r.bound.critical_path_s > 0);
    ++simulated;
  }
  CHECK(simulated == 150);
}

TEST_CASE("the duplex term (f) is the least a + b + c of its linear program, and its closed forms", "[bound]") {
  // duplex_link_s(W, W̄, C, C_u, C̄, C̄_u) = min a + b + c over a, b, c ≥ 0 with C_u·a + C·b ≥ W and
  // C̄_u·a + C̄·c ≥ W̄ (sim/bound.hpp (f)). Closed forms: nothing on the reverse → W / C; no
  // under-duplex penalty (C_u = C, C̄_u = C̄) → both directions overlap fully, max(W / C, W̄ / C̄).
  const double C = 56e9, Cu = 52.8e9, Cr = 56e9, Cur = 34.4e9;
  CHECK(duplex_link_s(9e9, 0, C, Cu, Cr, Cur) == Approx(9e9 / C).epsilon(1e-12));
  CHECK(duplex_link_s(9e9, 2e9, C, C, Cr, Cr) == Approx(9e9 / C).epsilon(1e-12));
  CHECK(duplex_link_s(1e9, 7e9, C, C, Cr, Cr) == Approx(7e9 / Cr).epsilon(1e-12));
  // Against a brute-force search of the program on random inputs: b and c follow from a, and a is
  // scanned on a grid of step h = a_max / 20000; the objective's slope in a lies in [−1, 1] (it is
  // 1 − C_u/C·[b > 0] − C̄_u/C̄·[c > 0] with C_u ≤ C, C̄_u ≤ C̄), so the grid's best is within h of
  // the minimum.
  std::mt19937 rng(20261125);
  std::uniform_real_distribution<double> bytes(0, 20e9), cap(10e9, 60e9), frac(0.3, 1.0);
  for (int i = 0; i < 200; ++i) {
    const double W = bytes(rng), Wr = bytes(rng), c = cap(rng), cr = cap(rng);
    const double cu = c * frac(rng), cur = cr * frac(rng);
    const double lp = duplex_link_s(W, Wr, c, cu, cr, cur);
    INFO("W " << W << " W̄ " << Wr << " C " << c << " C_u " << cu << " C̄ " << cr << " C̄_u " << cur);
    const double a_max = std::max(W / cu, Wr / cur);
    double brute = std::numeric_limits<double>::infinity();
    for (int k = 0; k <= 20000; ++k) {
      const double a = a_max * k / 20000;
      brute = std::min(brute, a + std::max(0.0, (W - cu * a) / c) + std::max(0.0, (Wr - cur * a) / cr));
    }
    CHECK(lp <= brute * (1 + 1e-12));
    CHECK(lp >= brute - a_max / 20000 * (1 + 1e-9));
    CHECK(lp >= std::max(W / c, Wr / cr) * (1 - 1e-12));  // never below (b)'s volume form
  }
}

TEST_CASE("the duplex term binds where a collective crosses the prefetch link both ways (Ulysses 2 x ring 2)",
          "[bound][layouts]") {
  // The ring's K/V passes and the all-to-alls cross the PCIe switch uplink both ways while the two
  // GPUs under it prefetch through it: the uplink runs at its under-duplex capacity then, so the
  // bound is above bytes / capacity (it was 623.49 ms by (e), 633.04 ms with (f), for a 656.08 ms
  // step at R = 0.47, 64 MiB chunks, 13.56 GiB: README "Policies at equal memory").
  const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/layouts/wan14b-480p-33f-u2-ring2-8xh100-pcie.json");
  PolicyConfig p = policy("chunkflow", 0.47, 64);
  p.memory_budget_bytes = 13.56 * kGiB;
  const auto r = run(s.workload, s.node, p);
  const StepBound& b = r.result.bound;
  INFO("link " << b.link_s << " s on " << b.link_resource << ", duplex " << b.link_duplex_s << " s, volume "
               << b.link_volume_s << " s");
  CHECK(b.link_duplex_s > b.link_volume_s * 1.01);
  CHECK(b.link_s == b.link_duplex_s);
  CHECK(r.result.summary.step_time_s >= b.bound_step_time_s * (1 - kBoundSlack));
}

TEST_CASE("step_bound's shortcuts give the exhaustive StepBound field for field on random configurations", "[bound]") {
  // The default step_bound skips candidates r* that cannot give the smallest bound and resources
  // whose (e) term is provably below the largest (sim/bound.hpp set_step_bound_exhaustive); the
  // result must be bit-identical to evaluating every one. Both generators above (1-2 GPUs, and the
  // 4-8 GPU layouts whose PCIe switches have under-duplex capacities, term (f)), at E(s−1) absent
  // (plan only), 0, and a random multiple of the plan-only bound (cumulative terms (d) active).
  auto check_same = [](const StepPlan& plan, const NodeSpec& n, double previous_step_end_s) {
    set_step_bound_exhaustive(true);
    const StepBound ref = step_bound(plan, n, previous_step_end_s);
    set_step_bound_exhaustive(false);
    const StepBound fast = step_bound(plan, n, previous_step_end_s);
    INFO("E(s-1) " << previous_step_end_s << " s, reference bound " << ref.bound_step_time_s << " s on "
                   << ref.link_resource << ", fast " << fast.bound_step_time_s << " s on " << fast.link_resource);
    CHECK(fast.bound_step_time_s == ref.bound_step_time_s);
    CHECK(fast.critical_path_s == ref.critical_path_s);
    CHECK(fast.link_s == ref.link_s);
    CHECK(fast.link_volume_s == ref.link_volume_s);
    CHECK(fast.link_resource == ref.link_resource);
    CHECK(fast.link_duplex_s == ref.link_duplex_s);
    CHECK(fast.copy_lane_s == ref.copy_lane_s);
    CHECK(fast.chain_lane_s == ref.chain_lane_s);
    CHECK(fast.binding == ref.binding);
  };
  const int wanted = property_configs(500), wanted_layouts = property_configs(150);
  std::mt19937 rng(20261123), rng_layouts(20261124), rng_end(20261126);
  int checked = 0, checked_layouts = 0;
  for (int i = 0; i < 2000 && (checked < wanted || checked_layouts < wanted_layouts); ++i) {
    const bool layouts = checked >= wanted;
    const RandomConfig rc = layouts ? draw_layout_config(rng_layouts) : draw_config(rng);
    INFO("config " << i << ": " << rc.text);
    StepPlan plan;
    try {
      plan = build_plan(rc.workload, rc.node, rc.policy);
    } catch (const InputError&) {
      continue;  // a budget too small or a layout this node or shape cannot hold
    }
    validate(plan);
    set_step_bound_exhaustive(true);
    const double plan_only_s = step_bound(plan, rc.node).bound_step_time_s;
    set_step_bound_exhaustive(false);
    const double end_s = (plan.info.steps - 1) * plan_only_s * std::uniform_real_distribution<double>(0.5, 1.5)(rng_end);
    for (double previous_step_end_s : {-1.0, 0.0, end_s}) check_same(plan, rc.node, previous_step_end_s);
    ++(layouts ? checked_layouts : checked);
  }
  CHECK(checked == wanted);
  CHECK(checked_layouts == wanted_layouts);
}

TEST_CASE("the chain-lane term (h) binds on FLUX 1024² near 60 % of no-offload's memory, with and without capped copies",
          "[bound]") {
  // FLUX 1024², Ulysses 2, chunkflow in 4 MiB chunks with R auto, at budgets where the copy lane
  // and the critical path are close (README "Policies at equal memory"'s 70 % is 15.66 GiB):
  //  - 2xh100-pcie at 13.0 GiB: the plan's copies are uncapped; beside each all-to-all they take
  //    their weighted share of the H2D direction (model/routes.hpp sm_read_weight) and stretch it,
  //    and the lane cannot move its bytes outside the all-to-alls in the critical path's time.
  //  - hw-flux-1024 (one H100 SXM) at 15.0 GiB: the plan shares windows at a capped rate, and (h)
  //    binds, so the capped copies' sharing rule is exercised too.
  // (Before SM reads shared by weight, 15.0 GiB on hw-flux-1024 in 16 MiB chunks bound uncapped and
  // 15.2 GiB capped; now a 0.25 GiB grid of 10–16.75 GiB in 2–64 MiB chunks finds (h) binding at 25
  // points on the two nodes, in 4–64 MiB chunks, none at 2 MiB.)
  struct Case {
    const char* scenario;
    double budget_gib;
    bool capped;
  };
  for (const Case& c : {Case{"flux-1024-u2-2xh100-pcie", 13.0, false}, Case{"hw-flux-1024-u2-1xh100-sxm", 15.0, true}}) {
    const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + c.scenario + ".json");
    PolicyConfig p = policy("chunkflow", std::nullopt, 4);
    p.memory_budget_bytes = c.budget_gib * kGiB;
    const auto r = run(s.workload, s.node, p);
    const StepBound& b = r.result.bound;
    bool capped = false;
    for (const PlanOp& op : r.plan.ops) capped = capped || (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0);
    INFO(c.scenario << " at " << c.budget_gib << " GiB: step " << r.result.summary.step_time_s << " s, critical path "
                    << b.critical_path_s << " s, link " << b.link_s << " s, copy lane " << b.copy_lane_s << " s, chain-lane "
                    << b.chain_lane_s << " s, capped copies " << capped);
    CHECK(capped == c.capped);
    CHECK(b.binding == "chain-lane");
    CHECK(b.chain_lane_s > std::max({b.critical_path_s, b.link_s, b.copy_lane_s}));
    CHECK(r.result.summary.step_time_s >= b.bound_step_time_s * (1 - kBoundSlack));
    // The plan-only bound has (h) too (it reads the plan alone).
    CHECK(step_bound(r.plan, s.node).chain_lane_s == b.chain_lane_s);
  }
}

TEST_CASE("no simulated step time is below its bound where (h) applies: budgets, shares, caps, shared uplinks, "
          "ring/TP/FSDP",
          "[bound][layouts]") {
  // (h) rests on the executor's sharing rule (sim/bound.hpp): these draws put chunkflow's capped
  // (shared) and uncapped copies beside all-to-alls, ring K/V passes, all-reduces and FSDP
  // all-gathers (off the chain where they run ahead), on one GPU, two PCIe GPUs, and GPUs two to a
  // switch uplink (where (h) takes only each GPU's own link), at budgets between the activations
  // and no-offload's peak.
  struct Layout {
    const char* node;
    int ulysses, ring, tp;
    bool fsdp;
  };
  // Even draws: FLUX 1024² on one or two GPUs in 4 MiB chunks at 0.56–0.66 of the weights above
  // the activations, where the copy lane and the critical path are close ((h) binds there on a
  // 0.25 GiB grid of chunkflow plans, R auto: at 13.0 and 13.25 GiB on 2xh100-pcie, at 5 of the
  // points from 12.0 to 16.75 on 1xh100-sxm; other chunk sizes: the case above); odd draws: the parallel
  // layouts, on small shapes.
  static const std::vector<Layout> near = {{"1xh100-sxm", 2, 1, 1, false}, {"2xh100-pcie", 2, 1, 1, false}};
  static const std::vector<Layout> layouts = {{"8xh100-pcie", 2, 1, 1, false}, {"8xh100-pcie", 4, 1, 1, false},
                                              {"8xh100-pcie", 2, 2, 1, false}, {"8xh100-pcie", 2, 1, 2, false},
                                              {"8xh100-pcie", 2, 1, 1, true},  {"4xrtx4090", 2, 1, 1, false},
                                              {"2xh100-pcie", 2, 1, 1, false}};
  static const std::vector<Shape> shapes = {{"flux.1-dev", 512, 512, 1}, {"wan2.1-t2v-1.3b", 256, 256, 5}};
  static const std::vector<double> chunks = {4, 16, 64};
  const auto policies = policy_names();
  std::mt19937 rng(20261127);
  const int wanted = property_configs(100);
  int simulated = 0, evaluated = 0, binding = 0, binding_capped = 0;
  for (int i = 0; simulated < wanted && i < 1000; ++i) {
    const bool close = i % 2 == 0;
    const Layout& l = close ? near[rng() % near.size()] : layouts[rng() % layouts.size()];
    const Shape sh = close ? Shape{"flux.1-dev", 1024, 1024, 1} : shapes[rng() % shapes.size()];
    const NodeSpec n = node(l.node);
    const Workload w = layout(sh.model, sh.h, sh.w, sh.frames, l.ulysses, l.ring, l.tp, l.fsdp);
    PolicyConfig p = policy(rng() % 4 == 0 ? policies[rng() % policies.size()] : std::string("chunkflow"));
    p.chunk_bytes = (close ? 4.0 : chunks[rng() % chunks.size()]) * kMiB;
    if (rng() % 2 == 0) p.resident_fraction = double(rng() % 11) / 10.0;
    p.steps = 2 + int(rng() % 2);
    const ForwardCost cost = forward_cost(w);
    const double lo = cost.activation_bytes + cost.non_block_weight_bytes, hi = lo + cost.weight_bytes;
    p.memory_budget_bytes = lo + std::uniform_real_distribution<double>(close ? 0.56 : 0.25, close ? 0.66 : 0.9)(rng) * (hi - lo);
    INFO("config " << i << ": " << sh.model << " " << layout_text(w) << " on " << n.id << ", " << p.policy << " chunk "
                   << p.chunk_bytes / kMiB << " MiB, budget " << *p.memory_budget_bytes / kGiB << " GiB, steps " << p.steps);
    StepPlan plan;
    try {
      plan = build_plan(w, n, p);
    } catch (const InputError&) {
      continue;  // a budget too small or a layout this node or shape cannot hold
    }
    validate(plan);
    const SimResult r = simulate(plan, n);
    const StepBound& b = r.bound;
    INFO("step " << r.summary.step_time_s << " s, bound " << b.bound_step_time_s << " s (" << b.binding << "), chain-lane "
                 << b.chain_lane_s << " s");
    CHECK(r.summary.step_time_s >= b.bound_step_time_s * (1 - kBoundSlack));
    if (b.chain_lane_s > 0) ++evaluated;
    if (b.binding == "chain-lane") {
      ++binding;
      for (const PlanOp& op : plan.ops)
        if (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0) {
          ++binding_capped;
          break;
        }
    }
    ++simulated;
  }
  CHECK(simulated == wanted);
  // The draws exercise (h): evaluated in most, binding in some, some of those with capped copies.
  INFO("(h) evaluated " << evaluated << ", binding " << binding << ", binding with capped copies " << binding_capped);
  CHECK(evaluated > wanted / 2);
  // (h) binds in 5 of the 100 draws, 1 with capped copies; a sampled run (CHUNKFLOW_PROPERTY_CONFIGS, scripts/sanitize.sh:
  // the first 20 draws) need not reach them, so only the full run asserts that it binds. The case
  // before this one pins a capped and an uncapped one.
  if (wanted == 100) CHECK(binding > 0);
}

TEST_CASE("sort_by_runs leaves what std::sort leaves under a total order, on random lists of runs", "[bound]") {
  // Lists built as step_bound's are: a few runs, ascending or descending, with repeats (a
  // collective's flows crossing one resource give equal items) and values shared across runs.
  struct Entry {
    int key, field;
  };
  auto less = [](const Entry& x, const Entry& y) { return x.key != y.key ? x.key > y.key : x.field < y.field; };
  std::mt19937 rng(20261127);
  std::vector<Entry> buffer;
  std::vector<std::size_t> edges;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Entry> v;
    const int runs = std::uniform_int_distribution<int>(0, 9)(rng);
    for (int r = 0; r < runs; ++r) {
      const int length = std::uniform_int_distribution<int>(0, 40)(rng);
      const bool up = rng() % 2 == 0;
      int key = std::uniform_int_distribution<int>(0, 50)(rng);
      for (int i = 0; i < length; ++i) {
        v.push_back({key, int(rng() % 3)});
        if (rng() % 4 != 0) key += up ? int(rng() % 3) : -int(rng() % 3);  // repeats and steps
      }
    }
    if (trial % 10 == 0) std::shuffle(v.begin(), v.end(), rng);  // no runs to speak of
    std::vector<Entry> expected = v;
    std::sort(expected.begin(), expected.end(), less);
    sort_by_runs(v, buffer, edges, less);
    REQUIRE(v.size() == expected.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      INFO("trial " << trial << ", entry " << i);
      REQUIRE(v[i].key == expected[i].key);
      REQUIRE(v[i].field == expected[i].field);
    }
  }
}
