#pragma once
// Reporters: console tables, JSON and CSV for the simulator's results. Separate from computation
// (STYLE.md). Simulator outputs are a pure function of their input: their context block has the
// tool version, git revision, command line and inputs, but no host or date, so that the same input
// gives byte-identical files.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/analytical.hpp"
#include "runtime/scenario.hpp"
#include "runtime/step_plan.hpp"
#include "sim/executor.hpp"
#include "sim/sweep.hpp"

namespace chunkflow {

/// {"tool": "chunkflow", "version", "git_revision", "command_line", "source": "simulator"}.
nlohmann::json context_block(const std::string& command_line);

/// The scenario as JSON (node id and the numeric parameters used, workload, policy).
nlohmann::json scenario_json(const Scenario& s);

/// `chunkflow model --json`: params_total, weight_bytes, tokens, flop_per_step (per rank, one
/// forward), per-block figures and the analytical model (critical_flop, regime, ...).
nlohmann::json model_json(const Scenario& s, const ForwardCost& cost, const AnalyticalResult& a);

/// `chunkflow simulate --json`: policy, step_time_s (one forward), the generation (denoising_steps,
/// cfg, forwards_per_step, denoise_time_s = steps × forwards × step_time_s, text_encode_time_s,
/// vae_decode_time_s, generation_time_s = text + denoise + VAE; model/generation.hpp), peak_memory_bytes, compute_time_s, h2d_bytes,
/// prefetch_stall_s, collective_time_s, plus the resolved policy parameters, usable_memory_bytes,
/// fits and, when false, does_not_fit_reason (sim/fit.hpp); what the policy decided (residency, memory_budget_bytes, share_cap_bytes_per_s, windows, estimated_step_time_s) and the
/// lower bound (bound_step_time_s, vs_bound = step / bound, bound: its terms; sim/bound.hpp).
nlohmann::json simulate_json(const Scenario& s, const StepPlan& plan, const SimResult& r);

/// One sweep row: config_index, the resolved policy (policy, chunk_bytes, resident_fraction,
/// resident_fraction_auto, lookahead), the generation (denoising_steps, cfg, forwards_per_step,
/// denoise_time_s, text_encode_time_s, vae_decode_time_s, generation_time_s) and the step summary (step_time_s, peak_memory_bytes,
/// compute_time_s, h2d_time_s, prefetch_stall_s, collective_time_s, h2d_bytes), ops, events,
/// fits and, when false, does_not_fit_reason (sim/fit.hpp), and the decisions and bound fields of
/// simulate_json.
nlohmann::json sweep_row_json(const SweepRow& r);

/// Writes `content` to `path` through a temporary file in the same folder and a rename, so a
/// failure leaves no partial file. Throws std::runtime_error naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

/// A console table with a header row and a units row; numbers right-aligned.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::string>& units,
                         const std::vector<std::vector<std::string>>& rows);

/// Fixed-point formatting with `digits` decimals.
std::string fixed(double v, int digits);

}  // namespace chunkflow
