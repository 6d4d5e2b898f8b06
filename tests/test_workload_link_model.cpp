// model/link_model.hpp WorkloadLinkModel: the planner's link model for every collective kind, group
// layout and topology. Oracles: the symmetric closed form of share_with_collective on 2xh100-pcie
// (test_link_model.cpp checks that one against code-review-3fa5e28.md §2.2); the node file's link
// capacities on 8xh100-pcie (two GPUs under each PCIe switch share its uplink); and the simulator
// (sim/flows.hpp routed over sim/topology.hpp, max-min in sim/maxmin.hpp), whose no-offload timeline
// gives each collective's time alone, for every kind on a PCIe and an NVSwitch node.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "model/link_model.hpp"
#include "sim_fixtures.hpp"

using namespace chunkflow;
using chunkflow::test::layout;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Both sides computed in double from the same capacities: equal to rounding.
bool close(double a, double b, double rel = 1e-9) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

}  // namespace

TEST_CASE("WorkloadLinkModel: Ulysses on 2xh100-pcie equals the symmetric closed form", "[link_model]") {
  const NodeSpec n = node("2xh100-pcie");
  const Workload w = test::workload("wan2.1-t2v-14b", 480, 832, 17, 2);
  const WorkloadLinkModel m(n, w);
  CHECK(close(m.copy_alone_bytes_per_s(), n.h2d_bytes_per_s(0)));
  for (double S : {1e6, 64e6, 512e6})
    for (double cap : {0.0, 5e9, 20e9, 40e9, kInf}) {
      const CollectiveShare general = m.share(CollectiveKind::all_to_all, S, cap);
      const CollectiveShare closed = share_with_collective(n, 0, 2, S, cap);
      CHECK(close(general.copy_bytes_per_s, closed.copy_bytes_per_s));
      CHECK(close(general.collective_time_s, closed.collective_time_s));
    }
  for (double tol : {0.0, 0.1})
    CHECK(close(m.share_cap_bytes_per_s(CollectiveKind::all_to_all, 64e6, tol), share_cap_bytes_per_s(n, 0, 2, 64e6, tol),
                1e-6));
}

TEST_CASE("WorkloadLinkModel: ranks under one PCIe switch split its uplink when they copy at once (8xh100-pcie)",
          "[link_model]") {
  const NodeSpec n = node("8xh100-pcie");
  double uplink = 0;
  for (const LinkSpec& l : n.links)
    if (l.name == "pcie.sw0") uplink = l.a_to_b_bytes_per_s;  // cpu0 → sw0: towards gpu0 and gpu1
  REQUIRE(uplink > 0);
  // One rank: its copy engine or its own link; two or four ranks: two per switch uplink.
  const Workload one = layout("wan2.1-t2v-14b", 480, 832, 17, 1, 1, 1, false);
  CHECK(close(WorkloadLinkModel(n, one).copy_alone_bytes_per_s(), n.h2d_bytes_per_s(0)));
  for (int tp : {2, 4}) {
    const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, 1, 1, tp, false);
    CHECK(close(WorkloadLinkModel(n, w).copy_alone_bytes_per_s(), std::min(n.copy_engine_bytes_per_s, uplink / 2)));
  }
}

TEST_CASE("WorkloadLinkModel: every collective kind alone equals the simulator's no-offload timeline",
          "[link_model][layouts]") {
  struct Case {
    const char* node;
    Workload w;
  };
  const std::vector<Case> cases = {
      {"8xh100-pcie", layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 2, false)},                    // Ulysses × TP
      {"8xh100-pcie", layout("wan2.1-t2v-14b", 480, 832, 17, 2, 2, 1, false)},                    // USP
      {"8xh100-pcie", layout("wan2.1-t2v-14b", 480, 832, 17, 4, 1, 1, true)},                     // FSDP
      {"8xh100-pcie", layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 1, false, CfgMode::parallel)},  // CFG
      {"8xh100-sxm", layout("flux.1-dev", 1024, 1024, 1, 2, 1, 4, false)},
      {"2xh100-pcie", layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 1, false)},
  };
  for (const Case& c : cases) {
    INFO(c.node << " " << layout_text(c.w));
    const NodeSpec n = node(c.node);
    const WorkloadLinkModel m(n, c.w);
    const test::Run r = test::run(c.w, n, test::policy("no-offload"));
    int checked = 0;
    for (const TimelineRow& row : r.result.timeline.rows) {
      if (row.kind != OpKind::collective || !(row.bytes > 0)) continue;
      const CollectiveKind kind = r.plan.stage_of(r.plan.ops[row.op_id]).collective;
      if (kind == CollectiveKind::ring_kv) continue;  // overlapped with the attention: other flows may run beside it
      INFO(collective_kind_name(kind) << " " << row.name);
      CHECK(close(row.end_s - row.start_s, m.share(kind, row.bytes, 0.0).collective_time_s, 1e-6));
      ++checked;
    }
    CHECK(checked > 0);
  }
}

TEST_CASE("WorkloadLinkModel: copies beside a collective never speed it up, and a higher cap never slows the copies",
          "[link_model]") {
  const NodeSpec n = node("8xh100-pcie");
  const Workload w = layout("wan2.1-t2v-14b", 480, 832, 17, 2, 1, 2, false);
  const WorkloadLinkModel m(n, w);
  for (CollectiveKind kind : {CollectiveKind::all_to_all, CollectiveKind::all_reduce}) {
    const double alone = m.share(kind, 64e6, 0.0).collective_time_s;
    double last_copy = 0;
    for (double cap : {1e9, 5e9, 10e9, 20e9, 40e9, kInf}) {
      const CollectiveShare s = m.share(kind, 64e6, cap);
      CHECK(s.collective_time_s >= alone * (1 - 1e-12));
      CHECK(s.copy_bytes_per_s >= last_copy * (1 - 1e-12));
      CHECK(s.copy_bytes_per_s <= std::min(cap, m.copy_alone_bytes_per_s()) * (1 + 1e-12));
      last_copy = s.copy_bytes_per_s;
    }
    // The cap that leaves the collective its time alone does.
    const double cap = m.share_cap_bytes_per_s(kind, 64e6, 0.0);
    CHECK(m.share(kind, 64e6, cap).collective_time_s <= alone * (1 + 1e-6));
  }
  CHECK_THROWS_AS(m.share(CollectiveKind::all_to_all, 0.0, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(m.share(CollectiveKind::all_to_all, 1e6, -1.0), std::invalid_argument);
}
