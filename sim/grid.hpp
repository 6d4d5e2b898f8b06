#pragma once
// Grid sweeps (issue 12 §1): `chunkflow sweep --grid FILE`. A grid file lists values per axis; the
// configurations are their cartesian product, minus combinations that do not apply or are invalid.
// Schema (docs in scenarios/grids/README.md; every key optional, defaults from the base scenario):
//
//   {"name": str, "description": str,
//    "scenario": "FILE",            base scenario (path relative to the grid file); default: embedded
//    "models":  ["wan2.1-t2v-14b", ...],                       architecture ids
//    "shapes":  [{"height", "width", "frames", "batch"}, ...], each key optional (base's value; an
//                                                               image model without "frames" takes 1)
//    "nodes":   ["2xh100-pcie" | "node.json" | {"id", <overrides as in a scenario's /node>}, ...]
//    "layouts": [{"ulysses_degree": 2, ...}, ...],             /workload fields of the parallel layout
//                                                               (any the scenario reader accepts besides
//                                                               model and shape: new layout fields work
//                                                               without a change here)
//    "policies": ["no-offload", "layerwise", "layerwise-comm-aware", "chunkflow"],
//    "chunk_mib": [64, ...], "resident_fractions": [0, 0.5, "auto", ...],
//    "memory_budget_gib": [null, 24, ...] (null = no budget), "lookahead": [1, ...],
//    "simulated_steps": [2, ...],    forwards simulated (≥ 2; the last is reported)
//    "steps": [50, ...]}             denoising steps of the generation (/workload/steps; rows carry
//                                    denoise_time_s = steps × forwards per step × step time)
//
// Order: models ▸ shapes ▸ nodes ▸ layouts ▸ steps (outer, "workload combinations") ▸ policies ▸
// memory_budget_gib ▸ simulated_steps ▸ lookahead ▸ chunk_mib ▸ resident_fractions (inner). An axis
// that does not apply to a policy is not crossed with it (chunk_mib only for chunkflow; no-offload
// takes neither chunk, fraction nor lookahead): those products are "collapsed", not configurations.
// A workload combination the scenario reader rejects (e.g. frames of a video shape on an image
// model, a Ulysses degree that does not divide the heads or exceeds the node's GPUs) and a
// configuration outside the plan limits (runtime/plan_limits.hpp) are "invalid": counted, the first
// reason kept. Configuration indices number the remaining configurations 0, 1, ... in that order.
// Nothing is stored per configuration: a cursor enumerates them, so memory does not grow with the
// grid.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/plan_limits.hpp"
#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"
#include "sim/decision_memo.hpp"
#include "sim/sweep.hpp"

namespace chunkflow {

/// One valid workload combination (model × shape × node × layout × steps), resolved and validated.
struct GridWorkload {
  Scenario scenario;
  ForwardCost cost;
  PlanShape shape;           ///< plan_shape(workload, cost, node): the cursor's plan-limit checks
  std::string node_label;    ///< the grid's node entry: an id, a file, or compact JSON with overrides
  std::string layout_label;  ///< the layout entry as "key=value;..." ("" = the base scenario's)
};


struct Grid {
  std::string file;          ///< the grid file ("" when given as JSON in memory)
  std::string name;
  std::string description;
  std::string text_digest;   ///< FNV-1a 64 of the grid's canonical JSON, hex (identifies it on --resume)
  std::vector<GridWorkload> workloads;   ///< valid workload combinations, in grid order
  std::vector<PolicyConfig> policies;    ///< policy combinations after collapsing, in grid order
  int64_t product_size = 0;              ///< configurations of the full cartesian product
  int64_t collapsed = 0;                 ///< products an axis does not apply to
  int64_t invalid_workloads = 0;         ///< workload combinations the scenario reader rejects
  std::string first_invalid_workload;    ///< ... the first one's reason
  /// What run_grid_config remembers between configurations (shared by the threads; one per Grid).
  std::shared_ptr<DecisionMemo> sim_memo;
};

/// Reads a grid file (schema above). Throws InputError naming the file and the JSON pointer (e.g.
/// "/shapes/2/frames") for malformed JSON, unknown keys, wrong types, empty lists, unknown models,
/// nodes or policies, and values outside their ranges.
Grid load_grid(const std::string& path);

/// The same from JSON text already in memory (the Python module's `sweep(grid)`); `origin` names it
/// in errors; relative paths in it resolve against `base_dir`.
Grid grid_from_text(const std::string& json_text, const std::string& origin, const std::string& base_dir);

/// One configuration of a grid: its index among valid configurations and its coordinates.
struct GridConfig {
  int64_t index = 0;
  int workload = 0;  ///< into Grid::workloads
  int policy = 0;    ///< into Grid::policies
  double cost = 0;   ///< estimated relative cost (ops simulated × planner passes), for balancing
};

/// Enumerates a grid's valid configurations in order, skipping those outside the plan limits.
class GridCursor {
 public:
  explicit GridCursor(const Grid& grid);
  /// The next valid configuration, or nullopt at the end.
  std::optional<GridConfig> next();
  int64_t invalid() const { return invalid_; }                    ///< configurations skipped so far
  const std::string& first_invalid_reason() const { return first_invalid_; }

 private:
  const Grid& grid_;
  PlanLimitFields fields_;  ///< what a plan-limit error names: the grid file and its axes
  int w_ = 0, p_ = 0;
  int64_t index_ = 0, invalid_ = 0;
  std::string first_invalid_;
};

/// Counts of a whole grid (one pass of a cursor).
struct GridCounts {
  int64_t configurations = 0;
  int64_t invalid = 0;           ///< workload combinations × their policies, plus plan-limit failures
  std::string first_invalid_reason;
  double total_cost = 0;
};
GridCounts count_grid(const Grid& grid);

/// A simulated configuration: the sweep row plus where it sits in the grid. `row` is empty (and
/// `left_out_reason` set) when the memory budget cannot hold any plan of the configuration.
struct GridRow {
  GridConfig config;
  std::optional<SweepRow> row;
  std::string left_out_reason;
};

/// Plans, validates and simulates one configuration (as `sweep` does). Throws what build_plan,
/// validate and simulate throw, except the budget's InputError (→ left_out_reason).
/// Shortcut (issue 12 §2): the decision is always made; one equal to a decision of this grid built
/// before takes that plan's outcome from the grid's memo (sim/decision_memo.hpp run_decision).
GridRow run_grid_config(const Grid& grid, const GridConfig& config);

/// Hits and misses of a grid's simulation memo so far (for reports and benchmarks).
using GridSimMemoStats = DecisionMemoStats;
GridSimMemoStats grid_sim_memo_stats(const Grid& grid);

/// CSV header line (with '\n') and one row's line. Columns: config_index, model, node, layout,
/// height, width, frames, batch, ulysses_degree, policy, chunk_mib, resident_fraction,
/// resident_fraction_auto, lookahead, simulated_steps, memory_budget_bytes, then sweep_csv's
/// results (step_time_s ... share_cap_bytes_per_s) and the generation (denoising_steps, cfg,
/// forwards_per_step, denoise_time_s). Fields with a comma or quote are quoted.
std::string grid_csv_header();
std::string grid_csv_line(const Grid& grid, const GridRow& r);
/// One JSON Lines row (with '\n'): sweep_row_json's keys plus model, node, layout, height, width,
/// frames, batch, ulysses_degree, simulated_steps, scenario.
std::string grid_json_line(const Grid& grid, const GridRow& r);
/// The grid's description for the context line: file, name, digest, axis sizes and counts.
std::string grid_summary_json(const Grid& grid, const GridCounts& counts);

}  // namespace chunkflow
