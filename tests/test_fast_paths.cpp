// The speed shortcuts of issue 12 §2 against the full path they replace, on every built-in node,
// on mutated nodes and on random configurations of the example grids. The issue asks for equality
// within 1e-9 relative; each of these is exact, and is checked bit for bit:
//  - model/routes.hpp shared_node_routes (memoised NodeRoutes) = NodeRoutes(node);
//    collective_host_link_use through it = on fresh routes;
//  - sim/topology.hpp Topology::shared + register_resources = Topology(node, solver); h2d_route;
//  - sim/executor.cpp's per-(block, stage) compute time: every compute op of a timeline ends at
//    its start + stage_compute_time_s(its stage, node) (no calibrated slowdown on these nodes);
//  - SimOptions::record_op_names = false changes nothing but the rows' names;
//  - sim/decision_memo.hpp's memo of simulation outcomes by plan decision, in run_grid_config and
//    run_sweep (one and two threads): every row equals build_plan → validate → simulate of its
//    configuration, bit for bit; its claims make a thread wait for an outcome another is computing;
//  - the max-min solver's loop over the resources in use only: tests/test_maxmin.cpp (against
//    maxmin_reference) and every comparison above, which runs it;
//  - traces/timeline.cpp summarize's row index by position = its hash map on renumbered ids;
//  - sim/flows.hpp CollectiveFlowCache (the executor's and the bound's collective flows per (kind,
//    bytes)) = collective_flows of every collective op, on every node and parallel layout kind;
//  - sim/executor.hpp simulate's memo of max-min rates per set of active flows = a solve at every
//    event (set_simulate_exhaustive), on random grid configurations and parallel layouts; so are
//    its flows added by route shapes (MaxMinSolver::add_flow_shaped; tests/test_maxmin.cpp too);
//  - SimOptions::record_rows = false: the summary from the plan's ops and times = summarize on the
//    rows, the bound and events the same; summarize without sorting lists already in order = with
//    every list sorted (set_summarize_exhaustive), on simulated, reversed and rank-renumbered rows;
//  - sim/symmetry.hpp rank symmetry (set_simulate_symmetric): one representative rank per orbit =
//    every rank simulated, within 1e-9 relative (the orbit flows' summed uses round differently),
//    events exactly; the ranks of one orbit have equal times in the full simulation;
//  - runtime/plan_builder.hpp's rank copies (rank 0 built, every other rank its ops shifted) = the
//    plan built rank by rank (set_plan_builder_exhaustive), op for op, every field.
//  - runtime/plan_builder.hpp ProgramLayout::readers over the positions that read weights = a scan
//    of every position of the block, on every block of the sample's workloads and ranges that
//    start before, at and inside its units, end inside and past them, empty, reversed and NaN ones.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string_view>
#include <limits>
#include <cmath>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/routes.hpp"
#include "runtime/policy.hpp"
#include "sim/executor.hpp"
#include "sim/flows.hpp"
#include "sim/fit.hpp"
#include "sim/bound.hpp"
#include "sim/decision_memo.hpp"
#include "sim/grid.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "sim/symmetry.hpp"
#include "sim/topology.hpp"
#include "property_sample.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;

namespace {

/// The options sweeps and grids simulate with (sim/sweep.cpp, sim/grid.cpp): no link, memory or
/// op-name records.
SimOptions lean_options() {
  SimOptions o;
  o.record_links = o.record_memory = o.record_op_names = false;
  return o;
}

/// Built-in nodes plus mutations of each that change what the routes read: a slower link, a
/// duplex coupling removed, P2P off, one pair without P2P, a stricter P2P level, NVLink links
/// turned into PCIe ones, per-flow caps, a slower copy engine and the last PCIe link's H2D
/// direction under duplex at half (SM-read weights and copy costs that differ per GPU).
std::vector<NodeSpec> nodes_and_mutations() {
  std::vector<NodeSpec> out;
  for (const std::string& id : node_ids()) {
    const NodeSpec base = node(id);
    out.push_back(base);
    NodeSpec m = base;
    m.links.front().a_to_b_bytes_per_s *= 0.5;
    out.push_back(m);
    m = base;
    for (LinkSpec& l : m.links) l.duplex_bytes_per_s = 0;
    out.push_back(m);
    m = base;
    m.p2p_enabled = !m.p2p_enabled;
    out.push_back(m);
    m = base;
    if (m.gpu_count > 1) m.p2p_disabled_pairs.push_back({0, 1});
    out.push_back(m);
    m = base;
    m.p2p_level = PathLevel::pix;
    out.push_back(m);
    m = base;
    for (LinkSpec& l : m.links)
      if (l.kind == LinkKind::nvlink) l.kind = LinkKind::pcie;
    out.push_back(m);
    m = base;
    m.p2p_flow_bytes_per_s = 7e9;
    m.collective_flow_bytes_per_s = 3e9;
    out.push_back(m);
    m = base;
    m.copy_engine_bytes_per_s *= 0.5;
    out.push_back(m);
    m = base;
    for (auto it = m.links.rbegin(); it != m.links.rend(); ++it)
      if (it->kind == LinkKind::pcie) {
        it->a_to_b_under_duplex_bytes_per_s = 0.5 * (it->a_to_b_under_duplex_bytes_per_s > 0 ? it->a_to_b_under_duplex_bytes_per_s
                                                                                              : it->a_to_b_bytes_per_s);
        break;
      }
    out.push_back(m);
  }
  return out;
}

void require_same_routes(const NodeRoutes& a, const NodeRoutes& b, int gpus) {
  REQUIRE(a.vertex_names() == b.vertex_names());
  REQUIRE(a.vertex_kinds() == b.vertex_kinds());
  const int V = int(a.vertex_names().size());
  for (int s = 0; s < V; ++s)
    for (int d = 0; d < V; ++d) {
      const auto* pa = a.host_path(s, d);
      const auto* pb = b.host_path(s, d);
      REQUIRE((pa == nullptr) == (pb == nullptr));
      if (pa) REQUIRE(*pa == *pb);
    }
  for (int x = 0; x < gpus; ++x)
    for (int y = 0; y < gpus; ++y) {
      if (x == y) continue;
      std::string ea, eb;
      const auto* pa = a.peer(x, y, &ea);
      const auto* pb = b.peer(x, y, &eb);
      REQUIRE((pa == nullptr) == (pb == nullptr));
      REQUIRE(ea == eb);
      if (!pa) continue;
      CHECK(pa->transport == pb->transport);
      CHECK(pa->level == pb->level);
      CHECK(pa->directions == pb->directions);
      CHECK(pa->flow_cap_bytes_per_s == pb->flow_cap_bytes_per_s);
      CHECK(pa->weight == pb->weight);
      CHECK(pa->sm_read_gpu == pb->sm_read_gpu);
    }
  for (int g = 0; g < gpus; ++g) {
    CHECK(a.sm_read_weight(g) == b.sm_read_weight(g));
    CHECK(a.sm_read_copy_cost(g) == b.sm_read_copy_cost(g));
  }
}

}  // namespace

TEST_CASE("memoised routes equal fresh NodeRoutes on every node and its mutations, in any order", "[fast][routes]") {
  const std::vector<NodeSpec> nodes = nodes_and_mutations();
  REQUIRE(nodes.size() >= 16);
  // Twice through, forwards then backwards, so that cached entries are hit after other nodes were
  // asked for (and, past 16 distinct topologies, evicted and rebuilt).
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < nodes.size(); ++i) order.push_back(i);
  for (std::size_t i = nodes.size(); i-- > 0;) order.push_back(i);
  for (std::size_t i : order) {
    const NodeSpec& n = nodes[i];
    INFO("node " << n.id << " (variant " << i << ")");
    const NodeRoutes fresh(n);
    require_same_routes(*shared_node_routes(n), fresh, n.gpu_count);
    for (int P = 2; P <= n.gpu_count; P *= 2)
      for (int r = 0; r < P; ++r) {
        const HostLinkUse a = collective_host_link_use(n, r, P);
        const HostLinkUse b = collective_host_link_use(fresh, n, r, P);
        CHECK(a.flows_in == b.flows_in);
        CHECK(a.flows_out == b.flows_out);
        CHECK(a.flow_cap_bytes_per_s == b.flow_cap_bytes_per_s);
      }
  }
  // A node the routes reject is never cached: the error comes back every time.
  NodeSpec bad = node("2xh100-pcie");
  bad.links.front().b = bad.links.front().a;
  CHECK_THROWS_AS(shared_node_routes(bad), std::invalid_argument);
  CHECK_THROWS_AS(shared_node_routes(bad), std::invalid_argument);
}

TEST_CASE("memoised topology registers the resources and routes a fresh Topology has", "[fast][topology]") {
  for (const NodeSpec& n : nodes_and_mutations()) {
    INFO("node " << n.id);
    MaxMinSolver fresh_solver, shared_solver;
    const Topology fresh(n, fresh_solver);
    const auto shared = Topology::shared(n);
    shared->register_resources(shared_solver);
    REQUIRE(shared_solver.resource_count() == fresh_solver.resource_count());
    for (std::size_t r = 0; r < fresh_solver.resource_count(); ++r) {
      CHECK(shared_solver.resource_name(int(r)) == fresh_solver.resource_name(int(r)));
      CHECK(shared_solver.capacity(int(r)) == fresh_solver.capacity(int(r)));
    }
    REQUIRE(shared->vertex_names() == fresh.vertex_names());
    const int V = int(fresh.vertex_names().size());
    for (int s = 0; s < V; ++s)
      for (int d = 0; d < V; ++d) {
        if (s == d) continue;
        const Topology::Route* a = nullptr;
        const Topology::Route* b = nullptr;
        try {
          b = &fresh.route(s, d);
        } catch (const std::invalid_argument&) {
        }
        try {
          a = &shared->route(s, d);
        } catch (const std::invalid_argument&) {
        }
        REQUIRE((a == nullptr) == (b == nullptr));
        if (a) CHECK(*a == *b);
      }
    for (int g = 0; g < n.gpu_count; ++g)
      CHECK(shared->h2d_route(g) == fresh.route(Topology::kHostVertex, Topology::gpu_vertex(g)));
    // An occupied solver hands out other ids: refused.
    CHECK_THROWS_AS(shared->register_resources(shared_solver), std::logic_error);
  }
}

TEST_CASE("every compute op lasts its stage's compute time, sweep options change only the names "
          "(random configurations of the large grid)", "[fast][simulate]") {
  const Grid g = load_grid(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/grids/large.json");
  int compared = 0;
  for (const GridConfig& c : chunkflow::test::random_grid_configs(g, 30, 1123)) {
    const GridWorkload& gw = g.workloads[c.workload];
    const PolicyConfig& p = g.policies[c.policy];
    INFO("configuration " << c.index << ": " << gw.scenario.name << ", " << p.policy);
    StepPlan plan;
    try {
      plan = build_plan(gw.scenario.workload, gw.scenario.node, p);
    } catch (const InputError&) {
      continue;  // left out: the budget holds no plan
    }
    const NodeSpec& n = gw.scenario.node;
    REQUIRE(n.compute_slowdown_h2d == 0);
    REQUIRE(n.compute_slowdown_collective == 0);
    const SimResult full = simulate(plan, n);
    const SimOptions lean = lean_options();
    const SimResult fast = simulate(plan, n, lean);
    REQUIRE(full.timeline.rows.size() == plan.ops.size());
    REQUIRE(fast.timeline.rows.size() == plan.ops.size());
    for (const PlanOp& op : plan.ops) {
      const TimelineRow& a = full.timeline.rows[std::size_t(op.id)];
      const TimelineRow& b = fast.timeline.rows[std::size_t(op.id)];
      CHECK(a.name == op.name);
      CHECK(std::equal(a.deps.begin(), a.deps.end(), op.data_deps.begin(), op.data_deps.end()));
      CHECK(b.name.empty());
      CHECK(b.deps == a.deps);
      CHECK(b.start_s == a.start_s);
      CHECK(b.end_s == a.end_s);
      if (op.kind == OpKind::compute && op.stage >= 0)
        CHECK(a.end_s == a.start_s + stage_compute_time_s(plan.stage_of(op), n));  // as the executor adds it
    }
    CHECK(fast.summary.step_time_s == full.summary.step_time_s);
    CHECK(fast.summary.peak_memory_bytes == full.summary.peak_memory_bytes);
    CHECK(fast.summary.prefetch_stall_s == full.summary.prefetch_stall_s);
    CHECK(fast.events == full.events);
    CHECK(fast.bound.bound_step_time_s == full.bound.bound_step_time_s);
    ++compared;
  }
  CHECK(compared >= 15);
}

namespace {

/// The full path of one configuration: build_plan → validate → simulate, as `chunkflow simulate`.
std::optional<SimResult> full_path(const Grid& g, const GridConfig& c) {
  const GridWorkload& gw = g.workloads[c.workload];
  StepPlan plan;
  try {
    plan = build_plan(gw.scenario.workload, gw.scenario.node, g.policies[c.policy]);
  } catch (const InputError&) {
    return std::nullopt;
  }
  validate(plan);
  return simulate(plan, gw.scenario.node);
}

/// Runs configurations [first, first + count) of `g` in order through run_grid_config (its memo
/// warm from what ran before) and compares each with the full path, bit for bit: the row's CSV and
/// JSON lines, and the summary, bound and events field by field.
int compare_run(const Grid& g, int64_t first, int64_t count) {
  GridCursor cursor(g);
  int compared = 0;
  while (const auto c = cursor.next()) {
    if (c->index < first) continue;
    if (c->index >= first + count) break;
    INFO("configuration " << c->index << ": " << g.workloads[c->workload].scenario.name << ", "
                          << g.policies[c->policy].policy);
    const GridRow row = run_grid_config(g, *c);
    const auto full = full_path(g, *c);
    REQUIRE(row.row.has_value() == full.has_value());
    if (!full) continue;
    // The whole row as written (plan info, op count, memory verdict, summary, bound, events): a
    // memo hit takes the op count and verdict of the plan built before and fills the info itself.
    {
      const GridWorkload& gw = g.workloads[c->workload];
      const StepPlan plan = build_plan(gw.scenario.workload, gw.scenario.node, g.policies[c->policy]);
      const GridRow full_row{*c,
                             SweepRow{int(c->index), g.policies[c->policy], plan.info, full->summary,
                                      memory_verdict(plan, gw.scenario.node, full->summary.peak_memory_bytes),
                                      full->bound, full->events, plan.ops.size()},
                             ""};
      CHECK(grid_json_line(g, row) == grid_json_line(g, full_row));
      CHECK(grid_csv_line(g, row) == grid_csv_line(g, full_row));
    }
    const StepSummary& a = row.row->summary;
    const StepSummary& b = full->summary;
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    CHECK(a.compute_time_s == b.compute_time_s);
    CHECK(a.h2d_time_s == b.h2d_time_s);
    CHECK(a.comm_time_s == b.comm_time_s);
    CHECK(a.prefetch_stall_s == b.prefetch_stall_s);
    CHECK(a.collective_time_s == b.collective_time_s);
    CHECK(a.h2d_bytes == b.h2d_bytes);
    CHECK(row.row->bound.bound_step_time_s == full->bound.bound_step_time_s);
    CHECK(row.row->bound.binding == full->bound.binding);
    CHECK(row.row->events == full->events);
    ++compared;
  }
  return compared;
}

}  // namespace

TEST_CASE("the grid's simulation memo gives every row the full path's result (budgets, auto fractions, "
          "consecutive and random runs)", "[fast][grid]") {
  // Budgets that change no slot and "auto" fractions that resolve to listed ones plan the same ops:
  // those rows come from the memo. Every row is compared with the full path.
  const Grid g = grid_from_text(R"({
    "models": ["wan2.1-t2v-1.3b", "flux.1-dev"],
    "shapes": [{"height": 480, "width": 832, "frames": 17}, {"height": 512, "width": 512}],
    "nodes": ["2xh100-pcie", "4xrtx4090"],
    "layouts": [{"ulysses_degree": 1}, {"ulysses_degree": 2}],
    "policies": ["no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"],
    "chunk_mib": [32, 128],
    "resident_fractions": [0, 1, "auto"],
    "memory_budget_gib": [null, 6, 12, 48],
    "lookahead": [1, 2]})", "test", "");
  const GridCounts counts = count_grid(g);
  REQUIRE(counts.configurations > 300);
  CHECK(compare_run(g, 0, counts.configurations) > 300);
  const GridSimMemoStats s = grid_sim_memo_stats(g);
  INFO("memo hits " << s.hits << ", misses " << s.misses);
  CHECK(s.hits > s.misses / 2);  // the shortcut was taken, often
  CHECK(s.bytes <= 64u << 20);

  // Random runs of 70 consecutive configurations of the large example grid.
  const Grid large = load_grid(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/grids/large.json");
  const GridCounts lc = count_grid(large);
  std::mt19937 rng(2311);
  std::uniform_int_distribution<int64_t> pick(0, lc.configurations - 71);
  for (int run = 0; run < 2; ++run) CHECK(compare_run(large, pick(rng), 70) > 0);
  CHECK(grid_sim_memo_stats(large).hits > 0);
}

TEST_CASE("summarize indexes rows by position when ids are positions: equal to the hash map path on "
          "renumbered ids", "[fast][summarize]") {
  const Grid g = load_grid(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/grids/small.json");
  GridCursor cursor(g);
  int compared = 0;
  while (const auto c = cursor.next()) {
    if (c->index % 7 != 0) continue;
    const auto full = full_path(g, *c);
    if (!full) continue;
    // Ids shifted by 1000 (and the deps with them): no id is its row's index, so the map is used.
    Timeline shifted = full->timeline;
    for (TimelineRow& row : shifted.rows) {
      row.op_id += 1000;
      for (int& d : row.deps) d += 1000;
    }
    const StepSummary a = summarize(full->timeline), b = summarize(shifted);
    CHECK(a.step_time_s == b.step_time_s);
    CHECK(a.compute_time_s == b.compute_time_s);
    CHECK(a.h2d_time_s == b.h2d_time_s);
    CHECK(a.comm_time_s == b.comm_time_s);
    CHECK(a.prefetch_stall_s == b.prefetch_stall_s);
    CHECK(a.collective_time_s == b.collective_time_s);
    CHECK(a.h2d_bytes == b.h2d_bytes);
    CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
    ++compared;
  }
  CHECK(compared >= 10);
}

TEST_CASE("run_sweep's decision memo gives every row the full path's result, on 1 and 2 threads "
          "(auto fractions, fractions of 1, budgets)", "[fast][sweep]") {
  // FLUX 512² on 2xh100-pcie, Ulysses 2 (cheap plans): "auto" resolves to a listed fraction and a
  // fraction of 1 offloads nothing at any chunk size, so those rows share a decision with another;
  // on two threads the two may run at once (one waits for the other's claim).
  Scenario s = default_scenario();
  s.workload.model = "flux.1-dev";
  s.workload.height = s.workload.width = 512;
  s.workload.frames = 1;
  SweepGrid grid;
  grid.chunk_mib = {16, 64};
  for (const std::optional<double> budget : {std::optional<double>{}, std::optional<double>{12 * kGiB}}) {
    grid.memory_budget_bytes = budget;
    const std::vector<PolicyConfig> configs = sweep_configs(grid);
    for (const int threads : {1, 2}) {
      omp_set_num_threads(threads);
      int skipped = 0;
      const std::vector<SweepRow> rows = run_sweep(s, configs, 0, 1, &skipped);
      omp_set_num_threads(omp_get_num_procs());
      INFO("budget " << (budget ? *budget : 0.0) << ", threads " << threads);
      int compared = 0;
      for (const SweepRow& row : rows) {
        const PolicyConfig& config = configs[std::size_t(row.config_index)];
        const StepPlan plan = build_plan(s.workload, s.node, config);
        validate(plan);
        const SimResult full = simulate(plan, s.node);
        const SweepRow full_row{row.config_index, config, plan.info, full.summary,
                                memory_verdict(plan, s.node, full.summary.peak_memory_bytes), full.bound,
                                full.events, plan.ops.size()};
        CHECK(sweep_row_json(row).dump() == sweep_row_json(full_row).dump());
        CHECK(sweep_csv(s, {row}) == sweep_csv(s, {full_row}));
        ++compared;
      }
      CHECK(compared + skipped == int(configs.size()));
      CHECK(compared > 10);
    }
    // The shortcut is exercised: some rows share their decision with an earlier row.
    std::set<std::string> seen;
    int shared = 0;
    for (const PolicyConfig& config : configs) {
      try {
        std::string key;
        encode_decision(decide_plan(s.workload, s.node, config).schedule, 0, config.steps, key);
        shared += seen.insert(key).second ? 0 : 1;
      } catch (const InputError&) {  // the budget cannot hold it: no row
      }
    }
    CHECK(shared >= 3);
  }
}

TEST_CASE("the decision memo: a claimed key makes other threads wait for its outcome, an abandoned "
          "claim passes to a waiter, hits are counted", "[fast][memo]") {
  DecisionMemo memo;
  SimOutcome outcome;
  outcome.summary.step_time_s = 0.25;
  outcome.ops = 7;
  REQUIRE_FALSE(memo.find_or_claim("a").has_value());  // claimed by this thread
  std::atomic<int> got_ops{-1};
  std::thread waiter([&] {
    const std::optional<SimOutcome> o = memo.find_or_claim("a");  // waits for the claim
    got_ops = o ? int(o->ops) : -2;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(got_ops == -1);  // still waiting: no outcome yet, and it did not claim "a" itself
  memo.insert("a", outcome);
  waiter.join();
  CHECK(got_ops == 7);

  REQUIRE_FALSE(memo.find_or_claim("b").has_value());
  std::atomic<bool> claimed{false};
  std::thread second([&] {
    claimed = !memo.find_or_claim("b").has_value();  // gets the claim once "b" is abandoned
    if (claimed) memo.insert("b", outcome);
  });
  memo.abandon("b");
  second.join();
  CHECK(claimed);
  const auto b = memo.find_or_claim("b");
  REQUIRE(b.has_value());
  CHECK(b->summary.step_time_s == 0.25);
  const DecisionMemoStats st = memo.stats();
  CHECK(st.hits == 2);    // the waiter's "a" and this "b"
  CHECK(st.misses == 3);  // the claims: "a", "b", and "b" again after the abandon
  CHECK(st.bytes > 0);
}

TEST_CASE("the decision memo's sampled key hash: long keys that differ only between its samples hash "
          "alike, and the memo still keeps one outcome per key", "[fast][memo]") {
  // Short keys: std::hash of the whole key.
  CHECK(DecisionMemo::key_hash("abc") == std::hash<std::string_view>{}("abc"));
  // A long key and a byte flipped where no sample reads: the same hash, by construction.
  const std::size_t n = 3 * DecisionMemo::kHashedWhole + 12345;
  std::string a(n, '\0');
  for (std::size_t i = 0; i < n; ++i) a[i] = char((i * 2654435761u) >> 13);
  const std::size_t stride = (n - 8) / DecisionMemo::kHashSamples;
  const std::size_t half = DecisionMemo::kHashedWhole / 2;
  std::size_t unsampled = 0;  // an offset past the head, before the tail, outside every sampled word
  for (std::size_t i = half; i + half < n && !unsampled; ++i)
    if (i % stride >= 8) unsampled = i;
  REQUIRE(unsampled > 0);
  std::string b = a;
  b[unsampled] = char(b[unsampled] ^ 0x5a);
  REQUIRE(a != b);
  CHECK(DecisionMemo::key_hash(a) == DecisionMemo::key_hash(b));
  // Flipping a sampled byte, the length, the head or the tail changes it (for these keys).
  const std::size_t sampled = (half / stride + 10) * stride;  // a sampled word's first byte, past the head
  REQUIRE(sampled + half < n);
  std::string c = a;
  c[sampled] = char(c[sampled] ^ 0x5a);
  CHECK(DecisionMemo::key_hash(c) != DecisionMemo::key_hash(a));
  CHECK(DecisionMemo::key_hash(a.substr(0, n - 1)) != DecisionMemo::key_hash(a));
  // The memo decides on the whole key: colliding keys keep their own outcomes, claims and hits.
  DecisionMemo memo;
  SimOutcome oa, ob;
  oa.ops = 1;
  ob.ops = 2;
  REQUIRE_FALSE(memo.find_or_claim(a).has_value());
  bool busy = true;
  REQUIRE_FALSE(memo.find_or_claim_unless_busy(b, &busy).has_value());  // not busy: b is not a's claim
  CHECK_FALSE(busy);
  memo.insert(b, ob);
  memo.insert(a, oa);
  const auto got_a = memo.find_or_claim(a), got_b = memo.find_or_claim(b);
  REQUIRE(got_a.has_value());
  REQUIRE(got_b.has_value());
  CHECK(got_a->ops == 1);
  CHECK(got_b->ops == 2);
  const DecisionMemoStats st = memo.stats();
  CHECK(st.hits == 2);
  CHECK(st.misses == 2);
}

TEST_CASE("the decision memo's non-waiting look-up: busy while a claim is held, the decision left "
          "as it was, the kept outcome once the claim is released", "[fast][memo]") {
  DecisionMemo memo;
  SimOutcome outcome;
  outcome.ops = 5;
  REQUIRE_FALSE(memo.find_or_claim("a").has_value());  // claimed (as by another thread)
  bool busy = false;
  std::optional<SimOutcome> got;
  std::thread other([&] { got = memo.find_or_claim_unless_busy("a", &busy); });  // returns at once
  other.join();
  CHECK(busy);
  CHECK_FALSE(got.has_value());
  memo.insert("a", outcome);
  got = memo.find_or_claim_unless_busy("a", &busy);
  CHECK_FALSE(busy);
  REQUIRE(got.has_value());
  CHECK(got->ops == 5);
  got = memo.find_or_claim_unless_busy("c", &busy);  // unseen and unclaimed: claimed now
  CHECK_FALSE(busy);
  CHECK_FALSE(got.has_value());
  std::thread third([&] { got = memo.find_or_claim_unless_busy("c", &busy); });
  third.join();
  CHECK(busy);
  memo.abandon("c");
  const DecisionMemoStats st = memo.stats();
  CHECK(st.hits == 1);    // "a" after its insert
  CHECK(st.misses == 2);  // the claims of "a" and "c"; a busy answer is neither

  // run_decision_unless_busy on a real decision: while its key is claimed it returns nullopt and
  // leaves the decision whole; once the outcome is kept it returns the full path's row content.
  const Scenario s = default_scenario();
  PolicyConfig config;
  config.policy = "chunkflow";
  config.chunk_bytes = 64 * kMiB;
  config.resident_fraction = 0.5;
  PlanDecision d = decide_plan(s.workload, s.node, config);
  const std::size_t pieces = d.schedule.pieces.size();
  REQUIRE(pieces > 0);
  std::string key;
  encode_decision(d.schedule, 0, config.steps, key);
  DecisionMemo plans;
  REQUIRE_FALSE(plans.find_or_claim(key).has_value());
  const ForwardCost cost = forward_cost(s.workload);
  const SimOptions options = lean_options();
  std::optional<DecisionRun> run;
  std::thread asker([&] {
    run = run_decision_unless_busy(s.workload, s.node, cost, 0, config.steps, d, options, plans);
  });
  asker.join();
  CHECK_FALSE(run.has_value());
  CHECK(d.schedule.pieces.size() == pieces);  // not moved from
  const DecisionRun full = run_decision(s.workload, s.node, cost, 0, config.steps, decide_plan(s.workload, s.node, config),
                                        options, nullptr);
  plans.insert(key, full.outcome);
  run = run_decision_unless_busy(s.workload, s.node, cost, 0, config.steps, d, options, plans);
  REQUIRE(run.has_value());
  CHECK(run->outcome.summary.step_time_s == full.outcome.summary.step_time_s);
  CHECK(run->outcome.ops == full.outcome.ops);
  CHECK(plans.stats().hits == 1);
}

TEST_CASE("the collective flow cache gives every collective op collective_flows' flows (every node, "
          "Ulysses, ring, TP, FSDP, parallel CFG, ops in random order)", "[fast][flows]") {
  std::mt19937 rng(20261125);
  int compared_ops = 0, plans = 0;
  for (const std::string& id : node_ids()) {
    const NodeSpec n = node(id);
    for (int layout = 0; layout < 6; ++layout) {
      Workload w = test::workload("flux.1-dev", 512, 512, 1, 1 + (layout == 0 || layout == 5 ? 1 : 0));
      if (layout == 1) w.ring_degree = 2;
      if (layout == 2) w.tp_degree = 2;
      if (layout == 3) w.fsdp = true, w.ulysses_degree = 2;
      if (layout == 4) w.cfg = CfgMode::parallel;
      if (layout == 5 && n.gpu_count >= 4) w.ulysses_degree = 4, w.ring_degree = n.gpu_count >= 8 ? 2 : 1;
      if (gpus_used(w) > n.gpu_count) continue;
      INFO(id << ", " << layout_text(w));
      PolicyConfig p = test::policy("layerwise");
      p.resident_fraction = 0.5;
      StepPlan plan;
      try {
        plan = build_plan(w, n, p);
      } catch (const InputError&) {
        continue;
      }
      const std::shared_ptr<const Topology> topology = Topology::shared(n);
      CollectiveFlowCache cache(plan, n, *topology);
      // The plan's collective ops, and copies of some with other buffers (the key's bytes part).
      std::vector<PlanOp> resized;
      for (const PlanOp& op : plan.ops)
        if (op.kind == OpKind::collective && resized.size() < 8) {
          resized.push_back(op);
          resized.back().bytes = op.bytes * double(resized.size() + 1) / 3;
        }
      std::vector<const PlanOp*> ops;
      for (const PlanOp& op : plan.ops)
        if (op.kind == OpKind::collective) ops.push_back(&op);
      for (const PlanOp& op : resized) ops.push_back(&op);
      std::shuffle(ops.begin(), ops.end(), rng);
      for (const PlanOp* op : ops) {
        const std::vector<FlowSpec> fresh = collective_flows(*op, plan, n, *topology);
        const std::vector<FlowSpec>& cached = cache.flows(*op);
        REQUIRE(cached.size() == fresh.size());
        for (std::size_t k = 0; k < fresh.size(); ++k) {
          CHECK(cached[k].route == fresh[k].route);  // the Topology's own route, not a copy
          CHECK(cached[k].bytes == fresh[k].bytes);
          CHECK(cached[k].bound_bytes_per_s == fresh[k].bound_bytes_per_s);
        }
        ++compared_ops;
      }
      ++plans;
    }
  }
  CHECK(plans >= 12);
  CHECK(compared_ops >= 1000);
}

namespace {

/// Calls visit(workload, node, policy) on `count` random configurations of the large grid (`seed`)
/// and, on every built-in node with the GPUs for it, on FLUX 512² with ring attention 2, TP 2,
/// FSDP, parallel CFG and Ulysses over every GPU, planned by each of `policies` at 32 MiB chunks
/// and a resident fraction of 0.25: the sample the exactness tests of the shortcuts run on.
template <class Visit>
void for_sample_configs(int count, unsigned seed, std::initializer_list<const char*> policies, Visit&& visit) {
  const Grid g = load_grid(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/grids/large.json");
  for (const GridConfig& c : chunkflow::test::random_grid_configs(g, count, seed)) {
    const GridWorkload& gw = g.workloads[c.workload];
    INFO("configuration " << c.index << ": " << gw.scenario.name << ", " << g.policies[c.policy].policy);
    visit(gw.scenario.workload, gw.scenario.node, g.policies[c.policy]);
  }
  for (const std::string& id : node_ids()) {
    const NodeSpec n = node(id);
    for (int layout = 0; layout < 5; ++layout) {
      Workload w = test::workload("flux.1-dev", 512, 512, 1, 2);
      if (layout == 0) w.ring_degree = 2, w.ulysses_degree = 1;
      if (layout == 1) w.tp_degree = 2, w.ulysses_degree = 1;
      if (layout == 2) w.fsdp = true;
      if (layout == 3) w.cfg = CfgMode::parallel;
      if (layout == 4) w.ulysses_degree = n.gpu_count;
      if (gpus_used(w) > n.gpu_count) continue;
      for (const char* name : policies) {
        INFO(id << ", " << layout_text(w) << ", " << name);
        PolicyConfig p = test::policy(name);
        p.chunk_bytes = 32 * kMiB;
        p.resident_fraction = 0.25;
        visit(w, n, p);
      }
    }
  }
}

/// compare(plan, node) on the plans of for_sample_configs' sample (a configuration whose memory
/// budget holds no plan is skipped).
template <class Compare>
void for_sample_plans(int count, unsigned seed, std::initializer_list<const char*> policies, Compare&& compare) {
  for_sample_configs(count, seed, policies, [&](const Workload& w, const NodeSpec& n, const PolicyConfig& p) {
    std::optional<StepPlan> plan;
    try {
      plan = build_plan(w, n, p);
    } catch (const InputError&) {
      return;  // left out: the budget holds no plan
    }
    compare(*plan, n);
  });
}

}  // namespace

TEST_CASE("simulate's memo of max-min rates per set of active flows gives the timeline of a solve at every "
          "event (random configurations of the large grid, every node with ring, TP, FSDP, parallel CFG)",
          "[fast][simulate]") {
  const SimOptions lean = lean_options();
  int compared = 0, capped = 0;
  auto compare = [&](const StepPlan& plan, const NodeSpec& n) {
    set_simulate_exhaustive(true);
    const SimResult full = simulate(plan, n, lean);
    set_simulate_exhaustive(false);
    const SimResult fast = simulate(plan, n, lean);
    REQUIRE(fast.timeline.rows.size() == full.timeline.rows.size());
    for (std::size_t i = 0; i < full.timeline.rows.size(); ++i) {
      CHECK(fast.timeline.rows[i].start_s == full.timeline.rows[i].start_s);
      CHECK(fast.timeline.rows[i].end_s == full.timeline.rows[i].end_s);
    }
    CHECK(fast.events == full.events);
    CHECK(fast.summary.step_time_s == full.summary.step_time_s);
    CHECK(fast.summary.prefetch_stall_s == full.summary.prefetch_stall_s);
    CHECK(fast.summary.peak_memory_bytes == full.summary.peak_memory_bytes);
    CHECK(fast.bound.bound_step_time_s == full.bound.bound_step_time_s);
    for (const PlanOp& op : plan.ops)
      if (op.kind == OpKind::h2d && op.rate_cap_bytes_per_s > 0) {
        ++capped;  // copies capped below the copy engine: flows that differ in their bound only
        break;
      }
    ++compared;
  };
  for_sample_plans(40, 20261125, {"layerwise", "chunkflow"}, compare);
  CHECK(compared >= 40);
  CHECK(capped >= 1);
}

namespace {

/// Every field of two summaries, bit for bit.
void check_same_summary(const StepSummary& a, const StepSummary& b) {
  CHECK(a.step == b.step);
  CHECK(a.step_time_s == b.step_time_s);
  CHECK(a.compute_time_s == b.compute_time_s);
  CHECK(a.h2d_time_s == b.h2d_time_s);
  CHECK(a.comm_time_s == b.comm_time_s);
  CHECK(a.collective_time_s == b.collective_time_s);
  CHECK(a.prefetch_stall_s == b.prefetch_stall_s);
  CHECK(a.h2d_bytes == b.h2d_bytes);
  CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
}

}  // namespace

TEST_CASE("simulate without rows gives the summary, bound and events of summarize on its rows, summarize "
          "without sorting lists already in order equals sorting them all (random configurations of the "
          "large grid, every node with ring, TP, FSDP, parallel CFG)",
          "[fast][summarize]") {
  const SimOptions lean = lean_options();
  SimOptions rowless = lean;
  rowless.record_rows = false;
  int compared = 0, lanes_in_order = 0, lanes = 0, stalled = 0;
  auto compare = [&](const StepPlan& plan, const NodeSpec& n) {
    const SimResult with_rows = simulate(plan, n, lean);
    stalled += with_rows.summary.prefetch_stall_s > 0;  // the field that reads the lanes' order
    const SimResult without = simulate(plan, n, rowless);
    CHECK(without.timeline.rows.empty());
    REQUIRE(with_rows.timeline.rows.size() == plan.ops.size());
    check_same_summary(without.summary, with_rows.summary);
    CHECK(without.events == with_rows.events);
    CHECK(without.bound.bound_step_time_s == with_rows.bound.bound_step_time_s);
    CHECK(without.bound.binding == with_rows.bound.binding);
    CHECK(without.bound.link_s == with_rows.bound.link_s);
    CHECK(without.bound.link_resource == with_rows.bound.link_resource);
    // The reference: every list sorted. On the rows as simulated (lists nearly always in order)
    // and reversed (lists out of order: the sorts run), and with the ranks
    // renumbered sparsely (the per-rank slots by ascending rank, not by index).
    const Timeline& t = with_rows.timeline;
    Timeline reversed = t;
    std::reverse(reversed.rows.begin(), reversed.rows.end());
    Timeline sparse = t;
    for (TimelineRow& row : sparse.rows) row.rank = 1000 * row.rank + 7;
    for (const Timeline* x : std::initializer_list<const Timeline*>{&t, &reversed, &sparse}) {
      set_summarize_exhaustive(true);
      const StepSummary all_sorted = summarize(*x);
      set_summarize_exhaustive(false);
      check_same_summary(summarize(*x), all_sorted);
    }
    check_same_summary(summarize(sparse), summarize(t));  // the same ranks in the same order
    // The shortcut is taken: a simulated lane in op id order is in (start, end, id) order.
    for (int r = 0; r < t.ranks; ++r)
      for (Lane lane : {Lane::compute, Lane::h2d, Lane::comm}) {
        const TimelineRow* last = nullptr;
        bool in_order = true, any = false;
        for (const TimelineRow& row : t.rows) {
          if (row.rank != r || row.lane != lane) continue;
          any = true;
          if (last && std::tie(row.start_s, row.end_s, row.op_id) < std::tie(last->start_s, last->end_s, last->op_id))
            in_order = false;
          last = &row;
        }
        lanes += any, lanes_in_order += any && in_order;
      }
    ++compared;
  };
  for_sample_plans(30, 20261126, {"chunkflow"}, compare);
  CHECK(compared >= 30);
  CHECK(stalled >= 5);
  INFO(lanes_in_order << " of " << lanes << " simulated lanes in order");
  CHECK(lanes_in_order * 10 >= lanes * 9);
}

namespace {

/// |a − b| ≤ 1e-9 · max(|a|, |b|) (issue 12's tolerance for a shortcut whose float sums differ).
bool within_1e9(double a, double b) { return a == b || std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST_CASE("simulate's rank symmetry (one representative rank per orbit, orbit flows with summed uses) gives "
          "the full simulation's times, events, summary and bound within 1e-9 (random configurations of "
          "the large grid, every node and its mutations, ring, TP, FSDP, parallel CFG, calibrated slowdowns)",
          "[fast][symmetry]") {
  SimOptions rowless = lean_options();
  rowless.record_rows = false;
  int compared = 0, taken = 0, partial = 0, fell_back = 0;
  auto compare = [&](const StepPlan& plan, const NodeSpec& n) {
    set_simulate_symmetric(false);
    const SimResult full = simulate(plan, n, lean_options());
    set_simulate_symmetric(true);
    const SimResult fast = simulate(plan, n, lean_options());
    const SimResult fast_rowless = simulate(plan, n, rowless);
    CHECK(fast_rowless.rank_symmetric == fast.rank_symmetric);
    CHECK(!full.rank_symmetric);
    REQUIRE(fast.timeline.rows.size() == full.timeline.rows.size());
    // Op by op (counted, then checked once: millions of ops in all).
    int ops_apart = 0;
    std::string first_apart;
    auto apart = [&](const TimelineRow& x, const TimelineRow& y, const char* what) {
      if (within_1e9(x.start_s, y.start_s) && within_1e9(x.end_s, y.end_s)) return;
      if (ops_apart++ == 0) first_apart = std::string(what) + ": op " + std::to_string(x.op_id) + " of rank " + std::to_string(x.rank);
    };
    for (std::size_t i = 0; i < full.timeline.rows.size(); ++i) apart(fast.timeline.rows[i], full.timeline.rows[i], "fast vs full");
    CHECK(fast.events == full.events);
    CHECK(fast_rowless.events == full.events);
    for (const SimResult* r : {&fast, &fast_rowless}) {
      const StepSummary &a = r->summary, &b = full.summary;
      CHECK(within_1e9(a.step_time_s, b.step_time_s));
      CHECK(within_1e9(a.compute_time_s, b.compute_time_s));
      CHECK(within_1e9(a.h2d_time_s, b.h2d_time_s));
      CHECK(within_1e9(a.comm_time_s, b.comm_time_s));
      CHECK(within_1e9(a.collective_time_s, b.collective_time_s));
      CHECK(within_1e9(a.prefetch_stall_s, b.prefetch_stall_s));
      CHECK(a.h2d_bytes == b.h2d_bytes);
      CHECK(a.peak_memory_bytes == b.peak_memory_bytes);
      CHECK(within_1e9(r->bound.bound_step_time_s, full.bound.bound_step_time_s));
      CHECK(within_1e9(r->bound.link_s, full.bound.link_s));
      CHECK(r->bound.binding == full.bound.binding);
      CHECK(r->bound.link_resource == full.bound.link_resource);
    }
    // The property the shortcut rests on, seen in the full simulation: the ranks detection puts in
    // one orbit have the same times, op for op.
    const std::shared_ptr<const Topology> topology = Topology::shared(n);
    CollectiveFlowCache cache(plan, n, *topology);
    const std::unique_ptr<const RankSymmetry> sym = detect_rank_symmetry(plan, n, *topology, cache);
    CHECK((sym != nullptr) == fast.rank_symmetric);
    // validate()'s rank-copy finding handed to the detection (SimOptions::rank_copy_ops, as
    // run_decision does) gives the symmetry and the run the op-by-op check gives, bit for bit.
    {
      const int copies = validate(plan);
      if (plan.info.ranks >= 2) CHECK(std::size_t(copies) * std::size_t(plan.info.ranks) == plan.ops.size());
      CollectiveFlowCache vouched_cache(plan, n, *topology);
      const std::unique_ptr<const RankSymmetry> vouched = detect_rank_symmetry(plan, n, *topology, vouched_cache, copies);
      REQUIRE((vouched != nullptr) == (sym != nullptr));
      if (sym) {
        CHECK(vouched->ops_of_rank == sym->ops_of_rank);
        CHECK(vouched->representative == sym->representative);
        CHECK(vouched->orbit_size == sym->orbit_size);
        CHECK(vouched->simulated_ops == sym->simulated_ops);
      }
      SimOptions hinted = rowless;
      hinted.rank_copy_ops = copies;
      const SimResult h = simulate(plan, n, hinted);
      CHECK(h.rank_symmetric == fast_rowless.rank_symmetric);
      CHECK(h.events == fast_rowless.events);
      CHECK(h.summary.step_time_s == fast_rowless.summary.step_time_s);
      CHECK(h.summary.prefetch_stall_s == fast_rowless.summary.prefetch_stall_s);
      CHECK(h.summary.peak_memory_bytes == fast_rowless.summary.peak_memory_bytes);
      CHECK(h.bound.bound_step_time_s == fast_rowless.bound.bound_step_time_s);
    }
    if (sym) {
      const std::size_t m = std::size_t(sym->ops_per_rank);
      bool several_orbits = false;
      for (std::size_t j = 0; j < std::size_t(sym->ranks); ++j) {
        const std::size_t rep = std::size_t(sym->representative[j]);
        several_orbits |= rep != 0;
        for (std::size_t k = 0; k < m; ++k) {
          const TimelineRow& x = full.timeline.rows[std::size_t(sym->ops_of_rank[j * m + k])];
          const TimelineRow& y = full.timeline.rows[std::size_t(sym->ops_of_rank[rep * m + k])];
          REQUIRE(x.rank == int(j));
          REQUIRE(y.rank == int(rep));
          apart(x, y, "full, rank vs its representative");
        }
      }
      // step_bound evaluates the representatives' ops alone (their minimum durations and tails
      // stand for their orbits'): the same bound, bit for bit, as without the symmetry.
      for (const double previous_end_s : {-1.0, 0.0, full.summary.step_time_s}) {
        const StepBound with = step_bound(plan, n, previous_end_s, sym.get()), without = step_bound(plan, n, previous_end_s);
        CHECK(with.bound_step_time_s == without.bound_step_time_s);
        CHECK(with.critical_path_s == without.critical_path_s);
        CHECK(with.link_s == without.link_s);
        CHECK(with.copy_lane_s == without.copy_lane_s);
        CHECK(with.chain_lane_s == without.chain_lane_s);
        CHECK(with.link_resource == without.link_resource);
        CHECK(with.binding == without.binding);
      }
      ++taken, partial += several_orbits;
    } else {
      fell_back += plan.info.ranks > 1;
    }
    INFO(first_apart);
    CHECK(ops_apart == 0);
    // Samples per rank and per link are not symmetric outputs: those runs take the full path.
    SimOptions memory = rowless;
    memory.record_memory = true;
    CHECK(!simulate(plan, n, memory).rank_symmetric);
    ++compared;
  };
  for_sample_plans(60, 20261126, {"layerwise", "chunkflow"}, compare);
  // Every node and its mutations (a slower first link, no duplex, P2P off, a pair without P2P, a
  // stricter P2P level, NVLink as PCIe, per-flow caps), Ulysses over every GPU, with and without
  // calibrated slowdowns (which read each rank's copies and collectives in flight).
  // Also each node with its last GPU's host link at half its H2D rate (that rank in an orbit of
  // its own), and ring attention over every GPU (a ring in rank order: only rotations keep it).
  std::vector<NodeSpec> nodes = nodes_and_mutations();
  for (const std::string& id : node_ids()) {
    NodeSpec n = node(id);
    if (n.gpu_count < 2) continue;
    for (LinkSpec& l : n.links)
      if (l.name == n.host_link(n.gpu_count - 1).name) l.a_to_b_bytes_per_s *= 0.5;
    nodes.push_back(n);
  }
  int mutated = 0;
  for (NodeSpec n : nodes) {
    if (n.gpu_count < 2 || !test::property_case_runs(mutated++, int(nodes.size()))) continue;
    for (bool ring : {false, true}) {
      Workload w = test::workload("flux.1-dev", 512, 512, 1, ring ? 1 : n.gpu_count);
      if (ring) w.ring_degree = n.gpu_count;
      PolicyConfig p = test::policy("chunkflow");
      p.chunk_bytes = 32 * kMiB;
      p.resident_fraction = 0.25;
      INFO(n.id << " (mutation " << mutated << "), " << layout_text(w));
      try {
        const StepPlan plan = build_plan(w, n, p);
        compare(plan, n);
        NodeSpec slowed = n;
        slowed.compute_slowdown_h2d = 0.07, slowed.compute_slowdown_collective = 0.03;
        compare(plan, slowed);
      } catch (const InputError&) {
      }
    }
  }
  set_simulate_symmetric(true);
  INFO(compared << " compared, " << taken << " symmetric (" << partial << " with several orbits), " << fell_back
                << " multi-rank plans on the full path");
  CHECK(compared >= 100);
  CHECK(taken * 3 >= compared);  // the shortcut is taken, in a good share
  CHECK(partial >= 5);           // nodes whose GPUs split into classes (host memory on one socket)
  // and plans it must not take (ring order, unequal links, slowdowns): every node's in the full run,
  // one at least when CHUNKFLOW_PROPERTY_CONFIGS thins the node loop
  CHECK(fell_back >= (test::property_configs_limit() == 0 ? 3 : 1));
}

TEST_CASE("detect_rank_symmetry refuses a plan one of whose ranks differs from rank 0 in one op field, one "
          "dependency's position or a dependency on another rank",
          "[fast][symmetry]") {
  // Ulysses 2 on 2xh100-pcie: one orbit of both ranks as built; each edit of rank 1's program alone
  // must make detection decline (the executor would otherwise give rank 1 rank 0's times).
  const NodeSpec n = node("2xh100-pcie");
  PolicyConfig p = test::policy("chunkflow");
  p.chunk_bytes = 32 * kMiB;
  p.resident_fraction = 0.25;
  const StepPlan plan = build_plan(test::workload("flux.1-dev", 512, 512, 1, 2), n, p);
  const std::shared_ptr<const Topology> topology = Topology::shared(n);
  auto detected = [&](const StepPlan& edited) {
    CollectiveFlowCache cache(edited, n, *topology);
    return detect_rank_symmetry(edited, n, *topology, cache) != nullptr;
  };
  REQUIRE(detected(plan));
  // Rank 1's first op of each kind, and its first op with two or more deps.
  auto first_of_rank1 = [&](auto&& pred) {
    for (const PlanOp& op : plan.ops)
      if (op.rank == 1 && pred(op)) return op.id;
    FAIL("no such op of rank 1");
    return -1;
  };
  const int h2d = first_of_rank1([](const PlanOp& op) { return op.kind == OpKind::h2d; });
  const int collective = first_of_rank1([](const PlanOp& op) { return op.kind == OpKind::collective; });
  const int compute = first_of_rank1([](const PlanOp& op) { return op.kind == OpKind::compute; });
  const int joined = first_of_rank1([](const PlanOp& op) { return op.deps.size() >= 2; });
  const std::vector<std::pair<const char*, std::function<void(StepPlan&)>>> edits = {
      {"h2d bytes", [&](StepPlan& q) { q.ops[std::size_t(h2d)].bytes += 256; }},
      {"h2d source offset", [&](StepPlan& q) { q.ops[std::size_t(h2d)].src_offset_bytes += 256; }},
      {"h2d rate cap", [&](StepPlan& q) { q.ops[std::size_t(h2d)].rate_cap_bytes_per_s = 1e9; }},
      {"h2d slot", [&](StepPlan& q) { q.ops[std::size_t(h2d)].slot += 1; }},
      {"h2d chunk", [&](StepPlan& q) { q.ops[std::size_t(h2d)].chunk += 1; }},
      {"alloc", [&](StepPlan& q) { q.ops[std::size_t(h2d)].alloc_bytes += 256; }},
      {"free", [&](StepPlan& q) { q.ops[std::size_t(compute)].free_bytes += 256; }},
      {"compute stage", [&](StepPlan& q) { q.ops[std::size_t(compute)].stage += 1; }},
      {"compute block", [&](StepPlan& q) { q.ops[std::size_t(compute)].block += 1; }},
      {"compute step", [&](StepPlan& q) { q.ops[std::size_t(compute)].step += 1; }},
      {"collective bytes", [&](StepPlan& q) { q.ops[std::size_t(collective)].bytes *= 2; }},
      {"collective group", [&](StepPlan& q) { q.ops[std::size_t(collective)].collective_group += 1000; }},
      {"lane", [&](StepPlan& q) { q.ops[std::size_t(compute)].lane = Lane::comm; }},
      {"a dependency's position",
       [&](StepPlan& q) {
         OpIds& deps = q.ops[std::size_t(joined)].deps;
         deps[0] = deps[1];  // same rank, another position
       }},
      {"a dependency on rank 0", [&](StepPlan& q) { q.ops[std::size_t(joined)].deps[0] = q.ops[0].id; }},
  };
  REQUIRE(plan.ops[0].rank == 0);
  for (const auto& [what, edit] : edits) {
    INFO("rank 1 edited: " << what);
    StepPlan edited = plan;
    edit(edited);
    CHECK_FALSE(detected(edited));
  }
}

namespace {

/// Two plans op for op, every field the executors and reports read.
/// Every field equal (the names too, unless `names` is false).
void check_same_plan(const StepPlan& a, const StepPlan& b, bool names = true) {
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    const PlanOp &x = a.ops[i], &y = b.ops[i];
    INFO("op " << i << " " << x.name);
    CHECK(x.id == y.id);
    if (names) CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.lane == y.lane);
    CHECK(x.rank == y.rank);
    CHECK(x.step == y.step);
    CHECK(x.block == y.block);
    CHECK(x.stage == y.stage);
    CHECK(x.chunk == y.chunk);
    CHECK(x.slot == y.slot);
    CHECK(x.flop == y.flop);
    CHECK(x.bytes == y.bytes);
    CHECK(x.src_offset_bytes == y.src_offset_bytes);
    CHECK(x.collective_group == y.collective_group);
    CHECK(x.alloc_bytes == y.alloc_bytes);
    CHECK(x.free_bytes == y.free_bytes);
    CHECK(x.rate_cap_bytes_per_s == y.rate_cap_bytes_per_s);
    CHECK(std::equal(x.deps.begin(), x.deps.end(), y.deps.begin(), y.deps.end()));
    CHECK(std::equal(x.data_deps.begin(), x.data_deps.end(), y.data_deps.begin(), y.data_deps.end()));
  }
  CHECK(a.info.ranks == b.info.ranks);
  CHECK(a.info.slot_count == b.info.slot_count);
  CHECK(a.info.resident_weight_bytes == b.info.resident_weight_bytes);
}

}  // namespace

TEST_CASE("the plan builder's rank copies (rank 0 built, the other ranks shifted) equal the plan built rank by "
          "rank (random configurations of the large grid, every node with ring, TP, FSDP, parallel CFG, full Ulysses)",
          "[fast][builder]") {
  int compared = 0, multi_rank = 0;
  auto compare = [&](const Workload& w, const NodeSpec& n, const PolicyConfig& p) {
    StepPlan fast;
    try {
      fast = build_plan(w, n, p);
    } catch (const InputError&) {
      return;  // left out: the budget holds no plan
    }
    set_plan_builder_exhaustive(true);
    const StepPlan full = build_plan(w, n, p);
    set_plan_builder_exhaustive(false);
    check_same_plan(full, fast);
    CHECK_NOTHROW(validate(fast));
    ++compared;
    if (fast.info.ranks > 1) ++multi_rank;
  };
  for_sample_configs(60, 20261126, {"no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"}, compare);
  CHECK(compared >= 80);
  CHECK(multi_rank >= 40);
}

TEST_CASE("ProgramLayout::readers gives what a scan of every position of the block gives (the sample's "
          "workloads: large-grid configurations, ring, TP, FSDP, parallel CFG, full Ulysses)",
          "[fast][builder]") {
  int blocks = 0, mismatches = 0;
  long queries = 0, met = 0;
  std::mt19937_64 rng(20261127);
  for_sample_configs(40, 20261127, {"chunkflow"}, [&](const Workload& w, const NodeSpec&, const PolicyConfig&) {
    const ForwardCost cost = forward_cost(w);
    const ProgramLayout layout(cost);
    const int nblocks = int(cost.blocks.size());
    for (int b : {0, nblocks / 2, nblocks - 1}) {  // a model's blocks share a few kinds
      ++blocks;
      int first_p = -1, end_p = 0;  // the block's positions [first_p, end_p)
      for (int p = 0; p < layout.positions_per_step(); ++p)
        if (layout.at(p).block == b) {
          if (first_p < 0) first_p = p;
          end_p = p + 1;
        }
      REQUIRE(first_p >= 0);
      const double weight = cost.blocks[b].weight_bytes;
      std::vector<double> edges{-1.0, -0.0, 0.0, weight, weight + 1.0, std::nextafter(0.0, 1.0),
                                std::numeric_limits<double>::quiet_NaN()};
      for (const auto& [lo, hi] : layout.units(b))
        edges.insert(edges.end(), {lo, hi, std::nextafter(lo, -1e300), std::nextafter(hi, 1e300), 0.5 * (lo + hi)});
      std::uniform_real_distribution<double> any(-0.1 * weight, 1.1 * weight);
      for (int k = 0; k < 8; ++k) edges.push_back(any(rng));
      for (double lo : edges)
        for (double hi : edges) {  // every pair: empty and reversed ranges too
          int first = -1, last = -1;
          for (int p = first_p; p < end_p; ++p)
            if (layout.at(p).lo_bytes < hi && layout.at(p).hi_bytes > lo) {
              if (first < 0) first = p;
              last = p;
            }
          const auto got = layout.readers(b, lo, hi);
          ++queries;
          if (first >= 0) ++met;
          if (got != std::make_pair(first, last) && ++mismatches <= 5)
            FAIL_CHECK("block " << b << ", [" << lo << ", " << hi << "): readers " << got.first << ".." << got.second
                                << ", the scan " << first << ".." << last);
        }
    }
  });
  CHECK(mismatches == 0);
  CHECK(blocks >= 200);
  CHECK(met >= 10000);
  CHECK(queries - met >= 10000);
}

TEST_CASE("a plan built without op names equals the named plan but for the names, validates, and its "
          "messages name ops by op_label", "[fast][builder]") {
  int compared = 0;
  auto compare = [&](const Workload& w, const NodeSpec& n, const PolicyConfig& p) {
    PlanDecision d;
    try {
      d = decide_plan(w, n, p);
    } catch (const InputError&) {
      return;  // left out: the budget holds no plan
    }
    const StepPlan named = build_plan_from_schedule(w, n, p.steps, d.schedule, d.info);
    const StepPlan nameless = build_plan_from_schedule(w, n, p.steps, d.schedule, d.info, false);
    check_same_plan(named, nameless, false);
    for (const PlanOp& op : nameless.ops) REQUIRE(op.name.empty());
    for (const PlanOp& op : named.ops) REQUIRE(op_label(op) == op.name);
    CHECK_NOTHROW(validate(nameless));
    ++compared;
  };
  for_sample_configs(20, 20261127, {"layerwise", "chunkflow"}, compare);
  CHECK(compared >= 20);
  // A broken nameless plan: validate's message names the op by its id, rank, step and block.
  const Scenario s = load_scenario(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios/flux-1024-u2-2xh100-pcie.json");
  const PolicyConfig p = s.policy;
  PlanDecision d = decide_plan(s.workload, s.node, p);
  StepPlan plan = build_plan_from_schedule(s.workload, s.node, p.steps, d.schedule, d.info, false);
  PlanOp& op = plan.ops.at(5);
  op.deps.push_back(int(plan.ops.size()) + 7);  // a missing op
  const std::string expected = "op 5 (rank " + std::to_string(op.rank) + ", step " + std::to_string(op.step) + ", block " +
                               std::to_string(op.block) + ") depends on a missing op";
  CHECK_THROWS_WITH(validate(plan), Catch::Contains(expected));
}
