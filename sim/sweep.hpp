#pragma once
// Sweeps: many policy configurations of one scenario, simulated in parallel (OpenMP), split into
// shards for array jobs (--shard I/N: configuration k belongs to shard k mod N; the CSVs of all
// shards concatenate, rows keyed by `config_index`).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/fit.hpp"
#include "sim/interrupt.hpp"

namespace chunkflow {

struct SweepGrid {
  std::vector<std::string> policies = {"no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"};
  std::vector<double> chunk_mib = {8, 16, 32, 64, 128, 256};
  /// nullopt = auto. Layerwise takes only the numeric ones (its "auto" is no resident block).
  std::vector<std::optional<double>> resident_fractions = {std::nullopt, 0.0, 0.25, 0.5, 0.75, 1.0};
  int lookahead = 1;
  int steps = 2;  ///< forwards simulated per configuration (`--simulated-steps`)
  std::optional<double> memory_budget_bytes;  ///< per GPU, given to every configuration (none: unbounded)
};

/// The configurations of a grid, in a fixed order: no-offload once; each baseline (layerwise*) per
/// resident fraction (auto included only with a memory budget: it then means "as many resident
/// blocks as fit"); chunkflow per chunk size × resident fraction.
std::vector<PolicyConfig> sweep_configs(const SweepGrid& grid);

struct SweepRow {
  int config_index = 0;
  PolicyConfig config;
  PlanInfo plan;            ///< resolved parameters (auto residency → number)
  StepSummary summary;
  MemoryVerdict verdict;    ///< fits (peak ≤ usable GPU memory) and, if not, why (sim/fit.hpp)
  StepBound bound;          ///< the plan's lower bound (sim/bound.hpp)
  uint64_t events = 0;
  std::size_t ops = 0;
};

/// A grid from the command line's comma-separated lists: policies (no-offload, layerwise,
/// chunkflow), chunk sizes in MiB (> 0), resident fractions in [0, 1] or "auto"; lookahead ≥ 1,
/// steps ≥ 2 (the last step is the steady state). Throws InputError naming the option
/// (--policies, --chunk-mib-list, --resident-fractions, --lookahead, --simulated-steps).
SweepGrid parse_sweep_grid(const std::string& policies, const std::string& chunk_mib,
                           const std::string& resident_fractions, int lookahead, int steps);

/// Parses "I/N" (0 ≤ I < N); throws InputError(field "--shard").
std::pair<int, int> parse_shard(const std::string& text);

/// A sweep stopped by SIGINT/SIGTERM (sim/interrupt.hpp): the rows it completed, in config order.
struct SweepInterrupted : Interrupted {
  SweepInterrupted(int signal, std::vector<SweepRow> rows, int total)
      : Interrupted(signal, int(rows.size()), total), completed_rows(std::move(rows)) {}
  std::vector<SweepRow> completed_rows;
};

/// Validates and simulates the configurations of shard `shard_index` of `shard_count` on every core.
/// Rows come back in config order, whatever the thread count. A configuration whose plan the memory
/// budget cannot hold has no row (`skipped`, when given, counts them); any other error is rethrown.
/// After SIGINT/SIGTERM it starts no more configurations and throws SweepInterrupted with the
/// completed ones.
std::vector<SweepRow> run_sweep(const Scenario& scenario, const std::vector<PolicyConfig>& configs,
                                int shard_index = 0, int shard_count = 1, int* skipped = nullptr);

/// CSV with a header line; one line per row (config_index first).
std::string sweep_csv(const Scenario& scenario, const std::vector<SweepRow>& rows);

}  // namespace chunkflow
