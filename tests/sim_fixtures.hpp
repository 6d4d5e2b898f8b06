#pragma once
// Helpers shared by the simulator tests: build a plan for a scenario and simulate it.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/grid.hpp"

namespace chunkflow::test {

/// A fresh empty folder under the temporary directory, named for `tag` and this process.
inline std::filesystem::path fresh_dir(const std::string& tag) {
  const std::filesystem::path d =
      std::filesystem::temp_directory_path() / ("chunkflow-test-" + tag + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline Workload workload(const std::string& model, int64_t h, int64_t w, int64_t frames, int ulysses) {
  Workload wl;
  wl.model = model;
  wl.height = h;
  wl.width = w;
  wl.frames = frames;
  wl.ulysses_degree = ulysses;
  return wl;
}

/// workload() with a parallel layout beyond Ulysses: ring degree, TP degree, FSDP and CFG mode.
inline Workload layout(const std::string& model, int64_t h, int64_t w, int64_t frames, int ulysses, int ring, int tp,
                       bool fsdp, CfgMode cfg = CfgMode::automatic) {
  Workload wl = workload(model, h, w, frames, ulysses);
  wl.ring_degree = ring;
  wl.tp_degree = tp;
  wl.fsdp = fsdp;
  wl.cfg = cfg;
  return wl;
}

inline PolicyConfig policy(const std::string& name, std::optional<double> resident = std::nullopt,
                           double chunk_mib = 64, int lookahead = 1) {
  PolicyConfig p;
  p.policy = name;
  p.resident_fraction = resident;
  p.chunk_bytes = chunk_mib * kMiB;
  p.lookahead = lookahead;
  p.steps = 2;
  return p;
}

struct Run {
  StepPlan plan;
  SimResult result;
};

inline Run run(const Workload& w, const NodeSpec& node, const PolicyConfig& p) {
  Run r{build_plan(w, node, p), {}};
  validate(r.plan);
  r.result = simulate(r.plan, node);
  return r;
}

/// Scales every H2D-direction capacity of a node by `factor`: the links' one-way and under-duplex
/// capacities and the copy-engine cap. (The SM-driven staged flows' rate is left as it is: SM reads
/// share a direction with copies in proportion to their alone rates, model/routes.hpp, so the step
/// need not be monotone in the copy engine's rate alone.)
inline NodeSpec with_h2d_scaled(NodeSpec n, double factor) {
  for (auto& l : n.links) {
    l.a_to_b_bytes_per_s *= factor;
    l.a_to_b_under_duplex_bytes_per_s *= factor;
  }
  n.copy_engine_bytes_per_s *= factor;
  return n;
}

/// The configurations of grid `g` at `draws` indices drawn uniformly with replacement from
/// [0, configurations) by std::mt19937(seed), in grid order, each index once (a repeated draw
/// counts once): a random sample of a grid for the tests that compare a path with another.
inline std::vector<GridConfig> random_grid_configs(const Grid& g, int draws, uint32_t seed) {
  const GridCounts counts = count_grid(g);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, counts.configurations - 1);
  std::vector<int64_t> wanted;
  for (int i = 0; i < draws; ++i) wanted.push_back(pick(rng));
  std::sort(wanted.begin(), wanted.end());
  std::vector<GridConfig> out;
  GridCursor cursor(g);
  std::size_t w = 0;
  while (const auto c = cursor.next()) {
    if (w >= wanted.size()) break;
    if (c->index != wanted[w]) continue;
    while (w < wanted.size() && wanted[w] == c->index) ++w;
    out.push_back(*c);
  }
  return out;
}

}  // namespace chunkflow::test
