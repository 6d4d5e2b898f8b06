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
