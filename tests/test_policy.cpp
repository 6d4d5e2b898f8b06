// Offload policies → StepPlan (issues 2 §3, 8 §2): plans of every registered policy validate,
// chunks cover exactly the offloaded bytes on tensor edges, compute waits only for its own weights,
// the simulator executes copy rate caps, chunkflow's windows follow its decisions, auto residency
// follows its stated rule, chunkflow at a budget is no slower than the baselines at that budget,
// and the validator rejects broken plans.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <random>

#include "model/link_model.hpp"

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "runtime/plan_builder.hpp"
#include "runtime/scenario.hpp"
#include "sim/grid.hpp"
#include "sim/tune.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::test;

TEST_CASE("every registered policy gives a valid plan for every scenario file", "[policy]") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    const Scenario s = load_scenario(entry.path().string());
    std::vector<PolicyConfig> configs;
    for (const auto& name : policy_names()) configs.push_back(policy(name, 0.3, 64, 2));
    configs.push_back(policy("chunkflow", std::nullopt, 64));
    for (const auto& p : configs) {
      INFO(entry.path().filename().string() << " " << p.policy);
      const StepPlan plan = build_plan(s.workload, s.node, p);
      CHECK_NOTHROW(validate(plan));
      CHECK(plan.info.policy == p.policy);
    }
  }
}

TEST_CASE("the registry: names, baselines, unknown names", "[policy]") {
  const auto names = policy_names();
  CHECK(names.front() == "no-offload");
  CHECK(std::find(names.begin(), names.end(), "layerwise-comm-aware") != names.end());
  for (const auto& n : names) CHECK(find_policy(n).name() == n);
  CHECK(is_baseline_policy("layerwise"));
  CHECK(is_baseline_policy("layerwise-comm-aware"));
  CHECK_FALSE(is_baseline_policy("chunkflow"));
  CHECK_THROWS_AS(find_policy("fastest"), InputError);
}

TEST_CASE("chunks of a step cover exactly the offloaded bytes, cut on tensor edges", "[policy]") {
  const NodeSpec pcie = node("2xh100-pcie");
  const auto w = workload("flux.1-dev", 1024, 1024, 1, 2);
  for (double r : {0.0, 0.37, 0.8}) {
    const StepPlan plan = build_plan(w, pcie, policy("chunkflow", r, 24));
    double block_bytes = 0, largest_unit = 0;
    const ProgramLayout layout(plan.cost);
    for (const auto& b : plan.cost.blocks) block_bytes += b.weight_bytes;
    for (int b = 0; b < int(plan.cost.blocks.size()); ++b)
      for (const auto& [lo, hi] : layout.units(b)) largest_unit = std::max(largest_unit, (hi - lo) / plan.cost.blocks[b].weight_bytes);
    double h2d = 0;
    for (const auto& op : plan.ops)
      if (op.kind == OpKind::h2d && op.rank == 0 && op.step == 1) {
        h2d += op.bytes;
        CHECK(op.bytes <= 24 * kMiB);
      }
    INFO("R=" << r);
    // Residency moves in whole tensors: the fraction kept is within one tensor of the one asked.
    CHECK(std::abs(plan.info.resident_fraction - r) <= largest_unit);
    CHECK(h2d == Approx((1 - plan.info.resident_fraction) * block_bytes).epsilon(1e-9));
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

TEST_CASE("op names: s<step>.b<block, two digits at least>.<stage>, copies .h2d.c<chunk> (layerwise .h2d)", "[policy]") {
  // The plan builder formats names by hand (runtime/plan_builder.cpp): the same text as
  // std::to_string gives, for blocks past 99 and steps past 9 too.
  const auto w = workload("flux.1-dev", 512, 512, 1, 2);
  for (const std::string name : {"chunkflow", "layerwise"}) {
    PolicyConfig p = policy(name, 0.25, 16);
    p.steps = 11;
    const StepPlan plan = build_plan(w, node("2xh100-pcie"), p);
    int copies = 0;
    for (const PlanOp& op : plan.ops) {
      std::string expected = "s" + std::to_string(op.step) + (op.block < 10 ? ".b0" : ".b") + std::to_string(op.block) + ".";
      if (op.kind == OpKind::h2d) {
        expected += name == "layerwise" ? std::string("h2d") : "h2d.c" + std::to_string(op.chunk);
        ++copies;
      } else {
        expected += plan.cost.blocks[std::size_t(op.block)].stages[std::size_t(op.stage)].name;
      }
      REQUIRE(op.name == expected);
    }
    CHECK(copies > 0);
    CHECK(plan.cost.blocks.size() > 10);
  }
}

TEST_CASE("StepPlan::add: data_deps without repeats, deps = lane predecessors then data deps, first occurrences "
          "in order, for short and long lists",
          "[policy][step_plan]") {
  // add() takes shortcuts by list length (a scan up to 16 ids, a sorted copy past that, a check for
  // an already ascending list, the lane predecessors scanned apart): every one must give what the
  // plain definition gives, the pairwise first-occurrence filter of the concatenation.
  auto first_occurrences = [](const std::vector<int>& xs) {
    std::vector<int> kept;
    for (int x : xs)
      if (std::find(kept.begin(), kept.end(), x) == kept.end()) kept.push_back(x);
    return kept;
  };
  std::mt19937 rng(8);
  StepPlan plan;
  PlanOp first;
  first.name = "first";
  plan.add(first);
  int long_lists = 0, long_lanes = 0, ascending = 0, repeats = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int v = int(plan.ops.size());
    PlanOp op;
    op.name = "op" + std::to_string(v);
    const int nlane = trial % 7 == 0 ? int(rng() % 40) : int(rng() % 3);
    const int ndata = trial % 3 == 0 ? int(rng() % 300) : int(rng() % 20);
    const int range = trial % 5 == 0 ? 4 : v;  // a narrow range: many repeats
    for (int i = 0; i < nlane; ++i) op.deps.push_back(v - 1 - int(rng() % std::uint32_t(std::min(range, v))));
    for (int i = 0; i < ndata; ++i) op.data_deps.push_back(v - 1 - int(rng() % std::uint32_t(std::min(range, v))));
    if (trial % 4 == 1) std::sort(op.data_deps.begin(), op.data_deps.end());  // ascending, repeats kept
    if (trial % 8 == 3) {  // strictly ascending
      std::sort(op.data_deps.begin(), op.data_deps.end());
      op.data_deps.erase(std::unique(op.data_deps.begin(), op.data_deps.end()), op.data_deps.end());
    }
    const std::vector<int> want_data = first_occurrences(std::vector<int>(op.data_deps.begin(), op.data_deps.end()));
    std::vector<int> all(op.deps.begin(), op.deps.end());
    all.insert(all.end(), op.data_deps.begin(), op.data_deps.end());
    const std::vector<int> want_deps = first_occurrences(all);
    long_lists += op.data_deps.size() > 16;
    long_lanes += op.deps.size() > 16;
    ascending += op.data_deps.size() > 16 && std::is_sorted(op.data_deps.begin(), op.data_deps.end()) &&
                 want_data.size() == op.data_deps.size();
    repeats += op.data_deps.size() > 16 && want_data.size() < op.data_deps.size();
    REQUIRE(plan.add(op) == v);
    CHECK(std::vector<int>(plan.ops[std::size_t(v)].data_deps.begin(), plan.ops[std::size_t(v)].data_deps.end()) == want_data);
    CHECK(std::vector<int>(plan.ops[std::size_t(v)].deps.begin(), plan.ops[std::size_t(v)].deps.end()) == want_deps);
  }
  // Every path was taken.
  CHECK(long_lists > 20);
  CHECK(long_lanes > 10);
  CHECK(ascending > 5);
  CHECK(repeats > 5);
  PlanOp bad;
  bad.name = "bad";
  bad.data_deps = {int(plan.ops.size())};  // not added yet
  CHECK_THROWS_AS(plan.add(bad), std::logic_error);
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

TEST_CASE("the simulator runs a rate-capped copy at its cap", "[policy]") {
  // One copy alone on one GPU's link: its duration is latency + bytes / cap (closed form).
  const NodeSpec n = node("1xh100-sxm");
  const StepPlan plan = build_plan(workload("wan2.1-t2v-1.3b", 256, 256, 5, 1), n, policy("layerwise", 0.0));
  for (double cap : {5e9, 20e9}) {
    StepPlan p = plan;
    int first = -1;
    for (auto& op : p.ops)
      if (op.kind == OpKind::h2d) {
        op.rate_cap_bytes_per_s = cap;
        if (first < 0) first = op.id;
      }
    const SimResult r = simulate(p, n);
    const auto& row = r.timeline.rows[first];
    CHECK(row.end_s - row.start_s == Approx(n.h2d_latency_s + p.ops[first].bytes / cap).epsilon(1e-9));
  }
}

TEST_CASE("chunkflow's windows: a capped copy runs only at the cap the plan reports", "[policy]") {
  const auto w = workload("wan2.1-t2v-14b", 480, 832, 17, 2);
  const StepPlan plan = build_plan(w, node("2xh100-pcie"), policy("chunkflow", 0.5, 32));
  const PlanInfo& i = plan.info;
  int collectives = 0;
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::collective && op.rank == 0 && op.step == i.steps - 1) ++collectives;
  CHECK(i.windows_yield + i.windows_share + i.windows_ignore == collectives);
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0) CHECK(op.rate_cap_bytes_per_s == i.share_cap_bytes_per_s);
  CHECK(i.estimated_step_time_s > 0);
}

TEST_CASE("auto residency: the smallest fraction tried whose estimate reaches the critical path within 2 %", "[policy]") {
  const NodeSpec pcie = node("2xh100-pcie");
  for (const auto& w : {workload("flux.1-dev", 1024, 1024, 1, 2), workload("wan2.1-t2v-14b", 480, 832, 17, 2)}) {
    const StepPlan plan = build_plan(w, pcie, policy("chunkflow", std::nullopt, 64));
    CHECK(plan.info.resident_fraction_auto);
    double critical = 0;
    for (const auto& b : plan.cost.blocks)
      for (const auto& st : b.stages)
        critical += st.stage.kind == BlockStage::Kind::all_to_all
                        ? share_with_collective(pcie, 0, 2, st.all_to_all_buffer_bytes, 0.0).collective_time_s
                        : stage_compute_time_s(st, pcie);
    CHECK(plan.info.estimated_step_time_s <= 1.02 * critical);
    // One grid step less residency does not reach it (unless nothing is resident already).
    if (plan.info.resident_fraction > 0.05) {
      const StepPlan less = build_plan(w, pcie, policy("chunkflow", (std::round(plan.info.resident_fraction * 10) - 1) / 10, 64));
      CHECK(less.info.estimated_step_time_s > 1.02 * critical);
    }
  }
}

namespace {
/// True when two plans have the same ops, field for field (kinds, places, bytes, caps, deps, names).
bool same_ops(const StepPlan& a, const StepPlan& b) {
  if (a.ops.size() != b.ops.size()) return false;
  for (std::size_t k = 0; k < a.ops.size(); ++k) {
    const PlanOp &x = a.ops[k], &y = b.ops[k];
    if (!(x.kind == y.kind && x.rank == y.rank && x.step == y.step && x.block == y.block && x.stage == y.stage &&
          x.chunk == y.chunk && x.slot == y.slot && x.bytes == y.bytes && x.src_offset_bytes == y.src_offset_bytes &&
          x.alloc_bytes == y.alloc_bytes && x.free_bytes == y.free_bytes &&
          x.rate_cap_bytes_per_s == y.rate_cap_bytes_per_s && x.deps == y.deps && x.data_deps == y.data_deps &&
          x.name == y.name))
      return false;
  }
  return true;
}

/// Two plans of one configuration made two ways (a kept and a fresh planner, the shortcuts and the
/// exhaustive planner) are the same: every plan-info field the planner decides and every op.
void check_same_plan(const StepPlan& a, const StepPlan& b) {
  CHECK(a.info.estimated_step_time_s == b.info.estimated_step_time_s);
  CHECK(a.info.resident_fraction == b.info.resident_fraction);
  CHECK(a.info.residency == b.info.residency);
  CHECK(a.info.slot_count == b.info.slot_count);
  CHECK(a.info.slot_bytes == b.info.slot_bytes);
  CHECK(a.info.share_cap_bytes_per_s == b.info.share_cap_bytes_per_s);
  CHECK(a.info.lookahead == b.info.lookahead);
  CHECK(a.info.memory_budget_bytes == b.info.memory_budget_bytes);
  CHECK(a.info.windows_yield == b.info.windows_yield);
  CHECK(a.info.windows_share == b.info.windows_share);
  CHECK(a.info.windows_ignore == b.info.windows_ignore);
  CHECK(same_ops(a, b));
}
}  // namespace

TEST_CASE("chunkflow's planner cache: a plan from a kept planner equals a fresh planner's, op for op", "[policy]") {
  // The planner keeps the eight most recent (workload, node, steps, chunk) inputs with the estimates
  // they computed; a configuration that differs only in fraction, budget or lookahead reuses them.
  // Drawn so that the cache hits (few inputs, many configurations) and is also evicted (5 inputs x
  // 2 chunk sizes),
  // with a node and a workload that differ from a kept one in one field only.
  std::mt19937 rng(20261123);
  NodeSpec slower = node("2xh100-pcie");
  slower.links[1].a_to_b_bytes_per_s *= 0.5;  // one field differs from 2xh100-pcie
  Workload cfg_seq = workload("flux.1-dev", 512, 512, 1, 2);
  cfg_seq.cfg = CfgMode::sequential;          // one field differs from the workload beside it
  const std::vector<std::pair<Workload, NodeSpec>> inputs = {
      {workload("flux.1-dev", 512, 512, 1, 2), node("2xh100-pcie")},
      {workload("flux.1-dev", 512, 512, 1, 2), slower},
      {cfg_seq, node("2xh100-pcie")},
      {workload("wan2.1-t2v-1.3b", 256, 256, 5, 2), node("8xh100-pcie")},
      {workload("wan2.1-t2v-14b", 256, 448, 5, 1), node("1xh100-sxm")}};
  struct Drawn {
    std::size_t input;
    PolicyConfig config;
  };
  std::vector<Drawn> drawn;
  for (int i = 0; i < 60; ++i) {
    Drawn d{rng() % inputs.size(), policy("chunkflow", std::nullopt, double(16 << (rng() % 2)), 1 + int(rng() % 2))};
    if (rng() % 3 != 0) d.config.resident_fraction = double(rng() % 5) / 4.0;
    if (rng() % 2 == 0) d.config.memory_budget_bytes = double(4 + rng() % 20) * kGiB;
    drawn.push_back(d);
  }
  clear_chunkflow_planner_cache();
  const PlannerCacheStats before = chunkflow_planner_cache_stats();
  std::vector<std::optional<StepPlan>> kept;
  for (const Drawn& d : drawn) {
    try {
      kept.push_back(build_plan(inputs[d.input].first, inputs[d.input].second, d.config));
    } catch (const InputError&) {
      kept.push_back(std::nullopt);  // a budget too small: the fresh planner must refuse it too
    }
  }
  const PlannerCacheStats after = chunkflow_planner_cache_stats();
  CHECK(after.planner_hits > before.planner_hits);    // the sequence reused planners ...
  CHECK(after.planner_misses > before.planner_misses + 10);  // ... and evicted some (10 inputs)
  CHECK(after.estimate_hits > before.estimate_hits);  // ... and kept estimates
  int compared = 0;
  for (std::size_t i = 0; i < drawn.size(); ++i) {
    clear_chunkflow_planner_cache();
    const Drawn& d = drawn[i];
    INFO("configuration " << i);
    std::optional<StepPlan> fresh;
    try {
      fresh = build_plan(inputs[d.input].first, inputs[d.input].second, d.config);
    } catch (const InputError&) {
    }
    REQUIRE(fresh.has_value() == kept[i].has_value());
    if (!fresh) continue;
    check_same_plan(*kept[i], *fresh);
    ++compared;
  }
  CHECK(compared >= 30);
}

TEST_CASE("chunkflow's planner shortcuts: every plan equals the exhaustive planner's, op for op "
          "(random configurations of the large grid, shipped scenarios at budgets)", "[policy][fast]") {
  // The shortcuts (lazy re-timing of the copy lane, Planner::run; one estimate per chunk list where
  // placements or fractions cut the same chunks, Planner::estimate_at; a mode's last pass stopped
  // once it cannot beat the best, Planner::run_pass) must not change a decision:
  // the plan, its estimate and its window counts are bit-identical to the exhaustive planner's.
  const PlannerCacheStats before = chunkflow_planner_cache_stats();
  int compared = 0;
  auto compare = [&compared](const Workload& w, const NodeSpec& n, const PolicyConfig& p) {
    std::optional<StepPlan> plans[2];  // [0]: with the shortcuts, [1]: exhaustive
    for (int exhaustive = 0; exhaustive < 2; ++exhaustive) {
      clear_chunkflow_planner_cache();
      set_chunkflow_planner_exhaustive(exhaustive == 1);
      try {
        plans[exhaustive] = build_plan(w, n, p);
      } catch (const InputError&) {
      }
    }
    set_chunkflow_planner_exhaustive(false);
    clear_chunkflow_planner_cache();
    REQUIRE(plans[0].has_value() == plans[1].has_value());
    if (!plans[0]) return;  // the budget holds no plan, either way
    check_same_plan(*plans[0], *plans[1]);
    ++compared;
  };
  const Grid g = load_grid(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/grids/large.json");
  for (const GridConfig& c : random_grid_configs(g, 90, 20261125)) {
    const GridWorkload& gw = g.workloads[c.workload];
    const PolicyConfig& p = g.policies[c.policy];
    if (p.policy != "chunkflow") continue;
    INFO("configuration " << c.index << ": " << gw.scenario.name);
    compare(gw.scenario.workload, gw.scenario.node, p);
  }
  CHECK(compared >= 40);
  // Shipped scenarios at the budgets `chunkflow pareto` gives them (0.3 and 0.5 of no-offload's
  // peak): slots few enough that copies wait for slots while windows re-time the lane.
  for (const std::string name : {"hw-flux-1024-u2-1xh100-sxm", "flux-1024-u2-2xh100-pcie"}) {
    const Scenario sc = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + name + ".json");
    for (double budget_gib : {6.71, 11.18})
      for (double chunk_mib : {16.0, 64.0})
        for (std::optional<double> fraction : {std::optional<double>(), std::optional<double>(0.3)}) {
          PolicyConfig p = policy("chunkflow", fraction, chunk_mib);
          p.memory_budget_bytes = budget_gib * kGiB;
          INFO(name << " at " << budget_gib << " GiB, " << chunk_mib << " MiB chunks, fraction "
                    << (fraction ? std::to_string(*fraction) : "auto"));
          compare(sc.workload, sc.node, p);
        }
  }
  CHECK(compared >= 40 + 12);
  // A calibrated node whose compute slows beside copies and collectives (the estimate then asks
  // which piece is on the copy lane at each compute op's start, timing the lazy lane that far).
  for (const std::string name : {"hw-flux-1024-u2-1xh100-sxm", "hw-wan1.3b-480p-17f-u2-1xh100-sxm"}) {
    Scenario sc = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + name + ".json");
    sc.node.compute_slowdown_h2d = 0.098;
    sc.node.compute_slowdown_collective = 0.466;
    for (double chunk_mib : {16.0, 64.0})
      for (std::optional<double> fraction : {std::optional<double>(), std::optional<double>(0.3)})
        for (std::optional<double> budget_gib : {std::optional<double>(), std::optional<double>(6.71)}) {
          PolicyConfig p = policy("chunkflow", fraction, chunk_mib);
          if (budget_gib) p.memory_budget_bytes = *budget_gib * kGiB;
          INFO(name << " with compute slowdowns, " << chunk_mib << " MiB chunks, fraction "
                    << (fraction ? std::to_string(*fraction) : "auto") << ", budget " << (budget_gib ? *budget_gib : 0.0));
          compare(sc.workload, sc.node, p);
        }
  }
  CHECK(compared >= 40 + 12 + 8);
  // Large slowdowns (the input allows up to 10) with slots deep enough for the lane-order form of
  // the volume bound: that bound must stretch compute as the estimate does, or a pass beats it
  // (exhaustive mode throws) and "auto" skips placements it should not (helper-40: 32 of 720 such
  // configurations at a slowdown of 10 before the fix).
  for (const std::string name : {"hw-flux-512-u2-1xh100-sxm", "hw-flux-1024-u2-1xh100-sxm"}) {
    Scenario sc = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + name + ".json");
    for (double slowdown : {5.0, 10.0}) {
      sc.node.compute_slowdown_h2d = slowdown;
      for (int steps : {2, 3})
        for (std::optional<double> fraction : {std::optional<double>(), std::optional<double>(0.0)}) {
          PolicyConfig p = policy("chunkflow", fraction, 64);
          p.memory_budget_bytes = 70.0 * kGiB;
          p.steps = steps;
          INFO(name << " at compute slowdown " << slowdown << ", " << steps << " steps, fraction "
                    << (fraction ? std::to_string(*fraction) : "auto"));
          compare(sc.workload, sc.node, p);
        }
    }
  }
  CHECK(compared >= 40 + 12 + 8 + 16);
  // "auto" (Planner::decide skips placements whose copy volume alone rules them out, then searches
  // in full when no fraction is within the bound): configurations of the large grid drawn until 40
  // are "auto", each also at one and three simulated steps (the bound's E_{-1} = 0 case, and a last
  // step that follows two).
  int autos = 0;
  for (const GridConfig& c : random_grid_configs(g, 4000, 20261126)) {
    const GridWorkload& gw = g.workloads[c.workload];
    PolicyConfig p = g.policies[c.policy];
    if (p.policy != "chunkflow" || p.resident_fraction || autos == 40) continue;
    ++autos;
    for (int steps : {p.steps, 1, 3}) {
      p.steps = steps;
      INFO("configuration " << c.index << ": " << gw.scenario.name << ", auto, " << steps << " simulated steps");
      compare(gw.scenario.workload, gw.scenario.node, p);
    }
  }
  CHECK(autos == 40);
  // Copy-bound configurations, where the lane runs nearly flat out and the volume bound is nearly
  // tight (small shapes, one GPU's weights over PCIe; exhaustive mode checks every feasible pass
  // against the bound): explicit fractions and "auto", lookahead 1 and 2 or a budget deep enough
  // for a whole step's chunks (the bound's lane-order form), one to three steps.
  for (const char* model : {"wan2.1-t2v-14b", "flux.1-dev"})
    for (int ulysses : {1, 2})
      for (std::optional<double> fraction : {std::optional<double>(0.0), std::optional<double>(0.5), std::optional<double>()})
        for (int lookahead : {1, 2, 0})
          for (int steps : {1, 2, 3}) {
            PolicyConfig p = policy("chunkflow", fraction, 64, std::max(lookahead, 1));
            if (lookahead == 0) p.memory_budget_bytes = 79.0 * kGiB;
            p.steps = steps;
            INFO(model << ", Ulysses " << ulysses << ", lookahead " << lookahead << " (0: a 79 GiB budget), " << steps
                       << " steps");
            compare(workload(model, 256, 256, 1, ulysses), node("2xh100-pcie"), p);
          }
  CHECK(chunkflow_planner_cache_stats().estimate_shared > before.estimate_shared);  // the sharing was exercised
  CHECK(chunkflow_planner_cache_stats().estimate_bounded > before.estimate_bounded + 20);  // and the volume bound
  CHECK(chunkflow_planner_cache_stats().passes_stopped > before.passes_stopped + 20);  // and the passes' stop
}

TEST_CASE("at equal memory, chunkflow's best plan is no slower than every baseline's", "[policy]") {
  // issue 8 §3 on two scenarios and one budget each (the full table is `chunkflow pareto`).
  for (const char* file : {"/scenarios/wan14b-480p-17f-u2-2xh100-pcie.json", "/scenarios/flux-1024-u2-2xh100-pcie.json"}) {
    const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + file);
    SweepGrid g;
    g.chunk_mib = {16, 64};
    g.resident_fractions = {std::nullopt, 0.0, 0.2, 0.4, 0.6};
    const double peak = run(s.workload, s.node, policy("no-offload")).result.summary.peak_memory_bytes;
    const TuneResult t = tune(s, g, 0.5 * peak);
    double chunkflow = INFINITY, baseline = INFINITY;
    for (const auto& c : t.candidates) {
      if (c.summary.peak_memory_bytes > t.budget_bytes) continue;
      if (c.plan.policy == "chunkflow") chunkflow = std::min(chunkflow, c.summary.step_time_s);
      if (is_baseline_policy(c.plan.policy)) baseline = std::min(baseline, c.summary.step_time_s);
    }
    INFO(file);
    CHECK(chunkflow <= baseline);
  }
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
  // A compute op reading many chunks (1 MiB chunks; validate searches a long dependency list in a
  // sorted copy): dropping any one of its chunks, from data_deps or from deps only, is caught.
  const StepPlan fine = build_plan(w, node("1xh100-sxm"), policy("chunkflow", 0.0, 1));
  REQUIRE_NOTHROW(validate(fine));
  int wide = -1;
  for (const auto& op : fine.ops)
    if (op.kind == OpKind::compute && op.data_deps.size() > 16 && (wide < 0 || op.data_deps.size() > fine.ops[wide].data_deps.size()))
      wide = op.id;
  REQUIRE(wide >= 0);
  std::vector<int> chunks_read;
  for (int d : fine.ops[wide].data_deps)
    if (fine.ops[d].kind == OpKind::h2d) chunks_read.push_back(d);
  REQUIRE(chunks_read.size() > 16);  // past the scan: the sorted copy answers
  for (std::size_t k : {std::size_t(0), chunks_read.size() / 2, chunks_read.size() - 1}) {
    {
      StepPlan p = fine;
      auto& deps = p.ops[wide].data_deps;
      deps.erase(std::find(deps.begin(), deps.end(), chunks_read[k]));
      // validate finds the chunks overlapping the op's weights by offset: it names this one.
      CHECK_THROWS_WITH(validate(p), Catch::Contains("does not wait for " + p.ops[chunks_read[k]].name + ","));
    }
    if (k > 0) {  // two dropped: the message names the lower id, as a scan in id order would
      StepPlan p = fine;
      auto& deps = p.ops[wide].data_deps;
      for (int d : {chunks_read[k], chunks_read[0]}) deps.erase(std::find(deps.begin(), deps.end(), d));
      const int lower = std::min(chunks_read[0], chunks_read[k]);
      CHECK_THROWS_WITH(validate(p), Catch::Contains("does not wait for " + p.ops[lower].name + ","));
    }
    {
      StepPlan p = fine;
      auto& deps = p.ops[wide].deps;
      deps.erase(std::find(deps.begin(), deps.end(), chunks_read[k]));
      CHECK_THROWS_WITH(validate(p), Catch::Contains("data dep not in deps"));
    }
  }
}

TEST_CASE("validate: ranks, steps and blocks outside its flat tables, and dependency lists in any order, are "
          "judged by the same rules",
          "[policy][validate]") {
  // validate indexes (rank, step, block) in flat tables sized by plan.info and falls back to maps
  // for anything else; it searches an ascending long list in place and sorts a copy of any other,
  // and skips the data-deps-in-deps lookup when deps ends with data_deps. A plan judged through the
  // fallbacks (info.ranks or info.steps understated) or with its lists reordered must get the
  // verdict, and the message, that the tables and the builder's layout give.
  const auto w = workload("wan2.1-t2v-1.3b", 256, 256, 5, 1);
  const StepPlan fine = build_plan(w, node("1xh100-sxm"), policy("chunkflow", 0.0, 1));
  REQUIRE(fine.info.ranks == 1);
  REQUIRE(fine.info.steps == 2);
  for (const auto& op : fine.ops) REQUIRE(op.kind != OpKind::collective);  // info.ranks is read by no other check
  int wide = -1;
  for (const auto& op : fine.ops)
    if (op.kind == OpKind::compute && op.data_deps.size() > 16) wide = op.id;
  REQUIRE(wide >= 0);
  int chunk = -1;  // a chunk of the wide op's in step 1 (outside the table when info.steps is 1)
  for (int d : fine.ops[wide].data_deps)
    if (fine.ops[d].kind == OpKind::h2d) chunk = d;
  REQUIRE(chunk >= 0);
  REQUIRE(fine.ops[wide].step == 1);
  auto verdict = [](const StepPlan& p) -> std::string {
    try {
      validate(p);
      return "valid";
    } catch (const std::logic_error& e) {
      return e.what();
    }
  };
  auto dropped = [&](StepPlan p) {  // the wide op no longer waits for `chunk`
    for (auto* list : {&p.ops[wide].data_deps, &p.ops[wide].deps}) list->erase(std::find(list->begin(), list->end(), chunk));
    return p;
  };
  auto unbalanced = [](StepPlan p) {
    p.ops.back().free_bytes += 4096;
    return p;
  };
  auto reordered = [&](StepPlan p) {  // every list reversed: not ascending, deps no longer ends with data_deps
    for (auto& op : p.ops) {
      std::reverse(op.deps.begin(), op.deps.end());
      std::reverse(op.data_deps.begin(), op.data_deps.end());
    }
    return p;
  };
  const std::string base_dropped = verdict(dropped(fine));
  const std::string base_unbalanced = verdict(unbalanced(fine));
  REQUIRE(verdict(fine) == "valid");
  REQUIRE_THAT(base_dropped, Catch::Contains("does not wait for " + fine.ops[chunk].name + ","));
  REQUIRE_THAT(base_unbalanced, Catch::Contains("memory does not balance on rank 0"));
  CHECK(verdict(reordered(fine)) == "valid");
  CHECK(verdict(dropped(reordered(fine))) == base_dropped);
  {
    StepPlan p = reordered(fine);  // a data dep missing from the reordered deps
    auto& deps = p.ops[wide].deps;
    deps.erase(std::find(deps.begin(), deps.end(), chunk));
    CHECK_THAT(verdict(p), Catch::Contains("data dep not in deps"));
  }
  for (auto [ranks, steps] : {std::pair{0, 2}, std::pair{1, 0}, std::pair{1, 1}, std::pair{0, 0}}) {
    INFO("info.ranks " << ranks << ", info.steps " << steps);
    StepPlan p = fine;
    p.info.ranks = ranks;
    p.info.steps = steps;
    CHECK(verdict(p) == "valid");
    CHECK(verdict(dropped(p)) == base_dropped);
    CHECK(verdict(unbalanced(p)) == base_unbalanced);
    CHECK(verdict(dropped(reordered(p))) == base_dropped);
  }
  // Memory is judged rank by rank in rank order, whether a rank lies in the table or not: the last op
  // (nothing depends on it, the last on its lane) moved to rank -1 or 5, both ranks left unbalanced.
  for (int moved_rank : {-1, 5}) {
    for (int ranks : {1, 0}) {
      StepPlan p = fine;
      p.info.ranks = ranks;
      p.ops.back().rank = moved_rank;
      p.ops.back().free_bytes += 4096;
      p.ops.front().alloc_bytes += 8192;
      const std::string first = std::to_string(std::min(moved_rank, 0));
      INFO("moved to rank " << moved_rank << ", info.ranks " << ranks);
      CHECK_THAT(verdict(p), Catch::Contains("memory does not balance on rank " + first + " ("));
    }
  }
}

TEST_CASE("validate: slot and collective-group violations, each alone and with others, reported in the order "
          "the checks are listed",
          "[policy][validate]") {
  // validate reads the ops in three passes and keeps the first slot and group violation until the
  // checks listed before them (weights, memory balance) have passed: a plan with several
  // violations must name the one the listed order puts first, and within a check the op first in
  // issue order.
  const auto w = workload("wan2.1-t2v-1.3b", 256, 256, 5, 2);
  const StepPlan good = build_plan(w, node("2xh100-pcie"), policy("chunkflow", 0.0, 16));
  REQUIRE(good.info.ranks == 2);
  REQUIRE_NOTHROW(validate(good));
  auto verdict = [](const StepPlan& p) -> std::string {
    try {
      validate(p);
      return "valid";
    } catch (const std::logic_error& e) {
      return e.what();
    }
  };
  // h2d ops that refill a slot (they wait for its last reader), and collectives, in id order.
  std::vector<int> refills, collectives;
  for (const PlanOp& op : good.ops) {
    if (op.kind == OpKind::h2d && op.data_deps.size() == 1 && good.ops[op.data_deps[0]].kind == OpKind::compute &&
        op.id >= good.info.slot_count)
      refills.push_back(op.id);
    if (op.kind == OpKind::collective) collectives.push_back(op.id);
  }
  REQUIRE(refills.size() >= 2);
  REQUIRE(collectives.size() >= 2);
  auto no_wait = [&](StepPlan p, int id) {  // the refill no longer waits for the slot's last reader
    const int reader = p.ops[id].data_deps[0];
    for (auto* list : {&p.ops[id].data_deps, &p.ops[id].deps}) list->erase(std::find(list->begin(), list->end(), reader));
    return p;
  };
  auto bad_slot = [](StepPlan p, int id) {
    p.ops[id].slot = p.info.slot_count;
    return p;
  };
  auto too_large = [](StepPlan p) {  // slots smaller than every copy
    p.info.slot_bytes = 0;
    return p;
  };
  int first_copy = -1;
  for (const PlanOp& op : good.ops)
    if (first_copy < 0 && op.kind == OpKind::h2d) first_copy = op.id;
  auto no_group = [](StepPlan p, int id) {
    p.ops[id].collective_group = -1;
    return p;
  };
  auto unbalanced = [](StepPlan p) {
    p.ops.back().free_bytes += 4096;
    return p;
  };
  const std::string first_refill = good.ops[refills[0]].name, second_refill = good.ops[refills[1]].name;
  CHECK_THAT(verdict(no_wait(good, refills[0])), Catch::StartsWith("invalid StepPlan: " + first_refill + " refills slot"));
  CHECK_THAT(verdict(bad_slot(good, refills[1])), Catch::Contains(second_refill + " has no valid slot"));
  CHECK_THAT(verdict(no_group(good, collectives[1])), Catch::Contains(good.ops[collectives[1]].name + " belongs to no collective group"));
  // Within a check: the op first in issue order, whichever way it breaks the rule.
  CHECK_THAT(verdict(no_wait(bad_slot(good, refills[1]), refills[0])), Catch::Contains(first_refill + " refills slot"));
  CHECK_THAT(verdict(bad_slot(no_wait(good, refills[1]), refills[0])), Catch::Contains(first_refill + " has no valid slot"));
  CHECK_THAT(verdict(no_group(no_group(good, collectives[1]), collectives[0])),
             Catch::Contains(good.ops[collectives[0]].name + " belongs to no collective group"));
  // Across checks: memory balance before slots, slots before groups, whatever the ops' order.
  CHECK_THAT(verdict(unbalanced(no_wait(good, refills[0]))), Catch::Contains("memory does not balance"));
  CHECK_THAT(verdict(too_large(good)), Catch::Contains(good.ops[first_copy].name + " is larger than a slot"));
  CHECK_THAT(verdict(unbalanced(too_large(good))), Catch::Contains("memory does not balance"));
  CHECK_THAT(verdict(no_group(no_wait(good, refills.back()), collectives[0])), Catch::Contains(good.ops[refills.back()].name + " refills slot"));
  REQUIRE(collectives[0] < refills.back());  // the group violation comes first in issue order
  CHECK_THAT(verdict(unbalanced(no_group(good, collectives[0]))), Catch::Contains("memory does not balance"));
  // A group with two ops of one rank names the later one; a group short of a rank names the lowest
  // such group id, whether the ids fit validate's bit masks or not (an id beyond 4 · ops).
  auto regroup = [](StepPlan p, int id, int group) {
    p.ops[id].collective_group = group;
    return p;
  };
  int partner = -1;  // a later collective of the same rank in another group
  for (int c : collectives)
    if (partner < 0 && c > collectives[0] && good.ops[c].rank == good.ops[collectives[0]].rank &&
        good.ops[c].collective_group != good.ops[collectives[0]].collective_group)
      partner = c;
  REQUIRE(partner >= 0);
  CHECK_THAT(verdict(regroup(good, collectives[0], good.ops[partner].collective_group)),
             Catch::Contains(good.ops[partner].name + ": two ops of one rank in a group"));
  int last_group = 0;
  for (const PlanOp& op : good.ops) last_group = std::max(last_group, op.collective_group);
  const std::string short_group = "collective group " + std::to_string(good.ops[collectives[0]].collective_group) + " misses ranks";
  CHECK_THAT(verdict(regroup(good, collectives[0], last_group + 1)), Catch::Contains(short_group));
  CHECK_THAT(verdict(regroup(good, collectives[0], 1 << 25)), Catch::Contains(short_group));
}

TEST_CASE("validate: a plan whose ranks copy rank 0's ops gets the verdict and the message of the check over "
          "every op",
          "[policy][validate]") {
  // validate judges a plan whose ranks run copies of rank 0's ops (the builder's) from rank 0's
  // ops. Each break below is made on every rank alike (the plan still copies rank 0's ops: rank 0's
  // check fails, and the whole plan is checked) or on the last rank only (it no longer does).
  auto verdict = [](const StepPlan& p, bool exhaustive) -> std::string {
    set_validate_exhaustive(exhaustive);
    std::string v = "valid";
    try {
      validate(p);
    } catch (const std::logic_error& e) {
      v = e.what();
    }
    set_validate_exhaustive(false);
    return v;
  };
  for (const auto& [node_id, ulysses] : {std::pair<std::string, int>{"2xh100-pcie", 2}, {"8xh100-pcie", 4}}) {
    const StepPlan good = build_plan(workload("wan2.1-t2v-1.3b", 256, 256, 5, ulysses), node(node_id), policy("chunkflow", 0.0, 16));
    const int ranks = good.info.ranks;
    REQUIRE(ranks >= 2);
    const int per_rank = int(good.ops.size()) / ranks;
    CHECK(verdict(good, false) == "valid");
    CHECK(verdict(good, true) == "valid");
    // Rank 0's ops to break: a refill (it waits for its slot's last reader), a compute op and a
    // chunk it reads, a collective and a later one of another group.
    int refill = -1, reader = -1, chunk = -1, collective = -1, partner = -1;
    for (int i = 0; i < per_rank; ++i) {
      const PlanOp& op = good.ops[std::size_t(i)];
      if (refill < 0 && op.kind == OpKind::h2d && op.data_deps.size() == 1 && good.ops[op.data_deps[0]].kind == OpKind::compute &&
          op.id >= good.info.slot_count)
        refill = i;
      if (reader < 0 && op.kind == OpKind::compute)
        for (int d : op.data_deps)
          if (good.ops[std::size_t(d)].kind == OpKind::h2d) reader = i, chunk = d;
      if (op.kind == OpKind::collective) {
        if (collective < 0) collective = i;
        else if (partner < 0 && op.collective_group != good.ops[std::size_t(collective)].collective_group) partner = i;
      }
    }
    REQUIRE(refill >= 0);
    REQUIRE(reader >= 0);
    REQUIRE(collective >= 0);
    REQUIRE(partner >= 0);
    int last_group = 0;
    for (const PlanOp& op : good.ops) last_group = std::max(last_group, op.collective_group);
    // Each break, at rank 0's op k shifted to one rank (shift = rank × ops per rank).
    const std::vector<std::pair<std::string, std::function<void(StepPlan&, int)>>> breaks = {
        {"refill without its wait", [&](StepPlan& p, int shift) {
           PlanOp& op = p.ops[std::size_t(refill + shift)];
           const int waits_for = op.data_deps[0];
           for (auto* list : {&op.data_deps, &op.deps}) list->erase(std::find(list->begin(), list->end(), waits_for));
         }},
        {"slot out of range", [&](StepPlan& p, int shift) { p.ops[std::size_t(refill + shift)].slot = p.info.slot_count; }},
        {"reader without its chunk", [&](StepPlan& p, int shift) {
           auto& deps = p.ops[std::size_t(reader + shift)].data_deps;
           deps.erase(std::find(deps.begin(), deps.end(), chunk + shift));
         }},
        {"unbalanced", [&](StepPlan& p, int shift) { p.ops[std::size_t(chunk + shift)].alloc_bytes += 4096; }},
        {"cycle", [&](StepPlan& p, int shift) { p.depend(chunk + shift, reader + shift); }},
        {"no group", [&](StepPlan& p, int shift) { p.ops[std::size_t(collective + shift)].collective_group = -1; }},
        {"two ops of a rank in a group", [&](StepPlan& p, int shift) {
           p.ops[std::size_t(collective + shift)].collective_group = good.ops[std::size_t(partner)].collective_group;
         }},
        {"a group of its own", [&](StepPlan& p, int shift) { p.ops[std::size_t(collective + shift)].collective_group = last_group + 1; }},
    };
    for (const auto& [what, apply] : breaks) {
      INFO(node_id << ": " << what);
      StepPlan every_rank = good, last_rank = good;
      for (int r = 0; r < ranks; ++r) apply(every_rank, r * per_rank);
      apply(last_rank, (ranks - 1) * per_rank);
      CHECK(verdict(every_rank, false) == verdict(every_rank, true));
      CHECK(verdict(last_rank, false) == verdict(last_rank, true));
      CHECK(verdict(last_rank, true) != "valid");
      // A group of its own on every rank is a valid regrouping (one op per rank); the rest break.
      if (what != "a group of its own") CHECK(verdict(every_rank, true) != "valid");
    }
  }
}

TEST_CASE("validate: a chunk that holds the weights of two stages must be waited for by both", "[policy][validate]") {
  // Large chunks pack several small tensors: a chunk that starts before a stage's weights and
  // reaches into them is found by validate's offset search (it starts up to one chunk before them).
  const auto w = workload("wan2.1-t2v-1.3b", 256, 256, 5, 1);
  const StepPlan plan = build_plan(w, node("1xh100-sxm"), policy("chunkflow", 0.0, 64));
  REQUIRE_NOTHROW(validate(plan));
  std::map<int, std::vector<int>> readers;  // h2d op → compute ops reading it, in id order
  for (const auto& op : plan.ops)
    if (op.kind == OpKind::compute)
      for (int d : op.data_deps)
        if (plan.ops[d].kind == OpKind::h2d) readers[d].push_back(op.id);
  int checked = 0;
  for (const auto& [chunk, ops] : readers) {
    if (ops.size() < 2 || checked >= 8) continue;
    StepPlan p = plan;  // the later reader no longer waits for the chunk it shares with an earlier one
    auto& deps = p.ops[ops.back()].data_deps;
    deps.erase(std::find(deps.begin(), deps.end(), chunk));
    CHECK_THROWS_WITH(validate(p), Catch::Contains("does not wait for " + p.ops[chunk].name + ","));
    ++checked;
  }
  CHECK(checked >= 4);
}

TEST_CASE("chunkflow's own estimate matches the simulator on parallel layouts and multi-GPU nodes "
          "(scenarios/layouts/)",
          "[policy][layouts]") {
  // The planner prices every collective kind on its groups and routes with every rank's copies
  // beside it (model/link_model.hpp WorkloadLinkModel) and runs its program's lanes as the plan
  // builder wires them (ring attention overlapped, FSDP's all-gathers ahead). Before, on these
  // scenarios it said 0.500 s for a step the simulator ran in 0.630 s (U2 × TP2, two GPUs per switch
  // uplink) and 0.668 s for every resident fraction from 0.6 to 0.8 of U2 × ring 2, where the
  // simulator ran 0.680, 0.569 and 0.506 s.
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/layouts")) {
    if (entry.path().extension() != ".json") continue;
    const Scenario s = load_scenario(entry.path().string());
    for (double R : {0.0, 0.5}) {
      INFO(entry.path().filename().string() << " R " << R);
      const Run r = run(s.workload, s.node, policy("chunkflow", R, 64));
      const double ratio = r.plan.info.estimated_step_time_s / r.result.summary.step_time_s;
      // FSDP: the estimate may be pessimistic at R = 0 (flux-1024 U2 + FSDP: 7.1 %, 621.7 vs 580.4
      // ms, before the per-window sharing candidate; 2.1 %, 585.1 vs 573.2 ms, with it): the planner
      // does not model the all-gathers' shard copies running ahead of the program as far as the
      // simulator lets them. Every other layout: within 1 %.
      if (s.workload.fsdp)
        CHECK((ratio >= 0.99 && ratio <= 1.08));
      else
        CHECK(std::abs(ratio - 1) <= 0.01);
      ++checked;
    }
  }
  CHECK(checked >= 16);
}

TEST_CASE("chunkflow's own estimate counts the compute slowdown beside copies and collectives of a calibrated node",
          "[policy]") {
  // The executor stretches a compute op by (1 + compute_slowdown_h2d + compute_slowdown_collective)
  // when a copy or a collective of its rank is in flight at its start (sim/executor.hpp); the planner
  // did not, so on a calibrated node it took plans whose copies slowed compute for free (H100,
  // 2026-11-26, slowdowns 0.098 and 0.466 fitted on the harness's benches; with that whole
  // calibration, `chunkflow simulate`: Wan2.1-1.3B 17 frames at R = 0 estimated 97.0 ms, simulated
  // 100.7; "auto" chose R = 0.2 at 97.1 ms simulated). Here the scenario node with the two
  // slowdowns only. Now the
  // slowdowns add at most 1.5 % to the estimate's error against the simulator (worst: FLUX 1024²
  // at R = 0.6 in 16 MiB chunks, 2.3 % against 0.8 % without them; the estimate and the executor
  // see different copies in flight where an op's start meets a copy's edge), where ignoring them
  // added 3–5 %.
  int checked = 0;
  for (const char* name : {"hw-wan1.3b-480p-17f-u2-1xh100-sxm", "hw-flux-1024-u2-1xh100-sxm", "hw-flux-512-u2-1xh100-sxm"}) {
    const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/" + name + ".json");
    NodeSpec slow = s.node;
    slow.compute_slowdown_h2d = 0.098;
    slow.compute_slowdown_collective = 0.466;
    const double critical = run(s.workload, slow, policy("no-offload")).result.summary.step_time_s;
    for (std::optional<double> R : {std::optional<double>(0.0), std::optional<double>(0.3), std::optional<double>(0.6),
                                    std::optional<double>(0.9), std::optional<double>()})
      for (double chunk_mib : {16.0, 64.0}) {
        INFO(name << " R " << (R ? std::to_string(*R) : "auto") << ", " << chunk_mib << " MiB chunks");
        auto error = [&](const NodeSpec& n) {
          const Run r = run(s.workload, n, policy("chunkflow", R, chunk_mib));
          return std::pair{std::abs(r.plan.info.estimated_step_time_s / r.result.summary.step_time_s - 1),
                           r.result.summary.step_time_s};
        };
        const auto [slow_error, slow_step_s] = error(slow);
        const double plain_error = error(s.node).first;
        CHECK(slow_error <= plain_error + 0.015);
        CHECK(slow_error <= 0.025);
        // "auto": its estimate within 2 % of the program without copies (the planner's critical
        // path, which the R = 1 plan's estimate is), so the step near it. (Against the simulated
        // no-offload step instead, the rule's edge fails by the estimate's own error: Wan 17 frames
        // in 16 MiB chunks picks R = 0.7 at 93.88 ms estimated, 93.85 simulated, where R = 1 is
        // estimated at 92.04 and no-offload simulates 91.97.)
        if (!R) {
          const double no_copies_s = run(s.workload, slow, policy("chunkflow", 1.0, chunk_mib)).plan.info.estimated_step_time_s;
          CHECK(slow_step_s <= 1.02 * (1 + slow_error) * no_copies_s);
          CHECK(no_copies_s <= critical * 1.002);  // the R = 1 estimate is the simulated program's within 0.2 %
        }
        ++checked;
      }
  }
  CHECK(checked == 30);
}

namespace {

/// Each collective's time alone, by (op name, rank): the no-offload run of the same workload and node.
std::map<std::pair<std::string, int>, double> collective_times_alone(const Scenario& s) {
  std::map<std::pair<std::string, int>, double> alone_s;
  for (const auto& row : run(s.workload, s.node, policy("no-offload")).result.timeline.rows)
    if (row.kind == OpKind::collective) alone_s[{row.name, row.rank}] = row.end_s - row.start_s;
  return alone_s;
}

/// The rate caps (0: uncapped) of every H2D copy, any rank, whose simulated interval overlaps the
/// collective row `c`'s.
std::vector<double> caps_of_copies_beside(const Run& r, const TimelineRow& c) {
  std::vector<double> caps;
  for (const auto& q : r.plan.ops) {
    if (q.kind != OpKind::h2d) continue;
    const auto& h = r.result.timeline.rows[std::size_t(q.id)];
    if (h.start_s < c.end_s && h.end_s > c.start_s) caps.push_back(q.rate_cap_bytes_per_s);
  }
  return caps;
}

}  // namespace

TEST_CASE("chunkflow's per-window treatment: recorded modes match the simulated windows, a shared window keeps "
          "the all-to-all's time alone, the estimate holds and the budget is kept",
          "[policy]") {
  // FLUX 1536², Ulysses 2 on 2xh100-pcie at 30 % of no-offload's peak (README "Policies at equal
  // memory"): the planner's per_window candidate wins there, and its plan yields some all-to-all
  // windows, shares some at the cap that leaves the all-to-all its rate and ignores others.
  const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/flux-1536-u2-2xh100-pcie.json");
  PolicyConfig p = policy("chunkflow", 0.24, 64);
  p.memory_budget_bytes = 6.78 * kGiB;
  const Run r = run(s.workload, s.node, p);
  const PlanInfo& i = r.plan.info;
  const int treatments = (i.windows_yield > 0) + (i.windows_share > 0) + (i.windows_ignore > 0);
  INFO("windows: " << i.windows_yield << " yield, " << i.windows_share << " share, " << i.windows_ignore << " ignore");
  REQUIRE(treatments >= 2);  // a per-window plan, not one treatment for every window

  // Each collective of rank 0's last step by the copy the simulator runs at its start: none
  // (yield), rate-capped (share) or uncapped (ignore). The plan's counts come from the planner's
  // estimate of the same timeline; they agree to within 2 % of the windows (windows whose
  // neighbouring copy starts or ends within a few µs of the collective's start may fall either way).
  const auto& rows = r.result.timeline.rows;
  const auto alone_s = collective_times_alone(s);
  int counted[3] = {0, 0, 0}, collectives = 0;
  for (const auto& op : r.plan.ops) {
    if (op.kind != OpKind::collective || op.rank != 0 || op.step != i.steps - 1) continue;
    ++collectives;
    const auto& c = rows[std::size_t(op.id)];
    int treatment = 0;  // 0 yield, 1 share, 2 ignore
    for (const auto& q : r.plan.ops) {
      if (q.kind != OpKind::h2d || q.rank != 0) continue;
      const auto& h = rows[std::size_t(q.id)];
      if (h.start_s <= c.start_s && h.end_s > c.start_s) treatment = std::max(treatment, q.rate_cap_bytes_per_s > 0 ? 1 : 2);
    }
    ++counted[treatment];
    // A window whose only copies run at the share cap keeps the all-to-all at its time alone.
    if (treatment == 1) {
      const auto caps = caps_of_copies_beside(r, c);
      const bool only_capped = std::all_of(caps.begin(), caps.end(), [](double cap) { return cap > 0; });
      const double alone_time_s = alone_s.at({c.name, 0});
      INFO(c.name << ": " << c.end_s - c.start_s << " s, alone " << alone_time_s << " s");
      if (only_capped) CHECK(c.end_s - c.start_s <= alone_time_s * (1 + 1e-6));
    }
  }
  CHECK(i.windows_yield + i.windows_share + i.windows_ignore == collectives);
  INFO("simulated: " << counted[0] << " yield, " << counted[1] << " share, " << counted[2] << " ignore");
  CHECK(std::abs(counted[0] - i.windows_yield) <= 0.02 * collectives);
  CHECK(std::abs(counted[1] - i.windows_share) <= 0.02 * collectives);
  CHECK(std::abs(counted[2] - i.windows_ignore) <= 0.02 * collectives);
  for (const auto& op : r.plan.ops)
    if (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0) CHECK(op.rate_cap_bytes_per_s == i.share_cap_bytes_per_s);
  // The planner's estimate within 1 % of the simulated step; peak memory within the budget.
  CHECK(i.estimated_step_time_s == Approx(r.result.summary.step_time_s).epsilon(0.01));
  CHECK(r.result.summary.peak_memory_bytes <= *p.memory_budget_bytes);
}

TEST_CASE("chunkflow's per_window_share treatment: copies share at two caps, a window beside only copies at the "
          "lower cap keeps the collective's time alone, the estimate holds and the budget is kept",
          "[policy]") {
  // FLUX 1024², Ulysses 2 with FSDP on 8xh100-pcie at 30 % of no-offload's peak (README "Policies
  // at equal memory"): the copy lane runs tens of ms ahead of its readers under the tolerant cap, so
  // the planner's per_window_share candidate spends that slack on windows shared at the cap that
  // leaves the collective its rate, and shares the rest at the tolerant cap.
  const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/layouts/flux-1024-u2-fsdp-8xh100-pcie.json");
  PolicyConfig p = policy("chunkflow", 0.0, 16);
  p.memory_budget_bytes = 3.59 * kGiB;
  const Run r = run(s.workload, s.node, p);
  const PlanInfo& i = r.plan.info;
  std::set<double> caps;
  for (const auto& op : r.plan.ops)
    if (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0) caps.insert(op.rate_cap_bytes_per_s);
  REQUIRE(caps.size() == 2);  // both caps in one plan: not one treatment for every window
  CHECK(*caps.rbegin() == i.share_cap_bytes_per_s);
  const double lower_cap = *caps.begin();

  // Every collective of each rank's last step whose overlapping copies all run at the lower cap
  // takes its time alone (the no-offload run's), as the cap was chosen for.
  const auto& rows = r.result.timeline.rows;
  const auto alone_s = collective_times_alone(s);
  int kept = 0;
  for (const auto& op : r.plan.ops) {
    if (op.kind != OpKind::collective || op.step != i.steps - 1) continue;
    const auto& c = rows[std::size_t(op.id)];
    const auto caps = caps_of_copies_beside(r, c);
    if (caps.empty() || std::any_of(caps.begin(), caps.end(), [&](double cap) { return cap != lower_cap; })) continue;
    const double alone_time_s = alone_s.at({c.name, op.rank});
    INFO(c.name << " rank " << op.rank << ": " << c.end_s - c.start_s << " s, alone " << alone_time_s << " s");
    CHECK(c.end_s - c.start_s <= alone_time_s * (1 + 1e-6));
    ++kept;
  }
  CHECK(kept > 0);
  // The planner's estimate within 1 % of the simulated step; peak memory within the budget.
  CHECK(i.estimated_step_time_s == Approx(r.result.summary.step_time_s).epsilon(0.01));
  CHECK(r.result.summary.peak_memory_bytes <= *p.memory_budget_bytes);
}
