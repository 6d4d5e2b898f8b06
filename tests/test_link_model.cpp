// model/link_model.hpp against closed forms on 2xh100-pcie (code-review-3fa5e28.md §2.2; the link's
// measured under-duplex capacities, 52.8 GB/s H2D with 34.4 GB/s D2H): the all-to-all alone runs at
// min(per-flow cap, D2H under duplex); its inbound flow is read by the receiver's SMs (r = f /
// min(A, CE); model/routes.hpp): max-min weight w = r (in 1/1024ths, rounded down), and the GPU's
// SM-read resource, capacity f, which the inbound flow uses with coefficient 1 and a copy with
// β = r² (in 1/2^20ths, rounded down). An uncapped copy and the inbound flow share the H2D direction
// as L and w·L with L·(1 + w) = A; a capped copy c leaves the all-to-all min(A − c, B, f − β·c); on
// an NVSwitch node the all-to-all leaves the copy its full rate.
#include <catch2/catch.hpp>
#include <cmath>

#include "model/link_model.hpp"
#include "model/routes.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"

using namespace chunkflow;

TEST_CASE("sharing a host link with an all-to-all: closed forms on 2xh100-pcie", "[link_model]") {
  const NodeSpec n = node("2xh100-pcie");
  const LinkSpec& l = n.host_link(0);
  REQUIRE(l.a_to_b_under_duplex_bytes_per_s > 0);
  REQUIRE(l.duplex_bytes_per_s == 0);
  const double A = l.a_to_b_under_duplex_bytes_per_s, B = l.b_to_a_under_duplex_bytes_per_s;
  const double f = n.collective_flow_bytes_per_s;
  const double S = 64e6;  // per-rank buffer; P = 2: one flow of S/2 each way
  const CollectiveShare alone = share_with_collective(n, 0, 2, S, 0.0);
  const double y0 = std::min({f, A, B});
  CHECK(alone.copy_bytes_per_s == 0);
  CHECK(alone.collective_flow_bytes_per_s == Approx(y0));
  CHECK(alone.collective_time_s == Approx(n.collective_latency_s + S / 2 / y0));
  // Uncapped: weighted shares of H2D, L for the copy and w·L for the inbound flow (below B and f;
  // the SM-read resource, (β + w)·L ≤ f, does not bind: w ≤ r and β ≤ r²).
  const double r = f / std::min(A, n.copy_engine_bytes_per_s);
  const double w = std::floor(1024 * r) / 1024, beta = std::floor(1048576 * r * r) / 1048576;
  CHECK(shared_node_routes(n)->sm_read_weight(1) == w);
  CHECK(shared_node_routes(n)->sm_read_copy_cost(1) == beta);
  REQUIRE(w < 1);
  const double level = A / (1 + w);
  REQUIRE(w * level < y0);
  REQUIRE((beta + w) * level <= f);
  const CollectiveShare ignore = share_with_collective(n, 0, 2, S, INFINITY);
  CHECK(ignore.copy_bytes_per_s == Approx(level));
  CHECK(ignore.collective_flow_bytes_per_s == Approx(w * level));
  // The headroom cap: the largest copy rate with no slowdown, min(A − y0, (f − y0) / β): here the
  // SM reads' (f = 36.5 GB/s alone, y0 = 34.4 held by the D2H direction) leave 4.4 GB/s.
  const double cap0 = std::min(A - y0, (f - y0) / beta);
  CHECK(cap0 < A - y0);
  CHECK(share_cap_bytes_per_s(n, 0, 2, S, 0.0) == Approx(cap0).epsilon(1e-6));
  const CollectiveShare share = share_with_collective(n, 0, 2, S, cap0);
  CHECK(share.collective_time_s == Approx(alone.collective_time_s));
  CHECK(share.copy_bytes_per_s == Approx(cap0));
  // A 10 % slowdown of the whole all-to-all (latency included) lets each flow drop to
  // y = (S/2) / (1.1·t_alone − latency); that leaves the copy min(A − y, (f − y) / β).
  const double y = S / 2 / (1.1 * alone.collective_time_s - n.collective_latency_s);
  CHECK(share_cap_bytes_per_s(n, 0, 2, S, 0.10) == Approx(std::min(A - y, (f - y) / beta)).epsilon(1e-6));
  // Beside a copy capped at c below its share, the all-to-all keeps min(A − c, B, f − β·c).
  for (double c : {2e9, 5e9, 10e9, 20e9}) {
    INFO("cap " << c / 1e9 << " GB/s");
    CHECK(share_with_collective(n, 0, 2, S, c).collective_flow_bytes_per_s == Approx(std::min({A - c, B, f - beta * c})));
  }
  // Monotone: a higher cap never speeds the all-to-all up.
  double prev = 0;
  for (double cap = 1e9; cap <= 60e9; cap += 1e9) {
    const double t = share_with_collective(n, 0, 2, S, cap).collective_time_s;
    CHECK(t >= prev);
    prev = t;
  }
  CHECK_THROWS_AS(share_with_collective(n, 0, 1, S, 0.0), std::invalid_argument);
}

TEST_CASE("on an NVSwitch node the all-to-all leaves the copy its whole rate", "[link_model]") {
  const NodeSpec n = node("8xh100-sxm");
  const CollectiveShare s = share_with_collective(n, 3, 8, 64e6, INFINITY);
  CHECK(s.copy_bytes_per_s == Approx(n.h2d_bytes_per_s(3)));
  CHECK(share_cap_bytes_per_s(n, 3, 8, 64e6, 0.0) == Approx(n.copy_engine_bytes_per_s));
}

namespace {

/// The rates one direct max-min solve on the simulator's routes (sim/topology.hpp, with its weights
/// and SM-read resources) gives rank 0's copy (capped at `cap`; 0: none) and the slowest flow of a
/// P = 2 all-to-all of rank 0, every executed rank copying alike.
std::pair<double, double> direct_solve(const NodeSpec& n, double cap) {
  MaxMinSolver solver;
  const Topology t(n, solver);
  std::vector<std::pair<const Topology::Route*, std::pair<double, double>>> flows;  // route, (bound, weight)
  const bool proxy = n.collective == CollectiveBackend::pcie_proxy;
  const int ranks = proxy ? 1 : 2;
  const double f = n.collective_flow_bytes_per_s;
  if (cap > 0)
    for (int r = 0; r < ranks; ++r) flows.push_back({&t.h2d_route(r), {std::min(n.copy_engine_bytes_per_s, cap), 1.0}});
  const std::size_t first_collective = flows.size();
  if (proxy) {
    flows.push_back({&t.route("gpu0", "host"), {f, 1.0}});
    flows.push_back({&t.sm_host_read_route(0), {f, t.sm_read_weight(0)}});
  } else {
    for (auto [a, b] : {std::pair{0, 1}, std::pair{1, 0}}) {
      const Topology::PeerPath& p = t.peer_path(a, b);
      flows.push_back({&p.route, {p.flow_cap_bytes_per_s, p.weight}});
    }
  }
  std::vector<int> ids, on(solver.resource_count(), 0);
  for (const auto& [route, bw] : flows) {
    ids.push_back(solver.add_flow(*route, bw.first, bw.second));
    for (const auto& [res, a] : *route) ++on[std::size_t(res)];
  }
  t.apply_under_duplex(solver, on);
  solver.solve();
  double slowest = INFINITY;
  for (std::size_t k = first_collective; k < ids.size(); ++k) slowest = std::min(slowest, solver.rate(ids[k]));
  return {cap > 0 ? solver.rate(ids[0]) : 0.0, slowest};
}

}  // namespace

TEST_CASE("the rank link model is the simulator's max-min solve on its routes: SHM and pcie-proxy, with copies",
          "[link_model]") {
  // model/link_model.cpp mirrors sim/topology.hpp's weights and SM-read resources by hand; a
  // direct solve on the simulator's own routes must give its rates (copy, the all-to-all's slowest
  // flow) on the nodes where SM reads meet copies, with the calibrated H100's under-duplex and
  // duplex capacities too (48.2 / 50.6 GB/s, duplex their sum).
  std::vector<NodeSpec> nodes = {node("2xh100-pcie"), node("1xh100-sxm"), node("1xh200")};
  NodeSpec cal = node("1xh100-sxm");
  for (LinkSpec& l : cal.links)
    if (l.kind == LinkKind::pcie) {
      l.a_to_b_under_duplex_bytes_per_s = 48.2e9;
      l.b_to_a_under_duplex_bytes_per_s = 50.6e9;
      l.duplex_bytes_per_s = 98.8e9;
    }
  cal.collective_flow_bytes_per_s = 29.9e9;
  cal.copy_engine_bytes_per_s = 55.05e9;
  nodes.push_back(cal);
  int checked = 0;
  for (const NodeSpec& n : nodes)
    for (double cap : {0.0, 2e9, 5e9, 10e9, 20e9, double(INFINITY)}) {
      INFO(n.id << (&n == &nodes.back() ? " (calibrated-like)" : "") << ", cap " << cap / 1e9 << " GB/s");
      const CollectiveShare s = share_with_collective(n, 0, 2, 64e6, cap);
      const auto [copy, slowest] = direct_solve(n, cap);
      CHECK(s.copy_bytes_per_s == Approx(copy).epsilon(1e-6));
      CHECK(s.collective_flow_bytes_per_s == Approx(slowest).epsilon(1e-6));
      ++checked;
    }
  CHECK(checked == 24);
}

TEST_CASE("the SM-read resource exists only where SMs read staged memory, and never holds a copy alone",
          "[link_model]") {
  // NVLink (8xh100-sxm) and P2P pairs read nothing through SMs: no resource, whatever the SM rate.
  for (const char* id : {"8xh100-sxm", "1xh200", "2xh100-pcie", "8xh100-pcie"}) {
    const NodeSpec n = node(id);
    const auto routes = shared_node_routes(n);
    for (int g = 0; g < n.gpu_count; ++g) {
      bool reads = n.collective == CollectiveBackend::pcie_proxy;
      for (int a = 0; a < n.gpu_count; ++a)
        if (a != g && routes->peer(a, g) && routes->peer(a, g)->transport == Transport::shm) reads = true;
      INFO(id << " gpu" << g);
      CHECK((routes->sm_read_copy_cost(g) > 0) == (reads && routes->sm_read_weight(g) < 1));
    }
  }
  // An under-duplex H2D rate between f and the lone copy's rate: β = r² would hold a copy alone
  // below its rate (f / r² < CE); β is clamped to f / (the lone copy's rate).
  NodeSpec n = node("2xh100-pcie");
  for (LinkSpec& l : n.links)
    if (l.kind == LinkKind::pcie) l.a_to_b_under_duplex_bytes_per_s = 40e9;
  const double lone = std::min(n.host_link(0).a_to_b_bytes_per_s, n.copy_engine_bytes_per_s);
  const double beta = shared_node_routes(n)->sm_read_copy_cost(0);
  REQUIRE(beta > 0);
  CHECK(beta * lone <= n.collective_flow_bytes_per_s * (1 + 1e-12));
  MaxMinSolver solver;
  const Topology t(n, solver);
  const int id = solver.add_flow(t.h2d_route(0), n.copy_engine_bytes_per_s);
  solver.solve();
  CHECK(solver.rate(id) == Approx(lone));
}
