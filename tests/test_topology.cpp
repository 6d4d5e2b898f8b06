// Tests of sim/topology: resources registered per link direction and duplex coupling, fewest-hops
// routes (host-staged GPU↔GPU through the host), errors, and a route fed to the max-min solver.
// Source: shared/reference/systems-and-hardware.md §3, §5.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/node.hpp"
#include "property_sample.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"
#include "sim_fixtures.hpp"

using chunkflow::LinkSpec;
using chunkflow::MaxMinSolver;
using chunkflow::NodeSpec;
using chunkflow::Topology;

namespace {

constexpr double GB = 1e9;
/// Relative tolerance for rates computed by the solver over a route.
constexpr double kRateRelTol = 1e-9;

/// Two GPUs, each with a host PCIe link of 63 GB/s per direction and 87.2 GB/s duplex, no NVLink.
NodeSpec two_gpu_pcie_node() {
  NodeSpec n;
  n.id = "test-2gpu";
  n.gpu_count = 2;
  for (int g = 0; g < 2; ++g) {
    LinkSpec l;
    l.name = "pcie.gpu" + std::to_string(g);
    l.a = "host";
    l.b = "gpu" + std::to_string(g);
    l.a_to_b_bytes_per_s = 63 * GB;
    l.b_to_a_bytes_per_s = 63 * GB;
    l.duplex_bytes_per_s = 87.2 * GB;
    n.links.push_back(l);
  }
  return n;
}

/// Resource names of a route, sorted, for order-independent comparison.
std::vector<std::string> names(const MaxMinSolver& s, const Topology::Route& route) {
  std::vector<std::string> out;
  for (const auto& [r, a] : route) {
    CHECK(a == 1.0);
    out.push_back(s.resource_name(r));
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool close(double a, double b) { return std::abs(a - b) <= kRateRelTol * std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST_CASE("topology registers one resource per link direction plus one per duplex link", "[topology]") {
  MaxMinSolver s;
  const Topology t(two_gpu_pcie_node(), s);
  const std::vector<std::string> expected{"pcie.gpu0.h2d", "pcie.gpu0.d2h", "pcie.gpu0.duplex",
                                          "pcie.gpu1.h2d", "pcie.gpu1.d2h", "pcie.gpu1.duplex"};
  CHECK(t.resource_names() == expected);
  CHECK(s.resource_count() == 6);
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(s.resource_name(t.resource_ids()[i]) == expected[i]);
  REQUIRE(t.link_directions().size() == 4);
  CHECK(t.link_direction_resources() == std::vector<int>{0, 1, 3, 4});
  CHECK(t.link_directions()[0].from == "host");
  CHECK(t.link_directions()[0].to == "gpu0");
  CHECK(t.link_directions()[0].duplex_resource == 2);
  CHECK(s.capacity(2) == 87.2 * GB);
  CHECK(Topology::gpu_vertex(3) == "gpu3");
}

TEST_CASE("H2D host→gpuR uses the h2d direction of pcie.gpuR and its duplex", "[topology][route]") {
  MaxMinSolver s;
  const Topology t(two_gpu_pcie_node(), s);
  CHECK(names(s, t.route("host", "gpu1")) == std::vector<std::string>{"pcie.gpu1.duplex", "pcie.gpu1.h2d"});
  CHECK(names(s, t.route("gpu0", "host")) == std::vector<std::string>{"pcie.gpu0.d2h", "pcie.gpu0.duplex"});
  CHECK(t.route_vertices("host", "gpu1") == std::vector<std::string>{"host", "gpu1"});
}

TEST_CASE("without NVLink gpu0→gpu1 routes through the host: d2h of gpu0, h2d of gpu1, both duplexes",
          "[topology][route]") {
  MaxMinSolver s;
  const Topology t(two_gpu_pcie_node(), s);
  CHECK(t.route_vertices("gpu0", "gpu1") == std::vector<std::string>{"gpu0", "host", "gpu1"});
  CHECK(t.peer_path(0, 1).transport == chunkflow::Transport::shm);
  CHECK(t.peer_path(0, 1).level == chunkflow::PathLevel::phb);
  CHECK(names(s, t.route("gpu0", "gpu1")) ==
        std::vector<std::string>{"pcie.gpu0.d2h", "pcie.gpu0.duplex", "pcie.gpu1.duplex", "pcie.gpu1.h2d"});
  CHECK(names(s, t.route(t.vertex("gpu1"), t.vertex("gpu0"))) ==
        std::vector<std::string>{"pcie.gpu0.duplex", "pcie.gpu0.h2d", "pcie.gpu1.d2h", "pcie.gpu1.duplex"});
}

TEST_CASE("a direct GPU link is preferred over the host path and named <link>.<a>-><b>", "[topology][route]") {
  NodeSpec n = two_gpu_pcie_node();
  LinkSpec nvlink;
  nvlink.name = "nvlink";
  nvlink.a = "gpu0";
  nvlink.b = "gpu1";
  nvlink.a_to_b_bytes_per_s = 150 * GB;
  nvlink.b_to_a_bytes_per_s = 150 * GB;
  n.links.push_back(nvlink);
  MaxMinSolver s;
  const Topology t(n, s);
  CHECK(names(s, t.route("gpu0", "gpu1")) == std::vector<std::string>{"nvlink.gpu0->gpu1"});
  CHECK(names(s, t.route("gpu1", "gpu0")) == std::vector<std::string>{"nvlink.gpu1->gpu0"});
  CHECK(s.resource_count() == 8);  // no duplex resource for the NVLink
}

TEST_CASE("route errors: unknown vertex, same endpoints, no path, bad links", "[topology][errors]") {
  MaxMinSolver s;
  NodeSpec n = two_gpu_pcie_node();
  n.gpu_count = 3;  // gpu2 exists as a vertex but has no link
  const Topology t(n, s);
  CHECK_THROWS_AS(t.route("host", "gpu7"), std::invalid_argument);
  CHECK_THROWS_AS(t.route("nvme", "gpu0"), std::invalid_argument);
  CHECK_THROWS_AS(t.route("gpu0", "gpu0"), std::invalid_argument);
  CHECK_THROWS_AS(t.route("host", "gpu2"), std::invalid_argument);
  CHECK_THROWS_AS(Topology::gpu_vertex(-1), std::invalid_argument);

  NodeSpec bad = two_gpu_pcie_node();
  bad.links[1].b_to_a_bytes_per_s = 0;
  MaxMinSolver s2;
  CHECK_THROWS_AS(Topology(bad, s2), std::invalid_argument);
  CHECK(s2.resource_count() == 0);  // nothing registered on failure
}

TEST_CASE("routes fed to the solver: H2D during a host-staged all-to-all shares the duplex", "[topology][maxmin]") {
  MaxMinSolver s;
  const Topology t(two_gpu_pcie_node(), s);
  // Prefetch into gpu1 alone: the full h2d direction.
  const int prefetch = s.add_flow(t.route("host", "gpu1"));
  s.solve();
  CHECK(close(s.rate(prefetch), 63 * GB));
  // All-to-all peer flows in both directions; gpu1's link now carries h2d (prefetch + peer) and d2h.
  const int a2a_01 = s.add_flow(t.route("gpu0", "gpu1"));
  const int a2a_10 = s.add_flow(t.route("gpu1", "gpu0"));
  s.solve();
  // gpu1 duplex 87.2 GB/s shared by three flows → 29.07 each (h2d 58.1 ≤ 63, gpu0 side 58.1 ≤ 87.2).
  CHECK(close(s.rate(prefetch), 87.2 * GB / 3));
  CHECK(close(s.rate(a2a_01), 87.2 * GB / 3));
  CHECK(close(s.rate(a2a_10), 87.2 * GB / 3));
}

TEST_CASE("built-in 2xh100-pcie stages gpu0→gpu1 through host memory (NODE: SHM)", "[topology][node]") {
  NodeSpec n;
  try {
    n = chunkflow::node("2xh100-pcie");
  } catch (const std::exception& e) {
    FAIL("chunkflow::node(\"2xh100-pcie\") threw: " << e.what());
  }
  MaxMinSolver s;
  const Topology t(n, s);
  CHECK(t.route_vertices("gpu0", "gpu1") == std::vector<std::string>{"gpu0", "cpu0", "host", "cpu0", "gpu1"});
  CHECK(t.peer_path(0, 1).transport == chunkflow::Transport::shm);
  CHECK(t.peer_path(0, 1).level == chunkflow::PathLevel::node);
  const int h2d = s.add_flow(t.route("host", "gpu0"), n.copy_engine_bytes_per_s);
  s.solve();
  CHECK(close(s.rate(h2d), n.h2d_bytes_per_s(0)));
}

TEST_CASE("every built-in node builds a topology with a host route to and from each GPU", "[topology][node]") {
  for (const std::string& id : chunkflow::node_ids()) {
    INFO("node " << id);
    const NodeSpec n = chunkflow::node(id);
    MaxMinSolver s;
    const Topology t(n, s);
    for (int g = 0; g < n.gpu_count; ++g) {
      CHECK_FALSE(t.route(Topology::kHostVertex, Topology::gpu_vertex(g)).empty());
      CHECK_FALSE(t.route(Topology::gpu_vertex(g), Topology::kHostVertex).empty());
    }
  }
}

// ---------------------------------------------------------------------------------------------
// NCCL's transport choice on the built-in nodes (issue 9; code-review-3fa5e28.md §1.2)
// ---------------------------------------------------------------------------------------------

namespace {

bool route_uses_kind(const Topology& t, const MaxMinSolver& s, const Topology::Route& route, chunkflow::LinkKind kind) {
  for (const auto& [r, a] : route)
    for (const auto& d : t.link_directions())
      if ((d.resource == r || d.duplex_resource == r) && d.kind == kind) return true;
  (void)s;
  return false;
}

}  // namespace

TEST_CASE("on NVSwitch nodes every GPU pair's collective path is NVLink and never touches PCIe", "[topology][node]") {
  for (const char* id : {"8xh100-sxm", "8xh800-sxm", "8xh20", "8xa100-sxm"}) {
    INFO("node " << id);
    const NodeSpec n = chunkflow::node(id);
    MaxMinSolver s;
    const Topology t(n, s);
    for (int a = 0; a < n.gpu_count; ++a)
      for (int b = 0; b < n.gpu_count; ++b) {
        if (a == b) continue;
        const Topology::PeerPath& p = t.peer_path(a, b);
        CHECK(p.transport == chunkflow::Transport::nvlink_p2p);
        CHECK(p.vertices == std::vector<std::string>{Topology::gpu_vertex(a), "nvswitch", Topology::gpu_vertex(b)});
        CHECK_FALSE(route_uses_kind(t, s, p.route, chunkflow::LinkKind::pcie));
        CHECK_FALSE(route_uses_kind(t, s, p.route, chunkflow::LinkKind::memory));
      }
    // The NVLink never carries host traffic.
    CHECK_FALSE(route_uses_kind(t, s, t.route("host", "gpu5"), chunkflow::LinkKind::nvlink));
  }
}

TEST_CASE("8xh100-pcie: P2P under a shared switch (PIX), SHM through host memory across switches (NODE) and sockets (SYS)",
          "[topology][node]") {
  const NodeSpec n = chunkflow::node("8xh100-pcie");
  MaxMinSolver s;
  const Topology t(n, s);
  const auto& pix = t.peer_path(0, 1);
  CHECK(pix.transport == chunkflow::Transport::pcie_p2p);
  CHECK(pix.level == chunkflow::PathLevel::pix);
  CHECK(pix.vertices == std::vector<std::string>{"gpu0", "sw0", "gpu1"});
  const auto& node_level = t.peer_path(0, 2);
  CHECK(node_level.transport == chunkflow::Transport::shm);
  CHECK(node_level.level == chunkflow::PathLevel::node);
  CHECK(node_level.flow_cap_bytes_per_s == n.collective_flow_bytes_per_s);
  CHECK(node_level.vertices == std::vector<std::string>{"gpu0", "sw0", "cpu0", "host", "cpu0", "sw1", "gpu2"});
  // Staging writes and reads the same DRAM: the memory link's duplex is used twice.
  for (const auto& [r, a] : node_level.route)
    if (s.resource_name(r) == "mem0.duplex") CHECK(a == 2.0);
  const auto& sys = t.peer_path(1, 6);
  CHECK(sys.transport == chunkflow::Transport::shm);
  CHECK(sys.level == chunkflow::PathLevel::sys);
  CHECK(route_uses_kind(t, s, sys.route, chunkflow::LinkKind::inter_socket));
  // Both GPUs of a switch share its uplink for prefetch: two H2D flows get half of it each.
  MaxMinSolver s2;
  const Topology t2(n, s2);
  const int f0 = s2.add_flow(t2.route("host", "gpu0"), n.copy_engine_bytes_per_s);
  const int f1 = s2.add_flow(t2.route("host", "gpu1"), n.copy_engine_bytes_per_s);
  s2.solve();
  const double uplink = n.links[3].a_to_b_bytes_per_s;  // pcie.sw0
  REQUIRE(n.links[3].name == "pcie.sw0");
  CHECK(close(s2.rate(f0), uplink / 2));
  CHECK(close(s2.rate(f1), uplink / 2));
}

TEST_CASE("P2P off (RTX 4090) or a pair above p2p_level stages through host memory, NVLink bridge pairs go P2P",
          "[topology][node]") {
  {
    const NodeSpec n = chunkflow::node("4xrtx4090");
    MaxMinSolver s;
    const Topology t(n, s);
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b)
        if (a != b) CHECK(t.peer_path(a, b).transport == chunkflow::Transport::shm);
  }
  {
    const NodeSpec n = chunkflow::node("2xh100-pcie-nvlink");
    MaxMinSolver s;
    const Topology t(n, s);
    CHECK(t.peer_path(0, 1).transport == chunkflow::Transport::nvlink_p2p);
    CHECK(t.peer_path(0, 1).vertices == std::vector<std::string>{"gpu0", "gpu1"});
    // The bridge at NCCL's measured rate on such a pair, 115 GB/s per direction (NVIDIA/nccl #1161).
    CHECK(Topology::bottleneck_bytes_per_s(s, t.peer_path(0, 1).route) == 115e9);
  }
  {
    // The same switch pair with P2P disabled for it falls back to SHM; a raised p2p_level (SYS, as
    // NCCL on AMD hosts with ≤ 2 GPUs) lets a PHB pair go P2P.
    NodeSpec n = chunkflow::node("8xh100-pcie");
    n.p2p_disabled_pairs = {{1, 0}};
    MaxMinSolver s;
    const Topology t(n, s);
    CHECK(t.peer_path(0, 1).transport == chunkflow::Transport::shm);
    CHECK(t.peer_path(2, 3).transport == chunkflow::Transport::pcie_p2p);
    NodeSpec two = chunkflow::node("2xh100-pcie");
    two.p2p_level = chunkflow::PathLevel::sys;
    MaxMinSolver s2;
    const Topology t2(two, s2);
    CHECK(t2.peer_path(0, 1).transport == chunkflow::Transport::pcie_p2p);
    CHECK(t2.peer_path(0, 1).level == chunkflow::PathLevel::node);
  }
}

TEST_CASE("under-duplex capacities: concurrent H2D + D2H on one Gen5 link get the measured 52.8 / 34.4 GB/s",
          "[topology][maxmin]") {
  const NodeSpec n = chunkflow::node("8xh100-sxm");
  MaxMinSolver s;
  const Topology t(n, s);
  std::vector<int> flows_on(s.resource_count(), 0);
  auto add = [&](const Topology::Route& r) {
    for (const auto& [res, a] : r) flows_on[res] += 1;
    return s.add_flow(r);
  };
  const int h2d = add(t.route("host", "gpu0"));
  t.apply_under_duplex(s, flows_on);
  s.solve();
  CHECK(close(s.rate(h2d), 56 * GB));  // alone: the Gen5 x16 payload rate
  const int d2h = add(t.route("gpu0", "host"));
  t.apply_under_duplex(s, flows_on);
  s.solve();
  CHECK(close(s.rate(h2d), 52.8 * GB));
  CHECK(close(s.rate(d2h), 34.4 * GB));
  s.remove_flow(d2h);
  for (const auto& [res, a] : t.route("gpu0", "host")) flows_on[res] -= 1;
  t.apply_under_duplex(s, flows_on);
  s.solve();
  CHECK(close(s.rate(h2d), 56 * GB));
}

TEST_CASE("simulated on 8xh100-sxm with Ulysses 8, all-to-alls load only NVLink: no PCIe or memory link carries a byte",
          "[topology][executor]") {
  const NodeSpec n = chunkflow::node("8xh100-sxm");
  const auto r = chunkflow::test::run(chunkflow::test::workload("wan2.1-t2v-14b", 480, 832, 81, 8), n,
                                      chunkflow::test::policy("no-offload"));
  REQUIRE(r.result.summary.collective_time_s > 0);
  int nvlink_samples = 0;
  for (const auto& l : r.result.timeline.links) {
    INFO(l.link << " " << l.bytes_per_s);
    const bool nvlink = l.link.rfind("nvlink.", 0) == 0;
    nvlink_samples += nvlink;
    if (!nvlink) CHECK(l.bytes_per_s == 0);
  }
  CHECK(nvlink_samples > 0);
}

TEST_CASE("closed form: an all-to-all alone over an NVLink bridge takes α + (S/2) / 115 GB/s", "[topology][executor]") {
  const NodeSpec n = chunkflow::node("2xh100-pcie-nvlink");
  const auto r = chunkflow::test::run(chunkflow::test::workload("wan2.1-t2v-14b", 480, 832, 81, 2), n,
                                      chunkflow::test::policy("no-offload"));
  int checked = 0;
  for (const auto& row : r.result.timeline.rows) {
    if (row.kind != chunkflow::OpKind::collective) continue;
    // Both ranks' ops of a group run together; each sends S/2 to its peer on its own direction.
    const double expected = n.collective_latency_s + row.bytes / 2 / 115e9;
    CHECK(std::abs((row.end_s - row.start_s) - expected) <= 1e-9 * expected);
    ++checked;
  }
  CHECK(checked > 0);
}

TEST_CASE("collective_host_link_use: which all-to-all flows cross a rank's own PCIe link, per direction",
          "[topology][routes]") {
  using chunkflow::collective_host_link_use;
  const double inf = std::numeric_limits<double>::infinity();
  for (int r = 0; r < 8; ++r) {  // NVSwitch: none; prefetch need not yield
    const auto u = collective_host_link_use(chunkflow::node("8xh100-sxm"), r, 8);
    CHECK(u.flows_in == 0);
    CHECK(u.flows_out == 0);
  }
  const auto bridge = collective_host_link_use(chunkflow::node("2xh100-pcie-nvlink"), 1, 2);
  CHECK(bridge.flows_in + bridge.flows_out == 0);
  const auto staged = collective_host_link_use(chunkflow::node("2xh100-pcie"), 0, 2);
  CHECK(staged.flows_in == 1);
  CHECK(staged.flows_out == 1);
  CHECK(staged.flow_cap_bytes_per_s == 36.5e9);
  const chunkflow::NodeSpec pcie8 = chunkflow::node("8xh100-pcie");
  const auto pix = collective_host_link_use(pcie8, 0, 2);  // P2P under the switch: own link, no cap
  CHECK(pix.flows_in == 1);
  CHECK(pix.flows_out == 1);
  CHECK(pix.flow_cap_bytes_per_s == inf);
  const auto four = collective_host_link_use(pcie8, 0, 4);  // 1 P2P + 2 staged peers each way
  CHECK(four.flows_in == 3);
  CHECK(four.flows_out == 3);
  CHECK(four.flow_cap_bytes_per_s == 36.5e9);
  CHECK_THROWS_AS(collective_host_link_use(pcie8, 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(collective_host_link_use(pcie8, 4, 4), std::invalid_argument);
  CHECK_THROWS_AS(collective_host_link_use(pcie8, 0, 9), std::invalid_argument);
}

TEST_CASE("more bandwidth never slows a plan: every link, copy and staging rate doubled gives a step no slower",
          "[topology][executor][invariant]") {
  auto doubled = [](chunkflow::NodeSpec n) {
    for (auto& l : n.links)
      for (double* v : {&l.a_to_b_bytes_per_s, &l.b_to_a_bytes_per_s, &l.duplex_bytes_per_s,
                        &l.a_to_b_under_duplex_bytes_per_s, &l.b_to_a_under_duplex_bytes_per_s})
        *v *= 2;
    n.copy_engine_bytes_per_s *= 2;
    n.collective_flow_bytes_per_s *= 2;
    n.p2p_flow_bytes_per_s *= 2;
    return n;
  };
  // The plan is built once (on the slower node) and executed on both, so only the physics differ.
  for (const char* id : {"2xh100-pcie", "8xh100-pcie", "4xrtx4090", "8xh100-sxm"}) {
    const chunkflow::NodeSpec n = chunkflow::node(id);
    const int P = n.gpu_count >= 4 ? 4 : 2;
    for (const char* policy : {"no-offload", "layerwise", "chunkflow"}) {
      INFO(id << " " << policy << " P=" << P);
      const auto w = chunkflow::test::workload("wan2.1-t2v-14b", 480, 832, 17, P);
      const auto r = chunkflow::test::run(w, n, chunkflow::test::policy(policy, 0.0));
      const auto fast = chunkflow::simulate(r.plan, doubled(n));
      CHECK(fast.summary.step_time_s <= r.result.summary.step_time_s * (1 + 1e-12));
    }
  }
}

TEST_CASE("every built-in node simulates every model under Ulysses at the largest degree its GPUs and heads allow",
          "[topology][executor][node]") {
  struct Case {
    const char* model;
    int64_t h, w, frames;
    int heads;
  };
  // Heads: FLUX.1-dev 24, Wan2.1-14B 40, Wan2.1-1.3B 12, HunyuanVideo 24 (model/architecture.cpp).
  const Case cases[] = {{"flux.1-dev", 512, 512, 1, 24},
                        {"wan2.1-t2v-14b", 480, 832, 17, 40},
                        {"wan2.1-t2v-1.3b", 480, 832, 17, 12},
                        {"hunyuanvideo", 544, 960, 33, 24}};
  // Every node × model in the normal run; an even sample under the sanitizers (tests/property_sample.hpp).
  const int case_count = int(chunkflow::node_ids().size() * std::size(cases));
  int case_index = 0;
  for (const std::string& id : chunkflow::node_ids()) {
    const chunkflow::NodeSpec n = chunkflow::node(id);
    for (const Case& c : cases) {
      if (!chunkflow::test::property_case_runs(case_index++, case_count)) continue;
      int P = 1;
      for (int p = 1; p <= 8; ++p)
        if (c.heads % p == 0 && (p <= n.gpu_count || n.collective == chunkflow::CollectiveBackend::pcie_proxy)) P = p;
      INFO(id << " " << c.model << " Ulysses " << P);
      const auto r = chunkflow::test::run(chunkflow::test::workload(c.model, c.h, c.w, c.frames, P), n,
                                          chunkflow::test::policy("chunkflow"));
      CHECK(std::isfinite(r.result.summary.step_time_s));
      CHECK(r.result.summary.step_time_s > 0);
      CHECK((P == 1) == (r.result.summary.collective_time_s == 0));
    }
  }
}
