#pragma once
// Reporters of the hardware harness: context blocks, atomic output files, the measured Timeline
// and the JSON summary. Separate from the computation (STYLE.md "Reporters"). Host-only.
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/executor.hpp"
#include "hw/program.hpp"
#include "runtime/scenario.hpp"
#include "traces/timeline.hpp"

namespace chunkflow::hw {

using Context = std::map<std::string, std::string>;

/// The scenario as the harness runs it: `resolve_scenario(o)` with the tiled attention
/// (hw/kernels.cu) and harness_ops (model/harness_ops.hpp), so that the plan is built, and the run
/// re-simulated by `chunkflow validate`, with the costs of what the harness executes. Throws
/// InputError naming --attention or /workload/attention for another attention kernel, and what
/// resolve_scenario throws.
Scenario hw_scenario(const ScenarioOptions& o);

/// The /scenario block of a run or check summary: what `chunkflow validate` rebuilds the run from
/// (sim/validate.cpp read_run): node id, model, shape, layout, policy, attention, harness_ops, and
/// with --calibration the file's path and digest (calibration_file, calibration_fnv1a64), by which
/// validate finds it again on another machine. Throws InputError when that file cannot be read.
nlohmann::ordered_json scenario_json(const Scenario& sc);

/// Now in UTC, ISO 8601 with seconds: "2025-01-31T12:34:56Z".
std::string utc_iso8601_now();

/// The command line as typed (arguments with spaces or quotes single-quoted).
std::string command_line(int argc, const char* const* argv);

/// tool, version, git_revision (chunkflow_version.hpp), command, date_utc, host.
Context host_context(int argc, const char* const* argv);

/// Writes a file through `path`.tmp.<pid> and renames it over `path`, so a failure (an exception
/// from `write`, a full disk) leaves no partial file. Throws std::runtime_error naming the path.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// Median (mean of the two middle values for an even count), min and max. Throws
/// std::invalid_argument on an empty input.
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread spread(std::vector<double> values);

/// The Timeline of one measured run: one row per op (op ids, names, kinds, lanes, rank, step,
/// block, bytes, flop, deps = the plan's data deps, start/end from CUDA events), a memory sample
/// per rank at t = 0 with the bytes the harness allocated (all allocation happens before the run),
/// source "hardware".
Timeline make_timeline(const Program& program, const RunTiming& timing, const std::vector<MemoryReport>& memory,
                       const Context& context);

/// Step time of every step of a timeline: last compute end of step s − last compute end of step
/// s−1 (the first step: from the common start), max over ranks, in seconds.
std::vector<double> step_times_s(const Timeline& timeline);

/// The JSON object of a context block (keys sorted).
nlohmann::ordered_json context_json(const Context& context);

/// The Chrome trace of `timeline` (traces/chrome_trace.hpp), whose first key is the "context"
/// block (Timeline::context). Throws std::invalid_argument when the context is empty.
void write_trace_with_context(const Timeline& timeline, std::ostream& out);

}  // namespace chunkflow::hw
