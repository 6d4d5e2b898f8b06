// Tests of sim/maxmin: closed forms of shared/reference/systems-and-hardware.md §5, the fast solver
// against the reference oracle on random instances, and the max-min invariants.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "sim/maxmin.hpp"

using chunkflow::MaxMinSolver;
using chunkflow::maxmin_reference;

namespace {

/// Relative tolerance for comparing rates (solver vs closed form / oracle). Rates differ from the
/// exact values only by rounding and MaxMinSolver::kLevelTieRelTol grouping.
constexpr double kRateRelTol = 1e-9;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double GB = 1e9;

bool close(double a, double b, double rel = kRateRelTol) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= rel * std::max({std::abs(a), std::abs(b), 1e-300});
}

using Uses = std::vector<std::pair<int, double>>;

struct Instance {
  std::vector<double> capacities;
  std::vector<Uses> uses;
  std::vector<double> bounds;
  std::vector<double> weights;
};

std::string describe(const Instance& in) {
  std::ostringstream os;
  os.precision(17);
  os << "capacities:";
  for (double c : in.capacities) os << ' ' << c;
  for (std::size_t f = 0; f < in.uses.size(); ++f) {
    os << "\nflow " << f << " bound " << in.bounds[f] << " weight " << in.weights[f] << " uses";
    for (const auto& [r, a] : in.uses[f]) os << " (" << r << ',' << a << ')';
  }
  return os.str();
}

Instance random_instance(std::mt19937& rng) {
  std::uniform_int_distribution<int> n_res_dist(1, 12), n_flow_dist(1, 20);
  std::uniform_real_distribution<double> cap_dist(1.0, 100.0), coeff_dist(0.25, 3.0), unit(0.0, 1.0);
  Instance in;
  const int n_res = n_res_dist(rng);
  const int n_flows = n_flow_dist(rng);
  for (int r = 0; r < n_res; ++r) {
    const double u = unit(rng);
    in.capacities.push_back(u < 0.05 ? 0.0 : u < 0.10 ? kInf : cap_dist(rng) * GB);
  }
  std::uniform_int_distribution<int> res_pick(0, n_res - 1), path_len(0, 4);
  for (int f = 0; f < n_flows; ++f) {
    Uses uses;
    const int len = path_len(rng);
    for (int k = 0; k < len; ++k) uses.emplace_back(res_pick(rng), unit(rng) < 0.7 ? 1.0 : coeff_dist(rng));
    in.uses.push_back(uses);
    // Flows with no resource always get a bound so that rates stay finite most of the time.
    in.bounds.push_back(uses.empty() || unit(rng) < 0.3 ? cap_dist(rng) * GB : kInf);
    in.weights.push_back(unit(rng) < 0.6 ? 1.0 : std::uniform_int_distribution<int>(1, 4)(rng));
  }
  return in;
}

/// Checks the max-min invariants on `rates`: feasibility (no resource over capacity, no flow over
/// its bound, no NaN) and that each flow is bottlenecked (at its bound, or on a saturated resource
/// where its rate/weight is the largest).
void check_invariants(const Instance& in, const std::vector<double>& rates) {
  INFO(describe(in));
  const std::size_t n_res = in.capacities.size();
  std::vector<double> load(n_res, 0.0);
  for (std::size_t f = 0; f < rates.size(); ++f) {
    INFO("flow " << f << " rate " << rates[f]);
    REQUIRE_FALSE(std::isnan(rates[f]));
    REQUIRE(rates[f] >= 0);
    REQUIRE(rates[f] <= in.bounds[f] * (1 + kRateRelTol));
    for (const auto& [r, a] : in.uses[f]) load[r] += a * rates[f];
  }
  for (std::size_t r = 0; r < n_res; ++r) {
    INFO("resource " << r << " load " << load[r] << " capacity " << in.capacities[r]
                     << " (tolerance kRateRelTol)");
    REQUIRE(load[r] <= in.capacities[r] * (1 + kRateRelTol) + 1e-6);
  }
  for (std::size_t f = 0; f < rates.size(); ++f) {
    if (close(rates[f], in.bounds[f])) continue;
    bool bottlenecked = false;
    for (const auto& [r, a] : in.uses[f]) {
      if (!(load[r] >= in.capacities[r] * (1 - kRateRelTol) - 1e-6)) continue;  // not saturated
      bool largest = true;
      for (std::size_t g = 0; g < rates.size(); ++g)
        for (const auto& [rg, ag] : in.uses[g])
          if (rg == r && rates[g] / in.weights[g] > rates[f] / in.weights[f] * (1 + kRateRelTol) + 1e-6)
            largest = false;
      if (largest) bottlenecked = true;
    }
    INFO("flow " << f << " rate " << rates[f] << " is neither at its bound nor the largest (per weight) on a "
                 "saturated resource");
    REQUIRE(bottlenecked);
  }
}

std::vector<double> solve_fast(const Instance& in) {
  MaxMinSolver s;
  for (double c : in.capacities) s.add_resource(c);
  std::vector<int> ids;
  for (std::size_t f = 0; f < in.uses.size(); ++f) ids.push_back(s.add_flow(in.uses[f], in.bounds[f], in.weights[f]));
  s.solve();
  std::vector<double> rates;
  for (int id : ids) rates.push_back(s.rate(id));
  return rates;
}

}  // namespace

TEST_CASE("one flow alone gets min(path capacities, bound)", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int l1 = s.add_resource(63 * GB, "pcie.gpu0.d2h");
  const int l2 = s.add_resource(55 * GB, "pcie.gpu1.h2d");
  const int l3 = s.add_resource(80 * GB, "other");
  const int unbounded = s.add_flow({{l1, 1}, {l2, 1}});
  s.solve();
  CHECK(close(s.rate(unbounded), 55 * GB));
  s.remove_flow(unbounded);
  const int bounded = s.add_flow({{l1, 1}, {l2, 1}}, 40 * GB);
  s.solve();
  CHECK(close(s.rate(bounded), 40 * GB));
  CHECK(close(s.load(l1), 40 * GB));
  CHECK(s.load(l3) == 0);
  CHECK(s.rate(unbounded) == 0);  // removed
  CHECK(s.active_flows() == 1);
}

TEST_CASE("n equal flows on one link get capacity / n each", "[maxmin][closed-form]") {
  for (int n : {1, 2, 3, 7, 20}) {
    MaxMinSolver s;
    const int link = s.add_resource(63 * GB);
    std::vector<int> flows;
    for (int i = 0; i < n; ++i) flows.push_back(s.add_flow({{link, 1}}));
    s.solve();
    for (int f : flows) {
      INFO("n = " << n);
      CHECK(close(s.rate(f), 63 * GB / n));
    }
    CHECK(close(s.load(link), 63 * GB));
  }
}

TEST_CASE("A on links 1,2, B on 1, C on 2, capacities 1 and 1: 0.5 each", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int l1 = s.add_resource(1), l2 = s.add_resource(1);
  const int a = s.add_flow({{l1, 1}, {l2, 1}}), b = s.add_flow({{l1, 1}}), c = s.add_flow({{l2, 1}});
  s.solve();
  CHECK(close(s.rate(a), 0.5));
  CHECK(close(s.rate(b), 0.5));
  CHECK(close(s.rate(c), 0.5));
}

TEST_CASE("A on links 1,2, B on 1, C on 2, capacities 1 and 2: A=0.5, B=0.5, C=1.5", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int l1 = s.add_resource(1), l2 = s.add_resource(2);
  const int a = s.add_flow({{l1, 1}, {l2, 1}}), b = s.add_flow({{l1, 1}}), c = s.add_flow({{l2, 1}});
  s.solve();
  CHECK(close(s.rate(a), 0.5));
  CHECK(close(s.rate(b), 0.5));
  CHECK(close(s.rate(c), 1.5));
  CHECK(close(s.load(l2), 2.0));
}

TEST_CASE("a bounded flow gets its cap, the other flow gets the rest of the link", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int link = s.add_resource(63 * GB);
  const int capped = s.add_flow({{link, 1}}, 20 * GB);
  const int free_flow = s.add_flow({{link, 1}});
  s.solve();
  CHECK(close(s.rate(capped), 20 * GB));
  CHECK(close(s.rate(free_flow), 43 * GB));
  // A cap above the fair share does not bind: equal split.
  MaxMinSolver t;
  const int link2 = t.add_resource(63 * GB);
  const int loose = t.add_flow({{link2, 1}}, 40 * GB);
  const int other = t.add_flow({{link2, 1}});
  t.solve();
  CHECK(close(t.rate(loose), 31.5 * GB));
  CHECK(close(t.rate(other), 31.5 * GB));
}

TEST_CASE("weights 2:1 split a link 2:1", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int link = s.add_resource(60 * GB);
  const int heavy = s.add_flow({{link, 1}}, kInf, 2.0);
  const int light = s.add_flow({{link, 1}}, kInf, 1.0);
  s.solve();
  CHECK(close(s.rate(heavy), 40 * GB));
  CHECK(close(s.rate(light), 20 * GB));
}

// A symmetric duplex coupling with max-min fairness splits concurrent H2D + D2H evenly (43.6 /
// 43.6). The measurement it was meant to model is asymmetric: H2D 52.8 while D2H 34.4 on Gen5
// (gpu-catalogue.md §2.2 [SIM]). This closed form documents the solver on that input; it is not a
// model of the link. Nodes model the asymmetry with per-direction capacities under duplex
// (LinkSpec::*_under_duplex_bytes_per_s; tests/test_topology.cpp checks 52.8 / 34.4), or with
// per-flow weights, checked below.
TEST_CASE("a symmetric duplex coupling splits H2D + D2H evenly (43.6 each of 87.2), unlike the measured 52.8 / 34.4",
          "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int h2d = s.add_resource(63 * GB, "pcie.gpu0.h2d");
  const int d2h = s.add_resource(63 * GB, "pcie.gpu0.d2h");
  const int duplex = s.add_resource(87.2 * GB, "pcie.gpu0.duplex");
  const int up = s.add_flow({{h2d, 1}, {duplex, 1}});
  s.solve();
  CHECK(close(s.rate(up), 63 * GB));
  const int down = s.add_flow({{d2h, 1}, {duplex, 1}});
  s.solve();
  CHECK(close(s.rate(up), 43.6 * GB));
  CHECK(close(s.rate(down), 43.6 * GB));
  CHECK(close(s.load(duplex), 87.2 * GB));
}

TEST_CASE("per-flow weights 52.8 : 34.4 on the 87.2 GB/s duplex reproduce the measured asymmetric split",
          "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int h2d = s.add_resource(56 * GB, "pcie.gpu0.h2d");
  const int d2h = s.add_resource(56 * GB, "pcie.gpu0.d2h");
  const int duplex = s.add_resource(87.2 * GB, "pcie.gpu0.duplex");
  const int up = s.add_flow({{h2d, 1}, {duplex, 1}}, kInf, 52.8);
  const int down = s.add_flow({{d2h, 1}, {duplex, 1}}, kInf, 34.4);
  s.solve();
  CHECK(close(s.rate(up), 52.8 * GB));
  CHECK(close(s.rate(down), 34.4 * GB));
}

TEST_CASE("coefficients: a flow using a resource with coefficient 2 counts twice", "[maxmin][closed-form]") {
  MaxMinSolver s;
  const int link = s.add_resource(30 * GB);
  const int twice = s.add_flow({{link, 2}});
  const int once = s.add_flow({{link, 1}});
  s.solve();
  // Level λ: 2λ + λ = 30 → λ = 10.
  CHECK(close(s.rate(twice), 10 * GB));
  CHECK(close(s.rate(once), 10 * GB));
  CHECK(close(s.load(link), 30 * GB));
  // Repeated entries of one resource are summed: same as coefficient 2.
  MaxMinSolver t;
  const int l = t.add_resource(30 * GB);
  const int f = t.add_flow({{l, 1}, {l, 1}});
  t.solve();
  CHECK(close(t.rate(f), 15 * GB));
}

TEST_CASE("degenerate inputs give no NaN: zero capacity, no resources, zero coefficient", "[maxmin][degenerate]") {
  MaxMinSolver s;
  const int dead = s.add_resource(0.0);
  const int live = s.add_resource(10 * GB);
  const int inf_res = s.add_resource(kInf);
  const int on_dead = s.add_flow({{dead, 1}, {live, 1}});
  const int on_live = s.add_flow({{live, 1}});
  const int only_bound = s.add_flow({}, 5 * GB);
  const int unconstrained = s.add_flow({{inf_res, 1}});
  const int zero_coeff = s.add_flow({{dead, 0.0}, {live, 1}});
  s.solve();
  CHECK(s.rate(on_dead) == 0);
  CHECK(close(s.rate(on_live), 5 * GB));
  CHECK(close(s.rate(zero_coeff), 5 * GB));
  CHECK(close(s.rate(only_bound), 5 * GB));
  CHECK(std::isinf(s.rate(unconstrained)));
  CHECK(s.load(dead) == 0);
  CHECK(std::isinf(s.load(inf_res)));
  // An empty solver and removing every flow are fine.
  MaxMinSolver empty;
  empty.solve();
  CHECK(empty.active_flows() == 0);
  for (int f : {on_dead, on_live, only_bound, unconstrained, zero_coeff}) s.remove_flow(f);
  s.solve();
  CHECK(s.load(live) == 0);
}

TEST_CASE("invalid inputs and stale reads throw", "[maxmin][errors]") {
  MaxMinSolver s;
  CHECK_THROWS_AS(s.add_resource(-1.0), std::invalid_argument);
  CHECK_THROWS_AS(s.add_resource(std::nan("")), std::invalid_argument);
  const int r = s.add_resource(1.0);
  CHECK_THROWS_AS(s.add_flow({{r + 1, 1}}), std::out_of_range);
  CHECK_THROWS_AS(s.add_flow({{r, -1}}), std::invalid_argument);
  CHECK_THROWS_AS(s.add_flow({{r, 1}}, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(s.add_flow({{r, 1}}, kInf, 0.0), std::invalid_argument);
  const int f = s.add_flow({{r, 1}});
  CHECK_THROWS_AS(s.rate(f), std::logic_error);  // not solved yet
  s.solve();
  CHECK(s.rate(f) == 1.0);
  CHECK_THROWS_AS(s.rate(f + 1), std::out_of_range);
  s.remove_flow(f);
  CHECK_THROWS_AS(s.remove_flow(f), std::logic_error);
  CHECK_THROWS_AS(maxmin_reference({1.0}, {{{0, 1}}}, {1.0, 2.0}, {}), std::invalid_argument);
}

TEST_CASE("fast solver equals the reference on 500 random instances", "[maxmin][oracle]") {
  constexpr unsigned kSeed = 20240611;
  constexpr int kInstances = 500;
  std::mt19937 rng(kSeed);
  for (int i = 0; i < kInstances; ++i) {
    const Instance in = random_instance(rng);
    const std::vector<double> expected = maxmin_reference(in.capacities, in.uses, in.bounds, in.weights);
    const std::vector<double> got = solve_fast(in);
    INFO("instance " << i << " (seed " << kSeed << ")\n" << describe(in));
    REQUIRE(got.size() == expected.size());
    for (std::size_t f = 0; f < got.size(); ++f) {
      INFO("flow " << f << ": fast " << got[f] << ", reference " << expected[f] << " (tolerance kRateRelTol = "
                   << kRateRelTol << ")");
      REQUIRE(close(got[f], expected[f]));
    }
  }
}

TEST_CASE("max-min invariants: no resource over capacity, every flow bottlenecked", "[maxmin][invariants]") {
  constexpr unsigned kSeed = 7;
  std::mt19937 rng(kSeed);
  for (int i = 0; i < 300; ++i) {
    const Instance in = random_instance(rng);
    INFO("instance " << i << " (seed " << kSeed << ")");
    check_invariants(in, solve_fast(in));
    check_invariants(in, maxmin_reference(in.capacities, in.uses, in.bounds, in.weights));
  }
}

TEST_CASE("incremental add/remove/set_capacity matches a fresh reference solve each time", "[maxmin][oracle]") {
  constexpr unsigned kSeed = 99;
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  MaxMinSolver s;
  std::vector<double> capacities;
  for (int r = 0; r < 8; ++r) {
    capacities.push_back((10 + 50 * unit(rng)) * GB);
    s.add_resource(capacities.back());
  }
  struct Live {
    int id;
    Uses uses;
    double bound, weight;
  };
  std::vector<Live> live;
  std::uniform_int_distribution<int> res_pick(0, 7);
  for (int step = 0; step < 2000; ++step) {
    const double u = unit(rng);
    if (u < 0.05) {
      const int r = res_pick(rng);
      capacities[r] = (10 + 50 * unit(rng)) * GB;
      s.set_capacity(r, capacities[r]);
    } else if (live.size() < 20 && (live.empty() || u < 0.55)) {
      Uses uses{{res_pick(rng), 1.0}, {res_pick(rng), 1.0}};
      const double bound = unit(rng) < 0.3 ? (5 + 30 * unit(rng)) * GB : kInf;
      const double weight = unit(rng) < 0.5 ? 1.0 : 2.0;
      live.push_back({s.add_flow(uses, bound, weight), uses, bound, weight});
    } else {
      const std::size_t k = std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng);
      s.remove_flow(live[k].id);
      live.erase(live.begin() + static_cast<long>(k));
    }
    s.solve();
    REQUIRE(s.active_flows() == live.size());
    std::vector<Uses> uses;
    std::vector<double> bounds, weights;
    for (const auto& l : live) {
      uses.push_back(l.uses);
      bounds.push_back(l.bound);
      weights.push_back(l.weight);
    }
    const std::vector<double> expected = maxmin_reference(capacities, uses, bounds, weights);
    for (std::size_t k = 0; k < live.size(); ++k) {
      INFO("step " << step << " flow id " << live[k].id << ": fast " << s.rate(live[k].id) << ", reference "
                   << expected[k]);
      REQUIRE(close(s.rate(live[k].id), expected[k]));
    }
  }
}

TEST_CASE("add_flow_shaped gives the rates add_flow gives, bit for bit, through adds and removes, its errors",
          "[maxmin][fast]") {
  // Random instances whose flows repeat resources and carry zero coefficients (what merging does),
  // each flow added by its uses in one solver and by a shape in another, with removals and re-adds
  // in between so that removed flows' buffers are reused; every rate compared with ==.
  constexpr unsigned kSeed = 4242;
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int compared = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Instance in = random_instance(rng);
    for (Uses& u : in.uses)
      if (!u.empty() && unit(rng) < 0.4) {
        u.push_back(u.front());                // a repeated resource: coefficients summed
        u.emplace_back(u.back().first, 0.0);   // a zero coefficient: dropped
      }
    MaxMinSolver plain, shaped;
    for (double c : in.capacities) plain.add_resource(c), shaped.add_resource(c);
    std::vector<int> shape_of;
    for (const Uses& u : in.uses) shape_of.push_back(shaped.add_shape(u));
    std::vector<int> a, b;
    auto add = [&](std::size_t f) {
      a.push_back(plain.add_flow(in.uses[f], in.bounds[f], in.weights[f]));
      b.push_back(shaped.add_flow_shaped(shape_of[f], in.bounds[f], in.weights[f]));
    };
    for (std::size_t f = 0; f < in.uses.size(); ++f) add(f);
    for (int round = 0; round < 3; ++round) {
      plain.solve(), shaped.solve();
      REQUIRE(plain.active_flow_ids().size() == shaped.active_flow_ids().size());
      for (std::size_t k = 0; k < plain.active_flow_ids().size(); ++k) {
        const int ia = plain.active_flow_ids()[k], ib = shaped.active_flow_ids()[k];
        INFO(describe(in) << "\ntrial " << trial << " round " << round << " position " << k);
        CHECK(plain.rate(ia) == shaped.rate(ib));
        ++compared;
      }
      for (int r = 0; r < int(in.capacities.size()); ++r) CHECK(plain.load(r) == shaped.load(r));
      // Remove a random half (the same positions in both) and add some flows again.
      for (std::size_t k = 0; k < a.size();)
        if (unit(rng) < 0.5) {
          plain.remove_flow(a[k]), shaped.remove_flow(b[k]);
          a.erase(a.begin() + std::ptrdiff_t(k)), b.erase(b.begin() + std::ptrdiff_t(k));
        } else {
          ++k;
        }
      for (std::size_t f = 0; f < in.uses.size(); ++f)
        if (unit(rng) < 0.3) add(f);
    }
  }
  CHECK(compared > 1000);

  MaxMinSolver s;
  s.add_resource(10 * GB);
  CHECK_THROWS_AS(s.add_shape({{1, 1.0}}), std::out_of_range);
  CHECK_THROWS_AS(s.add_shape({{0, -1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(s.add_shape({{0, kInf}}), std::invalid_argument);
  const int shape = s.add_shape({{0, 1.0}, {0, 1.0}});
  CHECK_THROWS_AS(s.add_flow_shaped(shape + 1), std::out_of_range);
  CHECK_THROWS_AS(s.add_flow_shaped(-1), std::out_of_range);
  CHECK_THROWS_AS(s.add_flow_shaped(shape, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(s.add_flow_shaped(shape, kInf, 0.0), std::invalid_argument);
  const int id = s.add_flow_shaped(shape);
  s.solve();
  CHECK(s.rate(id) == 5 * GB);  // coefficient 2 on a 10 GB/s link
}
