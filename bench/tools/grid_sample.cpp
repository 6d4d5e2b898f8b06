// Per-configuration cost of a grid on a sample (issue 12 §2 profiling): runs every K-th valid
// configuration of a grid file (from offset O), optionally only some policies, on one thread, and
// prints the thread CPU time per policy and per phase (build_plan, validate, simulate), in ms.
// Usage: chunkflow_grid_sample GRID.json [--every K] [--offset O] [--count N] [--policies a,b,...]
//        [--repeat N] [--sim-repeat N]
//        chunkflow_grid_sample GRID.json --windows W [--window-size S]
// The second form times the grid path itself (run_grid_config, with its memo) on W windows of S
// consecutive configurations spread evenly over the grid.
// Output (one line per policy, then "all"): policy, configurations run, mean ms per configuration,
// then mean build_plan / validate / simulate ms, and the projection for the whole grid
// (configurations of that policy in the grid × mean), in CPU seconds. Meant for perf and for the
// speed figures of the README; the grid's rows are not written.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.hpp"
#include "runtime/policy.hpp"
#include "runtime/step_plan.hpp"
#include "sim/executor.hpp"
#include "sim/grid.hpp"

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// FNV-1a over what the simulator reads of a plan (ops without names, a few info fields).
uint64_t plan_fingerprint(const chunkflow::StepPlan& plan, int workload) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto d = [&](double v) { mix(&v, sizeof v); };
  auto i = [&](int v) { mix(&v, sizeof v); };
  i(workload);
  i(plan.info.steps), i(plan.info.ranks), i(plan.info.slot_count), d(plan.info.slot_bytes);
  d(plan.info.resident_weight_bytes), d(plan.info.activation_bytes);
  for (const auto& op : plan.ops) {
    i(int(op.kind)), i(int(op.lane)), i(op.rank), i(op.step), i(op.block), i(op.stage), i(op.collective_group);
    d(op.flop), d(op.bytes), d(op.alloc_bytes), d(op.free_bytes), d(op.rate_cap_bytes_per_s);
    for (int x : op.deps) i(x);
    i(-7);
    for (int x : op.data_deps) i(x);
    i(-9);
  }
  return h;
}

struct Tally {
  int64_t in_grid = 0, run = 0;
  std::set<uint64_t> distinct;
  double ops = 0, deps = 0;
  double total_s = 0, plan_s = 0, validate_s = 0, simulate_s = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace chunkflow;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s GRID.json [--every K] [--offset O] [--count N] [--policies a,b] [--repeat N] [--sim-repeat N] | --windows W [--window-size S]\n", argv[0]);
    return 2;
  }
  const std::string file = argv[1];
  int64_t every = 1, offset = 0, count = INT64_MAX;
  int repeat = 1, sim_repeat = 1;
  int64_t windows = 0, window_size = 240;
  std::vector<std::string> only;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--every") every = std::max<int64_t>(1, std::atoll(v.c_str()));
    else if (k == "--offset") offset = std::atoll(v.c_str());
    else if (k == "--count") count = std::atoll(v.c_str());
    else if (k == "--windows") windows = std::atoll(v.c_str());
    else if (k == "--window-size") window_size = std::max<int64_t>(1, std::atoll(v.c_str()));
    else if (k == "--sim-repeat") sim_repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--repeat") repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--policies") {
      std::stringstream ss(v);
      for (std::string p; std::getline(ss, p, ',');) only.push_back(p);
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    const Grid grid = load_grid(file);
    if (windows > 0) {
      // The grid path itself (run_grid_config, its memo warm within each window): W windows of S
      // consecutive configurations, evenly spread over the grid.
      const GridCounts counts = count_grid(grid);
      const int64_t stride = std::max<int64_t>(window_size, counts.configurations / windows);
      std::map<std::string, Tally> by_policy;
      GridCursor cursor(grid);
      while (const auto c = cursor.next()) {
        const std::string& name = grid.policies[c->policy].policy;
        Tally& t = by_policy[name];
        ++t.in_grid;
        if (c->index % stride >= window_size) continue;
        const double t0 = thread_cpu_s();
        const GridRow row = run_grid_config(grid, *c);
        t.total_s += thread_cpu_s() - t0;
        ++t.run;
        if (row.row && row.row->summary.step_time_s < 0) std::puts("");
      }
      double proj = 0;
      std::printf("%-22s %8s %9s %9s %12s\n", "policy", "in_grid", "run", "ms/config", "proj_cpu_s");
      for (const auto& [name, t] : by_policy) {
        const double mean = t.run > 0 ? t.total_s / double(t.run) : 0.0;
        std::printf("%-22s %8lld %9lld %9.3f %12.1f\n", name.c_str(), static_cast<long long>(t.in_grid),
                    static_cast<long long>(t.run), 1e3 * mean, double(t.in_grid) * mean);
        proj += double(t.in_grid) * mean;
      }
      const GridSimMemoStats m = grid_sim_memo_stats(grid);
      std::printf("memo: %lld hits, %lld misses, %.1f MiB kept\n", static_cast<long long>(m.hits),
                  static_cast<long long>(m.misses), double(m.bytes) / (1 << 20));
      const PlannerCacheStats ps = chunkflow_planner_cache_stats();
      std::printf("chunkflow planner: %lld planners made (%lld kept), %lld estimates computed (%lld kept, %lld shared, "
                  "%lld ruled out by volume), %lld passes (%lld stopped early)\n",
                  static_cast<long long>(ps.planner_misses), static_cast<long long>(ps.planner_hits),
                  static_cast<long long>(ps.estimate_misses), static_cast<long long>(ps.estimate_hits),
                  static_cast<long long>(ps.estimate_shared), static_cast<long long>(ps.estimate_bounded),
                  static_cast<long long>(ps.passes), static_cast<long long>(ps.passes_stopped));
      std::printf("projected whole grid: %.1f CPU-s (sum over policies of in_grid x mean)\n", proj);
      return 0;
    }
    std::map<std::string, Tally> by_policy;
    GridCursor cursor(grid);
    while (const auto c = cursor.next()) {
      const PolicyConfig& p = grid.policies[c->policy];
      Tally& t = by_policy[p.policy];
      ++t.in_grid;
      if (c->index < offset || (c->index - offset) % every != 0 || (c->index - offset) / every >= count) continue;
      if (!only.empty() && std::find(only.begin(), only.end(), p.policy) == only.end()) continue;
      const GridWorkload& gw = grid.workloads[c->workload];
      for (int r = 0; r < repeat; ++r) {
        const double t0 = thread_cpu_s();
        StepPlan plan;
        try {
          plan = build_plan(gw.scenario.workload, gw.scenario.node, p);
        } catch (const InputError&) {
          t.plan_s += thread_cpu_s() - t0;
          t.total_s += thread_cpu_s() - t0;
          ++t.run;
          continue;
        }
        const double t1 = thread_cpu_s();
        t.distinct.insert(plan_fingerprint(plan, c->workload));
        t.ops += double(plan.ops.size());
        for (const auto& op : plan.ops) t.deps += double(op.deps.size() + op.data_deps.size());
        validate(plan);
        const double t2 = thread_cpu_s();
        SimOptions o;
        o.record_links = false;
        o.record_memory = false;
        SimResult sim = simulate(plan, gw.scenario.node, o);
        for (int k = 1; k < sim_repeat; ++k) sim = simulate(plan, gw.scenario.node, o);
        const double t3 = thread_cpu_s();
        t.plan_s += t1 - t0;
        t.validate_s += t2 - t1;
        t.simulate_s += t3 - t2;
        t.total_s += t3 - t0;
        ++t.run;
        if (sim.summary.step_time_s < 0) std::puts("");  // keep the result alive
      }
    }
    Tally all;
    std::printf("%-22s %8s %9s %9s %9s %9s %9s %12s %9s\n", "policy", "in_grid", "sampled", "ms/config", "plan_ms",
                "valid_ms", "sim_ms", "proj_cpu_s", "distinct");
    auto line = [](const std::string& name, const Tally& t) {
      const double n = t.run > 0 ? double(t.run) : 1.0;
      std::printf("%-22s %8lld %9lld %9.3f %9.3f %9.3f %9.3f %12.1f %9zu\n", name.c_str(), static_cast<long long>(t.in_grid),
                  static_cast<long long>(t.run), 1e3 * t.total_s / n, 1e3 * t.plan_s / n, 1e3 * t.validate_s / n,
                  1e3 * t.simulate_s / n, t.run > 0 ? double(t.in_grid) * t.total_s / n : 0.0, t.distinct.size());
      std::printf("    mean ops %.0f, mean deps+data_deps %.0f\n", t.ops / n, t.deps / n);
    };
    double proj = 0;
    for (const auto& [name, t] : by_policy) {
      line(name, t);
      if (t.run > 0) proj += double(t.in_grid) * t.total_s / double(t.run);
      all.in_grid += t.in_grid;
      all.run += t.run;
      all.total_s += t.total_s;
      all.plan_s += t.plan_s;
      all.validate_s += t.validate_s;
      all.simulate_s += t.simulate_s;
    }
    line("all (sampled mix)", all);
    std::printf("projected whole grid: %.1f CPU-s (sum over policies of in_grid x mean)\n", proj);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
