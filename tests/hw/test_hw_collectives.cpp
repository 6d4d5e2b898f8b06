// The plan → NCCL mapping of the hardware harness (hw/collective_calls.hpp) and its lowering
// (hw/lowering.hpp): each collective kind's NCCL call, communicator group and byte counts, checked
// against the simulator's one definition of the same collectives (model/collective_flows.hpp).
// CPU only: no NCCL call is made here, and nothing here was measured.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#include "hw/collective_calls.hpp"
#include "hw/lowering.hpp"
#include "runtime/policy.hpp"
#include "../sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::hw;
using chunkflow::test::layout;

namespace {

/// Layouts with every collective kind (small shapes; Wan2.1-1.3B: 12 heads, d 1536).
std::vector<Workload> layouts() {
  return {
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 1, false),                       // Ulysses 2
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 2, false),                       // U2 × TP2
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 1, 4, 1, false),                       // ring 4
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 2, 1, false),                       // USP 2 × 2
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 4, 1, 1, true),                        // U4 + FSDP
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 2, true),                        // U2 × TP2 + FSDP
      layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 1, false, CfgMode::parallel),    // U2 + CFG parallel
      layout("flux.1-dev", 256, 256, 1, 1, 2, 2, false, CfgMode::parallel),         // ring 2 × TP 2 × CFG
  };
}

using Flow = std::tuple<int, int, double>;

std::vector<Flow> sorted(const std::vector<PeerFlow>& flows) {
  std::vector<Flow> out;
  for (const auto& f : flows) out.emplace_back(f.src, f.dst, f.bytes);
  std::sort(out.begin(), out.end());
  return out;
}

/// (kind, S) of every collective stage of one forward, first occurrence of each (kind, S).
std::vector<std::pair<CollectiveKind, int64_t>> collectives_of(const Workload& w) {
  std::set<std::pair<CollectiveKind, int64_t>> seen;
  for (const BlockCost& b : forward_cost(w).blocks)
    for (const StageCost& s : b.stages)
      if (s.stage.kind == BlockStage::Kind::all_to_all) seen.insert({s.collective, std::llround(s.all_to_all_buffer_bytes)});
  return {seen.begin(), seen.end()};
}

}  // namespace

TEST_CASE("NCCL calls of every rank move exactly the simulator's peer flows (ring algorithm), per kind",
          "[hw][collectives]") {
  std::set<CollectiveKind> kinds_seen;
  for (const Workload& w : layouts()) {
    INFO(layout_text(w));
    const int N = gpus_used(w);
    for (const auto& [kind, S] : collectives_of(w)) {
      INFO(collective_kind_name(kind) << " S " << S);
      kinds_seen.insert(kind);
      if (kind == CollectiveKind::all_to_all) REQUIRE(S % w.ulysses_degree == 0);  // S/U whole bytes
      std::vector<PeerFlow> harness;
      for (int r = 0; r < N; ++r)
        for (const PeerFlow& f : nccl_wire_flows(nccl_call(w, kind, r, S))) harness.push_back(f);
      const auto expected = sorted(collective_peer_flows(w, kind, double(S), false));
      const auto got = sorted(harness);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK(std::get<0>(got[i]) == std::get<0>(expected[i]));
        CHECK(std::get<1>(got[i]) == std::get<1>(expected[i]));
        CHECK(std::get<2>(got[i]) == Approx(std::get<2>(expected[i])).epsilon(1e-12));
      }
    }
  }
  CHECK(kinds_seen.size() == 5);  // every kind was checked
}

TEST_CASE("NCCL call per kind: API, group size and byte counts in closed form", "[hw][collectives]") {
  const Workload w = layout("flux.1-dev", 256, 256, 1, 2, 2, 2, false, CfgMode::parallel);  // 16 ranks
  const int64_t S = 1 << 20;
  for (int r = 0; r < gpus_used(w); ++r) {
    INFO("rank " << r);
    const NcclCall a2a = nccl_call(w, CollectiveKind::all_to_all, r, S);
    CHECK(a2a.api == NcclApi::send_recv);
    CHECK(a2a.group.size() == 2);
    CHECK(a2a.peer_bytes == S / 2);
    CHECK(a2a.steps == 1);
    const NcclCall ring = nccl_call(w, CollectiveKind::ring_kv, r, S);
    CHECK(ring.api == NcclApi::send_recv);
    CHECK(ring.group.size() == 2);
    CHECK(ring.peer_bytes == S);
    CHECK(ring.steps == 1);  // R − 1
    const NcclCall ar = nccl_call(w, CollectiveKind::all_reduce, r, S + 1);
    CHECK(ar.api == NcclApi::all_reduce);
    CHECK(ar.group.size() == 2);
    CHECK(ar.buffer_bytes == S);  // whole bf16 values
    const NcclCall cfg = nccl_call(w, CollectiveKind::cfg_gather, r, S);
    CHECK(cfg.api == NcclApi::all_gather);
    CHECK(cfg.group == std::vector<int>{r % 8, r % 8 + 8});
    CHECK(cfg.recv_buffer_bytes == 2 * S);
    // Every call's group holds the rank at group_rank.
    for (const NcclCall* c : {&a2a, &ring, &ar, &cfg}) CHECK(c->group.at(size_t(c->group_rank)) == r);
  }
  Workload f = layout("wan2.1-t2v-1.3b", 128, 128, 5, 4, 1, 1, true);
  const NcclCall g = nccl_call(f, CollectiveKind::all_gather, 3, S);
  CHECK(g.api == NcclApi::all_gather);
  CHECK(g.group == std::vector<int>{0, 1, 2, 3});
  CHECK(g.recv_buffer_bytes == 4 * S);
  Workload big_ring = layout("wan2.1-t2v-1.3b", 128, 128, 5, 1, 4, 1, false);
  CHECK(nccl_call(big_ring, CollectiveKind::ring_kv, 0, S).steps == 3);
  CHECK_THROWS_AS(nccl_call(f, CollectiveKind::cfg_gather, 0, S), std::invalid_argument);  // no parallel CFG
  CHECK_THROWS_AS(nccl_call(f, CollectiveKind::all_gather, 0, -1), std::invalid_argument);
  CHECK_THROWS_AS(nccl_call(f, CollectiveKind::all_gather, 4, S), std::out_of_range);
}

TEST_CASE("collective groups of each kind partition the ranks, every member names the same group",
          "[hw][collectives]") {
  for (const Workload& w : layouts()) {
    INFO(layout_text(w));
    const int N = gpus_used(w);
    for (CollectiveKind kind : {CollectiveKind::all_to_all, CollectiveKind::ring_kv, CollectiveKind::all_reduce,
                                CollectiveKind::all_gather, CollectiveKind::cfg_gather}) {
      if (kind == CollectiveKind::cfg_gather && resolved_cfg(w) != CfgMode::parallel) continue;
      if (kind == CollectiveKind::all_gather && !w.fsdp) continue;
      INFO(collective_kind_name(kind));
      const auto groups = collective_groups(w, kind);
      const int expected_size = kind == CollectiveKind::all_to_all   ? w.ulysses_degree
                                : kind == CollectiveKind::ring_kv    ? w.ring_degree
                                : kind == CollectiveKind::all_reduce ? w.tp_degree
                                : kind == CollectiveKind::all_gather ? fsdp_degree(w)
                                                                     : 2;
      std::vector<int> count(size_t(N), 0);
      for (const auto& g : groups) {
        CHECK(int(g.size()) == expected_size);
        for (int r : g) {
          ++count[size_t(r)];
          CHECK(collective_group(w, kind, r) == g);
        }
      }
      for (int c : count) CHECK(c == 1);
    }
  }
}

TEST_CASE("lowering: each collective op runs its stage's kind on its group's communicator with the stage's bytes",
          "[hw][collectives][lowering]") {
  const NodeSpec n = node("8xh100-sxm");
  for (const Workload& w : layouts()) {
    for (const std::string policy : {"no-offload", "layerwise", "chunkflow"}) {
      INFO(layout_text(w) << " " << policy);
      PolicyConfig pc = chunkflow::test::policy(policy, policy == "no-offload" ? std::nullopt : std::optional<double>(0.25), 4);
      const StepPlan plan = build_plan(w, n, pc);
      const Program p = lower(plan, n);
      CHECK_FALSE(p.proxy);
      std::map<int, std::pair<NcclApi, int64_t>> by_group;
      std::set<CollectiveKind> kinds;
      for (const auto& op : plan.ops) {
        if (op.kind != OpKind::collective) continue;
        const StageCost& st = plan.stage_of(op);
        const OpProgram& o = p.ops[size_t(op.id)];
        INFO(op.name);
        kinds.insert(st.collective);
        CHECK(o.work == (st.collective == CollectiveKind::all_to_all ? Work::all_to_all : Work::collective));
        CHECK(o.call.kind == st.collective);
        CHECK(o.call.group == collective_group(w, st.collective, op.rank));
        REQUIRE(o.comm >= 0);
        CHECK(p.comm_groups.at(size_t(o.comm)) == o.call.group);
        CHECK(o.a2a_bytes == std::llround(st.all_to_all_buffer_bytes));
        // One collective across ranks (the plan's collective_group spans every rank, each in its
        // own communicator group): the same API and size everywhere.
        auto [it, fresh] = by_group.try_emplace(op.collective_group, o.call.api, o.call.buffer_bytes);
        if (!fresh) {
          CHECK(it->second.first == o.call.api);
          CHECK(it->second.second == o.call.buffer_bytes);
        }
        if (st.collective == CollectiveKind::all_gather) {
          // FSDP: the shard's pieces tile [0, S) of the block, and a gathered buffer receives N·S.
          REQUIRE_FALSE(o.shard_pieces.empty());
          CHECK(o.shard_pieces.front().layout_begin == 0);
          CHECK(o.shard_pieces.back().layout_end == o.a2a_bytes);
          for (size_t i = 1; i < o.shard_pieces.size(); ++i)
            CHECK(o.shard_pieces[i].layout_begin == o.shard_pieces[i - 1].layout_end);
          CHECK((o.gathered == 0 || o.gathered == 1));
          CHECK(p.max_gathered_bytes >= o.a2a_bytes * fsdp_degree(w));
        }
      }
      CHECK_FALSE(kinds.empty());
      // FSDP linears read the gathered block; the others their pieces.
      for (const auto& o : p.ops)
        if (o.work == Work::linear) {
          INFO(o.name);
          CHECK((w.fsdp ? o.linear.gathered >= 0 && o.linear.pieces.empty() : o.linear.gathered < 0));
        }
    }
  }
}

TEST_CASE("lowering: a non-Ulysses collective on the pcie-proxy backend is refused, naming the op",
          "[hw][collectives][lowering]") {
  // The proxy node refuses such layouts at scenario level; a plan built for a routed node and
  // lowered for the proxy one must still not run a TP all-reduce as an all-to-all.
  const Workload w = layout("wan2.1-t2v-1.3b", 128, 128, 5, 1, 1, 2, false);
  const StepPlan plan = build_plan(w, node("8xh100-sxm"), chunkflow::test::policy("no-offload"));
  CHECK_THROWS_WITH(lower(plan, node("1xh100-sxm")), Catch::Contains("all_reduce collective on the pcie-proxy backend"));
}

TEST_CASE("lowering refuses a rank whose collectives are out of the plan's group order (NCCL could deadlock)",
          "[hw][collectives][lowering][errors]") {
  const NodeSpec n = node("8xh100-sxm");
  StepPlan plan = build_plan(layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 2, false), n, chunkflow::test::policy("no-offload"));
  REQUIRE_NOTHROW(lower(plan, n));
  // Swap the groups of rank 0's first two collectives: it would enter them in the other order.
  std::vector<int> first;
  for (const auto& op : plan.ops)
    if (op.rank == 0 && op.kind == OpKind::collective && first.size() < 2) first.push_back(op.id);
  REQUIRE(first.size() == 2);
  std::swap(plan.ops[size_t(first[0])].collective_group, plan.ops[size_t(first[1])].collective_group);
  CHECK_THROWS_WITH(lower(plan, n), Catch::Contains("rank 0") && Catch::Contains("NCCL could deadlock"));
}

TEST_CASE("lowering refuses an FSDP all-gather that does not wait for the copy of its shard, naming the op",
          "[hw][collectives][lowering][errors]") {
  const NodeSpec n = node("8xh100-sxm");
  StepPlan plan = build_plan(layout("wan2.1-t2v-1.3b", 128, 128, 5, 2, 1, 1, true), n,
                             chunkflow::test::policy("layerwise", 0.0));
  REQUIRE_NOTHROW(lower(plan, n));
  // Drop the data deps of the first all-gather on its H2D copies (deps too: nothing else orders them).
  for (auto& op : plan.ops) {
    if (op.kind != OpKind::collective || plan.stage_of(op).collective != CollectiveKind::all_gather) continue;
    auto is_h2d = [&](int d) { return plan.ops[size_t(d)].kind == OpKind::h2d; };
    const auto before = op.data_deps.size();
    op.data_deps.erase(std::remove_if(op.data_deps.begin(), op.data_deps.end(), is_h2d), op.data_deps.end());
    op.deps.erase(std::remove_if(op.deps.begin(), op.deps.end(), is_h2d), op.deps.end());
    if (op.data_deps.size() == before) continue;  // this one read no copy
    CHECK_THROWS_WITH(lower(plan, n), Catch::Contains(op.name) && Catch::Contains("no H2D chunk it depends on holds them"));
    return;
  }
  FAIL("no FSDP all-gather read a copy");
}
