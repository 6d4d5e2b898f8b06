#pragma once
// `chunkflow validate`: re-simulates every measured run of a folder (traces/measured/<device>/)
// with its own scenario and compares the predicted step time with the measured one.
//
// A measured run is a JSON summary file (found recursively, *.json) holding a "scenario" object
// and a number "step_time_s": the hardware harness's `chunkflow-hw run --output` summary
// ({"context", "scenario": {name, file, node, model, batch, height, width, frames,
// ulysses_degree, ring_degree, tp_degree, fsdp, cfg, policy, chunk_bytes, resident_fraction, lookahead, steps},
// "step_time_s", ...}; simulate --json: "simulated_steps"),
// or `chunkflow simulate --json` output (scenario with "node" and "workload" objects, the policy
// fields at the top level).
//
// The run is re-simulated with its own parallel layout: ulysses_degree, ring_degree, tp_degree
// (integers in [1, 64]), fsdp (true/false) and cfg ("none" | "sequential" | "parallel" | "auto").
// A summary without ring_degree / tp_degree / fsdp predates the layouts (chunkflow-hw before
// b0ba906, simulate before issue 9 §3 ran Ulysses only): ring 1, TP 1, no FSDP; without cfg, the
// scenario's CFG (the model's default, model/workload.hpp default_cfg, for a run without a file).
//
// Microbenchmark files ("measurements") and Chrome traces ("traceEvents") are not runs and are
// skipped. A run's trace, when present, is the file beside it named <stem>.trace.json (recorded
// for `compare`, not needed here).
//
// Held-out rule: a run is "used for fitting" when the calibration's `sources` list its summary
// or its trace, by content hash (fnv1a64) or by the same canonical path. Such runs are shown,
// marked, and left out of mean_abs_error and max_abs_error: the error figures are on held-out
// runs only.
#include <optional>
#include <string>
#include <vector>

#include "runtime/scenario.hpp"
#include "traces/timeline.hpp"

namespace chunkflow {

struct MeasuredRun {
  std::string summary_path;
  std::string trace_path;            ///< "" when absent
  std::string device;                ///< context gpu_name/device, else the parent folder name
  ScenarioOptions options;           ///< the run's scenario as overrides (calibration added later);
                                     ///< ring, tp and fsdp always set (the defaults above when absent)
  /// The node the run's plan was built with, when the summary records its parameters (simulate
  /// --json writes the whole node); else the plan is built with the scenario's node without the
  /// calibration, as the harness built it. The plan is then simulated on the calibrated node.
  std::optional<NodeSpec> plan_node;
  /// The calibration the run was planned with (simulate --json's /scenario/calibration_file), when
  /// that file exists here: the plan's node is then the scenario's node with it applied (every
  /// calibrated field, which the recorded node figures do not all hold), not plan_node.
  std::string plan_calibration_file;
  int64_t plan_ops = 0;              ///< ops of the measured plan ("plan"/"ops" or "ops"; 0 unknown)
  std::string plan_fnv1a64;          ///< its digest ("plan"/"fnv1a64" or "plan_fnv1a64"; "" unknown)
  /// A chunkflow-hw run (its context's tool): re-simulated with the compute ops as the harness ran
  /// them (model/harness_ops.hpp price_as_harness), after its plan is built as the harness built it.
  bool harness = false;
  std::string scenario_name;
  std::string policy;
  double measured_step_time_s = 0;
};

/// Finds the measured runs under `dir` (sorted by path). Returns an empty list for a folder
/// without runs (or a missing folder when `missing_ok`). Throws InputError naming the file and the
/// JSON pointer for a summary whose scenario fields are malformed.
std::vector<MeasuredRun> find_measured_runs(const std::string& dir, bool missing_ok = false);

/// Reads one file: the run when it is a run summary (definition above), nullopt when it is some
/// other JSON object. Throws InputError naming the file for unreadable or malformed JSON and for
/// malformed scenario fields (the JSON pointer and the expected form, e.g. /scenario/tp_degree:
/// "expected an integer in [1, 64] ranks").
std::optional<MeasuredRun> read_measured_run(const std::string& path);

struct ValidationRow {
  MeasuredRun run;
  double predicted_step_time_s = 0;
  double error = 0;                  ///< (predicted − measured) / measured, signed
  bool used_for_fitting = false;
  /// The re-built plan is not the run's: its digest (runtime/step_plan.hpp plan_fnv1a64) differs from
  /// the one the run recorded, or, for a run recorded before digests, its op count does.
  bool plan_mismatch = false;
  std::optional<Timeline> predicted_timeline;  ///< the re-simulation's timeline (keep_timelines)
};

struct ValidationResult {
  std::vector<ValidationRow> rows;
  int held_out = 0;                  ///< rows not used for fitting
  double mean_abs_error = 0;         ///< mean |error| over held-out rows (0 when none)
  double max_abs_error = 0;          ///< max |error| over held-out rows (0 when none)
};

/// Re-simulates each run: its plan (built as the run built it, see plan_node) on its scenario's
/// node with `calibration_file` applied when not empty; compares the step times.
/// With `keep_timelines`, each row keeps the re-simulation's timeline (link counters included), the
/// prediction of that run op for op (same plan, same op ids): what `compare` needs.
/// Throws InputError for a bad calibration or a run whose scenario does not resolve.
ValidationResult validate_runs(const std::vector<MeasuredRun>& runs, const std::string& calibration_file,
                               bool keep_timelines = false);

}  // namespace chunkflow
