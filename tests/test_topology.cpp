// Tests of sim/topology: resources registered per link direction and duplex coupling, fewest-hops
// routes (host-staged GPU↔GPU through the host), errors, and a route fed to the max-min solver.
// Source: shared/reference/systems-and-hardware.md §3, §5.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "model/node.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"

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

TEST_CASE("route errors: unknown vertex, same endpoints, no path; bad links", "[topology][errors]") {
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

TEST_CASE("node.cpp built-in 2xh100-pcie routes gpu0→gpu1 through the host", "[topology][node]") {
  NodeSpec n;
  try {
    n = chunkflow::node("2xh100-pcie");
  } catch (const std::exception& e) {
    FAIL("chunkflow::node(\"2xh100-pcie\") threw: " << e.what());
  }
  MaxMinSolver s;
  const Topology t(n, s);
  CHECK(t.route_vertices("gpu0", "gpu1") == std::vector<std::string>{"gpu0", "host", "gpu1"});
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
